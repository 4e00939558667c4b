//! What the `mesos-containerizer` wrapper does under Mesos' posix launcher
//! (`exec_stage::posix_launcher`), run for real: the container joins its
//! cgroup, gets its own namespaces with its command as pid 1, enters its
//! parent's IPC and pid namespaces as a nested container, and the relaying
//! process Mesos knows forwards signals and ends as the command ends.
//! Root only; on cgroup v1 and v2 hosts alike.
//!
//! The subject is `examples/posix_launcher_subject.rs` (cargo builds the
//! examples with the tests): it calls `posix_launcher::enter` and then
//! `exec`s `sh -c`, as the wrapper `exec`s Mesos' helper.

use crate::cgroups_support::{TestCgroups, id, require_root, wait_until};

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use nestguard::isolation::exec_stage::PosixLaunch;

/// A started subject (its relay); killed on drop, so a failing test leaves
/// no process (the command dies with the relay: `PR_SET_PDEATHSIG`).
struct Relay(Child);

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Relay {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Relay {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// The subject's path: target/<profile>/deps/<this test> ->
/// target/<profile>/examples/.
fn subject() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let subject = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples/posix_launcher_subject");
    assert!(
        subject.is_file(),
        "{} is missing: `cargo test --workspace` builds it, or `cargo build --example \
         posix_launcher_subject`",
        subject.display()
    );
    subject
}

/// Starts the subject: `launch`, then `sh -c script` in `dir`.
fn start(launch: &PosixLaunch, script: &str, dir: &Path) -> Relay {
    Relay(
        Command::new(subject())
            .arg(serde_json::to_string(launch).unwrap())
            .arg(script)
            .current_dir(dir)
            .spawn()
            .unwrap(),
    )
}

fn wait(child: &mut Child) -> ExitStatus {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the relay did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn own_ns(what: &str) -> String {
    std::fs::read_link(format!("/proc/self/ns/{what}"))
        .unwrap()
        .display()
        .to_string()
}

const NEW: i32 = libc::CLONE_NEWNS | libc::CLONE_NEWUTS | libc::CLONE_NEWIPC | libc::CLONE_NEWPID;

#[test]
fn a_container_joins_its_cgroup_and_its_command_is_pid_1_of_its_own_namespaces() {
    if !require_root() {
        return;
    }
    let t = TestCgroups::host("posix");
    let c = id("posix");
    t.cg.create(&c, &Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let launch = PosixLaunch {
        unshare: NEW,
        cgroup_procs: t.cg.procs_files(&c).unwrap(),
        ..PosixLaunch::default()
    };
    let script = "echo $$ > pid; readlink /proc/self/ns/mnt /proc/self/ns/ipc > ns; \
                  cat /proc/self/cgroup > cgroup; exit 7";
    let mut relay = start(&launch, script, dir.path());
    let status = wait(&mut relay);
    assert_eq!(status.code(), Some(7), "the relay exits as its command");
    assert_eq!(read(&dir.path().join("pid")).trim(), "1");
    let ns = read(&dir.path().join("ns"));
    assert!(!ns.contains(&own_ns("mnt")), "{ns}");
    assert!(!ns.contains(&own_ns("ipc")), "{ns}");
    let cgroups = read(&dir.path().join("cgroup"));
    let root = t.cg.config().cgroups_root.display().to_string();
    assert!(cgroups.contains(&format!("/{root}/posix")), "{cgroups}");
    drop(t);
}

#[test]
fn the_relay_forwards_signals_and_dies_as_its_command_dies() {
    if !require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let launch = PosixLaunch {
        unshare: NEW,
        ..PosixLaunch::default()
    };
    // An init ignores what it has no handler for: this one has one.
    let script = "trap 'exit 42' TERM; touch ready; while :; do sleep 0.1; done";
    let mut relay = start(&launch, script, dir.path());
    wait_until("the command to start", Duration::from_secs(20), || {
        dir.path().join("ready").exists()
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(relay.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(
        wait(&mut relay).code(),
        Some(42),
        "SIGTERM reached the command"
    );

    let script = "echo $PPID > /dev/null; touch ready; exec sleep 60";
    std::fs::remove_file(dir.path().join("ready")).unwrap();
    let mut relay = start(&launch, script, dir.path());
    wait_until("the command to start", Duration::from_secs(20), || {
        dir.path().join("ready").exists()
    });
    // The command dies by SIGKILL (from here, an ancestor namespace).
    let children = read(Path::new(&format!(
        "/proc/{}/task/{}/children",
        relay.id(),
        relay.id()
    )));
    let command: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(command),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(
        wait(&mut relay).signal(),
        Some(9),
        "the relay died by SIGKILL too"
    );
}

#[test]
fn a_nested_container_enters_its_parents_ipc_and_pid_namespaces() {
    if !require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let parent_launch = PosixLaunch {
        unshare: NEW,
        ..PosixLaunch::default()
    };
    let parent = start(
        &parent_launch,
        "readlink /proc/self/ns/ipc > parent-ipc; touch ready; exec sleep 60",
        dir.path(),
    );
    wait_until("the parent to start", Duration::from_secs(20), || {
        dir.path().join("ready").exists()
    });
    let pid = parent.id();
    let start_time = nestguard::isolation::process::stat(pid as i32)
        .unwrap()
        .unwrap()
        .start_time;
    let nested = PosixLaunch {
        unshare: libc::CLONE_NEWNS | libc::CLONE_NEWPID,
        enter: libc::CLONE_NEWIPC | libc::CLONE_NEWPID,
        enter_pid: pid,
        enter_start_time: start_time,
        ..PosixLaunch::default()
    };
    let script =
        "readlink /proc/self/ns/ipc > nested-ipc; exec grep NSpid /proc/self/status > nspid";
    let mut child = start(&nested, script, dir.path());
    assert!(wait(&mut child).success());
    assert_eq!(
        read(&dir.path().join("nested-ipc")),
        read(&dir.path().join("parent-ipc")),
        "the nested container shares its parent's IPC namespace"
    );
    // Host, the parent's namespace, its own: three levels, pid 1 in its own.
    let nspid = read(&dir.path().join("nspid"));
    let levels: Vec<&str> = nspid.split_whitespace().skip(1).collect();
    assert_eq!(levels.len(), 3, "{nspid}");
    assert_eq!(levels[2], "1", "{nspid}");

    // A pid whose start time is not the sealed one is never entered.
    let stale = PosixLaunch {
        enter_start_time: start_time + 1,
        ..nested
    };
    let out = Command::new(subject())
        .arg(serde_json::to_string(&stale).unwrap())
        .arg("exit 0")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(99));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("the parent's process {pid} is gone")),
        "{err}"
    );
    drop(parent);
}

/// The pid namespace of a process's parent namespace (`NS_GET_PARENT`).
fn parent_pid_namespace(pid: u32) -> u64 {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::File::open(format!("/proc/{pid}/ns/pid")).unwrap();
    // SAFETY: NS_GET_PARENT (_IO(0xb7, 0x2)) on a namespace descriptor
    // returns a new descriptor or -1.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), 0xb702) };
    assert!(
        fd >= 0,
        "NS_GET_PARENT: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a descriptor the kernel just gave us.
    let parent = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    parent.metadata().unwrap().ino()
}

fn pid_namespace(pid: u32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}/ns/pid"))
        .unwrap()
        .ino()
}

/// A container nested in a nested container: entered through the middle
/// container's process, it lands in the middle container's own pid
/// namespace, not the pod's (the middle one's relays are two deep).
#[test]
fn a_container_two_levels_down_enters_its_own_parent_not_the_pod() {
    if !require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let enter_from = |relay: &Relay, launch: PosixLaunch| {
        let pid = relay.id();
        let start_time = nestguard::isolation::process::stat(pid as i32)
            .unwrap()
            .unwrap()
            .start_time;
        PosixLaunch {
            enter: libc::CLONE_NEWIPC | libc::CLONE_NEWPID,
            enter_pid: pid,
            enter_start_time: start_time,
            ..launch
        }
    };
    let ready = |name: &str| {
        let path = dir.path().join(name);
        wait_until(name, Duration::from_secs(20), || path.exists());
    };
    let pod = start(
        &PosixLaunch {
            unshare: NEW,
            ..PosixLaunch::default()
        },
        "touch pod; exec sleep 60",
        dir.path(),
    );
    ready("pod");
    let own = PosixLaunch {
        unshare: libc::CLONE_NEWNS | libc::CLONE_NEWPID,
        ..PosixLaunch::default()
    };
    let middle = start(
        &enter_from(&pod, own.clone()),
        "echo $$ > middle-pid; touch middle; exec sleep 60",
        dir.path(),
    );
    ready("middle");
    let inner = start(
        &enter_from(&middle, own),
        "echo $$ > inner-pid; touch inner; exec sleep 60",
        dir.path(),
    );
    ready("inner");
    // Their commands, as the host sees them: the innermost child of each
    // chain of relays.
    let command = |relay: &Relay| {
        let mut pid = relay.id();
        loop {
            let children = read(Path::new(&format!("/proc/{pid}/task/{pid}/children")));
            match children.split_whitespace().next() {
                Some(child) => pid = child.parse().unwrap(),
                None => return pid,
            }
        }
    };
    let (pod_cmd, middle_cmd, inner_cmd) = (command(&pod), command(&middle), command(&inner));
    assert_eq!(parent_pid_namespace(middle_cmd), pid_namespace(pod_cmd));
    assert_eq!(
        parent_pid_namespace(inner_cmd),
        pid_namespace(middle_cmd),
        "the inner container's pid namespace is inside the middle one's"
    );
    drop((inner, middle, pod));
}
