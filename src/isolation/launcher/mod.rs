//! The host side of the launcher: the container tree, launch, wait, kill,
//! destroy and recover.
//!
//! Spawn safety: the host (a Mesos agent) is multi-threaded, so between fork
//! and exec the child may only do async-signal-safe work. `std::process::Command`
//! guarantees that (no allocation or locks in the child) and we give it
//! nothing to run there: the child execs `nestguard-launch` at once and the
//! helper does the rest. The launch data goes through the helper's stdin.
//!
//! Latency: each launch's helper is spawned one launch ahead (a spare,
//! exec'd and idle on its stdin), so the exec and dynamic loading of the
//! helper — most of a nested launch's cost on a virtualized host — are not
//! on the critical path; the spare is replaced while the helper works.
//!
//! Every container's identity is its supervisor's pid plus start time; the
//! host watches it through a pidfd and learns the exit status from the
//! `status` checkpoint, so nothing depends on being the supervisor's parent —
//! the same path serves a container launched by this process and one
//! recovered after a restart.

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::checkpoint::CheckpointError;
use crate::container_id::ContainerIdError;
use crate::isolation::cgroups::{CgroupError, ContainerProcesses};
use crate::isolation::channel;
use crate::isolation::helper::command::CommandError;
use crate::isolation::namespace_ops::NamespaceError;
use crate::isolation::paths::{self, STATUS_FILE};
use crate::isolation::process::ProcessError;
use crate::isolation::sandbox::SandboxError;
use killer::{CgroupKiller, ContainerKiller, KillError, PidNamespaceKiller};

mod destroy;
pub mod killer;
mod launch;
mod recover;
mod stdio;
mod tree;
mod user_ranges;

pub use launch::{default_helper_path, encoded_len};
pub use stdio::{ContainerIo, StdioError};
use tree::{Container, Pending, PendingGuard, in_subtree};
pub use user_ranges::USER_NAMESPACE_FILE;

/// Raw status for a container whose status is unknown: killed by SIGKILL, as
/// Mesos reads a missing or empty `status` file.
pub const UNKNOWN_STATUS: i32 = libc::SIGKILL;

/// Name of the helper binary, looked up beside the library by default.
pub const HELPER_NAME: &str = "nestguard-launch";

/// A launcher operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    /// The id is invalid.
    #[error(transparent)]
    ContainerId(#[from] ContainerIdError),
    /// The id is not a container this launcher knows.
    #[error("unknown container '{0}'")]
    Unknown(String),
    /// The id is taken.
    #[error("container '{0}' already exists")]
    Exists(String),
    /// Nested launch under a parent that is not running.
    #[error("parent container '{0}' is not running")]
    ParentNotRunning(String),
    /// The launch info asks for something unsupported or malformed.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The namespaces asked for are not possible.
    #[error(transparent)]
    Namespace(#[from] NamespaceError),
    /// The sandbox could not be prepared.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A checkpoint could not be written or read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// procfs or a process syscall failed.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// Killing failed.
    #[error("failed to kill all processes in container '{0}': {1}")]
    Kill(String, #[source] KillError),
    /// Spawning or talking to the helper failed.
    #[error("launch helper {path}: {what}")]
    Helper {
        /// The helper path.
        path: PathBuf,
        /// What went wrong (the helper's own report when it sent one).
        what: String,
    },
    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The `status` checkpoint holds something other than a decimal status.
    #[error("status checkpoint {0} does not hold a decimal wait status")]
    BadStatus(PathBuf),
    /// The `pid` checkpoint is malformed.
    #[error(transparent)]
    Channel(#[from] channel::ChannelError),
    /// The container did not exit in time.
    #[error("container '{0}' did not exit within {1:?}")]
    Timeout(String, Duration),
    /// Placing the container in its cgroups, or removing them, failed.
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    /// A signal number that does not exist.
    #[error("invalid signal number {0}")]
    Signal(i32),
    /// The launch's seccomp profile cannot be compiled.
    #[error(transparent)]
    Seccomp(#[from] super::seccomp::SeccompError),
    /// The stdio handed to the launch is unusable.
    #[error(transparent)]
    Stdio(#[from] StdioError),
    /// The pod's range: the pool is exhausted, or its checkpoint is torn.
    #[error(transparent)]
    UserNamespace(#[from] crate::isolation::id_map::IdMapError),
    /// User namespaces cannot be used here.
    #[error("namespaces/user: {0}")]
    UserNamespaceUnsupported(&'static str),
    /// The command's user lies outside the pod's range.
    #[error(
        "namespaces/user: user '{user}' (uid {uid}, gid {gid}) is outside the pod's map \
         (ids 0 to {size} - 1): its processes could not exist in the pod's user namespace"
    )]
    UserNamespaceUser {
        /// The user's name.
        user: String,
        /// Its uid.
        uid: u32,
        /// Its primary gid.
        gid: u32,
        /// The range's size.
        size: u32,
    },
    /// A directory above the sandbox cannot be searched by the pod's ids.
    #[error(
        "namespaces/user: {dir} (above the sandbox) has mode {mode:04o}, which others cannot \
         search: the pod's mapped ids could not reach their sandbox (make it searchable, o+x, \
         as Mesos needs for any task user)"
    )]
    UserNamespaceSandbox {
        /// The directory.
        dir: PathBuf,
        /// Its mode.
        mode: u32,
    },
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> LauncherError + 'a {
    move |source| LauncherError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Which launcher: namespaces (root) or the posix fallback (no namespaces,
/// `setsid`, the process tree is killed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Namespaces as Mesos' LinuxLauncher.
    #[default]
    Linux,
    /// Mesos' SubprocessLauncher (`--launcher=posix`).
    Posix,
}

/// How to build a [`Launcher`].
#[derive(Debug, Clone)]
pub struct LauncherOptions {
    /// `--runtime_dir`: checkpoints go to `<runtime_dir>/containers/...`.
    pub runtime_dir: PathBuf,
    /// The `nestguard-launch` binary.
    pub helper: PathBuf,
    /// Linux or posix.
    pub mode: Mode,
    /// Let a top-level container share the agent's (host's) pid namespace
    /// (`LinuxInfo.share_pid_namespace`); refused by default. Mesos allows
    /// it unless `--disallow_sharing_agent_pid_namespace`; we are stricter,
    /// since such a container sees every process of the host. Also covers a
    /// nested container that would land in the agent's pid namespace (its
    /// parent has none of its own and it shares the parent's or creates
    /// none), which Mesos never refuses.
    pub allow_sharing_agent_pid_namespace: bool,
    /// Defences applied to every container (all on by default).
    pub defences: Defences,
    /// The `namespaces/user` isolator's pool: every pod runs in a user
    /// namespace of its own, mapped to a range of it.
    pub user_namespaces: Option<crate::isolation::id_map::RangePool>,
}

/// Defences of the launch path, each switchable so that a benchmark can
/// measure what it costs; all on by default, and nothing else should turn
/// them off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defences {
    /// `/proc/sys`, `/proc/sysrq-trigger`, `/proc/irq`, `/proc/bus` and
    /// `/sys` (recursively) read-only in every container with its own mount
    /// namespace (Docker's read-only paths).
    pub read_only_paths: bool,
    /// A nested container without namespace lists gets its own UTS
    /// namespace (a copy of its parent's) by default.
    pub own_uts: bool,
}

impl Default for Defences {
    fn default() -> Self {
        Defences {
            read_only_paths: true,
            own_uts: true,
        }
    }
}

impl LauncherOptions {
    /// Options with the helper found beside the running library.
    pub fn new(runtime_dir: impl Into<PathBuf>) -> Self {
        LauncherOptions {
            runtime_dir: runtime_dir.into(),
            helper: default_helper_path(),
            mode: Mode::Linux,
            allow_sharing_agent_pid_namespace: false,
            defences: Defences::default(),
            user_namespaces: None,
        }
    }
}

/// Helpers of containers whose launcher was dropped: still children of this
/// process, reaped opportunistically so they never linger as zombies.
static STRAY_HELPERS: Mutex<Vec<Child>> = Mutex::new(Vec::new());

fn reap_strays() {
    if let Ok(mut strays) = STRAY_HELPERS.lock() {
        strays.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    }
}

/// Reads `<runtime>/status`: missing or empty reads as [`UNKNOWN_STATUS`].
pub fn read_status(runtime: &Path) -> Result<i32, LauncherError> {
    let path = runtime.join(STATUS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Ok(UNKNOWN_STATUS),
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| LauncherError::BadStatus(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(UNKNOWN_STATUS),
        Err(e) => Err(io("read", &path)(e)),
    }
}

/// The nesting-aware launcher. All methods take `&self` and may be called
/// from several threads. Launches overlap (the helper handshake runs outside
/// the container lock); a blocking [`Launcher::wait`] holds no lock; destroy
/// holds the lock while it kills and waits for its subtree.
pub struct Launcher {
    options: LauncherOptions,
    killer: Box<dyn ContainerKiller>,
    cgroups: Option<Arc<dyn ContainerProcesses>>,
    containers: Mutex<BTreeMap<String, Container>>,
    /// Launches in flight and destroys in progress (dotted ids): the slow
    /// part of a launch runs without the `containers` lock, so launches from
    /// several host threads overlap.
    pending: Mutex<Pending>,
    /// Signalled when a launch finishes.
    launched: Condvar,
    /// A helper spawned ahead of the next launch, idle on its stdin: its
    /// exec and start-up are then off that launch's critical path.
    spare: Mutex<Option<Child>>,
}

impl Launcher {
    /// A launcher with the default (pid namespace / session) killer.
    pub fn new(options: LauncherOptions) -> Result<Launcher, LauncherError> {
        Self::with_killer(options, Box::new(PidNamespaceKiller))
    }

    /// A launcher with another way of killing a container's processes (e.g.
    /// a cgroup-based one).
    pub fn with_killer(
        options: LauncherOptions,
        killer: Box<dyn ContainerKiller>,
    ) -> Result<Launcher, LauncherError> {
        let root = options.runtime_dir.join(paths::CONTAINERS);
        std::fs::create_dir_all(&root).map_err(io("create directory", &root))?;
        Ok(Launcher {
            options,
            killer,
            cgroups: None,
            containers: Mutex::new(BTreeMap::new()),
            pending: Mutex::new(Pending::default()),
            launched: Condvar::new(),
            spare: Mutex::new(None),
        })
    }

    /// A launcher that places every container's processes in its cgroups
    /// (the helper joins them before it does anything else, so every
    /// descendant is inside) and kills and removes them through the cgroups.
    /// The caller (the cgroups isolator, as in Mesos) creates each
    /// container's cgroup before `launch`.
    pub fn with_cgroups(
        options: LauncherOptions,
        cgroups: Arc<dyn ContainerProcesses>,
    ) -> Result<Launcher, LauncherError> {
        let mut launcher =
            Self::with_killer(options, Box::new(CgroupKiller::new(cgroups.clone())))?;
        launcher.cgroups = Some(cgroups);
        Ok(launcher)
    }

    /// The options this launcher was built with.
    pub fn options(&self) -> &LauncherOptions {
        &self.options
    }
}

impl std::fmt::Debug for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launcher")
            .field("options", &self.options)
            .field("killer", &self.killer)
            .field("cgroups", &self.cgroups.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // The idle spare exits on EOF; kill it anyway, and reap it.
        if let Some(mut spare) = self.spare.get_mut().ok().and_then(Option::take) {
            let _ = spare.kill();
            let _ = spare.wait();
        }
        let containers =
            std::mem::take(self.containers.get_mut().unwrap_or_else(|p| p.into_inner()));
        if let Ok(mut strays) = STRAY_HELPERS.lock() {
            strays.extend(containers.into_values().filter_map(|c| c.helper));
        }
        reap_strays();
    }
}
