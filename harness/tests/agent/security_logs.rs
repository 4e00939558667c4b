//! Issue 25, items 1 and 2: a tenant can neither forge a line of the
//! agent's log (a decision record at column 0, a terminal escape) nor flush
//! the decision audit log (huge fields, one subject's flood of denials).

use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::agent_support::{INTRUDER, OPS, TestAgent, require_root};
use crate::executor_api::{
    pending_updates, post_executor_call, subscribe, two_task_pod, update_call, uuid_bytes,
};

/// The start of a line shaped as the decision log writes one, for ops and
/// allowed: a tenant's text must never put it at the start of a line.
const FORGED: &str = "2026-01-01T00:00:00.000000Z  INFO nestguard::decision: authorization \
     decision principal=ops action=\"LAUNCH_NESTED_CONTAINER\" object=forged decision=\"allow\" \
     acl=\"launch_nested_containers[0]\"";

/// POSTs a JSON `/api/v1` call as `who`; returns (status, body).
fn post_call(agent: &TestAgent, who: (&str, &str), body: &str) -> (u16, String) {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", who.0, who.1));
    agent.post_json("/api/v1", &format!("Basic {basic}"), body)
}

/// A LAUNCH_NESTED_CONTAINER under `parent` running as `user`.
fn launch_as(parent: &str, child: &str, user: &str) -> String {
    serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER", "launch_nested_container": {
        "container_id": {"parent": {"value": parent}, "value": child},
        "command": {"value": "true", "user": user}}})
    .to_string()
}

/// What a tenant's text must never do to the log: start a line with a
/// forged record, or hold a control character (an escape sequence for the
/// operator's terminal) other than the newlines ending the lines.
fn assert_no_forged_line(log: &str) {
    for line in log.lines() {
        assert!(
            !line.starts_with("2026-01-01T00:00:00"),
            "a forged line at column 0: {line}"
        );
        // Escaped, the forged text reads `decision=\"allow\"`.
        assert!(
            !line.contains("object=forged decision=\"allow\""),
            "an allow record that was never made: {line}"
        );
        assert!(
            !line.chars().any(char::is_control),
            "a control character in: {line:?}"
        );
    }
}

#[test]
fn a_user_name_with_a_newline_or_an_escape_never_forges_a_log_line() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    for user in [
        format!("daemon\n{FORGED}"),
        format!("daemon\r{FORGED}"),
        "daemon\u{1b}]0;owned\u{7}\u{1b}[2J".to_owned(),
        format!("daemon {FORGED}"),
    ] {
        let (status, body) = post_call(&agent, INTRUDER, &launch_as("pod-x", "c", &user));
        // Refused as a malformed request, before any decision.
        assert_eq!(status, 400, "{user:?}: {body}");
        assert!(body.contains("command.user"), "{body}");
    }
    // A denied launch with a user name that passes still logs its decision.
    let (status, body) = post_call(&agent, INTRUDER, &launch_as("pod-x", "c", "daemon"));
    assert_eq!(status, 403, "{body}");
    let log = agent.log();
    assert!(
        log.lines()
            .any(|l| l.contains("nestguard::decision") && l.contains("decision=\"deny\"")),
        "{log}"
    );
    assert_no_forged_line(&log);
}

#[test]
fn executor_update_ids_are_validated_and_never_forge_a_log_line() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let (eid, pod_id, token) = two_task_pod(&agent);
    let (status, stream) = subscribe(&agent, Some(&token), &eid, false, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_eq!(stream.next(&agent).unwrap()["type"], "SUBSCRIBED");
    for task_id in [
        format!("app\n{FORGED}"),
        "app\u{1b}[2J".to_owned(),
        "../app".to_owned(),
        String::new(),
    ] {
        let update = update_call(&eid, &task_id, "TASK_RUNNING", &*uuid_bytes());
        let (status, body) = post_executor_call(&agent, &token, &update);
        assert_eq!(status, 400, "{task_id:?}: {body}");
        assert!(body.contains("task_id"), "{body}");
    }
    assert!(pending_updates(&agent, &pod_id).is_empty());
    // A valid one still goes through.
    let update = update_call(&eid, "app", "TASK_RUNNING", &*uuid_bytes());
    assert_eq!(post_executor_call(&agent, &token, &update).0, 202);
    assert_no_forged_line(&agent.log());
    drop(stream);
}

/// The audit log's records, from `path` and its rotated `path.1`.
fn audit_records(path: &Path) -> Vec<serde_json::Value> {
    let mut old = path.as_os_str().to_owned();
    old.push(".1");
    [PathBuf::from(old), path.to_path_buf()]
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
                .collect::<Vec<serde_json::Value>>()
        })
        .collect()
}

/// The intruder's first denial, which the rest of the test tries to flush:
/// a KILL_NESTED_CONTAINER of `pod-evidence.c`.
fn make_evidence(agent: &TestAgent) {
    let kill = serde_json::json!({"type": "KILL_NESTED_CONTAINER", "kill_nested_container": {
        "container_id": {"parent": {"value": "pod-evidence"}, "value": "c"}}});
    let (status, body) = post_call(agent, INTRUDER, &kill.to_string());
    assert_eq!(status, 403, "{body}");
}

fn has_evidence(records: &[serde_json::Value]) -> bool {
    records.iter().any(|r| {
        r["subject"] == INTRUDER.0
            && r["action"] == "KILL_NESTED_CONTAINER"
            && r["object"]["root_container_id"] == "pod-evidence"
    })
}

/// An agent with its audit log in a directory of its own (the agent's is
/// made when it starts).
fn audited_agent(flags: &[&str]) -> (TestAgent, tempfile::TempDir, PathBuf) {
    let logs = tempfile::Builder::new()
        .prefix("nestguard-audit-")
        .tempdir()
        .unwrap();
    let path = logs.path().join("audit.log");
    let mut args = vec![format!("--audit_log={}", path.display())];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (TestAgent::start_with(&args), logs, path)
}

#[test]
fn huge_user_names_are_refused_before_a_decision_and_flush_nothing() {
    if !require_root() {
        return;
    }
    let (agent, _logs, path) = audited_agent(&[]);
    make_evidence(&agent);
    let huge = "u".repeat(15 << 20);
    for i in 0..9 {
        let (status, body) = post_call(
            &agent,
            INTRUDER,
            &launch_as("pod-x", &format!("c{i}"), &huge),
        );
        assert_eq!(status, 400, "{}", &body[..body.len().min(300)]);
        assert!(body.len() < 1024, "the refusal does not echo the name");
    }
    let records = audit_records(&path);
    assert!(has_evidence(&records), "the evidence is gone: {records:?}");
    let audit_size = std::fs::metadata(&path).unwrap().len();
    assert!(audit_size < 64 * 1024, "audit log of {audit_size} bytes");
    let log_size = std::fs::metadata(agent.dir.path().join("agent.log"))
        .unwrap()
        .len();
    assert!(log_size < 1 << 20, "agent log of {log_size} bytes");
}

#[test]
fn one_subject_cannot_rotate_its_evidence_out_of_the_audit_log() {
    if !require_root() {
        return;
    }
    const MAX: u64 = 64 * 1024;
    let (agent, _logs, path) = audited_agent(&[&format!("--audit_log_max_size={MAX}")]);
    make_evidence(&agent);
    // Denials of a few hundred bytes each: more than three files' worth.
    let flood = 800;
    for i in 0..flood {
        let (status, body) = post_call(
            &agent,
            INTRUDER,
            &launch_as("pod-x", &format!("c{i}"), "nobody"),
        );
        assert_eq!(status, 403, "{body}");
    }
    // Another subject's decision after the flood is recorded whole (and
    // the flood's summary is written before it).
    post_call(&agent, OPS, &launch_as("no-such-pod", "c", "nobody"));
    let records = audit_records(&path);
    assert!(has_evidence(&records), "the evidence was rotated out");
    assert!(
        records
            .iter()
            .any(|r| r["subject"] == OPS.0 && r["action"] == "LAUNCH_NESTED_CONTAINER"),
        "ops' record is missing"
    );
    // Every denial of the flood is accounted for: written whole, or counted
    // in the latest summary of the subject's suppressed denials.
    let written = records
        .iter()
        .filter(|r| r["subject"] == INTRUDER.0 && r["action"] == "LAUNCH_NESTED_CONTAINER")
        .count() as u64;
    let counted = records
        .iter()
        .filter(|r| r["summary"]["subject"] == INTRUDER.0)
        .filter_map(|r| r["summary"]["suppressed"].as_u64())
        .max()
        .unwrap_or(0);
    assert!(
        written > 0 && counted > 0,
        "{written} written, {counted} counted"
    );
    assert_eq!(
        written + counted,
        flood,
        "{written} written + {counted} counted"
    );
    for p in [path.clone(), PathBuf::from(format!("{}.1", path.display()))] {
        if let Ok(meta) = std::fs::metadata(&p) {
            assert!(meta.len() <= MAX, "{}: {} bytes", p.display(), meta.len());
        }
    }
}
