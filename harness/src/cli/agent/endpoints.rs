//! The HTTP endpoints operators use besides `/api/v1`, in Mesos' shapes:
//! `/health` (src/slave/http.cpp:1016: 200, empty body, no
//! authentication), `/version` (libprocess' VersionProcess: a JSON object
//! of the version info), `/flags` (:955-1000: `{"flags": {...}}`, VIEW_FLAGS
//! or 403), `/state` (:1331, the frameworks and executors the principal
//! may view), `/metrics/snapshot` (a flat JSON object of metric values;
//! GET_ENDPOINT_WITH_PATH or 403, see [`Agent::authorize_metrics`]), `/metrics`
//! (the same in the Prometheus text format, for scrapers; the same guard)
//! and `/files/{browse,read,download}` (src/files/files.cpp:380-800; the
//! sandbox lookup is shared with LIST_FILES/READ_FILE in [`files`]).

mod files;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Extension, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use nestguard::proto::mesos::authorization::{Action, Object, Subject};

use super::api::version_info;
use super::negotiation::APPLICATION_JSON;
use super::server::{AgentDetails, Principal, Server};

pub(super) fn json(value: &serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, APPLICATION_JSON)],
        value.to_string(),
    )
        .into_response()
}

/// The open endpoints (no authentication, as in Mesos). The agent's own
/// endpoints answer with and without libprocess' `/slave(1)` prefix.
pub fn open_routes() -> Router<Arc<Server>> {
    Router::new()
        .route("/health", any(|| async { StatusCode::OK }))
        .route("/slave(1)/health", any(|| async { StatusCode::OK }))
        .route(
            "/version",
            get(|| async { json(&nestguard::json::to_json_value(&version_info())) }),
        )
}

/// The endpoints behind the front door.
pub fn authenticated_routes() -> Router<Arc<Server>> {
    Router::new()
        .route("/flags", get(flags))
        .route("/slave(1)/flags", get(flags))
        .route("/state", get(state))
        .route("/slave(1)/state", get(state))
        .route("/metrics/snapshot", get(metrics))
        .route("/metrics", get(prometheus))
        .route("/files/browse", get(files::files_browse))
        .route("/files/read", get(files::files_read))
        .route("/files/download", get(files::files_download))
}

fn flag_object(details: &AgentDetails) -> serde_json::Value {
    serde_json::Value::Object(
        details
            .flags
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}

async fn flags(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
) -> Response {
    match server
        .agent
        .require(subject.as_ref(), Action::ViewFlags, None)
    {
        Ok(()) => json(&serde_json::json!({ "flags": flag_object(&server.details) })),
        Err(e) => e.into_response(),
    }
}

async fn metrics(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
) -> Response {
    if let Err(e) = server.agent.authorize_metrics(subject.as_ref()) {
        return e.into_response();
    }
    let snapshot: serde_json::Map<String, serde_json::Value> = server
        .metrics
        .snapshot()
        .into_iter()
        .map(|(k, v)| (k, serde_json::json!(v)))
        .collect();
    json(&serde_json::Value::Object(snapshot))
}

/// The content type of the Prometheus text format 0.0.4.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

async fn prometheus(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
) -> Response {
    if let Err(e) = server.agent.authorize_metrics(subject.as_ref()) {
        return e.into_response();
    }
    // The library's part is read through the ABI: off the async workers.
    match tokio::task::spawn_blocking(move || server.metrics.prometheus()).await {
        Ok(text) => ([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], text).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("worker failed: {e}"),
        )
            .into_response(),
    }
}

async fn state(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
) -> Response {
    // Authorizer calls and sandbox reads: off the async workers.
    match tokio::task::spawn_blocking(move || state_json(&server, subject.as_ref())).await {
        Ok(body) => json(&body),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("worker failed: {e}"),
        )
            .into_response(),
    }
}

/// `/state`'s body for `subject`.
fn state_json(server: &Server, subject: Option<&Subject>) -> serde_json::Value {
    let agent = &server.agent;
    let mut frameworks: Vec<serde_json::Value> = Vec::new();
    for e in agent.running_executors() {
        let framework = Object {
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        if !agent.filter(subject, Action::ViewFramework, framework) {
            continue;
        }
        let executor = Object {
            executor_info: Some(e.executor.clone()),
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        let executors = if agent.filter(subject, Action::ViewExecutor, executor) {
            let (mut tasks, mut completed) = (Vec::new(), Vec::new());
            for task in super::api::tasks::tasks_of(agent, &e) {
                let object = Object {
                    task: Some(task.clone()),
                    framework_info: Some(e.framework.clone()),
                    ..Default::default()
                };
                if !agent.filter(subject, Action::ViewTask, object) {
                    continue;
                }
                let entry = serde_json::json!({
                    "id": task.task_id.value,
                    "name": task.name,
                    "state": task.state().as_str_name(),
                });
                if super::api::tasks::is_terminal(task.state()) {
                    completed.push(entry);
                } else {
                    tasks.push(entry);
                }
            }
            vec![serde_json::json!({
                "id": e.executor.executor_id.value,
                "name": e.executor.name,
                "container": e.container_id.value,
                "directory": e.sandbox.to_string_lossy(),
                "tasks": tasks,
                "completed_tasks": completed,
            })]
        } else {
            Vec::new()
        };
        frameworks.push(serde_json::json!({
            "id": e.framework.id.as_ref().map(|id| id.value.clone()),
            "name": e.framework.name,
            "user": e.framework.user,
            "principal": e.framework.principal,
            "executors": executors,
        }));
    }
    let details = &server.details;
    let start_time = details
        .started
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut body = serde_json::json!({
        "version": version_info().version,
        "id": agent.agent_id(),
        "hostname": details.hostname,
        "port": details.port,
        "start_time": start_time,
        "frameworks": frameworks,
        "completed_frameworks": [],
    });
    // Mesos shows the flags only to those who may view them.
    if agent.require(subject, Action::ViewFlags, None).is_ok() {
        body["flags"] = flag_object(details);
    }
    body
}
