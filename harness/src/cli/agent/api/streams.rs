//! The streaming calls (LAUNCH_NESTED_CONTAINER_SESSION,
//! ATTACH_CONTAINER_INPUT/OUTPUT) belong to the debug-session work of issue
//! #14 item 2; until their handlers land they keep today's answer.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use nestguard::proto::mesos::v1::agent::call;

/// 400 naming the call: this agent does not serve it yet.
pub(super) fn not_served(kind: call::Type) -> Response {
    (
        StatusCode::BAD_REQUEST,
        format!(
            "Unsupported call {}: this agent does not serve it yet",
            kind.as_str_name()
        ),
    )
        .into_response()
}
