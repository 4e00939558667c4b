//! Killing every process of one container.
//!
//! Behind [`ContainerKiller`] so that a cgroup-based killer (freezer on v1,
//! `cgroup.kill` on v2) can replace the default later. The default,
//! [`PidNamespaceKiller`], needs no cgroups: a container with its own pid
//! namespace dies with its init (the kernel kills every process of the
//! namespace when its init dies); a container sharing a pid namespace (or
//! launched by the posix launcher) is killed as a session — the supervisor
//! made itself a session leader, and everything it started inherits the session.
//! A process that calls `setsid` itself escapes the session kill; only a
//! cgroup killer closes that gap.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::isolation::process::{self, ProcessError};

/// A container whose processes could not all be killed.
#[derive(Debug, thiserror::Error)]
pub enum KillError {
    /// Reading procfs failed.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// Sending a signal failed.
    #[error("{call}({pid}, SIGKILL): {source}")]
    Signal {
        /// The syscall.
        call: &'static str,
        /// Its target.
        pid: i32,
        /// The OS error.
        #[source]
        source: nix::Error,
    },
    /// The cgroup killer failed.
    #[error(transparent)]
    Cgroup(#[from] crate::isolation::cgroups::CgroupError),
    /// Processes kept appearing.
    #[error("processes of session {0} still alive after {1:?}")]
    Timeout(i32, Duration),
}

/// The container's supervisor, identified beyond doubt.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The container.
    pub id: &'a crate::proto::mesos::ContainerId,
    /// Supervisor pid.
    pub pid: i32,
    /// Its start time (a reused pid is never signalled).
    pub start_time: u64,
    /// Its pidfd, when the launcher holds one.
    pub pidfd: Option<BorrowedFd<'a>>,
    /// It is pid 1 of its own pid namespace: its death ends every process
    /// of the container.
    pub own_pid_namespace: bool,
}

/// Kills every process of a container. Returning `Ok` means every process
/// has been sent SIGKILL; the caller waits for the supervisor to be gone.
pub trait ContainerKiller: Send + Sync + std::fmt::Debug {
    /// Kills all processes of the container whose supervisor is `target`.
    fn kill_all(&self, target: &Target<'_>) -> Result<(), KillError>;

    /// Kills every process of `target`'s container and of all containers
    /// nested in it in one go, if this killer can; `Ok(false)` if it cannot
    /// (the caller then kills container by container). A pod's destroy is
    /// then one freeze of its subtree instead of one per container.
    fn kill_subtree(&self, target: &Target<'_>) -> Result<bool, KillError> {
        let _ = target;
        Ok(false)
    }
}

/// The default killer: pid-namespace init, else the session.
#[derive(Debug, Default, Clone, Copy)]
pub struct PidNamespaceKiller;

/// How long to chase a session's processes before giving up.
const SESSION_DEADLINE: Duration = Duration::from_secs(10);

/// Sends SIGKILL to `target`'s supervisor through its pidfd when there is one
/// (no pid-reuse window), else by pid after checking the start time.
pub fn kill_supervisor(target: &Target<'_>, signal: Signal) -> Result<(), KillError> {
    if let Some(fd) = target.pidfd {
        let sent = rustix::process::Signal::from_named_raw(signal as i32)
            .ok_or(rustix::io::Errno::INVAL)
            .and_then(|sig| rustix::process::pidfd_send_signal(fd, sig));
        match sent {
            Ok(()) | Err(rustix::io::Errno::SRCH) => return Ok(()),
            Err(e) => {
                return Err(KillError::Signal {
                    call: "pidfd_send_signal",
                    pid: target.pid,
                    source: nix::Error::from_raw(e.raw_os_error()),
                });
            }
        }
    }
    if process::is_running(target.pid, target.start_time)? {
        match kill(Pid::from_raw(target.pid), signal) {
            Ok(()) | Err(nix::Error::ESRCH) => {}
            Err(source) => {
                return Err(KillError::Signal {
                    call: "kill",
                    pid: target.pid,
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Stops, then kills, every process of session `sid` except the leader,
/// until none is left.
pub fn kill_session(sid: i32) -> Result<(), KillError> {
    let deadline = Instant::now() + SESSION_DEADLINE;
    loop {
        let members: Vec<i32> = process::session_members(sid)?
            .into_iter()
            .filter(|p| *p != sid)
            .collect();
        if members.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(KillError::Timeout(sid, SESSION_DEADLINE));
        }
        // Stop first so that nobody forks between the scan and the kill.
        for pid in &members {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGSTOP);
        }
        for pid in &members {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl ContainerKiller for PidNamespaceKiller {
    fn kill_all(&self, target: &Target<'_>) -> Result<(), KillError> {
        if !process::is_running(target.pid, target.start_time)? {
            if target.own_pid_namespace {
                // Its pid namespace died with it, and every process in it.
                return Ok(());
            }
            // The supervisor is gone, but in a shared pid namespace what it
            // started may live on in its session. The kernel never reuses a
            // pid still used as a session id, so while such processes exist
            // the pid is free or ours; a live stranger means none are left.
            let reused = process::stat(target.pid)?
                .is_some_and(|s| s.start_time != target.start_time && !s.exited());
            if !reused {
                kill_session(target.pid)?;
            }
            return Ok(());
        }
        if !target.own_pid_namespace && !process::is_pid_namespace_init(target.pid)? {
            kill_session(target.pid)?;
        }
        kill_supervisor(target, Signal::SIGKILL)
    }
}

/// Kills through the container's cgroups (freezer on v1, `cgroup.kill` on
/// v2, via [`ContainerProcesses::kill_all`]), which also catches processes
/// that left the session, then makes sure the supervisor is gone too.
///
/// [`ContainerProcesses::kill_all`]: crate::isolation::cgroups::ContainerProcesses::kill_all
#[derive(Clone)]
pub struct CgroupKiller {
    cgroups: std::sync::Arc<dyn crate::isolation::cgroups::ContainerProcesses>,
}

impl CgroupKiller {
    /// A killer over `cgroups`.
    pub fn new(cgroups: std::sync::Arc<dyn crate::isolation::cgroups::ContainerProcesses>) -> Self {
        CgroupKiller { cgroups }
    }
}

impl std::fmt::Debug for CgroupKiller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CgroupKiller")
    }
}

impl ContainerKiller for CgroupKiller {
    fn kill_all(&self, target: &Target<'_>) -> Result<(), KillError> {
        self.cgroups.kill_all(target.id)?;
        PidNamespaceKiller.kill_all(target)
    }

    /// The container's cgroup subtree holds its nested containers' cgroups.
    fn kill_subtree(&self, target: &Target<'_>) -> Result<bool, KillError> {
        self.kill_all(target)?;
        Ok(true)
    }
}
