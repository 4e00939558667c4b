//! The agent's side of the v1 executor API (Mesos' `Slave::subscribe`,
//! `src/slave/slave.cpp`): per executor, whether it subscribed in this
//! agent's life, the tasks queued for it, and the one live SUBSCRIBE
//! stream events are pushed into.
//!
//! A task (LAUNCH) or task group (LAUNCH_GROUP) for an executor without a
//! live stream — not subscribed yet, its connection gone, or the agent
//! restarted since — is queued, as Mesos queues it in
//! `Executor::queuedTasks` (slave.cpp:3400-3417), and delivered, in order,
//! when the executor (re-)subscribes. The queue is checkpointed in the
//! executor's meta directory before the launch is answered, so an agent
//! restart before the executor subscribes does not lose it. Here the agent
//! differs from Mesos 1.11, whose agent recovers a queued task as launched
//! and, when the re-subscribing executor does not list it, reports it
//! TASK_DROPPED (slave.cpp:5348-5390, with a TODO to relaunch it instead):
//! this agent still has the `TaskInfo` and sends it, unless the executor
//! lists it in `unacknowledged_tasks` (it has it). The queue is bounded
//! ([`QUEUED_TASKS_MAX`], [`QUEUED_BYTES_MAX`]; Mesos has no bound): a
//! framework cannot grow the agent's memory or disk without limit by
//! launching onto an executor that never subscribes.
//!
//! What else it keeps is in memory only, as Mesos keeps it: after an agent
//! restart every recovered executor is REGISTERING again until it
//! re-subscribes (what the framework has not acknowledged is in the
//! checkpointed status updates, [`super::status_updates`]).

use std::collections::HashSet;
use std::sync::Arc;

use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::executor::{Event, event};
use tokio::sync::mpsc;

use super::executor_queue::{
    CONNECTIONS, EVENTS_QUEUED_MAX, EventReceiver, Lookup, NotSent, QUEUE_CHECKPOINT_MAX,
    QUEUE_DAMAGED_FILE, QUEUE_FILE, QUEUED_BYTES_MAX, QUEUED_TASKS_MAX, TASK_MAX_BYTES,
    acknowledged, drop_known, event, event_stream, ids_of, lock_runtime, queue_json, tasks_of,
};
use super::records::{ApiError, ExecutorRecord, lock};
use super::registry::Agent;
use crate::cli::wire::twin;

impl Agent {
    /// The executor record of `framework_id`'s `executor_id`.
    pub fn find_executor(
        &self,
        framework_id: &str,
        executor_id: &str,
    ) -> Result<ExecutorRecord, Lookup> {
        let state = lock(&self.state);
        let of_framework: Vec<&ExecutorRecord> = state
            .executors
            .values()
            .filter(|e| e.framework.id.as_ref().map(|f| f.value.as_str()) == Some(framework_id))
            .collect();
        if of_framework.is_empty() {
            return Err(Lookup::NoFramework);
        }
        of_framework
            .into_iter()
            .find(|e| e.executor.executor_id.value == executor_id)
            .cloned()
            .ok_or(Lookup::NoExecutor)
    }

    /// Whether the executor of `root` subscribed since the agent started.
    pub fn executor_subscribed(&self, root: &str) -> bool {
        self.executors_api.subscribed().contains(root)
    }

    fn queue_path(&self, root: &str) -> std::path::PathBuf {
        self.layout.executor_meta(root).join(QUEUE_FILE)
    }

    /// Checkpoints the queue of `root` (none left: no file, and the
    /// directory is synced so the removal survives a crash). An executor
    /// whose meta directory is gone (its pod killed) has no queue: writing
    /// one is an error.
    ///
    /// The IDs of the queued tasks are checkpointed first, with the status
    /// updates (see [`Agent::set_queued`]): a queue checkpoint lost later
    /// still leaves them to report lost.
    fn write_queue(&self, root: &str, queued: &[Event]) -> Result<(), ApiError> {
        let body = (!queued.is_empty()).then(|| queue_json(queued));
        self.write_queue_body(root, queued, body.as_deref())
    }

    /// [`Agent::write_queue`] with the queue's JSON already made.
    fn write_queue_body(
        &self,
        root: &str,
        queued: &[Event],
        body: Option<&str>,
    ) -> Result<(), ApiError> {
        self.set_queued(root, ids_of(queued))?;
        let path = self.queue_path(root);
        let failed = |e: &dyn std::fmt::Display| {
            ApiError::Internal(format!(
                "Failed to checkpoint the queued tasks in '{}': {e}",
                path.display()
            ))
        };
        let dir = self.layout.executor_meta(root);
        let Some(body) = body else {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(failed(&e)),
                Ok(()) => std::fs::File::open(&dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| failed(&e)),
            };
        };
        if !dir.is_dir() {
            return Err(failed(
                &"the executor's directory is gone (its pod was killed)",
            ));
        }
        nestguard::checkpoint::write_text(&path, body, nestguard::checkpoint::Outlives::HostCrash)
            .map_err(|e| failed(&e))
    }

    /// The checkpointed queue of `root`; an error names the file and what
    /// is wrong in it.
    fn read_queue(&self, root: &str) -> Result<Vec<Event>, String> {
        let path = self.queue_path(root);
        if !path.exists() {
            return Ok(Vec::new());
        }
        let bytes = nestguard::checkpoint::read_bounded(&path, QUEUE_CHECKPOINT_MAX)
            .map_err(|e| e.to_string())?;
        let broken = |what: String| {
            format!(
                "Failed to recover queued tasks from '{}': {what}",
                path.display()
            )
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| broken(e.to_string()))?;
        let Some(items) = value["queued"].as_array() else {
            return Err(broken("expected an object with a 'queued' array".into()));
        };
        let mut queued = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let e: Event = nestguard::json::from_json(&item.to_string())
                .map_err(|e| broken(format!("queued[{i}]: {e}")))?;
            if tasks_of(&e).is_empty() {
                return Err(broken(format!(
                    "queued[{i}]: expected a LAUNCH or LAUNCH_GROUP event with tasks"
                )));
            }
            queued.push(e);
        }
        Ok(queued)
    }

    /// Recovery: the checkpointed queue of a recovered executor, delivered
    /// when it re-subscribes. An unreadable checkpoint does not stop the
    /// recovery: it is logged as an error naming the file and moved aside
    /// for the operator (to `queued.damaged`, or `queued.damaged.<n>` when
    /// that exists), and the executor recovers with nothing queued;
    /// returns the error for the caller's report.
    ///
    /// Either way, a task whose ID is checkpointed as queued with the
    /// status updates, that has no state and is not in the recovered queue
    /// is reported lost ([`Agent::lose_undelivered_tasks`]): at every
    /// recovery, so a crash between moving a damaged file aside and the
    /// report, or a queue checkpoint lost another way, loses no report;
    /// with a damaged file, also the tasks of the launched group with no
    /// state, before the file is moved aside.
    pub(super) fn recover_queue(&self, root: &str) -> Option<String> {
        match self.read_queue(root) {
            Ok(queued) => {
                self.lose_undelivered_tasks(
                    root,
                    "not in the checkpoint of queued tasks",
                    Some(&queued),
                );
                if !queued.is_empty() {
                    tracing::info!(container_id = %root, queued = queued.len(),
                        "recovered queued tasks");
                    let runtime = self.executors_api.runtime(root);
                    let mut runtime = lock_runtime(&runtime);
                    runtime.ever_queued = true;
                    runtime.queued = queued;
                }
                None
            }
            Err(e) => {
                self.lose_undelivered_tasks(root, &e, None);
                // An earlier damaged file is kept: the next free suffix.
                let meta = self.layout.executor_meta(root);
                let aside = std::iter::once(meta.join(QUEUE_DAMAGED_FILE))
                    .chain((1..1000).map(|n| meta.join(format!("{QUEUE_DAMAGED_FILE}.{n}"))))
                    .find(|p| !p.exists())
                    .unwrap_or_else(|| meta.join(QUEUE_DAMAGED_FILE));
                let moved = std::fs::rename(self.queue_path(root), &aside);
                tracing::error!(container_id = %root, error = %e, kept_at = %aside.display(),
                    moved = moved.is_ok(),
                    "unreadable checkpoint of queued tasks: they are not delivered");
                Some(e)
            }
        }
    }

    /// Sends a LAUNCH or LAUNCH_GROUP to the executor of `root` if it has a
    /// live stream (its tasks become STAGING), else queues it and
    /// checkpoints the queue before answering. Done under this executor's
    /// lock, so a concurrent SUBSCRIBE either finds the event queued or is
    /// the stream it goes to, and two launches of one task ID cannot both
    /// pass the check that the ID is free. Refused for an executor whose
    /// pod is gone or going (its record or meta directory removed), so no
    /// queue outlives its pod. Returns whether it was sent.
    fn deliver_or_queue(&self, root: &str, launch: Event) -> Result<bool, ApiError> {
        for task in tasks_of(&launch) {
            let size = prost::Message::encoded_len(task);
            if size > TASK_MAX_BYTES {
                return Err(ApiError::BadRequest(format!(
                    "Task {} is {size} bytes, over the limit of {TASK_MAX_BYTES} bytes",
                    task.task_id.value
                )));
            }
        }
        let entry = self.executors_api.runtime(root);
        let mut runtime = lock_runtime(&entry);
        if self.executor(root).is_none() || !self.layout.executor_meta(root).is_dir() {
            drop(runtime);
            // The entry `runtime()` may just have added: no executor, no
            // state (the map stays bounded by the executors there are).
            if Arc::strong_count(&entry) <= 2 {
                let mut all = self.executors_api.lock();
                if all.get(root).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
                    all.remove(root);
                }
            }
            return Err(ApiError::NotFound(format!(
                "Executor of container {root} cannot be found"
            )));
        }
        let states = self.task_states(root);
        let group = if launch.launch.is_some() {
            self.launched_task_group(root)
        } else {
            None
        };
        let taken = tasks_of(&launch).into_iter().find(|t| {
            states.contains_key(&t.task_id.value)
                || group
                    .iter()
                    .flat_map(|g| &g.tasks)
                    .any(|g| g.task_id == t.task_id)
                || runtime
                    .queued
                    .iter()
                    .flat_map(tasks_of)
                    .any(|q| q.task_id == t.task_id)
        });
        if let Some(task) = taken {
            return Err(ApiError::Conflict(format!(
                "Task {} already exists on this executor",
                task.task_id.value
            )));
        }
        let mut launch = launch;
        if let Some((_, sender)) = &runtime.connection {
            let ids = ids_of([&launch]);
            self.mark_staging(root, &ids)?;
            match sender.try_send(launch) {
                Ok(()) => {
                    runtime.ever_queued = true;
                    return Ok(true);
                }
                Err(e) => {
                    if matches!(e, NotSent::Full(_)) {
                        tracing::warn!(container_id = %root, queued = EVENTS_QUEUED_MAX,
                            "executor does not read its event stream; closing it");
                    }
                    runtime.connection = None;
                    launch = e.into_inner();
                    // Not sent: queued below, STAGING once delivered.
                    self.unmark_staging(root, &ids)?;
                }
            }
        }
        let tasks: usize = runtime
            .queued
            .iter()
            .chain(std::iter::once(&launch))
            .map(|e| tasks_of(e).len())
            .sum();
        runtime.queued.push(launch);
        let body = queue_json(&runtime.queued);
        if tasks > QUEUED_TASKS_MAX || body.len() > QUEUED_BYTES_MAX {
            runtime.queued.pop();
            return Err(ApiError::Conflict(format!(
                "Too many tasks queued for the executor, which is not subscribed \
                 (at most {QUEUED_TASKS_MAX} tasks, {QUEUED_BYTES_MAX} bytes); \
                 launch again once it is"
            )));
        }
        if let Err(e) = self.write_queue_body(root, &runtime.queued, Some(&body)) {
            runtime.queued.pop();
            if let Err(undo) = self.set_queued(root, ids_of(&runtime.queued)) {
                tracing::warn!(container_id = %root, error = ?undo, "forgetting queued task IDs failed");
            }
            return Err(e);
        }
        runtime.ever_queued = true;
        Ok(false)
    }

    /// A task group for the executor of `root` (Mesos' RunTaskGroup): a
    /// LAUNCH_GROUP now if it has a live stream, else queued until it
    /// subscribes.
    pub(super) fn launch_task_group(
        &self,
        root: &str,
        group: v1::TaskGroupInfo,
    ) -> Result<(), ApiError> {
        let count = group.tasks.len();
        let sent = self.deliver_or_queue(
            root,
            Event {
                launch_group: Some(event::LaunchGroup { task_group: group }),
                ..event(event::Type::LaunchGroup)
            },
        )?;
        tracing::info!(container_id = %root, tasks = count, sent, "task group for the executor (LAUNCH_GROUP)");
        Ok(())
    }

    /// A single task for the executor of `root` (the master's LAUNCH of a
    /// `TaskInfo` for an existing executor: Mesos' `RunTaskMessage`, which
    /// reaches an HTTP executor as a LAUNCH event), already authorized by
    /// the caller's route. Sent at once if the executor has a live stream,
    /// else queued until it subscribes (as Mesos queues it); 409 if the
    /// task ID is taken or the queue is full.
    pub fn launch_task(&self, root: &str, mut task: v1::TaskInfo) -> Result<(), ApiError> {
        let id = task.task_id.value.clone();
        nestguard::validation::validate_path_id(&id)
            .map_err(|e| ApiError::BadRequest(format!("'task_id' is invalid: {e}")))?;
        // The agent the master assigned it to: this one.
        task.agent_id = v1::AgentId {
            value: self.layout.agent_id.clone(),
        };
        let sent = self.deliver_or_queue(
            root,
            Event {
                launch: Some(event::Launch { task }),
                ..event(event::Type::Launch)
            },
        )?;
        tracing::info!(container_id = %root, task_id = %id, sent, "task for the executor (LAUNCH)");
        Ok(())
    }

    /// Mesos' TASK_DROPPED/TASK_LOST of the STAGING tasks a re-subscribing
    /// executor does not know (see [`Agent::subscribe_executor`]).
    fn drop_lost_tasks(
        &self,
        record: &ExecutorRecord,
        known: &HashSet<String>,
    ) -> Result<(), ApiError> {
        let root = &record.container_id.value;
        let staging = v1::TaskState::TaskStaging as i32;
        for (task_id, _) in self
            .task_states(root)
            .into_iter()
            .filter(|(task, s)| *s == staging && !known.contains(task))
        {
            tracing::info!(container_id = %root, task_id = %task_id,
                "a STAGING task is unknown to the executor");
            self.report_lost(record, task_id, "Task launched during agent restart")?;
        }
        Ok(())
    }

    /// A task that will never run, reported to the framework by the agent:
    /// TASK_DROPPED (TASK_LOST for a framework that is not PARTITION_AWARE),
    /// `REASON_AGENT_RESTARTED`, as Mesos reports a task lost in a restart.
    fn report_lost(
        &self,
        record: &ExecutorRecord,
        task_id: String,
        message: &str,
    ) -> Result<(), ApiError> {
        use nestguard::proto::mesos::framework_info::capability::Type;
        let partition_aware = record
            .framework
            .capabilities
            .iter()
            .any(|c| c.r#type() == Type::PartitionAware);
        let state = if partition_aware {
            v1::TaskState::TaskDropped
        } else {
            v1::TaskState::TaskLost
        };
        let status = v1::TaskStatus {
            task_id: v1::TaskId { value: task_id },
            state: state as i32,
            message: Some(message.into()),
            source: Some(v1::task_status::Source::Agent as i32),
            reason: Some(v1::task_status::Reason::AgentRestarted as i32),
            uuid: Some(uuid::Uuid::new_v4().as_bytes().to_vec()),
            executor_id: Some(twin(&record.executor.executor_id)),
            ..Default::default()
        };
        self.status_update(&record.container_id.value, status)
    }

    /// Recovery of the queue of `root`: the tasks queued (their IDs are
    /// checkpointed with the status updates) that never reached the
    /// executor (no state recorded) and are not in the `recovered` queue
    /// are reported lost to the framework, so it can launch them again.
    /// With no queue recovered (its checkpoint damaged), the tasks of the
    /// launched group with no state too (a group from before the IDs were
    /// checkpointed). Not with a queue: a group delivered before its
    /// STAGING was checkpointed (an updates checkpoint lost) is the
    /// executor's, as it tells at re-subscription.
    fn lose_undelivered_tasks(&self, root: &str, error: &str, recovered: Option<&[Event]>) {
        let Some(record) = self.executor(root) else {
            return;
        };
        let states = self.task_states(root);
        let group = if recovered.is_none() {
            self.launched_task_group(root)
        } else {
            None
        };
        let recovered: HashSet<String> =
            ids_of(recovered.unwrap_or_default()).into_iter().collect();
        let mut seen = HashSet::new();
        let ids: Vec<String> = group
            .into_iter()
            .flat_map(|g| g.tasks)
            .map(|t| t.task_id.value)
            .chain(self.queued_ids(root))
            .filter(|id| !states.contains_key(id) && !recovered.contains(id))
            .filter(|id| seen.insert(id.clone()))
            .collect();
        for id in ids {
            tracing::warn!(container_id = %root, task_id = %id, error,
                "a queued task is lost with the queue's checkpoint");
            if let Err(e) = self.report_lost(
                &record,
                id,
                "The agent could not recover the task's checkpoint after a restart",
            ) {
                tracing::warn!(container_id = %root, error = ?e, "reporting a lost task failed");
            }
        }
    }

    /// SUBSCRIBE: replaces any previous stream of this executor (that one
    /// ends), re-submits the executor's unacknowledged updates, and returns
    /// the new stream with SUBSCRIBED, the queued LAUNCH and LAUNCH_GROUP
    /// events in the order they were queued, and the ACKNOWLEDGED of updates
    /// the framework had already acknowledged.
    ///
    /// A queued task the executor lists in `unacknowledged_tasks` is not
    /// sent again (it has it: the agent stopped between sending it and
    /// checkpointing the queue without it). As Mesos' `Slave::subscribe`: a
    /// task the agent delivered that is still STAGING (no update from the
    /// executor yet) and that the executor does not list never reached it
    /// (the agent restarted in between): it becomes TASK_DROPPED (TASK_LOST
    /// for a framework that is not PARTITION_AWARE),
    /// `REASON_SLAVE_RESTARTED`, "Task launched during agent restart".
    pub fn subscribe_executor(
        &self,
        record: &ExecutorRecord,
        unacknowledged: Vec<v1::TaskStatus>,
        unacknowledged_tasks: &[String],
    ) -> Result<EventReceiver, ApiError> {
        let root = record.container_id.value.clone();
        let already_acknowledged = self.resubmit_updates(&root, unacknowledged)?;
        // Tasks still queued are not lost: they are about to be sent.
        let mut known: HashSet<String> = unacknowledged_tasks.iter().cloned().collect();
        // Room for everything sent below: the stream never drops a queued
        // task or an ACKNOWLEDGED.
        let (sender, receiver) =
            event_stream(EVENTS_QUEUED_MAX + QUEUED_TASKS_MAX + already_acknowledged.len() + 2);
        let subscribed = self.subscribed_event(record);
        let id = CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        {
            // One lock section: a LAUNCH either is queued before it (and
            // sent below) or finds the new stream.
            let runtime = self.executors_api.runtime(&root);
            let mut runtime = lock_runtime(&runtime);
            // Mesos' `everSentTask`: a task delivered (STAGING or later) or
            // reported on by the executor, or one it lists as its own. Not
            // "the queue is empty": that cannot tell an executor never sent
            // a task from one whose tasks were all delivered. Read under the
            // lock, so a launch or kill meanwhile is seen.
            let ever_sent = self.ever_sent_task(&root)? || !unacknowledged_tasks.is_empty();
            // A queued task with a recorded state was delivered (the agent
            // stopped before checkpointing the queue without it) or killed
            // before delivery: it is never sent (again).
            let states = self.task_states(&root);
            let done: HashSet<&str> = states
                .keys()
                .map(String::as_str)
                .chain(unacknowledged_tasks.iter().map(String::as_str))
                .collect();
            if drop_known(&mut runtime.queued, &done) {
                self.write_queue(&root, &runtime.queued)?;
            }
            let delivering = std::mem::take(&mut runtime.queued);
            let ids = ids_of(&delivering);
            known.extend(ids.iter().cloned());
            // Delivered tasks are STAGING (checkpointed, all at once, which
            // also forgets their IDs as queued) before the queue's
            // checkpoint loses them, and that before they are sent: a crash
            // in between leaves them STAGING, reported lost on the next
            // subscription unless the executor lists them. The queue's
            // removal is the last step that can fail.
            let staged = if delivering.is_empty() {
                Ok(())
            } else {
                self.mark_staging(&root, &ids)
            };
            if let Err(e) = staged.and_then(|()| self.write_queue(&root, &[])) {
                if let Err(undo) = self.unmark_staging(&root, &ids) {
                    tracing::warn!(container_id = %root, error = ?undo, "undoing STAGING failed");
                }
                // The queue as it was, on disk too.
                if let Err(undo) = self.write_queue(&root, &delivering) {
                    tracing::warn!(container_id = %root, error = ?undo, "restoring the queue's checkpoint failed");
                }
                runtime.queued = delivering;
                return Err(e);
            }
            let nothing_to_run = runtime.ever_queued && !ever_sent && delivering.is_empty();
            let _ = sender.try_send(subscribed);
            for launch in delivering {
                let _ = sender.try_send(launch);
            }
            for (task_id, uuid) in already_acknowledged {
                let _ = sender.try_send(acknowledged(&task_id, uuid));
            }
            if nothing_to_run {
                // Every task was killed before delivery: as Mesos shuts down
                // an executor it never sent a task (`Slave::subscribe`).
                tracing::warn!(container_id = %root,
                    "shutting down an executor never sent a task, all its queued tasks killed before delivery");
                let _ = sender.try_send(event(event::Type::Shutdown));
            }
            self.executors_api.subscribed().insert(root.clone());
            spawn_heartbeats(&sender.events);
            runtime.connection = Some((id, sender));
        }
        self.drop_lost_tasks(record, &known)?;
        tracing::info!(container_id = %root, executor_id = %record.executor.executor_id.value,
            connection = id, "executor subscribed");
        Ok(receiver)
    }

    /// The SUBSCRIBED event that opens an executor's stream.
    fn subscribed_event(&self, record: &ExecutorRecord) -> Event {
        Event {
            subscribed: Some(event::Subscribed {
                executor_info: twin(&record.executor),
                framework_info: twin(&record.framework),
                agent_info: self.agent_info(),
                container_id: Some(twin(&record.container_id)),
            }),
            ..event(event::Type::Subscribed)
        }
    }

    /// Sends an event to the executor of `root` if it has a live stream;
    /// false if it has none (the event is lost, as in Mesos).
    pub(super) fn send_event(&self, root: &str, event: Event) -> bool {
        let Some(runtime) = self.executors_api.existing(root) else {
            return false;
        };
        let mut runtime = lock_runtime(&runtime);
        let Some((_, sender)) = &runtime.connection else {
            return false;
        };
        if let Err(e) = sender.try_send(event) {
            if matches!(e, NotSent::Full(_)) {
                tracing::warn!(container_id = %root, queued = EVENTS_QUEUED_MAX,
                    "executor does not read its event stream; closing it");
            }
            runtime.connection = None;
            return false;
        }
        true
    }

    /// The framework's kill of a task (Mesos' `Slave::killTask`). A task
    /// still queued is never delivered: it and, if it came in a task group,
    /// every task of its group become TASK_KILLED from the agent,
    /// `REASON_TASK_KILLED_DURING_LAUNCH`, "Killed before delivery to the
    /// executor" (slave.cpp:4125-4240). Any other goes to the executor as a
    /// KILL event (an executor ignores tasks it does not have). False when
    /// the task was not queued and the executor has no live stream; an
    /// error when the TASK_KILLED could not be recorded (the task stays
    /// queued: the framework is never left without word of it).
    pub fn kill_task(&self, root: &str, task_id: &str) -> Result<bool, ApiError> {
        let queued = {
            let Some(runtime) = self.executors_api.existing(root) else {
                return Ok(false);
            };
            let mut runtime = lock_runtime(&runtime);
            let at = runtime
                .queued
                .iter()
                .position(|e| tasks_of(e).iter().any(|t| t.task_id.value == task_id));
            match at {
                Some(at) => {
                    // TASK_KILLED first, then the queue without the event,
                    // both under this executor's lock (no relaunch of the
                    // ID slips in): a crash in between leaves a queued
                    // task with a state, which is never delivered.
                    let executor_id = self.executor(root).map(|r| twin(&r.executor.executor_id));
                    let killed = ids_of([&runtime.queued[at]])
                        .iter()
                        .map(|task| killed_before_delivery(task, task_id, executor_id.clone()))
                        .collect();
                    // Recorded directly: `status_update` would take this
                    // executor's lock again (to send ACKNOWLEDGED).
                    if let Err(e) = self.record_agent_updates(root, killed) {
                        tracing::warn!(container_id = %root, task_id, error = ?e, "recording TASK_KILLED failed");
                        return Err(e);
                    }
                    runtime.queued.remove(at);
                    if let Err(e) = self.write_queue(root, &runtime.queued) {
                        tracing::warn!(container_id = %root, task_id, error = ?e, "checkpointing the queue failed");
                    }
                    true
                }
                None => false,
            }
        };
        if queued {
            return Ok(true);
        }
        Ok(self.send_event(
            root,
            Event {
                kill: Some(event::Kill {
                    task_id: v1::TaskId {
                        value: task_id.to_owned(),
                    },
                    kill_policy: None,
                }),
                ..event(event::Type::Kill)
            },
        ))
    }

    /// Tells the executor to shut down (SHUTDOWN) and forgets its API state.
    pub(super) fn shutdown_executor(&self, root: &str) {
        self.send_event(root, event(event::Type::Shutdown));
        self.executors_api.lock().remove(root);
        self.executors_api.subscribed().remove(root);
    }

    /// Delivers the framework's ACKNOWLEDGED for an update to the executor.
    pub(super) fn send_acknowledged(&self, root: &str, task_id: &str, uuid: Vec<u8>) -> bool {
        self.send_event(root, acknowledged(task_id, uuid))
    }

    fn agent_info(&self) -> v1::AgentInfo {
        let endpoint = self.endpoint();
        let (host, port) = endpoint
            .rsplit_once(':')
            .map_or((endpoint.as_str(), None), |(h, p)| (h, p.parse().ok()));
        v1::AgentInfo {
            hostname: host.to_owned(),
            port,
            resources: Vec::new(),
            id: Some(v1::AgentId {
                value: self.layout.agent_id.clone(),
            }),
        }
    }
}

/// Mesos' `DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL` (src/slave/constants.hpp).
pub const HEARTBEAT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Sends a HEARTBEAT on `stream` every [`HEARTBEAT_INTERVAL`] until the
/// stream is gone (closed by the executor or replaced by a re-subscription).
///
/// Holds the stream weakly: the executor's record holds the only strong
/// sender, so dropping it (a re-subscription) ends the old stream.
fn spawn_heartbeats(stream: &mpsc::Sender<Event>) {
    let stream = stream.downgrade();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(HEARTBEAT_INTERVAL);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let Some(stream) = stream.upgrade() else {
                return;
            };
            if stream.try_send(event(event::Type::Heartbeat)).is_err() {
                return;
            }
        }
    });
}

/// The agent's TASK_KILLED of `task`, queued and never delivered, killed
/// by the framework's kill of `killed` (itself or a task of its group).
fn killed_before_delivery(
    task: &str,
    killed: &str,
    executor_id: Option<v1::ExecutorId>,
) -> v1::TaskStatus {
    v1::TaskStatus {
        task_id: v1::TaskId {
            value: task.to_owned(),
        },
        state: v1::TaskState::TaskKilled as i32,
        message: Some(if task == killed {
            "Killed before delivery to the executor".into()
        } else {
            "A task within the task group was killed before delivery to the executor".into()
        }),
        source: Some(v1::task_status::Source::Agent as i32),
        reason: Some(v1::task_status::Reason::TaskKilledDuringLaunch as i32),
        uuid: Some(uuid::Uuid::new_v4().as_bytes().to_vec()),
        executor_id,
        ..Default::default()
    }
}
