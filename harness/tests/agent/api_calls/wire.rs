//! The open and authenticated endpoints, and Mesos' refusals as the agent sends them.

use super::{ACLS, request};
use crate::agent_support::{INTRUDER, OPS, TestAgent, require_root};

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
