//! Admission of a pod (`POST /nestguard/v1/pods`): what a Mesos master does
//! to a LAUNCH_GROUP before an agent sees it. The task group is validated
//! with the master's rules and texts (`master/validation.cpp`,
//! `task::group::validate` and the `ExecutorInfo` checks it calls), the
//! authenticated principal is matched against `FrameworkInfo.principal`,
//! and the objects to authorize (RUN_TASK per task, and the executor) are
//! built as the master builds them (`ActionObject::taskLaunch`).
//!
//! The simulated agent has no offers, so the master's resource checks
//! (minimum executor cpus/mem/disk, offered resources, persistence ids) are
//! not made; everything that decides *who runs what as whom* is.

use std::collections::BTreeSet;

use nestguard::proto::mesos::authorization::{Object, Subject};
use nestguard::proto::mesos::{
    ContainerInfo, ExecutorInfo, TaskInfo, container_info, executor_info,
};
use nestguard::proto::nestguard::PodSpec;

use super::core::ApiError;

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadRequest(message.into())
}

/// The subject the launch is authorized for, after checking who asks.
///
/// * A token-only subject (executor JWT claims, no principal) never launches
///   a pod: an executor may act on its own containers, not start new
///   executors (403).
/// * An authenticated principal must be `FrameworkInfo.principal` when that
///   is set (403 otherwise); when it is not set it becomes the principal, as
///   Mesos' master sets it for a framework that authenticated without one.
/// * Without HTTP authentication the framework's principal is taken as
///   given (nothing can verify it), as Mesos does.
pub fn subject(pod: &mut PodSpec, subject: Option<&Subject>) -> Result<Option<Subject>, ApiError> {
    let framework = &mut pod.framework;
    match subject {
        Some(s) => {
            let Some(principal) = s.value.as_deref() else {
                return Err(ApiError::Forbidden(
                    "an executor token cannot launch pods".into(),
                ));
            };
            match framework.principal.as_deref() {
                Some(p) if !p.is_empty() && p != principal => {
                    return Err(ApiError::Forbidden(format!(
                        "Framework principal '{p}' does not match authenticated principal '{principal}'"
                    )));
                }
                _ => framework.principal = Some(principal.to_owned()),
            }
            Ok(Some(Subject {
                value: Some(principal.to_owned()),
                claims: None,
            }))
        }
        None => Ok(framework
            .principal
            .clone()
            .filter(|p| !p.is_empty())
            .map(|p| Subject {
                value: Some(p),
                claims: None,
            })),
    }
}

fn is_docker(container: Option<&ContainerInfo>) -> bool {
    container.is_some_and(|c| c.r#type() == container_info::Type::Docker)
}

/// Validates the task group, filling in what the master fills in
/// (`ExecutorInfo.framework_id`, each task's `executor`). Errors are 400s
/// with the master's texts (the empty group's text is nestguard's: the
/// master relies on its scheduler API to never send one).
pub fn validate(pod: &mut PodSpec) -> Result<(), ApiError> {
    if pod.tasks.is_empty() {
        return Err(bad("Task group must not be empty"));
    }
    let framework_id = pod
        .framework
        .id
        .clone()
        .filter(|id| !id.value.is_empty())
        .ok_or_else(|| bad("'FrameworkInfo.id' must be set"))?;
    let executor = &mut pod.executor;
    if executor.framework_id.is_none() {
        executor.framework_id = Some(framework_id.clone());
    }
    validate_executor(executor, &framework_id.value)?;
    let executor = pod.executor.clone();

    let mut seen = BTreeSet::new();
    for pod_task in &mut pod.tasks {
        let task = &mut pod_task.task;
        let id = task.task_id.value.clone();
        let invalid = |why: &str| bad(format!("Task '{id}' is invalid: {why}"));
        if !seen.insert(id.clone()) {
            return Err(invalid(&format!("Task has duplicate ID: {id}")));
        }
        if task
            .kill_policy
            .as_ref()
            .and_then(|k| k.grace_period.as_ref())
            .is_some_and(|d| d.nanoseconds < 0)
        {
            return Err(invalid(
                "Task's 'kill_policy.grace_period' must be non-negative",
            ));
        }
        if is_docker(task.container.as_ref()) {
            return Err(invalid("Docker ContainerInfo is not supported on the task"));
        }
        if let Some(own) = &mut task.executor
            && own.framework_id.is_none()
        {
            own.framework_id = Some(framework_id.clone());
        }
        match &task.executor {
            None => task.executor = Some(executor.clone()),
            Some(own) if *own != executor => {
                return Err(bad(format!(
                    "The `ExecutorInfo` of task '{id}' is different from executor '{}'",
                    executor.executor_id.value
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn validate_executor(executor: &ExecutorInfo, framework_id: &str) -> Result<(), ApiError> {
    let actual = executor
        .framework_id
        .as_ref()
        .map(|f| f.value.as_str())
        .unwrap_or_default();
    if actual != framework_id {
        return Err(bad(format!(
            "ExecutorInfo has an invalid FrameworkID (Actual: {actual} vs Expected: {framework_id})"
        )));
    }
    if executor
        .shutdown_grace_period
        .as_ref()
        .is_some_and(|d| d.nanoseconds < 0)
    {
        return Err(bad(
            "ExecutorInfo's 'shutdown_grace_period' must be non-negative",
        ));
    }
    if executor.r#type.is_none() {
        return Err(bad("'ExecutorInfo.type' must be set"));
    }
    match executor.r#type() {
        executor_info::Type::Unknown => return Err(bad("Unknown executor type")),
        executor_info::Type::Default => {
            if executor.command.is_some() {
                return Err(bad(
                    "'ExecutorInfo.command' must not be set for 'DEFAULT' executor",
                ));
            }
            if let Some(c) = &executor.container {
                if c.r#type() != container_info::Type::Mesos {
                    return Err(bad(
                        "'ExecutorInfo.container.type' must be 'MESOS' for 'DEFAULT' executor",
                    ));
                }
                if c.mesos.as_ref().is_some_and(|m| m.image.is_some()) {
                    return Err(bad(
                        "'ExecutorInfo.container.mesos.image' must not be set for 'DEFAULT' executor",
                    ));
                }
            }
        }
        executor_info::Type::Custom => {
            if executor.command.is_none() {
                return Err(bad(
                    "'ExecutorInfo.command' must be set for 'CUSTOM' executor",
                ));
            }
        }
    }
    if is_docker(executor.container.as_ref()) {
        return Err(bad("Docker ContainerInfo is not supported on the executor"));
    }
    Ok(())
}

/// The RUN_TASK objects of a validated pod: one per task (the master's
/// `ActionObject::taskLaunch(task, framework)`, the task carrying its
/// executor), then one for the executor itself: a task with no command of
/// its own, so the authorizer checks the user the executor runs as
/// (`ExecutorInfo.command.user`, else `FrameworkInfo.user`). Stricter than
/// Mesos, which authorizes tasks only: the executor runs a process too.
pub fn run_task_objects(pod: &PodSpec) -> Vec<Object> {
    let object = |task: TaskInfo| Object {
        framework_info: Some(pod.framework.clone()),
        task_info: Some(task),
        ..Default::default()
    };
    let mut objects: Vec<Object> = pod.tasks.iter().map(|t| object(t.task.clone())).collect();
    objects.push(object(TaskInfo {
        name: pod.executor.name.clone().unwrap_or_default(),
        task_id: nestguard::proto::mesos::TaskId {
            value: pod.executor.executor_id.value.clone(),
        },
        executor: Some(pod.executor.clone()),
        ..Default::default()
    }));
    objects
}

/// The user the executor's container runs as: `ExecutorInfo.command.user`,
/// else `FrameworkInfo.user` (Mesos' agent rule); `None` for "the agent's".
pub fn executor_user(pod: &PodSpec) -> Option<String> {
    pod.executor
        .command
        .as_ref()
        .and_then(|c| c.user.clone())
        .or_else(|| Some(pod.framework.user.clone()))
        .filter(|u| !u.is_empty())
}
