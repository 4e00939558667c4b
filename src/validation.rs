//! Mesos' validation of the messages a container call carries, with Mesos'
//! error texts (`src/common/validation.cpp`, `src/slave/validation.cpp`).
//!
//! The agent runs these before authorization, exactly as a Mesos agent does,
//! so a client sees the same 400 message from nestguard as from Mesos.

use crate::container_id::{self, ContainerIdError};
use crate::proto::mesos::environment::variable::Type as VariableType;
use crate::proto::mesos::secret::Type as SecretType;
use crate::proto::mesos::v1;
use crate::proto::mesos::volume::source::Type as SourceType;
use crate::proto::mesos::{self, CommandInfo, ContainerInfo, Environment, Secret, Volume};
use crate::proto::nestguard::PodSpec;

/// A validation failure; the text is the whole message Mesos would send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValidationError(pub String);

type Result<T = ()> = std::result::Result<T, ValidationError>;

fn err(message: impl Into<String>) -> Result {
    Err(ValidationError(message.into()))
}

/// `validateSecret`.
pub fn validate_secret(secret: &Secret) -> Result {
    match secret.r#type() {
        SecretType::Reference => {
            let Some(reference) = &secret.reference else {
                return err("Secret of type REFERENCE must have the 'reference' field set");
            };
            if secret.value.is_some() {
                return err(format!(
                    "Secret '{}' of type REFERENCE must not have the 'value' field set",
                    reference.name
                ));
            }
        }
        SecretType::Value => {
            if secret.value.is_none() {
                return err("Secret of type VALUE must have the 'value' field set");
            }
            if secret.reference.is_some() {
                return err("Secret of type VALUE must not have the 'reference' field set");
            }
        }
        SecretType::Unknown => {}
    }
    Ok(())
}

/// `validateEnvironment`.
pub fn validate_environment(environment: &Environment) -> Result {
    for variable in &environment.variables {
        let name = &variable.name;
        match variable.r#type() {
            VariableType::Secret => {
                let Some(secret) = &variable.secret else {
                    return err(format!(
                        "Environment variable '{name}' of type 'SECRET' must have a secret set"
                    ));
                };
                if variable.value.is_some() {
                    return err(format!(
                        "Environment variable '{name}' of type 'SECRET' must not have a value set"
                    ));
                }
                if let Err(e) = validate_secret(secret) {
                    return err(format!(
                        "Environment variable '{name}' specifies an invalid secret: {e}"
                    ));
                }
                if secret.value.as_ref().is_some_and(|v| v.data.contains(&0)) {
                    return err(format!(
                        "Environment variable '{name}' specifies a secret containing null bytes, \
                         which is not allowed in the environment"
                    ));
                }
            }
            VariableType::Value => {
                if variable.value.is_none() {
                    return err(format!(
                        "Environment variable '{name}' of type 'VALUE' must have a value set"
                    ));
                }
                if variable.secret.is_some() {
                    return err(format!(
                        "Environment variable '{name}' of type 'VALUE' must not have a secret set"
                    ));
                }
            }
            VariableType::Unknown => {
                return err("Environment variable of type 'UNKNOWN' is not allowed");
            }
        }
    }
    Ok(())
}

/// `validateCommandInfo`.
pub fn validate_command_info(command: &CommandInfo) -> Result {
    command
        .environment
        .as_ref()
        .map_or(Ok(()), validate_environment)
}

/// `validateVolume`.
pub fn validate_volume(volume: &Volume) -> Result {
    let count = [
        volume.host_path.is_some(),
        volume.image.is_some(),
        volume.source.is_some(),
    ]
    .iter()
    .filter(|set| **set)
    .count();
    if count != 1 {
        return err("Only one of them should be set: 'host_path', 'image' and 'source'");
    }
    if let Some(source) = &volume.source {
        let missing = match source.r#type() {
            SourceType::DockerVolume => source
                .docker_volume
                .is_none()
                .then_some("'source.docker_volume' is not set for DOCKER_VOLUME volume"),
            SourceType::HostPath => source
                .host_path
                .is_none()
                .then_some("'source.host_path' is not set for HOST_PATH volume"),
            SourceType::SandboxPath => source
                .sandbox_path
                .is_none()
                .then_some("'source.sandbox_path' is not set for SANDBOX_PATH volume"),
            SourceType::Secret => source
                .secret
                .is_none()
                .then_some("'source.secret' is not set for SECRET volume"),
            // CSI volumes are not declared in our protos: one can never be complete.
            SourceType::CsiVolume => Some("'source.csi_volume' is not set for CSI volume"),
            SourceType::Unknown => Some("'source.type' is unknown"),
        };
        if let Some(message) = missing {
            return err(message);
        }
    }
    Ok(())
}

/// `validateContainerInfo`.
pub fn validate_container_info(container: &ContainerInfo) -> Result {
    for volume in &container.volumes {
        if let Err(e) = validate_volume(volume) {
            return err(format!("Invalid volume: {e}"));
        }
    }
    if container.r#type() == mesos::container_info::Type::Docker && container.docker.is_none() {
        return err("DockerInfo 'docker' is not set for DOCKER typed ContainerInfo");
    }
    Ok(())
}

/// Mesos' `validateID` for an ID that becomes a directory name (framework,
/// executor, task and agent IDs), with Mesos' texts ("ID must not be
/// empty", "'<id>' contains invalid characters", ...).
///
/// Stricter than Mesos: whitespace (the space, and any Unicode whitespace)
/// and Unicode control characters are refused too ("'<id>' contains invalid
/// characters"); Mesos refuses only ASCII control characters, `/` and `\`.
pub fn validate_path_id(value: &str) -> std::result::Result<(), ContainerIdError> {
    container_id::validate_generic_id(value)?;
    if container_id::has_unicode_blank(value) {
        return Err(ContainerIdError::InvalidIdCharacters(value.to_owned()));
    }
    Ok(())
}

/// Validates every ID of a pod that becomes a path or names a task
/// (`framework.id`, `executor.executor_id`, `executor.framework_id`, each
/// task's `task_id`, and its `slave_id` and `executor.executor_id` when
/// set), before anything touches the filesystem. The text is
/// "'<field>' is invalid: <Mesos' text>".
pub fn validate_pod_ids(pod: &PodSpec) -> Result {
    let check = |field: &str, value: &str| {
        validate_path_id(value).map_err(|e| ValidationError(format!("'{field}' is invalid: {e}")))
    };
    if let Some(id) = &pod.framework.id {
        check("framework.id", &id.value)?;
    }
    check("executor.executor_id", &pod.executor.executor_id.value)?;
    if let Some(id) = &pod.executor.framework_id {
        check("executor.framework_id", &id.value)?;
    }
    for (i, task) in pod.tasks.iter().enumerate() {
        let task = &task.task;
        check(&format!("tasks[{i}].task.task_id"), &task.task_id.value)?;
        if !task.slave_id.value.is_empty() {
            check(&format!("tasks[{i}].task.slave_id"), &task.slave_id.value)?;
        }
        if let Some(executor) = &task.executor {
            check(
                &format!("tasks[{i}].task.executor.executor_id"),
                &executor.executor_id.value,
            )?;
        }
    }
    Ok(())
}

/// The agent's `validateContainerId` (common ID rules, length, `.`/space, parents).
pub fn validate_container_id(id: &mesos::ContainerId) -> std::result::Result<(), ContainerIdError> {
    container_id::validate(id)
}

fn to_unversioned<A: prost::Message, B: prost::Message + Default>(message: &A) -> B {
    // The v1 and unversioned packages are wire-identical, so this cannot fail;
    // a default value would only hide a bug in our own protos.
    crate::proto::convert(message).unwrap_or_default()
}

fn container_id_field(field: &str, id: &v1::ContainerId) -> Result<mesos::ContainerId> {
    let id: mesos::ContainerId = to_unversioned(id);
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
        validate_command_info(&to_unversioned(command))
            .map_err(|e| ValidationError(format!("'{field}.command' is invalid: {e}")))?;
    }
    if let Some(container) = container {
        validate_container_info(&to_unversioned(container))
            .map_err(|e| ValidationError(format!("'{field}.container' is invalid: {e}")))?;
    }
    Ok(())
}

/// Validates an agent API call as `validation::agent::call::validate` does,
/// for the calls nestguard serves. The caller prefixes
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
        }
        Type::WaitNestedContainer => {
            let Some(wait) = &call.wait_nested_container else {
                return err("Expecting 'wait_nested_container' to be present");
            };
            let id = container_id_field("wait_nested_container", &wait.container_id)?;
            require_parent("wait_nested_container", &id)?;
        }
        Type::KillNestedContainer => {
            let Some(kill) = &call.kill_nested_container else {
                return err("Expecting 'kill_nested_container' to be present");
            };
            let id = container_id_field("kill_nested_container", &kill.container_id)?;
            require_parent("kill_nested_container", &id)?;
        }
        Type::RemoveNestedContainer => {
            let Some(remove) = &call.remove_nested_container else {
                return err("Expecting 'remove_nested_container' to be present");
            };
            let id = container_id_field("remove_nested_container", &remove.container_id)?;
            require_parent("remove_nested_container", &id)?;
        }
        Type::LaunchContainer => {
            let Some(launch) = &call.launch_container else {
                return err("Expecting 'launch_container' to be present");
            };
            let id = container_id_field("launch_container", &launch.container_id)?;
            if id.parent.is_none() {
                for resource in &launch.resources {
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
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(json: &str) -> v1::agent::Call {
        crate::json::from_json(json).unwrap()
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
    }

    #[test]
    fn pod_ids() {
        let mut pod: PodSpec = crate::json::from_json(
            r#"{"framework":{"user":"u","name":"f","id":{"value":"fw"}},
                "executor":{"executor_id":{"value":"ex"}},
                "tasks":[{"task":{"name":"t","task_id":{"value":"t.1"},"slave_id":{"value":""}}}]}"#,
        )
        .unwrap();
        assert!(validate_pod_ids(&pod).is_ok());
        pod.tasks[0].task.task_id.value = "../t".into();
        assert_eq!(
            validate_pod_ids(&pod).unwrap_err().0,
            "'tasks[0].task.task_id' is invalid: '../t' contains invalid characters"
        );
        pod.executor.executor_id.value = "a b".into();
        assert_eq!(
            validate_pod_ids(&pod).unwrap_err().0,
            "'executor.executor_id' is invalid: 'a b' contains invalid characters"
        );
        assert_eq!(
            validate_path_id("..").unwrap_err().to_string(),
            "'..' is disallowed"
        );
    }

    #[test]
    fn volumes() {
        let v = Volume {
            container_path: "/x".into(),
            mode: 1,
            ..Default::default()
        };
        assert_eq!(
            validate_volume(&v).unwrap_err().0,
            "Only one of them should be set: 'host_path', 'image' and 'source'"
        );
    }
}
