//! Every operator endpoint behind the ACL that guards it (issue 25, item 3):
//! `/metrics/snapshot` (and nestguard's `/metrics`, the same data) is
//! authorized as Mesos 1.11 authorizes it, GET_ENDPOINT_WITH_PATH on
//! `/metrics/snapshot` (src/common/authorization.cpp), so a principal
//! without a `get_endpoints` entry and an executor token (a subject with
//! claims only, which Mesos' local authorizer rejects outside the implicit
//! executor actions) get libprocess' `403 Forbidden.`. The other endpoints
//! keep their ACLs: `/flags` VIEW_FLAGS, `/files/*` ACCESS_SANDBOX,
//! `/state` filtered.

use std::collections::BTreeMap;

use nestguard::credentials::{Secret, jwt};
use nestguard::proto::mesos::v1::agent::call;

use super::{ACLS, Wire, api, request, typed};
use crate::agent_support::{INTRUDER, OPS, TestAgent, pod, require_root, task};

/// The agent's JWT key (see `agent_support`).
const KEY: &str = "e2e-test-signing-key-0123456789abcdef";

/// A GET with `Authorization: Bearer <token>`: (status, body).
fn get_bearer(agent: &TestAgent, token: &str, path: &str) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    let (status, _, body) = request(agent, "GET", path, None, &[("Authorization", &bearer)], b"");
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A GET with HTTP Basic: (status, body).
fn get_basic(agent: &TestAgent, who: (&str, &str), path: &str) -> (u16, String) {
    let (status, _, body) = request(agent, "GET", path, Some(who), &[], b"");
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn metrics_need_get_endpoints_and_refuse_executor_tokens() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600")]));
    let (root, _sandbox) = agent.launch_pod(&spec);
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    // The pod's executor token: live, and it names the pod's container.
    let claims: BTreeMap<String, String> = [
        ("cid", root.as_str()),
        ("eid", executor_id.as_str()),
        ("fid", "e2e-framework"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let token = jwt::issue(&claims, &Secret::from(KEY));
    let forbidden = (403, "403 Forbidden.".to_owned());

    // ops has `get_endpoints` for /metrics/snapshot.
    for path in ["/metrics/snapshot", "/metrics"] {
        let (status, body) = get_basic(&agent, OPS, path);
        assert_eq!(status, 200, "{path}: {body}");
    }
    // The intruder has no `get_endpoints` entry; the token only claims.
    for path in ["/metrics/snapshot", "/metrics"] {
        assert_eq!(get_basic(&agent, INTRUDER, path), forbidden, "{path}");
        assert_eq!(get_bearer(&agent, &token, path), forbidden, "{path}");
    }
    // GET_METRICS carries the same data: the same guard.
    let mut metrics = typed(call::Type::GetMetrics);
    metrics.get_metrics = Some(call::GetMetrics { timeout: None });
    for wire in [Wire::Json, Wire::Protobuf] {
        assert_eq!(api(&agent, OPS, wire, &metrics).0, 200);
        assert_eq!(
            api(&agent, INTRUDER, wire, &metrics),
            (403, b"403 Forbidden.".to_vec())
        );
    }

    // The other operator endpoints keep their ACLs, for the token too:
    // VIEW_FLAGS (`Forbidden()`), ACCESS_SANDBOX (files.cpp:406, an empty
    // `Forbidden(error.message)`).
    let sandbox_path =
        format!("/files/browse?path=/frameworks/e2e-framework/executors/{executor_id}/runs/latest");
    for (path, refused) in [
        ("/flags", forbidden.clone()),
        ("/slave(1)/flags", forbidden.clone()),
        (sandbox_path.as_str(), (403, String::new())),
    ] {
        assert_eq!(get_basic(&agent, INTRUDER, path), refused, "{path}");
        assert_eq!(get_bearer(&agent, &token, path), refused, "{path}");
        assert_eq!(get_basic(&agent, OPS, path).0, 200, "{path}");
    }
    // /state: 200, filtered to nothing for those who may view nothing.
    for (status, body) in [
        get_basic(&agent, INTRUDER, "/state"),
        get_bearer(&agent, &token, "/state"),
    ] {
        assert_eq!(status, 200, "{body}");
        let state: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(state["frameworks"], serde_json::json!([]), "{body}");
        assert!(state.get("flags").is_none(), "{body}");
    }
    // /health and /version stay open, as in Mesos.
    for path in ["/health", "/version"] {
        assert_eq!(get_bearer(&agent, &token, path).0, 200, "{path}");
        assert_eq!(
            request(&agent, "GET", path, None, &[], b"").0,
            200,
            "{path}"
        );
    }
}
