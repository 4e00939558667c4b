//! A nested container's user after an agent restart: read from the
//! launcher's `ContainerConfig` checkpoint, so that a debug session, and a
//! nested launch that names no user, under a recovered nested container
//! run as that container's user; a missing or torn checkpoint refuses
//! both, never running them as the agent's user (root). A session that
//! ran when the agent stopped is destroyed when it recovers (its stdio
//! died with the agent), as Mesos destroys a session whose connection
//! ended.

use std::time::{Duration, Instant};

use crate::agent_support::{OPS, TestAgent, nested, pod, require_root, task};
use crate::debug_sessions::{
    Wire, answer, nobodys_pod, open, output, session_agent, session_call, streaming_headers,
    wait_gone, with_nested_launches,
};

/// A plain nested launch under `parent` (a nested container of `root`).
fn launch_under(
    agent: &TestAgent,
    root: &str,
    parent: &str,
    child: &str,
    command: &str,
) -> (u16, String) {
    let body = serde_json::json!({
        "type": "LAUNCH_NESTED_CONTAINER",
        "launch_nested_container": {
            "container_id": {"parent": nested(root, parent), "value": child},
            "command": {"shell": true, "value": command}
        }
    })
    .to_string();
    agent.curl(Some(OPS), "/api/v1", &body)
}

/// A session call under `parent` (a nested container of `root`).
fn session_under(root: &str, parent: &str, child: &str, command: &str) -> Vec<u8> {
    let call: nestguard::proto::mesos::v1::agent::Call = nestguard::json::from_json(
        &serde_json::json!({
            "type": "LAUNCH_NESTED_CONTAINER_SESSION",
            "launch_nested_container_session": {
                "container_id": {"parent": nested(root, parent), "value": child},
                "command": {"shell": true, "value": command}
            }
        })
        .to_string(),
    )
    .unwrap();
    Wire::Json.encode(&call)
}

#[test]
fn a_recovered_nested_containers_user_is_its_checkpointed_one() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start_with_acls(&with_nested_launches());
    // Two nested containers under it run as `nobody` (their parent's user).
    let (root, sandbox) = nobodys_pod(&agent);
    for child in ["svc", "torn", "missing"] {
        let body = serde_json::json!({
            "type": "LAUNCH_NESTED_CONTAINER",
            "launch_nested_container": {
                "container_id": nested(&root, child),
                "command": {"shell": true, "value": "sleep 1000"}
            }
        })
        .to_string();
        let (status, text) = agent.curl(Some(OPS), "/api/v1", &body);
        assert_eq!(status, 200, "{text}");
    }

    agent.sigkill();
    // `torn`'s checkpoint is cut short while the agent is down.
    let config = agent
        .dir
        .path()
        .join(format!("work/run/containers/{root}/containers/torn/config"));
    let bytes = std::fs::read(&config).unwrap();
    std::fs::write(&config, &bytes[..bytes.len() / 2]).unwrap();
    // `missing`'s is gone altogether.
    let missing = config
        .parent()
        .unwrap()
        .with_file_name("missing")
        .join("config");
    std::fs::remove_file(&missing).unwrap();
    agent.spawn();

    // (a) A session under the recovered `svc` runs as `nobody`.
    let wire = Wire::Json;
    let (status, head, stream, rest) = open(
        &agent,
        OPS,
        &streaming_headers(wire),
        &session_under(&root, "svc", "dbg", "id -un"),
    );
    assert_eq!(status, 200, "{head}\n{}", agent.log());
    assert_eq!(output(wire, &head, stream, rest).0, "nobody\n");

    // (b) A nested launch without a user under `svc` runs as `nobody`.
    let (status, text) = launch_under(&agent, &root, "svc", "plain", "id -un");
    assert_eq!(status, 200, "{text}");
    let wait = wait_for(&agent, &root, "svc", "plain");
    assert_eq!(wait["wait_nested_container"]["exit_status"], 0, "{wait}");
    let out =
        std::fs::read_to_string(sandbox.join("containers/svc/containers/plain/stdout")).unwrap();
    assert_eq!(out, "nobody\n");

    // A torn or missing checkpoint fails closed: both are refused.
    for parent in ["torn", "missing"] {
        let (status, text) = answer(
            &agent,
            &streaming_headers(wire),
            &session_under(&root, parent, "dbg", "id -un"),
        );
        assert_eq!(status, 400, "{parent}: {text}");
        assert!(
            text.contains("its user could not be recovered from its checkpoint"),
            "{parent}: {text}"
        );
        let (status, text) = launch_under(&agent, &root, parent, "plain", "id -un");
        assert_eq!(status, 400, "{parent}: {text}");
        assert!(
            text.contains("must name its 'command.user'"),
            "{parent}: {text}"
        );
        assert!(
            !sandbox
                .join("containers")
                .join(parent)
                .join("containers/plain")
                .exists(),
            "{parent}: the refused launch made a sandbox"
        );
    }
}

/// WAIT_NESTED_CONTAINER of `root.parent.child`.
fn wait_for(agent: &TestAgent, root: &str, parent: &str, child: &str) -> serde_json::Value {
    let body = serde_json::json!({
        "type": "WAIT_NESTED_CONTAINER",
        "wait_nested_container": {"container_id": {"parent": nested(root, parent), "value": child}}
    })
    .to_string();
    let (status, text) = agent.curl(Some(OPS), "/api/v1", &body);
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// A session running when the agent is SIGKILLed is destroyed when it
/// recovers: WAIT answers it as killed, and its command is gone.
#[test]
fn a_session_running_at_a_restart_is_destroyed() {
    if !require_root() {
        return;
    }
    let mut agent = session_agent();
    let (root, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("main", "sleep 1000")])));
    agent.wait_task(&sandbox, "main", "TASK_RUNNING");
    let wire = Wire::Json;
    // A sleep no other process of the machine runs (the session may have
    // a pid namespace of its own, so it is found by its command line).
    let call = session_call(&root, "orphan", "exec sleep 1037", None);
    let (status, head, stream, _) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 200, "{head}\n{}", agent.log());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sleeping() {
        assert!(Instant::now() < deadline, "the session never started");
        std::thread::sleep(Duration::from_millis(50));
    }

    agent.sigkill();
    drop(stream);
    agent.spawn();

    // Bounded (WAIT would block for ever on a session left running).
    let deadline = Instant::now() + Duration::from_secs(30);
    while sleeping() {
        assert!(
            Instant::now() < deadline,
            "the session's command outlived the restart\n{}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let wait = wait_gone(&agent, &root, "orphan");
    let wait = &wait["wait_nested_container"];
    assert_eq!(wait["state"], "TASK_KILLED", "{wait}");
    assert!(
        wait["message"]
            .as_str()
            .is_some_and(|m| m.contains("was a debug session")),
        "{wait}"
    );
}

/// Whether a `sleep 1037` runs on the machine.
fn sleeping() -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == b"sleep\x001037\x00"))
}
