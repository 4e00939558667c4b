//! The agent's HTTP surface: Mesos' `POST /api/v1` (JSON or protobuf) for
//! the container calls, and nestguard's pod endpoints (what a scheduler's
//! LAUNCH_GROUP does through a Mesos master).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Extension, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Router, http};
use http_body_util::{BodyExt, Limited};
use nestguard::proto::mesos::ContainerId;
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::nestguard::PodSpec;

use super::abi::{Authentication, HttpAuthenticator};
use super::api::{attach_input, blocking, dispatch};
use super::core::{Agent, ApiError};
use super::negotiation::{
    APPLICATION_JSON, APPLICATION_RECORDIO, ContentType, Rejection, decode_call, negotiate,
};

/// Shared server state.
pub struct Server {
    /// The agent.
    pub agent: Arc<Agent>,
    /// Set when `--authenticate_http_readwrite`.
    pub authenticator: Option<HttpAuthenticator>,
    /// Set when `--authenticate_http_executors`: the executor API's realm.
    pub executor_authenticator: Option<HttpAuthenticator>,
    /// True until the agent finished recovery.
    pub recovering: Arc<std::sync::atomic::AtomicBool>,
    /// How much of a body is read, and how long for.
    pub bodies: BodyLimits,
    /// Requests in progress per authenticated subject.
    pub per_subject: SubjectLimits,
    /// What the agent says about itself (flags, address).
    pub details: super::api::AgentDetails,
    /// The metrics registry.
    pub metrics: Arc<super::metrics::Metrics>,
}

/// Caps the requests one authenticated subject (a principal, or an executor
/// token's container) has in progress, so that one tenant cannot hold every
/// connection of the front door, e.g. with WAITs on its own long-running
/// containers (exempt from the idle timeout). Beyond the cap the request
/// gets 429, as Mesos' master answers a principal over its `--rate_limits`.
#[derive(Debug)]
pub struct SubjectLimits {
    max: usize,
    in_flight: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

impl SubjectLimits {
    /// At most `max` requests in progress per subject.
    pub fn new(max: usize) -> SubjectLimits {
        SubjectLimits {
            max,
            in_flight: std::sync::Mutex::default(),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, usize>> {
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The key requests are counted under: principals and token containers
/// live in separate name spaces, so neither can use up the other's share.
fn subject_key(subject: &Subject) -> String {
    match &subject.value {
        Some(principal) => format!("principal {principal}"),
        None => super::decision::subject_text(Some(subject)),
    }
}

/// One request of a subject in progress; released on drop (also when the
/// client went away and the request's future was dropped).
struct SubjectSlot {
    server: Arc<Server>,
    key: String,
}

impl SubjectSlot {
    fn take(server: &Arc<Server>, subject: &Subject) -> Option<SubjectSlot> {
        let key = subject_key(subject);
        let mut counts = server.per_subject.counts();
        let count = counts.entry(key.clone()).or_insert(0);
        if *count >= server.per_subject.max {
            return None;
        }
        *count += 1;
        drop(counts);
        Some(SubjectSlot {
            server: Arc::clone(server),
            key,
        })
    }
}

impl Drop for SubjectSlot {
    fn drop(&mut self) {
        let mut counts = self.server.per_subject.counts();
        if let Some(count) = counts.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

/// The body of a 429 (libprocess' `TooManyRequests` status line).
pub const TOO_MANY_REQUESTS_BODY: &str = "429 Too Many Requests.";

/// Request body limits (from the agent's flags).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// Bytes read (and dropped) before a 401, to keep the connection.
    pub unauthenticated: usize,
    /// Largest body of an authenticated request.
    pub max: usize,
    /// An authenticated body must arrive within this.
    pub read_timeout: std::time::Duration,
}

/// The authenticated principal (None: authentication is off), set by the
/// front door for every route behind it.
#[derive(Debug, Clone)]
pub struct Principal(pub Option<Subject>);

/// The routes. Every API route is behind [`front_door`]; `/health` and
/// `/version` are open, as Mesos' are. Add a route to the list its
/// authentication needs.
pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/api/v1", any(api))
        .route("/slave(1)/api/v1", any(api))
        .route("/nestguard/v1/pods", post(launch_pod))
        .route("/nestguard/v1/pods/{id}", get(pod_status).delete(kill_pod))
        .merge(super::executor_api::routes())
        .merge(super::endpoints::authenticated_routes())
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&server),
            front_door,
        ))
        // The front door enforces the body limit itself.
        .layer(DefaultBodyLimit::disable())
        .merge(super::endpoints::open_routes())
        .with_state(server)
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (status, body.into()).into_response()
}

/// Mesos' body of a 401 (libprocess' `Unauthorized`): nothing about why.
pub const UNAUTHORIZED_BODY: &str = "401 Unauthorized.";
/// Mesos' body of a 403 (libprocess' `Forbidden()`): no ACL internals. The
/// explanation goes to the decision log instead.
pub const FORBIDDEN_BODY: &str = "403 Forbidden.";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::BadRequest(m) => text(StatusCode::BAD_REQUEST, m),
            ApiError::Forbidden(why) => {
                // Already in the decision log; never in the body.
                tracing::debug!(reason = %why, "403");
                text(StatusCode::FORBIDDEN, FORBIDDEN_BODY)
            }
            ApiError::NotFound(m) => text(StatusCode::NOT_FOUND, m),
            ApiError::Conflict(m) => text(StatusCode::CONFLICT, m),
            ApiError::Internal(m) => text(StatusCode::INTERNAL_SERVER_ERROR, m),
            ApiError::Unavailable(m) => text(StatusCode::SERVICE_UNAVAILABLE, m),
        }
    }
}

/// Whether `path` is the v1 executor API (its own realm and flag).
fn is_executor_api(path: &str) -> bool {
    matches!(path, "/api/v1/executor" | "/slave(1)/api/v1/executor")
}

/// The body of the 503 Mesos answers while the agent recovers.
pub const RECOVERING_BODY: &str = "Agent has not finished recovery";

/// Whether a request to `path` waits for recovery: Mesos answers 503 on
/// its API (src/slave/http.cpp:375), executor API (:735, :806) and
/// `/state` (:1335) until recovery is done; the pod routes (the master's
/// stand-in) touch the same state.
pub fn waits_for_recovery(path: &str) -> bool {
    matches!(
        path,
        "/api/v1" | "/slave(1)/api/v1" | "/state" | "/slave(1)/state"
    ) || is_executor_api(path)
        || path.starts_with("/nestguard/v1/pods")
}

/// Authenticates the request from its headers alone, in the realm of its
/// route; `Err` is the response to send (401, or 500 when the
/// authenticator failed). `recovering`: the request is answered 503
/// because the agent recovers; it does not know its containers yet, so a
/// token is not refused because its container is not recovered yet (an
/// executor re-subscribing early must hear "not finished recovery" and
/// retry, as from Mesos).
fn authenticate(
    server: &Server,
    path: &str,
    headers: &HeaderMap,
    recovering: bool,
) -> Result<Option<Subject>, Box<Response>> {
    let authenticator = if is_executor_api(path) {
        &server.executor_authenticator
    } else {
        &server.authenticator
    };
    let Some(authenticator) = authenticator else {
        return Ok(None);
    };
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match authenticator.authenticate(header) {
        Ok(Authentication::Principal(subject))
            if !recovering && !server.agent.token_is_live(&subject) =>
        {
            // Stricter than Mesos: an executor token dies with its container.
            tracing::info!("executor token of a container that is not running; 401");
            let mut response = text(StatusCode::UNAUTHORIZED, UNAUTHORIZED_BODY);
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(
                    "Bearer realm=\"mesos-agent-readwrite\", error=\"invalid_token\", error_description=\"the token's container is not running\"",
                ),
            );
            Err(Box::new(response))
        }
        Ok(Authentication::Principal(subject)) => Ok(Some(subject)),
        Ok(Authentication::Unauthorized(challenge)) => {
            let mut response = text(StatusCode::UNAUTHORIZED, UNAUTHORIZED_BODY);
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, value);
            }
            Err(Box::new(response))
        }
        Err(e) => {
            tracing::warn!(error = %e, "HTTP authenticator failed");
            Err(Box::new(text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error.",
            )))
        }
    }
}

/// Authenticates every request before anything looks at its body (Mesos
/// authenticates first too, but has read the whole body by then): an
/// unauthenticated client gets 401 whatever its body, and at most
/// `--max_unauthenticated_body_bytes` of that body are read (to keep the
/// connection usable); a longer one closes the connection. An
/// authenticated body is read up to `--max_body_bytes` (413 beyond) within
/// `--http_body_read_timeout` (408 after).
async fn front_door(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    let limits = server.bodies;
    let announced = announced_length(request.headers());
    // Read once: a request let past the token's liveness check because
    // the agent recovers is the one answered 503.
    let recovering = server.recovering.load(std::sync::atomic::Ordering::SeqCst)
        && waits_for_recovery(request.uri().path());
    let subject = match authenticate(&server, request.uri().path(), request.headers(), recovering) {
        Ok(subject) => subject,
        Err(response) => {
            if announced.is_some_and(|n| n > limits.unauthenticated as u64) {
                // Not a byte of it is read (nor `100 Continue` sent).
                return closing(*response);
            }
            return drain_then(*response, request.into_body(), &limits).await;
        }
    };
    let slot = match &subject {
        Some(s) => match SubjectSlot::take(&server, s) {
            Some(slot) => Some(slot),
            None => {
                tracing::info!(
                    subject = %super::decision::subject_text(Some(s)),
                    max = server.per_subject.max,
                    "too many requests in progress; 429"
                );
                // Closed, so the refused client frees its connection too.
                return closing(text(StatusCode::TOO_MANY_REQUESTS, TOO_MANY_REQUESTS_BODY));
            }
        },
        None => None,
    };
    if announced.is_some_and(|n| n > limits.max as u64) {
        return closing(too_large(limits.max));
    }
    if recovering {
        return drain_then(
            text(StatusCode::SERVICE_UNAVAILABLE, RECOVERING_BODY),
            request.into_body(),
            &limits,
        )
        .await;
    }
    let (parts, body) = request.into_parts();
    // A RecordIO request (ATTACH_CONTAINER_INPUT) is a stream: its handler
    // reads it record by record, with its own limits. Only the agent API
    // takes one; every other route gets a collected body.
    if matches!(parts.uri.path(), "/api/v1" | "/slave(1)/api/v1")
        && parts
            .headers
            .get(header::CONTENT_TYPE)
            .map(HeaderValue::as_bytes)
            == Some(APPLICATION_RECORDIO.as_bytes())
    {
        let mut request = Request::from_parts(parts, body);
        request.extensions_mut().insert(Principal(subject));
        let response = next.run(request).await;
        return match slot {
            Some(slot) => response.map(|body| super::door::hold(body, slot)),
            None => response,
        };
    }
    let collected = tokio::time::timeout(
        limits.read_timeout,
        Limited::new(body, limits.max).collect(),
    )
    .await;
    let bytes = match collected {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return closing(too_large(limits.max));
        }
        Ok(Err(e)) => {
            return closing(text(
                StatusCode::BAD_REQUEST,
                format!("Failed to read the request body: {e}"),
            ));
        }
        Err(_) => {
            return closing(text(
                StatusCode::REQUEST_TIMEOUT,
                "The request body did not arrive in time",
            ));
        }
    };
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(Principal(subject));
    let response = next.run(request).await;
    // A stream (SUBSCRIBE) counts against the subject's cap for as long as
    // it lasts; any other response frees the slot once its headers are out.
    match slot {
        Some(slot) => super::door::hold_if_streaming(response, slot),
        None => response,
    }
}

/// The `Content-Length` the client announced, if any.
fn announced_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

fn too_large(max: usize) -> Response {
    text(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Request body exceeds {max} bytes"),
    )
}

/// Reads and drops at most `limits.unauthenticated` bytes of a rejected
/// request's body, then sends `response`; a body longer than that (or not
/// there in time) is left unread and the connection closed after the response.
async fn drain_then(response: Response, body: Body, limits: &BodyLimits) -> Response {
    let drained = tokio::time::timeout(
        limits.read_timeout.min(std::time::Duration::from_secs(1)),
        Limited::new(body, limits.unauthenticated).collect(),
    )
    .await;
    match drained {
        Ok(Ok(_)) => response,
        _ => closing(response),
    }
}

/// Asks hyper to close the connection after this response.
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}

async fn api(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let rejected = |Rejection(status, body)| {
        let mut response = text(status, body);
        if status == StatusCode::METHOD_NOT_ALLOWED {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        response
    };
    let media = match negotiate(&method, &headers) {
        Ok(media) => media,
        Err(r) => return rejected(r),
    };
    // Only ATTACH_CONTAINER_INPUT streams its request (decode_call's rules).
    if media.content == ContentType::RecordIo {
        return attach_input(&server.agent, subject.as_ref(), media, body, server.bodies).await;
    }
    // The front door collected the body already.
    let Ok(body) = body.collect().await.map(|c| c.to_bytes()) else {
        return text(StatusCode::BAD_REQUEST, "Failed to read the request body");
    };
    let call = match decode_call(&media, &body) {
        Ok(call) => call,
        Err(r) => return rejected(r),
    };
    match dispatch(&server, subject.as_ref(), call, media).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
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
        None => subject.claims.as_ref().is_some_and(|c| {
            c.labels
                .iter()
                .find(|l| l.key == "cid" && l.value.is_some())
                .is_some_and(|l| l.value.as_deref() == Some(id))
        }),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Mesos answers 503 "Agent has not finished recovery" on its API, the
    /// executor API and `/state` while it recovers; the front door does for
    /// these routes (and the pod routes), not for the open or read-only
    /// endpoints that need no recovered state.
    #[test]
    fn the_api_the_executor_api_and_state_wait_for_recovery() {
        for path in [
            "/api/v1",
            "/slave(1)/api/v1",
            "/api/v1/executor",
            "/slave(1)/api/v1/executor",
            "/state",
            "/slave(1)/state",
            "/nestguard/v1/pods",
            "/nestguard/v1/pods/x/tasks",
        ] {
            assert!(waits_for_recovery(path), "{path}");
        }
        for path in [
            "/health",
            "/version",
            "/flags",
            "/metrics/snapshot",
            "/files/browse",
        ] {
            assert!(!waits_for_recovery(path), "{path}");
        }
        assert!(is_executor_api("/slave(1)/api/v1/executor"));
        assert!(!is_executor_api("/api/v1"));
    }
}
