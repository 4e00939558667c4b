//! What Mesos' posix launcher leaves undone, done by the
//! `mesos-containerizer` wrapper before Mesos' helper runs.
//!
//! # Why
//!
//! On a cgroup v2-only host a Mesos 1.11 agent starts only with
//! `--launcher=posix`: its LinuxLauncher needs the v1 freezer. The posix
//! launcher forks Mesos' helper in the agent's namespaces and cgroup, and
//! refuses any isolator's `clone_namespaces` ("Subprocess launcher does not
//! support cloning namespaces"). So under `mesos_launcher=posix` the
//! isolator seals the namespaces and the cgroup into the stage's plan
//! ([`super::plan::PosixLaunch`]) and takes the namespaces out of the
//! launch info; the wrapper, the first program of the container, then:
//!
//! 1. joins the container's cgroup (its v2 `leaf`), before anything forks,
//!    so nothing of the container is ever charged to the agent, then
//!    enters the parent's namespaces a nested container shares (network,
//!    UTS, IPC, pid: those the isolators' `enter_namespaces` name, through
//!    the parent's process, sealed with its start time);
//! 2. unshares the mount, UTS and IPC namespaces, and marks `/` as a
//!    recursive slave so no mount of the container reaches the host;
//! 3. for a pid namespace (entered, then new: twice for a nested container
//!    with its own inside its parent's), forks ([`super::relay`]): the
//!    child (pid 1 there) goes on to Mesos' helper, the parent stays as the
//!    process Mesos knows, relaying signals to the child and exiting as it
//!    exits (a signal's death is mirrored by the same signal);
//! 4. hands `clone_namespaces` back to Mesos' helper in the launch info, so
//!    it makes the container's mounts and masks there as under its
//!    LinuxLauncher (it checks for `CLONE_NEWNS` before mounting).
//!
//! Written by hand: no crate relays signals to a pid-namespace init and
//! mirrors its status. The namespaces go through nestguard's own
//! `namespace_ops` (as its launcher's), the relay through `libc`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::sched::{CloneFlags, unshare};

use super::plan::PosixLaunch;
use crate::isolation::namespace_ops;

/// The `clone_namespaces` to hand back to Mesos' helper: one entry per flag,
/// as the isolators set them.
pub fn clone_flags(unshare: i32) -> Vec<i32> {
    [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWCGROUP,
    ]
    .into_iter()
    .filter(|f| unshare & f != 0)
    .collect()
}

/// Steps 1–3: returns in the process that goes on to Mesos' helper (the
/// new pid namespace's init when there is one); the relaying parent never
/// returns.
pub fn enter(posix: &PosixLaunch) -> Result<(), String> {
    join_cgroup(&posix.cgroup_procs)?;
    enter_parent(posix)?;
    let flags = CloneFlags::from_bits_truncate(posix.unshare);
    // A new mount namespace is made a slave of the agent's there.
    namespace_ops::create(flags - CloneFlags::CLONE_NEWPID).map_err(|e| e.to_string())?;
    if posix.enter & libc::CLONE_NEWPID != 0 {
        // Into the parent's pid namespace first: a new one is made inside
        // it only by a process already there (as Mesos' LinuxLauncher
        // forks twice for a nested container).
        super::relay::fork_and_relay()?;
    }
    if flags.contains(CloneFlags::CLONE_NEWPID) {
        unshare(CloneFlags::CLONE_NEWPID).map_err(|e| format!("unshare CLONE_NEWPID: {e}"))?;
        super::relay::fork_and_relay()?;
    }
    Ok(())
}

/// Enters the parent's namespaces named in `posix.enter` (step 0, as
/// Mesos' LinuxLauncher enters before it clones): the descriptors are
/// opened while the parent's process is the one sealed (pid and start
/// time, checked before and after), then joined. The pid namespace is
/// the parent's `pid_for_children`: its process may be the wrapper that
/// relays for the namespace's init.
fn enter_parent(posix: &PosixLaunch) -> Result<(), String> {
    if posix.enter == 0 {
        return Ok(());
    }
    let pid = i32::try_from(posix.enter_pid).map_err(|_| "no parent process".to_owned())?;
    let is_parent =
        || crate::isolation::process::is_running(pid, posix.enter_start_time).unwrap_or(false);
    if pid <= 0 || !is_parent() {
        return Err(format!("the parent's process {pid} is gone"));
    }
    // The container's namespaces are its innermost relay's: a nested
    // container's process forked once into its parent's pid namespace and
    // once more into its own (see `enter`).
    let inner = innermost_relay(pid);
    let mut joins = Vec::new();
    for (flag, name) in [
        (libc::CLONE_NEWNET, "net"),
        (libc::CLONE_NEWUTS, "uts"),
        (libc::CLONE_NEWIPC, "ipc"),
        (libc::CLONE_NEWPID, "pid_for_children"),
    ] {
        if posix.enter & flag != 0 {
            let path = format!("/proc/{inner}/ns/{name}");
            let fd = std::fs::File::open(&path).map_err(|e| format!("open {path}: {e}"))?;
            joins.push((CloneFlags::from_bits_truncate(flag), fd));
        }
    }
    if !is_parent() || innermost_relay(pid) != inner {
        return Err(format!("the parent's process {pid} is gone"));
    }
    namespace_ops::enter(&joins).map_err(|e| e.to_string())
}

/// The innermost of the relays that start at `pid`: while the one child
/// of a process still runs the same binary (a relay that has not `exec`ed
/// Mesos' helper), that child. Only the wrapper forks these; a tenant
/// process is never a child of a relay.
fn innermost_relay(pid: i32) -> i32 {
    let exe = |p: i32| {
        std::fs::metadata(format!("/proc/{p}/exe"))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    let Some(binary) = exe(pid) else { return pid };
    let mut current = pid;
    for _ in 0..4 {
        let children = std::fs::read_to_string(format!("/proc/{current}/task/{current}/children"))
            .unwrap_or_default();
        let mut ids = children.split_whitespace();
        let (Some(only), None) = (ids.next(), ids.next()) else {
            break;
        };
        match only.parse::<i32>() {
            Ok(child) if exe(child) == Some(binary) => current = child,
            _ => break,
        }
    }
    current
}

/// Writes `0` (the writer) into each `cgroup.procs`.
fn join_cgroup(files: &[std::path::PathBuf]) -> Result<(), String> {
    for file in files {
        write_zero(file).map_err(|e| format!("join cgroup {}: {e}", file.display()))?;
    }
    Ok(())
}

fn write_zero(file: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(file)?;
    f.write_all(b"0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_flags_lists_each_namespace_once() {
        let all = libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
        assert_eq!(
            clone_flags(all),
            vec![libc::CLONE_NEWNS, libc::CLONE_NEWIPC, libc::CLONE_NEWPID]
        );
        assert!(clone_flags(0).is_empty());
    }

    /// The wrapper hands `clone_namespaces` back to Mesos' helper for a
    /// sealed plan that carries them, and only then.
    #[test]
    fn the_sealed_namespaces_go_back_to_mesos_helper() {
        use crate::isolation::exec_stage::seal::SealKey;
        use crate::isolation::exec_stage::{ExecPlan, WRAPPED_STAGE, containerizer};
        if !nix::unistd::geteuid().is_root() {
            return; // the keys must be root's to be read
        }
        let dir = tempfile::tempdir().unwrap();
        let key = SealKey::create(dir.path(), "posix").unwrap();
        let stage = "/opt/ng/nestguard-exec";
        let info = |posix: PosixLaunch| {
            let mut plan = ExecPlan::example(stage, &["/w/runs/p"]);
            plan.posix = posix;
            let plan = plan.to_arg();
            let tail = ["--".to_owned(), "/bin/true".to_owned()];
            serde_json::json!({
                "command": {"shell": false, "value": WRAPPED_STAGE, "arguments":
                    ["nestguard-exec", plan, key.seal(&plan, stage, "", &tail), "--", "/bin/true"]},
                "working_directory": "/tmp"
            })
            .to_string()
        };
        let rewritten = |posix| {
            let out = containerizer::rewrite(&info(posix), dir.path())
                .unwrap()
                .unwrap();
            serde_json::from_str::<serde_json::Value>(&out).unwrap()
        };
        let flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        let v = rewritten(PosixLaunch {
            unshare: flags,
            cgroup_procs: vec!["/sys/fs/cgroup/x/leaf/cgroup.procs".into()],
            ..PosixLaunch::default()
        });
        assert_eq!(
            v["clone_namespaces"],
            serde_json::json!([libc::CLONE_NEWNS, libc::CLONE_NEWPID])
        );
        assert_eq!(v["command"]["value"], stage);
        let v = rewritten(PosixLaunch::default());
        assert!(v.get("clone_namespaces").is_none(), "{v}");
    }

    #[test]
    fn nothing_to_do_is_empty_and_not_serialized() {
        let plan = crate::isolation::exec_stage::ExecPlan::example("/s", &[]);
        assert!(plan.posix.is_empty());
        let text = serde_json::to_string(&plan).unwrap();
        assert!(!text.contains("posix"), "{text}");
    }
}
