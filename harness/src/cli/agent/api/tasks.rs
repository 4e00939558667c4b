//! The tasks GET_TASKS and GET_STATE report: a pod's tasks (from its spec,
//! which the agent itself wrote into the sandbox as `pod.json`) with the
//! latest state the default executor printed on its `stdout`.
//!
//! This is the stand-in until the executor API's status updates reach the
//! agent (issue #14 item 1); then the status update manager is the source
//! and only [`tasks_of`] changes. Both files lie in a sandbox the tenant can
//! write, so each is opened without following a link nor waiting on a
//! FIFO, must be a regular file, and is read up to a cap,
//! and a state is taken only if it names a `TaskState`.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nestguard::proto::mesos::{self, TaskState};
use nestguard::proto::nestguard::PodSpec;

use crate::cli::agent::core::ExecutorRecord;

/// At most this much of each file is read (the end of `stdout`).
const MAX_READ: u64 = 1 << 20;

fn read_tail(path: &Path) -> Option<String> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let start = meta.len().saturating_sub(MAX_READ);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_READ).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

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
pub(crate) fn tasks_of(agent_id: &str, record: &ExecutorRecord) -> Vec<mesos::Task> {
    let Some(spec) = read_tail(&record.sandbox.join("pod.json")) else {
        return Vec::new();
    };
    let Ok(pod) = nestguard::json::from_json::<PodSpec>(&spec) else {
        return Vec::new();
    };
    let mut latest = std::collections::HashMap::new();
    for line in read_tail(&record.sandbox.join("stdout"))
        .unwrap_or_default()
        .lines()
    {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(task), Some(state)) = (
            v["task_id"].as_str(),
            v["state"].as_str().and_then(TaskState::from_str_name),
        ) {
            latest.insert(task.to_owned(), state);
        }
    }
    let framework_id = record
        .framework
        .id
        .clone()
        .or_else(|| record.executor.framework_id.clone())
        .unwrap_or_default();
    pod.tasks
        .into_iter()
        .map(|t| {
            let info = t.task;
            let state = latest
                .get(&info.task_id.value)
                .copied()
                .unwrap_or(TaskState::TaskStaging);
            mesos::Task {
                name: info.name,
                task_id: info.task_id,
                framework_id: framework_id.clone(),
                executor_id: Some(record.executor.executor_id.clone()),
                slave_id: mesos::SlaveId {
                    value: agent_id.to_owned(),
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
