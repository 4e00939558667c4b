//! The tasks GET_TASKS and GET_STATE report: a pod's tasks, from the task
//! group the agent checkpointed at launch (in its own meta directory, not
//! the tenant-writable sandbox), each with the latest state its executor
//! reported through the executor API's UPDATE calls (the status update
//! manager, `core/status_updates.rs`); STAGING until one arrives.

use nestguard::proto::mesos::{self, TaskState};

use crate::cli::agent::core::{Agent, ExecutorRecord};
use crate::cli::wire::twin;

/// Mesos' `protobuf::isTerminalState`.
pub(crate) fn is_terminal(state: TaskState) -> bool {
    matches!(
        state,
        TaskState::TaskFinished
            | TaskState::TaskFailed
            | TaskState::TaskKilled
            | TaskState::TaskLost
            | TaskState::TaskError
            | TaskState::TaskDropped
            | TaskState::TaskGone
            | TaskState::TaskGoneByOperator
    )
}

/// The tasks of an executor's pod with their latest states (STAGING until
/// the executor reported one).
pub(crate) fn tasks_of(agent: &Agent, record: &ExecutorRecord) -> Vec<mesos::Task> {
    let root = &record.container_id.value;
    let Some(group) = agent.launched_task_group(root) else {
        return Vec::new();
    };
    let latest = agent.task_states(root);
    let framework_id = record
        .framework
        .id
        .clone()
        .or_else(|| record.executor.framework_id.clone())
        .unwrap_or_default();
    group
        .tasks
        .into_iter()
        .map(|t| {
            let info: mesos::TaskInfo = twin(&t);
            let state = latest
                .get(&info.task_id.value)
                .and_then(|s| TaskState::try_from(*s).ok())
                .unwrap_or(TaskState::TaskStaging);
            mesos::Task {
                name: info.name,
                task_id: info.task_id,
                framework_id: framework_id.clone(),
                executor_id: Some(record.executor.executor_id.clone()),
                slave_id: mesos::SlaveId {
                    value: agent.agent_id().to_owned(),
                },
                state: state as i32,
                resources: info.resources,
                labels: info.labels,
                container: info.container,
                user: info.command.and_then(|c| c.user),
                ..Default::default()
            }
        })
        .collect()
}
