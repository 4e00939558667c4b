//! The whole agent path (issue 29), side by side in one run (root; real
//! processes, cgroups and namespaces):
//!
//! * `unshare`: `unshare --pid --fork --mount --uts --ipc /bin/true`, the
//!   reference every launch figure is held against.
//! * `bare_launch`: what the agent does for a container, without the agent:
//!   the loaded `libnestguard.so`'s isolator module (its default isolation:
//!   cgroups, namespaces, filesystem, hardening) prepares, the launcher
//!   launches `true` as a top-level container, the isolators isolate and
//!   watch it, its exit is seen, the launcher destroys it and the isolators
//!   clean up. The same calls in the same order as the agent's
//!   `LAUNCH_CONTAINER` → reaper → `WAIT_CONTAINER`.
//! * `agent_launch_wait`: a `nestguard agent` process with the authorizer,
//!   the isolator module (same parameters) and the credential hook, a client
//!   over loopback with HTTP Basic credentials: `LAUNCH_CONTAINER` of `true`
//!   then `WAIT_CONTAINER`, which answers once the container is destroyed
//!   (Mesos' semantics). The `REMOVE_CONTAINER` that follows is not timed.
//!
//! Issue 29 holds `agent_launch_wait` to 3× `unshare` and 2× `bare_launch`.
//!
//! Run (as root): `cargo bench -p nestguard-harness --bench agent_path`.
//! Everything lives in a temporary directory and a cgroup root of its own
//! (`nestguard-agent-bench-<pid>`), removed at the end.

#![allow(
    clippy::disallowed_macros,
    reason = "a benchmark: its report is what it prints"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use criterion::{Criterion, criterion_group, criterion_main};
use nestguard::isolation::cgroups::{Cgroups, CgroupsConfig};
use nestguard::proto::mesos::{self, CommandInfo, ContainerId, slave};
use nestguard_harness::cli::modules::{Abi, Isolator, Launcher};
use serde_json::json;

const OPS: (&str, &str) = ("ops", "agent-bench-secret");

const ACLS: &str = r#"{"permissive": false,
  "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]}"#;

/// The bench's files and cgroup root; dropping it stops the agent and
/// removes both, whatever happened.
struct Setup {
    dir: tempfile::TempDir,
    /// `<root>-agent` is the agent's, `<root>-bare` the bare launch's: a
    /// root has one owner at a time.
    cgroups_root: String,
    agent: Option<Child>,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-agent-bench-")
            .tempdir()
            .unwrap();
        let setup = Setup {
            dir,
            cgroups_root: format!("nestguard-agent-bench-{}", std::process::id()),
            agent: None,
        };
        let private = |name: &str, text: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = setup.dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        };
        private("acls.json", ACLS);
        private(
            "credentials.json",
            &json!({"credentials": [{"principal": OPS.0, "secret": OPS.1}]}).to_string(),
        );
        private("jwt.key", "agent-bench-signing-key-0123456789ab");
        let manifest = json!({"libraries": [{"file": library(), "modules": [
            {"name": "io_nestguard_Authorizer", "parameters": [
                {"key": "acls", "value": setup.path("acls.json")}]},
            {"name": "io_nestguard_Isolator", "parameters": setup.isolator_parameters("agent")
                .iter().map(|p| json!({"key": p.key, "value": p.value})).collect::<Vec<_>>()},
            {"name": "io_nestguard_CredentialHook"}]}]});
        private("modules.json", &manifest.to_string());
        setup
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The isolator module's parameters, the agent's and the bare launch's
    /// (each with a cgroup root of its own).
    fn isolator_parameters(&self, owner: &str) -> Vec<mesos::Parameter> {
        [
            ("cgroups_root", format!("{}-{owner}", self.cgroups_root)),
            (
                "credentials_jwt_key",
                self.path("jwt.key").to_string_lossy().into_owned(),
            ),
        ]
        .into_iter()
        .map(|(key, value)| mesos::Parameter {
            key: key.into(),
            value,
        })
        .collect()
    }

    /// Starts the agent; returns its address once it serves.
    fn start_agent(&mut self) -> String {
        let log = std::fs::File::create(self.path("agent.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_nestguard"))
            .arg("agent")
            .arg(format!("--work_dir={}", self.path("work").display()))
            .arg(format!("--modules={}", self.path("modules.json").display()))
            .arg("--authorizer=io_nestguard_Authorizer")
            .arg("--hooks=io_nestguard_CredentialHook")
            .arg("--isolation=io_nestguard_Isolator")
            .arg(format!(
                "--http_credentials={}",
                self.path("credentials.json").display()
            ))
            .arg(format!(
                "--jwt_secret_key={}",
                self.path("jwt.key").display()
            ))
            .arg("--authenticate_http_readwrite")
            // 100 launches and their WAITs at once from one principal (the
            // concurrent round); the default (64) is a fairness cap between
            // tenants, answered with 429 beyond it.
            .arg("--max_requests_per_principal=128")
            .arg("--port=0")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        self.agent = Some(child);
        line.split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| {
                let log = std::fs::read_to_string(self.path("agent.log")).unwrap_or_default();
                panic!("the agent did not start: {line:?}\n{log}")
            })
            .trim_end_matches('/')
            .to_owned()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(mut child) = self.agent.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for owner in ["agent", "bare"] {
            let root = format!("{}-{owner}", self.cgroups_root);
            let config = CgroupsConfig {
                cgroups_root: root.clone().into(),
                ..CgroupsConfig::default()
            };
            if let Err(e) = Cgroups::new(config).and_then(|c| c.destroy_all()) {
                eprintln!("agent_path: removing cgroup root {root}: {e}");
            }
        }
    }
}

/// `libnestguard.so` beside the bench executable (`target/<profile>/deps`).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().join("libnestguard.so")
}

/// The loaded modules, as the agent creates them.
struct Bare {
    isolator: Isolator,
    launcher: Launcher,
    sandboxes: PathBuf,
}

impl Bare {
    fn new(setup: &Setup) -> Bare {
        let abi = Abi::load(&library()).unwrap();
        let isolator = Isolator::create(&abi, &setup.isolator_parameters("bare")).unwrap();
        let helper = Path::new(env!("CARGO_BIN_EXE_nestguard")).with_file_name("nestguard-launch");
        let runtime = setup.path("bare-runtime");
        let launcher =
            Launcher::create(&abi, &runtime, Some(&helper), false, false, Some(&isolator)).unwrap();
        let sandboxes = setup.path("bare-sandboxes");
        std::fs::create_dir_all(&sandboxes).unwrap();
        Bare {
            isolator,
            launcher,
            sandboxes,
        }
    }

    /// Prepare, launch, isolate, watch, exit seen, destroy, clean up.
    fn run_true(&self, n: u64) {
        self.run_true_timed(n, &mut |_| {});
    }

    /// [`Bare::run_true`], calling `mark` with each step's name as it ends.
    fn run_true_timed(&self, n: u64, mark: &mut dyn FnMut(&'static str)) {
        let id = ContainerId {
            value: format!("bare-{n}"),
            parent: None,
        };
        let sandbox = self.sandboxes.join(&id.value);
        std::fs::create_dir_all(&sandbox).unwrap();
        mark("sandbox created");
        let config = slave::ContainerConfig {
            directory: sandbox.to_string_lossy().into_owned(),
            command_info: true_command(),
            container_class: Some(slave::ContainerClass::Default as i32),
            ..Default::default()
        };
        let prepared = self.isolator.prepare(&id, &config).unwrap();
        mark("isolators prepare (cgroups created)");
        let info = slave::ContainerLaunchInfo {
            command: Some(true_command()),
            working_directory: Some(config.directory.clone()),
            ..prepared.unwrap_or_default()
        };
        let pid = self
            .launcher
            .launch(&id, &info, None, &sandbox, None)
            .unwrap();
        mark("launcher launch (running)");
        self.isolator
            .isolate(&id, u32::try_from(pid).unwrap())
            .unwrap();
        let mut watch = self.isolator.watch(&id).unwrap();
        mark("isolators isolate and watch");
        assert_eq!(self.launcher.wait(&id, -1).unwrap(), Some(0));
        assert!(watch.poll(0).unwrap().is_none());
        mark("exit seen, limitations read");
        self.launcher.destroy(&id).unwrap();
        mark("launcher destroy (cgroups killed, removed)");
        self.isolator.cleanup(&id).unwrap();
        mark("isolators clean up");
        std::fs::remove_dir_all(&sandbox).unwrap();
        mark("sandbox removed");
    }
}

fn true_command() -> CommandInfo {
    CommandInfo {
        shell: Some(true),
        value: Some("true".into()),
        ..Default::default()
    }
}

/// The operator's client: one keep-alive connection over loopback.
struct Client {
    base: String,
    auth: String,
    http: ureq::Agent,
}

impl Client {
    fn new(base: String) -> Client {
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", OPS.0, OPS.1));
        Client {
            base,
            auth: format!("Basic {token}"),
            http: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(60)))
                .build()
                .into(),
        }
    }

    fn call(&self, call: &serde_json::Value) -> (u16, String) {
        let mut response = self
            .http
            .post(format!("{}/api/v1", self.base))
            .header("Authorization", &self.auth)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .send(call.to_string())
            .unwrap();
        let status = response.status().as_u16();
        (status, response.body_mut().read_to_string().unwrap())
    }

    /// LAUNCH_CONTAINER then WAIT_CONTAINER of `true`; returns the time.
    fn launch_wait(&self, n: u64) -> Duration {
        self.try_launch_wait(&format!("agent-{n}"))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Client::launch_wait`] of container `id`, or what went wrong.
    fn try_launch_wait(&self, id: &str) -> Result<Duration, String> {
        let id = json!({ "value": id });
        let started = Instant::now();
        let (status, body) = self.call(&json!({"type": "LAUNCH_CONTAINER",
            "launch_container": {"container_id": id, "command": {"value": "true"}}}));
        if status != 200 {
            return Err(format!("LAUNCH_CONTAINER {id}: {status} {body}"));
        }
        let (status, body) =
            self.call(&json!({"type": "WAIT_CONTAINER", "wait_container": {"container_id": id}}));
        let took = started.elapsed();
        if status != 200 || !body.contains("\"exit_status\":0") {
            return Err(format!("WAIT_CONTAINER {id}: {status} {body}"));
        }
        let (status, body) = self
            .call(&json!({"type": "REMOVE_CONTAINER", "remove_container": {"container_id": id}}));
        if status != 200 {
            return Err(format!("REMOVE_CONTAINER {id}: {status} {body}"));
        }
        Ok(took)
    }
}

fn agent_path(c: &mut Criterion) {
    if !nix::unistd::Uid::effective().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "agent_path needs root (cgroups, namespaces)"
        );
        eprintln!("agent_path: skipped, needs root");
        return;
    }
    let mut setup = Setup::new();
    let bare = Bare::new(&setup);
    let client = Client::new(setup.start_agent());
    let mut g = c.benchmark_group("agent_path");
    g.sample_size(30)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    g.bench_function("unshare", |b| b.iter(run_unshare));
    let mut n = 0u64;
    g.bench_function("bare_launch", |b| {
        b.iter(|| {
            n += 1;
            bare.run_true(n);
        })
    });
    g.bench_function("agent_launch_wait", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    n += 1;
                    client.launch_wait(n)
                })
                .sum()
        })
    });
    g.finish();
    print_interleaved(&bare, &client, &mut n);
    print_steps(&bare, &mut n);
    for round in 0..3 {
        print_concurrent(&client.base, round);
    }
    drop(bare);
    drop(setup);
}

fn run_unshare() {
    let ok = Command::new("unshare")
        .args(["--pid", "--fork", "--mount", "--uts", "--ipc", "/bin/true"])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// 100 rounds of one `unshare`, one bare launch and one agent launch in
/// turn: the medians and their ratios under the same conditions (a drift
/// of the machine between criterion's rows falls on all three alike).
fn print_interleaved(bare: &Bare, client: &Client, n: &mut u64) {
    let mut times: [Vec<Duration>; 3] = Default::default();
    for _ in 0..100 {
        *n += 1;
        let started = Instant::now();
        run_unshare();
        times[0].push(started.elapsed());
        let started = Instant::now();
        bare.run_true(*n);
        times[1].push(started.elapsed());
        times[2].push(client.launch_wait(*n));
    }
    let [unshare, bare, agent] = times.map(|mut t| {
        t.sort();
        t[t.len() / 2].as_secs_f64() * 1e3
    });
    println!(
        "agent_path interleaved (median of 100 each): unshare {unshare:.3} ms, bare launch {bare:.3} ms, agent {agent:.3} ms; agent / unshare {:.2}x, agent / bare {:.2}x",
        agent / unshare,
        agent / bare
    );
}

/// The median of each step of the bare launch over 100 runs: where its
/// time goes (the README's breakdown). Medians, not sums: a step's outliers
/// do not hide in another's.
fn print_steps(bare: &Bare, n: &mut u64) {
    let mut steps: Vec<(&'static str, Vec<Duration>)> = Vec::new();
    for _ in 0..100 {
        *n += 1;
        let mut last = Instant::now();
        let mut i = 0;
        bare.run_true_timed(*n, &mut |name| {
            let now = Instant::now();
            if steps.len() <= i {
                steps.push((name, Vec::new()));
            }
            steps[i].1.push(now - last);
            last = now;
            i += 1;
        });
    }
    println!("agent_path/bare_launch steps (median of 100):");
    for (name, mut times) in steps {
        times.sort();
        println!(
            "  {:>9.3} ms  {name}",
            times[times.len() / 2].as_secs_f64() * 1e3
        );
    }
}

/// How many launches the concurrent round starts at once.
const CONCURRENT: usize = 100;

/// [`CONCURRENT`] clients, each on its own connection, each launching one
/// container and waiting for it, all released at once: the median, p99 and
/// worst of their LAUNCH → WAIT times. Issue 29: none fails, p99 ≤ 10× the
/// median. Panics (failing the bench) if any call failed.
fn print_concurrent(base: &str, round: usize) {
    let barrier = std::sync::Barrier::new(CONCURRENT);
    let results: Vec<Result<Duration, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CONCURRENT)
            .map(|i| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let client = Client::new(base.to_owned());
                    barrier.wait();
                    client.try_launch_wait(&format!("concurrent-{round}-{i}"))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} launches failed: {failed:?}",
        failed.len()
    );
    let mut times: Vec<Duration> = results.into_iter().flatten().collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (median, p99) = (times[times.len() / 2], times[times.len() * 99 / 100]);
    println!(
        "agent_path/concurrent_{CONCURRENT} round {round}: none failed; median {:.1} ms, p99 {:.1} ms ({:.2}x the median), max {:.1} ms",
        ms(median),
        ms(p99),
        p99.as_secs_f64() / median.as_secs_f64(),
        ms(times[times.len() - 1])
    );
}

criterion_group!(benches, agent_path);
criterion_main!(benches);
