//! Debug sessions and attach through a running agent, with a raw RecordIO
//! client in JSON and protobuf: LAUNCH_NESTED_CONTAINER_SESSION streams the
//! container's output and destroys it when the connection closes;
//! ATTACH_CONTAINER_OUTPUT/INPUT reach a running session (pipes and TTY);
//! the session and attach ACLs are applied.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, Instant};

use base64::Engine;
use nestguard::proto::mesos::v1::agent::{Call, ProcessIo, call, process_io};
use prost::Message;

use crate::agent_support::{INTRUDER, OPS, TestAgent, nested, pod, require_root, task};
use crate::recordio;

pub(crate) const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_container_sessions_as_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_container_sessions_under_parent_with_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "attach_containers_output": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "attach_containers_input": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "manage_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
}"#;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Wire {
    Json,
    Protobuf,
}

impl Wire {
    pub(crate) fn media(self) -> &'static str {
        match self {
            Wire::Json => "application/json",
            Wire::Protobuf => "application/x-protobuf",
        }
    }

    pub(crate) fn encode(self, call: &Call) -> Vec<u8> {
        match self {
            Wire::Json => nestguard::json::to_json(call).into_bytes(),
            Wire::Protobuf => call.encode_to_vec(),
        }
    }

    pub(crate) fn decode(self, record: &[u8]) -> ProcessIo {
        match self {
            Wire::Json => nestguard::json::from_json(std::str::from_utf8(record).unwrap()).unwrap(),
            Wire::Protobuf => ProcessIo::decode(record).unwrap(),
        }
    }
}

/// Opens a connection, sends one request and reads the response head.
pub(crate) fn open(
    agent: &TestAgent,
    who: (&str, &str),
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, TcpStream, Vec<u8>) {
    let host = agent
        .address
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", who.0, who.1));
    let mut head = format!(
        "POST /api/v1 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\nAuthorization: Basic {token}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let split = loop {
        if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed before the response head");
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let rest = raw[split + 4..].to_vec();
    (status, head, stream, rest)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16).unwrap();
        if size == 0 || raw.len() < eol + 2 + size {
            break;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[(eol + 4 + size).min(raw.len())..];
    }
    out
}

/// Reads the rest of a streamed response; returns (stdout, stderr).
pub(crate) fn output(
    wire: Wire,
    head: &str,
    mut stream: TcpStream,
    mut rest: Vec<u8>,
) -> (String, String) {
    stream.read_to_end(&mut rest).unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(&rest)
    } else {
        rest
    };
    let mut decoder = recordio::Decoder::new(1 << 20);
    let (mut out, mut err) = (String::new(), String::new());
    for record in decoder.feed(&body).unwrap() {
        let io = wire.decode(&record);
        if let Some(data) = io.data {
            let text = String::from_utf8_lossy(data.data()).into_owned();
            match data.r#type() {
                process_io::data::Type::Stdout => out.push_str(&text),
                process_io::data::Type::Stderr => err.push_str(&text),
                other => panic!("unexpected output record {other:?}"),
            }
        }
    }
    (out, err)
}

/// Reads the rest of a chunked, streamed response as it comes and returns
/// how many bytes of stdout it carried (for floods: nothing is kept).
pub(crate) fn count_stdout(wire: Wire, mut stream: TcpStream, rest: Vec<u8>) -> usize {
    let mut decoder = recordio::Decoder::new(1 << 20);
    let (mut raw, mut total, mut buf) = (rest, 0, vec![0u8; 64 * 1024]);
    loop {
        // Every complete chunk at the front of `raw`.
        while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16)
                .unwrap();
            if size == 0 {
                return total;
            }
            if raw.len() < eol + 4 + size {
                break;
            }
            for record in decoder.feed(&raw[eol + 2..eol + 2 + size]).unwrap() {
                if let Some(data) = wire.decode(&record).data {
                    assert_eq!(data.r#type(), process_io::data::Type::Stdout);
                    total += data.data().len();
                }
            }
            raw.drain(..eol + 4 + size);
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return total,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
}

pub(crate) fn session_call(
    root: &str,
    child: &str,
    command: &str,
    tty: Option<(u32, u32)>,
) -> Call {
    let mut json = serde_json::json!({
        "type": "LAUNCH_NESTED_CONTAINER_SESSION",
        "launch_nested_container_session": {
            "container_id": nested(root, child),
            "command": {"shell": true, "value": command}
        }
    });
    if let Some((rows, columns)) = tty {
        json["launch_nested_container_session"]["container"] = serde_json::json!({
            "type": "MESOS",
            "tty_info": {"window_size": {"rows": rows, "columns": columns}}
        });
    }
    nestguard::json::from_json(&json.to_string()).unwrap()
}

pub(crate) fn streaming_headers(wire: Wire) -> [(&'static str, &'static str); 3] {
    [
        ("Content-Type", wire.media()),
        ("Accept", "application/recordio"),
        ("Message-Accept", wire.media()),
    ]
}

/// ATTACH_CONTAINER_INPUT records: the container ID, then `ios`.
pub(crate) fn input_body(wire: Wire, root: &str, child: &str, ios: &[ProcessIo]) -> Vec<u8> {
    let first: Call = nestguard::json::from_json(
        &serde_json::json!({
            "type": "ATTACH_CONTAINER_INPUT",
            "attach_container_input": {"type": "CONTAINER_ID", "container_id": nested(root, child)}
        })
        .to_string(),
    )
    .unwrap();
    let mut body = recordio::encode(&wire.encode(&first));
    for io in ios {
        let call = Call {
            r#type: Some(call::Type::AttachContainerInput as i32),
            attach_container_input: Some(call::AttachContainerInput {
                r#type: Some(call::attach_container_input::Type::ProcessIo as i32),
                container_id: None,
                process_io: Some(io.clone()),
            }),
            ..Default::default()
        };
        body.extend(recordio::encode(&wire.encode(&call)));
    }
    body
}

pub(crate) fn stdin(data: &[u8]) -> ProcessIo {
    ProcessIo {
        r#type: Some(process_io::Type::Data as i32),
        data: Some(process_io::Data {
            r#type: Some(process_io::data::Type::Stdin as i32),
            data: Some(data.to_vec()),
        }),
        control: None,
    }
}

fn window(rows: u32, columns: u32) -> ProcessIo {
    let json = serde_json::json!({
        "type": "CONTROL",
        "control": {"type": "TTY_INFO", "tty_info": {"window_size": {"rows": rows, "columns": columns}}}
    });
    nestguard::json::from_json(&json.to_string()).unwrap()
}

pub(crate) fn send_input(agent: &TestAgent, wire: Wire, body: &[u8]) -> (u16, String) {
    let headers = [
        ("Content-Type", "application/recordio"),
        ("Message-Content-Type", wire.media()),
        ("Accept", wire.media()),
    ];
    let (status, head, mut stream, mut rest) = open(agent, OPS, &headers, body);
    stream.read_to_end(&mut rest).unwrap();
    let _ = head;
    (status, String::from_utf8_lossy(&rest).into_owned())
}

/// WAIT_NESTED_CONTAINER's answer (JSON), within 30 s.
pub(crate) fn wait_gone(agent: &TestAgent, root: &str, child: &str) -> serde_json::Value {
    let body = serde_json::json!({
        "type": "WAIT_NESTED_CONTAINER",
        "wait_nested_container": {"container_id": nested(root, child)}
    })
    .to_string();
    let (status, text) = agent.curl(Some(OPS), "/api/v1", &body);
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn running_pod(agent: &TestAgent) -> String {
    let (root, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("main", "sleep 1000")])));
    agent.wait_task(&sandbox, "main", "TASK_RUNNING");
    root
}

/// An agent with the session ACLs (debug sessions are on by default).
pub(crate) fn session_agent() -> TestAgent {
    TestAgent::start_with_acls(ACLS)
}

/// [`ACLS`] that also allow plain nested launches.
pub(crate) fn with_nested_launches() -> String {
    ACLS.replacen(
        r#""permissive": false,"#,
        r#""permissive": false,
  "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_containers_under_parent_with_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],"#,
        1,
    )
}

/// A pod of `nobody`'s whose executor just sleeps (so that nested
/// containers under it, sessions included, run as `nobody`); the agent's
/// directory is made traversable for it. Returns its ID and sandbox.
pub(crate) fn nobodys_pod(agent: &TestAgent) -> (String, std::path::PathBuf) {
    std::fs::set_permissions(agent.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let mut spec = pod(serde_json::json!([task("main", "sleep 1000")]));
    spec["executor"]["type"] = serde_json::json!("CUSTOM");
    spec["executor"]["command"] = serde_json::json!({"value": "sleep 600"});
    spec["framework"]["user"] = serde_json::json!("nobody");
    agent.launch_pod(&spec)
}

/// A call's status and body, read to the end.
pub(crate) fn answer(agent: &TestAgent, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let (status, head, mut stream, mut rest) = open(agent, OPS, headers, body);
    stream.read_to_end(&mut rest).unwrap();
    (
        status,
        format!("{head}\n{}", String::from_utf8_lossy(&rest)),
    )
}

/// `--debug_sessions=false`: a session, both attaches and a `tty_info`
/// launch answer 400, and no child container is left.
#[test]
fn debug_sessions_are_off_with_debug_sessions_false() {
    if !require_root() {
        return;
    }
    const OFF: &str = "Debug sessions and TTYs are off on this agent (it was started with --debug_sessions=false)";
    // Plain nested launches are allowed too (for the `tty_info` one).
    let agent =
        TestAgent::start_with_acls_and(&with_nested_launches(), &["--debug_sessions=false"]);
    let root = running_pod(&agent);
    let wire = Wire::Json;
    let call = session_call(&root, "dbg-off", "echo hello", None);
    let (status, text) = answer(&agent, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 400, "{text}");
    assert!(text.contains(OFF), "{text}");

    let attach: Call = nestguard::json::from_json(
        &serde_json::json!({
            "type": "ATTACH_CONTAINER_OUTPUT",
            "attach_container_output": {"container_id": nested(&root, "dbg-off")}
        })
        .to_string(),
    )
    .unwrap();
    let (status, text) = answer(&agent, &streaming_headers(wire), &wire.encode(&attach));
    assert_eq!(status, 400, "{text}");
    assert!(text.contains(OFF), "{text}");

    let body = input_body(wire, &root, "dbg-off", &[stdin(b"x\n")]);
    let (status, text) = send_input(&agent, wire, &body);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains(OFF), "{text}");

    let launch = serde_json::json!({
        "type": "LAUNCH_NESTED_CONTAINER",
        "launch_nested_container": {
            "container_id": nested(&root, "tty-off"),
            "command": {"shell": true, "value": "sleep 1000"},
            "container": {"type": "MESOS", "tty_info": {}}
        }
    })
    .to_string();
    let (status, text) = agent.curl(Some(OPS), "/api/v1", &launch);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains(OFF), "{text}");
}

/// A session runs as its parent container's user: another
/// `command.user` is refused before anything is launched.
#[test]
fn a_session_as_another_user_than_its_parent_is_refused() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Json;
    let mut call = session_call(&root, "as-nobody", "id -u", None);
    if let Some(c) = call
        .launch_nested_container_session
        .as_mut()
        .and_then(|s| s.command.as_mut())
    {
        c.user = Some("nobody".into());
    }
    let (status, text) = answer(&agent, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("A debug session runs as its parent container's user (root): 'command.user' 'nobody' differs"),
        "{text}"
    );
    // The parent's own user is accepted.
    let mut call = session_call(&root, "as-root", "id -u", None);
    if let Some(c) = call
        .launch_nested_container_session
        .as_mut()
        .and_then(|s| s.command.as_mut())
    {
        c.user = Some("root".into());
    }
    let (status, head, stream, rest) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 200, "{head}");
    assert_eq!(output(wire, &head, stream, rest).0, "0\n");
}

#[test]
fn session_streams_output_and_the_container_is_gone_after() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    for (i, wire) in [Wire::Json, Wire::Protobuf].into_iter().enumerate() {
        let child = format!("dbg-{i}");
        let call = session_call(&root, &child, "echo hello; echo oops >&2; exit 3", None);
        let (status, head, stream, rest) =
            open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
        assert_eq!(status, 200, "{head}\n{}", agent.log());
        assert!(head.contains("application/recordio"), "{head}");
        let (out, err) = output(wire, &head, stream, rest);
        assert_eq!((out.as_str(), err.as_str()), ("hello\n", "oops\n"));
        let wait = wait_gone(&agent, &root, &child);
        assert_eq!(wait["wait_nested_container"]["exit_status"], 768, "{wait}");
    }

    // The client hangs up: the container is destroyed.
    let call = session_call(&root, "dbg-hangup", "sleep 1000", None);
    let (status, _, stream, _) = open(
        &agent,
        OPS,
        &streaming_headers(Wire::Json),
        &Wire::Json.encode(&call),
    );
    assert_eq!(status, 200);
    drop(stream);
    let started = Instant::now();
    let wait = wait_gone(&agent, &root, "dbg-hangup");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(wait["wait_nested_container"]["exit_status"], 9, "{wait}");
}

#[test]
fn attach_output_and_input_with_cat() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    for (i, wire) in [Wire::Json, Wire::Protobuf].into_iter().enumerate() {
        let child = format!("cat-{i}");
        let call = session_call(&root, &child, "cat", None);
        let (status, head, stream, rest) =
            open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
        assert_eq!(status, 200, "{head}");
        let session = std::thread::spawn(move || output(wire, &head, stream, rest));
        // A second reader of the same output.
        let attach: Call = nestguard::json::from_json(
            &serde_json::json!({
                "type": "ATTACH_CONTAINER_OUTPUT",
                "attach_container_output": {"container_id": nested(&root, &child)}
            })
            .to_string(),
        )
        .unwrap();
        let (status, head, stream, rest) =
            open(&agent, OPS, &streaming_headers(wire), &wire.encode(&attach));
        assert_eq!(status, 200, "{head}");
        let attached = std::thread::spawn(move || output(wire, &head, stream, rest));
        std::thread::sleep(Duration::from_millis(300));
        let body = input_body(wire, &root, &child, &[stdin(b"hi there\n"), stdin(b"")]);
        let (status, text) = send_input(&agent, wire, &body);
        assert_eq!(status, 200, "{text}");
        assert_eq!(session.join().unwrap().0, "hi there\n");
        assert_eq!(attached.join().unwrap().0, "hi there\n");
        let wait = wait_gone(&agent, &root, &child);
        assert_eq!(wait["wait_nested_container"]["exit_status"], 0, "{wait}");
    }
}

#[test]
fn tty_session_takes_the_window_size() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Json;
    let call = session_call(
        &root,
        "tty",
        "stty size; read line; stty size",
        Some((24, 80)),
    );
    let (status, head, stream, rest) =
        open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 200, "{head}\n{}", agent.log());
    let session = std::thread::spawn(move || output(wire, &head, stream, rest));
    std::thread::sleep(Duration::from_millis(500));
    let body = input_body(wire, &root, "tty", &[window(40, 120), stdin(b"go\n")]);
    let (status, text) = send_input(&agent, wire, &body);
    assert_eq!(status, 200, "{text}");
    let (out, err) = session.join().unwrap();
    assert!(err.is_empty(), "a TTY has no separate stderr: {err}");
    let sizes: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| l.contains(' '))
        .collect();
    assert_eq!(sizes, ["24 80", "40 120"], "{out:?}");
}

#[test]
fn sessions_and_attach_are_authorized() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Protobuf;
    let call = session_call(&root, "denied", "echo no", None);
    let (status, head, _, _) = open(
        &agent,
        INTRUDER,
        &streaming_headers(wire),
        &wire.encode(&call),
    );
    assert_eq!(status, 403, "{head}");

    let call = session_call(&root, "held", "sleep 1000", None);
    let (status, _, held, _) = open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 200);
    let attach: Call = nestguard::json::from_json(
        &serde_json::json!({
            "type": "ATTACH_CONTAINER_OUTPUT",
            "attach_container_output": {"container_id": nested(&root, "held")}
        })
        .to_string(),
    )
    .unwrap();
    let (status, head, _, _) = open(
        &agent,
        INTRUDER,
        &streaming_headers(wire),
        &wire.encode(&attach),
    );
    assert_eq!(status, 403, "{head}");
    drop(held);
    wait_gone(&agent, &root, "held");
}

/// Launches of one TTY session at once (a duplicate racing the first):
/// exactly one is launched (200) and the others answer 202, as Mesos'
/// ALREADY_LAUNCHED; the container keeps the switchboard it was launched
/// with, so input reaches it and its output reaches the first stream.
#[test]
fn a_duplicate_launch_never_replaces_the_switchboard() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Json;
    let call = wire.encode(&session_call(
        &root,
        "dup",
        "read l; echo got $l",
        Some((24, 80)),
    ));
    let gate = std::sync::Barrier::new(4);
    let answers: Vec<(u16, String, TcpStream, Vec<u8>)> = std::thread::scope(|s| {
        let launches: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    gate.wait();
                    open(&agent, OPS, &streaming_headers(wire), &call)
                })
            })
            .collect();
        launches.into_iter().map(|l| l.join().unwrap()).collect()
    });
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}\n{}",
        agent.log()
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 202),
        "{statuses:?}\n{}",
        agent.log()
    );
    let (_, head, stream, rest) = answers.into_iter().find(|a| a.0 == 200).unwrap();
    let session = std::thread::spawn(move || output(wire, &head, stream, rest));
    std::thread::sleep(Duration::from_millis(300));
    let body = input_body(wire, &root, "dup", &[stdin(b"hi\n")]);
    let (status, text) = send_input(&agent, wire, &body);
    assert_eq!(status, 200, "{text}");
    let (out, _) = session.join().unwrap();
    assert!(out.contains("got hi"), "{out:?}");
}

/// At most 16 sessions at once under one root container: the 17th gets
/// 503, and a session that ended frees its place.
#[test]
fn sessions_per_container_are_capped() {
    if !require_root() {
        return;
    }
    let agent = session_agent();
    let root = running_pod(&agent);
    let wire = Wire::Protobuf;
    let mut held = Vec::new();
    for i in 0..16 {
        let call = session_call(&root, &format!("held-{i}"), "sleep 1000", None);
        let (status, head, stream, _) =
            open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
        assert_eq!(status, 200, "session {i}: {head}");
        held.push(stream);
    }
    let call = session_call(&root, "one-too-many", "echo no", None);
    let (status, text) = answer(&agent, &streaming_headers(wire), &wire.encode(&call));
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains(&format!(
            "Too many debug sessions and TTY containers in container {root} (at most 16)"
        )),
        "{text}"
    );
    // Closing one session's stream destroys it; its place is free again.
    drop(held.pop());
    wait_gone(&agent, &root, "held-15");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let call = session_call(&root, "one-more", "echo yes", None);
        let (status, head, stream, rest) =
            open(&agent, OPS, &streaming_headers(wire), &wire.encode(&call));
        if status == 200 {
            assert_eq!(output(wire, &head, stream, rest).0, "yes\n");
            break;
        }
        assert_eq!(status, 503, "{head}");
        assert!(
            Instant::now() < deadline,
            "the ended session kept its place"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(held);
}

mod stdio;
