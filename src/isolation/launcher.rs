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

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use nix::sched::CloneFlags;
use nix::sys::signal::Signal;
use prost::Message;

use super::cgroups::{CgroupError, ContainerProcesses};
use super::channel::{self, Control, PidRecord, Report};
use super::command::{self, CommandError};
use super::kill::{self, CgroupKiller, ContainerKiller, KillError, PidNamespaceKiller, Target};
use super::namespaces::{self, NamespaceError};
use super::paths::{self, CONFIG_FILE, LAUNCH_INFO_FILE, PID_FILE, STATUS_FILE, TERMINATION_FILE};
use super::process::{self, ProcessError};
use super::sandbox::{self, SandboxError};
use crate::checkpoint::{self, CheckpointError};
use crate::container_id::{self, ContainerIdError};
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerTermination};
use crate::proto::mesos::{ContainerId, ContainerInfo};

/// Raw status for a container whose status is unknown: killed by SIGKILL, as
/// Mesos reads a missing or empty `status` file.
pub const UNKNOWN_STATUS: i32 = libc::SIGKILL;

/// How long a launch waits for the helper's report: a helper that cannot
/// start the container (e.g. blocked joining a frozen cgroup) must not hold
/// the launch, and any destroy of its ancestors, forever.
const REPORT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long destroy waits for a killed container to be gone.
const DESTROY_TIMEOUT: Duration = Duration::from_secs(30);

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
        }
    }
}

/// `nestguard-launch` beside the shared object (or executable) this code is
/// in; for test binaries in `deps/`, the directory above it.
pub fn default_helper_path() -> PathBuf {
    let mut info: libc::Dl_info = unsafe_zeroed_dl_info();
    let addr = default_helper_path as *const libc::c_void;
    // SAFETY: dladdr only reads the address and fills `info`.
    let found = unsafe { libc::dladdr(addr, &mut info) } != 0 && !info.dli_fname.is_null();
    let object = if found {
        // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
        let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        PathBuf::from(std::ffi::OsStr::new(
            std::str::from_utf8(name.to_bytes()).unwrap_or_default(),
        ))
    } else {
        std::env::current_exe().unwrap_or_default()
    };
    let dir = object.parent().map(Path::to_path_buf).unwrap_or_default();
    let beside = dir.join(HELPER_NAME);
    if !beside.exists()
        && dir.file_name().is_some_and(|n| n == "deps")
        && let Some(up) = dir.parent()
    {
        return up.join(HELPER_NAME);
    }
    beside
}

fn unsafe_zeroed_dl_info() -> libc::Dl_info {
    libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
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

#[derive(Debug)]
struct Container {
    id: ContainerId,
    runtime: PathBuf,
    sandbox: Option<PathBuf>,
    /// The supervisor's identity; `None` if it never started.
    pid: Option<PidRecord>,
    /// Readable once the supervisor exits; `None` once known to have exited.
    pidfd: Option<OwnedFd>,
    /// The helper process when this launcher spawned it.
    helper: Option<Child>,
    /// Raw wait status once the container exited.
    status: Option<i32>,
}

impl Container {
    fn target(&self) -> Option<Target<'_>> {
        self.pid.map(|r| Target {
            id: &self.id,
            pid: r.pid,
            start_time: r.start_time,
            own_pid_namespace: r.own_pid_namespace,
            pidfd: self.pidfd.as_ref().map(|f| f.as_fd()),
        })
    }

    /// Reads the exit status once the supervisor is gone.
    fn finish(&mut self) -> Result<i32, LauncherError> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        // The helper exits right after the supervisor; it is reaped now if
        // it already has, at destroy otherwise: the status does not depend
        // on it, and waiting here would delay every wait.
        if let Some(helper) = self.helper.as_mut()
            && !matches!(helper.try_wait(), Ok(None))
        {
            self.helper = None;
        }
        let status = read_status(&self.runtime)?;
        self.pidfd = None;
        self.status = Some(status);
        Ok(status)
    }
}

/// Runs `write` with SIGPIPE blocked on this thread and discards a SIGPIPE it
/// raised: a helper that dies early must give the host EPIPE, not kill it
/// (the host, e.g. a Mesos agent, may not ignore SIGPIPE).
fn without_sigpipe<T>(write: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
    let mut pipe = SigSet::empty();
    pipe.add(Signal::SIGPIPE);
    let mut old = SigSet::empty();
    let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&pipe), Some(&mut old)).is_ok();
    let result = write();
    if blocked && !old.contains(Signal::SIGPIPE) {
        if matches!(&result, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: consumes the pending thread-directed SIGPIPE, if any.
            unsafe { libc::sigtimedwait(pipe.as_ref(), std::ptr::null_mut(), &zero) };
        }
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
    result
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

#[derive(Debug, Default)]
struct Pending {
    launching: HashSet<String>,
    destroying: HashSet<String>,
}

fn in_subtree(key: &str, root: &str) -> bool {
    key == root || (key.starts_with(root) && key.as_bytes().get(root.len()) == Some(&b'.'))
}

/// Removes a key from the pending sets when a launch or destroy ends, on
/// every path.
struct PendingGuard<'a> {
    launcher: &'a Launcher,
    key: String,
    destroying: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        let mut pending = self.launcher.pending();
        if self.destroying {
            pending.destroying.remove(&self.key);
        } else {
            pending.launching.remove(&self.key);
        }
        self.launcher.launched.notify_all();
    }
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

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Container>> {
        reap_strays();
        self.containers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The sandbox a container was launched with, if known.
    pub fn sandbox(&self, id: &ContainerId) -> Option<PathBuf> {
        self.lock()
            .get(&container_id::to_dotted(id))
            .and_then(|c| c.sandbox.clone())
    }

    /// Mesos' `ContainerState` of every managed container, parents first:
    /// its id, supervisor pid (0 if it never started) and sandbox.
    pub fn states(&self) -> Vec<crate::proto::mesos::slave::ContainerState> {
        self.lock()
            .values()
            .map(|c| crate::proto::mesos::slave::ContainerState {
                container_id: c.id.clone(),
                pid: c.pid.map_or(0, |p| u64::try_from(p.pid).unwrap_or(0)),
                directory: c
                    .sandbox
                    .as_ref()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                ..Default::default()
            })
            .collect()
    }

    /// Every container this launcher manages (dotted form), parents first.
    pub fn containers(&self) -> Vec<ContainerId> {
        self.lock().values().map(|c| c.id.clone()).collect()
    }

    /// Launches `id` (top-level or nested) running `info`, with its sandbox
    /// at `sandbox`; `container` supplies the hostname and
    /// `LinuxInfo.share_pid_namespace`. Returns the supervisor's pid once the
    /// container runs and its `pid` is checkpointed.
    pub fn launch(
        &self,
        id: &ContainerId,
        info: &ContainerLaunchInfo,
        container: Option<&ContainerInfo>,
        sandbox: &Path,
    ) -> Result<i32, LauncherError> {
        container_id::validate(id)?;
        command::validate(info)?;
        // Compiled (or found in the cache) before anything is spawned.
        let seccomp = super::seccomp::filters_for(info)?;
        let nested = id.parent.is_some();
        let plan = namespaces::plan(
            nested,
            self.options.mode == Mode::Posix,
            self.options.defences.own_uts,
            info,
            container,
        )?;
        if !nested
            && !self.options.allow_sharing_agent_pid_namespace
            && namespaces::shares_pid_namespace(container)
        {
            return Err(NamespaceError::SharingAgentPidNamespace.into());
        }
        let key = container_id::to_dotted(id);
        let containers = self.lock();
        let mut pending = self.pending();
        let runtime = paths::runtime_path(&self.options.runtime_dir, id);
        if containers.contains_key(&key) || pending.launching.contains(&key) || runtime.exists() {
            return Err(LauncherError::Exists(key));
        }
        if let Some(d) = pending.destroying.iter().find(|d| in_subtree(&key, d)) {
            return Err(LauncherError::ParentNotRunning(d.clone()));
        }
        // The outermost sandbox first: mounts from sandboxes are resolved
        // below it (see `mounts::apply`).
        let mut sandboxes: Vec<PathBuf> =
            std::iter::successors(id.parent.as_deref(), |p| p.parent.as_deref())
                .filter_map(|p| containers.get(&container_id::to_dotted(p))?.sandbox.clone())
                .collect();
        sandboxes.reverse();
        sandboxes.push(sandbox.to_path_buf());
        let parent = match id.parent.as_deref() {
            None => None,
            Some(p) => {
                let pkey = container_id::to_dotted(p);
                let running = containers
                    .get(&pkey)
                    .filter(|c| c.status.is_none())
                    .and_then(|c| c.pid)
                    .filter(|r| process::is_running(r.pid, r.start_time).unwrap_or(false))
                    .map(|r| (r.pid, r.start_time));
                Some(running.ok_or(LauncherError::ParentNotRunning(pkey))?)
            }
        };
        // A nested container without a pid namespace of its own lives in
        // the one it entered (its parent's) or, entering none, the agent's.
        // If that is the agent's (a parent without its own pid namespace),
        // its fresh /proc would list every host process: refused unless the
        // operator allows sharing the agent's pid namespace (the posix
        // launcher has no namespaces: every container shares it).
        if let Some((ppid, _)) = parent
            && self.options.mode != Mode::Posix
            && !self.options.allow_sharing_agent_pid_namespace
            && !plan.clone.contains(CloneFlags::CLONE_NEWPID)
            && (!plan.enter.contains(CloneFlags::CLONE_NEWPID)
                || namespaces::in_our_pid_namespace(ppid)?)
        {
            return Err(NamespaceError::JoiningAgentPidNamespace.into());
        }
        pending.launching.insert(key.clone());
        drop(pending);
        drop(containers);
        let _pending = PendingGuard {
            launcher: self,
            key: key.clone(),
            destroying: false,
        };
        // The helper is spawned first (usually it was, by the previous
        // launch: see `spare`), so its exec and start-up overlap with the
        // sandbox and checkpoint work below. It blocks on its stdin until the
        // launch data arrives, so nothing of the container starts before
        // that work is done (and durable).
        let mut helper = self.take_helper()?;
        let control = Control {
            runtime_dir: runtime.clone(),
            sandbox: sandbox.to_path_buf(),
            parent,
            enter: plan.enter.bits(),
            clone: plan.clone.bits(),
            hostname: container.and_then(|c| c.hostname.clone()),
            cgroup_procs: Vec::new(),
            read_only_paths: self.options.defences.read_only_paths,
            sandboxes,
            seccomp: seccomp.to_vec(),
            sandbox_identity: None,
        };
        // A nested sandbox is made below the outermost one (the top-level
        // container's, in a directory of the agent), since every directory
        // between them belongs to a tenant; a top-level one below its
        // parent (the agent's).
        let sandbox_root = match control.sandboxes.as_slice() {
            [outermost, _, ..] => Ok(outermost.clone()),
            _ if nested => Err(SandboxError::UnknownOutermost(sandbox.to_path_buf())),
            _ => Ok(sandbox.parent().unwrap_or(sandbox).to_path_buf()),
        };
        let mut control = control;
        let mut created = false;
        let prepared = sandbox_root
            .and_then(|root| {
                sandbox::create_in(
                    &root,
                    sandbox,
                    info.user.as_deref(),
                    info.rootfs.as_deref().map(Path::new),
                )
            })
            .map_err(LauncherError::from)
            .and_then(|identity| {
                control.sandbox_identity = Some((identity.dev, identity.ino));
                if let Some(up) = runtime.parent() {
                    // Below the runtime dir only, never through a symbolic link
                    // (defence in depth: `id` was validated above).
                    crate::beneath::create_dir_all(&self.options.runtime_dir, up, 0o755)
                        .map_err(|e| std::io::Error::other(e.to_string()))
                        .map_err(io("create directory", up))?;
                }
                std::fs::create_dir(&runtime).map_err(io("create directory", &runtime))?;
                created = true;
                self.checkpoint_config(&runtime, info, container, sandbox)
            });
        let started = prepared
            .and_then(|()| {
                if let Some(cgroups) = &self.cgroups {
                    control.cgroup_procs = cgroups.procs_files(id)?;
                }
                Ok(channel::encode(&control, info)?)
            })
            .and_then(|data| self.handshake(&mut helper, &data));
        let (pid, start_time) = match started {
            Ok(s) => s,
            Err(e) => {
                let _ = helper.kill();
                let _ = helper.wait();
                if created {
                    let _ = std::fs::remove_dir_all(&runtime);
                }
                return Err(e);
            }
        };
        let pidfd = process::pidfd_open(pid)
            .ok()
            .filter(|_| process::is_running(pid, start_time).unwrap_or(false));
        tracing::debug!(container = %key, pid, nested, "container launched");
        self.lock().insert(
            key,
            Container {
                id: id.clone(),
                runtime,
                sandbox: Some(sandbox.to_path_buf()),
                pid: Some(PidRecord {
                    pid,
                    start_time,
                    own_pid_namespace: plan.clone.contains(nix::sched::CloneFlags::CLONE_NEWPID),
                }),
                pidfd,
                helper: Some(helper),
                status: None,
            },
        );
        Ok(pid)
    }

    fn checkpoint_config(
        &self,
        runtime: &Path,
        info: &ContainerLaunchInfo,
        container: Option<&ContainerInfo>,
        sandbox: &Path,
    ) -> Result<(), LauncherError> {
        let config = ContainerConfig {
            directory: sandbox.to_string_lossy().into_owned(),
            user: info.user.clone(),
            command_info: info.command.clone().unwrap_or_default(),
            container_info: container.cloned(),
            ..Default::default()
        };
        checkpoint::write_message(&runtime.join(CONFIG_FILE), &config)?;
        checkpoint::write_message(&runtime.join(LAUNCH_INFO_FILE), info)?;
        Ok(())
    }

    fn helper_error(&self, what: String) -> LauncherError {
        LauncherError::Helper {
            path: self.options.helper.clone(),
            what,
        }
    }

    /// Spawns `nestguard-launch` with pipes for its stdin (launch data) and
    /// stdout (report). Its stderr is discarded until it has the sandbox's.
    fn spawn_helper(&self) -> Result<Child, LauncherError> {
        Command::new(&self.options.helper)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| self.helper_error(format!("spawn: {e}")))
    }

    /// The spare helper if it is still alive, else a new one.
    fn take_helper(&self) -> Result<Child, LauncherError> {
        let spare = self
            .spare
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(mut helper) = spare {
            if matches!(helper.try_wait(), Ok(None)) {
                return Ok(helper);
            }
            let _ = helper.kill();
            let _ = helper.wait();
        }
        self.spawn_helper()
    }

    /// Spawns the next launch's helper, unless one is ready. A failure only
    /// means the next launch spawns its own.
    fn refill_spare(&self) {
        let mut spare = self
            .spare
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if spare.is_none() {
            *spare = self.spawn_helper().ok();
        }
    }

    /// Sends the launch data and reads the report: the supervisor's pid and
    /// start time. On error the caller kills and reaps the helper. While the
    /// helper works, the next launch's helper is spawned.
    fn handshake(&self, helper: &mut Child, data: &[u8]) -> Result<(i32, u64), LauncherError> {
        let err = |what: String| self.helper_error(what);
        let written = match helper.stdin.take() {
            Some(mut stdin) => without_sigpipe(|| stdin.write_all(data)),
            None => Err(std::io::Error::other("no stdin pipe")),
        };
        if written.is_ok() {
            self.refill_spare();
        }
        let mut line = String::new();
        let read = match helper.stdout.take() {
            Some(out) => match process::wait_readable(out.as_fd(), Some(REPORT_TIMEOUT)) {
                Ok(true) => BufReader::new(out).read_line(&mut line),
                Ok(false) => {
                    return Err(err(format!(
                        "no report within {}s",
                        REPORT_TIMEOUT.as_secs()
                    )));
                }
                Err(e) => Err(std::io::Error::other(e)),
            },
            None => Ok(0),
        };
        match (written, read) {
            // The helper's own report says more than EPIPE.
            (Err(e), Ok(0) | Err(_)) => Err(err(format!("write launch data: {e}"))),
            (_, Err(e)) => Err(err(format!("read report: {e}"))),
            (_, Ok(0)) => Err(err("exited without reporting".into())),
            _ => match Report::parse(&line).map_err(|e| err(e.to_string()))? {
                Report::Started { pid, start_time } => Ok((pid, start_time)),
                Report::Failed(text) => Err(err(text)),
            },
        }
    }

    /// The pidfd of a running container: readable once it exited. Borrowed
    /// from the launcher, valid until the container is destroyed. `None` if
    /// the container already exited.
    pub fn wait_fd(&self, id: &ContainerId) -> Result<Option<std::os::fd::RawFd>, LauncherError> {
        use std::os::fd::AsRawFd;
        let key = container_id::to_dotted(id);
        let containers = self.lock();
        let c = containers.get(&key).ok_or(LauncherError::Unknown(key))?;
        Ok(c.pidfd.as_ref().map(|f| f.as_raw_fd()))
    }

    /// Waits up to `timeout` (`None`: forever) for `id` to exit and returns
    /// its raw wait status (exit 1 → 256, SIGKILL → 9), `Ok(None)` on timeout.
    /// Works for containers recovered after a restart and for destroyed
    /// nested containers (from their `termination` checkpoint).
    pub fn wait(
        &self,
        id: &ContainerId,
        timeout: Option<Duration>,
    ) -> Result<Option<i32>, LauncherError> {
        container_id::validate(id)?;
        let key = container_id::to_dotted(id);
        let fd = {
            let mut containers = self.lock();
            let Some(c) = containers.get_mut(&key) else {
                drop(containers);
                return self.terminated_status(id).map(Some);
            };
            match c.pidfd.as_ref() {
                None => return c.finish().map(Some),
                Some(fd) => fd.try_clone().map_err(io("dup pidfd of", &c.runtime))?,
            }
        };
        if !process::wait_readable(fd.as_fd(), timeout)? {
            return Ok(None);
        }
        let mut containers = self.lock();
        match containers.get_mut(&key) {
            Some(c) => c.finish().map(Some),
            None => self.terminated_status(id).map(Some),
        }
    }

    fn terminated_status(&self, id: &ContainerId) -> Result<i32, LauncherError> {
        let key = container_id::to_dotted(id);
        if id.parent.is_none() {
            return Err(LauncherError::Unknown(key));
        }
        let path = paths::runtime_path(&self.options.runtime_dir, id).join(TERMINATION_FILE);
        if !path.exists() {
            return Err(LauncherError::Unknown(key));
        }
        let t: ContainerTermination = checkpoint::read_message(&path)?;
        Ok(t.status.unwrap_or(UNKNOWN_STATUS))
    }

    /// Sends `signal` to the container's supervisor, which forwards it to the
    /// command. Returns false if the container already exited.
    pub fn kill(&self, id: &ContainerId, signal: i32) -> Result<bool, LauncherError> {
        let signal = Signal::try_from(signal).map_err(|_| LauncherError::Signal(signal))?;
        let key = container_id::to_dotted(id);
        let containers = self.lock();
        let c = containers
            .get(&key)
            .ok_or_else(|| LauncherError::Unknown(key.clone()))?;
        let Some(target) = c.target().filter(|_| c.status.is_none()) else {
            return Ok(false);
        };
        if !process::is_running(target.pid, target.start_time)? {
            return Ok(false);
        }
        kill::kill_supervisor(&target, signal).map_err(|e| LauncherError::Kill(key, e))?;
        Ok(true)
    }

    /// Destroys `id` and everything nested in it, children first: kills every
    /// process, waits until they are gone, checkpoints `termination` for
    /// nested containers and removes a top-level container's runtime
    /// directory. Idempotent: returns the raw status of `id`, or `None` if
    /// it is unknown.
    pub fn destroy(&self, id: &ContainerId) -> Result<Option<i32>, LauncherError> {
        container_id::validate(id)?;
        let key = container_id::to_dotted(id);
        let prefix = format!("{key}.");
        // Block new launches under `id`, and let those in flight finish so
        // that they are destroyed too.
        {
            let mut pending = self.pending();
            pending.destroying.insert(key.clone());
            while pending.launching.iter().any(|k| in_subtree(k, &key)) {
                pending = self
                    .launched
                    .wait(pending)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
        let _pending = PendingGuard {
            launcher: self,
            key: key.clone(),
            destroying: true,
        };
        let mut containers = self.lock();
        let mut subtree: Vec<String> = containers
            .keys()
            .filter(|k| **k == key || k.starts_with(&prefix))
            .cloned()
            .collect();
        if subtree.is_empty() {
            drop(containers);
            return match self.terminated_status(id) {
                Ok(s) => Ok(Some(s)),
                Err(LauncherError::Unknown(_)) => {
                    if self.adopt_checkpointed(id)? {
                        // Checkpointed but never recovered: destroy it for
                        // real rather than dropping its checkpoints.
                        self.destroy(id).map(|_| None)
                    } else {
                        Ok(None)
                    }
                }
                Err(e) => Err(e),
            };
        }
        // Deepest first: a parent's namespaces outlive its children.
        subtree.sort_by_key(|k| std::cmp::Reverse(k.matches('.').count()));
        // Signal every container first (children first) so the kernel tears
        // them down in parallel — all at once where the killer can (cgroups)
        // — then wait for each and record its status.
        let all_killed = match containers.get(&key).and_then(Container::target) {
            Some(target) => self
                .killer
                .kill_subtree(&target)
                .map_err(|e| LauncherError::Kill(key.clone(), e))?,
            None => false,
        };
        for k in subtree.iter().filter(|_| !all_killed) {
            // Exited containers too: in a shared pid namespace, what the
            // command left behind lives on in its session.
            if let Some(c) = containers.get(k)
                && let Some(target) = c.target()
            {
                self.killer
                    .kill_all(&target)
                    .map_err(|e| LauncherError::Kill(k.clone(), e))?;
            }
        }
        let mut result = None;
        for k in subtree {
            let Some(c) = containers.get_mut(&k) else {
                continue;
            };
            let status = self.destroy_one(&k, c, !all_killed)?;
            // A container known only from its cgroups has no runtime
            // directory to record anything in.
            if c.id.parent.is_some() && c.runtime.is_dir() {
                let termination = ContainerTermination {
                    status: Some(status),
                    message: Some("container destroyed".into()),
                    ..Default::default()
                };
                checkpoint::write_message(&c.runtime.join(TERMINATION_FILE), &termination)?;
            }
            if k == key {
                result = Some(status);
            }
            containers.remove(&k);
        }
        // The subtree's cgroups at once, children first, now that none of
        // its containers has a process left.
        if let Some(cgroups) = &self.cgroups {
            cgroups.destroy(id)?;
        }
        if id.parent.is_none() {
            let runtime = paths::runtime_path(&self.options.runtime_dir, id);
            match std::fs::remove_dir_all(&runtime) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("remove", &runtime)(e));
                }
                _ => {}
            }
        }
        tracing::debug!(container = %key, status = ?result, "container destroyed");
        Ok(result)
    }

    /// Takes over a top-level container that has checkpoints but is not
    /// managed (recover was not called for it), with everything under it.
    /// Returns false if there is nothing to take over.
    fn adopt_checkpointed(&self, id: &ContainerId) -> Result<bool, LauncherError> {
        let runtime = paths::runtime_path(&self.options.runtime_dir, id);
        if id.parent.is_some() || !runtime.is_dir() {
            return Ok(false);
        }
        let key = container_id::to_dotted(id);
        let mut containers = self.lock();
        if !containers.contains_key(&key) {
            containers.insert(key.clone(), recover_one(id, &runtime)?);
        }
        let known = HashSet::from([key]);
        let mut orphans = Vec::new();
        self.recover_dir(
            &runtime.join(paths::CONTAINERS),
            Some(id),
            &known,
            &mut containers,
            &mut orphans,
        )?;
        Ok(true)
    }

    /// Waits for one killed container to be gone and records its status;
    /// `kill`: make sure of the kill first (not needed after a subtree kill,
    /// which returns only once every process is gone).
    fn destroy_one(&self, key: &str, c: &mut Container, kill: bool) -> Result<i32, LauncherError> {
        if let Some(target) = c.target() {
            if kill {
                self.killer
                    .kill_all(&target)
                    .map_err(|e| LauncherError::Kill(key.to_owned(), e))?;
            }
            if let Some(fd) = c.pidfd.as_ref()
                && !process::wait_readable(fd.as_fd(), Some(DESTROY_TIMEOUT))?
            {
                return Err(LauncherError::Timeout(key.to_owned(), DESTROY_TIMEOUT));
            }
        }
        let status = c.finish()?;
        // The supervisor is gone, so its helper exits at once.
        if let Some(mut helper) = c.helper.take() {
            let _ = helper.wait();
        }
        Ok(status)
    }

    /// Rebuilds the container tree from the runtime directory (and, with
    /// cgroups, from the containers that have cgroups) after a restart.
    /// `known` are the containers the caller (the agent) knows; every
    /// container whose root is not among them is an orphan, and so is every
    /// container that has cgroups but no checkpoints: it is managed like any
    /// other (so it can be destroyed) and returned. Containers that exited
    /// while nobody watched keep their checkpointed status.
    pub fn recover(&self, known: &[ContainerId]) -> Result<Vec<ContainerId>, LauncherError> {
        let known: HashSet<String> = known.iter().map(container_id::to_dotted).collect();
        let mut containers = self.lock();
        let mut orphans = Vec::new();
        let root = self.options.runtime_dir.join(paths::CONTAINERS);
        self.recover_dir(&root, None, &known, &mut containers, &mut orphans)?;
        self.recover_cgroups(&mut containers, &mut orphans)?;
        tracing::info!(
            containers = containers.len(),
            orphans = orphans.len(),
            "launcher recovered"
        );
        Ok(orphans)
    }

    /// Containers that have cgroups but no checkpoints: the agent stopped
    /// between creating a container's cgroups and checkpointing its launch,
    /// or while destroying it. What may run in them was never reported as
    /// running, so they are orphans (destroyed through their cgroups, as
    /// Mesos' launcher does with freezer cgroups it does not know).
    fn recover_cgroups(
        &self,
        containers: &mut BTreeMap<String, Container>,
        orphans: &mut Vec<ContainerId>,
    ) -> Result<(), LauncherError> {
        let Some(cgroups) = &self.cgroups else {
            return Ok(());
        };
        // Cgroups in a root another agent owns are that agent's containers,
        // not orphans: refuse (naming the owner) rather than destroy them.
        let _claim = cgroups.claim_for_recovery()?;
        for id in cgroups.scan()? {
            let key = container_id::to_dotted(&id);
            if containers.contains_key(&key) {
                continue;
            }
            tracing::warn!(container = %key, "cgroups without checkpoints: orphan");
            containers.insert(
                key,
                Container {
                    runtime: paths::runtime_path(&self.options.runtime_dir, &id),
                    id: id.clone(),
                    sandbox: None,
                    pid: None,
                    pidfd: None,
                    helper: None,
                    status: None,
                },
            );
            orphans.push(id);
        }
        Ok(())
    }

    fn recover_dir(
        &self,
        dir: &Path,
        parent: Option<&ContainerId>,
        known: &HashSet<String>,
        containers: &mut BTreeMap<String, Container>,
        orphans: &mut Vec<ContainerId>,
    ) -> Result<(), LauncherError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io("read directory", dir)(e)),
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        for name in names {
            let id = ContainerId {
                value: name,
                parent: parent.map(|p| Box::new(p.clone())),
            };
            container_id::validate(&id)?;
            let key = container_id::to_dotted(&id);
            let runtime = dir.join(&id.value);
            let finished = runtime.join(TERMINATION_FILE).exists();
            if !finished && !containers.contains_key(&key) {
                let orphan = !known.contains(&container_id::to_dotted(container_id::root(&id)));
                containers.insert(key, recover_one(&id, &runtime)?);
                if orphan {
                    orphans.push(id.clone());
                }
            }
            self.recover_dir(
                &runtime.join(paths::CONTAINERS),
                Some(&id),
                known,
                containers,
                orphans,
            )?;
        }
        Ok(())
    }
}

fn recover_one(id: &ContainerId, runtime: &Path) -> Result<Container, LauncherError> {
    let pid_path = runtime.join(PID_FILE);
    let pid = match std::fs::read_to_string(&pid_path) {
        Ok(text) => Some(channel::parse_pid_file(&text, pid_path.clone())?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("read", &pid_path)(e)),
    };
    // A pidfd only for the very process that was checkpointed: same pid and
    // start time, checked after opening so the fd cannot name a newcomer.
    let pidfd = pid.and_then(|r| {
        process::pidfd_open(r.pid)
            .ok()
            .filter(|_| process::is_running(r.pid, r.start_time).unwrap_or(false))
    });
    let sandbox = checkpoint::read_message::<ContainerConfig>(&runtime.join(CONFIG_FILE))
        .ok()
        .map(|c| PathBuf::from(c.directory));
    Ok(Container {
        id: id.clone(),
        runtime: runtime.to_path_buf(),
        sandbox,
        pid,
        pidfd,
        helper: None,
        status: None,
    })
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

/// Serialized size of a launch info, for callers that size buffers.
pub fn encoded_len(info: &ContainerLaunchInfo) -> usize {
    info.encoded_len()
}
