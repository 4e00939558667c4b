//! `POST /api/v1`: the dispatch of a decoded agent call to its handler, one
//! arm per call type as Mesos' `Http::_api` (src/slave/http.cpp:570-672).
//! The match has no wildcard, so a call type added to the proto does not
//! compile until it is answered.

mod containers;
mod info;
mod providers;
mod state;
mod streams;

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nestguard::proto::mesos::authorization::Subject;
use nestguard::proto::mesos::v1::agent::{Call, call};

pub use self::info::{AgentDetails, version_info};
use super::core::ApiError;
use super::http::Server;
use super::negotiation::{Format, MediaTypes};

/// Runs a blocking step of a call (module calls) off the async workers.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("worker failed: {e}")))?
}

/// 200 with `message` in `format`, typed as Mesos types it.
pub(super) fn encoded<M: prost::Message + prost_reflect::ReflectMessage>(
    format: Format,
    message: &M,
) -> Response {
    let mut response = (StatusCode::OK, format.encode(message)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.media_type()),
    );
    response
}

/// libprocess' `NotImplemented()`.
pub const NOT_IMPLEMENTED_BODY: &str = "501 Not Implemented.";

/// Answers one decoded, validated call.
pub(super) async fn dispatch(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    call: Call,
    media: MediaTypes,
) -> Result<Response, ApiError> {
    use call::Type;
    let agent = &server.agent;
    let format = media.response_format();
    let kind = Type::try_from(call.r#type.unwrap_or(0)).unwrap_or(Type::Unknown);
    tracing::info!(call = kind.as_str_name(), "processing agent call");
    match kind {
        Type::Unknown => Ok((StatusCode::NOT_IMPLEMENTED, NOT_IMPLEMENTED_BODY).into_response()),
        Type::GetHealth => Ok(info::health(format)),
        Type::GetFlags => info::flags(server, subject, format),
        Type::GetVersion => Ok(info::version(format)),
        Type::GetMetrics => Ok(info::metrics(server, format)),
        Type::GetLoggingLevel => Ok(info::logging_level(format)),
        Type::SetLoggingLevel => info::set_logging_level(server, subject, call),
        Type::GetAgent => Ok(info::agent(server, format)),
        Type::ListFiles | Type::ReadFile => Ok(streams::not_served(kind)),
        Type::GetState => Ok(state::state(server, subject, format)),
        Type::GetFrameworks => Ok(state::frameworks(server, subject, format)),
        Type::GetExecutors => Ok(state::executors(server, subject, format)),
        Type::GetTasks => Ok(state::tasks(server, subject, format)),
        Type::GetOperations => Ok(providers::operations(format)),
        Type::GetResourceProviders => Ok(providers::resource_providers(format)),
        Type::AddResourceProviderConfig
        | Type::UpdateResourceProviderConfig
        | Type::RemoveResourceProviderConfig => providers::config(server, subject),
        Type::MarkResourceProviderGone => providers::mark_gone(server, subject, call),
        Type::PruneImages => providers::prune_images(server, subject),
        Type::GetContainers
        | Type::LaunchNestedContainer
        | Type::WaitNestedContainer
        | Type::KillNestedContainer
        | Type::RemoveNestedContainer
        | Type::LaunchContainer
        | Type::WaitContainer
        | Type::KillContainer
        | Type::RemoveContainer => {
            containers::container_call(agent, subject, kind, call, format).await
        }
        Type::LaunchNestedContainerSession
        | Type::AttachContainerInput
        | Type::AttachContainerOutput => Ok(streams::not_served(kind)),
    }
}
