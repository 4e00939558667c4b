//! `nestguard executor`: nestguard's default executor. It runs inside a pod's
//! executor container and behaves as Mesos' default executor does
//! (src/launcher/default_executor.cpp): it subscribes to the agent's v1
//! executor API ([`api`]), gets its tasks from LAUNCH_GROUP, launches each
//! task as a nested container of `SUBSCRIBED.container_id` through the
//! operator API with only the credentials the agent injected, waits on
//! them, applies restart policies (nestguard's pod extension, carried in
//! task labels), kills the rest when a task fails for good, and kills a
//! task on KILL and everything on SHUTDOWN.
//!
//! Every state change is an UPDATE (a TaskStatus with a fresh uuid, source
//! SOURCE_EXECUTOR) kept until the agent's ACKNOWLEDGED arrives; after a
//! lost connection (an agent restart) the executor re-subscribes with the
//! updates still unacknowledged. It exits once its tasks are terminal and
//! every update was acknowledged (or at SHUTDOWN).
//!
//! States are also printed to stdout as JSON lines (with the container id,
//! exit status and restart count, and TASK_RESTARTING, which Mesos has no
//! state for), for people and tests reading the sandbox.

pub mod api;
pub mod command;
pub mod policy;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::executor::{Event, event};
use nestguard::proto::nestguard::{PodTask, RestartPolicy};

use self::api::{ExecutorApi, ExecutorEnv};
use self::policy::{Decision, Exit, decide, ends_pod};
use super::client::{AgentClient, exit_status};
use crate::cli::out::{errln, outln};

/// The task label carrying a task's restart policy in LAUNCH_GROUP (JSON of
/// `nestguard.RestartPolicy`, nestguard's pod extension): Mesos' TaskInfo
/// has no such field, and labels reach the executor unchanged through a
/// real Mesos master and agent too.
pub const RESTART_POLICY_LABEL: &str = "io.nestguard.restart_policy";
/// The task label marking a transient task (`true`).
pub const TRANSIENT_LABEL: &str = "io.nestguard.transient";

/// One task's bookkeeping.
#[derive(Default)]
struct TaskSlot {
    /// Its running container (dotted id).
    container: Option<String>,
    /// KILL arrived: no more restarts.
    killed: bool,
    /// Terminal.
    done: bool,
    /// Ended well (finished, or a transient task's failure).
    ok: bool,
    /// As received, until the framework acknowledged one of its updates:
    /// listed in SUBSCRIBE's `unacknowledged_tasks`, so that a restarted
    /// agent knows the executor has it (Mesos drops a STAGING task the
    /// executor does not list).
    unacknowledged: Option<v1::TaskInfo>,
}

#[derive(Default)]
struct State {
    /// `SUBSCRIBED.container_id`: the parent of the task containers.
    root: Option<String>,
    /// Updates sent and not yet acknowledged, in order.
    unacknowledged: Vec<v1::TaskStatus>,
    tasks: BTreeMap<String, TaskSlot>,
    /// A task failed for good, or SHUTDOWN: no more (re)starts.
    stopping: bool,
    /// SHUTDOWN (or LAUNCH, which the default executor does not support).
    shutdown: bool,
}

struct Executor {
    api: ExecutorApi,
    client: AgentClient,
    state: Mutex<State>,
}

/// Runs the executor (inside the executor container).
pub fn run() -> anyhow::Result<ExitCode> {
    let env = ExecutorEnv::from_env()?;
    let client = AgentClient::new(&env.base, env.credential.clone());
    let executor = Arc::new(Executor {
        api: ExecutorApi::new(env),
        client,
        state: Mutex::new(State::default()),
    });
    let mut disconnected_since: Option<Instant> = None;
    loop {
        if executor.finished() {
            break;
        }
        let (unacknowledged, tasks) = {
            let s = executor.lock();
            let tasks: Vec<v1::TaskInfo> = s
                .tasks
                .values()
                .filter_map(|t| t.unacknowledged.clone())
                .collect();
            (s.unacknowledged.clone(), tasks)
        };
        match executor.api.subscribe(&unacknowledged, &tasks) {
            Ok(reader) => {
                disconnected_since = None;
                if executor.follow(reader) {
                    break;
                }
            }
            Err(e) => errln!("executor: {e:#}"),
        }
        let since = *disconnected_since.get_or_insert_with(Instant::now);
        if since.elapsed() > executor.api.env().recovery_timeout {
            errln!("executor: the agent stayed unreachable; shutting down");
            executor.shutdown();
            break;
        }
        // A random wait up to the maximum, as Mesos' executor library backs off.
        let max = executor.api.env().backoff_max.as_millis().max(1) as u64;
        let mut r = [0u8; 8];
        let _ = getrandom::fill(&mut r);
        std::thread::sleep(Duration::from_millis(u64::from_le_bytes(r) % max));
    }
    executor.wait_tasks_gone(Duration::from_secs(10));
    let ok = executor.lock().tasks.values().all(|t| t.ok);
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

impl Executor {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Done: shut down with every task ended, or every task ended and
    /// every update acknowledged.
    fn finished(&self) -> bool {
        let s = self.lock();
        let all_done = s.tasks.values().all(|t| t.done);
        (s.shutdown && all_done) || (!s.tasks.is_empty() && all_done && s.unacknowledged.is_empty())
    }

    fn wait_tasks_gone(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.lock().tasks.values().all(|t| t.done) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Handles the events of one stream; true when the executor is done.
    fn follow(self: &Arc<Self>, mut reader: api::EventReader) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let next = reader.next_event();
                let end = !matches!(next, Ok(Some(_)));
                if tx.send(next).is_err() || end {
                    return;
                }
            }
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(Ok(Some(event))) => self.handle(event),
                Ok(Ok(None)) => {
                    errln!("executor: the agent closed the event stream");
                    return self.finished();
                }
                Ok(Err(e)) => {
                    errln!("executor: event stream broken: {e:#}");
                    return self.finished();
                }
                Err(RecvTimeoutError::Timeout) if self.finished() => return true,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return self.finished(),
            }
        }
    }

    fn handle(self: &Arc<Self>, event: Event) {
        match event.r#type() {
            event::Type::Subscribed => {
                let root = event
                    .subscribed
                    .and_then(|s| s.container_id)
                    .map(|c| to_dotted(&c));
                if root.is_none() {
                    errln!("executor: SUBSCRIBED without a container_id; cannot launch tasks");
                }
                self.lock().root = root;
            }
            event::Type::LaunchGroup => {
                let tasks = event
                    .launch_group
                    .map(|l| l.task_group.tasks)
                    .unwrap_or_default();
                for task in tasks {
                    let name = task.task_id.value.clone();
                    {
                        let mut s = self.lock();
                        if s.tasks.contains_key(&name) {
                            continue;
                        }
                        s.tasks.insert(
                            name.clone(),
                            TaskSlot {
                                unacknowledged: Some(task.clone()),
                                ..TaskSlot::default()
                            },
                        );
                    }
                    let me = Arc::clone(self);
                    std::thread::spawn(move || {
                        let task = pod_task(task);
                        let ok = me.run_task(&task);
                        let mut s = me.lock();
                        if let Some(slot) = s.tasks.get_mut(&name) {
                            slot.done = true;
                            slot.ok = ok;
                        }
                    });
                }
            }
            event::Type::Launch => {
                // As Mesos' default executor: single tasks are not its job.
                errln!("executor: LAUNCH is not supported by the default executor; shutting down");
                self.shutdown();
            }
            event::Type::Kill => {
                if let Some(kill) = event.kill {
                    let grace = kill
                        .kill_policy
                        .and_then(|p| p.grace_period)
                        .map(|d| Duration::from_nanos(u64::try_from(d.nanoseconds).unwrap_or(0)));
                    self.kill_task(&kill.task_id.value, grace);
                }
            }
            event::Type::Acknowledged => {
                if let Some(ack) = event.acknowledged {
                    let mut s = self.lock();
                    s.unacknowledged
                        .retain(|s| s.uuid.as_deref() != Some(&ack.uuid[..]));
                    if let Some(slot) = s.tasks.get_mut(&ack.task_id.value) {
                        slot.unacknowledged = None;
                    }
                }
            }
            event::Type::Shutdown => self.shutdown(),
            // Mesos 1.11's agent never sends ERROR to an HTTP executor (an
            // invalid call gets a 4xx answer); Mesos' executor library makes
            // one up when a call is answered unexpectedly
            // (src/executor/executor.cpp:726) or an event does not decode
            // (:774), and Mesos' default and command executors log it and
            // go on (src/launcher/default_executor.cpp:300,
            // src/launcher/executor.cpp:262): so does this one.
            event::Type::Error => {
                let message = event.error.map(|e| e.message).unwrap_or_default();
                errln!("executor: the agent reported an error: {message}");
            }
            event::Type::Message | event::Type::Heartbeat | event::Type::Unknown => {}
        }
    }

    /// KILL: no more restarts; SIGTERM, then SIGKILL after the grace period.
    fn kill_task(self: &Arc<Self>, task: &str, grace: Option<Duration>) {
        let container = {
            let mut s = self.lock();
            let Some(slot) = s.tasks.get_mut(task) else {
                return;
            };
            slot.killed = true;
            slot.container.clone()
        };
        if let Some(container) = container {
            let grace = grace.unwrap_or(self.api.env().shutdown_grace);
            let me = Arc::clone(self);
            std::thread::spawn(move || me.terminate(&container, grace));
        }
    }

    fn terminate(&self, container: &str, grace: Duration) {
        let _ = self.client.kill_nested(container, libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            let running = self
                .lock()
                .tasks
                .values()
                .any(|t| t.container.as_deref() == Some(container));
            if !running {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.client.kill_nested(container, libc::SIGKILL);
    }

    /// SHUTDOWN: kill every task, launch nothing more.
    fn shutdown(&self) {
        let running: Vec<String> = {
            let mut s = self.lock();
            s.shutdown = true;
            s.stopping = true;
            for slot in s.tasks.values_mut() {
                slot.killed = true;
            }
            s.tasks
                .values()
                .filter_map(|t| t.container.clone())
                .collect()
        };
        for container in running {
            if let Err(e) = self.client.kill_nested(&container, libc::SIGKILL) {
                errln!("executor: killing {container}: {e:#}");
            }
        }
    }

    /// Kills every other running task (the pod failed for good).
    fn stop_pod(&self, except: &str) {
        let running: Vec<(String, String)> = {
            let mut s = self.lock();
            s.stopping = true;
            s.tasks
                .iter()
                .filter(|(t, _)| t.as_str() != except)
                .filter_map(|(t, slot)| slot.container.clone().map(|c| (t.clone(), c)))
                .collect()
        };
        for (task, container) in running {
            if let Err(e) = self.client.kill_nested(&container, libc::SIGKILL) {
                errln!("executor: killing task {task}: {e:#}");
            }
        }
    }

    /// Prints a state change and, for Mesos' states, sends it as an UPDATE.
    fn report(&self, task: &str, state: &str, container: Option<&str>, extra: serde_json::Value) {
        let mut line = serde_json::json!({ "task_id": task, "state": state });
        if let Some(c) = container {
            line["container_id"] = serde_json::json!(c);
        }
        if let (Some(obj), serde_json::Value::Object(more)) = (line.as_object_mut(), extra) {
            obj.extend(more);
        }
        outln!("{line}");
        let Some(mesos_state) = v1::TaskState::from_str_name(state) else {
            return; // TASK_RESTARTING: nestguard's, printed only
        };
        let status = self.api.status(
            task,
            mesos_state,
            line["message"].as_str().map(str::to_owned),
            container.map(from_dotted),
        );
        self.lock().unacknowledged.push(status.clone());
        // Kept until acknowledged; a failure here is retried a few times (a
        // re-subscription in progress), then left to the next SUBSCRIBE.
        for attempt in 0..5 {
            match self.api.update(&status) {
                Ok(()) => return,
                Err(e) if attempt == 4 => {
                    errln!(
                        "executor: UPDATE {state} of {task} kept for the next subscription: {e:#}"
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Runs one task through its restarts; true if it ended well.
    fn run_task(&self, task: &PodTask) -> bool {
        let info = &task.task;
        let name = info.task_id.value.clone();
        let command: Option<v1::CommandInfo> = info.command.as_ref().map(super::wire::twin);
        let container: Option<v1::ContainerInfo> = info.container.as_ref().map(super::wire::twin);
        let mut restarts = 0u32;
        self.report(&name, "TASK_STARTING", None, serde_json::json!({}));
        loop {
            let Some(child) = self.start_attempt(task, &name, &command, &container, restarts)
            else {
                return false;
            };
            let status = wait_surviving_restarts(&self.client, &child);
            match self.settle_exit(task, &name, &child, status, restarts) {
                ControlFlow::Continue(attempt) => restarts = attempt,
                ControlFlow::Break(ended_well) => return ended_well,
            }
        }
    }

    /// Launches one attempt of `task` as a new nested container and reports
    /// it running; None when it ended instead (killed, stopping, refused),
    /// with its state reported.
    fn start_attempt(
        &self,
        task: &PodTask,
        name: &str,
        command: &Option<v1::CommandInfo>,
        container: &Option<v1::ContainerInfo>,
        restarts: u32,
    ) -> Option<String> {
        let (stopping, killed, root) = {
            let s = self.lock();
            let killed = s.tasks.get(name).is_some_and(|t| t.killed);
            (s.stopping, killed, s.root.clone())
        };
        if stopping || killed {
            let why = if killed {
                "killed"
            } else {
                "the pod is stopping"
            };
            self.report(
                name,
                "TASK_KILLED",
                None,
                serde_json::json!({"message": why}),
            );
            return None;
        }
        let Some(root) = root else {
            self.report(
                name,
                "TASK_FAILED",
                None,
                serde_json::json!({"message": "the agent gave no executor container id"}),
            );
            return None;
        };
        let child = format!("{root}.{}", uuid::Uuid::new_v4());
        let reply = match self
            .client
            .launch_nested(&child, command.clone(), container.clone())
        {
            Ok(r) => r,
            Err(e) => {
                self.report(
                    name,
                    "TASK_FAILED",
                    None,
                    serde_json::json!({"message": format!("{e:#}")}),
                );
                return None;
            }
        };
        if reply.status != 200 {
            let message = format!("launch refused: {} {}", reply.status, reply.body);
            self.report(
                name,
                "TASK_FAILED",
                Some(&child),
                serde_json::json!({"message": message}),
            );
            if !task.transient() {
                self.stop_pod(name);
            }
            return None;
        }
        let killed_meanwhile = {
            let mut s = self.lock();
            let stopping = s.stopping;
            s.tasks.get_mut(name).is_some_and(|slot| {
                slot.container = Some(child.clone());
                slot.killed || stopping
            })
        };
        if killed_meanwhile {
            // KILL or SHUTDOWN arrived while the launch was in flight.
            let _ = self.client.kill_nested(&child, libc::SIGKILL);
        }
        let mut detail = serde_json::json!({"restarts": restarts});
        if restarts > 0 {
            detail["message"] = serde_json::json!(format!("restarted ({restarts})"));
        }
        self.report(name, "TASK_RUNNING", Some(&child), detail);
        Some(child)
    }

    /// What an attempt's exit means: another attempt (its number), or the
    /// task's end (true if it ended well), with its state reported.
    fn settle_exit(
        &self,
        task: &PodTask,
        name: &str,
        child: &str,
        status: i32,
        restarts: u32,
    ) -> ControlFlow<bool, u32> {
        let (stopping, killed) = {
            let mut s = self.lock();
            let slot = s.tasks.get_mut(name);
            let killed = slot.as_ref().is_some_and(|t| t.killed);
            if let Some(slot) = slot {
                slot.container = None;
            }
            (s.stopping, killed)
        };
        let exit = Exit::from_raw(status);
        let signalled = matches!(exit, Exit::Signal(s) if s == libc::SIGKILL || s == libc::SIGTERM);
        let killed = killed || signalled;
        let decision = if killed || stopping {
            Decision::Failed
        } else {
            decide(task.restart_policy.as_ref(), exit, restarts)
        };
        let detail = serde_json::json!({"exit_status": status, "message": exit.to_string(), "restarts": restarts});
        match decision {
            Decision::Restart { delay, attempt } => {
                self.report(name, "TASK_RESTARTING", Some(child), detail);
                std::thread::sleep(delay);
                ControlFlow::Continue(attempt)
            }
            Decision::Finished => {
                self.report(name, "TASK_FINISHED", Some(child), detail);
                ControlFlow::Break(true)
            }
            Decision::Failed => {
                let state = if killed || stopping {
                    "TASK_KILLED"
                } else {
                    "TASK_FAILED"
                };
                self.report(name, state, Some(child), detail);
                if ends_pod(task, &decision) && !stopping {
                    self.stop_pod(name);
                }
                ControlFlow::Break(task.transient() && !killed)
            }
        }
    }
}

/// A LAUNCH_GROUP task with nestguard's pod extension read from its labels
/// (a bad label is ignored: the task runs without a restart policy).
fn pod_task(task: v1::TaskInfo) -> PodTask {
    let label = |key: &str| {
        task.labels
            .as_ref()
            .and_then(|l| l.labels.iter().find(|l| l.key == key))
            .and_then(|l| l.value.clone())
    };
    let restart_policy = label(RESTART_POLICY_LABEL).and_then(|json| {
        nestguard::json::from_json::<RestartPolicy>(&json)
            .map_err(|e| errln!("executor: ignoring label {RESTART_POLICY_LABEL}: {e}"))
            .ok()
    });
    let transient = label(TRANSIENT_LABEL).map(|v| v == "true");
    PodTask {
        task: super::wire::twin(&task),
        restart_policy,
        transient,
    }
}

fn to_dotted(id: &v1::ContainerId) -> String {
    match &id.parent {
        Some(parent) => format!("{}.{}", to_dotted(parent), id.value),
        None => id.value.clone(),
    }
}

fn from_dotted(dotted: &str) -> v1::ContainerId {
    let mut id: Option<v1::ContainerId> = None;
    for part in dotted.split('.') {
        id = Some(v1::ContainerId {
            value: part.to_owned(),
            parent: id.map(Box::new),
        });
    }
    id.unwrap_or_default()
}

/// How long the executor keeps retrying a WAIT while the agent is
/// unreachable (an agent restart), as Mesos' default executor keeps
/// reconnecting.
const AGENT_RECOVERY_TIMEOUT: Duration = Duration::from_secs(120);

/// Whether a 404 answer to WAIT says the agent does not know the container
/// (Mesos' "Container <id> cannot be found"). A real Mesos agent that is
/// starting answers 404 with an empty body too: libprocess' HTTP server is
/// up before the agent's process (`slave(1)`) exists, and that is no news
/// about the container.
fn container_unknown(status: u16, body: &str) -> bool {
    status == 404 && body.contains("cannot be found")
}

/// WAIT_NESTED_CONTAINER, retried while the agent is down or recovering;
/// a container the agent no longer knows reads as killed.
fn wait_surviving_restarts(client: &AgentClient, child: &str) -> i32 {
    let deadline = Instant::now() + AGENT_RECOVERY_TIMEOUT;
    loop {
        match client.wait_nested(child) {
            Ok(reply) if reply.status == 200 => {
                return exit_status(&reply.body).unwrap_or(libc::SIGKILL);
            }
            Ok(reply) if container_unknown(reply.status, &reply.body) => return libc::SIGKILL,
            Ok(reply) => errln!(
                "executor: waiting on {child}: {} {}",
                reply.status,
                reply.body
            ),
            Err(e) => errln!("executor: agent unreachable while waiting on {child}: {e:#}"),
        }
        if Instant::now() > deadline {
            return libc::SIGKILL;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An executor that never reaches an agent (nothing here calls one).
    fn offline_executor() -> Arc<Executor> {
        let env = ExecutorEnv::from_vars(|name| match name {
            "MESOS_AGENT_ENDPOINT" => Some("127.0.0.1:9".into()),
            "MESOS_FRAMEWORK_ID" => Some("f".into()),
            "MESOS_EXECUTOR_ID" => Some("e".into()),
            _ => None,
        })
        .unwrap();
        Arc::new(Executor {
            client: AgentClient::new(&env.base, env.credential.clone()),
            api: ExecutorApi::new(env),
            state: Mutex::new(State::default()),
        })
    }

    #[test]
    fn an_error_event_is_logged_and_the_executor_goes_on_as_mesos_executors_do() {
        let executor = offline_executor();
        executor.handle(Event {
            r#type: Some(event::Type::Error as i32),
            error: Some(event::Error {
                message: "Received unexpected '400 Bad Request'".into(),
            }),
            ..Default::default()
        });
        let s = executor.lock();
        assert!(
            !s.shutdown && !s.stopping,
            "ERROR must not stop the executor"
        );
        drop(s);
        // It still takes events: SHUTDOWN stops it.
        executor.handle(Event {
            r#type: Some(event::Type::Shutdown as i32),
            ..Default::default()
        });
        assert!(executor.lock().shutdown);
    }

    #[test]
    fn pod_extension_labels_become_a_pod_task() {
        let policy = r#"{"type":"ON_FAILURE","max_restarts":2}"#;
        let task = v1::TaskInfo {
            name: "t".into(),
            task_id: v1::TaskId { value: "t".into() },
            labels: Some(v1::Labels {
                labels: vec![
                    v1::Label {
                        key: RESTART_POLICY_LABEL.into(),
                        value: Some(policy.into()),
                    },
                    v1::Label {
                        key: TRANSIENT_LABEL.into(),
                        value: Some("true".into()),
                    },
                ],
            }),
            ..Default::default()
        };
        let pod = pod_task(task.clone());
        assert_eq!(pod.task.task_id.value, "t");
        assert!(pod.transient());
        let p = pod.restart_policy.unwrap();
        assert_eq!(p.max_restarts, Some(2));
        assert_eq!(
            p.r#type(),
            nestguard::proto::nestguard::restart_policy::Type::OnFailure
        );
        // Without labels (any framework's task group): no policy, not transient.
        let plain = pod_task(v1::TaskInfo {
            labels: None,
            ..task
        });
        assert!(plain.restart_policy.is_none() && !plain.transient());
    }

    #[test]
    fn only_the_agents_own_404_means_the_container_is_gone() {
        // Mesos' and nestguard's agent: the container is unknown.
        assert!(container_unknown(404, "Container abc.def cannot be found"));
        // A Mesos agent starting up: libprocess answers for a process that
        // does not exist yet, with an empty body.
        assert!(!container_unknown(404, ""));
        assert!(!container_unknown(503, "Agent has not finished recovery"));
    }

    #[test]
    fn dotted_container_ids_round_trip() {
        let id = from_dotted("root.child.grandchild");
        assert_eq!(id.value, "grandchild");
        assert_eq!(to_dotted(&id), "root.child.grandchild");
        assert_eq!(to_dotted(&from_dotted("root")), "root");
    }
}
