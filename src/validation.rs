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

/// The longest user name accepted, in bytes: utmp's `UT_NAMESIZE`, the
/// longest name `useradd` creates.
pub const MAX_USER_NAME_LENGTH: usize = 32;

/// A user name (`CommandInfo.user`, `FrameworkInfo.user`) as Linux'
/// `useradd` (shadow-utils' `is_valid_user_name`) accepts one: 1 to
/// [`MAX_USER_NAME_LENGTH`] bytes of `[A-Za-z0-9_.-]` with an optional
/// final `$`, not starting with `-`, not `.` or `..`, not all digits (a
/// name that reads as a UID). The text is "'<field>' is invalid: ..." and
/// never quotes the name (it may be huge or hold control characters).
///
/// Stricter than Mesos, which checks no user name before authorization
/// and fails the launch later when the user does not exist: a user name
/// is checked before any decision, so that a decision log, an audit record
/// or a path never holds one no account could have.
pub fn validate_user(field: &str, user: &str) -> Result {
    if user.is_empty() || user.len() > MAX_USER_NAME_LENGTH {
        return err(format!(
            "'{field}' is invalid: a user name must be 1 to {MAX_USER_NAME_LENGTH} bytes long, \
             not {}",
            user.len()
        ));
    }
    let body = user.strip_suffix('$').unwrap_or(user);
    let characters = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !characters
        || user.starts_with('-')
        || user == "."
        || user == ".."
        || user.bytes().all(|b| b.is_ascii_digit())
    {
        return err(format!(
            "'{field}' is invalid: a user name holds only letters, digits, '_', '.', '-' and a \
             final '$', does not start with '-', and is not '.', '..' or all digits"
        ));
    }
    Ok(())
}

/// The user of a command, when it names one.
fn command_user(field: &str, command: Option<&CommandInfo>) -> Result {
    match command.and_then(|c| c.user.as_deref()) {
        Some(user) => validate_user(&format!("{field}.command.user"), user),
        None => Ok(()),
    }
}

/// Validates a task's IDs that become paths or name it (`task_id`, its
/// `slave_id` when set, its executor's ID) and the user names it carries
/// (its command's, its executor's), before anything trusts them; `field`
/// names the task in the text ("'<field>.task_id' is invalid: ...").
pub fn validate_task(field: &str, task: &mesos::TaskInfo) -> Result {
    let check = |name: &str, value: &str| {
        validate_path_id(value)
            .map_err(|e| ValidationError(format!("'{field}.{name}' is invalid: {e}")))
    };
    check("task_id", &task.task_id.value)?;
    if !task.slave_id.value.is_empty() {
        check("slave_id", &task.slave_id.value)?;
    }
    command_user(field, task.command.as_ref())?;
    if let Some(executor) = &task.executor {
        check("executor.executor_id", &executor.executor_id.value)?;
        command_user(&format!("{field}.executor"), executor.command.as_ref())?;
    }
    Ok(())
}

/// Validates every ID of a pod that becomes a path or names a task
/// (`framework.id`, `executor.executor_id`, `executor.framework_id`, and
/// each task's as [`validate_task`]) and every user name it carries
/// (`framework.user` when set, the executor's and the tasks' command
/// users, see [`validate_user`]), before anything touches the filesystem
/// or asks the authorizer. The text is "'<field>' is invalid: <Mesos'
/// text>".
pub fn validate_pod_ids(pod: &PodSpec) -> Result {
    let check = |field: &str, value: &str| {
        validate_path_id(value).map_err(|e| ValidationError(format!("'{field}' is invalid: {e}")))
    };
    if let Some(id) = &pod.framework.id {
        check("framework.id", &id.value)?;
    }
    // Empty: the agent's own user.
    if !pod.framework.user.is_empty() {
        validate_user("framework.user", &pod.framework.user)?;
    }
    check("executor.executor_id", &pod.executor.executor_id.value)?;
    if let Some(id) = &pod.executor.framework_id {
        check("executor.framework_id", &id.value)?;
    }
    command_user("executor", pod.executor.command.as_ref())?;
    for (i, task) in pod.tasks.iter().enumerate() {
        validate_task(&format!("tasks[{i}].task"), &task.task)?;
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
        pod.executor.executor_id.value = "ex".into();
        pod.tasks[0].task.task_id.value = "t".into();
        pod.tasks[0].task.command = Some(CommandInfo {
            user: Some("root\nx".into()),
            ..Default::default()
        });
        assert!(
            validate_pod_ids(&pod)
                .unwrap_err()
                .0
                .starts_with("'tasks[0].task.command.user' is invalid: ")
        );
        pod.tasks[0].task.command = None;
        pod.framework.user = "a b".into();
        assert!(
            validate_pod_ids(&pod)
                .unwrap_err()
                .0
                .starts_with("'framework.user' is invalid: ")
        );
    }

    #[test]
    fn user_names() {
        for ok in ["alice", "daemon", "a.b-c_d", "host$", "_apt", "u1", "X"] {
            assert!(validate_user("u", ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(MAX_USER_NAME_LENGTH + 1);
        let huge = "u".repeat(15 << 20);
        for bad in [
            "",
            &long,
            &huge,
            "daemon\nroot",
            "a b",
            "-a",
            ".",
            "..",
            "123",
            "a$b",
            "$",
            "é",
            "a\u{1b}[2J",
            "a/b",
            "a:b",
        ] {
            let e = validate_user("launch.command.user", bad).unwrap_err().0;
            assert!(e.starts_with("'launch.command.user' is invalid: "), "{e}");
            assert!(e.len() < 300, "the text never quotes the name: {e}");
        }
        assert_eq!(
            validate_user("f", "").unwrap_err().0,
            "'f' is invalid: a user name must be 1 to 32 bytes long, not 0"
        );
        assert!(validate_user("f", &"a".repeat(MAX_USER_NAME_LENGTH)).is_ok());
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
