//! Adversarial IDs against a running `nestguard agent` (the real .so, over
//! HTTP): every ID that becomes a path is refused with Mesos' 400 text
//! before anything touches the filesystem, and nothing appears outside the
//! work directory. Issue 11, hole 2, and the ID part of the standing suite.
//! Needs root (the Linux launcher).

use crate::agent_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use agent_support::{OPS, TestAgent, agent_command, pod, refused_start, require_root, task};

/// Every path below `root`, except the agent's own work directory and log.
fn snapshot(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == "work" || rel == "agent.log" {
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            out.insert(rel);
        }
    }
    out
}

/// The names directly in `dir` (empty if it does not exist).
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// An ID a hostile client sends, and Mesos' text for it as a container ID
/// and as any other ID (framework, executor, task) that names a directory.
struct Hostile {
    what: &'static str,
    value: String,
    as_container: String,
    as_path_id: Option<String>,
}

fn invalid_chars(v: &str) -> String {
    format!("'{v}' contains invalid characters")
}

fn container_chars(v: &str) -> String {
    format!("'ContainerID.value' '{v}' contains invalid characters")
}

/// `escape` is a relative path that would climb out of the work directory
/// from where the ID is used.
fn hostile_ids(escape: &str) -> Vec<Hostile> {
    let h = |what, value: &str, as_container: String, as_path_id: Option<String>| Hostile {
        what,
        value: value.to_owned(),
        as_container,
        as_path_id,
    };
    let long = "x".repeat(256);
    let over_mesos = "x".repeat(243);
    vec![
        h(
            "slashes climbing out",
            escape,
            invalid_chars(escape),
            Some(invalid_chars(escape)),
        ),
        h(
            "a slash",
            "a/b",
            invalid_chars("a/b"),
            Some(invalid_chars("a/b")),
        ),
        h(
            "a backslash",
            "a\\b",
            invalid_chars("a\\b"),
            Some(invalid_chars("a\\b")),
        ),
        h(
            "dot",
            ".",
            "'.' is disallowed".into(),
            Some("'.' is disallowed".into()),
        ),
        h(
            "dot dot",
            "..",
            "'..' is disallowed".into(),
            Some("'..' is disallowed".into()),
        ),
        h(
            "NUL",
            "a\0b",
            invalid_chars("a\0b"),
            Some(invalid_chars("a\0b")),
        ),
        h(
            "a control character",
            "a\x01b",
            invalid_chars("a\x01b"),
            Some(invalid_chars("a\x01b")),
        ),
        h(
            "a newline",
            "a\nb",
            invalid_chars("a\nb"),
            Some(invalid_chars("a\nb")),
        ),
        h(
            "a tab",
            "a\tb",
            invalid_chars("a\tb"),
            Some(invalid_chars("a\tb")),
        ),
        h(
            "DEL",
            "a\x7fb",
            invalid_chars("a\x7fb"),
            Some(invalid_chars("a\x7fb")),
        ),
        // Stricter than Mesos for framework/executor/task IDs (Mesos allows
        // the space there; it refuses it in container IDs).
        h(
            "a space",
            "a b",
            container_chars("a b"),
            Some(invalid_chars("a b")),
        ),
        // Stricter than Mesos everywhere: Unicode whitespace and controls.
        h(
            "no-break space",
            "a\u{a0}b",
            container_chars("a\u{a0}b"),
            Some(invalid_chars("a\u{a0}b")),
        ),
        h(
            "a C1 control",
            "a\u{85}b",
            container_chars("a\u{85}b"),
            Some(invalid_chars("a\u{85}b")),
        ),
        h(
            "longer than NAME_MAX",
            &long,
            "ID must not be greater than 255 characters".into(),
            Some("ID must not be greater than 255 characters".into()),
        ),
        h(
            "longer than a container ID may be",
            &over_mesos,
            format!("'ContainerID.value' '{over_mesos}' exceeds the maximum length (242)"),
            None,
        ),
        h(
            "empty",
            "",
            "ID must not be empty".into(),
            Some("ID must not be empty".into()),
        ),
        h("a dot inside", "a.b", container_chars("a.b"), None),
    ]
}

fn launch_nested(id: &serde_json::Value) -> String {
    serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER", "launch_nested_container": {
        "container_id": id, "command": {"value": "touch escaped-by-launch"}}})
    .to_string()
}

fn launch_container(id: &serde_json::Value) -> String {
    serde_json::json!({"type": "LAUNCH_CONTAINER", "launch_container": {
        "container_id": id, "command": {"value": "touch escaped-by-launch"}}})
    .to_string()
}

/// A chain of `levels` container IDs, the root first.
fn chain(levels: usize) -> serde_json::Value {
    let mut id = serde_json::json!({"value": "l0"});
    for level in 1..levels {
        id = serde_json::json!({"value": format!("l{level}"), "parent": id});
    }
    id
}

#[test]
fn hostile_container_ids_in_every_field_of_the_launch_calls() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let root = agent.dir.path();
    // A live pod: its executor container is a real parent for nested IDs.
    let (pod_id, _) = agent.launch_pod(&pod(serde_json::json!([task("app", "sleep 60")])));
    let before = snapshot(root);
    let standalone_before = names(&root.join("work/containers"));
    // From `<work>/containers/<id>`, two levels climb out of the work dir.
    for hostile in hostile_ids("../../escaped-standalone") {
        let v = &hostile.value;
        let cases = [
            (
                "LAUNCH_NESTED_CONTAINER value",
                launch_nested(&serde_json::json!({"value": v, "parent": {"value": pod_id}})),
                format!(
                    "'launch_nested_container.container_id' is invalid: {}",
                    hostile.as_container
                ),
            ),
            (
                "LAUNCH_NESTED_CONTAINER parent",
                launch_nested(&serde_json::json!({"value": "child", "parent": {"value": v}})),
                format!(
                    "'launch_nested_container.container_id' is invalid: 'ContainerID.parent' is invalid: {}",
                    hostile.as_container
                ),
            ),
            (
                "LAUNCH_NESTED_CONTAINER grandparent",
                launch_nested(&serde_json::json!({"value": "grandchild",
                    "parent": {"value": "child", "parent": {"value": v}}})),
                format!(
                    "'launch_nested_container.container_id' is invalid: 'ContainerID.parent' is invalid: 'ContainerID.parent' is invalid: {}",
                    hostile.as_container
                ),
            ),
            (
                "LAUNCH_CONTAINER standalone value",
                launch_container(&serde_json::json!({"value": v})),
                format!(
                    "'launch_container.container_id' is invalid: {}",
                    hostile.as_container
                ),
            ),
            (
                "LAUNCH_CONTAINER nested value",
                launch_container(&serde_json::json!({"value": v, "parent": {"value": pod_id}})),
                format!(
                    "'launch_container.container_id' is invalid: {}",
                    hostile.as_container
                ),
            ),
            (
                "LAUNCH_CONTAINER parent",
                launch_container(&serde_json::json!({"value": "child", "parent": {"value": v}})),
                format!(
                    "'launch_container.container_id' is invalid: 'ContainerID.parent' is invalid: {}",
                    hostile.as_container
                ),
            ),
        ];
        for (field, body, expected) in cases {
            let (status, text) = agent.curl(Some(OPS), "/api/v1", &body);
            assert_eq!(
                (status, text.as_str()),
                (
                    400,
                    format!("Failed to validate agent::Call: {expected}").as_str()
                ),
                "{field} with {}",
                hostile.what
            );
        }
    }
    // Too deep: 33 levels in each call (32 are fine for validation).
    for (call, body) in [
        ("launch_nested_container", launch_nested(&chain(33))),
        ("launch_container", launch_container(&chain(33))),
    ] {
        let (status, text) = agent.curl(Some(OPS), "/api/v1", &body);
        assert_eq!(
            (status, text.as_str()),
            (
                400,
                format!(
                    "Failed to validate agent::Call: '{call}.container_id' is invalid: \
                     ContainerID exceeds the maximum nesting depth (32 levels)"
                )
                .as_str()
            )
        );
    }
    // Far too deep for the JSON parser: refused, and the agent lives on.
    let (status, _) = agent.curl(Some(OPS), "/api/v1", &launch_nested(&chain(500)));
    assert_eq!(status, 400);
    assert_eq!(agent.get("/health"), (200, String::new()));
    assert_eq!(
        snapshot(root),
        before,
        "something appeared outside the work dir"
    );
    assert_eq!(
        names(&root.join("work/containers")),
        standalone_before,
        "no standalone sandbox was made"
    );
}

/// The pod spec with `field` set to `value` (framework and executor keep
/// agreeing on the framework ID).
fn pod_with(field: &str, value: &str) -> serde_json::Value {
    let mut spec = pod(serde_json::json!([task(
        "app",
        "touch escaped-by-pod; sleep 60"
    )]));
    match field {
        "framework.id" => {
            spec["framework"]["id"]["value"] = value.into();
            spec["executor"]["framework_id"]["value"] = value.into();
        }
        "executor.executor_id" => spec["executor"]["executor_id"]["value"] = value.into(),
        "tasks[0].task.task_id" => spec["tasks"][0]["task"]["task_id"]["value"] = value.into(),
        other => panic!("unknown field {other}"),
    }
    spec
}

#[test]
fn hostile_ids_in_every_id_field_of_the_pod_endpoint() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let root = agent.dir.path();
    let before = snapshot(root);
    // `<work>/slaves/<agent>/frameworks/<fw>`: four levels climb out;
    // `.../executors/<ex>`: six.
    for (field, escape) in [
        ("framework.id", "../../../../escaped-fw"),
        ("executor.executor_id", "../../../../../../escaped-ex"),
        ("tasks[0].task.task_id", "../../escaped-task"),
    ] {
        for hostile in hostile_ids(escape) {
            let Some(reason) = &hostile.as_path_id else {
                continue;
            };
            let spec = pod_with(field, &hostile.value);
            let (status, text) = agent.curl(Some(OPS), "/nestguard/v1/pods", &spec.to_string());
            assert_eq!(
                (status, text.as_str()),
                (400, format!("'{field}' is invalid: {reason}").as_str()),
                "{field} with {}\n{}",
                hostile.what,
                agent.log()
            );
        }
    }
    assert_eq!(
        snapshot(root),
        before,
        "something appeared outside the work dir"
    );
    assert!(
        names(&root.join("work/meta/executors")).is_empty(),
        "no pod was launched"
    );
    // What Mesos accepts and nestguard too: dots and 255 bytes.
    let fine = "x.".repeat(127) + "x";
    let (_, sandbox) = agent.launch_pod(&pod_with("executor.executor_id", &fine));
    assert!(
        sandbox.starts_with(root.join("work")),
        "{}",
        sandbox.display()
    );
}

/// A symbolic link planted in the work directory (what validation cannot
/// see) is never followed: the sandbox is refused instead of being made
/// where the link points.
#[test]
fn a_symlink_in_the_work_dir_is_not_followed() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let root = agent.dir.path();
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let containers = root.join("work/containers");
    let _ = std::fs::remove_dir_all(&containers);
    std::os::unix::fs::symlink(&outside, &containers).unwrap();
    let before = snapshot(root);
    let (status, text) = agent.curl(
        Some(OPS),
        "/api/v1",
        &launch_container(&serde_json::json!({"value": "solo"})),
    );
    assert_eq!(status, 500, "{text}");
    assert!(
        text.starts_with("Failed to create sandbox") && text.contains("is a symbolic link"),
        "{text}"
    );
    assert!(names(&outside).is_empty(), "created through the link");
    assert_eq!(snapshot(root), before);
}

/// A tampered `meta/agent_id` (it names a directory of every sandbox)
/// stops the agent instead of steering sandboxes elsewhere.
#[test]
fn a_tampered_agent_id_stops_the_agent() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start();
    agent.sigkill();
    let root = agent.dir.path();
    std::fs::write(root.join("work/meta/agent_id"), "../../escaped-agent\n").unwrap();
    let stderr = refused_start(
        agent_command()
            .arg(format!("--work_dir={}", root.join("work").display()))
            .arg(format!("--modules={}", root.join("modules.json").display()))
            .arg("--port=0"),
        Duration::from_secs(30),
        "the agent started on a tampered agent ID",
    );
    assert!(
        stderr.contains(
            "the stored agent ID is invalid: '../../escaped-agent' contains invalid characters"
        ),
        "{stderr}"
    );
    assert!(!root.join("escaped-agent").exists());
}

/// Volume paths: relative SANDBOX_PATH paths were already resolved beneath
/// the sandbox; an absolute mount point must be named plainly too.
#[test]
fn volume_mount_points_with_dot_dot_or_nul_are_refused() {
    use nestguard::isolation::isolator::{Composite, Isolator, IsolatorParams};
    use nestguard::proto::mesos::slave::ContainerConfig;
    use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;
    use nestguard::proto::mesos::volume::source::{SandboxPath, Type as SourceType};
    use nestguard::proto::mesos::volume::{Mode, Source};
    use nestguard::proto::mesos::{ContainerId, ContainerInfo, Volume};

    let dir = tempfile::tempdir().unwrap();
    let params =
        IsolatorParams::parse([("isolation", "filesystem/linux,volume/sandbox_path")]).unwrap();
    let iso = Composite::from_parameters(&params).unwrap();
    let sandbox = dir.path().join("solo");
    std::fs::create_dir_all(&sandbox).unwrap();
    let id = ContainerId {
        value: "solo".into(),
        parent: None,
    };
    for target in ["/tmp/../etc", "/tmp/a\0b"] {
        let volume = Volume {
            container_path: target.to_owned(),
            mode: Mode::Rw as i32,
            source: Some(Source {
                r#type: Some(SourceType::SandboxPath as i32),
                sandbox_path: Some(SandboxPath {
                    r#type: Some(SandboxPathType::Self_ as i32),
                    path: "data".into(),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let config = ContainerConfig {
            directory: sandbox.to_string_lossy().into_owned(),
            container_info: Some(ContainerInfo {
                volumes: vec![volume],
                ..Default::default()
            }),
            ..Default::default()
        };
        let err = iso.prepare(&id, &config).unwrap_err().to_string();
        let _ = iso.cleanup(&id);
        assert!(
            err.contains(&format!(
                "'container_path' '{}' of a SANDBOX_PATH volume must not contain '..' or NUL",
                target.escape_debug()
            )),
            "{err}"
        );
    }
    assert_eq!(names(dir.path()), BTreeSet::from(["solo".to_owned()]));
}

/// Issue: REMOVE_NESTED_CONTAINER removed `<parent sandbox>/containers/<id>`
/// by path, following a link the parent's user planted for `containers`:
/// as root, anything on the host could be deleted. The removal now walks
/// below the work directory without following links.
#[test]
fn remove_nested_never_follows_a_link_in_the_parents_sandbox() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let root = agent.dir.path();
    let (pod_id, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("app", "sleep 60")])));
    let child = serde_json::json!({"value": "victim", "parent": {"value": pod_id}});
    let call = |kind: &str, field: &str| {
        let body = serde_json::json!({"type": kind, field: {"container_id": child}});
        agent.curl(Some(OPS), "/api/v1", &body.to_string())
    };
    let (status, text) = agent.curl(
        Some(OPS),
        "/api/v1",
        &serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER", "launch_nested_container": {
            "container_id": child, "command": {"value": "true"}}})
        .to_string(),
    );
    assert_eq!(status, 200, "{text}");
    let (status, text) = call("WAIT_NESTED_CONTAINER", "wait_nested_container");
    assert_eq!(status, 200, "{text}");
    // The tenant (the parent's user) replaces `containers` with a link to
    // a directory of the host holding a `victim`.
    let outside = root.join("outside");
    std::fs::create_dir_all(outside.join("victim/deep")).unwrap();
    std::fs::write(outside.join("victim/deep/keep"), "host data").unwrap();
    std::fs::rename(sandbox.join("containers"), sandbox.join("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.join("containers")).unwrap();
    let (status, text) = call("REMOVE_NESTED_CONTAINER", "remove_nested_container");
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        std::fs::read_to_string(outside.join("victim/deep/keep")).unwrap(),
        "host data",
        "removed through the link"
    );
    // Put back: nothing was removed, the sandbox is still there.
    std::fs::remove_file(sandbox.join("containers")).unwrap();
    std::fs::rename(sandbox.join("moved"), sandbox.join("containers")).unwrap();
    assert!(sandbox.join("containers/victim").is_dir());
}
