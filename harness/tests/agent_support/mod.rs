//! A real `nestguard agent` process for end-to-end tests: temp work dir,
//! credentials, a JWT key, ACLs and a modules manifest pointing at the built
//! libnestguard.so. Dropping it kills the agent, destroys what it launched
//! and removes the directory, even when the test failed.

#![allow(dead_code, reason = "each test file uses a different part")]

use crate::common;
#[allow(unused_imports, reason = "not every test binary waits")]
pub use crate::common::wait_until;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const OPS: (&str, &str) = ("ops", "ops-secret-1");
pub const INTRUDER: (&str, &str) = ("intruder", "intruder-secret-1");

pub const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "get_endpoints": [{"principals": {"values": ["ops"]}, "paths": {"values": ["/metrics/snapshot"]}}],
  "kill_nested_containers": [
    {"principals": {"values": ["ops"]}, "users": {"type": "ANY"}},
    {"principals": {"type": "ANY"}, "users": {"type": "NONE"}}
  ],
  "manage_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
}"#;

/// True if we may run; see `common::root_or_skip`.
pub fn require_root() -> bool {
    common::root_or_skip("these tests")
}

/// `target/<profile>/deps/libnestguard.so` (where `cargo test` builds it).
pub fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().join("libnestguard.so")
}

pub struct TestAgent {
    pub dir: tempfile::TempDir,
    pub address: String,
    child: Option<Child>,
    cgroups_root: String,
    /// More agent flags, on every (re)start.
    extra_args: Vec<String>,
    /// More environment variables for the agent, from the next (re)start.
    pub extra_env: Vec<(String, String)>,
    /// A copy of the binaries other users can run (see
    /// [`TestAgent::start_with_public_binaries`]).
    public_bin: Option<tempfile::TempDir>,
}

impl TestAgent {
    pub fn start() -> TestAgent {
        TestAgent::start_with(&[])
    }

    /// [`TestAgent::start`] with more agent flags.
    pub fn start_with(extra_args: &[&str]) -> TestAgent {
        TestAgent::start_with_acls_and(ACLS, extra_args)
    }

    /// An agent whose authorizer reads `acls`.
    pub fn start_with_acls(acls: &str) -> TestAgent {
        TestAgent::start_with_acls_and(acls, &[])
    }

    /// An agent run from a copy of `nestguard` and `nestguard-launch` in a
    /// directory every user can traverse: its executors run as the
    /// framework's user and exec the agent's binary, which a checkout in a
    /// private directory (a CI clone under a 0700 temp dir) hides from them.
    pub fn start_with_public_binaries() -> TestAgent {
        TestAgent::start_public_with_acls(ACLS)
    }

    /// [`TestAgent::start_with_public_binaries`] whose authorizer reads `acls`.
    pub fn start_public_with_acls(acls: &str) -> TestAgent {
        let bin = tempfile::Builder::new()
            .prefix("nestguard-bin-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = Path::new(env!("CARGO_BIN_EXE_nestguard"));
        for name in ["nestguard", "nestguard-launch"] {
            let from = exe.with_file_name(name);
            let to = bin.path().join(name);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).unwrap();
            }
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        TestAgent::start_full(acls, &[], Some(bin))
    }

    /// An agent whose authorizer reads `acls`, with more agent flags.
    pub fn start_with_acls_and(acls: &str, extra_args: &[&str]) -> TestAgent {
        TestAgent::start_full(acls, extra_args, None)
    }

    fn start_full(
        acls: &str,
        extra_args: &[&str],
        public_bin: Option<tempfile::TempDir>,
    ) -> TestAgent {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-e2e-")
            .tempdir()
            .unwrap();
        std::fs::write(dir.path().join("acls.json"), acls).unwrap();
        let creds = format!(
            r#"{{"credentials":[{{"principal":"{}","secret":"{}"}},{{"principal":"{}","secret":"{}"}}]}}"#,
            OPS.0, OPS.1, INTRUDER.0, INTRUDER.1
        );
        write_private(&dir.path().join("credentials.json"), &creds);
        write_private(
            &dir.path().join("jwt.key"),
            "e2e-test-signing-key-0123456789abcdef",
        );
        let cgroups_root = format!("nestguard-e2e-{}-{}", std::process::id(), uuid_like());
        let manifest = serde_json::json!({"libraries": [{"file": library(), "modules": [
            {"name": "io_nestguard_Authorizer", "parameters": [{"key": "acls", "value": dir.path().join("acls.json")}]},
            {"name": "io_nestguard_Isolator", "parameters": [
                {"key": "cgroups_root", "value": cgroups_root},
                {"key": "credentials_jwt_key", "value": dir.path().join("jwt.key")}]},
            {"name": "io_nestguard_CredentialHook"}]}]});
        std::fs::write(dir.path().join("modules.json"), manifest.to_string()).unwrap();
        let mut agent = TestAgent {
            dir,
            address: String::new(),
            child: None,
            cgroups_root,
            extra_args: extra_args.iter().map(|a| (*a).to_owned()).collect(),
            extra_env: Vec::new(),
            public_bin,
        };
        agent.spawn();
        agent
    }

    /// Starts (or restarts) the agent process on the same directories.
    pub fn spawn(&mut self) {
        let (child, line) = spawn_logged(&mut self.command(), self.dir.path());
        // Kept before the address is checked: an agent that printed
        // something else is still stopped and reaped by `Drop`.
        self.child = Some(child);
        self.address = expect_address(&line, || self.log());
    }

    /// Restarts the agent, which must refuse to start (within 60 s);
    /// returns what it wrote to stderr.
    pub fn refused_restart(&mut self) -> String {
        refused_start(
            self.command().env("RUST_LOG", "info"),
            Duration::from_secs(60),
            "the agent neither served nor exited",
        )
    }

    /// The agent's command line on this agent's directories.
    fn command(&self) -> Command {
        // A restart keeps the port, as a Mesos agent's does: executors
        // reconnect to the address they were given.
        let port = self
            .address
            .rsplit_once(':')
            .map_or("0".to_owned(), |(_, p)| p.trim_end_matches('/').to_owned());
        let d = self.dir.path();
        let mut cmd = agent_command_at(
            &self
                .public_bin
                .as_ref()
                .map(|b| b.path().join("nestguard"))
                .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_nestguard"))),
        );
        cmd.arg(format!("--work_dir={}", d.join("work").display()))
            .arg(format!("--modules={}", d.join("modules.json").display()))
            .arg("--authorizer=io_nestguard_Authorizer")
            .arg("--hooks=io_nestguard_CredentialHook")
            .arg("--isolation=io_nestguard_Isolator")
            .arg(format!(
                "--http_credentials={}",
                d.join("credentials.json").display()
            ))
            .arg(format!("--jwt_secret_key={}", d.join("jwt.key").display()))
            // Executors then authenticate with their tokens too
            // (`--authenticate_http_executors` follows this flag unless a
            // test gives it).
            .arg("--authenticate_http_readwrite")
            .arg(format!("--port={port}"))
            .args(&self.extra_args)
            .envs(self.extra_env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// SIGKILLs the agent (containers keep running).
    pub fn sigkill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    /// Runs curl against the agent with `args` (method, headers, body) before
    /// the URL; returns (status, body).
    fn curl_with(&self, args: &[&str], path: &str) -> (u16, String) {
        let mut cmd = Command::new("curl");
        cmd.args(["-s", "--max-time", "120", "-o", "-", "-w", "\n%{http_code}"])
            .args(args);
        cmd.arg(format!("{}{path}", self.address));
        curl_output(cmd)
    }

    /// A JSON POST, optionally with HTTP Basic.
    pub fn curl(&self, auth: Option<(&str, &str)>, path: &str, body: &str) -> (u16, String) {
        let basic = auth.map(|(p, s)| format!("{p}:{s}"));
        let mut args = vec![
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            body,
        ];
        if let Some(b) = &basic {
            args.extend(["-u", b.as_str()]);
        }
        self.curl_with(&args, path)
    }

    /// A JSON POST with a bearer token.
    pub fn curl_bearer(&self, token: &str, path: &str, body: &str) -> (u16, String) {
        let bearer = format!("Authorization: Bearer {token}");
        let args = [
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-H",
            &bearer,
            "--data-binary",
            body,
        ];
        self.curl_with(&args, path)
    }

    /// A JSON POST through an HTTP client instead of curl (bodies too
    /// large for a command-line argument), with an `Authorization` header,
    /// bounded in time; returns (status, body).
    pub fn post_json(&self, path: &str, authorization: &str, body: &str) -> (u16, String) {
        let mut reply = http_client(Duration::from_secs(120))
            .post(format!("{}{path}", self.address))
            .header("Authorization", authorization)
            .header("Content-Type", "application/json")
            .send(body)
            .unwrap();
        let status = reply.status().as_u16();
        (
            status,
            reply.body_mut().read_to_string().unwrap_or_default(),
        )
    }

    /// A GET as ops.
    pub fn get(&self, path: &str) -> (u16, String) {
        self.curl_with(&["-u", &format!("{}:{}", OPS.0, OPS.1)], path)
    }

    /// `/metrics/snapshot` as ops.
    pub fn metrics(&self) -> serde_json::Value {
        let (status, body) = self.get("/metrics/snapshot");
        assert_eq!(status, 200, "/metrics/snapshot: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// A request without a body as `who`.
    pub fn curl_with_method(&self, who: (&str, &str), method: &str, path: &str) -> (u16, String) {
        self.curl_with(&["-X", method, "-u", &format!("{}:{}", who.0, who.1)], path)
    }

    /// A DELETE as ops.
    pub fn delete(&self, path: &str) -> (u16, String) {
        self.curl_with(
            &["-X", "DELETE", "-u", &format!("{}:{}", OPS.0, OPS.1)],
            path,
        )
    }

    /// Launches a pod; returns its executor container id and sandbox.
    pub fn launch_pod(&self, spec: &serde_json::Value) -> (String, PathBuf) {
        let (status, body) = self.curl(Some(OPS), "/nestguard/v1/pods", &spec.to_string());
        assert_eq!(status, 200, "pod launch: {body}\n{}", self.log());
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let id = v["container_id"].as_str().unwrap().to_owned();
        let (_, status) = self.get(&format!("/nestguard/v1/pods/{id}"));
        let v: serde_json::Value = serde_json::from_str(&status).unwrap();
        (id, PathBuf::from(v["sandbox"].as_str().unwrap()))
    }

    /// Waits until the executor reported `state` for `task`; returns that line.
    pub fn wait_task(&self, sandbox: &Path, task: &str, state: &str) -> serde_json::Value {
        wait_task_in(sandbox, task, state, || self.log())
    }
}

impl Drop for TestAgent {
    /// Runs on every exit of a test, a failed assertion included, so it
    /// never panics itself (a panic while unwinding aborts the test binary
    /// and leaves everything behind): every step is best effort, bounded.
    fn drop(&mut self) {
        // Destroy every pod and standalone container this agent knows,
        // then stop it.
        let work = self.dir.path().join("work/meta");
        if self.child.is_some() {
            let ops = format!("{}:{}", OPS.0, OPS.1);
            for id in dir_names(&work.join("executors")) {
                let url = format!("{}/nestguard/v1/pods/{id}", self.address);
                best_effort_curl(&["-X", "DELETE", "-u", &ops, &url]);
            }
            for id in dir_names(&work.join("standalone")) {
                let call = serde_json::json!({"type": "KILL_CONTAINER",
                    "kill_container": {"container_id": {"value": id}}});
                let url = format!("{}/api/v1", self.address);
                best_effort_curl(&[
                    "-X",
                    "POST",
                    "-u",
                    &ops,
                    "-H",
                    "Content-Type: application/json",
                    "--data-binary",
                    &call.to_string(),
                    &url,
                ]);
            }
        }
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c);
        }
        // The isolator removes container cgroups; the test's own root goes
        // here, with whatever still runs in it.
        remove_cgroup_tree(&self.cgroups_root);
    }
}

/// The names of the entries of `dir` (none if it cannot be read).
fn dir_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// curl with `args`, bounded in time; its outcome is ignored (clean-up).
fn best_effort_curl(args: &[&str]) {
    let _ = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "--max-time", "10"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Stops an agent as an operator would (SIGTERM: its containers live on
/// for recovery, the test's clean-up kills them), then SIGKILL if it has
/// not exited within 10 s; always reaps it. Never panics: for `Drop`.
pub fn stop_child(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// An HTTP client for the tests: statuses are values, and every call, its
/// body included, ends within `timeout` (a hung agent or an endless stream
/// fails the test instead of hanging it).
pub fn http_client(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build()
        .into()
}

fn curl_output(mut cmd: Command) -> (u16, String) {
    let out = cmd.output().expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

pub fn pod(tasks: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "framework": {"user": "root", "name": "e2e", "id": {"value": "e2e-framework"}, "principal": "ops"},
        "executor": {"executor_id": {"value": format!("e2e-{}", uuid_like())}, "type": "DEFAULT", "framework_id": {"value": "e2e-framework"}},
        "tasks": tasks
    })
}

pub fn task(name: &str, command: &str) -> serde_json::Value {
    serde_json::json!({"task": {"name": name, "task_id": {"value": name}, "agent_id": {"value": "e2e"}, "command": {"value": command}}})
}

fn uuid_like() -> String {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn nested(parent: &str, child: &str) -> serde_json::Value {
    serde_json::json!({"value": child, "parent": {"value": parent}})
}

/// The directories of a test's cgroup root that exist: `<mount>/<controller>/<root>`
/// in each v1 hierarchy, and `<mount>/<root>` on a cgroup v2-only host.
pub fn cgroup_tops(root: &str) -> Vec<std::path::PathBuf> {
    let mount = std::path::Path::new("/sys/fs/cgroup");
    let Ok(controllers) = std::fs::read_dir(mount) else {
        return Vec::new();
    };
    controllers
        .flatten()
        .map(|c| c.path().join(root))
        .chain(std::iter::once(mount.join(root)))
        .filter(|top| top.is_dir())
        .collect()
}

/// Removes `<mount>/<controller>/<root>` (and anything left below it) in every
/// hierarchy, deepest first. Only ever called with a test's own root name.
fn remove_cgroup_tree(root: &str) {
    assert!(root.starts_with("nestguard-e2e-"));
    remove_root_lock(root);
    for top in cgroup_tops(root) {
        let mut dirs = vec![top.clone()];
        let mut i = 0;
        while i < dirs.len() {
            if let Ok(children) = std::fs::read_dir(&dirs[i]) {
                dirs.extend(children.flatten().map(|c| c.path()).filter(|p| p.is_dir()));
            }
            i += 1;
        }
        // A container the agent left running (it does not stop containers
        // when it stops, as Mesos; a pod the fixture may not DELETE) dies
        // here, so its cgroups can go.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let mut alive = false;
            for dir in &dirs {
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    alive = true;
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            if !alive || std::time::Instant::now() > deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        for dir in dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Removes the lock file an agent that was killed (not stopped) left for
/// the test's cgroup root (`/run/nestguard/cgroups-roots/<escaped>.lock`).
pub fn remove_root_lock(root: &str) {
    assert!(root.starts_with("nestguard-e2e-"));
    let suffix = format!("%2F{root}.lock");
    let Ok(entries) = std::fs::read_dir("/run/nestguard/cgroups-roots") else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().ends_with(&suffix) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// `nestguard agent` (the built simulated agent), flags still to add.
pub fn agent_command() -> Command {
    agent_command_at(Path::new(env!("CARGO_BIN_EXE_nestguard")))
}

/// [`agent_command`] with the `nestguard` binary at `exe`.
pub fn agent_command_at(exe: &Path) -> Command {
    // The agent runs the launch helper from next to its own executable; it
    // is the root package's binary, which only a workspace build makes.
    let helper = exe.with_file_name("nestguard-launch");
    assert!(
        helper.exists(),
        "{} is missing: run the harness's tests with `cargo test --workspace`",
        helper.display()
    );
    let mut cmd = Command::new(exe);
    cmd.arg("agent");
    cmd
}

/// Starts `cmd` with its log appended to `dir/agent.log` and reads the first
/// line it prints; returns the child and that line (the address it serves
/// on, see [`served_address`], or nothing if it ended instead).
pub fn spawn_logged(cmd: &mut Command, dir: &Path) -> (Child, String) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("agent.log"))
        .unwrap();
    let mut child = cmd
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("start nestguard agent");
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    (child, line)
}

/// The `http://` address in the agent's first line, if it serves.
pub fn served_address(line: &str) -> Option<&str> {
    line.split_whitespace().find(|w| w.starts_with("http://"))
}

/// The address in the agent's first line; panics with `line` and the log
/// (`log`) if the agent did not start.
pub fn expect_address(line: &str, log: impl FnOnce() -> String) -> String {
    match served_address(line) {
        Some(address) => address.to_owned(),
        None => panic!("agent did not start: {line}\n{}", log()),
    }
}

/// Runs `cmd`, which must refuse to start: fails with `hang` if it is still
/// running after `timeout`, and asserts it exited unsuccessfully. Returns
/// what it wrote to stderr.
pub fn refused_start(cmd: &mut Command, timeout: Duration, hang: &str) -> String {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{hang}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "the agent started: {stderr}");
    stderr
}

/// Polls `found` every 50 ms until it returns a value; after `timeout`,
/// panics with what `failure` says (evaluated then, so it can read the
/// latest logs).
pub fn poll<T>(
    timeout: Duration,
    mut found: impl FnMut() -> Option<T>,
    failure: impl FnOnce() -> String,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = found() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("{}", failure());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the default executor in `sandbox` reported `state` for
/// `task`; returns that line. `log` is the agent's log, for the failure.
pub fn wait_task_in(
    sandbox: &Path,
    task: &str,
    state: &str,
    log: impl FnOnce() -> String,
) -> serde_json::Value {
    let stdout = sandbox.join("stdout");
    poll(
        Duration::from_secs(30),
        || {
            let text = std::fs::read_to_string(&stdout).unwrap_or_default();
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|v| v["task_id"] == task && v["state"] == state)
        },
        || {
            let text = std::fs::read_to_string(&stdout).unwrap_or_default();
            format!(
                "{task} never reached {state}; executor said:\n{text}\n{}",
                log()
            )
        },
    )
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}
