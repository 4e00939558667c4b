//! The agent's simple calls: GET_HEALTH (src/slave/http.cpp:1022),
//! GET_FLAGS (:978, VIEW_FLAGS), GET_VERSION (:1040), GET_METRICS (:1055),
//! GET_LOGGING_LEVEL (:1132), SET_LOGGING_LEVEL (:1150, SET_LOG_LEVEL) and
//! GET_AGENT (:2416).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::agent::{Call, Response as AgentResponse, response};

use super::encoded;
use crate::cli::agent::core::ApiError;
use crate::cli::agent::negotiation::Format;
use crate::cli::agent::server::{AgentDetails, Server};

/// The agent's version as GET_VERSION and `/version` report it: nestguard's
/// own (it is not a Mesos build).
pub fn version_info() -> v1::VersionInfo {
    v1::VersionInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..Default::default()
    }
}

/// GET_HEALTH: always healthy while it answers.
pub(super) fn health(format: Format) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetHealth as i32),
            get_health: Some(response::GetHealth { healthy: true }),
            ..Default::default()
        },
    )
}

/// The flags as `v1::Flag`s.
pub fn flag_list(details: &AgentDetails) -> Vec<v1::Flag> {
    details
        .flags
        .iter()
        .map(|(name, value)| v1::Flag {
            name: name.clone(),
            value: Some(value.clone()),
        })
        .collect()
}

/// GET_FLAGS: VIEW_FLAGS or 403.
pub(super) fn flags(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    format: Format,
) -> Result<Response, ApiError> {
    server.agent.require(subject, Action::ViewFlags, None)?;
    Ok(encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetFlags as i32),
            get_flags: Some(response::GetFlags {
                flags: flag_list(&server.details),
            }),
            ..Default::default()
        },
    ))
}

/// GET_VERSION.
pub(super) fn version(format: Format) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetVersion as i32),
            get_version: Some(response::GetVersion {
                version_info: version_info(),
            }),
            ..Default::default()
        },
    )
}

/// GET_METRICS: the registry's snapshot (the timeout has nothing to wait
/// for: every gauge answers at once), to those who may read
/// `/metrics/snapshot`. Stricter than Mesos, whose `Http::getMetrics`
/// (src/slave/http.cpp:1055) authorizes nothing: the same values must not
/// be open here and guarded there.
pub(super) fn metrics(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    format: Format,
) -> Result<Response, ApiError> {
    server.agent.authorize_metrics(subject)?;
    let metrics = server
        .metrics
        .snapshot()
        .into_iter()
        .map(|(name, value)| v1::Metric {
            name,
            value: Some(value),
        })
        .collect();
    Ok(encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetMetrics as i32),
            get_metrics: Some(response::GetMetrics { metrics }),
            ..Default::default()
        },
    ))
}

/// GET_LOGGING_LEVEL: the verbosity now in effect.
pub(super) fn logging_level(format: Format) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetLoggingLevel as i32),
            get_logging_level: Some(response::GetLoggingLevel {
                level: crate::cli::logging_level(),
            }),
            ..Default::default()
        },
    )
}

/// SET_LOGGING_LEVEL: SET_LOG_LEVEL or 403; the level holds for the
/// duration, then the start-up level returns (as libprocess' `Logging`).
pub(super) fn set_logging_level(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    call: Call,
) -> Result<Response, ApiError> {
    server.agent.require(subject, Action::SetLogLevel, None)?;
    let set = call.set_logging_level.unwrap_or_default();
    let duration =
        std::time::Duration::from_nanos(u64::try_from(set.duration.nanoseconds).unwrap_or(0));
    crate::cli::set_logging_level(set.level, duration)
        .map_err(|e| ApiError::Internal(format!("Failed to set the logging level: {e}")))?;
    Ok(StatusCode::OK.into_response())
}

/// GET_AGENT: the agent's info (ID, hostname, port).
pub(super) fn agent(server: &Arc<Server>, format: Format) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetAgent as i32),
            get_agent: Some(response::GetAgent {
                agent_info: Some(v1::AgentInfo {
                    hostname: server.details.hostname.clone(),
                    port: Some(i32::from(server.details.port)),
                    resources: Vec::new(),
                    id: Some(v1::AgentId {
                        value: server.agent.agent_id().to_owned(),
                    }),
                }),
            }),
            ..Default::default()
        },
    )
}
