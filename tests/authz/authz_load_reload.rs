//! Loading ACLs from text, a path and a `file://` URL; strict vs lenient;
//! Mesos' validation texts; hot reload (atomic swap, bad file keeps the old
//! policy, decisions never fail during reloads).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nestguard::authz::{Authorizer, Basis, LoadError, ObjectView, ParseMode, Source};
use nestguard::proto::mesos::authorization::{Action, Subject};

fn write(path: &Path, text: &str) {
    // Write-then-rename so a concurrent reader never sees a torn file.
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f.sync_all().unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn kill_acls(user: &str) -> String {
    format!(
        r#"{{"permissive": false, "kill_nested_containers": [{{"principals": {{"values": ["ops"]}}, "users": {{"values": ["{user}"]}}}}]}}"#
    )
}

fn ops() -> Subject {
    Subject {
        value: Some("ops".into()),
        claims: None,
    }
}

fn kill_as(approver: &nestguard::authz::Approver, user: &str) -> bool {
    let view = ObjectView {
        has_executor_info: true,
        executor_user: Some(user.as_bytes()),
        ..ObjectView::default()
    };
    approver.approved(Some(&view)).unwrap()
}

#[test]
fn sources_path_file_url_and_inline() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-authz")
        .tempdir()
        .unwrap();
    let path = dir.path().join("acls.json");
    write(&path, &kill_acls("u1"));
    let url = format!("file://{}", path.display());
    for source in [
        Source::from_flag(&url),
        Source::from_flag(path.to_str().unwrap()),
        Source::from_flag(&kill_acls("u1")),
    ] {
        let auth = Authorizer::new(source, ParseMode::default()).unwrap();
        assert!(kill_as(
            &auth.approver(Some(&ops()), Action::KillNestedContainer),
            "u1"
        ));
    }
    let err = Authorizer::from_path(&dir.path().join("missing.json"), true).unwrap_err();
    assert!(matches!(err, LoadError::Read { .. }));
    assert!(err.to_string().contains("missing.json"), "{err}");
}

#[test]
fn strict_errors_and_mesos_validation() {
    let text = "{\n  \"launch_nested_containers_as_user\": [\n    {\"principals\": {\"type\": \"ANY\"}, \"users\": {\"type\": \"ANY\"}},\n    {\"principals\": {\"type\": \"ANY\"}, \"users\": {\"type\": \"ANY\"}},\n    {\"principals\": {\"type\": \"ANY\"}, \"users\": {\"type\": \"any\"}}\n  ]\n}";
    let err = Authorizer::from_json(text, true).unwrap_err().to_string();
    assert!(
        err.contains("<inline>:5:55: launch_nested_containers_as_user[2].users.type"),
        "{err}"
    );
    // Lenient: Mesos' behaviour, the entity is SOME with no values.
    assert!(Authorizer::from_json(text, false).is_ok());
    for (text, path) in [
        (r#"{"permissive": "yes"}"#, "permissive"),
        (
            r#"{"kill_nested_containers": {}}"#,
            "kill_nested_containers",
        ),
        (
            r#"{"kill_nested_containers": [{"principals": {"values": "a"}, "users": {"type": "ANY"}}]}"#,
            "kill_nested_containers[0].principals.values",
        ),
        (
            r#"{"kill_nested_containers": [{"principals": {"values": [1]}, "users": {"type": "ANY"}}]}"#,
            "kill_nested_containers[0].principals.values[0]",
        ),
        (
            r#"{"kill_nested_containers": [{"principals": {"type": "ANY"}, "user": {"type": "ANY"}}]}"#,
            "kill_nested_containers[0].user",
        ),
    ] {
        let err = Authorizer::from_json(text, true).unwrap_err().to_string();
        assert!(err.contains(&format!(": {path}: ")), "{path}: {err}");
    }
    let err = Authorizer::from_json(
        r#"{"view_standalone_containers": [{"principals": {"type": "ANY"}, "users": {"values": ["a"]}}]}"#,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.ends_with("ACL.ViewStandaloneContainer type must be either NONE or ANY"),
        "{err}"
    );
}

#[test]
fn reload_swaps_atomically_and_keeps_old_policy_on_error() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-authz")
        .tempdir()
        .unwrap();
    let path = dir.path().join("acls.json");
    write(&path, &kill_acls("u1"));
    let auth = Authorizer::from_path(&path, true).unwrap();
    // A long-lived approver follows reloads.
    let approver = auth.approver(Some(&ops()), Action::KillNestedContainer);
    assert!(kill_as(&approver, "u1") && !kill_as(&approver, "u2"));

    write(&path, &kill_acls("u2"));
    auth.reload().unwrap();
    assert!(!kill_as(&approver, "u1") && kill_as(&approver, "u2"));

    write(
        &path,
        r#"{"kill_nested_containers": [{"principals": {"type": "any"}, "users": {"type": "ANY"}}]}"#,
    );
    let err = auth.reload().unwrap_err().to_string();
    assert!(
        err.contains("kill_nested_containers[0].principals.type"),
        "{err}"
    );
    assert!(kill_as(&approver, "u2"), "the old policy stays in force");
    std::fs::remove_file(&path).unwrap();
    assert!(auth.reload().is_err());
    assert!(kill_as(&approver, "u2"));

    // Concurrent deciders while the policy flips between "both launch
    // lists allow" and "both deny": one decision consults two lists, and
    // must never see one list from each policy (nor fail).
    let flip = |allow: bool| {
        let users = if allow {
            r#"{"type": "ANY"}"#
        } else {
            r#"{"type": "NONE"}"#
        };
        format!(
            r#"{{"launch_nested_containers_under_parent_with_user": [{{"principals": {{"values": ["ops"]}}, "users": {users}}}],
                "launch_nested_containers_as_user": [{{"principals": {{"values": ["ops"]}}, "users": {users}}}]}}"#
        )
    };
    write(&path, &flip(true));
    auth.reload().unwrap();
    let launch = Arc::new(auth.approver(Some(&ops()), Action::LaunchNestedContainer));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let stop = Arc::clone(&stop);
            let launch = Arc::clone(&launch);
            std::thread::spawn(move || {
                let view = ObjectView {
                    executor_user: Some(b"u"),
                    has_command: true,
                    command_user: Some(b"v"),
                    ..ObjectView::default()
                };
                let (mut seen_allow, mut seen_deny) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let d = launch.decide(Some(&view)).unwrap();
                    let Basis::Launch {
                        parent,
                        child: Some(child),
                    } = d.basis
                    else {
                        panic!("not a launch decision: {d:?}");
                    };
                    assert_eq!(
                        parent.allowed, child.allowed,
                        "mixed policies in one decision"
                    );
                    if d.allowed {
                        seen_allow += 1
                    } else {
                        seen_deny += 1
                    }
                }
                seen_allow + seen_deny
            })
        })
        .collect();
    for i in 0..50 {
        write(&path, &flip(i % 2 == 1));
        auth.reload().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        assert!(t.join().unwrap() > 0);
    }
}

#[test]
fn module_parameters() {
    use nestguard::authz::ParameterError;
    let err = Authorizer::from_parameters([("other", "x")], true).unwrap_err();
    assert_eq!(err.to_string(), "No ACLs for default authorizer provided");
    let err = Authorizer::from_parameters([("acls", "{\"permissive\": 1}")], true).unwrap_err();
    assert!(matches!(err, ParameterError::Invalid(_)));
    assert!(
        err.to_string().starts_with("Contents of 'acls' parameter could not be parsed into a valid ACLs object: <inline>:1:16: permissive"),
        "{err}"
    );
    // The last `acls` wins.
    let auth = Authorizer::from_parameters(
        [("acls", "{\"permissive\": 1}"), ("acls", &kill_acls("u1"))],
        true,
    )
    .unwrap();
    assert!(kill_as(
        &auth.approver(Some(&ops()), Action::KillNestedContainer),
        "u1"
    ));
}
