//! Killing every process of a cgroup subtree, race-free.
//!
//! Signalling the pids listed in `cgroup.procs` one by one races with
//! `fork()`: a child born after the listing survives. So the subtree is
//! first frozen (v1 `freezer.state`, v2 `cgroup.freeze`), every task gets
//! SIGKILL while nothing can fork, and the thaw lets the kills land. On v2
//! kernels with `cgroup.kill` (5.14+) the kernel does all of this itself.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use super::error::{CgroupError, Result};
use super::fsops;

/// Longest pause between two checks of a freeze or of processes dying, for
/// the first [`FAST_PHASE`]: killing a pod's hundreds of processes takes tens
/// of milliseconds, and a longer pause would mostly be overshoot.
const MAX_PAUSE: Duration = Duration::from_millis(1);

/// After this, pauses grow to [`SLOW_PAUSE`]: a task stuck in the kernel
/// must not make us re-read `cgroup.procs` a thousand times a second.
const FAST_PHASE: Duration = Duration::from_millis(100);

/// Longest pause once the fast phase is over.
const SLOW_PAUSE: Duration = Duration::from_millis(20);

/// How long a freeze may take before we fall back to kill-until-empty.
const FREEZE_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends SIGKILL to every process listed in the `cgroup.procs` of each
/// directory; returns how many were signalled. Gone processes are fine.
fn signal_all(dirs: &[PathBuf]) -> Result<usize> {
    let mut sent = 0;
    for dir in dirs {
        let procs = dir.join("cgroup.procs");
        for pid in fsops::read_pids(&procs)? {
            let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
                continue;
            };
            match kill_process(pid, Signal::KILL) {
                Ok(()) => sent += 1,
                Err(rustix::io::Errno::SRCH) => {}
                Err(e) => return Err(CgroupError::sys("send SIGKILL to a process of", &procs, e)),
            }
        }
    }
    Ok(sent)
}

/// True if no directory lists a process.
fn all_empty(dirs: &[PathBuf]) -> Result<bool> {
    for dir in dirs {
        if !fsops::read_pids(&dir.join("cgroup.procs"))?.is_empty() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Waits until every directory is empty, re-sending SIGKILL to stragglers
/// (a process moved in after the freeze, or one that escaped it).
fn wait_empty(dirs: &[PathBuf], top: &Path, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut backoff = Backoff::new(Duration::from_micros(200));
    loop {
        if all_empty(dirs)? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(CgroupError::Timeout {
                what: "become empty",
                path: top.to_owned(),
                timeout,
            });
        }
        backoff.sleep();
        signal_all(dirs)?;
    }
}

/// Exponential pauses between checks: capped at [`MAX_PAUSE`] during the
/// first [`FAST_PHASE`], at [`SLOW_PAUSE`] after.
struct Backoff {
    started: Instant,
    pause: Duration,
}

impl Backoff {
    fn new(first: Duration) -> Backoff {
        Backoff {
            started: Instant::now(),
            pause: first,
        }
    }

    fn sleep(&mut self) {
        thread::sleep(self.pause);
        let cap = if self.started.elapsed() < FAST_PHASE {
            MAX_PAUSE
        } else {
            SLOW_PAUSE
        };
        self.pause = (self.pause * 2).min(cap);
    }
}

/// Removes several subtrees (one per v1 hierarchy) concurrently: each rmdir
/// of a cgroup waits on kernel bookkeeping, and the hierarchies are
/// independent of each other.
pub(crate) fn remove_subtrees(dirs: &[PathBuf], timeout: Duration) -> Result<()> {
    // Threads only pay off for several existing subtrees (a nested
    // container sharing its parent's cgroups has just its freezer one).
    let dirs: Vec<&PathBuf> = dirs.iter().filter(|d| d.exists()).collect();
    if let [only] = dirs.as_slice() {
        return remove_subtree(only, timeout);
    }
    thread::scope(|scope| {
        let handles: Vec<_> = dirs
            .iter()
            .map(|dir| scope.spawn(move || remove_subtree(dir, timeout)))
            .collect();
        let mut result = Ok(());
        for handle in handles {
            let outcome = handle.join().unwrap_or_else(|_| {
                Err(CgroupError::Invalid(
                    "a cgroup removal thread panicked".to_owned(),
                ))
            });
            if result.is_ok() {
                result = outcome;
            }
        }
        result
    })
}

/// Freezes a v1 freezer cgroup (and so its descendants); false if it did not
/// reach FROZEN in time (a task stuck in the kernel).
fn freeze_v1(dir: &Path) -> Result<bool> {
    let state = dir.join("freezer.state");
    let deadline = Instant::now() + FREEZE_TIMEOUT;
    let mut backoff = Backoff::new(Duration::from_micros(100));
    loop {
        // Re-writing FROZEN retries the tasks that were busy last time.
        fsops::write(&state, "FROZEN")?;
        if fsops::read(&state)?.trim() == "FROZEN" {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        backoff.sleep();
    }
}

/// Kills every process in a v1 freezer subtree and returns once it is
/// empty. `add_pid` joins the freezer first, so every process we placed is
/// there; only when the freezer cgroup is gone (a destroy cut short) are the
/// other controllers' subtrees searched for survivors instead, without a
/// freeze.
pub(crate) fn kill_v1(freezer_dir: &Path, others: &[PathBuf], timeout: Duration) -> Result<()> {
    let mut dirs = fsops::subtree_bottom_up(freezer_dir)?;
    // Nothing to freeze when no process is left: nothing can fork either.
    if !dirs.is_empty() && !all_empty(&dirs)? {
        let frozen = freeze_v1(freezer_dir)?;
        if !frozen {
            tracing::warn!(cgroup = %freezer_dir.display(), "freeze did not complete; killing without it");
        }
        let sent = signal_all(&dirs)?;
        fsops::write(&freezer_dir.join("freezer.state"), "THAWED")?;
        tracing::debug!(cgroup = %freezer_dir.display(), signalled = sent, frozen, "killed cgroup tasks");
    }
    if dirs.is_empty() {
        for other in others {
            dirs.extend(fsops::subtree_bottom_up(other)?);
        }
    }
    wait_empty(&dirs, freezer_dir, timeout)
}

/// Kills every process in a v2 subtree: `cgroup.kill` where the kernel has
/// it, else freeze, SIGKILL, thaw. Returns once the subtree is empty.
pub(crate) fn kill_v2(dir: &Path, timeout: Duration) -> Result<()> {
    kill_v2_with(dir, timeout, true)
}

/// [`kill_v2`], optionally ignoring `cgroup.kill` (to exercise the freeze
/// path on kernels that have it).
fn kill_v2_with(dir: &Path, timeout: Duration, use_kill_file: bool) -> Result<()> {
    let dirs = fsops::subtree_bottom_up(dir)?;
    if dirs.is_empty() {
        return Ok(());
    }
    let kill_file = dir.join("cgroup.kill");
    if use_kill_file && kill_file.exists() {
        fsops::write(&kill_file, "1")?;
    } else {
        let freeze = dir.join("cgroup.freeze");
        fsops::write(&freeze, "1")?;
        let deadline = Instant::now() + FREEZE_TIMEOUT;
        let mut backoff = Backoff::new(Duration::from_millis(1));
        while !is_frozen_v2(dir)? && Instant::now() < deadline {
            backoff.sleep();
        }
        signal_all(&dirs)?;
        fsops::write(&freeze, "0")?;
    }
    wait_empty(&dirs, dir, timeout)
}

fn is_frozen_v2(dir: &Path) -> Result<bool> {
    let events = fsops::read_flat_keyed(&dir.join("cgroup.events"))?;
    Ok(fsops::lookup(&events, "frozen") == Some(1))
}

/// Removes `dir` and everything below it, deepest first; missing is fine.
pub(crate) fn remove_subtree(dir: &Path, timeout: Duration) -> Result<()> {
    for d in fsops::subtree_bottom_up(dir)? {
        fsops::rmdir_retry(&d, timeout)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

    /// Removes the test cgroup even if an assertion fails.
    struct Guard(PathBuf);

    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = kill_v2(&self.0, Duration::from_secs(5));
            let _ = remove_subtree(&self.0, Duration::from_secs(5));
        }
    }

    /// The freeze + SIGKILL + thaw fallback for v2 kernels without
    /// `cgroup.kill`, on the host's cgroup2 mount. Needs root; skipped
    /// otherwise unless CI=true.
    #[test]
    fn v2_freeze_fallback_kills_a_forking_subtree() {
        if !rustix::process::geteuid().is_root() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "needs root");
            return;
        }
        let mount = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .map(Path::new)
            .find(|m| m.join("cgroup.controllers").exists());
        let Some(mount) = mount else { return };
        let dir = mount.join(format!("nestguard-unit-kill-{}", std::process::id()));
        let _guard = Guard(dir.clone());
        std::fs::create_dir_all(dir.join("leaf")).unwrap();
        std::fs::create_dir_all(dir.join("mesos/child/leaf")).unwrap();
        let mut children = Vec::new();
        for (sub, script) in [
            ("leaf", "while :; do sleep 100 & sleep 0.01; done"),
            ("mesos/child/leaf", "sleep 100 & exec sleep 100"),
        ] {
            let child = Command::new("sh")
                .args(["-c", script])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            fsops::write(&dir.join(sub).join("cgroup.procs"), &child.id().to_string()).unwrap();
            children.push(child);
        }
        std::thread::sleep(Duration::from_millis(200));
        let before: usize = fsops::subtree_bottom_up(&dir)
            .unwrap()
            .iter()
            .map(|d| fsops::read_pids(&d.join("cgroup.procs")).unwrap().len())
            .sum();
        assert!(before >= 4, "{before}");
        kill_v2_with(&dir, Duration::from_secs(10), false).unwrap();
        assert!(all_empty(&fsops::subtree_bottom_up(&dir).unwrap()).unwrap());
        assert!(!is_frozen_v2(&dir).unwrap(), "thawed again");
        for mut child in children {
            assert!(!child.wait().unwrap().success());
        }
        remove_subtree(&dir, Duration::from_secs(5)).unwrap();
        assert!(!dir.exists());
    }
}
