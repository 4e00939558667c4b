//! `nestguard executor`: nestguard's default executor. It runs inside a pod's
//! executor container, launches each task as a nested container through the
//! agent API with only the credentials the agent injected, waits on them,
//! applies restart policies, and kills the rest when a task fails for good.
//!
//! Task states are printed to stdout as JSON lines named as Mesos names them
//! (TASK_RUNNING, TASK_RESTARTING, TASK_FINISHED, TASK_FAILED, TASK_KILLED);
//! `nestguard pod run` follows them.

pub mod policy;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use nestguard::proto::nestguard::{PodSpec, PodTask};

use self::policy::{Decision, Exit, decide, ends_pod};
use super::client::{AgentClient, Credential, exit_status};
use super::wire::twin;

/// One state change, as printed.
fn report(task: &str, state: &str, container: Option<&str>, extra: serde_json::Value) {
    let mut line = serde_json::json!({ "task_id": task, "state": state });
    if let Some(c) = container {
        line["container_id"] = serde_json::json!(c);
    }
    if let (Some(obj), serde_json::Value::Object(more)) = (line.as_object_mut(), extra) {
        obj.extend(more);
    }
    println!("{line}");
}

#[derive(Default)]
struct Shared {
    /// Set when the pod is being torn down: no more restarts.
    stopping: bool,
    /// Running task containers (task id → dotted container id).
    running: Vec<(String, String)>,
}

fn credential_from_env() -> Credential {
    if let Ok(token) = std::env::var("MESOS_EXECUTOR_AUTHENTICATION_TOKEN") {
        return Credential::Bearer(token);
    }
    match (
        std::env::var("MESOS_PRINCIPAL"),
        std::env::var("MESOS_SECRET"),
    ) {
        (Ok(principal), Ok(secret)) => Credential::Basic { principal, secret },
        _ => Credential::None,
    }
}

/// Runs the executor (inside the executor container).
pub fn run() -> anyhow::Result<ExitCode> {
    let endpoint =
        std::env::var("MESOS_AGENT_ENDPOINT").context("MESOS_AGENT_ENDPOINT is not set")?;
    let sandbox =
        PathBuf::from(std::env::var("MESOS_SANDBOX").context("MESOS_SANDBOX is not set")?);
    let root = std::env::var("NESTGUARD_EXECUTOR_CONTAINER_ID")
        .context("NESTGUARD_EXECUTOR_CONTAINER_ID is not set")?;
    let spec_path = sandbox.join("pod.json");
    let text = std::fs::read_to_string(&spec_path)
        .with_context(|| format!("reading {}", spec_path.display()))?;
    let pod: PodSpec = nestguard::json::from_json(&text)
        .with_context(|| format!("parsing {}", spec_path.display()))?;
    let client = Arc::new(AgentClient::new(
        &format!("http://{endpoint}"),
        credential_from_env(),
    ));
    let shared = Arc::new(Mutex::new(Shared::default()));

    let handles: Vec<_> = pod
        .tasks
        .iter()
        .cloned()
        .map(|task| {
            let (client, shared, root) = (Arc::clone(&client), Arc::clone(&shared), root.clone());
            std::thread::spawn(move || run_task(&client, &shared, &root, &task))
        })
        .collect();
    let mut ok = true;
    for h in handles {
        ok &= h.join().unwrap_or(false);
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills every other running task (the pod failed for good).
fn stop_pod(client: &AgentClient, shared: &Mutex<Shared>, except: &str) {
    let running = {
        let mut s = lock(shared);
        s.stopping = true;
        s.running.clone()
    };
    for (task, container) in running.into_iter().filter(|(t, _)| t != except) {
        if let Err(e) = client.kill_nested(&container, libc::SIGKILL) {
            eprintln!("executor: killing task {task}: {e:#}");
        }
    }
}

/// How long the executor keeps retrying while the agent is unreachable (an
/// agent restart), as Mesos' default executor keeps reconnecting.
const AGENT_RECOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// WAIT_NESTED_CONTAINER, retried while the agent is down or recovering;
/// a container the agent no longer knows reads as killed.
fn wait_surviving_restarts(client: &AgentClient, child: &str) -> i32 {
    let deadline = std::time::Instant::now() + AGENT_RECOVERY_TIMEOUT;
    loop {
        match client.wait_nested(child) {
            Ok(reply) if reply.status == 200 => {
                return exit_status(&reply.body).unwrap_or(libc::SIGKILL);
            }
            Ok(reply) if reply.status == 404 => return libc::SIGKILL,
            Ok(reply) => eprintln!(
                "executor: waiting on {child}: {} {}",
                reply.status, reply.body
            ),
            Err(e) => eprintln!("executor: agent unreachable while waiting on {child}: {e:#}"),
        }
        if std::time::Instant::now() > deadline {
            return libc::SIGKILL;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Runs one task through its restarts; true if it ended well.
fn run_task(client: &AgentClient, shared: &Mutex<Shared>, root: &str, task: &PodTask) -> bool {
    let info = &task.task;
    let name = info.task_id.value.clone();
    let command = info.command.as_ref().map(twin);
    let container = info.container.as_ref().map(twin);
    let mut restarts = 0u32;
    loop {
        if lock(shared).stopping {
            report(
                &name,
                "TASK_KILLED",
                None,
                serde_json::json!({"message": "the pod is stopping"}),
            );
            return false;
        }
        let child = format!("{root}.{}", uuid::Uuid::new_v4());
        let reply = match client.launch_nested(&child, command.clone(), container.clone()) {
            Ok(r) => r,
            Err(e) => {
                report(
                    &name,
                    "TASK_FAILED",
                    None,
                    serde_json::json!({"message": format!("{e:#}")}),
                );
                return false;
            }
        };
        if reply.status != 200 {
            let message = format!("launch refused: {} {}", reply.status, reply.body);
            report(
                &name,
                "TASK_FAILED",
                Some(&child),
                serde_json::json!({"message": message}),
            );
            if !task.transient() {
                stop_pod(client, shared, &name);
            }
            return false;
        }
        lock(shared).running.push((name.clone(), child.clone()));
        report(
            &name,
            "TASK_RUNNING",
            Some(&child),
            serde_json::json!({"restarts": restarts}),
        );
        let status = wait_surviving_restarts(client, &child);
        lock(shared).running.retain(|(_, c)| *c != child);
        let exit = Exit::from_raw(status);
        let killed = matches!(exit, Exit::Signal(s) if s == libc::SIGKILL || s == libc::SIGTERM);
        let stopping = lock(shared).stopping;
        let decision = if killed || stopping {
            Decision::Failed
        } else {
            decide(task.restart_policy.as_ref(), exit, restarts)
        };
        let detail = serde_json::json!({"exit_status": status, "message": exit.to_string(), "restarts": restarts});
        match decision {
            Decision::Restart { delay, attempt } => {
                report(&name, "TASK_RESTARTING", Some(&child), detail);
                restarts = attempt;
                std::thread::sleep(delay);
            }
            Decision::Finished => {
                report(&name, "TASK_FINISHED", Some(&child), detail);
                return true;
            }
            Decision::Failed => {
                let state = if killed || stopping {
                    "TASK_KILLED"
                } else {
                    "TASK_FAILED"
                };
                report(&name, state, Some(&child), detail);
                if ends_pod(task, &decision) && !stopping {
                    stop_pod(client, shared, &name);
                }
                return task.transient() && !killed;
            }
        }
    }
}
