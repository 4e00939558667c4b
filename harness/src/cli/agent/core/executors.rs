//! The agent's side of the v1 executor API (Mesos' `Slave::subscribe`,
//! `src/slave/slave.cpp`): per executor, whether it subscribed in this
//! agent's life, the task groups queued for it, and the one live SUBSCRIBE
//! stream events are pushed into.
//!
//! Kept in memory only, as Mesos keeps it: after an agent restart every
//! recovered executor is REGISTERING again until it re-subscribes (its
//! tasks are already with it; what the framework has not acknowledged is
//! in the checkpointed status updates, [`super::status_updates`]).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::executor::{Event, event};
use tokio::sync::mpsc;

use super::registry::{Agent, ApiError, ExecutorRecord, lock};
use crate::cli::wire::twin;

/// Where a SUBSCRIBE stream's events go; the HTTP side drains it.
pub type EventSender = mpsc::Sender<Event>;

/// Events queued for one executor's stream. An executor that does not read
/// its stream loses it when the queue is full (as a broken connection: it
/// re-subscribes), so the agent's memory stays bounded.
const EVENTS_QUEUED_MAX: usize = 1024;

/// The executors' API state, by root container id.
#[derive(Default)]
pub struct Executors {
    inner: Mutex<HashMap<String, ExecutorRuntime>>,
}

#[derive(Default)]
struct ExecutorRuntime {
    /// Subscribed at least once since the agent started (Mesos' RUNNING;
    /// otherwise REGISTERING).
    subscribed: bool,
    /// A task group was queued in this agent's life (so an executor that
    /// subscribes with none queued had all its tasks killed before delivery).
    ever_queued: bool,
    /// Task groups not yet delivered (the stand-in for the master's
    /// RunTaskGroup queues them before the executor subscribes).
    queued: Vec<v1::TaskGroupInfo>,
    /// The live stream: a counter (to tell connections apart) and its sender.
    connection: Option<(u64, EventSender)>,
}

impl Executors {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, ExecutorRuntime>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// An executor's identity in a call: which of the two is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// No executor of this framework (Mesos: "Framework cannot be found").
    NoFramework,
    /// The framework is known, the executor is not.
    NoExecutor,
}

fn event(kind: event::Type) -> Event {
    Event {
        r#type: Some(kind as i32),
        ..Default::default()
    }
}

/// A connection counter shared by every executor.
static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

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
        self.executors_api
            .lock()
            .get(root)
            .is_some_and(|r| r.subscribed)
    }

    /// Queues a task group for the executor of `root`; delivered as
    /// LAUNCH_GROUP when it subscribes (at once if it already has).
    pub(super) fn queue_task_group(&self, root: &str, group: v1::TaskGroupInfo) {
        let mut all = self.executors_api.lock();
        let runtime = all.entry(root.to_owned()).or_default();
        runtime.ever_queued = true;
        if runtime.connection.is_none() {
            runtime.queued.push(group);
            return;
        }
        drop(all);
        if let Err(e) = self.mark_staging(root, &group) {
            tracing::warn!(container_id = %root, error = ?e, "recording the delivered tasks failed");
        }
        self.send_event(
            root,
            Event {
                launch_group: Some(event::LaunchGroup { task_group: group }),
                ..event(event::Type::LaunchGroup)
            },
        );
    }

    /// A single task for the executor of `root` (the master's LAUNCH of a
    /// `TaskInfo` for an existing executor: Mesos' `RunTaskMessage`, which
    /// reaches an HTTP executor as a LAUNCH event), already authorized by
    /// the caller's route. Sent at once; 409 if the executor has no live
    /// stream (Mesos queues it until the executor subscribes; the stand-in
    /// leaves the retry to the framework) or the task ID is taken.
    pub fn launch_task(&self, root: &str, task: v1::TaskInfo) -> Result<(), ApiError> {
        let id = task.task_id.value.clone();
        nestguard::validation::validate_path_id(&id)
            .map_err(|e| ApiError::BadRequest(format!("'task_id' is invalid: {e}")))?;
        if self.task_states(root).contains_key(&id)
            || self
                .launched_task_group(root)
                .is_some_and(|g| g.tasks.iter().any(|t| t.task_id.value == id))
        {
            return Err(ApiError::Conflict(format!(
                "Task {id} already exists on this executor"
            )));
        }
        let live = self
            .executors_api
            .lock()
            .get(root)
            .is_some_and(|r| r.connection.is_some());
        if !live {
            return Err(ApiError::Conflict(
                "The executor is not subscribed; launch the task again once it is".into(),
            ));
        }
        let group = v1::TaskGroupInfo {
            tasks: vec![task.clone()],
        };
        self.mark_staging(root, &group)?;
        let sent = self.send_event(
            root,
            Event {
                launch: Some(event::Launch { task }),
                ..event(event::Type::Launch)
            },
        );
        if sent {
            tracing::info!(container_id = %root, task_id = %id, "task sent to the executor (LAUNCH)");
            Ok(())
        } else {
            Err(ApiError::Conflict(
                "The executor is not subscribed; launch the task again once it is".into(),
            ))
        }
    }

    /// Mesos' TASK_DROPPED/TASK_LOST of the STAGING tasks a re-subscribing
    /// executor does not know (see [`Agent::subscribe_executor`]).
    fn drop_lost_tasks(&self, record: &ExecutorRecord, known: &[String]) -> Result<(), ApiError> {
        use nestguard::proto::mesos;
        let root = &record.container_id.value;
        let partition_aware = record
            .framework
            .capabilities
            .iter()
            .any(|c| c.r#type() == mesos::framework_info::capability::Type::PartitionAware);
        let state = if partition_aware {
            mesos::TaskState::TaskDropped
        } else {
            mesos::TaskState::TaskLost
        };
        let staging = mesos::TaskState::TaskStaging as i32;
        for (task_id, _) in self
            .task_states(root)
            .into_iter()
            .filter(|(task, s)| *s == staging && !known.contains(task))
        {
            tracing::info!(container_id = %root, task_id = %task_id, state = ?state,
                "a STAGING task is unknown to the executor");
            let status = mesos::TaskStatus {
                task_id: mesos::TaskId { value: task_id },
                state: state as i32,
                message: Some("Task launched during agent restart".into()),
                source: Some(mesos::task_status::Source::Slave as i32),
                reason: Some(mesos::task_status::Reason::SlaveRestarted as i32),
                uuid: Some(uuid::Uuid::new_v4().as_bytes().to_vec()),
                executor_id: Some(record.executor.executor_id.clone()),
                ..Default::default()
            };
            self.status_update(root, twin(&status))?;
        }
        Ok(())
    }

    /// SUBSCRIBE: replaces any previous stream of this executor (that one
    /// ends), re-submits the executor's unacknowledged updates, and returns
    /// the new stream with SUBSCRIBED, the queued LAUNCH_GROUPs and the
    /// ACKNOWLEDGED of updates the framework had already acknowledged in it.
    ///
    /// As Mesos' `Slave::subscribe`: a task the agent delivered that is
    /// still STAGING (no update from the executor yet) and that the
    /// executor does not list in `unacknowledged_tasks` never reached it
    /// (the agent restarted in between): it becomes TASK_DROPPED
    /// (TASK_LOST for a framework that is not PARTITION_AWARE),
    /// `REASON_SLAVE_RESTARTED`, "Task launched during agent restart".
    pub fn subscribe_executor(
        &self,
        record: &ExecutorRecord,
        unacknowledged: Vec<v1::TaskStatus>,
        unacknowledged_tasks: &[String],
    ) -> Result<mpsc::Receiver<Event>, ApiError> {
        let root = record.container_id.value.clone();
        let already_acknowledged = self.resubmit_updates(&root, unacknowledged)?;
        self.drop_lost_tasks(record, unacknowledged_tasks)?;
        let (sender, receiver) = mpsc::channel(EVENTS_QUEUED_MAX);
        let subscribed = Event {
            subscribed: Some(event::Subscribed {
                executor_info: twin(&record.executor),
                framework_info: twin(&record.framework),
                agent_info: self.agent_info(),
                container_id: Some(twin(&record.container_id)),
            }),
            ..event(event::Type::Subscribed)
        };
        let _ = sender.try_send(subscribed);
        let mut all = self.executors_api.lock();
        let runtime = all.entry(root.clone()).or_default();
        let nothing_to_run = !runtime.subscribed && runtime.ever_queued;
        let mut delivered = false;
        let groups = std::mem::take(&mut runtime.queued);
        drop(all);
        // Delivered tasks are STAGING until the executor reports on them.
        for group in &groups {
            self.mark_staging(&root, group)?;
        }
        let mut all = self.executors_api.lock();
        let runtime = all.entry(root.clone()).or_default();
        for group in groups {
            delivered = true;
            let _ = sender.try_send(Event {
                launch_group: Some(event::LaunchGroup { task_group: group }),
                ..event(event::Type::LaunchGroup)
            });
        }
        for (task_id, uuid) in already_acknowledged {
            let _ = sender.try_send(acknowledged(&task_id, uuid));
        }
        if nothing_to_run && !delivered {
            // Every task was killed before delivery: as Mesos shuts down an
            // executor it never sent a task (`Slave::subscribe`).
            let _ = sender.try_send(event(event::Type::Shutdown));
        }
        runtime.subscribed = true;
        let id = CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        spawn_heartbeats(&sender);
        runtime.connection = Some((id, sender));
        tracing::info!(container_id = %root, executor_id = %record.executor.executor_id.value,
            connection = id, "executor subscribed");
        Ok(receiver)
    }

    /// Sends an event to the executor of `root` if it has a live stream;
    /// false if it has none (the event is lost, as in Mesos).
    pub(super) fn send_event(&self, root: &str, event: Event) -> bool {
        let mut all = self.executors_api.lock();
        let Some(runtime) = all.get_mut(root) else {
            return false;
        };
        let Some((_, sender)) = &runtime.connection else {
            return false;
        };
        if let Err(e) = sender.try_send(event) {
            if matches!(e, mpsc::error::TrySendError::Full(_)) {
                tracing::warn!(container_id = %root, queued = EVENTS_QUEUED_MAX,
                    "executor does not read its event stream; closing it");
            }
            runtime.connection = None;
            return false;
        }
        true
    }

    /// The framework's kill of a task (Mesos' `Slave::killTask`): a task
    /// still queued is dropped from its group here, any other goes to the
    /// executor as a KILL event (an executor ignores tasks it does not
    /// have; after an agent restart the agent does not know which tasks the
    /// executor has, as it keeps no task checkpoints). False when the task
    /// was not queued and the executor has no live stream.
    pub fn kill_task(&self, root: &str, task_id: &str) -> bool {
        let mut was_queued = false;
        {
            let mut all = self.executors_api.lock();
            let Some(runtime) = all.get_mut(root) else {
                return false;
            };
            for group in &mut runtime.queued {
                let before = group.tasks.len();
                group.tasks.retain(|t| t.task_id.value != task_id);
                was_queued |= group.tasks.len() != before;
            }
            runtime.queued.retain(|g| !g.tasks.is_empty());
        }
        if was_queued {
            // The framework hears of it from the agent, as from Mesos'
            // `killTask` for a task the executor never got.
            let status = v1::TaskStatus {
                task_id: v1::TaskId {
                    value: task_id.to_owned(),
                },
                state: v1::TaskState::TaskKilled as i32,
                message: Some("Killed before delivery to the executor".into()),
                source: Some(v1::task_status::Source::Agent as i32),
                reason: Some(v1::task_status::Reason::TaskKilledDuringLaunch as i32),
                uuid: Some(uuid::Uuid::new_v4().as_bytes().to_vec()),
                ..Default::default()
            };
            if let Err(e) = self.status_update(root, status) {
                tracing::warn!(container_id = %root, task_id, error = ?e, "recording TASK_KILLED failed");
            }
            return true;
        }
        self.send_event(
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
        )
    }

    /// Tells the executor to shut down (SHUTDOWN) and forgets its API state.
    pub(super) fn shutdown_executor(&self, root: &str) {
        self.send_event(root, event(event::Type::Shutdown));
        self.executors_api.lock().remove(root);
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
fn spawn_heartbeats(stream: &EventSender) {
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

fn acknowledged(task_id: &str, uuid: Vec<u8>) -> Event {
    Event {
        acknowledged: Some(event::Acknowledged {
            task_id: v1::TaskId {
                value: task_id.to_owned(),
            },
            uuid,
        }),
        ..event(event::Type::Acknowledged)
    }
}
