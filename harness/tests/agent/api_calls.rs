//! The agent's operator calls through a running agent, each in JSON and in
//! protobuf with the project's generated `mesos.v1.agent` types, with the
//! authorization Mesos applies; the operator endpoints; and Mesos' refusal
//! texts on the wire.

use std::io::{Read, Write};
use std::net::TcpStream;

use base64::Engine;
use nestguard::proto::mesos::v1::agent::{Call, Response, call, response};
use prost::Message;

use crate::agent_support::{INTRUDER, OPS, TestAgent, pod, require_root, task};

/// ops may view and change everything; intruder may view nothing (and the
/// framework's `root` user is not among what it may view).
const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_flags": [{"principals": {"values": ["ops"]}, "flags": {"type": "ANY"}}],
  "set_log_level": [{"principals": {"values": ["ops"]}, "level": {"type": "ANY"}}],
  "view_frameworks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_executors": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "access_sandboxes": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "prune_images": [{"principals": {"values": ["ops"]}, "images": {"type": "ANY"}}],
  "mark_resource_providers_gone": [{"principals": {"values": ["ops"]}, "resource_providers": {"type": "ANY"}}],
  "modify_resource_provider_configs": [{"principals": {"values": ["ops"]}, "resource_providers": {"type": "ANY"}}]
}"#;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Json,
    Protobuf,
}

impl Wire {
    fn media(self) -> &'static str {
        match self {
            Wire::Json => "application/json",
            Wire::Protobuf => "application/x-protobuf",
        }
    }

    fn encode(self, call: &Call) -> Vec<u8> {
        match self {
            Wire::Json => nestguard::json::to_json(call).into_bytes(),
            Wire::Protobuf => call.encode_to_vec(),
        }
    }

    fn decode(self, body: &[u8]) -> Response {
        match self {
            Wire::Json => nestguard::json::from_json(std::str::from_utf8(body).unwrap()).unwrap(),
            Wire::Protobuf => Response::decode(body).unwrap(),
        }
    }
}

/// One HTTP/1.1 request on its own connection: (status, headers, body).
fn request(
    agent: &TestAgent,
    method: &str,
    path: &str,
    auth: Option<(&str, &str)>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let host = agent.address.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some((p, s)) = auth {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{p}:{s}"));
        head.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, head, body)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
}

fn api(agent: &TestAgent, who: (&str, &str), wire: Wire, call: &Call) -> (u16, Vec<u8>) {
    let (status, _, body) = request(
        agent,
        "POST",
        "/api/v1",
        Some(who),
        &[("Content-Type", wire.media()), ("Accept", wire.media())],
        &wire.encode(call),
    );
    (status, body)
}

fn typed(kind: call::Type) -> Call {
    Call {
        r#type: Some(kind as i32),
        ..Default::default()
    }
}

fn ok(agent: &TestAgent, who: (&str, &str), wire: Wire, call: &Call) -> Response {
    let (status, body) = api(agent, who, wire, call);
    assert_eq!(
        status,
        200,
        "{call:?} in {wire:?}: {}",
        String::from_utf8_lossy(&body)
    );
    wire.decode(&body)
}

#[test]
fn simple_calls_in_json_and_protobuf() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    for wire in [Wire::Json, Wire::Protobuf] {
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetHealth));
        assert_eq!(r.r#type, Some(response::Type::GetHealth as i32));
        assert!(r.get_health.unwrap().healthy);

        let r = ok(&agent, OPS, wire, &typed(call::Type::GetVersion));
        assert_eq!(
            r.get_version.unwrap().version_info.version,
            env!("CARGO_PKG_VERSION")
        );

        let r = ok(&agent, OPS, wire, &typed(call::Type::GetFlags));
        let flags = r.get_flags.unwrap().flags;
        let work_dir = agent.dir.path().join("work");
        assert!(
            flags
                .iter()
                .any(|f| f.name == "work_dir"
                    && f.value.as_deref() == Some(work_dir.to_str().unwrap())),
            "{flags:?}"
        );
        // VIEW_FLAGS refused: Mesos' Forbidden().
        assert_eq!(
            api(&agent, INTRUDER, wire, &typed(call::Type::GetFlags)),
            (403, b"403 Forbidden.".to_vec())
        );

        let mut metrics = typed(call::Type::GetMetrics);
        metrics.get_metrics = Some(call::GetMetrics { timeout: None });
        let r = ok(&agent, OPS, wire, &metrics);
        let names: Vec<String> = r
            .get_metrics
            .unwrap()
            .metrics
            .into_iter()
            .map(|m| m.name)
            .collect();
        for name in [
            "slave/uptime_secs",
            "slave/executors_running",
            "slave/containers_running",
        ] {
            assert!(names.iter().any(|n| n == name), "{names:?}");
        }

        let r = ok(&agent, OPS, wire, &typed(call::Type::GetAgent));
        let info = r.get_agent.unwrap().agent_info.unwrap();
        assert!(!info.id.unwrap().value.is_empty());
        assert_eq!(
            format!("http://{}:{}", info.hostname, info.port.unwrap()),
            agent.address
        );

        // SET_LOGGING_LEVEL: SET_LOG_LEVEL, then the level holds.
        let mut set = typed(call::Type::SetLoggingLevel);
        set.set_logging_level = Some(call::SetLoggingLevel {
            level: 1,
            duration: nestguard::proto::mesos::v1::DurationInfo {
                nanoseconds: 60_000_000_000,
            },
        });
        assert_eq!(api(&agent, INTRUDER, wire, &set).0, 403);
        assert_eq!(api(&agent, OPS, wire, &set).0, 200);
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetLoggingLevel));
        assert_eq!(r.get_logging_level.unwrap().level, 1);
        set.set_logging_level.as_mut().unwrap().level = 0;
        assert_eq!(api(&agent, OPS, wire, &set).0, 200);
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetLoggingLevel));
        assert_eq!(r.get_logging_level.unwrap().level, 0);

        // What this agent has none of, answered as Mesos 1.11 does.
        assert_eq!(
            api(&agent, OPS, wire, &typed(call::Type::Unknown)),
            (501, b"501 Not Implemented.".to_vec())
        );
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetOperations));
        assert_eq!(r.r#type, Some(response::Type::GetOperations as i32));
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetResourceProviders));
        assert_eq!(r.r#type, Some(response::Type::GetResourceProviders as i32));
        assert_eq!(
            api(&agent, OPS, wire, &typed(call::Type::PruneImages)).0,
            200
        );
        assert_eq!(
            api(&agent, INTRUDER, wire, &typed(call::Type::PruneImages)).0,
            403
        );
        let mut remove = typed(call::Type::RemoveResourceProviderConfig);
        remove.remove_resource_provider_config = Some(call::RemoveResourceProviderConfig {
            r#type: "org.apache.mesos.rp.local.storage".into(),
            name: "test".into(),
        });
        assert_eq!(
            api(&agent, OPS, wire, &remove),
            (
                500,
                b"Missing required flag --resource_provider_config_dir".to_vec()
            )
        );
        assert_eq!(api(&agent, INTRUDER, wire, &remove).0, 403);
        let info = nestguard::proto::mesos::v1::ResourceProviderInfo {
            id: None,
            r#type: "org.apache.mesos.rp.local.storage".into(),
            name: "test".into(),
        };
        let mut add = typed(call::Type::AddResourceProviderConfig);
        add.add_resource_provider_config =
            Some(call::AddResourceProviderConfig { info: info.clone() });
        let mut update = typed(call::Type::UpdateResourceProviderConfig);
        update.update_resource_provider_config = Some(call::UpdateResourceProviderConfig { info });
        for c in [&add, &update] {
            assert_eq!(
                api(&agent, OPS, wire, c),
                (
                    500,
                    b"Missing required flag --resource_provider_config_dir".to_vec()
                )
            );
            assert_eq!(api(&agent, INTRUDER, wire, c).0, 403);
        }
        let mut unknown = add.clone();
        unknown
            .add_resource_provider_config
            .as_mut()
            .unwrap()
            .info
            .r#type = "x".into();
        assert_eq!(
            api(&agent, OPS, wire, &unknown),
            (400, b"Failed to validate resource provider config with type 'x' and name 'test': Unknown local resource provider type 'x'".to_vec())
        );
        let mut gone = typed(call::Type::MarkResourceProviderGone);
        gone.mark_resource_provider_gone = Some(call::MarkResourceProviderGone {
            resource_provider_id: nestguard::proto::mesos::v1::ResourceProviderId {
                value: "rp".into(),
            },
        });
        assert_eq!(
            api(&agent, OPS, wire, &gone),
            (
                500,
                b"Could not mark resource provider 'rp' as gone: Agent has not registered yet"
                    .to_vec()
            )
        );
        assert_eq!(api(&agent, INTRUDER, wire, &gone).0, 403);
    }
}

#[test]
fn state_calls_filter_per_principal() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let mut once = task("once", "true");
    once["transient"] = serde_json::json!(true);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600"), once]));
    let (root, sandbox) = agent.launch_pod(&spec);
    agent.wait_task(&sandbox, "sleeper", "TASK_RUNNING");
    agent.wait_task(&sandbox, "once", "TASK_FINISHED");
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    for wire in [Wire::Json, Wire::Protobuf] {
        // GET_CONTAINERS carries the isolator's status and usage.
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetContainers));
        let containers = r.get_containers.unwrap().containers;
        let pod = containers
            .iter()
            .find(|c| c.container_id.value == root)
            .unwrap_or_else(|| panic!("{containers:?}"));
        let status = pod.container_status.as_ref().expect("container_status");
        assert_eq!(status.container_id.as_ref().unwrap().value, root);
        let stats = pod
            .resource_statistics
            .as_ref()
            .expect("resource_statistics");
        assert!(stats.timestamp > 0.0);
        assert!(stats.processes.unwrap_or(0) >= 1, "{stats:?}");
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetFrameworks));
        let frameworks = r.get_frameworks.unwrap().frameworks;
        assert_eq!(frameworks.len(), 1, "{frameworks:?}");
        assert_eq!(frameworks[0].framework_info.name, "e2e");
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetExecutors));
        let executors = r.get_executors.unwrap().executors;
        assert_eq!(executors.len(), 1);
        assert_eq!(executors[0].executor_info.executor_id.value, executor_id);
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetState));
        let state = r.get_state.unwrap();
        assert_eq!(state.get_frameworks.unwrap().frameworks.len(), 1);
        assert_eq!(state.get_executors.unwrap().executors.len(), 1);
        let tasks = ok(&agent, OPS, wire, &typed(call::Type::GetTasks))
            .get_tasks
            .unwrap();
        let names = |list: &[nestguard::proto::mesos::v1::Task]| -> Vec<(String, i32)> {
            list.iter().map(|t| (t.name.clone(), t.state)).collect()
        };
        use nestguard::proto::mesos::v1::TaskState;
        assert_eq!(
            names(&tasks.launched_tasks),
            [("sleeper".to_owned(), TaskState::TaskRunning as i32)]
        );
        assert_eq!(
            names(&tasks.terminated_tasks),
            [("once".to_owned(), TaskState::TaskFinished as i32)]
        );
        assert_eq!(
            tasks.launched_tasks[0].executor_id.as_ref().unwrap().value,
            executor_id
        );
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetTasks));
        assert_eq!(r.get_tasks.unwrap(), Default::default());

        // Filtered, not refused: 200 with nothing in it.
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetFrameworks));
        assert!(r.get_frameworks.unwrap().frameworks.is_empty());
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetExecutors));
        assert!(r.get_executors.unwrap().executors.is_empty());
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetState));
        let state = r.get_state.unwrap();
        assert!(state.get_frameworks.unwrap().frameworks.is_empty());
        assert!(state.get_executors.unwrap().executors.is_empty());
    }
    // /state filters the same way, and shows flags only to VIEW_FLAGS.
    let (status, _, body) = request(&agent, "GET", "/state", Some(OPS), &[], b"");
    assert_eq!(status, 200);
    let state: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        state["frameworks"][0]["executors"][0]["id"],
        executor_id.as_str()
    );
    assert_eq!(
        state["frameworks"][0]["executors"][0]["tasks"],
        serde_json::json!([{"id": "sleeper", "name": "sleeper", "state": "TASK_RUNNING"}])
    );
    assert_eq!(
        state["frameworks"][0]["executors"][0]["completed_tasks"][0]["state"],
        "TASK_FINISHED"
    );
    assert!(state["flags"]["work_dir"].is_string());
    let (status, _, body) = request(&agent, "GET", "/state", Some(INTRUDER), &[], b"");
    assert_eq!(status, 200);
    let state: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(state["frameworks"], serde_json::json!([]));
    assert!(state.get("flags").is_none());
}

#[test]
fn operator_endpoints_and_refusals_on_the_wire() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    // /health: open, 200, empty body.
    let (status, _, body) = request(&agent, "GET", "/health", None, &[], b"");
    assert_eq!((status, body.as_slice()), (200, b"".as_slice()));
    let (status, _, body) = request(&agent, "POST", "/slave(1)/health", None, &[], b"");
    assert_eq!((status, body.as_slice()), (200, b"".as_slice()));
    // /version: open.
    let (status, _, body) = request(&agent, "GET", "/version", None, &[], b"");
    assert_eq!(status, 200);
    let version: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(version["version"], env!("CARGO_PKG_VERSION"));
    // /flags: authenticated, VIEW_FLAGS.
    assert_eq!(request(&agent, "GET", "/flags", None, &[], b"").0, 401);
    let (status, _, body) = request(&agent, "GET", "/flags", Some(OPS), &[], b"");
    assert_eq!(status, 200);
    let flags: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(flags["flags"]["authenticate_http_readwrite"], "true");
    let (status, _, body) = request(&agent, "GET", "/slave(1)/flags", Some(OPS), &[], b"");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let (status, _, body) = request(&agent, "GET", "/flags", Some(INTRUDER), &[], b"");
    assert_eq!(
        (status, body.as_slice()),
        (403, b"403 Forbidden.".as_slice())
    );
    // /metrics/snapshot: authenticated.
    assert_eq!(
        request(&agent, "GET", "/metrics/snapshot", None, &[], b"").0,
        401
    );
    let (status, _, body) = request(&agent, "GET", "/metrics/snapshot", Some(OPS), &[], b"");
    assert_eq!(status, 200);
    let metrics: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(metrics["slave/executors_running"], 0.0);
    assert!(metrics["slave/uptime_secs"].as_f64().unwrap() >= 0.0);

    // Mesos' refusals, as the agent sends them.
    let health = br#"{"type":"GET_HEALTH"}"#;
    for (headers, status, text) in [
        (
            vec![("Content-Type", "application/json; charset=utf-8")],
            415,
            "Expecting 'Content-Type' of application/json or application/x-protobuf or application/recordio",
        ),
        (
            vec![
                ("Content-Type", "application/json"),
                ("Accept", "application/recordio"),
            ],
            406,
            "Streaming response is not supported for GET_HEALTH call",
        ),
    ] {
        let (got, _, body) = request(&agent, "POST", "/api/v1", Some(OPS), &headers, health);
        assert_eq!(
            (got, String::from_utf8_lossy(&body).as_ref()),
            (status, text)
        );
    }
    // REMOVE_NESTED_CONTAINER under a root the agent does not run.
    let remove = br#"{"type":"REMOVE_NESTED_CONTAINER","remove_nested_container":{"container_id":{"value":"c","parent":{"value":"no-such-root"}}}}"#;
    let (got, _, body) = request(
        &agent,
        "POST",
        "/api/v1",
        Some(OPS),
        &[("Content-Type", "application/json")],
        remove,
    );
    assert_eq!(
        (got, body.as_slice()),
        (500, b"Unknown root container".as_slice())
    );
    let (got, head, body) = request(&agent, "GET", "/api/v1", Some(OPS), &[], b"");
    assert_eq!(got, 405);
    assert!(head.to_ascii_lowercase().contains("allow: post"), "{head}");
    assert_eq!(
        body,
        b"405 Method Not Allowed. Expecting one of { 'POST' }, but received 'GET'"
    );
    let (got, _, body) = request(
        &agent,
        "POST",
        "/api/v1",
        Some(OPS),
        &[("Content-Type", "application/x-protobuf")],
        b"\xff\xff\xff",
    );
    assert_eq!(
        (got, body.as_slice()),
        (
            400,
            b"Failed to parse body into a protobuf object".as_slice()
        )
    );
    let (got, _, body) = request(
        &agent,
        "POST",
        "/api/v1",
        Some(OPS),
        &[("Content-Type", "application/json")],
        br#"{"type":"READ_FILE","read_file":{"offset":0}}"#,
    );
    assert_eq!(
        (got, body.as_slice()),
        (400, b"Missing required fields: read_file.path".as_slice())
    );
    let (got, _, body) = request(
        &agent,
        "POST",
        "/api/v1",
        Some(OPS),
        &[("Content-Type", "application/json")],
        b"\"GET_HEALTH\"",
    );
    assert_eq!(
        (got, body.as_slice()),
        (400, b"Expecting a JSON object".as_slice())
    );
}

#[test]
fn sandbox_files_by_mesos_paths() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600")]));
    let (_root, sandbox) = agent.launch_pod(&spec);
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(sandbox.join("hello.txt"), "hello world").unwrap();
    std::os::unix::fs::symlink("/etc", sandbox.join("escape")).unwrap();
    let virtual_path = format!("/frameworks/e2e-framework/executors/{executor_id}/runs/latest");
    let hello = format!("{virtual_path}/hello.txt");
    let list = |path: &str| {
        let mut c = typed(call::Type::ListFiles);
        c.list_files = Some(call::ListFiles {
            path: path.to_owned(),
        });
        c
    };
    let read = |path: &str, offset: u64, length: Option<u64>| {
        let mut c = typed(call::Type::ReadFile);
        c.read_file = Some(call::ReadFile {
            path: path.to_owned(),
            offset,
            length,
        });
        c
    };
    for wire in [Wire::Json, Wire::Protobuf] {
        // The virtual path and the real sandbox path list the same files.
        for path in [virtual_path.clone(), sandbox.to_string_lossy().into_owned()] {
            let r = ok(&agent, OPS, wire, &list(&path));
            let infos = r.get_list_files_or_panic();
            let file = infos
                .iter()
                .find(|f| f.path == format!("{path}/hello.txt"))
                .unwrap_or_else(|| panic!("{infos:?}"));
            assert_eq!(file.size, Some(11));
            assert_eq!(file.uid.as_deref(), Some("root"));
        }
        let r = ok(&agent, OPS, wire, &read(&hello, 6, Some(5)));
        let got = r.read_file.unwrap();
        assert_eq!((got.size, got.data.as_slice()), (11, b"world".as_slice()));
        let got = ok(&agent, OPS, wire, &read(&hello, 0, None))
            .read_file
            .unwrap();
        assert_eq!(got.data, b"hello world");
        let got = ok(&agent, OPS, wire, &read(&hello, 20, None))
            .read_file
            .unwrap();
        assert_eq!((got.size, got.data.len()), (11, 0));
        // Mesos' Files answers: 403 and 404 without a body, 400 with the reason.
        assert_eq!(
            api(&agent, INTRUDER, wire, &list(&virtual_path)),
            (403, Vec::new())
        );
        assert_eq!(
            api(&agent, INTRUDER, wire, &read(&hello, 0, None)),
            (403, Vec::new())
        );
        assert_eq!(api(&agent, OPS, wire, &list("/nope")), (404, Vec::new()));
        assert_eq!(
            api(
                &agent,
                OPS,
                wire,
                &read(&format!("{virtual_path}/missing"), 0, None)
            ),
            (404, Vec::new())
        );
        assert_eq!(
            api(&agent, OPS, wire, &read(&virtual_path, 0, None)),
            (400, b"Cannot read a directory.\n".to_vec())
        );
        let (status, body) = api(
            &agent,
            OPS,
            wire,
            &read(&format!("{virtual_path}/escape/hostname"), 0, None),
        );
        let body = String::from_utf8(body).unwrap();
        assert_eq!(status, 400);
        assert!(
            body.ends_with("/escape/hostname' is inaccessible.\n"),
            "{body}"
        );
    }
    // The /files endpoints.
    let encoded_path = |p: &str| p.replace('/', "%2F");
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/browse?path={}", encoded_path(&virtual_path)),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(status, 200);
    let listing: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let entry = listing
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == hello.as_str())
        .unwrap();
    assert_eq!(entry["size"], 11);
    assert_eq!(entry["mode"].as_str().unwrap().len(), 10);
    assert!(entry["mode"].as_str().unwrap().starts_with('-'));
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/read?path={hello}&offset=0"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"offset": 0, "data": "hello world"})
    );
    let (_, _, body) = request(
        &agent,
        "GET",
        &format!("/files/read?path={hello}"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"offset": 11, "data": ""})
    );
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/read?path={hello}&offset=-2"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!(
        (status, body.as_slice()),
        (400, b"Negative offset provided: -2.\n".as_slice())
    );
    let (status, head, body) = request(
        &agent,
        "GET",
        &format!("/files/download?path={hello}"),
        Some(OPS),
        &[],
        b"",
    );
    assert_eq!((status, body.as_slice()), (200, b"hello world".as_slice()));
    assert!(
        head.to_ascii_lowercase()
            .contains("content-disposition: attachment; filename=hello.txt"),
        "{head}"
    );
    let (status, _, body) = request(&agent, "GET", "/files/browse", Some(OPS), &[], b"");
    assert_eq!(
        (status, body.as_slice()),
        (400, b"Expecting 'path=value' in query.\n".as_slice())
    );
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/download?path={hello}"),
        Some(INTRUDER),
        &[],
        b"",
    );
    assert_eq!(
        (status, body.as_slice()),
        (403, b"403 Forbidden.".as_slice())
    );
    let (status, _, body) = request(
        &agent,
        "GET",
        &format!("/files/browse?path={virtual_path}"),
        Some(INTRUDER),
        &[],
        b"",
    );
    assert_eq!((status, body.as_slice()), (403, b"".as_slice()));
    assert_eq!(
        request(
            &agent,
            "GET",
            &format!("/files/read?path={hello}"),
            None,
            &[],
            b""
        )
        .0,
        401
    );
}

trait ListFilesOrPanic {
    fn get_list_files_or_panic(self) -> Vec<nestguard::proto::mesos::v1::FileInfo>;
}

impl ListFilesOrPanic for Response {
    fn get_list_files_or_panic(self) -> Vec<nestguard::proto::mesos::v1::FileInfo> {
        assert_eq!(self.r#type, Some(response::Type::ListFiles as i32));
        self.list_files.expect("list_files").file_infos
    }
}
