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
    // The library's decision counters: ops read /flags twice, the intruder
    // was refused once.
    assert_eq!(
        metrics["nestguard/authz/view_flags/allowed"], 2.0,
        "{metrics}"
    );
    assert_eq!(
        metrics["nestguard/authz/view_flags/denied"], 1.0,
        "{metrics}"
    );
    assert!(metrics["nestguard/authz/allowed"].as_f64().unwrap() >= 2.0);
    assert!(metrics["nestguard/authz/denied"].as_f64().unwrap() >= 1.0);
    assert!(metrics["nestguard/authz/decision_latency_ms/count"].is_number());
    assert_eq!(metrics["nestguard/isolation/launches"], 0.0);

    // /metrics: the same in Prometheus text, behind the same door.
    assert_eq!(request(&agent, "GET", "/metrics", None, &[], b"").0, 401);
    let (status, head, body) = request(&agent, "GET", "/metrics", Some(OPS), &[], b"");
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let text = String::from_utf8(body).unwrap();
    let values = prometheus_values(&text);
    assert_eq!(
        values["nestguard_authz_view_flags_allowed"],
        (2.0, "counter")
    );
    assert_eq!(
        values["nestguard_authz_view_flags_denied"],
        (1.0, "counter")
    );
    assert_eq!(values["slave_executors_running"], (0.0, "gauge"));
    assert_eq!(values["nestguard_isolation_containers_tracked"].1, "gauge");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("a Prometheus parser reads /metrics");
    let parsed = scrape
        .samples
        .iter()
        .find(|s| s.metric == "nestguard_authz_view_flags_denied")
        .expect("the parser sees the denial counter");
    assert_eq!(parsed.value, prometheus_parse::Value::Counter(1.0));
    assert_eq!(scrape.samples.len(), values.len());

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

/// Strict reading of the Prometheus text the agent writes: every metric is
/// a `# TYPE NAME counter|gauge` line followed by `NAME VALUE`, names are
/// valid Prometheus names and appear once. Name → (value, type).
fn prometheus_values(text: &str) -> std::collections::BTreeMap<String, (f64, &str)> {
    let valid = |name: &str| {
        name.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    assert!(text.ends_with('\n'), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len() % 2, 0, "{text}");
    let mut values = std::collections::BTreeMap::new();
    for pair in lines.chunks(2) {
        let [type_line, sample] = pair else {
            unreachable!("chunks of two")
        };
        let [hash, word, name, kind] = type_line.split(' ').collect::<Vec<_>>()[..] else {
            panic!("not a TYPE line: {type_line}")
        };
        assert_eq!((hash, word), ("#", "TYPE"), "{type_line}");
        assert!(valid(name), "{name}");
        assert!(matches!(kind, "counter" | "gauge"), "{type_line}");
        let (sample_name, value) = sample.split_once(' ').expect("NAME VALUE");
        assert_eq!(sample_name, name, "the sample follows its TYPE line");
        let value: f64 = value.parse().expect("a number");
        assert!(
            values.insert(name.to_owned(), (value, kind)).is_none(),
            "{name} twice"
        );
    }
    values
}
