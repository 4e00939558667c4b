//! `POST /api/v1`: the dispatch of a decoded agent call to its handler, one
//! arm per call type as Mesos' `Http::_api` (src/slave/http.cpp:570-672).
//! The match has no wildcard, so a call type added to the proto does not
//! compile until it is answered.

mod containers;
pub mod files;
mod info;
mod providers;
mod state;
mod streams;
pub use self::streams::attach_input;
pub(super) mod tasks;

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nestguard::proto::mesos::authorization::Subject;
use nestguard::proto::mesos::v1::agent::{Call, Response as AgentResponse, call, response};

pub use self::info::version_info;
use super::core::ApiError;
use super::negotiation::{Format, MediaTypes};
use super::server::Server;

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
        Type::GetMetrics => info::metrics(server, subject, format),
        Type::GetLoggingLevel => Ok(info::logging_level(format)),
        Type::SetLoggingLevel => info::set_logging_level(server, subject, call),
        Type::GetAgent => Ok(info::agent(server, format)),
        Type::ListFiles => list_files(server, subject, call, format).await,
        Type::ReadFile => read_file(server, subject, call, format).await,
        Type::GetState | Type::GetFrameworks | Type::GetExecutors | Type::GetTasks => {
            // Authorizer calls and sandbox reads: off the async workers.
            let (server, subject) = (Arc::clone(server), subject.cloned());
            blocking(move || {
                let subject = subject.as_ref();
                Ok(match kind {
                    Type::GetState => state::state(&server, subject, format),
                    Type::GetFrameworks => state::frameworks(&server, subject, format),
                    Type::GetExecutors => state::executors(&server, subject, format),
                    _ => state::tasks(&server, subject, format),
                })
            })
            .await
        }
        Type::GetOperations => Ok(providers::operations(format)),
        Type::GetResourceProviders => Ok(providers::resource_providers(format)),
        Type::AddResourceProviderConfig
        | Type::UpdateResourceProviderConfig
        | Type::RemoveResourceProviderConfig => providers::config(server, subject, call),
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
        | Type::AttachContainerOutput => streams::serve(agent, subject, kind, call, media).await,
    }
}

/// LIST_FILES (src/slave/http.cpp:1179-1226).
async fn list_files(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    call: Call,
    format: Format,
) -> Result<Response, ApiError> {
    let path = call.list_files.map(|l| l.path).unwrap_or_default();
    let agent = Arc::clone(&server.agent);
    let subject = subject.cloned();
    let listed = blocking(move || Ok(files::browse(&agent, subject.as_ref(), &path))).await?;
    Ok(match listed {
        Ok(file_infos) => encoded(
            format,
            &AgentResponse {
                r#type: Some(response::Type::ListFiles as i32),
                list_files: Some(response::ListFiles { file_infos }),
                ..Default::default()
            },
        ),
        Err(e) => e.into_api_response(),
    })
}

/// READ_FILE (src/slave/http.cpp:3196-3243).
async fn read_file(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    call: Call,
    format: Format,
) -> Result<Response, ApiError> {
    let read = call.read_file.unwrap_or_default();
    let agent = Arc::clone(&server.agent);
    let subject = subject.cloned();
    let got = blocking(move || {
        Ok(files::read(
            &agent,
            subject.as_ref(),
            read.offset,
            read.length,
            &read.path,
        ))
    })
    .await?;
    Ok(match got {
        Ok((size, data)) => encoded(
            format,
            &AgentResponse {
                r#type: Some(response::Type::ReadFile as i32),
                read_file: Some(response::ReadFile { size, data }),
                ..Default::default()
            },
        ),
        Err(e) => e.into_api_response(),
    })
}
