//! The status update streams' own state: per executor, the updates the
//! framework has not acknowledged, the acknowledged uuids, the executor
//! messages and the tasks' latest states, behind one lock, with the bounds
//! that keep each stream (and its checkpoint) small. Plain state with no
//! knowledge of the agent; the calls on it are `status_updates.rs`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use nestguard::proto::mesos::v1;

use super::records::ApiError;

/// Acknowledged uuids remembered per executor (to answer an executor that
/// re-sends an update the framework already acknowledged).
pub(super) const ACKNOWLEDGED_KEPT: usize = 4096;
/// Executor MESSAGEs kept for the framework per executor.
pub(super) const MESSAGES_KEPT: usize = 1024;
/// The largest checkpoint read back.
pub(super) const CHECKPOINT_MAX: u64 = 16 * 1024 * 1024;
/// Unacknowledged updates kept per executor: an executor that sends more
/// (a framework that never acknowledges, or a flood) is refused, so the
/// checkpoint, rewritten on every change, stays small and readable.
pub(super) const PENDING_MAX: usize = 1024;
/// Tasks whose latest state is remembered per executor.
pub(super) const STATES_MAX: usize = 4096;
/// The largest status update (encoded) an executor may send: updates are
/// kept in memory and checkpointed until acknowledged, and a request body
/// may be far larger.
pub const STATUS_MAX_BYTES: usize = 256 * 1024;
/// All unacknowledged updates of one executor, encoded: well below
/// [`CHECKPOINT_MAX`] once written as JSON (bytes as base64), so a full
/// checkpoint is always read back after a restart.
pub(super) const PENDING_MAX_BYTES: usize = 4 * 1024 * 1024;
/// The largest executor MESSAGE, and all those kept for one executor.
pub const MESSAGE_MAX_BYTES: usize = 256 * 1024;
pub(super) const MESSAGES_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Every executor's update stream, by root container id.
#[derive(Default)]
pub struct StatusUpdates {
    pub(super) inner: Mutex<HashMap<String, UpdateStream>>,
}

#[derive(Default, Clone)]
pub(super) struct UpdateStream {
    /// Sent by the executor, not yet acknowledged by the framework, in order.
    pub(super) pending: Vec<v1::TaskStatus>,
    /// Uuids the framework acknowledged, oldest first.
    pub(super) acknowledged: VecDeque<Vec<u8>>,
    /// Executor messages for the framework (not checkpointed, as in Mesos).
    pub(super) messages: VecDeque<Vec<u8>>,
    /// The latest state each task was reported in (what GET_TASKS shows).
    pub(super) states: std::collections::BTreeMap<String, i32>,
    /// A task was ever delivered to the executor, or the executor reported
    /// on one (Mesos' `Executor::everSentTask`): an executor with this set
    /// is never shut down for having "no task", even when its queue is
    /// empty and the agent restarted since (checkpointed for that reason).
    pub(super) ever_sent: bool,
    /// Tasks queued for the executor, not delivered and with no state: if
    /// the queue's own checkpoint is lost, the framework still hears of
    /// them (TASK_LOST), as it would of a task group.
    pub(super) queued: std::collections::BTreeSet<String>,
}

/// What became of an update the executor sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// New: pending for the framework.
    Pending,
    /// Already pending (a re-sent update): nothing changes.
    Duplicate,
    /// The framework already acknowledged it: ACKNOWLEDGED goes back.
    AlreadyAcknowledged,
}

impl StatusUpdates {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, UpdateStream>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub(super) fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

pub(super) fn submit(
    stream: &mut UpdateStream,
    status: v1::TaskStatus,
) -> (Result<Submitted, ApiError>, bool) {
    let uuid = status.uuid.clone().unwrap_or_default();
    if stream.acknowledged.contains(&uuid) {
        return (Ok(Submitted::AlreadyAcknowledged), false);
    }
    if stream
        .pending
        .iter()
        .any(|s| s.uuid.as_deref() == Some(&uuid[..]))
    {
        return (Ok(Submitted::Duplicate), false);
    }
    let size = prost::Message::encoded_len(&status);
    if size > STATUS_MAX_BYTES {
        return (
            Err(ApiError::BadRequest(format!(
                "Status update of {size} bytes is over the limit of {STATUS_MAX_BYTES}"
            ))),
            false,
        );
    }
    let pending_bytes: usize = stream.pending.iter().map(prost::Message::encoded_len).sum();
    if stream.pending.len() >= PENDING_MAX || pending_bytes + size > PENDING_MAX_BYTES {
        return (
            Err(ApiError::BadRequest(format!(
                "Too many unacknowledged status updates (at most {PENDING_MAX}, {PENDING_MAX_BYTES} bytes)"
            ))),
            false,
        );
    }
    let task = status.task_id.value.clone();
    stream.queued.remove(&task);
    if stream.states.len() < STATES_MAX || stream.states.contains_key(&task) {
        stream.states.insert(task, status.state);
    }
    // The executor reporting on a task had it (the agent's own updates,
    // TASK_KILLED before delivery or TASK_LOST, do not tell).
    if status.source != Some(v1::task_status::Source::Agent as i32) {
        stream.ever_sent = true;
    }
    stream.pending.push(status);
    (Ok(Submitted::Pending), true)
}
