//! Launching a container: the helper (spawned one launch ahead), its
//! handshake, and the checkpoints written before the container starts.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sched::CloneFlags;
use nix::sys::signal::Signal;
use prost::Message;

use crate::checkpoint;
use crate::container_id;
use crate::isolation::channel::{self, Control, PidRecord, Report};
use crate::isolation::helper::command;
use crate::isolation::namespace_ops::{self, NamespaceError};
use crate::isolation::paths::{self, CONFIG_FILE, LAUNCH_INFO_FILE};
use crate::isolation::process;
use crate::isolation::sandbox::{self, SandboxError};
use crate::proto::mesos::slave::{ContainerClass, ContainerConfig, ContainerLaunchInfo};
use crate::proto::mesos::{ContainerId, ContainerInfo};

use super::stdio::{ContainerIo, Handoff};
use super::tree::Counted;
use super::{Container, HELPER_NAME, Launcher, LauncherError, Mode, PendingGuard, in_subtree, io};

/// How long a launch waits for the helper's report: a helper that cannot
/// start the container (e.g. blocked joining a frozen cgroup) must not hold
/// the launch, and any destroy of its ancestors, forever.
const REPORT_TIMEOUT: Duration = Duration::from_secs(60);

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

impl Launcher {
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
        self.launch_with_io(id, info, container, sandbox, None)
    }

    /// [`Launcher::launch`], the command's stdio being `stdio` when given
    /// (else the sandbox's `stdout`/`stderr` files and `/dev/null`).
    pub fn launch_with_io(
        &self,
        id: &ContainerId,
        info: &ContainerLaunchInfo,
        container: Option<&ContainerInfo>,
        sandbox: &Path,
        stdio: Option<&ContainerIo<'_>>,
    ) -> Result<i32, LauncherError> {
        let started = std::time::Instant::now();
        let launched = self.launch_timed(id, info, container, sandbox, stdio);
        match &launched {
            Ok(_) => crate::metrics::isolation().launched(started.elapsed()),
            Err(e) if counts_as_launch_error(e) => crate::metrics::isolation().launch_failed(),
            Err(_) => {}
        }
        launched
    }

    fn launch_timed(
        &self,
        id: &ContainerId,
        info: &ContainerLaunchInfo,
        container: Option<&ContainerInfo>,
        sandbox: &Path,
        stdio: Option<&ContainerIo<'_>>,
    ) -> Result<i32, LauncherError> {
        let Checked {
            handoff,
            debug,
            seccomp,
            nested,
            mut plan,
        } = self.check(id, info, container, stdio)?;
        let Reservation {
            key,
            runtime,
            sandboxes,
            parent,
            user_range,
            parent_owner,
        } = self.reserve(id, sandbox, &plan)?;
        let _pending = PendingGuard {
            launcher: self,
            key: key.clone(),
            destroying: false,
        };
        let user_namespace = user_range
            .map(|r| {
                let place = super::user_ranges::Placement {
                    sandboxes: &sandboxes,
                    nested,
                    parent_owner,
                };
                self.user_namespace_control(r, &mut plan, info, place)
            })
            .transpose()?;
        // The helper is spawned first (usually it was, by the previous
        // launch: see `spare`), so its exec and start-up overlap with the
        // sandbox and checkpoint work below. It blocks on its stdin until the
        // launch data arrives, so nothing of the container starts before
        // that work is done (and durable). A launch with its own stdio
        // spawns a helper that inherits it.
        let mut helper = match &handoff {
            Some(handoff) => self.spawn_helper_with(Some(handoff))?,
            None => self.take_helper()?,
        };
        let stdio = handoff.as_ref().map(Handoff::kind);
        // The helper has its copies.
        drop(handoff);
        let mut control = Control {
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
            stdio,
            user_namespace,
        };
        let mut created = false;
        let pod_base = user_range.map(|r| r.base);
        let prepared = create_sandbox(&control.sandboxes, nested, sandbox, info, pod_base)
            .and_then(|identity| {
                control.sandbox_identity = Some((identity.dev, identity.ino));
                self.create_runtime_dir(&runtime)?;
                created = true;
                if let Some(range) = user_range.filter(|_| !nested) {
                    super::user_ranges::checkpoint_range(&runtime, range)?;
                }
                if let Some(owner) = user_namespace.and_then(|u| u.owner) {
                    super::user_ranges::checkpoint_owner(&runtime, owner)?;
                }
                self.checkpoint_config(&runtime, info, container, sandbox, debug)
            });
        let started = prepared
            .and_then(|()| self.encode_control(id, &mut control, info))
            .and_then(|data| self.handshake(&mut helper, &data));
        let (pid, start_time) = match started {
            Ok(s) => s,
            Err(e) => {
                abandon(&mut helper, &runtime, created);
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
                counted: Counted::new(false),
                user_range: user_range.filter(|_| !nested),
                idmap_owner: user_namespace.and_then(|u| u.owner),
            },
        );
        Ok(pid)
    }

    /// The checks a launch makes before it takes any lock: the id and the
    /// command are valid, the stdio can be handed over, the seccomp filters
    /// compile (or are in the cache: before anything is spawned) and the
    /// namespace plan is allowed.
    fn check(
        &self,
        id: &ContainerId,
        info: &ContainerLaunchInfo,
        container: Option<&ContainerInfo>,
        stdio: Option<&ContainerIo<'_>>,
    ) -> Result<Checked, LauncherError> {
        container_id::validate(id)?;
        command::validate(info)?;
        let handoff = stdio.map(Handoff::new).transpose()?;
        let debug = stdio.is_some_and(|s| s.debug);
        // Compiled (or found in the cache) before anything is spawned.
        let seccomp = crate::isolation::seccomp::filters_for(info)?;
        let nested = id.parent.is_some();
        let plan = namespace_ops::plan(
            nested,
            self.options.mode == Mode::Posix,
            self.options.defences.own_uts,
            info,
            container,
        )?;
        if !nested
            && !self.options.allow_sharing_agent_pid_namespace
            && namespace_ops::shares_pid_namespace(container)
        {
            return Err(NamespaceError::SharingAgentPidNamespace.into());
        }
        Ok(Checked {
            handoff,
            debug,
            seccomp,
            nested,
            plan,
        })
    }

    /// Under both locks, refuses a launch that collides with a container
    /// (running, launching or left on disk) or lands below one being
    /// destroyed, finds the sandboxes and the running parent it nests in,
    /// and marks `id` as launching: the caller's [`PendingGuard`] unmarks it.
    fn reserve(
        &self,
        id: &ContainerId,
        sandbox: &Path,
        plan: &namespace_ops::Plan,
    ) -> Result<Reservation, LauncherError> {
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
                || namespace_ops::in_our_pid_namespace(ppid)?)
        {
            return Err(NamespaceError::JoiningAgentPidNamespace.into());
        }
        let user_range = self.reserve_user_range(id, &key, &containers, &mut pending)?;
        let parent_owner = id
            .parent
            .as_deref()
            .and_then(|p| containers.get(&container_id::to_dotted(p)))
            .and_then(|c| c.idmap_owner);
        pending.launching.insert(key.clone());
        drop(pending);
        drop(containers);
        Ok(Reservation {
            key,
            runtime,
            sandboxes,
            parent,
            user_range,
            parent_owner,
        })
    }

    /// Makes the container's runtime directory, and the directories above
    /// it below the runtime dir only, never through a symbolic link (defence
    /// in depth: the id was validated by [`Launcher::check`]).
    fn create_runtime_dir(&self, runtime: &Path) -> Result<(), LauncherError> {
        if let Some(up) = runtime.parent() {
            crate::beneath::create_dir_all(&self.options.runtime_dir, up, 0o755)
                .map_err(|e| std::io::Error::other(e.to_string()))
                .map_err(io("create directory", up))?;
        }
        std::fs::create_dir(runtime).map_err(io("create directory", runtime))?;
        Ok(())
    }

    /// The launch data for the helper: `control`, with the cgroups' procs
    /// files it joins, and `info`.
    fn encode_control(
        &self,
        id: &ContainerId,
        control: &mut Control,
        info: &ContainerLaunchInfo,
    ) -> Result<Vec<u8>, LauncherError> {
        if let Some(cgroups) = &self.cgroups {
            control.cgroup_procs = cgroups.procs_files(id)?;
        }
        Ok(channel::encode(control, info)?)
    }

    fn checkpoint_config(
        &self,
        runtime: &Path,
        info: &ContainerLaunchInfo,
        container: Option<&ContainerInfo>,
        sandbox: &Path,
        debug: bool,
    ) -> Result<(), LauncherError> {
        // The class only for a debug session (as Mesos writes it): a
        // restarted agent destroys those; others keep the checkpoint as it was.
        let config = ContainerConfig {
            directory: sandbox.to_string_lossy().into_owned(),
            user: info.user.clone(),
            command_info: info.command.clone().unwrap_or_default(),
            container_info: container.cloned(),
            container_class: debug.then_some(ContainerClass::Debug as i32),
            ..Default::default()
        };
        checkpoint::write_message(
            &runtime.join(CONFIG_FILE),
            &config,
            checkpoint::Outlives::ProcessCrash,
        )?;
        checkpoint::write_message(
            &runtime.join(LAUNCH_INFO_FILE),
            info,
            checkpoint::Outlives::ProcessCrash,
        )?;
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
        self.spawn_helper_with(None)
    }

    /// [`Launcher::spawn_helper`], handing it `stdio` when given.
    fn spawn_helper_with(&self, stdio: Option<&Handoff>) -> Result<Child, LauncherError> {
        let mut command = Command::new(&self.options.helper);
        command
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(handoff) = stdio {
            handoff.pass_to(&mut command);
        }
        command
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
}

/// What [`Launcher::check`] found, for the rest of the launch.
struct Checked {
    /// The container's own stdio, ready to hand to its helper.
    handoff: Option<Handoff>,
    /// A debug session: its checkpoint carries the class.
    debug: bool,
    /// The compiled seccomp filters.
    seccomp: std::sync::Arc<Vec<String>>,
    nested: bool,
    plan: namespace_ops::Plan,
}

/// What [`Launcher::reserve`] holds for the launch once the locks are gone.
struct Reservation {
    /// The dotted id, now in `pending.launching`.
    key: String,
    /// The container's runtime directory, not made yet.
    runtime: PathBuf,
    /// The sandboxes from the outermost down to the container's own.
    sandboxes: Vec<PathBuf>,
    /// The running parent's pid and start time, for a nested container.
    parent: Option<(i32, u64)>,
    /// The pod's host id range, in a user namespace.
    user_range: Option<crate::isolation::id_map::IdRange>,
    /// The ids the parent's binds pass besides root.
    parent_owner: Option<crate::isolation::id_map::BindOwner>,
}

/// Makes `sandbox`, owned by the command's user. A nested sandbox is made
/// below the outermost one (the top-level container's, in a directory of
/// the agent), since every directory between them belongs to a tenant; a
/// top-level one below its parent (the agent's).
fn create_sandbox(
    sandboxes: &[PathBuf],
    nested: bool,
    sandbox: &Path,
    info: &ContainerLaunchInfo,
    pod_base: Option<u32>,
) -> Result<sandbox::Identity, LauncherError> {
    let sandbox_root = match sandboxes {
        [outermost, _, ..] => Ok(outermost.clone()),
        _ if nested => Err(SandboxError::UnknownOutermost(sandbox.to_path_buf())),
        _ => Ok(sandbox.parent().unwrap_or(sandbox).to_path_buf()),
    };
    sandbox_root
        .and_then(|root| {
            sandbox::create_in(
                &root,
                sandbox,
                info.user.as_deref(),
                info.rootfs.as_deref().map(Path::new),
                pod_base,
            )
        })
        .map_err(LauncherError::from)
}

/// Undoes a launch that failed before its container started: the helper
/// is killed and reaped, and the runtime directory removed if this launch
/// made it (one left behind would refuse every later launch of the id).
fn abandon(helper: &mut Child, runtime: &Path, created: bool) {
    let _ = helper.kill();
    let _ = helper.wait();
    if created {
        let _ = std::fs::remove_dir_all(runtime);
    }
}

/// Serialized size of a launch info, for callers that size buffers.
pub fn encoded_len(info: &ContainerLaunchInfo) -> usize {
    info.encoded_len()
}

/// Whether a failed launch counts in `nestguard/isolation/launch_errors`.
/// A duplicate launch (the container exists) launched nothing and broke
/// nothing: the existing container runs on, so counting it would report a
/// fault where there is only a repeated request.
fn counts_as_launch_error(e: &LauncherError) -> bool {
    !matches!(e, LauncherError::Exists(_))
}

#[cfg(test)]
mod metric_tests {
    use super::*;

    #[test]
    fn a_duplicate_launch_is_not_a_launch_error() {
        assert!(!counts_as_launch_error(&LauncherError::Exists("a".into())));
        assert!(counts_as_launch_error(&LauncherError::ParentNotRunning(
            "a".into()
        )));
    }
}
