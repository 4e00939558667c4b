//! Isolation holes a hostile tenant would try (root; issue 12 items 1, 2,
//! 3 and 5), each driven through the isolators and the launcher as the
//! agent drives them:
//!
//! * a nested container sharing its parent's pid namespace sees the
//!   parent's `/proc`, never the host's; a top-level container may not share
//!   the agent's unless the operator allows it;
//! * every container has its own UTS namespace: hostname and domainname
//!   changes stay inside;
//! * kernel knobs (`/proc/sys`, `/proc/sysrq-trigger`, `/proc/irq`,
//!   `/proc/bus`, `/sys` and every mount below it) are read-only inside;
//! * a `SANDBOX_PATH` volume whose source is swapped for a symbolic link
//!   while the container launches never mounts anything outside the
//!   sandbox.

use crate::isolator_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use isolator_support::*;
use nestguard::isolation::namespace_ops::NamespaceError;
use nestguard::isolation::{Defences, Launcher, LauncherError, LauncherOptions, Mode};
use nestguard::proto::mesos::slave::ContainerLaunchInfo;
use nestguard::proto::mesos::volume::Mode as VolumeMode;
use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;
use nestguard::proto::mesos::{ContainerInfo, LinuxInfo};

fn sharing_pid() -> ContainerInfo {
    ContainerInfo {
        linux_info: Some(LinuxInfo {
            share_pid_namespace: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn with_info(script: &str, info: ContainerInfo) -> nestguard::proto::mesos::slave::ContainerConfig {
    let mut c = config(script);
    c.container_info = Some(info);
    c
}

fn wait_ok(agent: &Agent, id: &nestguard::proto::mesos::ContainerId) {
    let status = agent.wait(id, Duration::from_secs(30));
    assert_eq!(
        status,
        Some(0),
        "{id:?} stderr: {}",
        read(agent.sandbox(id).join("stderr"))
    );
}

#[test]
fn shared_pid_namespace_shows_the_parents_proc_never_the_hosts() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("sharepid", &[("hardening_capabilities", "*")]);
    let (exec, exec_pid) = agent.launch("exec", config("exec sleep 120"));
    let (task, _) = agent.launch(
        "exec.task",
        with_info(
            "tr '\\0' ' ' < /proc/1/cmdline > cmdline; \
             ls /proc | grep -E '^[0-9]+$' > pids; \
             cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c NESTGUARD_HOST_MARKER > leaked; \
             true",
            sharing_pid(),
        ),
    );
    wait_ok(&agent, &task);
    let sandbox = agent.sandbox(&task);
    let cmdline = read(sandbox.join("cmdline"));
    let host_init = read("/proc/1/cmdline").replace('\0', " ");
    assert_ne!(cmdline, host_init, "pid 1 inside is the host's init");
    assert!(
        cmdline.contains("nestguard-launch"),
        "pid 1 inside is the parent's supervisor: {cmdline:?}"
    );
    // The parent's pid namespace holds its supervisor, its sleep and this
    // task's few processes; the host has many more (this test alone).
    let pids: Vec<u32> = read(sandbox.join("pids"))
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    assert!(!pids.is_empty() && pids.len() < 10, "{pids:?}");
    assert!(
        !pids.contains(&std::process::id()) || std::process::id() < 10,
        "the test process is listed: {pids:?}"
    );
    assert!(pids.contains(&1), "{pids:?}");
    // The parent is not this task's host pid: the view is of the parent's
    // namespace (the executor's supervisor is 1 there).
    assert!(exec_pid > 1);
    // The environment of host processes is out of reach (this process has
    // the marker in its environment only if the test runner set it; we set
    // it on a host child to be sure).
    let mut host_child = std::process::Command::new("sleep")
        .arg("30")
        .env("NESTGUARD_HOST_MARKER", "secret")
        .spawn()
        .unwrap();
    let (probe, _) = agent.launch(
        "exec.probe",
        with_info(
            "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c NESTGUARD_HOST_MARKER > leaked; true",
            sharing_pid(),
        ),
    );
    wait_ok(&agent, &probe);
    let _ = host_child.kill();
    let _ = host_child.wait();
    assert_eq!(read(agent.sandbox(&probe).join("leaked")).trim(), "0");
    agent.destroy(&exec, None);
}

#[test]
fn top_level_containers_share_the_agents_pid_namespace_only_when_allowed() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("sharepid-top", &[]);
    let err = agent
        .try_launch(&id("top"), with_info("true", sharing_pid()))
        .unwrap_err();
    assert!(err.contains("not allowed"), "{err}");

    let allowed = Agent::new(
        "sharepid-allowed",
        &[("disallow_sharing_agent_pid_namespace", "false")],
    );
    let top = id("top");
    allowed
        .try_launch(&top, with_info("echo $$ > pid", sharing_pid()))
        .unwrap();
    wait_ok(&allowed, &top);
    let inner: u32 = read(allowed.sandbox(&top).join("pid"))
        .trim()
        .parse()
        .unwrap();
    assert!(inner > 1, "runs in the agent's pid namespace: {inner}");
    allowed.destroy(&top, None);

    // The launcher refuses on its own too (an agent without the isolator).
    let dir = tempfile::tempdir().unwrap();
    let launcher = Launcher::new(launcher_options(dir.path(), Defences::default())).unwrap();
    let err = launcher
        .launch(
            &id("top"),
            &launch_info("true", &[]),
            Some(&sharing_pid()),
            &dir.path().join("sandbox"),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            LauncherError::Namespace(NamespaceError::SharingAgentPidNamespace)
        ),
        "{err}"
    );
    assert!(launcher.containers().is_empty());
}

/// Destroys a launcher's container on drop, so a failing test leaves no
/// process behind.
struct Destroy<'a>(&'a Launcher, nestguard::proto::mesos::ContainerId);

impl Drop for Destroy<'_> {
    fn drop(&mut self) {
        let _ = self.0.destroy(&self.1);
    }
}

/// A top-level container without a pid namespace of its own runs in the
/// agent's: a nested `share_pid_namespace` child would join it (and mount a
/// fresh /proc listing every host process). Refused unless the operator
/// allows sharing the agent's pid namespace.
#[test]
fn nested_containers_never_join_the_agents_pid_namespace_unless_allowed() {
    if !root_or_skip() {
        return;
    }
    let agent_ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    for allow in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut options = launcher_options(dir.path(), Defences::default());
        options.allow_sharing_agent_pid_namespace = allow;
        let launcher = Launcher::new(options).unwrap();
        let top = id("top");
        let sandbox = dir.path().join("sandbox");
        // No namespaces at all: the agent's pid namespace.
        launcher
            .launch(&top, &launch_info("sleep 60", &[]), None, &sandbox)
            .unwrap();
        let _guard = Destroy(&launcher, top.clone());
        let child = id("top.c");
        let child_sandbox = sandbox.join("containers/c");
        let launched = launcher.launch(
            &child,
            &launch_info("readlink /proc/self/ns/pid", &[]),
            Some(&sharing_pid()),
            &child_sandbox,
        );
        if allow {
            launched.unwrap();
            let status = launcher
                .wait(&child, Some(Duration::from_secs(30)))
                .unwrap();
            assert_eq!(status, Some(0));
            assert_eq!(
                read(child_sandbox.join("stdout")).trim(),
                agent_ns.to_str().unwrap(),
                "allowed: the child shares the agent's pid namespace"
            );
        } else {
            let err = launched.unwrap_err();
            assert!(
                matches!(
                    err,
                    LauncherError::Namespace(NamespaceError::JoiningAgentPidNamespace)
                ),
                "{err}"
            );
            assert_eq!(launcher.containers(), vec![top.clone()]);
            assert!(!child_sandbox.join("stdout").exists());
        }
    }
}

fn launcher_options(dir: &Path, defences: Defences) -> LauncherOptions {
    LauncherOptions {
        runtime_dir: dir.join("runtime"),
        helper: PathBuf::from(HELPER),
        mode: Mode::Linux,
        allow_sharing_agent_pid_namespace: false,
        defences,
        user_namespaces: None,
    }
}

fn launch_info(script: &str, clone: &[i32]) -> ContainerLaunchInfo {
    ContainerLaunchInfo {
        command: Some(shell(script)),
        clone_namespaces: clone.to_vec(),
        ..Default::default()
    }
}

/// Restores the host's hostname and domainname on drop, so a failing run
/// (the old code changed them) leaves the host as it was.
struct UtsGuard {
    hostname: String,
    domainname: String,
}

impl UtsGuard {
    fn new() -> UtsGuard {
        UtsGuard {
            hostname: read("/proc/sys/kernel/hostname"),
            domainname: read("/proc/sys/kernel/domainname"),
        }
    }
}

impl Drop for UtsGuard {
    fn drop(&mut self) {
        if read("/proc/sys/kernel/hostname") != self.hostname {
            let _ = std::fs::write("/proc/sys/kernel/hostname", self.hostname.trim());
        }
        if read("/proc/sys/kernel/domainname") != self.domainname {
            let _ = std::fs::write("/proc/sys/kernel/domainname", self.domainname.trim());
        }
    }
}

#[test]
fn hostname_and_domainname_changes_stay_inside_the_container() {
    if !root_or_skip() {
        return;
    }
    let guard = UtsGuard::new();
    // Every capability (a root container as root as it gets).
    let agent = Agent::new("uts", &[("hardening_capabilities", "*")]);
    let change = |name: &str| {
        format!(
            "hostname {name}-h && domainname {name}-d && \
             hostname > h && domainname > d"
        )
    };
    let (top, _) = agent.launch("top", config(&change("ngtop")));
    wait_ok(&agent, &top);
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let (a, _) = agent.launch("exec.a", config(&change("nga")));
    wait_ok(&agent, &a);
    // A sibling started after the change, and the parent's view (a DEBUG-free
    // copy: a new sibling's UTS starts as the parent's).
    let (b, _) = agent.launch("exec.b", config("hostname > h; domainname > d"));
    wait_ok(&agent, &b);
    for (c, name) in [(&top, "ngtop"), (&a, "nga")] {
        let sb = agent.sandbox(c);
        assert_eq!(read(sb.join("h")).trim(), format!("{name}-h"));
        assert_eq!(read(sb.join("d")).trim(), format!("{name}-d"));
    }
    assert_eq!(read("/proc/sys/kernel/hostname"), guard.hostname);
    assert_eq!(read("/proc/sys/kernel/domainname"), guard.domainname);
    let sb = agent.sandbox(&b);
    assert_eq!(
        read(sb.join("h")),
        guard.hostname,
        "sibling/parent hostname"
    );
    assert_eq!(
        read(sb.join("d")),
        guard.domainname,
        "sibling/parent domainname"
    );
    agent.destroy(&exec, None);
    agent.destroy(&top, None);
}

/// A directory the test creates on the host, removed on drop (the old code
/// let a container create it under `/sys/fs/cgroup`).
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The mount points and options of `/proc/self/mountinfo` text, last
/// mount per point.
fn mount_options(mountinfo: &str) -> std::collections::HashMap<String, String> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Some((f.get(4)?.to_string(), f.get(5)?.to_string()))
        })
        .collect()
}

const KNOB_SCRIPT: &str = "cat /proc/self/mountinfo > mountinfo; \
     v=$(cat /sys/kernel/mm/ksm/run); (echo $v > /sys/kernel/mm/ksm/run) 2> ksm-err; echo $? > ksm-rc; \
     v=$(cat /proc/sys/vm/stat_interval); (echo $v > /proc/sys/vm/stat_interval) 2> sysctl-err; echo $? > sysctl-rc; \
     mkdir \"$CGDIR\" 2> cg-err; echo $? > cg-rc";

fn check_knobs(sandbox: &Path, what: &str) {
    let mounts = mount_options(&read(sandbox.join("mountinfo")));
    for point in [
        "/proc/sys",
        "/proc/sysrq-trigger",
        "/proc/irq",
        "/proc/bus",
        "/sys",
    ] {
        // Not every kernel has all of them (CONFIG_MAGIC_SYSRQ, …).
        if !Path::new(point).exists() {
            continue;
        }
        let opts = mounts
            .get(point)
            .unwrap_or_else(|| panic!("{what}: no mount at {point}: {mounts:?}"));
        assert!(
            opts.split(',').any(|o| o == "ro"),
            "{what}: {point} is {opts}"
        );
    }
    for (point, opts) in &mounts {
        if point == "/sys" || point.starts_with("/sys/") {
            assert!(
                opts.split(',').any(|o| o == "ro"),
                "{what}: {point} is {opts}"
            );
        }
    }
    for knob in ["ksm", "sysctl", "cg"] {
        assert_ne!(
            read(sandbox.join(format!("{knob}-rc"))).trim(),
            "0",
            "{what}: {knob} was writable"
        );
        let err = read(sandbox.join(format!("{knob}-err")));
        assert!(
            err.contains("Read-only file system") || err.contains("Permission denied"),
            "{what}: {knob}: {err}"
        );
    }
}

#[test]
fn kernel_knobs_are_read_only_in_every_container_with_its_own_mount_namespace() {
    if !root_or_skip() {
        return;
    }
    let ksm_before = read("/sys/kernel/mm/ksm/run");
    let interval_before = read("/proc/sys/vm/stat_interval");
    // A cgroup directory the container tries to make: in the pids
    // hierarchy on v1, in the unified one on a v2-only host.
    let hierarchy = if Path::new("/sys/fs/cgroup/pids").is_dir() {
        "/sys/fs/cgroup/pids"
    } else {
        "/sys/fs/cgroup"
    };
    let cgdir = PathBuf::from(format!(
        "{hierarchy}/nestguard-ro-test-{}",
        std::process::id()
    ));
    let _cg_guard = RemoveDir(cgdir.clone());
    let agent = Agent::new("knobs", &[("hardening_capabilities", "*")]);
    let script = format!("CGDIR={}; {KNOB_SCRIPT}", cgdir.display());
    let (top, _) = agent.launch("top", config(&script));
    wait_ok(&agent, &top);
    check_knobs(&agent.sandbox(&top), "top-level");
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let (task, _) = agent.launch("exec.task", config(&script));
    wait_ok(&agent, &task);
    check_knobs(&agent.sandbox(&task), "nested");
    let (shared, _) = agent.launch("exec.shared", with_info(&script, sharing_pid()));
    wait_ok(&agent, &shared);
    check_knobs(&agent.sandbox(&shared), "nested sharing pid");
    assert!(!cgdir.exists(), "a container created {}", cgdir.display());
    assert_eq!(read("/sys/kernel/mm/ksm/run"), ksm_before);
    assert_eq!(read("/proc/sys/vm/stat_interval"), interval_before);
    // The host's own mounts stay writable.
    let host = mount_options(&read("/proc/self/mountinfo"));
    assert!(host["/sys"].split(',').any(|o| o == "rw"), "{host:?}");
    agent.destroy(&exec, None);
    agent.destroy(&top, None);
}

/// Each defence can be switched off (for the benchmark only): without
/// read-only paths the container's `/proc/sys` is the plain procfs entry.
#[test]
fn read_only_paths_can_be_switched_off_for_measurement() {
    if !root_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = [libc::CLONE_NEWNS, libc::CLONE_NEWPID, libc::CLONE_NEWUTS];
    let script = "grep -c ' /proc/sys ' /proc/self/mountinfo; readlink /proc/self/ns/uts";
    let mut outputs = Vec::new();
    for (name, defences) in [
        ("on", Defences::default()),
        (
            "off",
            Defences {
                read_only_paths: false,
                own_uts: false,
            },
        ),
    ] {
        let root = dir.path().join(name);
        let launcher = Launcher::new(launcher_options(&root, defences)).unwrap();
        let top = id("top");
        let sandbox = root.join("sandbox");
        let top_pid = launcher
            .launch(&top, &launch_info("sleep 60", &ns), None, &sandbox)
            .unwrap();
        let parent_uts = std::fs::read_link(format!("/proc/{top_pid}/ns/uts")).unwrap();
        let child = id("top.c");
        let child_sandbox = sandbox.join("containers/c");
        launcher
            .launch(&child, &launch_info(script, &[]), None, &child_sandbox)
            .unwrap();
        let status = launcher
            .wait(&child, Some(Duration::from_secs(30)))
            .unwrap();
        let out = read(child_sandbox.join("stdout"));
        let own_uts = out.lines().nth(1) != parent_uts.to_str();
        outputs.push((status, out.lines().next().map(str::to_owned), own_uts));
        launcher.destroy(&top).unwrap();
    }
    // The child's own /proc/sys, over the parent's (also read-only).
    let count = |o: &Option<String>| o.as_deref().and_then(|c| c.parse::<u32>().ok());
    assert!(
        outputs[0].0 == Some(0) && count(&outputs[0].1) >= Some(1) && outputs[0].2,
        "{outputs:?}"
    );
    assert!(
        outputs[1].0 == Some(0) && count(&outputs[1].1) == Some(0) && !outputs[1].2,
        "{outputs:?}"
    );
}

/// A thread swapping `shared` and `decoy` (a directory and a symbolic
/// link) atomically, over and over; stopped and joined on drop, so it never
/// outlives the directories (even when the test fails).
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(dir: PathBuf) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = Some(swapper(dir, stop.clone()));
        Swapper { stop, thread }
    }

    /// Stops the thread; returns how many swaps it made.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap())
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn swapper(dir: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let fd = rustix::fs::open(
            &dir,
            rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            rustix::fs::renameat_with(
                &fd,
                "shared",
                &fd,
                "decoy",
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .unwrap();
            swaps += 1;
            std::thread::yield_now();
        }
        swaps
    })
}

/// How launch `i` of a swap race meets the swapped path, in turn: the
/// directory in place (must be used), the link in place (must be refused),
/// then the two swapped over and over for the whole launch (either outcome,
/// never outside). So both outcomes are checked on every run whatever the
/// machine's speed, and the racing launches are paced: the swapper runs
/// during each of them and only then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Directory,
    Link,
    Racing,
}

fn phase(i: u32) -> Phase {
    match i % 3 {
        0 => Phase::Directory,
        1 => Phase::Link,
        _ => Phase::Racing,
    }
}

/// Exchanges `shared` and `decoy` in `dir` once.
fn exchange(dir: &Path) {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        dir.join("shared"),
        rustix::fs::CWD,
        dir.join("decoy"),
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
}

/// Runs `launch` with `dir/shared` as [`phase`] `i` wants it, and puts the
/// directory back at `shared` after; returns its result and the swaps made
/// while it ran.
fn paced<T>(dir: &Path, i: u32, launch: impl FnOnce() -> T) -> (T, u64) {
    let (out, swaps) = match phase(i) {
        Phase::Directory => (launch(), 0),
        Phase::Link => {
            exchange(dir);
            (launch(), 1)
        }
        Phase::Racing => {
            let swapper = Swapper::start(dir.to_path_buf());
            let out = launch();
            (out, swapper.finish())
        }
    };
    if std::fs::symlink_metadata(dir.join("shared"))
        .unwrap()
        .file_type()
        .is_symlink()
    {
        exchange(dir);
    }
    (out, swaps)
}

#[test]
fn sandbox_path_volume_swapped_for_a_symlink_never_mounts_outside() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new(
        "race",
        &[(
            "isolation",
            "namespaces,filesystem/linux,volume/sandbox_path",
        )],
    );
    let (exec, _) = agent.launch("exec", config("exec sleep 300"));
    let parent = agent.sandbox(&exec);
    let outside = agent.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("ESCAPED"), "host data").unwrap();
    std::fs::create_dir(parent.join("shared")).unwrap();
    std::fs::write(parent.join("shared/inside"), "ok").unwrap();
    std::os::unix::fs::symlink(&outside, parent.join("decoy")).unwrap();

    const LAUNCHES: u32 = 60;
    let (mut escapes, mut swaps) = (0, 0);
    let mut seen: Vec<(Phase, &str)> = Vec::new();
    for i in 0..LAUNCHES {
        let volume = sandbox_volume(SandboxPathType::Parent, "shared", "vol", VolumeMode::Rw);
        let c = with_volumes(
            config("if [ -e vol/ESCAPED ]; then exit 42; fi; exit 0"),
            vec![volume],
        );
        let child = id(&format!("exec.t{i}"));
        let (outcome, made) = paced(&parent, i, || match agent.try_launch(&child, c) {
            Ok(_) => {
                let status = agent.wait(&child, Duration::from_secs(30));
                let err = read(agent.sandbox(&child).join("stderr"));
                agent.destroy(&child, None);
                match status {
                    Some(0) => "ran",
                    Some(s) if s == 42 << 8 => "escaped",
                    // The supervisor refused to mount (a symbolic link in
                    // the path at mount time): setup failure, exit 1.
                    Some(256) => {
                        assert!(err.contains("does not resolve below"), "{err}");
                        "refused"
                    }
                    other => panic!("unexpected status {other:?}"),
                }
            }
            Err(_) => {
                let _ = agent.l().destroy(&child);
                "refused"
            }
        });
        swaps += made;
        escapes += u32::from(outcome == "escaped");
        seen.push((phase(i), outcome));
    }
    let count = |p: Phase, o: &str| seen.iter().filter(|s| **s == (p, o)).count();
    let racing = (count(Phase::Racing, "ran"), count(Phase::Racing, "refused"));
    eprintln!(
        "racing launches: ran {}, refused {}, escapes {escapes}, swaps during them {swaps}",
        racing.0, racing.1
    );
    assert_eq!(escapes, 0, "{escapes} launches mounted outside the sandbox");
    for (i, s) in seen.iter().enumerate() {
        match s.0 {
            Phase::Directory => assert_eq!(s.1, "ran", "launch {i} with the directory in place"),
            Phase::Link => assert_eq!(s.1, "refused", "launch {i} with the link in place"),
            Phase::Racing => {}
        }
    }
    agent.destroy(&exec, None);
}

/// Issue: the launcher checked a nested sandbox below its parent's and then
/// worked by path again (chmod 0750, chown to the user, `stdout`/`stderr`
/// created as root, reopened by the helper with `O_CREAT`), so the parent's
/// user could swap the sandbox for a link to a host directory in between.
/// Now every step goes through the descriptor of the checked directory.
#[test]
fn nested_sandbox_swapped_for_a_symlink_never_changes_the_target() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !root_or_skip() {
        return;
    }
    const LAUNCHES: u32 = 60;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("launcher");
    let launcher = Launcher::new(launcher_options(&root, Defences::default())).unwrap();
    let top = id("top");
    let sandbox = root.join("sandbox");
    launcher
        .launch(&top, &launch_info("exec sleep 300", &[]), None, &sandbox)
        .unwrap();
    // Destroys the parent (and so every child) even when an assert fails.
    struct Destroy<'a>(&'a Launcher, nestguard::proto::mesos::ContainerId);
    impl Drop for Destroy<'_> {
        fn drop(&mut self) {
            let _ = self.0.destroy(&self.1);
        }
    }
    let _destroy = Destroy(&launcher, top.clone());
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o700)).unwrap();
    let containers = sandbox.join("containers");
    std::fs::create_dir_all(containers.join("shared")).unwrap();
    std::os::unix::fs::symlink(&outside, containers.join("decoy")).unwrap();
    let before = std::fs::metadata(&outside).unwrap();

    let mut info = launch_info("true", &[]);
    info.user = Some("nobody".into());
    let mut swaps = 0;
    let mut seen: Vec<(Phase, bool)> = Vec::new();
    for i in 0..LAUNCHES {
        // A new ID each time (a destroyed one stays known); the sandbox
        // path is the one being swapped.
        let child = id(&format!("top.c{i}"));
        let (launched, made) = paced(&containers, i, || {
            match launcher.launch(&child, &info, None, &containers.join("shared")) {
                Ok(_) => {
                    let _ = launcher.wait(&child, Some(Duration::from_secs(30)));
                    launcher.destroy(&child).unwrap();
                    true
                }
                Err(_) => false,
            }
        });
        swaps += made;
        seen.push((phase(i), launched));
    }
    let racing = |l: bool| seen.iter().filter(|s| **s == (Phase::Racing, l)).count();
    eprintln!(
        "racing launches: launched {}, refused {}, swaps during them {swaps}",
        racing(true),
        racing(false)
    );
    let after = std::fs::metadata(&outside).unwrap();
    assert_eq!(
        (after.mode(), after.uid(), after.gid()),
        (before.mode(), before.uid(), before.gid()),
        "the link's target was chmod'ed or chown'ed"
    );
    let created: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(created.is_empty(), "created through the link: {created:?}");
    for (i, s) in seen.iter().enumerate() {
        match s.0 {
            Phase::Directory => assert!(s.1, "launch {i} with the directory in place refused"),
            Phase::Link => assert!(!s.1, "launch {i} with the link in place launched"),
            Phase::Racing => {}
        }
    }
}
