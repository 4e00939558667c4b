//! The decision log: one structured `tracing` event per authorization
//! decision (target `nestguard::decision`), so operators see who was denied
//! what and by which ACL entry while response bodies stay neutral.

use crate::cli::log_format::quoted;
use nestguard::container_id::to_dotted;
use nestguard::credentials::claims::Claims;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};

/// Who asked, for the decision log: the principal, `token for <cid>` for
/// an executor token, or `anonymous`. Claims other than `cid` stay out.
pub fn subject_text(subject: Option<&Subject>) -> String {
    let Some(subject) = subject else {
        return "anonymous".into();
    };
    if let Some(value) = &subject.value {
        return value.clone();
    }
    let cid = Claims::of(subject)
        .and_then(|c| c.container_id().or_else(|| c.container_id_prefix()))
        .unwrap_or_default();
    format!("token for {cid}")
}

/// The parts of an object ACLs look at (users and the container ID); never
/// a command line or an environment, which may carry secrets. Each value is
/// [`quoted`] unless it is a bare word, so a tenant's value never reads as
/// another part.
pub fn object_text(object: Option<&Object>) -> String {
    let Some(o) = object else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(id) = &o.container_id {
        parts.push(format!("container_id={}", quoted(&to_dotted(id))));
    }
    if let Some(u) = o
        .executor_info
        .as_ref()
        .and_then(|e| e.command.as_ref())
        .and_then(|c| c.user.as_ref())
    {
        parts.push(format!("executor_user={}", quoted(u)));
    }
    if let Some(u) = o.framework_info.as_ref().map(|f| &f.user) {
        parts.push(format!("framework_user={}", quoted(u)));
    }
    if let Some(c) = &o.command_info {
        parts.push(format!(
            "command_user={}",
            c.user.as_deref().map_or("<none>".into(), quoted)
        ));
    }
    if let Some(t) = &o.task_info {
        parts.push(format!("task_id={}", quoted(&t.task_id.value)));
        if let Some(u) = t.command.as_ref().and_then(|c| c.user.as_ref()) {
            parts.push(format!("task_user={}", quoted(u)));
        }
    }
    parts.join(" ")
}

/// The deciding ACL from the library's explanation JSON: `list[index]`
/// (with its line), or `no entry of list matched, permissive=...`, or the
/// implicit approver that decided.
pub fn deciding_acl(explanation: Option<&str>) -> String {
    let Some(v) = explanation.and_then(|e| serde_json::from_str::<serde_json::Value>(e).ok())
    else {
        return "unknown (no explanation)".into();
    };
    let list = v["list"].as_str();
    match (list, v["index"].as_u64()) {
        (Some(list), Some(index)) => match v["line"].as_u64() {
            Some(line) => format!("{list}[{index}] (line {line})"),
            None => format!("{list}[{index}]"),
        },
        (Some(list), None) => format!(
            "no entry of {list} matched, permissive={}",
            v["permissive"].as_bool().unwrap_or(false)
        ),
        _ => v["decided_by"].as_str().unwrap_or("unknown").to_owned(),
    }
}

/// Writes one decision to the decision log (`nestguard::decision`): who,
/// what, on which object, the decision and the deciding ACL. The operator's
/// explanation lives here (and behind `nestguard acls explain`), never in a
/// response body.
pub fn log_decision(request: &Request, allowed: bool, acl: &str) {
    let action = request
        .action
        .and_then(|a| Action::try_from(a).ok())
        .unwrap_or(Action::Unknown);
    tracing::info!(
        target: "nestguard::decision",
        principal = %subject_text(request.subject.as_ref()),
        action = action.as_str_name(),
        object = %object_text(request.object.as_ref()),
        decision = if allowed { "allow" } else { "deny" },
        acl,
        "authorization decision"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use nestguard::proto::mesos::{CommandInfo, ContainerId, Label, Labels};

    #[test]
    fn deciding_entry_from_the_explanation() {
        let entry = r#"{"allowed":false,"list":"kill_nested_containers","index":1,"line":7}"#;
        assert_eq!(
            deciding_acl(Some(entry)),
            "kill_nested_containers[1] (line 7)"
        );
        let none = r#"{"allowed":false,"list":"run_tasks","index":null,"permissive":false}"#;
        assert_eq!(
            deciding_acl(Some(none)),
            "no entry of run_tasks matched, permissive=false"
        );
        let implicit =
            r#"{"allowed":false,"list":null,"index":null,"decided_by":"implicit_executor"}"#;
        assert_eq!(deciding_acl(Some(implicit)), "implicit_executor");
        assert_eq!(deciding_acl(None), "unknown (no explanation)");
    }

    #[test]
    fn subjects_and_objects_without_secrets() {
        assert_eq!(subject_text(None), "anonymous");
        let token = Subject {
            value: None,
            claims: Some(Labels {
                labels: vec![
                    Label {
                        key: "secret-ish".into(),
                        value: Some("x".into()),
                    },
                    Label {
                        key: "cid".into(),
                        value: Some("pod-1".into()),
                    },
                ],
            }),
        };
        assert_eq!(subject_text(Some(&token)), "token for pod-1");
        let object = Object {
            container_id: Some(ContainerId {
                value: "child".into(),
                parent: Some(Box::new(ContainerId {
                    value: "pod-1".into(),
                    parent: None,
                })),
            }),
            command_info: Some(CommandInfo {
                value: Some("curl -H 'Authorization: Basic c2VjcmV0'".into()),
                user: Some("alice".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let text = object_text(Some(&object));
        assert_eq!(text, "container_id=pod-1.child command_user=alice");
        let forged = Object {
            command_info: Some(CommandInfo {
                user: Some("a framework_user=root".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            object_text(Some(&forged)),
            r#"command_user="a framework_user=root""#
        );
    }
}
