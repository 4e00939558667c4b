//! `nestguard pod run FILE`: submits a pod (a `nestguard.PodSpec` in JSON) to
//! an agent, follows its tasks' states as the default executor reports them,
//! prints a summary and removes the pod. It plays the framework: it
//! acknowledges the executor's status updates, which lets the executor
//! finish (Mesos' default executor exits once its updates are acknowledged).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::client::{AgentClient, Credential};
use crate::cli::out::outln;

/// `pod` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PodCommand {
    /// Launch a pod and follow it to the end.
    Run {
        /// The pod spec (JSON `nestguard.PodSpec`: framework, executor, tasks).
        file: PathBuf,
        /// The agent's address.
        #[arg(long, default_value = "http://127.0.0.1:5051")]
        agent: String,
        /// Principal for HTTP Basic authentication.
        #[arg(long)]
        principal: Option<String>,
        /// File holding the principal's secret.
        #[arg(long)]
        secret_file: Option<PathBuf>,
        /// Leave the pod's containers and sandbox in place at the end.
        #[arg(long)]
        keep: bool,
    },
}

/// A task state change reported by the executor.
#[derive(Debug, Clone)]
pub struct TaskEvent {
    /// Task id.
    pub task_id: String,
    /// TASK_* name.
    pub state: String,
    /// The whole reported line.
    pub detail: serde_json::Value,
}

/// How a pod ended.
#[derive(Debug, Clone)]
pub struct PodOutcome {
    /// The executor's raw exit status.
    pub exit_status: Option<i64>,
    /// The last state of every task.
    pub final_states: BTreeMap<String, String>,
    /// The executor's status updates we acknowledged (as its framework).
    pub acknowledged: usize,
}

/// Kills one task of a pod as its framework does: the executor gets a
/// KILL event.
pub fn kill_task(client: &AgentClient, id: &str, task: &str) -> anyhow::Result<u16> {
    let body = serde_json::json!({ "task_id": task }).to_string();
    Ok(client
        .post(&format!("/nestguard/v1/pods/{id}/kill"), &body)?
        .status)
}

/// Submits a pod; returns its executor container id and sandbox.
pub fn submit(client: &AgentClient, spec_json: &str) -> anyhow::Result<(String, PathBuf)> {
    let reply = client.post("/nestguard/v1/pods", spec_json)?;
    if reply.status != 200 {
        bail!("the agent refused the pod: {} {}", reply.status, reply.body);
    }
    let v: serde_json::Value = serde_json::from_str(&reply.body).context("pod reply")?;
    let id = v["container_id"]
        .as_str()
        .context("pod reply has no container_id")?
        .to_owned();
    let status = client.request("GET", &format!("/nestguard/v1/pods/{id}"))?;
    let v: serde_json::Value = serde_json::from_str(&status.body).context("pod status")?;
    let sandbox = PathBuf::from(v["sandbox"].as_str().context("pod status has no sandbox")?);
    Ok((id, sandbox))
}

/// Follows the executor's stdout until the pod terminates, calling `on_event`
/// for each task state change (and `tick` between polls).
pub fn follow(
    client: &AgentClient,
    id: &str,
    sandbox: &Path,
    mut on_event: impl FnMut(&TaskEvent),
    mut tick: impl FnMut(),
) -> anyhow::Result<PodOutcome> {
    let stdout = sandbox.join("stdout");
    let mut offset = 0u64;
    let mut final_states = BTreeMap::new();
    let mut acknowledged = 0;
    let mut read_new = |final_states: &mut BTreeMap<String, String>| -> anyhow::Result<()> {
        let Ok(mut file) = std::fs::File::open(&stdout) else {
            return Ok(());
        };
        file.seek(SeekFrom::Start(offset))?;
        let mut reader = BufReader::new(file);
        let mut line = String::new();
        while reader.read_line(&mut line)? > 0 {
            if !line.ends_with('\n') {
                break; // a partial line: read it again next time
            }
            offset += line.len() as u64;
            if let Ok(detail) = serde_json::from_str::<serde_json::Value>(line.trim()) {
                let task_id = detail["task_id"].as_str().unwrap_or("?").to_owned();
                let state = detail["state"].as_str().unwrap_or("?").to_owned();
                final_states.insert(task_id.clone(), state.clone());
                on_event(&TaskEvent {
                    task_id,
                    state,
                    detail,
                });
            }
            line.clear();
        }
        Ok(())
    };
    loop {
        read_new(&mut final_states)?;
        acknowledged += acknowledge_updates(client, id)?;
        let status = client.request("GET", &format!("/nestguard/v1/pods/{id}"))?;
        let v: serde_json::Value = serde_json::from_str(&status.body).unwrap_or_default();
        if status.status != 200 || v["state"] == "TERMINATED" {
            read_new(&mut final_states)?;
            return Ok(PodOutcome {
                exit_status: v["exit_status"].as_i64(),
                final_states,
                acknowledged,
            });
        }
        tick();
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Acknowledges every status update of the pod the framework (us) has not
/// acknowledged yet.
pub fn acknowledge_updates(client: &AgentClient, id: &str) -> anyhow::Result<usize> {
    let reply = client.request("GET", &format!("/nestguard/v1/pods/{id}/updates"))?;
    if reply.status != 200 {
        return Ok(0);
    }
    let v: serde_json::Value = serde_json::from_str(&reply.body).context("pod updates")?;
    let mut acknowledged = 0;
    for update in v["updates"].as_array().into_iter().flatten() {
        let body = serde_json::json!({
            "task_id": update["task_id"]["value"],
            "uuid": update["uuid"],
        });
        let reply = client.post(
            &format!("/nestguard/v1/pods/{id}/acknowledge"),
            &body.to_string(),
        )?;
        if reply.status == 200 {
            acknowledged += 1;
        }
    }
    Ok(acknowledged)
}

/// Removes a pod (destroys its containers).
pub fn remove(client: &AgentClient, id: &str) -> anyhow::Result<()> {
    let reply = client.request("DELETE", &format!("/nestguard/v1/pods/{id}"))?;
    if reply.status != 200 && reply.status != 404 {
        bail!("removing pod {id}: {} {}", reply.status, reply.body);
    }
    Ok(())
}

/// One line for a task event.
pub fn describe(event: &TaskEvent, started: Instant) -> String {
    let d = &event.detail;
    let mut extra = String::new();
    if let Some(m) = d["message"].as_str() {
        extra.push_str(&format!(" ({m})"));
    }
    if let Some(r) = d["restarts"].as_u64().filter(|r| *r > 0) {
        extra.push_str(&format!(" [restarts: {r}]"));
    }
    format!(
        "[{:>6.2}s] {:<16} {:<10}{extra}",
        started.elapsed().as_secs_f64(),
        event.state,
        event.task_id
    )
}

/// Runs the `pod` command.
pub fn run(command: PodCommand) -> anyhow::Result<ExitCode> {
    let PodCommand::Run {
        file,
        agent,
        principal,
        secret_file,
        keep,
    } = command;
    let spec =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let credential = match (principal, secret_file) {
        (Some(principal), Some(path)) => {
            let secret = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Credential::Basic {
                principal,
                secret: secret.trim_end().to_owned(),
            }
        }
        (None, None) => Credential::None,
        _ => bail!("--principal and --secret-file go together"),
    };
    let client = AgentClient::new(&agent, credential);
    let (id, sandbox) = submit(&client, &spec)?;
    outln!("pod {id} launched; sandbox {}", sandbox.display());
    let started = Instant::now();
    let outcome = follow(
        &client,
        &id,
        &sandbox,
        |e| outln!("{}", describe(e, started)),
        || {},
    )?;
    outln!(
        "pod {id} ended (executor exit status {:?})",
        outcome.exit_status
    );
    for (task, state) in &outcome.final_states {
        outln!("  {task:<12} {state}");
    }
    if !keep {
        remove(&client, &id)?;
    }
    Ok(if outcome.exit_status == Some(0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
