//! What this agent has none of: operations, resource providers, container
//! images. Each call is authorized and answered as Mesos 1.11 answers it on
//! an agent without them (no `--resource_provider_config_dir`, never
//! registered with a master): src/slave/http.cpp :2006 (GET_OPERATIONS),
//! :2446 (GET_RESOURCE_PROVIDERS), :3144 (PRUNE_IMAGES), :4028/:4072/:4119
//! (the *_RESOURCE_PROVIDER_CONFIG calls), :4150 (MARK_RESOURCE_PROVIDER_GONE).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::mesos::v1::agent::{Call, response};

use super::encoded;
use crate::cli::agent::core::ApiError;
use crate::cli::agent::negotiation::Format;
use crate::cli::agent::server::Server;

/// GET_OPERATIONS: VIEW_ROLE only filters operations; there are none.
pub(super) fn operations(format: Format) -> Response {
    encoded(
        format,
        &nestguard::proto::mesos::v1::agent::Response {
            r#type: Some(response::Type::GetOperations as i32),
            get_operations: Some(response::GetOperations {}),
            ..Default::default()
        },
    )
}

/// GET_RESOURCE_PROVIDERS: VIEW_RESOURCE_PROVIDER only filters; there are none.
pub(super) fn resource_providers(format: Format) -> Response {
    encoded(
        format,
        &nestguard::proto::mesos::v1::agent::Response {
            r#type: Some(response::Type::GetResourceProviders as i32),
            get_resource_providers: Some(response::GetResourceProviders {}),
            ..Default::default()
        },
    )
}

/// The only local resource provider type Mesos 1.11 knows
/// (src/resource_provider/local.cpp:44-50).
const STORAGE_PROVIDER: &str = "org.apache.mesos.rp.local.storage";

/// The *_RESOURCE_PROVIDER_CONFIG calls: MODIFY_RESOURCE_PROVIDER_CONFIG;
/// ADD and UPDATE then validate the info (an unknown type is 400,
/// src/slave/http.cpp:4051-4057, local.cpp:70-74; the storage provider's
/// own checks need its `storage` field, which this agent does not declare);
/// then the daemon's failure without a config directory
/// (src/resource_provider/daemon.cpp:206, :264, :317), which libprocess
/// answers 500 with the failure's text (http_proxy.cpp:129).
pub(super) fn config(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    call: Call,
) -> Result<Response, ApiError> {
    server
        .agent
        .require(subject, Action::ModifyResourceProviderConfig, None)?;
    let info = call
        .add_resource_provider_config
        .map(|a| a.info)
        .or(call.update_resource_provider_config.map(|u| u.info));
    if let Some(info) = info
        && info.r#type != STORAGE_PROVIDER
    {
        return Err(ApiError::BadRequest(format!(
            "Failed to validate resource provider config with type '{t}' and name '{n}': \
             Unknown local resource provider type '{t}'",
            t = info.r#type,
            n = info.name
        )));
    }
    Err(ApiError::Internal(
        "Missing required flag --resource_provider_config_dir".into(),
    ))
}

/// MARK_RESOURCE_PROVIDER_GONE: MARK_RESOURCE_PROVIDER_GONE, then
/// `Slave::markResourceProviderGone`'s failure on an agent that never
/// registered (src/slave/slave.cpp:9323-9324).
pub(super) fn mark_gone(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    call: Call,
) -> Result<Response, ApiError> {
    server
        .agent
        .require(subject, Action::MarkResourceProviderGone, None)?;
    let id = call
        .mark_resource_provider_gone
        .map(|m| m.resource_provider_id.value)
        .unwrap_or_default();
    Err(ApiError::Internal(format!(
        "Could not mark resource provider '{id}' as gone: Agent has not registered yet"
    )))
}

/// PRUNE_IMAGES: PRUNE_IMAGES, then 200 (no image store, nothing to prune).
pub(super) fn prune_images(
    server: &Arc<Server>,
    subject: Option<&Subject>,
) -> Result<Response, ApiError> {
    server.agent.require(subject, Action::PruneImages, None)?;
    Ok(StatusCode::OK.into_response())
}
