//! `nestguard demo`: the README's first command. Starts the simulated agent
//! with the ACLs in `acls/demo.json` and example credentials, runs a pod (an
//! app, a sidecar logger, a transient backup task and a flaky task with a
//! restart policy) sharing a directory of the executor's sandbox, shows a
//! call denied with 403 and the deciding ACL, kills the app, prints the
//! final statuses, and cleans up everything it made.
//!
//! The pod goes the way it goes under Mesos: the agent queues its task group
//! and starts nestguard's default executor, which subscribes to the v1
//! executor API, gets the tasks as LAUNCH_GROUP, and reports each state as
//! a status update that the demo (in the framework's role) acknowledges;
//! the app is killed by the framework's kill, a KILL event.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::client::{AgentClient, Credential};
use super::pod::{self, TaskEvent};
use crate::cli::out::errln;
use agent::{CgroupsRootGuard, DEMO_USERNS_BASE, start_agent};

mod agent;

const DEMO_ACLS: &str = include_str!("../../../acls/demo.json");

/// Set when stdout is closed (`nestguard demo | head`): printing stops and
/// the demo ends quietly at its next step, cleaning up as on any exit.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Set by SIGINT or SIGTERM: the demo ends at its next step, cleaning up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The agent's address and the pod, once launched: what the signal thread
/// destroys at once (so a follower waiting for the pod's end returns).
static LAUNCHED: Mutex<Option<(String, String)>> = Mutex::new(None);

/// Why the demo stopped early; both end it after its clean-up.
#[derive(Debug, thiserror::Error)]
enum Stopped {
    #[error("stdout closed")]
    StdoutClosed,
    #[error("interrupted by a signal; the pod and the agent were cleaned up")]
    Interrupted,
}

/// `println!` that never panics: a closed stdout is remembered and ends
/// the demo at its next [`checkpoint`].
macro_rules! say {
    ($($arg:tt)*) => {
        say_line(format_args!($($arg)*))
    };
}

fn say_line(args: std::fmt::Arguments<'_>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if written.is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Ends the demo (through `?`, so every guard cleans up) once stdout is
/// closed or a signal came.
fn checkpoint() -> anyhow::Result<()> {
    if INTERRUPTED.load(Ordering::Relaxed) {
        return Err(Stopped::Interrupted.into());
    }
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Err(Stopped::StdoutClosed.into());
    }
    Ok(())
}

/// SIGINT and SIGTERM are handled by one thread (tokio's handlers, which
/// `exec` resets: the agent and its containers get default dispositions
/// and no blocked signals): the first marks the demo interrupted and
/// destroys the pod at once, and the main thread then unwinds its guards;
/// a second ends the demo at once (the main thread may be blocked where it
/// cannot see the first).
fn watch_signals() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("a runtime for signals")?;
    let (mut int, mut term) = runtime
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .context("handling SIGINT and SIGTERM")?;
    std::thread::spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        });
        INTERRUPTED.store(true, Ordering::Relaxed);
        std::thread::spawn(move || {
            runtime.block_on(async {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            });
            std::process::exit(130);
        });
        let launched = LAUNCHED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some((address, pod_id)) = launched {
            let _ = pod::remove(&ops_client(&address), &pod_id);
        }
    });
    Ok(())
}

fn ops_client(address: &str) -> AgentClient {
    AgentClient::new(
        address,
        Credential::Basic {
            principal: "ops".into(),
            secret: "demo-ops-secret".into(),
        },
    )
}

/// Destroys the pod when the demo ends any other way than its last step
/// (an error, a panic, a closed stdout, a signal). Dropped before the
/// agent (declared after it): a stopped agent leaves its pods running for
/// recovery, as a Mesos agent does.
struct PodGuard {
    address: String,
    pod_id: Option<String>,
}

impl Drop for PodGuard {
    fn drop(&mut self) {
        if let Some(pod_id) = self.pod_id.take() {
            let _ = pod::remove(&ops_client(&self.address), &pod_id);
        }
    }
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn current_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            if is_root() {
                "root".into()
            } else {
                "nobody".into()
            }
        })
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

/// The demo pod: four tasks sharing `shared/`, a SANDBOX_PATH volume of the
/// executor's sandbox (the logger mounts it read-only). Without the isolator
/// (no root) there are no bind mounts, so the tasks reach the same directory
/// by its path, two levels up from their own sandboxes.
fn pod_spec(user: &str, volumes: bool) -> String {
    let shared = if volumes { "shared" } else { "../../shared" };
    let container = |mode: &str| {
        if volumes {
            serde_json::json!({"type": "MESOS", "volumes": [{"container_path": "shared", "mode": mode,
                "source": {"type": "SANDBOX_PATH", "sandbox_path": {"type": "PARENT", "path": "shared"}}}]})
        } else {
            serde_json::Value::Null
        }
    };
    let task = |name: &str, command: String, mode: &str| {
        let mut t = serde_json::json!({"name": name, "task_id": {"value": name}, "command": {"value": command}});
        if volumes {
            t["container"] = container(mode);
        }
        t
    };
    serde_json::json!({
        "framework": {"user": user, "name": "nestguard-demo", "id": {"value": "demo-framework"}, "principal": "ops"},
        "executor": {"executor_id": {"value": "demo-pod"}, "type": "DEFAULT", "framework_id": {"value": "demo-framework"}},
        "tasks": [
            {"task": task("app", format!("mkdir -p {shared}; i=0; while true; do i=$((i+1)); echo \"heartbeat $i\" >> {shared}/app.log; sleep 0.2; done"), "RW")},
            {"task": task("logger", format!("while [ ! -f {shared}/app.log ]; do sleep 0.1; done; exec tail -n +1 -f {shared}/app.log"), "RO")},
            {"task": task("backup", format!("sleep 1; cp {shared}/app.log {shared}/backup.log && echo \"backed up $(wc -l < {shared}/backup.log) lines\""), "RW"),
             "transient": true},
            {"task": task("flaky", format!("mkdir -p {shared}; n=$(cat {shared}/flaky.attempts 2>/dev/null || echo 0); echo $((n+1)) > {shared}/flaky.attempts; [ \"$n\" -ge 2 ]"), "RW"),
             "restart_policy": {"type": "ON_FAILURE", "max_restarts": 3, "min_restart_delay": {"nanoseconds": 200_000_000}}}
        ]
    })
    .to_string()
}

fn step(started: Instant, text: &str) -> anyhow::Result<()> {
    checkpoint()?;
    say!("[{:>6.2}s] == {text}", started.elapsed().as_secs_f64());
    checkpoint()
}

/// Runs the demo. A closed stdout ends it quietly (exit 0) and a signal
/// with 130; either way, as on an error or a panic, the pod is destroyed,
/// the agent stopped and the work directory and cgroups root removed.
/// `nestguard demo`'s options.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct DemoArgs {
    /// Run the pod in a user namespace of its own (the `namespaces/user`
    /// isolator): root inside is an unused host uid. Needs root.
    #[arg(long)]
    pub user_namespaces: bool,
}

pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    match demo(args) {
        Ok(code) => Ok(code),
        Err(e) => match e.downcast_ref::<Stopped>() {
            Some(Stopped::StdoutClosed) => Ok(ExitCode::SUCCESS),
            Some(Stopped::Interrupted) => {
                errln!("nestguard demo: {e}");
                Ok(ExitCode::from(130))
            }
            None => Err(e),
        },
    }
}

fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    watch_signals()?;
    let started = Instant::now();
    say!("nestguard demo: a pod through the simulated agent and the loaded libnestguard.so\n");
    announce_launcher();
    let dir = tempfile::Builder::new()
        .prefix("nestguard-demo-")
        .tempdir()
        .context("creating a temporary directory")?;
    let library = super::library::default_path()?;
    write_demo_files(dir.path())?;
    let log = dir.path().join("agent.log");
    let cgroups_root = is_root().then(|| format!("nestguard-demo-{}", std::process::id()));
    let _cgroups_root_guard = CgroupsRootGuard(cgroups_root.clone());
    if args.user_namespaces && cgroups_root.is_none() {
        bail!("--user-namespaces needs root (the Linux launcher)");
    }
    let agent = start_agent(
        dir.path(),
        &library,
        &log,
        cgroups_root.as_deref(),
        args.user_namespaces,
    )?;
    if cgroups_root.is_some() {
        say!(
            "isolation: io_nestguard_Isolator (nested cgroups, namespaces, sandbox volumes, hardening{})",
            if args.user_namespaces {
                format!(", the pod in a user namespace: root inside is host uid {DEMO_USERNS_BASE}")
            } else {
                String::new()
            }
        );
    }
    step(
        started,
        &format!(
            "agent up at {} with ACLs acls/demo.json, executor tokens on",
            agent.address
        ),
    )?;

    let ops = basic_client(&agent.address, "ops", "demo-ops-secret");
    let intruder = basic_client(&agent.address, "intruder", "demo-intruder-secret");
    let user = pod_user();
    checkpoint()?;
    let (pod_id, sandbox, mut pod_guard) =
        submit_pod(&ops, &agent.address, &user, cgroups_root.is_some())?;
    step(
        started,
        &format!(
            "pod {pod_id} launched by 'ops' (executor sandbox {})",
            sandbox.display()
        ),
    )?;

    let events: Arc<Mutex<Vec<TaskEvent>>> = Arc::default();
    let follower = spawn_follower(&agent.address, &pod_id, &sandbox, started, &events);
    let wait_until = |what: &str, cond: &dyn Fn() -> bool| wait_for(&log, what, cond);

    wait_until("the app to run", &|| container_of(&events, "app").is_some())?;
    let app = container_of(&events, "app").unwrap_or_default();
    std::thread::sleep(Duration::from_millis(500));
    step(
        started,
        "'intruder' (authenticated, but not in the ACLs) tries to kill the app",
    )?;
    intruder_kill_is_refused(&intruder, &app, &log)?;

    wait_until("the backup and the flaky task to finish", &|| {
        state_of(&events, "backup").as_deref() == Some("TASK_FINISHED")
            && state_of(&events, "flaky").as_deref() == Some("TASK_FINISHED")
    })?;
    step(
        started,
        "'ops' (the framework) kills the app: a KILL event to the executor; a non-transient task ending for good ends the pod",
    )?;
    framework_kills_the_app(&ops, &pod_id)?;

    let outcome = follower
        .join()
        .map_err(|_| anyhow::anyhow!("the follower thread panicked"))??;
    step(
        started,
        &format!(
            "pod ended; the executor {}",
            wait_status_text(outcome.exit_status)
        ),
    )?;
    report_outcome(&outcome, &sandbox);

    show_audit_and_metrics(&ops, &dir.path().join("audit.jsonl"))?;

    pod::remove(&ops, &pod_id)?;
    pod_guard.pod_id = None;
    drop(agent);
    drop(_cgroups_root_guard);
    let work: PathBuf = dir.path().to_path_buf();
    dir.close()
        .with_context(|| format!("removing {}", work.display()))?;
    step(
        started,
        "cleaned up: pod destroyed, agent stopped, work directory removed",
    )?;
    Ok(if ended_as_expected(&outcome) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Says which launcher the agent runs: the Linux one as root, else the
/// posix one.
fn announce_launcher() {
    if is_root() {
        say!("running as root: the Linux launcher (namespaces, supervised nested containers)");
    } else {
        say!(
            "not running as root: falling back to the posix launcher (plain processes, no namespaces or cgroups)"
        );
    }
}

/// The user the pod runs as: root when the demo runs as root, else the
/// user running it.
fn pod_user() -> String {
    if is_root() {
        "root".to_owned()
    } else {
        current_user()
    }
}

/// Submits the demo pod as 'ops'; the guard (and the signal handler)
/// destroy it if the demo stops early.
fn submit_pod(
    ops: &AgentClient,
    address: &str,
    user: &str,
    isolated: bool,
) -> anyhow::Result<(String, PathBuf, PodGuard)> {
    let (pod_id, sandbox) = pod::submit(ops, &pod_spec(user, isolated))?;
    let pod_guard = PodGuard {
        address: address.to_owned(),
        pod_id: Some(pod_id.clone()),
    };
    *LAUNCHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) =
        Some((address.to_owned(), pod_id.clone()));
    Ok((pod_id, sandbox, pod_guard))
}

/// The framework's kill of the app: accepted (202).
fn framework_kills_the_app(ops: &AgentClient, pod_id: &str) -> anyhow::Result<()> {
    let status = pod::kill_task(ops, pod_id, "app")?;
    say!("           -> HTTP {status}");
    if status != 202 {
        bail!("the framework's kill of the app was refused: {status}");
    }
    Ok(())
}

/// The demo's ACLs, credentials and executor-token key in `dir`.
fn write_demo_files(dir: &Path) -> anyhow::Result<()> {
    std::fs::write(dir.join("acls.json"), DEMO_ACLS)?;
    write_private(
        &dir.join("credentials.json"),
        r#"{"credentials":[{"principal":"ops","secret":"demo-ops-secret"},{"principal":"intruder","secret":"demo-intruder-secret"}]}"#,
    )?;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
    write_private(
        &dir.join("jwt.key"),
        &key.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    )?;
    Ok(())
}

/// A client of the agent authenticated with HTTP Basic.
fn basic_client(address: &str, principal: &str, secret: &str) -> AgentClient {
    AgentClient::new(
        address,
        Credential::Basic {
            principal: principal.into(),
            secret: secret.into(),
        },
    )
}

/// Follows the pod's task events as 'ops' on a thread of its own, printing
/// each and keeping them in `events`, until the pod ends.
fn spawn_follower(
    address: &str,
    pod_id: &str,
    sandbox: &Path,
    started: Instant,
    events: &Arc<Mutex<Vec<TaskEvent>>>,
) -> std::thread::JoinHandle<anyhow::Result<pod::PodOutcome>> {
    let seen = Arc::clone(events);
    let address = address.to_owned();
    let (pod_id, sandbox) = (pod_id.to_owned(), sandbox.to_path_buf());
    std::thread::spawn(move || {
        let client = basic_client(&address, "ops", "demo-ops-secret");
        pod::follow(
            &client,
            &pod_id,
            &sandbox,
            |e| {
                say!("{}", pod::describe(e, started));
                seen.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(e.clone());
            },
            || {},
        )
    })
}

/// The container of `task`'s latest TASK_RUNNING.
fn container_of(events: &Mutex<Vec<TaskEvent>>, task: &str) -> Option<String> {
    events
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .rev()
        .find(|e| e.task_id == task && e.state == "TASK_RUNNING")
        .and_then(|e| e.detail["container_id"].as_str().map(str::to_owned))
}

/// The latest state of `task`.
fn state_of(events: &Mutex<Vec<TaskEvent>>, task: &str) -> Option<String> {
    events
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .rev()
        .find(|e| e.task_id == task)
        .map(|e| e.state.clone())
}

/// Waits up to 30 s for `cond`, answering Ctrl-C and a closed stdout.
fn wait_for(log: &Path, what: &str, cond: &dyn Fn() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        checkpoint()?;
        if Instant::now() > deadline {
            bail!(
                "timed out waiting for {what} (agent log: {})",
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The intruder's kill of the app: 403, with the deciding entry from the
/// agent's decision log.
fn intruder_kill_is_refused(intruder: &AgentClient, app: &str, log: &Path) -> anyhow::Result<()> {
    let reply = intruder.kill_nested(app, libc::SIGKILL)?;
    say!(
        "           -> HTTP {} {}",
        reply.status,
        if reply.status == 403 { "Forbidden" } else { "" }
    );
    // The body is Mesos' neutral text; the deciding entry is in the
    // agent's decision log.
    if let Some(acl) = last_denial(log) {
        say!("           -> decided by {acl} (from the agent's decision log)");
    }
    if reply.status != 403 {
        bail!(
            "the intruder's kill was not refused: {} {}",
            reply.status,
            reply.body
        );
    }
    Ok(())
}

/// The executor API's count and the tasks' final states, and what the
/// transient task backed up in the shared volume.
fn report_outcome(outcome: &pod::PodOutcome, sandbox: &Path) {
    say!(
        "executor API: {} status updates from the executor acknowledged by the framework",
        outcome.acknowledged
    );
    say!("\nfinal task states:");
    for (task, state) in &outcome.final_states {
        say!("  {task:<8} {state}");
    }
    let backup = std::fs::read_to_string(sandbox.join("shared/backup.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0);
    say!("\nshared volume: app.log heartbeats backed up by the transient task: {backup} lines");
    if let Ok(meta) = std::fs::metadata(sandbox.join("shared/app.log")) {
        use std::os::unix::fs::MetadataExt;
        say!(
            "  app.log (written by root inside the pod) is owned on the host by uid {}",
            meta.uid()
        );
    }
}

/// Whether every task of the demo pod ended as it should.
fn ended_as_expected(outcome: &pod::PodOutcome) -> bool {
    let expected = [
        ("app", "TASK_KILLED"),
        ("backup", "TASK_FINISHED"),
        ("flaky", "TASK_FINISHED"),
        ("logger", "TASK_KILLED"),
    ];
    expected
        .iter()
        .all(|(t, s)| outcome.final_states.get(*t).map(String::as_str) == Some(*s))
}

/// The `acl` field of the last denial in the agent's decision log.
fn last_denial(log: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("nestguard::decision") && l.contains("decision=\"deny\""))?;
    let (_, acl) = line.split_once("acl=\"")?;
    Some(acl.split('"').next()?.to_owned())
}

/// A wait status (as WAIT answers it, e.g. 256) in words: "exited with
/// status 1", "was killed by signal 9 (SIGKILL)".
fn wait_status_text(status: Option<i64>) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    let Some(raw) = status else {
        return "ended with no exit status reported".to_owned();
    };
    let Ok(wait) = i32::try_from(raw) else {
        return format!("ended with wait status {raw}");
    };
    let status = std::process::ExitStatus::from_raw(wait);
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(n)) => match nix::sys::signal::Signal::try_from(n) {
            Ok(sig) => format!("was killed by signal {n} ({sig})"),
            Err(_) => format!("was killed by signal {n}"),
        },
        (None, None) => format!("ended with wait status {raw}"),
    }
}

/// The metrics the demo shows, in this order (Mesos' names).
const SHOWN_METRICS: &[&str] = &[
    "nestguard/authz/allowed",
    "nestguard/authz/denied",
    "nestguard/authz/kill_nested_container/denied",
    "nestguard/authz/decision_latency_ms/count",
    "nestguard/isolation/launches",
    "nestguard/isolation/launch_latency_ms/p50",
    "nestguard/isolation/containers_tracked",
];

/// Prints the audit log's record of the intruder's refused kill (and how
/// many records there are) and a few of the library's metrics.
fn show_audit_and_metrics(ops: &AgentClient, audit: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(audit)
        .with_context(|| format!("reading the audit log {}", audit.display()))?;
    let records: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let denied = records.iter().filter(|r| r["allowed"] == false).count();
    say!(
        "\naudit log (--audit_log): {} decisions recorded, {denied} denied; the intruder's kill:",
        records.len()
    );
    let kill = records
        .iter()
        .rev()
        .find(|r| r["allowed"] == false && r["action"] == "KILL_NESTED_CONTAINER");
    match kill {
        Some(record) => say!("  {record}"),
        None => bail!("the audit log has no record of the refused kill"),
    }
    let reply = ops.request("GET", "/metrics/snapshot")?;
    if reply.status != 200 {
        bail!("/metrics/snapshot answered {}", reply.status);
    }
    let metrics: serde_json::Value =
        serde_json::from_str(&reply.body).context("/metrics/snapshot is not JSON")?;
    say!("\nmetrics (/metrics/snapshot; Prometheus text at /metrics):");
    let decided = ["nestguard/authz/allowed", "nestguard/authz/denied"]
        .iter()
        .filter_map(|n| metrics[*n].as_f64())
        .sum::<f64>();
    for name in SHOWN_METRICS {
        if let Some(v) = metrics[*name].as_f64() {
            say!("  {name:<46} {v}{}", metric_note(name, decided));
        }
    }
    Ok(())
}

/// What a reader needs to read a metric right: decision latency is
/// sampled, so its count is of timed decisions, not of all.
fn metric_note(name: &str, decided: f64) -> String {
    if name.starts_with("nestguard/authz/decision_latency_ms/") {
        format!(
            "  (sampled: 1 decision in {} is timed, of {decided} decided)",
            nestguard::metrics::DECISION_SAMPLE_EVERY
        )
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::{metric_note, wait_status_text};

    #[test]
    fn wait_statuses_are_said_in_words() {
        assert_eq!(wait_status_text(Some(256)), "exited with status 1");
        assert_eq!(wait_status_text(Some(0)), "exited with status 0");
        assert_eq!(
            wait_status_text(Some(9)),
            "was killed by signal 9 (SIGKILL)"
        );
        assert_eq!(wait_status_text(None), "ended with no exit status reported");
    }

    #[test]
    fn sampled_latency_is_labelled_sampled() {
        let note = metric_note("nestguard/authz/decision_latency_ms/count", 20.0);
        assert_eq!(
            note,
            "  (sampled: 1 decision in 64 is timed, of 20 decided)"
        );
        assert_eq!(metric_note("nestguard/authz/allowed", 20.0), "");
    }
}
