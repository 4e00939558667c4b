//! What every handler of the agent's HTTP surface shares: the server state
//! ([`Server`]), the authenticated caller the front door hands on
//! ([`Principal`]), the request limits, Mesos' fixed response bodies and the
//! mapping of [`ApiError`] to a response. Handlers depend on this module;
//! `http.rs` (authentication and the front door) fills it in. It depends on
//! none of them, so the API, endpoint and executor handlers form no circle
//! with the front door.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use nestguard::proto::mesos::authorization::Subject;

use super::abi::HttpAuthenticator;
use super::core::{Agent, ApiError};

/// What the agent says about itself (fixed at start).
#[derive(Debug, Clone)]
pub struct AgentDetails {
    /// Every flag with a value, by name (GET_FLAGS, `/flags`).
    pub flags: Vec<(String, String)>,
    /// The address it serves on.
    pub hostname: String,
    /// Its port.
    pub port: u16,
    /// When it started.
    pub started: std::time::SystemTime,
}

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
    pub details: AgentDetails,
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
    pub(super) max: usize,
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
pub(super) struct SubjectSlot {
    server: Arc<Server>,
    key: String,
}

impl SubjectSlot {
    pub(super) fn take(server: &Arc<Server>, subject: &Subject) -> Option<SubjectSlot> {
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

/// A plain-text response.
pub(super) fn text(status: StatusCode, body: impl Into<String>) -> Response {
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
