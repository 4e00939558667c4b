//! The status update manager (Mesos' `TaskStatusUpdateManager`): the task
//! status updates an executor sent until the framework acknowledges them,
//! checkpointed per executor so that a restarted agent still has them, and
//! the ACKNOWLEDGED events that go back to the executor.
//!
//! The framework's side is played by the pod client (the stand-in for the
//! master, see [`super::pods`]): it reads the pending updates and
//! acknowledges them by uuid. Mesos forwards one update per task at a time
//! and retries; the stand-in shows every pending update at once, which is
//! what a polling client needs.
//!
//! The checkpoint is `meta/executors/<root>/updates`: JSON (Mesos' JSON of
//! each `TaskStatus`, the acknowledged uuids in base64), rewritten
//! atomically on every change. It is read lazily, the first time an
//! executor's updates are needed after a start, so recovery needs no step
//! of its own.

use base64::Engine;
use nestguard::proto::mesos::v1;

use super::records::ApiError;
use super::registry::Agent;
use super::update_streams::{
    ACKNOWLEDGED_KEPT, CHECKPOINT_MAX, MESSAGE_MAX_BYTES, MESSAGES_KEPT, MESSAGES_MAX_BYTES,
    STATES_MAX, Submitted, UpdateStream, b64, submit,
};

impl Agent {
    fn updates_path(&self, root: &str) -> std::path::PathBuf {
        self.layout.executor_meta(root).join("updates")
    }

    /// Runs `f` on the update stream of `root`, read from its checkpoint the
    /// first time; `f` returns whether it changed the stream, which is then
    /// checkpointed before anything else sees it.
    fn with_updates<T>(
        &self,
        root: &str,
        f: impl FnOnce(&mut UpdateStream) -> (T, bool),
    ) -> Result<T, ApiError> {
        let mut all = self.status_updates.lock();
        if !all.contains_key(root) {
            let loaded = self.read_updates(root)?;
            all.insert(root.to_owned(), loaded);
        }
        let Some(stream) = all.get_mut(root) else {
            return Err(ApiError::Internal("update stream vanished".into()));
        };
        // Memory and disk never disagree: a change whose checkpoint fails
        // is undone.
        let before = stream.clone();
        let (value, changed) = f(stream);
        if changed && let Err(e) = self.write_updates(root, stream) {
            *stream = before;
            return Err(e);
        }
        Ok(value)
    }

    /// Reads the update stream of `root` (as [`Agent::with_updates`],
    /// without a change, so without a copy to undo one).
    fn view_updates<T>(
        &self,
        root: &str,
        f: impl FnOnce(&UpdateStream) -> T,
    ) -> Result<T, ApiError> {
        self.unsaved_updates(root, |stream| f(stream))
    }

    /// Runs `f` on the update stream of `root` for what is not
    /// checkpointed (executor messages): no checkpoint, no copy.
    fn unsaved_updates<T>(
        &self,
        root: &str,
        f: impl FnOnce(&mut UpdateStream) -> T,
    ) -> Result<T, ApiError> {
        let mut all = self.status_updates.lock();
        if !all.contains_key(root) {
            let loaded = self.read_updates(root)?;
            all.insert(root.to_owned(), loaded);
        }
        all.get_mut(root)
            .map(f)
            .ok_or_else(|| ApiError::Internal("update stream vanished".into()))
    }

    fn read_updates(&self, root: &str) -> Result<UpdateStream, ApiError> {
        let path = self.updates_path(root);
        let bytes = match nestguard::checkpoint::read_bounded(&path, CHECKPOINT_MAX) {
            Ok(bytes) => bytes,
            Err(_) if !path.exists() => return Ok(UpdateStream::default()),
            Err(e) => return Err(ApiError::Internal(format!("{e}"))),
        };
        let broken = |what: String| {
            ApiError::Internal(format!(
                "Failed to recover status updates from '{}': {what}",
                path.display()
            ))
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| broken(e.to_string()))?;
        let mut stream = UpdateStream::default();
        for (i, status) in value["pending"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let status: v1::TaskStatus =
                nestguard::json::from_json(&with_v1_names(status).to_string())
                    .map_err(|e| broken(format!("pending[{i}]: {e}")))?;
            stream.pending.push(status);
        }
        for (i, uuid) in value["acknowledged"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let uuid = uuid
                .as_str()
                .and_then(|u| b64().decode(u).ok())
                .ok_or_else(|| broken(format!("acknowledged[{i}]: expected base64")))?;
            stream.acknowledged.push_back(uuid);
        }
        if let Some(states) = value["states"].as_object() {
            for (task, state) in states.iter().take(STATES_MAX) {
                let state = state
                    .as_str()
                    .and_then(v1::TaskState::from_str_name)
                    .ok_or_else(|| broken(format!("states.{task}: expected a TaskState name")))?;
                stream.states.insert(task.clone(), state as i32);
            }
        }
        for (i, id) in value["queued"].as_array().into_iter().flatten().enumerate() {
            let id = id
                .as_str()
                .ok_or_else(|| broken(format!("queued[{i}]: expected a task ID")))?;
            stream.queued.insert(id.to_owned());
        }
        // A checkpoint written before the field: any task with a state
        // may have been sent (never shut down a running executor).
        stream.ever_sent = value["ever_sent"]
            .as_bool()
            .unwrap_or(!stream.states.is_empty());
        tracing::info!(container_id = %root, pending = stream.pending.len(),
            "recovered checkpointed status updates");
        Ok(stream)
    }

    fn write_updates(&self, root: &str, stream: &UpdateStream) -> Result<(), ApiError> {
        let dir = self.layout.executor_meta(root);
        if !dir.is_dir() {
            // The executor is gone (killed): nothing to keep.
            return Ok(());
        }
        let body = serde_json::json!({
            "pending": stream.pending.iter().map(nestguard::json::to_json_value).collect::<Vec<_>>(),
            "acknowledged": stream.acknowledged.iter().map(|u| b64().encode(u)).collect::<Vec<_>>(),
            "states": stream.states.iter().map(|(task, state)| {
                let name = v1::TaskState::try_from(*state).map_or("TASK_UNKNOWN", |s| s.as_str_name());
                (task.clone(), serde_json::Value::from(name))
            }).collect::<serde_json::Map<_, _>>(),
            "ever_sent": stream.ever_sent,
            "queued": stream.queued,
        });
        let path = self.updates_path(root);
        nestguard::checkpoint::write_text(
            &path,
            &body.to_string(),
            nestguard::checkpoint::Outlives::HostCrash,
        )
        .map_err(|e| {
            ApiError::Internal(format!(
                "Failed to checkpoint status update in '{}': {e}",
                path.display()
            ))
        })
    }

    /// UPDATE from the executor of `root` (validated by the caller).
    pub fn status_update(&self, root: &str, status: v1::TaskStatus) -> Result<(), ApiError> {
        let task_id = status.task_id.value.clone();
        let uuid = status.uuid.clone().unwrap_or_default();
        let submitted = self.with_updates(root, |stream| submit(stream, status))??;
        tracing::info!(container_id = %root, task_id = %task_id, outcome = ?submitted, "status update");
        if submitted == Submitted::AlreadyAcknowledged {
            self.send_acknowledged(root, &task_id, uuid);
        }
        Ok(())
    }

    /// A re-subscription's unacknowledged updates: the new ones become
    /// pending; returns (task id, uuid) of those already acknowledged, for
    /// which the executor gets ACKNOWLEDGED again.
    pub(super) fn resubmit_updates(
        &self,
        root: &str,
        updates: Vec<v1::TaskStatus>,
    ) -> Result<Vec<(String, Vec<u8>)>, ApiError> {
        self.with_updates(root, |stream| {
            let mut acknowledged = Vec::new();
            let mut changed = false;
            for status in updates {
                let task_id = status.task_id.value.clone();
                let uuid = status.uuid.clone().unwrap_or_default();
                let outcome = match submit(stream, status) {
                    (Ok(outcome), _) => outcome,
                    // Too many pending: the rest waits for the next
                    // re-subscription, as the executor keeps them.
                    (Err(_), _) => break,
                };
                match outcome {
                    Submitted::Pending => changed = true,
                    Submitted::Duplicate => {}
                    Submitted::AlreadyAcknowledged => acknowledged.push((task_id, uuid)),
                }
            }
            (acknowledged, changed)
        })
    }

    /// The updates of `root` the framework has not acknowledged yet.
    pub fn pending_updates(&self, root: &str) -> Result<Vec<v1::TaskStatus>, ApiError> {
        self.view_updates(root, |stream| stream.pending.clone())
    }

    /// The executor messages of `root` (oldest first).
    pub fn executor_messages(&self, root: &str) -> Vec<Vec<u8>> {
        self.status_updates
            .lock()
            .get(root)
            .map(|s| s.messages.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// MESSAGE from the executor of `root`, kept for the framework.
    pub fn executor_message(&self, root: &str, data: Vec<u8>) -> Result<(), ApiError> {
        if data.len() > MESSAGE_MAX_BYTES {
            return Err(ApiError::BadRequest(format!(
                "Executor message of {} bytes is over the limit of {MESSAGE_MAX_BYTES}",
                data.len()
            )));
        }
        self.unsaved_updates(root, |stream| {
            stream.messages.push_back(data);
            let mut kept: usize = stream.messages.iter().map(Vec::len).sum();
            while stream.messages.len() > MESSAGES_KEPT || kept > MESSAGES_MAX_BYTES {
                kept -= stream.messages.pop_front().map_or(0, |m| m.len());
            }
        })
    }

    /// The framework acknowledges the update `uuid` of `task_id`: it is no
    /// longer pending, and the executor gets ACKNOWLEDGED (now, or when it
    /// re-subscribes and re-sends the update).
    pub fn acknowledge_update(
        &self,
        root: &str,
        task_id: &str,
        uuid: &[u8],
    ) -> Result<(), ApiError> {
        let found = self.with_updates(root, |stream| {
            let Some(at) = stream
                .pending
                .iter()
                .position(|s| s.task_id.value == task_id && s.uuid.as_deref() == Some(uuid))
            else {
                return (false, false);
            };
            stream.pending.remove(at);
            if stream.acknowledged.len() == ACKNOWLEDGED_KEPT {
                stream.acknowledged.pop_front();
            }
            stream.acknowledged.push_back(uuid.to_vec());
            (true, true)
        })?;
        if !found {
            return Err(ApiError::NotFound(format!(
                "No pending status update {} for task {task_id}",
                b64().encode(uuid)
            )));
        }
        let delivered = self.send_acknowledged(root, task_id, uuid.to_vec());
        tracing::info!(container_id = %root, task_id, delivered, "status update acknowledged");
        Ok(())
    }

    /// Records the tasks `ids` delivered to the executor of `root` as
    /// TASK_STAGING (Mesos' launched tasks), unless they have a state, and
    /// that the executor was sent a task: one checkpoint for all.
    pub(super) fn mark_staging(&self, root: &str, ids: &[String]) -> Result<(), ApiError> {
        self.with_updates(root, |stream| {
            let mut changed = !stream.ever_sent;
            stream.ever_sent = true;
            for id in ids {
                changed |= stream.queued.remove(id);
                if stream.states.len() < STATES_MAX && !stream.states.contains_key(id) {
                    stream
                        .states
                        .insert(id.clone(), v1::TaskState::TaskStaging as i32);
                    changed = true;
                }
            }
            ((), changed)
        })
    }

    /// Undoes [`Agent::mark_staging`] for tasks that were not delivered
    /// after all (those still STAGING lose their state).
    pub(super) fn unmark_staging(&self, root: &str, ids: &[String]) -> Result<(), ApiError> {
        let staging = v1::TaskState::TaskStaging as i32;
        self.with_updates(root, |stream| {
            let before = stream.states.len();
            for id in ids {
                if stream.states.get(id) == Some(&staging) {
                    stream.states.remove(id);
                }
            }
            ((), before != stream.states.len())
        })
    }

    /// Records the IDs of the tasks queued for the executor of `root`, all
    /// of them (see `UpdateStream::queued`): set each time the queue is
    /// written, so the set is as bounded as the queue.
    pub(super) fn set_queued(&self, root: &str, ids: Vec<String>) -> Result<(), ApiError> {
        self.with_updates(root, |stream| {
            let ids: std::collections::BTreeSet<String> = ids.into_iter().collect();
            let changed = ids != stream.queued;
            stream.queued = ids;
            ((), changed)
        })
    }

    /// The IDs of tasks queued for the executor of `root` that have no
    /// state (see `UpdateStream::queued`).
    pub(super) fn queued_ids(&self, root: &str) -> Vec<String> {
        self.view_updates(root, |stream| {
            stream
                .queued
                .iter()
                .filter(|id| !stream.states.contains_key(*id))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
    }

    /// Records the agent's own updates (TASK_KILLED before delivery) for
    /// `root`'s executor, all or none, in one checkpoint, without sending
    /// the executor anything, so the caller may hold the executor's lock.
    pub(super) fn record_agent_updates(
        &self,
        root: &str,
        statuses: Vec<v1::TaskStatus>,
    ) -> Result<(), ApiError> {
        self.with_updates(root, |stream| {
            let saved = stream.clone();
            for status in statuses {
                if let (Err(e), _) = submit(stream, status) {
                    *stream = saved;
                    return (Err(e), false);
                }
            }
            (Ok(()), true)
        })?
    }

    /// Whether a task was ever delivered to the executor of `root` or the
    /// executor reported on one (see `UpdateStream::ever_sent`).
    pub(super) fn ever_sent_task(&self, root: &str) -> Result<bool, ApiError> {
        self.view_updates(root, |stream| stream.ever_sent)
    }

    /// The latest state each task of `root`'s executor was reported in.
    pub fn task_states(&self, root: &str) -> std::collections::BTreeMap<String, i32> {
        self.view_updates(root, |stream| stream.states.clone())
            .unwrap_or_default()
    }

    /// Forgets the updates of an executor that is gone.
    pub(super) fn forget_updates(&self, root: &str) {
        self.status_updates.lock().remove(root);
    }
}

/// A checkpointed status in the v1 names. Checkpoints written before the
/// v1 package was compiled with Mesos' v1 names hold `slave_id`,
/// `SOURCE_SLAVE` and `REASON_SLAVE_*`; the v1 parser would drop those
/// fields silently (unknown field, unknown enum name), losing where the
/// update came from and why, so they are renamed before parsing.
fn with_v1_names(status: &serde_json::Value) -> serde_json::Value {
    let mut status = status.clone();
    if let Some(object) = status.as_object_mut() {
        if let Some(id) = object.remove("slave_id") {
            object.entry("agent_id").or_insert(id);
        }
        for (field, old, new) in [
            ("source", "SOURCE_SLAVE", "SOURCE_AGENT"),
            ("reason", "REASON_SLAVE_", "REASON_AGENT_"),
        ] {
            if let Some(value) = object.get_mut(field)
                && let Some(rest) = value.as_str().and_then(|v| v.strip_prefix(old))
            {
                *value = serde_json::Value::String(format!("{new}{rest}"));
            }
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_v1_names_in_a_checkpoint_are_read_as_v1_names() {
        let old = serde_json::json!({
            "task_id": {"value": "t"},
            "state": "TASK_LOST",
            "source": "SOURCE_SLAVE",
            "reason": "REASON_SLAVE_RESTARTED",
            "slave_id": {"value": "a1"},
        });
        let status: v1::TaskStatus =
            nestguard::json::from_json(&with_v1_names(&old).to_string()).unwrap();
        assert_eq!(status.source, Some(v1::task_status::Source::Agent as i32));
        assert_eq!(
            status.reason,
            Some(v1::task_status::Reason::AgentRestarted as i32)
        );
        assert_eq!(status.agent_id.map(|a| a.value).as_deref(), Some("a1"));
    }
}
