//! The agent's front door: the routes, authentication from headers only,
//! the per-subject request cap and the body limits, then Mesos'
//! `POST /api/v1` (JSON or protobuf) handed to [`super::api::dispatch`]. What
//! the handlers share ([`Server`], [`Principal`]) is in `server.rs`; the pod
//! endpoints are in `pod_routes.rs`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Extension, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Router, http};
use http_body_util::{BodyExt, Limited};
use nestguard::proto::mesos::authorization::Subject;

use super::abi::Authentication;
use super::api::{attach_input, dispatch};
use super::negotiation::{APPLICATION_RECORDIO, ContentType, Rejection, decode_call, negotiate};
use super::server::{
    BodyLimits, Principal, Server, SubjectSlot, TOO_MANY_REQUESTS_BODY, UNAUTHORIZED_BODY, text,
};

/// The routes. Every API route is behind [`front_door`]; `/health` and
/// `/version` are open, as Mesos' are. Add a route to the list its
/// authentication needs.
pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/api/v1", any(api))
        .route("/slave(1)/api/v1", any(api))
        .merge(super::pod_routes::routes())
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
