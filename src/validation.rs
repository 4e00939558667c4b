//! Mesos' validation of the messages a container call carries, with Mesos'
//! error texts (`src/common/validation.cpp`, `src/slave/validation.cpp`).
//!
//! The agent runs these before authorization, exactly as a Mesos agent does,
//! so a client sees the same 400 message from nestguard as from Mesos.

#![forbid(unsafe_code)]

use crate::container_id::{self, ContainerIdError};
use crate::proto::mesos::environment::variable::Type as VariableType;
use crate::proto::mesos::secret::Type as SecretType;
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

#[cfg(test)]
mod tests {
    use super::*;

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
