//! Mesos' validation of an agent API call (`validation::agent::call::validate`
//! in `src/slave/validation.cpp`), with Mesos' error texts.
//!
//! Only the simulated agent serves agent API calls, so this lives with it;
//! the message-level rules it applies (command, container, container ID)
//! stay in the library's [`nestguard::validation`].

use crate::cli::wire::twin;
use nestguard::proto::mesos::{self, v1};
use nestguard::validation::{
    ValidationError, validate_command_info, validate_container_id, validate_container_info,
    validate_user,
};

type Result<T = ()> = std::result::Result<T, ValidationError>;

fn err(message: impl Into<String>) -> Result {
    Err(ValidationError(message.into()))
}

fn container_id_field(field: &str, id: &v1::ContainerId) -> Result<mesos::ContainerId> {
    let id: mesos::ContainerId = twin(id);
    validate_container_id(&id)
        .map_err(|e| ValidationError(format!("'{field}.container_id' is invalid: {e}")))?;
    Ok(id)
}

fn require_parent(field: &str, id: &mesos::ContainerId) -> Result {
    if id.parent.is_none() {
        return err(format!(
            "Expecting '{field}.container_id.parent' to be present"
        ));
    }
    Ok(())
}

fn command_and_container(
    field: &str,
    command: Option<&v1::CommandInfo>,
    container: Option<&v1::ContainerInfo>,
) -> Result {
    if let Some(command) = command {
        validate_command_info(&twin(command))
            .map_err(|e| ValidationError(format!("'{field}.command' is invalid: {e}")))?;
        // Stricter than Mesos: before any decision (see `validate_user`).
        if let Some(user) = &command.user {
            validate_user(&format!("{field}.command.user"), user)?;
        }
    }
    if let Some(container) = container {
        validate_container_info(&twin(container))
            .map_err(|e| ValidationError(format!("'{field}.container' is invalid: {e}")))?;
    }
    Ok(())
}

/// Validates an agent API call as `validation::agent::call::validate` does
/// (src/slave/validation.cpp:93-601); the streaming calls' own rules
/// (LAUNCH_NESTED_CONTAINER_SESSION, ATTACH_CONTAINER_INPUT) belong to
/// their handlers. The caller prefixes
/// "Failed to validate agent::Call: " as Mesos does.
pub fn validate_agent_call(call: &v1::agent::Call) -> Result {
    use v1::agent::call::Type;
    let Some(kind) = call.r#type else {
        return err("Expecting 'type' to be present");
    };
    match Type::try_from(kind).unwrap_or(Type::Unknown) {
        Type::LaunchNestedContainer => {
            let Some(launch) = &call.launch_nested_container else {
                return err("Expecting 'launch_nested_container' to be present");
            };
            validate_launch_nested(launch)?;
        }
        Type::LaunchNestedContainerSession => {
            let Some(launch) = &call.launch_nested_container_session else {
                return err("Expecting 'launch_nested_container_session' to be present");
            };
            validate_launch_nested_session(launch)?;
        }
        Type::WaitNestedContainer => {
            let Some(wait) = &call.wait_nested_container else {
                return err("Expecting 'wait_nested_container' to be present");
            };
            nested_container_id("wait_nested_container", &wait.container_id)?;
        }
        Type::KillNestedContainer => {
            let Some(kill) = &call.kill_nested_container else {
                return err("Expecting 'kill_nested_container' to be present");
            };
            nested_container_id("kill_nested_container", &kill.container_id)?;
        }
        Type::RemoveNestedContainer => {
            let Some(remove) = &call.remove_nested_container else {
                return err("Expecting 'remove_nested_container' to be present");
            };
            nested_container_id("remove_nested_container", &remove.container_id)?;
        }
        Type::LaunchContainer => {
            let Some(launch) = &call.launch_container else {
                return err("Expecting 'launch_container' to be present");
            };
            validate_launch_container(launch)?;
        }
        Type::WaitContainer => {
            let Some(wait) = &call.wait_container else {
                return err("Expecting 'wait_container' to be present");
            };
            container_id_field("wait_container", &wait.container_id)?;
        }
        Type::KillContainer => {
            let Some(kill) = &call.kill_container else {
                return err("Expecting 'kill_container' to be present");
            };
            container_id_field("kill_container", &kill.container_id)?;
        }
        Type::RemoveContainer => {
            let Some(remove) = &call.remove_container else {
                return err("Expecting 'remove_container' to be present");
            };
            container_id_field("remove_container", &remove.container_id)?;
        }
        Type::GetMetrics if call.get_metrics.is_none() => {
            return err("Expecting 'get_metrics' to be present");
        }
        Type::SetLoggingLevel if call.set_logging_level.is_none() => {
            return err("Expecting 'set_logging_level' to be present");
        }
        Type::ListFiles if call.list_files.is_none() => {
            return err("Expecting 'list_files' to be present");
        }
        Type::ReadFile if call.read_file.is_none() => {
            return err("Expecting 'read_file' to be present");
        }
        Type::AttachContainerOutput => {
            let Some(attach) = &call.attach_container_output else {
                return err("Expecting 'attach_container_output' to be present");
            };
            container_id_field("attach_container_output", &attach.container_id)?;
        }
        Type::AddResourceProviderConfig => provider_config(
            "add_resource_provider_config",
            call.add_resource_provider_config.as_ref().map(|a| &a.info),
        )?,
        Type::UpdateResourceProviderConfig => provider_config(
            "update_resource_provider_config",
            call.update_resource_provider_config
                .as_ref()
                .map(|u| &u.info),
        )?,
        Type::RemoveResourceProviderConfig if call.remove_resource_provider_config.is_none() => {
            return err("Expecting 'remove_resource_provider_config' to be present");
        }
        Type::MarkResourceProviderGone if call.mark_resource_provider_gone.is_none() => {
            return err("Expecting 'mark_resource_provider_gone' to be present");
        }
        _ => {}
    }
    Ok(())
}

/// ADD_ and UPDATE_RESOURCE_PROVIDER_CONFIG: present, and the provider's
/// ID left for the agent to assign.
fn provider_config(field: &str, info: Option<&v1::ResourceProviderInfo>) -> Result {
    let Some(info) = info else {
        return err(format!("Expecting '{field}' to be present"));
    };
    if info.id.is_some() {
        return err(format!("Expecting '{field}.info.id' to be unset"));
    }
    Ok(())
}

/// The container ID of a call on a nested container: valid, and with a
/// parent.
fn nested_container_id(field: &str, id: &v1::ContainerId) -> Result {
    let id = container_id_field(field, id)?;
    require_parent(field, &id)
}

/// LAUNCH_NESTED_CONTAINER_SESSION's fields: Mesos' rules but
/// `share_cgroups`, whose text the handler gives
/// (src/slave/validation.cpp:305-341).
fn validate_launch_nested_session(
    launch: &v1::agent::call::LaunchNestedContainerSession,
) -> Result {
    let field = "launch_nested_container_session";
    nested_container_id(field, &launch.container_id)?;
    command_and_container(field, launch.command.as_ref(), launch.container.as_ref())
}

/// LAUNCH_NESTED_CONTAINER's fields (src/slave/validation.cpp).
fn validate_launch_nested(launch: &v1::agent::call::LaunchNestedContainer) -> Result {
    let id = container_id_field("launch_nested_container", &launch.container_id)?;
    require_parent("launch_nested_container", &id)?;
    command_and_container(
        "launch_nested_container",
        launch.command.as_ref(),
        launch.container.as_ref(),
    )?;
    let unshared = launch
        .container
        .as_ref()
        .and_then(|c| c.linux_info.as_ref())
        .is_some_and(|l| l.share_cgroups == Some(false));
    if unshared && id.parent.as_ref().is_some_and(|p| p.parent.is_some()) {
        return err(
            "'launch_nested_container' is invalid: containers nested at the second level \
             or greater cannot set 'share_cgroups' to 'false'",
        );
    }
    Ok(())
}

/// LAUNCH_CONTAINER's fields: standalone resources, command and container,
/// and what containers nested at the second level may not set.
fn validate_launch_container(launch: &v1::agent::call::LaunchContainer) -> Result {
    let id = container_id_field("launch_container", &launch.container_id)?;
    if id.parent.is_none() {
        standalone_resources(&launch.resources)?;
    }
    command_and_container(
        "launch_container",
        launch.command.as_ref(),
        launch.container.as_ref(),
    )?;
    let explicit_share = launch
        .container
        .as_ref()
        .and_then(|c| c.linux_info.as_ref())
        .and_then(|l| l.share_cgroups);
    let share_cgroups = explicit_share.unwrap_or(true);
    let twice_nested = id.parent.as_ref().is_some_and(|p| p.parent.is_some());
    if twice_nested && !launch.resources.is_empty() {
        return err(
            "'launch_container' is invalid: containers nested at the second level or \
             greater cannot specify resources",
        );
    }
    if twice_nested && !launch.limits.is_empty() {
        return err(
            "'launch_container' is invalid: containers nested at the second level or \
             greater cannot specify resource limits",
        );
    }
    if twice_nested && !share_cgroups {
        return err(
            "'launch_container' is invalid: containers nested at the second level or \
             greater cannot set 'share_cgroups' to 'false'",
        );
    }
    if id.parent.is_none() && explicit_share == Some(true) {
        return err(
            "'launch_container' is invalid: containers without a parent cannot set \
             'share_cgroups' to 'true'",
        );
    }
    Ok(())
}

/// A standalone container's resources: unreserved, without persistent
/// volumes, non-revocable.
fn standalone_resources(resources: &[v1::Resource]) -> Result {
    for resource in resources {
        if resource.reservation.is_some() || !resource.reservations.is_empty() {
            return err("'launch_container.resources' must be unreserved");
        }
        if resource
            .disk
            .as_ref()
            .is_some_and(|d| d.persistence.is_some())
        {
            return err("'launch_container.resources' may not use persistent volumes");
        }
        if resource.revocable.is_some() {
            return err("'launch_container.resources' must be non-revocable");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(json: &str) -> v1::agent::Call {
        nestguard::json::from_json(json).unwrap()
    }

    #[test]
    fn nested_calls_need_a_parent() {
        let c = call(
            r#"{"type":"WAIT_NESTED_CONTAINER","wait_nested_container":{"container_id":{"value":"x"}}}"#,
        );
        assert_eq!(
            validate_agent_call(&c).unwrap_err().0,
            "Expecting 'wait_nested_container.container_id.parent' to be present"
        );
        let c = call(r#"{"type":"KILL_NESTED_CONTAINER"}"#);
        assert_eq!(
            validate_agent_call(&c).unwrap_err().0,
            "Expecting 'kill_nested_container' to be present"
        );
    }

    #[test]
    fn ids_and_environment() {
        let c = call(
            r#"{"type":"LAUNCH_NESTED_CONTAINER","launch_nested_container":{"container_id":{"value":"a b","parent":{"value":"p"}}}}"#,
        );
        assert_eq!(
            validate_agent_call(&c).unwrap_err().0,
            "'launch_nested_container.container_id' is invalid: 'ContainerID.value' 'a b' contains invalid characters"
        );
        let c = call(
            r#"{"type":"LAUNCH_NESTED_CONTAINER","launch_nested_container":{"container_id":{"value":"c","parent":{"value":"p"}},
                "command":{"environment":{"variables":[{"name":"X","type":"VALUE"}]}}}}"#,
        );
        assert_eq!(
            validate_agent_call(&c).unwrap_err().0,
            "'launch_nested_container.command' is invalid: Environment variable 'X' of type 'VALUE' must have a value set"
        );
        let ok = call(
            r#"{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":{"value":"c","parent":{"value":"p"}},
                "command":{"value":"exit 0"}}}"#,
        );
        assert!(validate_agent_call(&ok).is_ok());
        // User names are checked before any decision, in every launch.
        for kind in [
            "launch_nested_container",
            "launch_container",
            "launch_nested_container_session",
        ] {
            let c = call(&format!(
                r#"{{"type":"{}","{kind}":{{"container_id":{{"value":"c","parent":{{"value":"p"}}}},
                    "command":{{"value":"true","user":"daemon\nforged"}}}}}}"#,
                kind.to_uppercase()
            ));
            let e = validate_agent_call(&c).unwrap_err().0;
            assert!(
                e.starts_with(&format!("'{kind}.command.user' is invalid: ")),
                "{e}"
            );
        }
    }
}
