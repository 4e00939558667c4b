//! `POST /api/v1/executor` (and `/slave(1)/api/v1/executor`, the path
//! Mesos' executor library builds from `MESOS_SLAVE_PID`): the v1 executor
//! API as Mesos 1.11's agent serves it (`Http::executor`,
//! src/slave/http.cpp:730-890), with the same checks in the same order and
//! the same texts:
//!
//! 1. POST only (405);
//! 2. `Content-Type` exactly JSON or protobuf (415), the body a `Call`
//!    (400 "Failed to parse body into ...");
//! 3. `validateExecutorCall` (400 "Failed to validate Executor::Call: ...");
//! 4. SUBSCRIBE needs an `Accept` allowing JSON or protobuf (406);
//!    HEARTBEAT is answered 202 at once;
//! 5. the framework and executor must be known (400);
//! 6. an authenticated caller's claims must name this framework, executor
//!    and the executor's container (`verifyExecutorClaims`, 403 with
//!    Mesos' text); the route is authenticated only with
//!    `--authenticate_http_executors` (realm `mesos-agent-executor`), as
//!    Mesos does; that flag, when not given, follows
//!    `--authenticate_http_readwrite` (unlike Mesos' false);
//! 7. an executor that has not subscribed since the agent started may only
//!    SUBSCRIBE (403 "Executor is not subscribed").
//!
//! While the agent recovers, every call gets 503 "Agent has not finished
//! recovery" (the front door, [`super::http::waits_for_recovery`]).
//!
//! SUBSCRIBE answers 200 with a stream of RecordIO-framed events in the
//! accepted format; UPDATE and MESSAGE answer 202. The pod routes at the
//! end are the framework's side, for the harness's pod client (see
//! [`super::core`]'s pods).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use base64::Engine;
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::executor::{Call, call};
use prost::Message;

use super::core::verify_executor_claims;
use super::core::{Agent, ApiError, EventReceiver, Lookup};
use super::decision::subject_text;
use super::negotiation::{APPLICATION_JSON, APPLICATION_PROTOBUF, Format, accepts};
use super::pod_routes::pod_executor;
use super::server::{Principal, Server};

/// The executor API's routes and the pod client's update routes; merged
/// into the agent's router, behind its front door.
pub fn routes() -> Router<Arc<Server>> {
    Router::new()
        .route("/api/v1/executor", any(executor))
        .route("/slave(1)/api/v1/executor", any(executor))
        .route("/nestguard/v1/pods/{id}/updates", get(pod_updates))
        .route("/nestguard/v1/pods/{id}/acknowledge", post(pod_acknowledge))
        .route("/nestguard/v1/pods/{id}/kill", post(pod_kill_task))
        .route("/nestguard/v1/pods/{id}/tasks", post(pod_launch_task))
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (status, body.into()).into_response()
}

/// A call that passed the checks, with its executor's root container.
struct Checked {
    call: Call,
    root: String,
    format: Format,
}

async fn executor(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let checked = match check(&server.agent, subject.as_ref(), &method, &headers, &body) {
        Ok(Some(checked)) => checked,
        Ok(None) => return StatusCode::ACCEPTED.into_response(),
        Err(response) => return *response,
    };
    let agent = Arc::clone(&server.agent);
    let result = match checked.call.r#type() {
        call::Type::Subscribe => return subscribe(agent, checked).await,
        call::Type::Update => {
            let status = checked.call.update.map(|u| u.status).unwrap_or_default();
            let root = checked.root;
            blocking(move || agent.status_update(&root, status)).await
        }
        call::Type::Message => {
            let data = checked.call.message.map(|m| m.data).unwrap_or_default();
            agent.executor_message(&checked.root, data)
        }
        call::Type::Heartbeat => Ok(()),
        call::Type::Unknown => {
            tracing::warn!("received an UNKNOWN executor call");
            return StatusCode::NOT_IMPLEMENTED.into_response();
        }
    };
    match result {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("worker failed: {e}")))?
}

/// The call in `body`, decoded as its `Content-Type` says (protobuf or
/// JSON), with Mesos' answers for a missing or unsupported type and for a
/// body that does not decode.
fn decode_executor_call(headers: &HeaderMap, body: &[u8]) -> Result<Call, Box<Response>> {
    let fail = |status: StatusCode, message: String| Box::new(text(status, message));
    let Some(content_type) = headers.get(header::CONTENT_TYPE) else {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            "Expecting 'Content-Type' to be present".into(),
        ));
    };
    Ok(match content_type.to_str().unwrap_or("") {
        APPLICATION_PROTOBUF => Call::decode(body).map_err(|_| {
            fail(
                StatusCode::BAD_REQUEST,
                "Failed to parse body into Call protobuf".into(),
            )
        })?,
        APPLICATION_JSON => {
            let text_body = std::str::from_utf8(body).map_err(|e| {
                fail(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to parse body into JSON: {e}"),
                )
            })?;
            if let Err(e) = serde_json::from_str::<serde_json::Value>(text_body) {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to parse body into JSON: {e}"),
                ));
            }
            nestguard::json::from_json::<Call>(text_body).map_err(|e| {
                fail(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to convert JSON into Call protobuf: {e}"),
                )
            })?
        }
        _ => {
            return Err(fail(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Expecting 'Content-Type' of {APPLICATION_JSON} or {APPLICATION_PROTOBUF}"),
            ));
        }
    })
}

/// Mesos' checks in Mesos' order; `Ok(None)` is a HEARTBEAT (202).
fn check(
    agent: &Agent,
    subject: Option<&Subject>,
    method: &Method,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Option<Checked>, Box<Response>> {
    let fail = |status: StatusCode, message: String| Box::new(text(status, message));
    if method != Method::POST {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("Expecting one of {{ 'POST' }}, but received '{method}'"),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return Err(Box::new(response));
    }
    let call = decode_executor_call(headers, body)?;
    if let Err(e) = validate(&call) {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            format!("Failed to validate Executor::Call: {e}"),
        ));
    }
    let format = match call.r#type() {
        call::Type::Subscribe if accepts(headers, "accept", APPLICATION_JSON) => Format::Json,
        call::Type::Subscribe if accepts(headers, "accept", APPLICATION_PROTOBUF) => {
            Format::Protobuf
        }
        call::Type::Subscribe => {
            return Err(fail(
                StatusCode::NOT_ACCEPTABLE,
                format!(
                    "Expecting 'Accept' to allow '{APPLICATION_PROTOBUF}' or '{APPLICATION_JSON}'"
                ),
            ));
        }
        call::Type::Heartbeat => return Ok(None),
        _ => Format::Json,
    };
    let record = agent
        .find_executor(&call.framework_id.value, &call.executor_id.value)
        .map_err(|missing| {
            fail(
                StatusCode::BAD_REQUEST,
                match missing {
                    Lookup::NoFramework => "Framework cannot be found".into(),
                    Lookup::NoExecutor => "Executor cannot be found".into(),
                },
            )
        })?;
    let root = record.container_id.value.clone();
    if let Some(subject) = subject
        && let Err(e) = verify_executor_claims(
            subject,
            &call.framework_id.value,
            &call.executor_id.value,
            &root,
        )
    {
        tracing::info!(subject = %subject_text(Some(subject)), reason = %e, "executor call refused; 403");
        return Err(fail(StatusCode::FORBIDDEN, e));
    }
    if call.r#type() != call::Type::Subscribe && !agent.executor_subscribed(&root) {
        return Err(fail(
            StatusCode::FORBIDDEN,
            "Executor is not subscribed".into(),
        ));
    }
    Ok(Some(Checked { call, root, format }))
}

/// Mesos' `validateExecutorCall` (src/common/validation.cpp), texts included.
pub fn validate(call: &Call) -> Result<(), String> {
    if call.r#type.is_none() {
        return Err("Expecting 'type' to be present".into());
    }
    if call.executor_id.value.is_empty() {
        return Err("Expecting 'executor_id' to be present".into());
    }
    if call.framework_id.value.is_empty() {
        return Err("Expecting 'framework_id' to be present".into());
    }
    let (eid, fid) = (&call.executor_id.value, &call.framework_id.value);
    // Stricter than Mesos, which looks these up as they are: every ID an
    // executor sends gets the rules of every other ID before it reaches a
    // lookup, a checkpoint or a log line.
    path_id("executor_id", eid)?;
    path_id("framework_id", fid)?;
    match call.r#type() {
        call::Type::Subscribe => {
            let Some(subscribe) = &call.subscribe else {
                return Err("Expecting 'subscribe' to be present".into());
            };
            // Mesos re-sends these to the framework as the executor's own
            // updates: they get the checks of an UPDATE (stricter than
            // Mesos, which checks them only as they are forwarded).
            subscribe
                .unacknowledged_tasks
                .iter()
                .try_for_each(|t| path_id("unacknowledged_tasks.task_id", &t.task_id.value))?;
            subscribe
                .unacknowledged_updates
                .iter()
                .try_for_each(|u| validate_status(&u.status, eid, fid))
        }
        call::Type::Update => {
            let Some(update) = &call.update else {
                return Err("Expecting 'update' to be present".into());
            };
            validate_status(&update.status, eid, fid)
        }
        call::Type::Message if call.message.is_none() => {
            Err("Expecting 'message' to be present".into())
        }
        _ => Ok(()),
    }
}

/// Mesos' ID rules for `value`, the text naming `field`.
fn path_id(field: &str, value: &str) -> Result<(), String> {
    nestguard::validation::validate_path_id(value).map_err(|e| format!("'{field}' is invalid: {e}"))
}

/// The checks of one status update an executor sends (Mesos'
/// `validateExecutorCall` for UPDATE), and its task ID's (stricter than
/// Mesos, which drops an update for an unknown task later).
fn validate_status(status: &v1::TaskStatus, eid: &str, fid: &str) -> Result<(), String> {
    path_id("status.task_id", &status.task_id.value)?;
    let Some(uuid) = &status.uuid else {
        return Err("Expecting 'uuid' to be present".into());
    };
    if uuid::Uuid::from_slice(uuid).is_err() {
        return Err(format!("Not a valid UUID: {} bytes", uuid.len()));
    }
    if let Some(other) = &status.executor_id
        && other.value != *eid
    {
        return Err(format!(
            "ExecutorID in Call: {eid} does not match ExecutorID in TaskStatus: {}",
            other.value
        ));
    }
    if status.source != Some(v1::task_status::Source::Executor as i32) {
        return Err(format!(
            "Received Call from executor {eid} of framework {fid} with invalid source, expecting 'SOURCE_EXECUTOR'"
        ));
    }
    if status.state() == v1::TaskState::TaskStaging {
        return Err(format!(
            "Received TASK_STAGING from executor {eid} of framework {fid} which is not allowed"
        ));
    }
    Ok(())
}

/// Runs on the blocking pool: it writes checkpoints (fsync) under the
/// executor's lock, which must not stall the async workers.
async fn subscribe(agent: Arc<Agent>, checked: Checked) -> Response {
    let Checked { call, root, format } = checked;
    let record = match agent.executor(&root) {
        Some(record) => record,
        None => return text(StatusCode::BAD_REQUEST, "Executor cannot be found"),
    };
    let subscribe = call.subscribe.unwrap_or_default();
    let unacknowledged = subscribe
        .unacknowledged_updates
        .into_iter()
        .map(|u| u.status)
        .collect();
    let unacknowledged_tasks: Vec<String> = subscribe
        .unacknowledged_tasks
        .into_iter()
        .map(|t| t.task_id.value)
        .collect();
    let events = match blocking(move || {
        agent.subscribe_executor(&record, unacknowledged, &unacknowledged_tasks)
    })
    .await
    {
        Ok(events) => events,
        Err(e) => return e.into_response(),
    };
    let mut response = Response::new(Body::new(EventStream { events, format }));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.media_type()),
    );
    response
}

/// The body of a SUBSCRIBE response: each event as one RecordIO record,
/// until the agent drops the stream (a re-subscription, SHUTDOWN, the pod
/// destroyed). The client closing the connection drops this body, and the
/// next event sent to it finds the stream gone.
struct EventStream {
    events: EventReceiver,
    format: Format,
}

impl http_body::Body for EventStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let format = self.format;
        self.events
            .poll_recv(cx)
            .map(|event| event.map(|e| Ok(format.record_frame(&e))))
    }
}

fn json(body: &serde_json::Value) -> Response {
    ([(header::CONTENT_TYPE, APPLICATION_JSON)], body.to_string()).into_response()
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// The framework's view: the updates it has not acknowledged (Mesos' JSON
/// of each `TaskStatus`) and the executor's messages (base64).
async fn pod_updates(
    State(server): State<Arc<Server>>,
    Extension(Principal(subject)): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    if let Err(response) = pod_executor(&server, subject.as_ref(), &id) {
        return *response;
    }
    let agent = Arc::clone(&server.agent);
    let root = id.clone();
    match blocking(move || agent.pending_updates(&root)).await {
        Ok(updates) => json(&serde_json::json!({
            "updates": updates.iter().map(nestguard::json::to_json_value).collect::<Vec<_>>(),
            "messages": server.agent.executor_messages(&id).iter().map(|m| b64().encode(m)).collect::<Vec<_>>(),
        })),
        Err(e) => e.into_response(),
    }
}

/// Refuses an executor token on the framework's routes: acknowledging
/// updates and killing tasks are the scheduler's (in Mesos they come from
/// the master); an executor acknowledging its own updates would lose them.
fn framework_only(subject: Option<&Subject>) -> Result<(), ApiError> {
    match subject {
        Some(s) if s.value.is_none() => Err(ApiError::Forbidden(format!(
            "{}: an executor token cannot act as the framework",
            subject_text(Some(s))
        ))),
        _ => Ok(()),
    }
}

/// A framework-only pod route: the pod's framework may act on it, its
/// executor may not.
fn framework_route(server: &Server, subject: Option<&Subject>, id: &str) -> Result<(), ApiError> {
    server
        .agent
        .require_pod(subject, id, Action::KillStandaloneContainer)
        .and_then(|()| framework_only(subject))
}

/// A framework-only pod route's request, checked before its handler runs:
/// the caller may act as the pod's framework (else the rejection is the
/// refusal); its pod id, caller and body.
struct FrameworkCall {
    id: String,
    subject: Option<Subject>,
    body: Bytes,
}

impl FrameworkCall {
    /// The body as JSON, if it is JSON.
    fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

impl axum::extract::FromRequest<Arc<Server>> for FrameworkCall {
    type Rejection = Response;

    async fn from_request(
        request: axum::extract::Request,
        server: &Arc<Server>,
    ) -> Result<Self, Response> {
        use axum::extract::FromRequestParts;
        let (mut parts, body) = request.into_parts();
        let Path(id) = Path::<String>::from_request_parts(&mut parts, server)
            .await
            .map_err(IntoResponse::into_response)?;
        let Extension(Principal(subject)) =
            Extension::<Principal>::from_request_parts(&mut parts, server)
                .await
                .map_err(IntoResponse::into_response)?;
        framework_route(server, subject.as_ref(), &id).map_err(IntoResponse::into_response)?;
        let request = axum::extract::Request::from_parts(parts, body);
        let body = Bytes::from_request(request, server)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(FrameworkCall { id, subject, body })
    }
}

/// The framework acknowledges an update: `{"task_id": ..., "uuid": base64}`.
async fn pod_acknowledge(State(server): State<Arc<Server>>, call: FrameworkCall) -> Response {
    let id = call.id.clone();
    let parsed: Option<(String, Vec<u8>)> = call.json().and_then(|v| {
        let task = v["task_id"].as_str()?.to_owned();
        let uuid = b64().decode(v["uuid"].as_str()?).ok()?;
        Some((task, uuid))
    });
    let Some((task_id, uuid)) = parsed else {
        return text(
            StatusCode::BAD_REQUEST,
            "Expecting a JSON object with 'task_id' and 'uuid' (base64)",
        );
    };
    let agent = Arc::clone(&server.agent);
    match blocking(move || agent.acknowledge_update(&id, &task_id, &uuid)).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(e) => e.into_response(),
    }
}

/// The framework kills a task: `{"task_id": ...}`; the executor gets KILL.
async fn pod_kill_task(State(server): State<Arc<Server>>, call: FrameworkCall) -> Response {
    let id = call.id.clone();
    let task_id = call
        .json()
        .and_then(|v| v["task_id"].as_str().map(str::to_owned));
    let Some(task_id) = task_id else {
        return text(
            StatusCode::BAD_REQUEST,
            "Expecting a JSON object with 'task_id'",
        );
    };
    let agent = Arc::clone(&server.agent);
    let root = id.clone();
    let task = task_id.clone();
    match blocking(move || agent.kill_task(&root, &task)).await {
        Ok(true) => StatusCode::ACCEPTED.into_response(),
        Ok(false) => text(
            StatusCode::NOT_FOUND,
            format!("Task {task_id} of pod {id} is not queued and its executor is not subscribed"),
        ),
        Err(e) => e.into_response(),
    }
}

/// The framework launches one more task on the pod's executor: a
/// `TaskInfo` in Mesos' JSON. The executor gets it as a LAUNCH event
/// (Mesos' `RunTaskMessage`), at once or, queued, when it subscribes;
/// nestguard's default executor, like Mesos', runs task groups only and
/// shuts down on LAUNCH.
async fn pod_launch_task(State(server): State<Arc<Server>>, call: FrameworkCall) -> Response {
    let FrameworkCall { id, subject, body } = call;
    let task: nestguard::proto::mesos::TaskInfo = match std::str::from_utf8(&body)
        .map_err(|e| e.to_string())
        .and_then(|t| nestguard::json::from_json(t).map_err(|e| e.to_string()))
    {
        Ok(task) => task,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("invalid TaskInfo: {e}")),
    };
    let agent = Arc::clone(&server.agent);
    match blocking(move || agent.launch_single_task(subject.as_ref(), &id, task)).await {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(e) => e.into_response(),
    }
}
