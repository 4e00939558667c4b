//! What a tenant can do to a debug session: the session's stdio are
//! descriptors the launcher hands the command (no FIFO, no path in the
//! sandbox), the command holds nothing else of the agent's, a sibling of
//! the container's user cannot open a session's terminal, and racing
//! launches cannot pass the session cap.

use std::io::Read;
use std::net::TcpStream;

use crate::agent_support::{OPS, TestAgent, nested, pod, require_root, task};
use crate::debug_sessions::{
    Wire, input_body, nobodys_pod, open, output, running_pod, send_input, session_agent,
    session_call, stdin, streaming_headers, wait_gone, with_nested_launches,
};

/// The command holds its fds 0/1/2 and nothing else of the agent's (the
/// `ls` itself opens fd 3); nothing is made in the sandbox for the
/// session's stdio. With pipes and with a TTY. (That the supervisor keeps
/// no copy is asserted from the host in `tests/abi/launcher_io_abi.rs`:
/// the container cannot read its supervisor's descriptors.)
#[test]
fn a_sessions_command_holds_only_its_stdio() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let (root, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("main", "sleep 1000")])));
    agent.wait_task(&sandbox, "main", "TASK_RUNNING");
    let command = "ls /proc/self/fd | tr '\\n' ' '";
    for (child, tty) in [("fds", None), ("fds-tty", Some((24, 80)))] {
        let wire = Wire::Json;
        let call = session_call(&root, child, command, tty);
        let (status, head, stream, rest) =
            open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
        assert_eq!(status, 200, "{head}\n{}", agent.log());
        let (out, err) = output(wire, &head, stream, rest);
        let lines: Vec<&str> = out.lines().map(str::trim).collect();
        assert_eq!(lines, ["0 1 2 3"], "{child}: {out:?} {err:?}");
        wait_gone(&agent, &root, child);
        let io = sandbox.join("containers").join(child).join(".nestguard-io");
        assert!(!io.exists(), "{} was made", io.display());
    }
}

/// The terminal of a session running as the container's user cannot be
/// opened by another process of that user (the slave is the agent's 0600
/// and was never opened by path): a sibling container sees the session's
/// `/dev/pts` entry but cannot write to it (nor to any other it sees), and
/// the session's output has what its client sent and nothing injected.
#[test]
fn a_sibling_cannot_open_a_sessions_terminal() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(&with_nested_launches());
    // The session and the sibling both run as `nobody`.
    let (root, sandbox) = nobodys_pod(&agent);
    let wire = Wire::Json;
    let call = session_call(
        &root,
        "victim",
        "read l; echo got $l; readlink /proc/self/fd/0",
        Some((24, 80)),
    );
    let (status, head, stream, rest) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 200, "{head}\n{}", agent.log());
    let session = std::thread::spawn(move || output(wire, &head, stream, rest));

    let sibling = serde_json::json!({
        "type": "LAUNCH_NESTED_CONTAINER",
        "launch_nested_container": {
            "container_id": nested(&root, "sibling"),
            "command": {"shell": true, "value":
                "id -un; for p in /dev/pts/[0-9]*; do if (echo INJECT > \"$p\") 2>/dev/null; \
                 then echo \"wrote $p\"; else echo \"saw $p\"; fi; done; true"}
        }
    })
    .to_string();
    let (status, text) = agent.curl(Some(OPS), "/api/v1", &sibling);
    assert_eq!(status, 200, "{text}");
    let wait = wait_gone(&agent, &root, "sibling");
    assert_eq!(wait["wait_nested_container"]["exit_status"], 0, "{wait}");
    let reached = std::fs::read_to_string(sandbox.join("containers/sibling/stdout")).unwrap();

    let body = input_body(wire, &root, "victim", &[stdin(b"hi\n")]);
    let (status, text) = send_input(&agent, wire, &body);
    assert_eq!(status, 200, "{text}");
    let (out, _) = session.join().unwrap();
    assert!(out.contains("got hi"), "{out:?}");
    assert!(
        !out.contains("INJECT"),
        "the sibling wrote to the session: {out:?}"
    );
    let pty = out.lines().map(str::trim).next_back().unwrap_or_default();
    assert!(pty.starts_with("/dev/pts/"), "{out:?}");
    let mut reached = reached.lines();
    assert_eq!(
        reached.next(),
        Some("nobody"),
        "the sibling ran as another user"
    );
    let reached: Vec<&str> = reached.collect();
    // The terminal is there to see (the host's /dev/pts), but not to open.
    assert!(
        reached.contains(&format!("saw {pty}").as_str()),
        "the sibling did not see {pty} at all, so the test proves nothing: {reached:?}"
    );
    assert!(
        !reached.contains(&format!("wrote {pty}").as_str()),
        "the sibling opened the session's terminal {pty}"
    );
}

/// More than [`MAX_SESSIONS`] launches racing each other under one root
/// container: exactly 16 are launched (each holds its place with a
/// `sleep`), the others answer 503 with the cap's text.
#[test]
fn racing_session_launches_never_pass_the_cap() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Protobuf;
    const RACERS: usize = 24;
    let calls: Vec<Vec<u8>> = (0..RACERS)
        .map(|i| {
            wire.encode(&session_call(
                &root,
                &format!("race-{i}"),
                "sleep 1000",
                None,
            ))
        })
        .collect();
    let gate = std::sync::Barrier::new(RACERS);
    let answers: Vec<(usize, u16, String, TcpStream, Vec<u8>)> = std::thread::scope(|s| {
        let racers: Vec<_> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let gate = &gate;
                let agent = &agent;
                s.spawn(move || {
                    gate.wait();
                    let (status, head, stream, rest) =
                        open(agent, OPS, &streaming_headers(wire), call);
                    (i, status, head, stream, rest)
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let launched: Vec<usize> = answers.iter().filter(|a| a.1 == 200).map(|a| a.0).collect();
    let cap =
        format!("Too many debug sessions and TTY containers in container {root} (at most 16)");
    let mut refused = 0;
    for (_, status, head, stream, rest) in answers {
        if status == 200 {
            continue;
        }
        assert_eq!(status, 503, "{head}\n{}", agent.log());
        let mut body = rest;
        let mut stream = stream;
        stream.read_to_end(&mut body).unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains(&cap), "{head}\n{body}");
        refused += 1;
    }
    assert_eq!(
        (launched.len(), refused),
        (16, RACERS - 16),
        "{}",
        agent.log()
    );
    for i in launched {
        wait_gone(&agent, &root, &format!("race-{i}"));
    }
}

/// `tty_info` launches hold a switchboard (a host pty and agent threads) as
/// a session does, and share the sessions' cap: past 16 under one root
/// container, a `tty_info` launch and a session are refused with the cap's
/// text, and nothing of theirs runs.
#[test]
fn tty_info_launches_share_the_session_cap() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(&with_nested_launches());
    let root = running_pod(&agent);
    let tty_launch = |child: &str| {
        let body = serde_json::json!({
            "type": "LAUNCH_NESTED_CONTAINER",
            "launch_nested_container": {
                "container_id": nested(&root, child),
                "command": {"shell": true, "value": "sleep 1000"},
                "container": {"type": "MESOS", "tty_info": {}}
            }
        })
        .to_string();
        agent.curl(Some(OPS), "/api/v1", &body)
    };
    for i in 0..16 {
        let (status, text) = tty_launch(&format!("tty-{i}"));
        assert_eq!(status, 200, "tty launch {i}: {text}\n{}", agent.log());
    }
    let cap =
        format!("Too many debug sessions and TTY containers in container {root} (at most 16)");
    let (status, text) = tty_launch("tty-16");
    assert_eq!((status, text.contains(&cap)), (503, true), "{text}");
    let wire = Wire::Protobuf;
    let call = session_call(&root, "session", "echo no", None);
    let (status, head, mut stream, mut rest) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    stream.read_to_end(&mut rest).unwrap();
    let body = String::from_utf8_lossy(&rest);
    assert_eq!((status, body.contains(&cap)), (503, true), "{head}\n{body}");
    for child in ["tty-16", "session"] {
        let wait = serde_json::json!({
            "type": "WAIT_NESTED_CONTAINER",
            "wait_nested_container": {"container_id": nested(&root, child)}
        })
        .to_string();
        let (status, text) = agent.curl(Some(OPS), "/api/v1", &wait);
        assert_eq!(status, 404, "{child} was launched: {text}");
    }
}
