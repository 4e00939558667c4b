//! nestguard's pod endpoints, `/nestguard/v1/pods[/{id}]`: what a
//! scheduler's LAUNCH_GROUP does through a Mesos master, and the rule of who
//! may see or kill a pod (also used by the executor API's pod routes).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use nestguard::credentials::claims::Claims;
use nestguard::proto::mesos::ContainerId;
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::nestguard::PodSpec;

use super::api::blocking;
use super::core::ApiError;
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

/// Who may see or kill a pod: its framework's principal, or its own
/// executor's token; anyone when authentication is off.
///
/// Without an executor record (no such pod, or a damaged checkpoint) there
/// is no framework to match, so the root container is authorized as a
/// standalone one (`view_standalone_containers` /
/// `kill_standalone_containers`), as Mesos' `killContainer` does for a
/// container without an executor. Authorization always comes first and a
/// refusal is the same 403 whether the pod exists or not, so IDs cannot be
/// probed; only an authorized caller learns that a pod is missing (404).
pub(super) fn may_manage_pod(
    server: &Server,
    subject: Option<&Subject>,
    id: &str,
    action: Action,
) -> Result<(), ApiError> {
    let Some(subject) = subject else {
        return Ok(());
    };
    let Some(exec) = server.agent.executor(id) else {
        let root = ContainerId {
            value: id.to_owned(),
            parent: None,
        };
        return server.agent.authorize(Some(subject), action, &root, None);
    };
    let allowed = match subject.value.as_deref() {
        Some(principal) => exec.framework.principal.as_deref() == Some(principal),
        None => Claims::of(subject).and_then(|c| c.container_id()) == Some(id),
    };
    if allowed {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "pod {id}: only its framework's principal or its executor may manage it"
        )))
    }
}

/// A pod route's checks: the caller may see the pod ([`may_manage_pod`]),
/// and the pod has an executor (404 otherwise); returns the executor.
pub(super) fn pod_executor(
    server: &Server,
    subject: Option<&Subject>,
    id: &str,
) -> Result<super::core::ExecutorRecord, Box<Response>> {
    may_manage_pod(server, subject, id, Action::ViewStandaloneContainer)
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
    if let Err(e) = may_manage_pod(
        &server,
        subject.as_ref(),
        &id,
        Action::KillStandaloneContainer,
    ) {
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
