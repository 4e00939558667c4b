//! Recovery that is safe (issue 12, items 7–10), end to end against real
//! `nestguard agent` processes that load libnestguard.so: one agent per
//! cgroup root, damaged checkpoints that destroy nothing that runs, launches
//! cut off by a crash that end as failed launches, and no empty cgroups
//! left behind. Needs root (the Linux launcher, cgroups).

use crate::agent_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use agent_support::{
    agent_command, alive, library, pod, require_root, served_address, spawn_logged, task,
};
use nestguard::isolation::cgroups::owner;

/// Where the cgroup file systems are mounted on the test hosts.
const MOUNT_ROOT: &str = "/sys/fs/cgroup";

/// A cgroup root of the test's own, shared by the agents it starts; the
/// guard kills whatever is left in it and removes it (and its lock file).
pub(crate) struct CgroupRoot(String);

impl CgroupRoot {
    pub(crate) fn new(tag: &str) -> CgroupRoot {
        let mut b = [0u8; 4];
        getrandom::fill(&mut b).unwrap();
        let suffix: String = b.iter().map(|x| format!("{x:02x}")).collect();
        CgroupRoot(format!(
            "nestguard-secrec-{tag}-{}-{suffix}",
            std::process::id()
        ))
    }

    /// `<mount>/<controller>/<root>` (or `<mount>/unified/<root>`) that
    /// exist, and `<mount>/<root>` on a cgroup v2-only host.
    fn tops(&self) -> Vec<PathBuf> {
        let Ok(controllers) = std::fs::read_dir(MOUNT_ROOT) else {
            return Vec::new();
        };
        let unified = Path::new(MOUNT_ROOT).join(&self.0);
        controllers
            .flatten()
            .map(|c| c.path().join(&self.0))
            .chain(std::iter::once(unified))
            .filter(|p| p.is_dir())
            .collect()
    }

    /// Every directory below the root in every hierarchy, parents first.
    fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs = self.tops();
        let mut i = 0;
        while i < dirs.len() {
            if let Ok(children) = std::fs::read_dir(&dirs[i]) {
                dirs.extend(children.flatten().map(|c| c.path()).filter(|p| p.is_dir()));
            }
            i += 1;
        }
        dirs
    }
}

impl Drop for CgroupRoot {
    fn drop(&mut self) {
        assert!(self.0.starts_with("nestguard-secrec-"));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let dirs = self.dirs();
            let mut busy = false;
            for dir in &dirs {
                let pids = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    busy = true;
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                // A frozen v1 cgroup must thaw for its processes to die.
                let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
            }
            for dir in dirs.iter().rev() {
                let _ = std::fs::remove_dir(dir);
            }
            if (!busy && self.tops().is_empty()) || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(owner::lock_path(Path::new(MOUNT_ROOT), Path::new(&self.0)));
    }
}

/// A `nestguard agent` on a work dir of its own, with io_nestguard_Isolator
/// on `--cgroups_root`, no authentication and the local authorizer.
pub(crate) struct Agent {
    pub(crate) dir: tempfile::TempDir,
    cgroups_root: String,
    isolator_params: Vec<(String, String)>,
    address: String,
    child: Option<Child>,
}

impl Agent {
    pub(crate) fn new(root: &CgroupRoot, isolator_params: &[(&str, &str)]) -> Agent {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-secrec-")
            .tempdir()
            .unwrap();
        Agent {
            dir,
            cgroups_root: root.0.clone(),
            isolator_params: isolator_params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            address: String::new(),
            child: None,
        }
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    /// Starts the agent; `Err` carries its exit status and log if it ended
    /// instead of serving.
    fn try_spawn(&mut self) -> Result<(), (std::process::ExitStatus, String)> {
        let d = self.dir.path();
        let params: Vec<serde_json::Value> = self
            .isolator_params
            .iter()
            .map(|(k, v)| serde_json::json!({"key": k, "value": v}))
            .collect();
        let manifest = serde_json::json!({"libraries": [{"file": library(), "modules": [
            {"name": "io_nestguard_Isolator", "parameters": params}]}]});
        std::fs::write(d.join("modules.json"), manifest.to_string()).unwrap();
        let (mut child, line) = spawn_logged(
            agent_command()
                .arg(format!("--work_dir={}", self.work().display()))
                .arg(format!("--modules={}", d.join("modules.json").display()))
                .arg("--isolation=io_nestguard_Isolator")
                .arg(format!("--cgroups_root={}", self.cgroups_root))
                .arg("--port=0"),
            d,
        );
        match served_address(&line) {
            Some(address) => {
                self.address = address.to_owned();
                self.child = Some(child);
                Ok(())
            }
            None => {
                let status = child.wait().unwrap();
                Err((status, self.log()))
            }
        }
    }

    pub(crate) fn spawn(&mut self) {
        if let Err((status, log)) = self.try_spawn() {
            panic!("agent did not start ({status}):\n{log}");
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// SIGKILL: containers keep running.
    pub(crate) fn sigkill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, the clean stop; returns its exit status.
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut c = self.child.take()?;
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        c.wait().ok()
    }

    /// A JSON POST; (status, body). Bounded, so a WAIT that never answers
    /// fails the test instead of hanging it.
    fn post(&self, path: &str, body: &str) -> (u16, String) {
        let out = Command::new("curl")
            .args(["-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "20"])
            .args(["-X", "POST", "-H", "Content-Type: application/json"])
            .args(["--data-binary", body])
            .arg(format!("{}{path}", self.address))
            .output()
            .expect("run curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }

    fn api(&self, body: serde_json::Value) -> (u16, String) {
        self.post("/api/v1", &body.to_string())
    }

    pub(crate) fn launch_standalone(&self, id: &str, command: &str) {
        let (status, body) = self.api(serde_json::json!({"type": "LAUNCH_CONTAINER",
            "launch_container": {"container_id": {"value": id}, "command": {"value": command}}}));
        assert_eq!(status, 200, "launch {id}: {body}\n{}", self.log());
    }

    pub(crate) fn launch_nested(&self, parent: &str, child: &str, command: &str) {
        let (status, body) = self.api(serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER",
            "launch_nested_container": {"container_id": nested(parent, child), "command": {"value": command}}}));
        assert_eq!(
            status,
            200,
            "launch {parent}.{child}: {body}\n{}",
            self.log()
        );
    }

    fn wait_nested(&self, parent: &str, child: &str) -> (u16, String) {
        self.api(serde_json::json!({"type": "WAIT_NESTED_CONTAINER",
            "wait_nested_container": {"container_id": nested(parent, child)}}))
    }

    /// The supervisor pid the launcher checkpointed for a container.
    pub(crate) fn supervisor_pid(&self, chain: &[&str]) -> i32 {
        let mut path = self.work().join("run");
        for level in chain {
            path = path.join("containers").join(level);
        }
        let text = std::fs::read_to_string(path.join("pid")).unwrap();
        text.lines().next().unwrap().trim().parse().unwrap()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // Containers die with the test's cgroup root (its own guard).
        self.sigkill();
    }
}

fn nested(parent: &str, child: &str) -> serde_json::Value {
    serde_json::json!({"value": child, "parent": {"value": parent}})
}

/// Item 7: a second agent on the same cgroup root refuses to start, names
/// the owner, and kills nothing; once the owner stopped, it starts.
#[test]
fn second_agent_on_an_owned_cgroup_root_refuses_to_start() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("owner");
    let mut a = Agent::new(&root, &[]);
    a.spawn();
    a.launch_standalone("keeper", "sleep 600");
    let pid = a.supervisor_pid(&["keeper"]);
    assert!(alive(pid));

    let mut b = Agent::new(&root, &[]);
    let started = Instant::now();
    let (status, log) = b
        .try_spawn()
        .expect_err("a second agent on an owned root must not start");
    assert!(!status.success(), "{status}");
    let a_work = a.work().display().to_string();
    assert!(
        log.contains(&a_work),
        "the owner's work dir is named:\n{log}"
    );
    assert!(
        log.contains(&format!("pid {}", a.pid())),
        "the owner's pid is named:\n{log}"
    );
    assert!(log.contains(&root.0), "the root is named:\n{log}");
    // Nothing of A's was touched, now or a little later.
    std::thread::sleep(Duration::from_secs(2).saturating_sub(started.elapsed()));
    keeper_lives_on_then_owner_stops(&mut a, pid);
    let lock = owner::lock_path(Path::new(MOUNT_ROOT), Path::new(&root.0));
    assert!(!lock.exists(), "a clean stop removes the lock file");
    b.spawn();
}

/// Agent A's container "keeper" (supervised by `pid`) is alive and listed;
/// then the owner stops cleanly, its container dying first.
fn keeper_lives_on_then_owner_stops(a: &mut Agent, pid: i32) {
    assert!(alive(pid), "agent A's container was killed");
    let (status, body) = a.api(serde_json::json!({"type": "GET_CONTAINERS",
        "get_containers": {"show_standalone": true}}));
    assert_eq!(status, 200);
    assert!(body.contains("keeper"), "{body}");
    let (status, _) = a.api(serde_json::json!({"type": "KILL_CONTAINER",
        "kill_container": {"container_id": {"value": "keeper"}, "signal": 9}}));
    assert_eq!(status, 200);
    let (_, body) = a.api(serde_json::json!({"type": "WAIT_CONTAINER",
        "wait_container": {"container_id": {"value": "keeper"}}}));
    assert!(body.contains(r#""exit_status":9"#), "{body}");
    assert!(a.stop().is_some_and(|s| s.success()));
}

/// A second agent naming the same root differently (`<root>/`,
/// `<root>//`, `./<root>`, `<root>/.`) is refused too: the lock is keyed by
/// the normalized root, and spellings with `.`/`..` are rejected outright.
/// The first agent's container lives on.
#[test]
fn second_agent_with_another_spelling_of_the_root_is_refused() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("spell");
    let mut a = Agent::new(&root, &[]);
    a.spawn();
    a.launch_standalone("keeper", "sleep 600");
    let pid = a.supervisor_pid(&["keeper"]);
    for spelling in [
        format!("{}/", root.0),
        format!("{}//", root.0),
        format!("./{}", root.0),
        format!("{}/.", root.0),
        format!("x/../{}", root.0),
    ] {
        let mut b = Agent::new(&root, &[]);
        b.cgroups_root = spelling.clone();
        let (status, log) = b
            .try_spawn()
            .expect_err("a second agent on the same root must not start");
        assert!(!status.success(), "{spelling}: {status}");
        assert!(
            log.contains("owned by") || log.contains("expected a relative path"),
            "{spelling}: the refusal says why:\n{log}"
        );
    }
    keeper_lives_on_then_owner_stops(&mut a, pid);
}

/// Item 8: a truncated `executor.info` of a running pod destroys nothing:
/// the pod runs on, is listed, and a KILL ends it with a reason naming the
/// file.
#[test]
fn truncated_executor_info_keeps_the_pod_running() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("trunc");
    let mut agent = Agent::new(&root, &[]);
    agent.spawn();
    let (status, body) = agent.post(
        "/nestguard/v1/pods",
        &pod(serde_json::json!([task("app", "sleep 600")])).to_string(),
    );
    assert_eq!(status, 200, "{body}\n{}", agent.log());
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let pod_id = v["container_id"].as_str().unwrap().to_owned();
    // The task runs as a nested container of the executor's.
    let runtime = agent.work().join("run/containers").join(&pod_id);
    let task_id = agent_support::poll(
        Duration::from_secs(30),
        || {
            let found = std::fs::read_dir(runtime.join("containers"))
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|t| runtime.join("containers").join(t).join("pid").exists());
            // Launched, and the agent is done with the launch (no marker left).
            let launching = std::fs::read_dir(agent.work().join("meta/launching"))
                .map(|d| d.count())
                .unwrap_or(1);
            found.filter(|_| launching == 0)
        },
        || format!("task never started\n{}", agent.log()),
    );
    let executor_pid = agent.supervisor_pid(&[&pod_id]);
    let task_pid = agent.supervisor_pid(&[&pod_id, &task_id]);

    agent.sigkill();
    let info = agent
        .work()
        .join("meta/executors")
        .join(&pod_id)
        .join("executor.info");
    let bytes = std::fs::read(&info).unwrap();
    std::fs::write(&info, &bytes[..bytes.len() / 2]).unwrap();
    agent.spawn();

    // Absence cannot be polled for: give the agent time to act wrongly.
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        alive(executor_pid),
        "the pod's executor was destroyed\n{}",
        agent.log()
    );
    assert!(
        alive(task_pid),
        "the pod's task was destroyed\n{}",
        agent.log()
    );
    let log = agent.log();
    assert!(
        log.lines()
            .any(|l| l.contains("executor.info") && l.contains("ERROR")),
        "an error names the file:\n{log}"
    );
    let (status, body) = agent.api(serde_json::json!({"type": "GET_CONTAINERS",
        "get_containers": {"show_nested": true}}));
    assert_eq!(status, 200);
    assert!(body.contains(&pod_id), "the pod is listed: {body}");
    assert!(body.contains(&task_id), "its task is listed: {body}");

    // Destruction is an explicit KILL's.
    let (status, body) = agent.api(serde_json::json!({"type": "KILL_CONTAINER",
        "kill_container": {"container_id": {"value": pod_id}, "signal": 9}}));
    assert_eq!(status, 200, "{body}");
    let (status, body) = agent.api(serde_json::json!({"type": "WAIT_CONTAINER",
        "wait_container": {"container_id": {"value": pod_id}}}));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let w = &v["wait_container"];
    assert_eq!(w["reason"], "REASON_AGENT_RESTARTED", "{body}");
    assert!(
        w["message"]
            .as_str()
            .unwrap_or_default()
            .contains("executor.info"),
        "{body}"
    );
    assert_eq!(w["exit_status"], 9, "{body}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(task_pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(task_pid), "the pod's task outlived its pod");
}

/// Item 8: a garbage `termination` checkpoint does not make the container
/// vanish: WAIT answers with the recovery-failed reason and a message, and
/// the log names the file.
#[test]
fn garbage_termination_checkpoint_is_reported_not_lost() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("garbage");
    let mut agent = Agent::new(&root, &[]);
    agent.spawn();
    agent.launch_standalone("parent", "sleep 600");
    agent.launch_nested("parent", "quick", "exit 3");
    let (status, body) = agent.wait_nested("parent", "quick");
    assert_eq!(
        (status, body.contains(r#""exit_status":768"#)),
        (200, true),
        "{body}"
    );
    let termination = agent
        .work()
        .join("run/containers/parent/containers/quick/termination");
    assert!(termination.exists());

    agent.sigkill();
    std::fs::write(&termination, b"\xff\xff\xff\x7fgarbage").unwrap();
    agent.spawn();

    let (status, body) = agent.wait_nested("parent", "quick");
    assert_eq!(status, 200, "not 404: {body}\n{}", agent.log());
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let w = &v["wait_nested_container"];
    assert_eq!(w["reason"], "REASON_AGENT_RESTARTED", "{body}");
    assert!(
        w["message"]
            .as_str()
            .unwrap_or_default()
            .contains("termination"),
        "{body}"
    );
    let log = agent.log();
    let named = termination.display().to_string();
    assert!(
        log.lines()
            .any(|l| l.contains(&named) && l.contains("ERROR")),
        "the log names {named}:\n{log}"
    );
}

/// Item 9: launches a crash cut off end as failed launches with Mesos'
/// reason and a message, whether the container had started or not. The
/// on-disk state is the one a SIGKILL during a launch leaves: the launch
/// marker, with the launcher's checkpoints of a started container
/// ("started") or with nothing yet ("ghost").
#[test]
fn launch_cut_off_by_a_crash_ends_as_a_failed_launch() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("cutoff");
    let mut agent = Agent::new(&root, &[]);
    agent.spawn();
    agent.launch_standalone("parent", "sleep 600");
    agent.launch_nested("parent", "started", "sleep 600");
    let started_pid = agent.supervisor_pid(&["parent", "started"]);
    let parent_pid = agent.supervisor_pid(&["parent"]);
    agent.sigkill();
    let markers = agent.work().join("meta/launching");
    assert!(markers.is_dir(), "the agent keeps launch markers");
    assert_eq!(
        std::fs::read_dir(&markers).unwrap().count(),
        0,
        "finished launches leave no marker"
    );
    std::fs::write(markers.join("parent.started"), b"").unwrap();
    std::fs::write(markers.join("parent.ghost"), b"").unwrap();
    agent.spawn();

    for child in ["started", "ghost"] {
        let (status, body) = agent.wait_nested("parent", child);
        assert_eq!(status, 200, "{child}: {body}\n{}", agent.log());
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let w = &v["wait_nested_container"];
        assert_eq!(w["reason"], "REASON_CONTAINER_LAUNCH_FAILED", "{body}");
        assert_eq!(w["state"], "TASK_FAILED", "{body}");
        assert!(
            w["message"]
                .as_str()
                .unwrap_or_default()
                .contains("the agent stopped before the launch completed"),
            "{body}"
        );
    }
    assert!(!alive(started_pid), "a cut-off launch is destroyed");
    assert!(alive(parent_pid), "its parent's launch was complete");
    assert_eq!(std::fs::read_dir(&markers).unwrap().count(), 0);
}

/// Issue 17 (found by `scripts/soak.sh`): a SIGKILL at any point of a
/// launch leaves its marker, and recovery ends whatever that launch left as
/// a failed launch: a standalone launch cut off before its checkpoint was
/// written ("early": its sandbox only) or while it was ("half": the
/// checkpoint directory without its file), and a pod cut off while its
/// executor checkpoints were written ("cutpod"). Before, the half-written
/// checkpoints were kept as damage for ever, "early" was forgotten with its
/// sandbox, and WAIT answered 404 for all three.
#[test]
fn interrupted_checkpoints_under_a_marker_end_as_failed_launches() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("interrupted");
    let mut agent = Agent::new(&root, &[]);
    agent.spawn();
    agent.sigkill();
    let work = agent.work();
    let markers = work.join("meta/launching");
    for id in ["early", "half", "cutpod"] {
        std::fs::write(markers.join(id), b"").unwrap();
    }
    for id in ["early", "half"] {
        std::fs::create_dir_all(work.join("containers").join(id)).unwrap();
        std::fs::write(work.join("containers").join(id).join("stdout"), b"").unwrap();
    }
    std::fs::create_dir_all(work.join("meta/standalone/half")).unwrap();
    let pod_meta = work.join("meta/executors/cutpod");
    std::fs::create_dir_all(&pod_meta).unwrap();
    std::fs::write(pod_meta.join("framework.info"), b"").unwrap();
    agent.spawn();

    for id in ["early", "half", "cutpod"] {
        let (status, body) = agent.api(serde_json::json!({"type": "WAIT_CONTAINER",
            "wait_container": {"container_id": {"value": id}}}));
        assert_eq!(status, 200, "{id}: {body}\n{}", agent.log());
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let w = &v["wait_container"];
        assert_eq!(
            w["reason"], "REASON_CONTAINER_LAUNCH_FAILED",
            "{id}: {body}"
        );
        assert!(
            w["message"]
                .as_str()
                .unwrap_or_default()
                .contains("the agent stopped before the launch completed"),
            "{id}: {body}"
        );
    }
    assert!(!work.join("meta/standalone/half").exists());
    assert!(
        !pod_meta.exists(),
        "no executor is kept for a launch that never ran"
    );
    assert_eq!(std::fs::read_dir(&markers).unwrap().count(), 0);
    // The sandboxes go with REMOVE_CONTAINER, as any standalone one's.
    for id in ["early", "half"] {
        let (status, body) = agent.api(serde_json::json!({"type": "REMOVE_CONTAINER",
            "remove_container": {"container_id": {"value": id}}}));
        assert_eq!(status, 200, "{id}: {body}");
        assert!(!work.join("containers").join(id).exists(), "{id}'s sandbox");
    }
    let log = agent.log();
    assert!(
        !log.contains("left for inspection"),
        "an interrupted launch is no damage:\n{log}"
    );
}

/// The directories below the root (not the root itself) that hold neither
/// a process nor a subdirectory.
fn empty_cgroups(root: &CgroupRoot) -> Vec<PathBuf> {
    let tops = root.tops();
    root.dirs()
        .into_iter()
        .filter(|d| !tops.contains(d))
        .filter(|d| {
            let procs = std::fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
            let subdirs = std::fs::read_dir(d)
                .map(|e| e.flatten().any(|e| e.path().is_dir()))
                .unwrap_or(false);
            procs.trim().is_empty() && !subdirs
        })
        .collect()
}

fn kill_and_wait_nested(agent: &Agent, parent: &str, child: &str) {
    let (status, body) = agent.api(serde_json::json!({"type": "KILL_NESTED_CONTAINER",
        "kill_nested_container": {"container_id": nested(parent, child), "signal": 9}}));
    assert_eq!(status, 200, "{body}");
    let (status, body) = agent.wait_nested(parent, child);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""exit_status":9"#), "{body}");
}

fn separate_cgroups() -> serde_json::Value {
    serde_json::json!({"type": "MESOS", "linux_info": {"share_cgroups": false}})
}

/// Item 10: an agent that ends cleanly leaves no empty cgroup of a
/// container, nor an empty `mesos` separator of a running one — only the
/// root directories (as Mesos leaves `<hierarchy>/mesos`) and the cgroups
/// of containers that still run.
#[test]
fn clean_stop_leaves_no_empty_container_cgroups() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("empty");
    let mut agent = Agent::new(&root, &[]);
    agent.spawn();
    agent.launch_standalone("runner", "sleep 600");
    agent.launch_nested("runner", "sharing", "exit 0");
    let (status, body) = agent.api(serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER",
        "launch_nested_container": {"container_id": nested("runner", "own"),
            "command": {"value": "sleep 600"}, "container": separate_cgroups()}}));
    assert_eq!(status, 200, "{body}");
    let (status, body) = agent.wait_nested("runner", "sharing");
    assert_eq!(status, 200, "{body}");
    kill_and_wait_nested(&agent, "runner", "own");
    agent.launch_standalone("done", "exit 0");
    let (_, body) = agent.api(serde_json::json!({"type": "WAIT_CONTAINER",
        "wait_container": {"container_id": {"value": "done"}}}));
    assert!(body.contains(r#""exit_status":0"#), "{body}");
    assert!(agent.stop().is_some_and(|s| s.success()));

    assert!(!root.tops().is_empty(), "the running container has cgroups");
    let lock = owner::lock_path(Path::new(MOUNT_ROOT), Path::new(&root.0));
    assert!(
        !lock.exists(),
        "a clean stop removes the lock file, also while containers run"
    );
    let empty = empty_cgroups(&root);
    assert!(empty.is_empty(), "empty cgroups left: {empty:#?}");
}

/// Item 10: with `cgroups_skip_freezer=true` no freezer cgroup is created
/// at all (Mesos' launcher tracks processes in its own); containers, shared
/// cgroups or not, are still killed and their cgroups removed.
#[test]
fn skip_freezer_creates_no_freezer_cgroups() {
    if !require_root() {
        return;
    }
    if !Path::new(MOUNT_ROOT).join("freezer").is_dir() {
        eprintln!("skipping: no cgroup v1 freezer (cgroups_skip_freezer is v1 only)");
        return;
    }
    let root = CgroupRoot::new("nofreezer");
    let mut agent = Agent::new(&root, &[("cgroups_skip_freezer", "true")]);
    agent.spawn();
    agent.launch_standalone("runner", "sleep 600");
    agent.launch_nested("runner", "sharing", "sleep 600");
    let (status, body) = agent.api(serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER",
        "launch_nested_container": {"container_id": nested("runner", "own"),
            "command": {"value": "sleep 600"}, "container": separate_cgroups()}}));
    assert_eq!(status, 200, "{body}");
    let freezer = Path::new(MOUNT_ROOT).join("freezer").join(&root.0);
    assert!(!freezer.exists(), "{} was created", freezer.display());
    assert!(!root.tops().is_empty(), "the other controllers are used");

    let sharing_pid = agent.supervisor_pid(&["runner", "sharing"]);
    kill_and_wait_nested(&agent, "runner", "sharing");
    assert!(!alive(sharing_pid));
    let (status, _) = agent.api(serde_json::json!({"type": "KILL_CONTAINER",
        "kill_container": {"container_id": {"value": "runner"}, "signal": 9}}));
    assert_eq!(status, 200);
    let (_, body) = agent.api(serde_json::json!({"type": "WAIT_CONTAINER",
        "wait_container": {"container_id": {"value": "runner"}}}));
    assert!(body.contains(r#""exit_status":9"#), "{body}");
    assert!(agent.stop().is_some_and(|s| s.success()));
    assert!(!freezer.exists());
    let empty = empty_cgroups(&root);
    assert!(empty.is_empty(), "empty cgroups left: {empty:#?}");
    for top in root.tops() {
        let children = std::fs::read_dir(&top)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count();
        assert_eq!(children, 0, "{} still has container cgroups", top.display());
    }
}
