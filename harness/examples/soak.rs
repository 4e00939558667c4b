//! The soak and crash campaign of issue 17 (item 3) and the memory figures
//! of item 5, driving a real `nestguard agent` over loopback HTTP. Run it
//! through `scripts/soak.sh`, which builds it, gives it its own work
//! directory, cgroup root and port, and cleans up after it.
//!
//! * `crash`: N rounds of a launch burst (standalone containers and pods,
//!   with containers nested two and three levels below them) with the agent
//!   killed by SIGKILL at a random moment, restarted on the same work
//!   directory, then every launch checked (acknowledged ones recovered with
//!   the right status, unanswered ones recovered, reported failed with a
//!   reason, or never started), orphans looked for, everything destroyed,
//!   and the host checked for leaked processes, cgroups, mounts, fds,
//!   zombies and checkpoint files.
//! * `sequential`: launch → wait → remove of `/bin/true` containers one
//!   after another, with the agent's RSS and fd count at start and end.
//! * `memory`: N idle containers; the agent's RSS per 1,000 containers and
//!   the memory of one container's helper processes (helper, supervisor).
//!
//! Deterministic given `--seed`: the plan of every round (kinds, depths,
//! commands, exit codes, start offsets and the moment of the kill) comes
//! from one seeded generator. What the kill interrupts still depends on
//! timing, so outcomes are classified, not replayed.
//!
//! The driver makes itself a child subreaper: processes the killed agent
//! leaves (its spare launch helper, helpers whose container is destroyed)
//! are reparented to it and reaped, as init would on a host (this machine's
//! pid 1 reaps nothing). Any zombie left below it is the project's.

#![allow(
    clippy::disallowed_macros,
    reason = "a measuring program: its report is what it prints"
)]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

/// The ACLs: the `ops` principal may do everything the campaign does.
const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "manage_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
}"#;
const OPS: (&str, &str) = ("ops", "soak-ops-secret");
/// A long-running command: running is its right status after a restart.
const LONG: &str = "sleep 600";
/// The cgroup separator of Mesos' layout (`<root>/<id>/mesos/<child>`).
const SEPARATOR: &str = "mesos";

#[derive(Debug, Parser)]
#[command(name = "soak")]
struct Cli {
    /// A directory of the driver's own (created; the agent's work dir and
    /// configuration go below it).
    #[arg(long)]
    work: PathBuf,
    /// The directory holding `nestguard`, `nestguard-launch` and
    /// `libnestguard.so`.
    #[arg(long)]
    bin: PathBuf,
    /// The agent's loopback port, the same on every restart (0: one that
    /// is free when the driver starts).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The cgroup root of the driver's agent (nobody else's).
    #[arg(long)]
    cgroups_root: String,
    /// Stop starting rounds or launches after this many seconds.
    #[arg(long, default_value_t = 540)]
    deadline_secs: u64,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Launch bursts with the agent SIGKILLed at a random moment.
    Crash {
        #[arg(long, default_value_t = 10)]
        rounds: u32,
        #[arg(long, default_value_t = 17)]
        seed: u64,
        /// Launch trees per round, launched concurrently.
        #[arg(long, default_value_t = 6)]
        units: usize,
        /// The kill comes at a random moment within this many ms of the
        /// burst's start; units start within the same window.
        #[arg(long, default_value_t = 600)]
        window_ms: u64,
    },
    /// Sequential launch → wait → remove, with RSS and fds at start and end.
    Sequential {
        #[arg(long, default_value_t = 10_000)]
        count: u32,
    },
    /// Idle containers: the agent's RSS per 1,000, one container's helpers.
    Memory {
        #[arg(long, default_value_t = 1_000)]
        containers: u32,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        eprintln!("soak: cannot become a child subreaper: {e}");
        return ExitCode::from(2);
    }
    let setup = match Setup::write(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let deadline = Instant::now() + Duration::from_secs(cli.deadline_secs);
    let ok = match cli.mode {
        Mode::Crash {
            rounds,
            seed,
            units,
            window_ms,
        } => crash(&setup, rounds, seed, units, window_ms, deadline),
        Mode::Sequential { count } => sequential(&setup, count, deadline),
        Mode::Memory { containers } => memory(&setup, containers, deadline),
    };
    match ok {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::from(2)
        }
    }
}

type Result<T> = std::result::Result<T, String>;

// ----- the agent -----------------------------------------------------------

/// The agent's configuration, written once.
struct Setup {
    work: PathBuf,
    agent_work: PathBuf,
    bin: PathBuf,
    port: u16,
    cgroups_root: String,
    log: PathBuf,
}

impl Setup {
    fn write(cli: &Cli) -> Result<Setup> {
        use std::os::unix::fs::PermissionsExt;
        let etc = cli.work.join("etc");
        std::fs::create_dir_all(&etc).map_err(|e| format!("{}: {e}", etc.display()))?;
        let private = |name: &str, text: &str| -> Result<PathBuf> {
            let p = etc.join(name);
            std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("{}: {e}", p.display()))?;
            Ok(p)
        };
        let acls = private("acls.json", ACLS)?;
        private(
            "credentials.json",
            &json!({"credentials": [{"principal": OPS.0, "secret": OPS.1}]}).to_string(),
        )?;
        let key = private("jwt.key", "soak-signing-key-0123456789abcdef")?;
        let manifest = json!({"libraries": [{"file": cli.bin.join("libnestguard.so"), "modules": [
            {"name": "io_nestguard_Authorizer", "parameters": [{"key": "acls", "value": acls}]},
            {"name": "io_nestguard_Isolator", "parameters": [
                {"key": "cgroups_root", "value": cli.cgroups_root},
                {"key": "credentials_jwt_key", "value": key}]},
            {"name": "io_nestguard_CredentialHook"}]}]});
        private("modules.json", &manifest.to_string())?;
        let port = match cli.port {
            0 => std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("finding a free port: {e}"))?
                .port(),
            p => p,
        };
        Ok(Setup {
            work: cli.work.clone(),
            agent_work: cli.work.join("agent"),
            bin: cli.bin.clone(),
            port,
            cgroups_root: cli.cgroups_root.clone(),
            log: cli.work.join("agent.log"),
        })
    }

    /// Starts the agent and waits until it serves (recovery done).
    fn start(&self) -> Result<AgentProc> {
        let etc = self.work.join("etc");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut child = Command::new(self.bin.join("nestguard"))
            .arg("agent")
            .arg(format!("--work_dir={}", self.agent_work.display()))
            .arg(format!("--modules={}", etc.join("modules.json").display()))
            .arg("--authorizer=io_nestguard_Authorizer")
            .arg("--hooks=io_nestguard_CredentialHook")
            .arg("--isolation=io_nestguard_Isolator")
            .arg(format!(
                "--http_credentials={}",
                etc.join("credentials.json").display()
            ))
            .arg(format!(
                "--jwt_secret_key={}",
                etc.join("jwt.key").display()
            ))
            .arg("--authenticate_http_readwrite")
            .arg(format!("--port={}", self.port))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting the agent: {e}"))?;
        let pid = Pid::from_raw(i32::try_from(child.id()).map_err(|e| e.to_string())?);
        // For scripts/soak.sh's clean-up, should the driver itself be killed.
        let _ = std::fs::write(self.work.join("agent.pid"), pid.to_string());
        let stdout = child.stdout.take().ok_or("no stdout")?;
        // The child is reaped by `reap`, never through `Child`.
        drop(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(180))
            .map_err(|_| "the agent did not serve within 180 s".to_owned())?;
        let Some(address) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
            let _ = kill(pid, Signal::SIGKILL);
            return Err(format!(
                "the agent did not start: {line:?}; see {}",
                self.log.display()
            ));
        };
        Ok(AgentProc {
            pid,
            client: Client::new(address),
        })
    }

    /// The hierarchy where every container has a cgroup of its own: the
    /// freezer (v1), else whichever has the root.
    fn container_cgroups(&self) -> Option<PathBuf> {
        let tops = self.cgroup_tops();
        tops.iter()
            .find(|t| t.parent().is_some_and(|p| p.ends_with("freezer")))
            .or(tops.first())
            .cloned()
    }

    /// The root's directory in every hierarchy where it exists.
    fn cgroup_tops(&self) -> Vec<PathBuf> {
        cgroup_tops_under(Path::new("/sys/fs/cgroup"), Path::new(&self.cgroups_root))
    }
}

/// `<mount>/<root>` (cgroup v2: the unified hierarchy is the mount
/// itself) and `<mount>/<controller>/<root>` (v1, and a hybrid host's
/// `unified`), where they exist.
fn cgroup_tops_under(mount: &Path, root: &Path) -> Vec<PathBuf> {
    let mut tops: Vec<PathBuf> = std::fs::read_dir(mount)
        .into_iter()
        .flatten()
        .flatten()
        .map(|c| c.path().join(root))
        .filter(|p| p.is_dir())
        .collect();
    let unified = mount.join(root);
    if unified.join("cgroup.controllers").is_file() {
        tops.insert(0, unified);
    }
    tops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pure_v2_root_is_found_at_the_mount_itself() {
        let mount = tempfile::tempdir().unwrap();
        let top = mount.path().join("soak-root");
        std::fs::create_dir_all(top.join("a/mesos/b")).unwrap();
        std::fs::write(top.join("cgroup.controllers"), "cpu memory pids").unwrap();
        assert_eq!(
            cgroup_tops_under(mount.path(), Path::new("soak-root")),
            [top]
        );

        let v1 = tempfile::tempdir().unwrap();
        let freezer = v1.path().join("freezer/soak-root");
        std::fs::create_dir_all(&freezer).unwrap();
        assert_eq!(
            cgroup_tops_under(v1.path(), Path::new("soak-root")),
            [freezer]
        );
    }
}

/// A running agent; SIGKILLed if still running when dropped.
struct AgentProc {
    pid: Pid,
    client: Client,
}

impl AgentProc {
    fn sigkill(&self) {
        let _ = kill(self.pid, Signal::SIGKILL);
        wait_exit(self.pid);
    }

    /// SIGTERM, the clean stop; true if it exited 0.
    fn stop(&self) -> bool {
        let _ = kill(self.pid, Signal::SIGTERM);
        matches!(wait_exit(self.pid), Some(WaitStatus::Exited(_, 0)))
    }

    fn rss_kib(&self) -> u64 {
        status_field(self.pid.as_raw(), "VmRSS:").unwrap_or(0)
    }

    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    fn threads(&self) -> u64 {
        status_field(self.pid.as_raw(), "Threads:").unwrap_or(0)
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        if kill(self.pid, None).is_ok() {
            self.sigkill();
        }
    }
}

/// Exit statuses of children reaped while waiting for another.
static REAPED: Mutex<BTreeMap<i32, WaitStatus>> = Mutex::new(BTreeMap::new());

/// Reaps every child that has ended (ours and those reparented to us).
fn reap() {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(status) => {
                if let Some(pid) = status.pid() {
                    REAPED
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(pid.as_raw(), status);
                }
            }
        }
    }
}

/// Waits (60 s at most) for `pid`, a child, to end; its status.
fn wait_exit(pid: Pid) -> Option<WaitStatus> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        reap();
        if let Some(s) = REAPED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pid.as_raw())
        {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn status_field(pid: i32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

// ----- HTTP ------------------------------------------------------------------

#[derive(Clone)]
struct Client {
    base: String,
    auth: String,
    http: ureq::Agent,
}

/// An answer, or why there was none.
type Answer = std::result::Result<(u16, String), String>;

impl Client {
    fn new(address: &str) -> Client {
        use base64::Engine;
        // No pooled connections: an idle one would hold an fd in the agent
        // between requests and blur its fd count.
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .max_idle_connections(0)
            .build()
            .into();
        Client {
            base: address.trim_end_matches('/').to_owned(),
            auth: format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", OPS.0, OPS.1))
            ),
            http,
        }
    }

    fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let url = format!("{}{path}", self.base);
        let sent = match (method, body) {
            ("POST", Some(b)) => self
                .http
                .post(&url)
                .header("Authorization", &self.auth)
                .header("Content-Type", "application/json")
                .send(b.to_string()),
            ("DELETE", _) => self
                .http
                .delete(&url)
                .header("Authorization", &self.auth)
                .call(),
            _ => self
                .http
                .get(&url)
                .header("Authorization", &self.auth)
                .call(),
        };
        let mut response = sent.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("reading the answer: {e}"))?;
        Ok((status, text))
    }

    fn api(&self, call: &Value) -> Answer {
        self.send("POST", "/api/v1", Some(call))
    }

    /// Running containers (dotted ID → executor ID, if it is a pod's).
    fn running(&self) -> Result<BTreeMap<String, Option<String>>> {
        let (status, body) = self.api(&json!({"type": "GET_CONTAINERS",
            "get_containers": {"show_nested": true, "show_standalone": true}}))?;
        if status != 200 {
            return Err(format!("GET_CONTAINERS: {status} {body}"));
        }
        let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let mut out = BTreeMap::new();
        for c in v["get_containers"]["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            out.insert(
                dotted(&c["container_id"]),
                c["executor_id"]["value"].as_str().map(str::to_owned),
            );
        }
        Ok(out)
    }

    /// WAIT on `id` (dotted): the termination object, or None if unknown.
    fn wait(&self, id: &str) -> Result<Option<Value>> {
        let nested = id.contains('.');
        let (kind, field) = if nested {
            ("WAIT_NESTED_CONTAINER", "wait_nested_container")
        } else {
            ("WAIT_CONTAINER", "wait_container")
        };
        let (status, body) =
            self.api(&json!({"type": kind, field: {"container_id": container_id(id)}}))?;
        match status {
            200 => {
                let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
                Ok(Some(v[field].clone()))
            }
            404 => Ok(None),
            _ => Err(format!("{kind} {id}: {status} {body}")),
        }
    }

    fn kill_and_remove_standalone(&self, id: &str) {
        let id = container_id(id);
        let _ = self.api(&json!({"type": "KILL_CONTAINER",
            "kill_container": {"container_id": id}}));
        let _ = self.api(&json!({"type": "WAIT_CONTAINER",
            "wait_container": {"container_id": id}}));
        let _ = self.api(&json!({"type": "REMOVE_CONTAINER",
            "remove_container": {"container_id": id}}));
    }
}

/// `a.b.c` → `{"value": "c", "parent": {"value": "b", "parent": {"value": "a"}}}`.
fn container_id(dotted: &str) -> Value {
    let mut id: Option<Value> = None;
    for part in dotted.split('.') {
        id = Some(match id {
            None => json!({"value": part}),
            Some(parent) => json!({"value": part, "parent": parent}),
        });
    }
    id.unwrap_or(Value::Null)
}

fn dotted(id: &Value) -> String {
    let value = id["value"].as_str().unwrap_or("").to_owned();
    if id["parent"].is_object() {
        format!("{}.{value}", dotted(&id["parent"]))
    } else {
        value
    }
}

// ----- the host --------------------------------------------------------------

/// One process as /proc shows it.
struct Proc {
    pid: i32,
    ppid: i32,
    state: char,
    exe: String,
}

fn processes() -> HashMap<i32, Proc> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.insert(
            pid,
            Proc {
                pid,
                ppid,
                state,
                exe,
            },
        );
    }
    out
}

/// Whether `pid` descends from `ancestor` (not counting itself).
fn descends(procs: &HashMap<i32, Proc>, pid: i32, ancestor: i32) -> bool {
    let mut p = procs.get(&pid).map(|p| p.ppid);
    let mut hops = 0;
    while let Some(pp) = p {
        if pp == ancestor {
            return true;
        }
        if pp <= 1 || hops > 64 {
            return false;
        }
        hops += 1;
        p = procs.get(&pp).map(|p| p.ppid);
    }
    false
}

/// What the host holds of the driver's agent beyond the agent itself.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Leaks {
    processes: usize,
    zombies: usize,
    cgroups: usize,
    mounts: usize,
    /// Agent fds above the baseline.
    fds: usize,
    /// Checkpoint or sandbox entries of containers that are gone.
    files: usize,
}

impl Leaks {
    fn total(&self) -> usize {
        self.processes + self.zombies + self.cgroups + self.mounts + self.fds + self.files
    }

    fn add(&mut self, o: &Leaks) {
        self.processes += o.processes;
        self.zombies += o.zombies;
        self.cgroups += o.cgroups;
        self.mounts += o.mounts;
        self.fds += o.fds;
        self.files += o.files;
    }
}

impl std::fmt::Display for Leaks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "processes {}, zombies {}, cgroups {}, mounts {}, fds {}, files {}",
            self.processes, self.zombies, self.cgroups, self.mounts, self.fds, self.files
        )
    }
}

/// The host's state once every container is gone: nothing of ours may be
/// left but the agent and its one spare launch helper. `fd_baseline` is a
/// fresh agent's fd count. Polls for 15 s before it counts a leak
/// (destruction finishes asynchronously).
fn leaks(setup: &Setup, agent: Option<&AgentProc>, fd_baseline: usize) -> (Leaks, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        reap();
        let (found, details) = count_leaks(setup, agent, fd_baseline);
        if found.total() == 0 || Instant::now() > deadline {
            return (found, details);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn count_leaks(
    setup: &Setup,
    agent: Option<&AgentProc>,
    fd_baseline: usize,
) -> (Leaks, Vec<String>) {
    let mut l = Leaks::default();
    let mut details = Vec::new();
    let me = std::process::id() as i32;
    let agent_pid = agent.map(|a| a.pid.as_raw());
    let procs = processes();
    for p in procs.values() {
        if !descends(&procs, p.pid, me) || Some(p.pid) == agent_pid {
            continue;
        }
        if p.state == 'Z' {
            // The driver reaps its own children; a zombie below anyone
            // else is a parent that does not reap.
            if p.ppid != me {
                l.zombies += 1;
                details.push(format!("zombie {} (parent {})", p.pid, p.ppid));
            }
            continue;
        }
        let spare = Some(p.ppid) == agent_pid && p.exe.ends_with("/nestguard-launch");
        if !spare {
            l.processes += 1;
            details.push(format!("process {} {} (parent {})", p.pid, p.exe, p.ppid));
        }
    }
    for top in setup.cgroup_tops() {
        let dirs = tree(&top);
        // The root and its separator are the agent's (Mesos leaves them).
        for d in dirs.iter().skip(1) {
            if d.file_name().is_some_and(|n| n == SEPARATOR)
                && d.parent().is_some_and(|p| p.ends_with(&setup.cgroups_root))
            {
                continue;
            }
            l.cgroups += 1;
            details.push(format!("cgroup {}", d.display()));
        }
    }
    let work = setup.agent_work.to_string_lossy().into_owned();
    if let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in mountinfo.lines().filter(|l| l.contains(&work)) {
            l.mounts += 1;
            details.push(format!("mount {line}"));
        }
    }
    if let Some(a) = agent {
        let fds = a.fds();
        if fds > fd_baseline {
            l.fds = fds - fd_baseline;
            let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
            for e in std::fs::read_dir(format!("/proc/{}/fd", a.pid))
                .into_iter()
                .flatten()
                .flatten()
            {
                let target = std::fs::read_link(e.path())
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // `socket:[123]` → `socket`; paths as they are.
                let kind = target.split(":[").next().unwrap_or("").to_owned();
                *kinds.entry(kind).or_default() += 1;
            }
            details.push(format!(
                "agent fds {fds} (a fresh agent has {fd_baseline}): {kinds:?}"
            ));
        }
    }
    for dir in [
        "meta/standalone",
        "meta/launching",
        "meta/executors",
        "containers",
    ] {
        for name in entries(&setup.agent_work.join(dir)) {
            l.files += 1;
            details.push(format!("{dir}/{name}"));
        }
    }
    (l, details)
}

/// `top` and every directory below it, parents first.
fn tree(top: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![top.to_path_buf()];
    let mut i = 0;
    while let Some(dir) = dirs.get(i) {
        if let Ok(children) = std::fs::read_dir(dir) {
            let more: Vec<PathBuf> = children
                .flatten()
                .map(|c| c.path())
                .filter(|p| p.is_dir())
                .collect();
            dirs.extend(more);
        }
        i += 1;
    }
    dirs
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Processes in the cgroups of containers the agent does not list as
/// running: orphans recovery should have destroyed.
fn orphans(setup: &Setup, running: &BTreeMap<String, Option<String>>) -> Vec<String> {
    let mut out = Vec::new();
    let Some(top) = setup.container_cgroups() else {
        return out;
    };
    for d in tree(&top).iter().skip(1) {
        let Ok(rel) = d.strip_prefix(&top) else {
            continue;
        };
        let chain: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .filter(|c| c != SEPARATOR)
            .collect();
        if chain.is_empty() {
            continue;
        }
        let id = chain.join(".");
        let procs = std::fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
        let n = procs.lines().count();
        if n > 0 && !running.contains_key(&id) {
            out.push(id);
        }
    }
    out
}

// ----- crash -----------------------------------------------------------------

/// One planned launch.
#[derive(Debug, Clone)]
struct Planned {
    /// Dotted ID; a pod's root is `pod:<executor id>` until its ID is known.
    id: String,
    level: u8,
    pod: bool,
    /// None: long-running; Some(code): `exit code`.
    exit: Option<i32>,
}

#[derive(Debug, Clone)]
enum Outcome {
    NotSent,
    Acked,
    Refused(u16, String),
    Unanswered(String),
}

/// What a unit's launches came to, and its pod's container ID if any.
type UnitResult = (Vec<Outcome>, Option<String>);

/// A launch tree: a root (standalone container or pod) and up to two
/// levels of nested containers below it, launched in order.
#[derive(Debug, Clone)]
struct Unit {
    start_ms: u64,
    launches: Vec<Planned>,
}

fn plan(round: u32, seed: u64, units: usize, window_ms: u64) -> (Vec<Unit>, u64) {
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(seed ^ (u64::from(round) << 32));
    let mut out = Vec::new();
    for u in 0..units {
        let pod = rng.random_bool(0.4);
        let depth: u8 = rng.random_range(1..=3);
        let root = format!("soak-r{round}-u{u}");
        let mut launches = vec![Planned {
            id: root.clone(),
            level: 1,
            pod,
            exit: None,
        }];
        let mut parent = root;
        for level in 2..=depth {
            // A container with a child must run: only the last may exit.
            let exit = (level == depth && rng.random_bool(0.5)).then(|| rng.random_range(0..10));
            let id = format!("{parent}.l{level}");
            launches.push(Planned {
                id: id.clone(),
                level,
                pod,
                exit,
            });
            parent = id;
        }
        out.push(Unit {
            start_ms: rng.random_range(0..=window_ms / 2),
            launches,
        });
    }
    let kill_ms = rng.random_range(0..=window_ms);
    (out, kill_ms)
}

fn pod_spec(executor: &str) -> Value {
    json!({
        "framework": {"user": "root", "name": "soak", "id": {"value": "soak"}, "principal": OPS.0},
        "executor": {"executor_id": {"value": executor}, "type": "DEFAULT", "framework_id": {"value": "soak"}},
        "tasks": [{"task": {"name": "main", "task_id": {"value": "main"}, "agent_id": {"value": "soak"},
            "command": {"value": LONG}}}]
    })
}

/// Runs one unit's launches in order until one is not acknowledged.
/// Returns the outcome of each and the pod's container ID if it has one.
fn run_unit(client: &Client, unit: &Unit, started: Instant) -> UnitResult {
    let offset = Duration::from_millis(unit.start_ms);
    if let Some(wait) = offset.checked_sub(started.elapsed()) {
        std::thread::sleep(wait);
    }
    let mut outcomes = vec![Outcome::NotSent; unit.launches.len()];
    let mut pod_id: Option<String> = None;
    for (i, l) in unit.launches.iter().enumerate() {
        let command = match l.exit {
            Some(code) => format!("exit {code}"),
            None => LONG.to_owned(),
        };
        let answer = if l.level == 1 && l.pod {
            client
                .send("POST", "/nestguard/v1/pods", Some(&pod_spec(&l.id)))
                .inspect(|(status, body)| {
                    if *status == 200 {
                        pod_id = serde_json::from_str::<Value>(body)
                            .ok()
                            .and_then(|v| v["container_id"].as_str().map(str::to_owned));
                    }
                })
        } else if l.level == 1 {
            client.api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
                "container_id": container_id(&l.id), "command": {"value": command}}}))
        } else {
            // Below a pod, the root is the pod's container.
            let id = match &pod_id {
                Some(root) => l.id.replacen(&unit.launches[0].id, root, 1),
                None => l.id.clone(),
            };
            client.api(
                &json!({"type": "LAUNCH_NESTED_CONTAINER", "launch_nested_container": {
                "container_id": container_id(&id), "command": {"value": command}}}),
            )
        };
        outcomes[i] = match answer {
            Ok((200, _)) => Outcome::Acked,
            Ok((status, body)) => Outcome::Refused(status, body),
            Err(e) => Outcome::Unanswered(e),
        };
        if !matches!(outcomes[i], Outcome::Acked) {
            break;
        }
    }
    (outcomes, pod_id)
}

#[derive(Debug, Default)]
struct Tally {
    rounds: u32,
    launches: usize,
    acked: usize,
    exact: usize,
    lost: usize,
    inexact: usize,
    refused: usize,
    unanswered: usize,
    unanswered_recovered: usize,
    unanswered_failed_with_reason: usize,
    unanswered_never_started: usize,
    not_sent: usize,
    orphans: usize,
    leaks: Leaks,
}

fn crash(
    setup: &Setup,
    rounds: u32,
    seed: u64,
    units: usize,
    window_ms: u64,
    deadline: Instant,
) -> Result<bool> {
    let started = Instant::now();
    let mut agent = setup.start()?;
    reap();
    // The baseline is an agent that launched once: its spare launch helper
    // (two pipes) exists from the first launch on.
    warm_up(&agent.client)?;
    let fd_baseline = agent.fds();
    let (pre, details) = leaks(setup, Some(&agent), fd_baseline);
    if pre.total() > 0 {
        return Err(format!("not a clean start: {pre}: {details:?}"));
    }
    println!(
        "crash: seed {seed}, {units} launch trees a round, kill within {window_ms} ms; fresh agent: {fd_baseline} fds, {} KiB RSS",
        agent.rss_kib()
    );
    let mut t = Tally::default();
    for round in 0..rounds {
        if Instant::now() > deadline {
            println!("deadline reached after {round} rounds");
            break;
        }
        let (plan, kill_ms) = plan(round, seed, units, window_ms);
        let burst = Instant::now();
        let results: Arc<Mutex<Vec<UnitResult>>> =
            Arc::new(Mutex::new(vec![(Vec::new(), None); plan.len()]));
        let threads: Vec<_> = plan
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, unit)| {
                let client = agent.client.clone();
                let results = Arc::clone(&results);
                std::thread::spawn(move || {
                    let r = run_unit(&client, &unit, burst);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = r;
                })
            })
            .collect();
        if let Some(wait) = Duration::from_millis(kill_ms).checked_sub(burst.elapsed()) {
            std::thread::sleep(wait);
        }
        agent.sigkill();
        for th in threads {
            let _ = th.join();
        }
        drop(agent);
        agent = setup.start()?;
        let results = results.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let round_tally = check_round(setup, &agent, &plan, &results, fd_baseline)?;
        println!(
            "round {round}: kill at {kill_ms} ms; launches {}, acknowledged {} (exact {}), unanswered {} (recovered {}, failed with a reason {}, never started {}), refused {}, lost {}, inexact {}, orphans {}; leaks: {}",
            round_tally.launches,
            round_tally.acked,
            round_tally.exact,
            round_tally.unanswered,
            round_tally.unanswered_recovered,
            round_tally.unanswered_failed_with_reason,
            round_tally.unanswered_never_started,
            round_tally.refused,
            round_tally.lost,
            round_tally.inexact,
            round_tally.orphans,
            round_tally.leaks
        );
        t.rounds += 1;
        t.launches += round_tally.launches;
        t.acked += round_tally.acked;
        t.exact += round_tally.exact;
        t.lost += round_tally.lost;
        t.inexact += round_tally.inexact;
        t.refused += round_tally.refused;
        t.unanswered += round_tally.unanswered;
        t.unanswered_recovered += round_tally.unanswered_recovered;
        t.unanswered_failed_with_reason += round_tally.unanswered_failed_with_reason;
        t.unanswered_never_started += round_tally.unanswered_never_started;
        t.not_sent += round_tally.not_sent;
        t.orphans += round_tally.orphans;
        t.leaks.add(&round_tally.leaks);
    }
    let clean_stop = agent.stop();
    reap();
    let (after, details) = leaks(setup, None, 0);
    for d in &details {
        println!("  after the final stop: {d}");
    }
    t.leaks.add(&after);
    println!(
        "total: rounds {}, launches {} (acknowledged {}, unanswered {}, refused {}; {} not sent after the kill), \
         statuses exact {}/{}, unanswered: recovered {}, failed with a reason {}, never started {}; \
         containers lost {}, inexact {}, orphans {}; leaks: {}; clean stop {}; {:.0} s",
        t.rounds,
        t.launches,
        t.acked,
        t.unanswered,
        t.refused,
        t.not_sent,
        t.exact,
        t.acked,
        t.unanswered_recovered,
        t.unanswered_failed_with_reason,
        t.unanswered_never_started,
        t.lost,
        t.inexact,
        t.orphans,
        t.leaks,
        clean_stop,
        started.elapsed().as_secs_f64()
    );
    Ok(t.lost == 0
        && t.inexact == 0
        && t.refused == 0
        && t.orphans == 0
        && t.leaks.total() == 0
        && clean_stop)
}

/// Checks one round after the restart, then destroys everything.
fn check_round(
    setup: &Setup,
    agent: &AgentProc,
    plan: &[Unit],
    results: &[UnitResult],
    fd_baseline: usize,
) -> Result<Tally> {
    let client = &agent.client;
    let running = client.running()?;
    let mut t = Tally::default();
    let report = |what: String| println!("  {what}");
    for (unit, (outcomes, pod_id)) in plan.iter().zip(results) {
        // A pod's ID: from its answer, else found by its executor ID.
        let root = &unit.launches[0];
        let pod_root = pod_id.clone().or_else(|| {
            running
                .iter()
                .find(|(_, e)| e.as_deref() == Some(root.id.as_str()))
                .map(|(id, _)| id.clone())
        });
        for (l, outcome) in unit.launches.iter().zip(outcomes) {
            let id = match (&pod_root, l.pod) {
                (Some(r), true) => l.id.replacen(&root.id, r, 1),
                _ => l.id.clone(),
            };
            let known_id = !(l.pod && pod_root.is_none());
            match outcome {
                Outcome::NotSent => {
                    t.not_sent += 1;
                    continue;
                }
                Outcome::Refused(status, body) => {
                    t.launches += 1;
                    t.refused += 1;
                    report(format!("refused {id}: {status} {body}"));
                    continue;
                }
                _ => t.launches += 1,
            }
            let acked = matches!(outcome, Outcome::Acked);
            if acked {
                t.acked += 1;
            } else {
                t.unanswered += 1;
            }
            // A short command may be listed as running just after the
            // restart (its exit not reaped yet): WAIT answers for it.
            let is_running = known_id && running.contains_key(&id) && l.exit.is_none();
            let termination = if is_running || !known_id {
                None
            } else {
                client.wait(&id)?
            };
            let reason = termination
                .as_ref()
                .and_then(|w| w["reason"].as_str().map(str::to_owned));
            let status = termination.as_ref().and_then(|w| w["exit_status"].as_i64());
            let right = match l.exit {
                None => is_running,
                Some(code) => status == Some(i64::from(code) << 8) && reason.is_none(),
            };
            if acked {
                if right {
                    t.exact += 1;
                } else if termination.is_none() && !is_running {
                    t.lost += 1;
                    report(format!(
                        "lost {id} (acknowledged, unknown after the restart)"
                    ));
                } else {
                    t.inexact += 1;
                    report(format!(
                        "inexact {id}: expected {:?}, running {is_running}, termination {termination:?}",
                        l.exit
                    ));
                }
            } else if right {
                t.unanswered_recovered += 1;
            } else if reason.as_deref() == Some("REASON_CONTAINER_LAUNCH_FAILED") {
                t.unanswered_failed_with_reason += 1;
            } else if termination.is_none() && !is_running {
                t.unanswered_never_started += 1;
            } else {
                t.inexact += 1;
                let why = match outcome {
                    Outcome::Unanswered(e) => e.as_str(),
                    _ => "",
                };
                report(format!(
                    "inexact unanswered {id} ({why}): expected {:?}, running {is_running}, termination {termination:?}",
                    l.exit
                ));
            }
        }
    }
    // A launch in progress (the executor relaunching its tasks after the
    // restart) has processes before the agent lists it: an orphan is one
    // still unlisted, with processes, a few seconds later.
    let mut orphans = orphans(setup, &running);
    if !orphans.is_empty() {
        std::thread::sleep(Duration::from_secs(3));
        let later = client.running()?;
        let again = self::orphans(setup, &later);
        orphans.retain(|o| again.contains(o));
    }
    for o in &orphans {
        report(format!("orphan {o}"));
    }
    t.orphans = orphans.len();
    // Destroy everything: pods through the pod endpoint, standalone roots
    // by kill, wait and remove; then the round's planned roots, whatever
    // became of them (a cut-off launch may leave a sandbox to remove).
    for (id, executor) in &running {
        if id.contains('.') {
            continue;
        }
        if executor.is_some() {
            let _ = client.send("DELETE", &format!("/nestguard/v1/pods/{id}"), None);
        } else {
            client.kill_and_remove_standalone(id);
        }
    }
    for unit in plan {
        if !unit.launches[0].pod {
            client.kill_and_remove_standalone(&unit.launches[0].id);
        }
    }
    let gone = Instant::now() + Duration::from_secs(30);
    while !client.running()?.is_empty() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (leaked, details) = leaks(setup, Some(agent), fd_baseline);
    for d in details {
        report(format!("leak: {d}"));
    }
    t.leaks = leaked;
    Ok(t)
}

// ----- sequential --------------------------------------------------------------

/// One launch → wait → remove, then a pause for the agent to settle.
fn warm_up(client: &Client) -> Result<()> {
    let id = container_id("soak-warm-up");
    let (status, body) = client.api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
        "container_id": id, "command": {"value": "true"}}}))?;
    if status != 200 {
        return Err(format!("the warm-up launch: {status} {body}"));
    }
    client.wait("soak-warm-up")?;
    client.api(&json!({"type": "REMOVE_CONTAINER", "remove_container": {"container_id": id}}))?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

fn sequential(setup: &Setup, count: u32, deadline: Instant) -> Result<bool> {
    let agent = setup.start()?;
    reap();
    warm_up(&agent.client)?;
    let (fd0, rss0, threads0) = (agent.fds(), agent.rss_kib(), agent.threads());
    println!("sequential: start: agent RSS {rss0} KiB, {fd0} fds, {threads0} threads");
    let client = &agent.client;
    let started = Instant::now();
    let mut failures = 0u32;
    let mut done = 0u32;
    let mut warm = (rss0, fd0);
    for i in 0..count {
        if Instant::now() > deadline {
            println!("deadline reached after {i} launches");
            break;
        }
        let id = format!("seq-{i}");
        let cid = container_id(&id);
        let launched = client.api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": cid, "command": {"value": "true"}}}));
        let waited = client.wait(&id);
        let removed = client.api(&json!({"type": "REMOVE_CONTAINER",
            "remove_container": {"container_id": cid}}));
        let ok = matches!(launched, Ok((200, _)))
            && matches!(&waited, Ok(Some(w)) if w["exit_status"] == 0)
            && matches!(removed, Ok((200, _)));
        if !ok {
            failures += 1;
            if failures <= 5 {
                println!("  launch {i} failed: {launched:?} {waited:?} {removed:?}");
            }
        }
        done = i + 1;
        if done == 100 {
            warm = (agent.rss_kib(), agent.fds());
        }
        if done.is_multiple_of(1000) {
            println!(
                "  {done}: agent RSS {} KiB, {} fds, {} threads, {:.1} ms a launch",
                agent.rss_kib(),
                agent.fds(),
                agent.threads(),
                started.elapsed().as_secs_f64() * 1000.0 / f64::from(done)
            );
        }
    }
    reap();
    std::thread::sleep(Duration::from_millis(500));
    let (fd1, rss1, threads1) = (agent.fds(), agent.rss_kib(), agent.threads());
    let (leaked, details) = leaks(setup, Some(&agent), fd0);
    for d in &details {
        println!("  leak: {d}");
    }
    let runtime = entries(&setup.agent_work.join("run/containers")).len();
    println!(
        "sequential: {done} launches, {failures} failed, {:.1} ms a launch; agent RSS {rss0} KiB at start, {} KiB after 100, {rss1} KiB at the end; fds {fd0} / {} / {fd1}; threads {threads0} / {threads1}; runtime checkpoint dirs left {runtime}; leaks: {leaked}",
        started.elapsed().as_secs_f64() * 1000.0 / f64::from(done.max(1)),
        warm.0,
        warm.1
    );
    let clean = agent.stop();
    Ok(failures == 0 && leaked.total() == 0 && clean && fd1 <= fd0)
}

// ----- memory ----------------------------------------------------------------

/// `Pss:` and `Private_*:` of one process, in KiB.
fn pss_private(pid: i32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum()
    };
    (
        field("Pss:"),
        field("Private_Clean:") + field("Private_Dirty:"),
    )
}

fn memory(setup: &Setup, containers: u32, deadline: Instant) -> Result<bool> {
    let agent = setup.start()?;
    reap();
    std::thread::sleep(Duration::from_millis(500));
    let rss0 = agent.rss_kib();
    let client = &agent.client;
    let started = Instant::now();
    let mut launched = 0u32;
    for i in 0..containers {
        if Instant::now() > deadline {
            println!("deadline reached after {i} containers");
            break;
        }
        let (status, body) = client
            .api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": {"value": format!("mem-{i}")}, "command": {"value": "sleep 3600"}}}))?;
        if status != 200 {
            return Err(format!("launch mem-{i}: {status} {body}"));
        }
        launched += 1;
    }
    std::thread::sleep(Duration::from_secs(2));
    let rss1 = agent.rss_kib();
    let threads = agent.threads();
    println!(
        "memory: {launched} idle containers launched in {:.1} s; agent RSS {rss0} KiB before, {rss1} KiB after: {:.0} KiB per 1,000 containers; {threads} threads",
        started.elapsed().as_secs_f64(),
        (rss1.saturating_sub(rss0)) as f64 * 1000.0 / f64::from(launched.max(1))
    );
    // One idle container's processes: everything in its cgroup but the
    // command. The launch helper stays out of the cgroup and ends once the
    // container runs: every nestguard-launch below the driver is counted to
    // show what is left per container (the agent's spare helper is one).
    let procs = processes();
    let agent_pid = agent.pid.as_raw();
    let me = std::process::id() as i32;
    let launch_helpers = procs
        .values()
        .filter(|p| p.exe.ends_with("/nestguard-launch") && descends(&procs, p.pid, me))
        .count();
    let outside = procs
        .values()
        .filter(|p| p.exe.ends_with("/nestguard-launch") && p.ppid == agent_pid)
        .count();
    println!(
        "memory: {launch_helpers} nestguard-launch processes for {launched} containers ({outside} of them the agent's own children)"
    );
    let freezer = setup.container_cgroups().ok_or("no cgroup root")?;
    let mut helpers = (0u64, 0u64, 0u64);
    for sample in ["mem-0", "mem-1"] {
        let pids =
            std::fs::read_to_string(freezer.join(sample).join("cgroup.procs")).unwrap_or_default();
        let mut pids: Vec<i32> = pids
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .collect();
        // The launch helper, out of the cgroup: the supervisor's
        // nestguard-launch ancestors below the agent.
        let mut outside = Vec::new();
        for pid in &pids {
            let mut p = procs.get(pid).map(|p| p.ppid);
            while let Some(pp) = p.filter(|pp| *pp != agent_pid && *pp > 1) {
                let Some(parent) = procs.get(&pp) else { break };
                if parent.exe.ends_with("/nestguard-launch") && !pids.contains(&pp) {
                    outside.push(pp);
                }
                p = Some(parent.ppid);
            }
        }
        outside.sort_unstable();
        outside.dedup();
        pids.extend(outside);
        for pid in pids {
            let exe = procs.get(&pid).map(|p| p.exe.clone()).unwrap_or_default();
            let rss = status_field(pid, "VmRSS:").unwrap_or(0);
            let (pss, private) = pss_private(pid);
            let role = if exe.ends_with("/nestguard-launch") {
                "helper"
            } else {
                "command"
            };
            println!(
                "  {sample} pid {pid} {exe} ({role}): RSS {rss} KiB, PSS {pss} KiB, private {private} KiB"
            );
            if role == "helper" && sample == "mem-0" {
                helpers.0 += rss;
                helpers.1 += pss;
                helpers.2 += private;
            }
        }
    }
    println!(
        "memory: one idle container's helper processes: RSS {} KiB, PSS {} KiB, private {} KiB",
        helpers.0, helpers.1, helpers.2
    );
    for i in 0..launched {
        client.kill_and_remove_standalone(&format!("mem-{i}"));
    }
    let (leaked, details) = leaks(setup, Some(&agent), usize::MAX);
    for d in &details {
        println!("  leak: {d}");
    }
    let clean = agent.stop();
    Ok(leaked.total() == 0 && clean)
}
