//! nestguard's pod endpoints, `/nestguard/v1/pods[/{id}]`: what a
//! scheduler's LAUNCH_GROUP does through a Mesos master. Who may see or
//! kill a pod is the authorization gate's rule (`Agent::require_pod`).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use nestguard::proto::mesos::ContainerId;
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::nestguard::PodSpec;

use super::api::blocking;
use super::negotiation::APPLICATION_JSON;
use super::server::{Principal, Server, text};

/// The pod routes (behind the front door).
pub fn routes() -> Router<Arc<Server>> {
    Router::new()
        .route("/nestguard/v1/pods", post(launch_pod))
        .route("/nestguard/v1/pods/{id}", get(pod_status).delete(kill_pod))
}

async fn launch_pod(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    body: Bytes,
) -> Response {
    let Ok(text_body) = std::str::from_utf8(&body) else {
        return text(StatusCode::BAD_REQUEST, "the pod spec is not UTF-8");
    };
    let pod: PodSpec = match nestguard::json::from_json(text_body) {
        Ok(p) => p,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("invalid pod spec: {e}")),
    };
    let agent = Arc::clone(&server.agent);
    match blocking(move || agent.launch_pod(subject.as_ref(), pod)).await {
        Ok(id) => {
            let body = serde_json::json!({ "container_id": id.value }).to_string();
            ([(header::CONTENT_TYPE, APPLICATION_JSON)], body).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// A pod route's checks: the caller may see the pod ([`Agent::require_pod`](super::core::Agent::require_pod)),
/// and the pod has an executor (404 otherwise); returns the executor.
pub(super) fn pod_executor(
    server: &Server,
    subject: Option<&Subject>,
    id: &str,
) -> Result<super::core::ExecutorRecord, Box<Response>> {
    server
        .agent
        .require_pod(subject, id, Action::ViewStandaloneContainer)
        .map_err(|e| Box::new(e.into_response()))?;
    server.agent.executor(id).ok_or_else(|| {
        Box::new(text(
            StatusCode::NOT_FOUND,
            format!("Container {id} cannot be found"),
        ))
    })
}

async fn pod_status(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    let exec = match pod_executor(&server, subject.as_ref(), &id) {
        Ok(exec) => exec,
        Err(response) => return *response,
    };
    let root = ContainerId {
        value: id.clone(),
        parent: None,
    };
    let body = match tokio::time::timeout(
        std::time::Duration::from_millis(1),
        server.agent.wait(&root),
    )
    .await
    {
        Ok(Ok(t)) => {
            serde_json::json!({"container_id": id, "state": "TERMINATED", "exit_status": t.status,
                                         "sandbox": exec.sandbox})
        }
        _ => serde_json::json!({"container_id": id, "state": "RUNNING", "sandbox": exec.sandbox}),
    };
    ([(header::CONTENT_TYPE, APPLICATION_JSON)], body.to_string()).into_response()
}

async fn kill_pod(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    if let Err(e) = server
        .agent
        .require_pod(subject.as_ref(), &id, Action::KillStandaloneContainer)
    {
        return e.into_response();
    }
    let agent = Arc::clone(&server.agent);
    match blocking(move || agent.kill_pod(&id)).await {
        Ok(t) => (
            [(header::CONTENT_TYPE, APPLICATION_JSON)],
            serde_json::json!({"exit_status": t.status}).to_string(),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}
