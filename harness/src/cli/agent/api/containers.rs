//! The container calls: LAUNCH/WAIT/KILL/REMOVE_(NESTED_)CONTAINER and
//! GET_CONTAINERS, authorized as Mesos does (src/slave/http.cpp:2821-3790).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::mesos::v1::agent::{Call, call, response};
use nestguard::proto::mesos::{self, ContainerId, v1};

use super::{blocking, encoded};
use crate::cli::agent::core::{Agent, ApiError, Launched};
use crate::cli::agent::negotiation::Format;
use crate::cli::wire::twin;

fn unversioned(id: &v1::ContainerId) -> ContainerId {
    twin(id)
}

fn launched(result: Launched) -> Response {
    match result {
        Launched::Now => StatusCode::OK.into_response(),
        Launched::Already => StatusCode::ACCEPTED.into_response(),
    }
}

fn wait_response(kind: call::Type, t: &mesos::slave::ContainerTermination) -> v1::agent::Response {
    let exit_status = t.status;
    let state = t.state;
    let reason = t.reason;
    let message = t.message.clone();
    match kind {
        call::Type::WaitNestedContainer => v1::agent::Response {
            r#type: Some(response::Type::WaitNestedContainer as i32),
            wait_nested_container: Some(response::WaitNestedContainer {
                exit_status,
                state,
                reason,
                message,
                limitation: None,
            }),
            ..Default::default()
        },
        _ => v1::agent::Response {
            r#type: Some(response::Type::WaitContainer as i32),
            wait_container: Some(response::WaitContainer {
                exit_status,
                state,
                reason,
                message,
                limitation: None,
            }),
            ..Default::default()
        },
    }
}

/// The container calls (launch, wait, kill, remove, list); `kind` is one of
/// them (the dispatch routes nothing else here).
pub(super) async fn container_call(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    kind: call::Type,
    call: Call,
    format: Format,
) -> Result<Response, ApiError> {
    match kind {
        call::Type::LaunchNestedContainer | call::Type::LaunchContainer => {
            launch_call(agent, subject, call).await
        }
        call::Type::WaitNestedContainer | call::Type::WaitContainer => {
            wait_call(agent, subject, &call, kind, format).await
        }
        call::Type::KillNestedContainer | call::Type::KillContainer => {
            kill_call(agent, subject, &call).await
        }
        call::Type::RemoveNestedContainer | call::Type::RemoveContainer => {
            remove_call(agent, subject, &call).await
        }
        call::Type::GetContainers => get_containers_call(agent, subject, call, format).await,
        other => Err(ApiError::Internal(format!(
            "{} is not a container call",
            other.as_str_name()
        ))),
    }
}

/// The nested action for a nested container, the standalone one otherwise.
fn nested_or(id: &ContainerId, nested: Action, standalone: Action) -> Action {
    if id.parent.is_some() {
        nested
    } else {
        standalone
    }
}

/// Launches a nested or standalone container once authorized (LAUNCH_CONTAINER,
/// LAUNCH_NESTED_CONTAINER).
async fn launch_call(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    call: Call,
) -> Result<Response, ApiError> {
    let (id, command, container, resources, limits) =
        match (call.launch_nested_container, call.launch_container) {
            (Some(l), _) => (
                unversioned(&l.container_id),
                l.command,
                l.container,
                Vec::new(),
                Default::default(),
            ),
            (_, Some(l)) => (
                unversioned(&l.container_id),
                l.command,
                l.container,
                l.resources,
                l.limits,
            ),
            _ => {
                return Err(ApiError::BadRequest(
                    "Expecting 'launch_container' to be present".into(),
                ));
            }
        };
    let command: Option<mesos::CommandInfo> = command.map(|c| twin(&c));
    let container: Option<mesos::ContainerInfo> = container.map(|c| twin(&c));
    let resources: Vec<mesos::Resource> = resources.iter().map(twin).collect();
    let limits: std::collections::BTreeMap<String, mesos::value::Scalar> = limits
        .iter()
        .map(|(k, v)| (k.clone(), mesos::value::Scalar { value: v.value }))
        .collect();
    let action = nested_or(
        &id,
        Action::LaunchNestedContainer,
        Action::LaunchStandaloneContainer,
    );
    // The agent always passes a command (empty when absent) to the authorizer.
    let for_authz = command.clone().unwrap_or_default();
    agent.require_container(subject, action, &id, Some(&for_authz))?;
    let agent = Arc::clone(agent);
    Ok(launched(
        blocking(move || agent.launch(&id, command, container, resources, limits)).await?,
    ))
}

/// Waits for a container to terminate (WAIT_CONTAINER, WAIT_NESTED_CONTAINER).
async fn wait_call(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    call: &Call,
    kind: call::Type,
    format: Format,
) -> Result<Response, ApiError> {
    let id = match (&call.wait_nested_container, &call.wait_container) {
        (Some(w), _) => unversioned(&w.container_id),
        (_, Some(w)) => unversioned(&w.container_id),
        _ => {
            return Err(ApiError::BadRequest(
                "Expecting 'wait_container' to be present".into(),
            ));
        }
    };
    agent.require_container(
        subject,
        nested_or(
            &id,
            Action::WaitNestedContainer,
            Action::WaitStandaloneContainer,
        ),
        &id,
        None,
    )?;
    let termination = agent.wait(&id).await?;
    Ok(encoded(format, &wait_response(kind, &termination)))
}

/// Signals a container (KILL_CONTAINER, KILL_NESTED_CONTAINER).
async fn kill_call(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    call: &Call,
) -> Result<Response, ApiError> {
    let (id, signal) = match (&call.kill_nested_container, &call.kill_container) {
        (Some(k), _) => (unversioned(&k.container_id), k.signal),
        (_, Some(k)) => (unversioned(&k.container_id), k.signal),
        _ => {
            return Err(ApiError::BadRequest(
                "Expecting 'kill_container' to be present".into(),
            ));
        }
    };
    agent.require_container(
        subject,
        nested_or(
            &id,
            Action::KillNestedContainer,
            Action::KillStandaloneContainer,
        ),
        &id,
        None,
    )?;
    let agent = Arc::clone(agent);
    blocking(move || agent.kill(&id, signal.unwrap_or(libc::SIGKILL))).await?;
    Ok(StatusCode::OK.into_response())
}

/// Removes a terminated container's runtime state (REMOVE_CONTAINER,
/// REMOVE_NESTED_CONTAINER).
async fn remove_call(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    call: &Call,
) -> Result<Response, ApiError> {
    let id = match (&call.remove_nested_container, &call.remove_container) {
        (Some(r), _) => unversioned(&r.container_id),
        (_, Some(r)) => unversioned(&r.container_id),
        _ => {
            return Err(ApiError::BadRequest(
                "Expecting 'remove_container' to be present".into(),
            ));
        }
    };
    agent.require_container(
        subject,
        nested_or(
            &id,
            Action::RemoveNestedContainer,
            Action::RemoveStandaloneContainer,
        ),
        &id,
        None,
    )?;
    // Mesos' containerizer knows a root only while it runs; removing
    // a nested container of any other root fails (containerizer.cpp
    // :3160-3162, a failed future: 500 with its text).
    if id.parent.is_some() && !agent.is_running(nestguard::container_id::root(&id)) {
        return Err(ApiError::Internal("Unknown root container".into()));
    }
    let agent = Arc::clone(agent);
    blocking(move || agent.remove(&id)).await?;
    Ok(StatusCode::OK.into_response())
}

/// The containers `subject` may view, with their status and usage
/// (GET_CONTAINERS).
async fn get_containers_call(
    agent: &Arc<Agent>,
    subject: Option<&Subject>,
    call: Call,
    format: Format,
) -> Result<Response, ApiError> {
    let get = call.get_containers.unwrap_or_default();
    let show_nested = get.show_nested.unwrap_or(false);
    let show_standalone = get.show_standalone.unwrap_or(false);
    let subject = subject.cloned();
    let lister = Arc::clone(agent);
    // Mesos adds the containerizer's status and usage of each
    // listed container (http.cpp:2985-3040).
    let containers = blocking(move || {
        let mut containers = lister.list(subject.as_ref(), show_nested, show_standalone);
        for c in &mut containers {
            let id: ContainerId = twin(&c.container_id);
            c.container_status = lister.container_status(&id).map(|s| twin(&s));
            c.resource_statistics = lister.container_usage(&id).map(|s| twin(&s));
        }
        Ok(containers)
    })
    .await?;
    let response = v1::agent::Response {
        r#type: Some(response::Type::GetContainers as i32),
        get_containers: Some(response::GetContainers { containers }),
        ..Default::default()
    };
    Ok(encoded(format, &response))
}
