//! The `nestguard-launch` helper: namespace setup, then the supervisor.
//!
//! Three processes (youki has the same split: main, intermediate, init):
//!
//! * **helper** — exec'd by the host right after fork. Reads the launch data
//!   from stdin, joins the container's cgroups, `setsid`s, enters the
//!   parent's namespaces, creates new ones and forks the supervisor — through
//!   a short-lived intermediate process when the pid namespace is new inside
//!   the parent's. It then waits for its child, so the host's child never
//!   becomes a zombie nobody reaps.
//! * **supervisor** — pid 1 of a new pid namespace (or a child subreaper in a
//!   shared one). Checkpoints its own host pid and start time (`pid`) and
//!   reports `ok <pid> <start>` to the host before anything of the
//!   container runs; then finishes in-namespace setup (procfs, loopback,
//!   hostname, mounts), forks the command, forwards every signal to it,
//!   reaps all descendants, and when the command exits writes its raw wait
//!   status to `status` (atomically), then exits. Setup failures write
//!   `code << 8`.
//! * **command** — signal dispositions reset, rlimits, working directory,
//!   user, capabilities, no_new_privs, `execve`.
//!
//! Every hop is on the launch's critical path, so no process waits for
//! another's go-ahead: the supervisor learns its host pid from the host's
//! procfs (opened before `setns`) instead of being told it.
//!
//! All of them are single-threaded, so work after their forks is safe.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, open, openat, renameat};
use nix::sched::CloneFlags;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::stat::Mode;
use nix::unistd::{Pid, setsid};

use super::command::{self, Prepared};
use super::exec::exec_command;
use super::mounts;
use super::rootfs;
use super::stdio::{self, Handed};
use super::user_fds::{UserFdsReady, created_user_namespaces, die_with_parent};
use super::user_namespace::{self, UserNamespaceError};
use super::vfork;
use crate::isolation::channel::{self, Control, Report};
use crate::isolation::namespace_ops;
use crate::isolation::paths::{PID_FILE, STATUS_FILE, STDERR_FILE, STDOUT_FILE};
use crate::isolation::process;
use crate::isolation::sandbox;
use crate::isolation::seccomp;
use crate::proto::mesos::slave::ContainerLaunchInfo;

/// Exit code of the command when setup or `execve` fails (status `1 << 8`,
/// as Mesos' helper).
pub(super) const SETUP_FAILURE: i32 = 1;

/// A helper step that failed; names the step and the path or syscall.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// The launch data is malformed.
    #[error(transparent)]
    Channel(#[from] channel::ChannelError),
    /// A namespace step.
    #[error(transparent)]
    Namespace(#[from] namespace_ops::NamespaceError),
    /// A procfs read.
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    /// The parent container's init is gone (or its pid was reused).
    #[error("parent container init {0} is not running")]
    ParentGone(i32),
    /// The seccomp filters cannot be decoded, or are missing.
    #[error(transparent)]
    Seccomp(#[from] seccomp::SeccompError),
    /// A syscall on a path failed.
    #[error("{call} {path}: {source}")]
    Path {
        /// The syscall.
        call: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        #[source]
        source: nix::Error,
    },
    /// A sandbox log could not be opened safely.
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
    /// The sandbox path now leads to another directory than the one the
    /// host prepared (a component was swapped for a link).
    #[error("sandbox {0} is not the directory the host prepared; refusing it")]
    SandboxReplaced(String),
    /// Another syscall failed.
    #[error("{0}: {1}")]
    Syscall(&'static str, #[source] nix::Error),
    /// The helper's arguments name no usable stdio.
    #[error(transparent)]
    StdioArgs(#[from] stdio::StdioArgsError),
    /// The stdio the host handed over is unusable.
    #[error("stdio handed by the host: {0}")]
    Stdio(String),
    /// A step of the pod's user namespace.
    #[error(transparent)]
    UserNamespace(#[from] UserNamespaceError),
    /// The container's setup failed before it was reported as started.
    #[error("{0}")]
    Setup(String),
}

fn at_path(call: &'static str, path: impl AsRef<Path>) -> impl FnOnce(nix::Error) -> HelperError {
    let path = path.as_ref().display().to_string();
    move |source| HelperError::Path { call, path, source }
}

/// Writes `bytes` to `<dir>/<name>` atomically: temp file, rename. No
/// flush: the supervisor's checkpoints describe a running container, which
/// a host crash ends (`checkpoint::Outlives::ProcessCrash`, as Mesos writes
/// them). Works through a directory fd, so it still targets the host's
/// runtime directory after `setns` into another mount namespace.
pub fn write_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> Result<(), HelperError> {
    let tmp = format!(".{name}.tmp-{}", std::process::id());
    let fd = openat(
        dir.as_fd(),
        tmp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(at_path("open", &tmp))?;
    let mut file = File::from(fd);
    file.write_all(bytes).map_err(|e| {
        at_path("write", &tmp)(nix::Error::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
    })?;
    drop(file);
    renameat(dir.as_fd(), tmp.as_str(), dir.as_fd(), name).map_err(at_path("rename", name))?;
    Ok(())
}

pub(super) fn write_fd(fd: i32, text: &str) {
    // SAFETY: fd 1/2 are the helper's standard streams, owned for its lifetime;
    // ManuallyDrop keeps them open.
    let mut file =
        std::mem::ManuallyDrop::new(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    let _ = file.write_all(text.as_bytes());
}

/// Entry point of `nestguard-launch` (`args`: its arguments after the
/// program name); returns the helper's exit code.
pub fn helper_main(args: &[&[u8]]) -> i32 {
    match run_helper(args) {
        Ok(()) => 0,
        Err(e) => report_failure(&e),
    }
}

fn run_helper(args: &[&[u8]]) -> Result<(), HelperError> {
    // Descriptors the host leaked without CLOEXEC must not reach the
    // container; only the stdio it handed over, if any, stays.
    let handed = stdio::parse_args(args);
    stdio::close_all_but(handed.as_ref().ok().copied().flatten())?;
    let handed = handed?;
    let (control, info) = channel::read_from(&mut std::io::stdin().lock())?;
    let stdio = stdio::check(handed, control.stdio).map_err(HelperError::Stdio)?;
    // Decoded now: nothing may allocate after the vforks below.
    let filters = seccomp::decode(&control.seccomp)?;
    if info.seccomp_profile.is_some() && filters.is_empty() {
        return Err(seccomp::SeccompError::Encoding.into());
    }
    // Opened here, by their host paths (before any `setns`); the first
    // process of the container (intermediate or supervisor) joins through
    // them before it does anything else, so nothing the container starts
    // escapes its limits or destroy. The helper itself stays out: a destroy
    // must not kill it, as it reaps the intermediate.
    let cgroups = control
        .cgroup_procs
        .iter()
        .map(|file| {
            open(file, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())
                .map(|fd| (file.clone(), fd))
                .map_err(at_path("open", file))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let devnull = open("/dev/null", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty())
        .map_err(at_path("open", "/dev/null"))?;
    nix::unistd::dup2_stdin(&devnull).map_err(|e| HelperError::Syscall("dup2(stdin)", e))?;
    let (runtime, status) = open_runtime(&control)?;
    let proc_dir = open(
        "/proc",
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_path("open", "/proc"))?;
    let sandbox = open_sandbox(&control)?;
    let stdout = open_log(&sandbox, &control, STDOUT_FILE)?;
    // The host spawns the helper before the sandbox exists (so that the
    // helper starts while the host prepares it); stderr is the sandbox's
    // from here on.
    let stderr = open_log(&sandbox, &control, STDERR_FILE)?;
    let mut user = created_user_namespaces(&control, &info, &proc_dir, &sandbox)?;
    drop(sandbox);
    nix::unistd::dup2_stderr(&stderr).map_err(|e| HelperError::Syscall("dup2(stderr)", e))?;
    drop(stderr);
    setsid().map_err(|e| HelperError::Syscall("setsid", e))?;

    let enter = CloneFlags::from_bits_truncate(control.enter);
    let clone = CloneFlags::from_bits_truncate(control.clone);
    if let Some((pid, start)) = control.parent {
        enter_parent(&proc_dir, pid, start, enter)?;
        if let Some(u) = user
            .as_mut()
            .filter(|_| control.user_namespace.is_some_and(|u| u.join_parent))
        {
            u.userns = Some(user_namespace::of_parent(proc_dir.as_fd(), pid)?);
            match process::stat_in(Some(proc_dir.as_fd()), pid)? {
                Some(s) if s.start_time == start && !s.exited() => {}
                _ => return Err(HelperError::ParentGone(pid)),
            }
        }
    }
    let user = user.map(super::user_fds::UserFds::complete).transpose()?;
    let launch = Launch {
        cgroups,
        status,
        control: &control,
        info: &info,
        clone,
        runtime: &runtime,
        proc_dir: &proc_dir,
        stdout,
        filters: &filters,
        stdio,
        user,
    };
    let child = start_supervisor(launch, enter, clone)?;
    // Returns at once: the child shared our memory and has exited.
    process::waitpid_raw(child.as_raw(), 0)?;
    Ok(())
}

/// Opens the host's runtime directory by its host path (before any
/// `setns`) and creates the empty `status` checkpoint in it, durably.
fn open_runtime(control: &Control) -> Result<(OwnedFd, OwnedFd), HelperError> {
    let runtime = open(
        &control.runtime_dir,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_path("open", &control.runtime_dir))?;
    let status = openat(
        runtime.as_fd(),
        STATUS_FILE,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(at_path("create", control.runtime_dir.join(STATUS_FILE)))?;
    Ok((runtime, status))
}

/// Creates the container's new namespaces and forks its supervisor in
/// them; returns the child the helper reaps (the supervisor, or the
/// intermediate that created it).
fn start_supervisor(
    mut launch: Launch<'_>,
    enter: CloneFlags,
    clone: CloneFlags,
) -> Result<Pid, HelperError> {
    // A new pid namespace can only be created by a process whose active pid
    // namespace is the one it entered: after `setns` into the parent's pid
    // namespace, an intermediate child does the `unshare` and creates the
    // supervisor (Mesos' `ns::clone` double fork). All three share one
    // address space and only one of them runs at a time: the helper is
    // suspended until the intermediate exits, the intermediate until the
    // supervisor exits. The intermediate, in the parent's pid namespace, is
    // thus reaped at once by the helper, which lives in the host's: nothing
    // of this container outside its own pid namespace is left for the
    // host to reap before the parent's namespace can end. The supervisor
    // shares the intermediate's descriptor table, so what it closes of the
    // host's the intermediate (visible to the parent container) no longer
    // holds either.
    if enter.contains(CloneFlags::CLONE_NEWPID) && clone.contains(CloneFlags::CLONE_NEWPID) {
        // SAFETY: the helper is single-threaded and only waits after this;
        // the intermediate ends in `_exit`.
        unsafe {
            vfork::spawn(false, move || {
                let code = match die_with_parent(launch.user.is_some())
                    .map_err(HelperError::from)
                    .and_then(|()| join_cgroups(&mut launch.cgroups))
                    .and_then(|()| Ok(namespace_ops::create(clone)?))
                    .and_then(|()| fork_supervisor(launch, true))
                    .and_then(|supervisor| Ok(process::waitpid_raw(supervisor.as_raw(), 0)?))
                {
                    Ok(_) => 0,
                    Err(e) => report_failure(&e),
                };
                // SAFETY: _exit is async-signal-safe; nothing to flush.
                libc::_exit(code)
            })
        }
        .map_err(|e| HelperError::Syscall("clone(CLONE_VM|CLONE_VFORK)", e))
    } else {
        namespace_ops::create(clone)?;
        fork_supervisor(launch, false)
    }
}

/// Enters the namespaces in `flags` of the parent container's init `pid`,
/// checking it is the very process (start time) after getting hold of it.
/// One `setns` through a pidfd; per-namespace files on kernels before 5.8.
fn enter_parent(
    proc_dir: &OwnedFd,
    pid: i32,
    start: u64,
    flags: CloneFlags,
) -> Result<(), HelperError> {
    let alive = || -> Result<(), HelperError> {
        match process::stat_in(Some(proc_dir.as_fd()), pid)? {
            Some(s) if s.start_time == start && !s.exited() => Ok(()),
            _ => Err(HelperError::ParentGone(pid)),
        }
    };
    if let Ok(pidfd) = process::pidfd_open(pid) {
        alive()?;
        if flags.is_empty() || namespace_ops::enter_pidfd(pidfd.as_fd(), flags)? {
            return Ok(());
        }
    }
    let opened = namespace_ops::open_namespaces(proc_dir.as_fd(), pid, flags)?;
    alive()?;
    namespace_ops::enter(&opened)?;
    Ok(())
}

/// Writes `0` (the writer itself) into each opened `cgroup.procs` file, and
/// closes them.
fn join_cgroups(cgroups: &mut Vec<(PathBuf, OwnedFd)>) -> Result<(), HelperError> {
    for (file, fd) in cgroups.drain(..) {
        nix::unistd::write(&fd, b"0").map_err(at_path("write 0 into", &file))?;
    }
    Ok(())
}

/// Opens the sandbox the host prepared, by path (the helper runs as root
/// in the host's mount namespace, where the host made it), and refuses any
/// other directory: a tenant owning a directory on the path may have
/// swapped a component for a link since the host checked it.
fn open_sandbox(control: &Control) -> Result<OwnedFd, HelperError> {
    let dir = open(
        &control.sandbox,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_path("open", &control.sandbox))?;
    if let Some((dev, ino)) = control.sandbox_identity {
        let stat = rustix::fs::fstat(&dir).map_err(|e| {
            at_path("stat", &control.sandbox)(nix::Error::from_raw(e.raw_os_error()))
        })?;
        if (stat.st_dev, stat.st_ino) != (dev, ino) {
            return Err(HelperError::SandboxReplaced(
                control.sandbox.display().to_string(),
            ));
        }
    }
    Ok(dir)
}

/// Opens the sandbox log `name` (made by the host) for appending, below
/// the sandbox's descriptor and never through a link ([`sandbox::open_log`]).
fn open_log(sandbox: &OwnedFd, control: &Control, name: &str) -> Result<OwnedFd, HelperError> {
    let path = control.sandbox.join(name);
    Ok(sandbox::open_log(
        sandbox.as_fd(),
        name,
        rustix::fs::OFlags::empty(),
        &path,
    )?)
}

/// Reports `e` to the host (stdout) and the sandbox (stderr); returns the
/// exit code for it.
fn report_failure(e: &HelperError) -> i32 {
    let text = e.to_string();
    write_fd(2, &format!("nestguard-launch: {text}\n"));
    write_fd(1, &Report::Failed(text).to_line());
    1
}

/// Everything the supervisor needs.
struct Launch<'a> {
    /// `cgroup.procs` files not joined yet.
    cgroups: Vec<(PathBuf, OwnedFd)>,
    control: &'a Control,
    info: &'a ContainerLaunchInfo,
    clone: CloneFlags,
    /// The host's runtime directory and procfs: the supervisor closes them
    /// once its `pid` is checkpointed (see [`supervise`]).
    runtime: &'a OwnedFd,
    proc_dir: &'a OwnedFd,
    /// The `status` checkpoint, created empty by the helper.
    status: OwnedFd,
    stdout: OwnedFd,
    /// Seccomp filters the command installs last.
    filters: &'a [seccompiler::BpfProgram],
    /// The command's stdio, when the host handed it over.
    stdio: Option<Handed>,
    /// The pod's user namespace, when the container runs in one.
    user: Option<UserFdsReady>,
}

/// Forks the supervisor (in the namespaces the caller is now in); returns its
/// pid as the caller sees it.
///
/// The supervisor shares the helper's memory (see [`super::vfork`]): the
/// helper is suspended until the supervisor exits, then reaps it and exits.
fn fork_supervisor(l: Launch<'_>, share_files: bool) -> Result<Pid, HelperError> {
    // SAFETY: the helper (or intermediate) is single-threaded and only waits
    // after this; the supervisor ends in `_exit` and never frees what the
    // helper uses.
    unsafe {
        vfork::spawn(share_files, move || {
            let code = supervise(l);
            // SAFETY: _exit is async-signal-safe; the status is on disk.
            libc::_exit(code)
        })
    }
    .map_err(|e| HelperError::Syscall("clone(CLONE_VM|CLONE_VFORK)", e))
}

/// The supervisor's own pid and start time in the host's pid namespace:
/// `thread-self` of the procfs opened before any `setns` resolves there,
/// whatever pid namespace the supervisor is in.
fn host_identity(proc_dir: &OwnedFd) -> Result<(Pid, u64), HelperError> {
    let link = nix::fcntl::readlinkat(proc_dir.as_fd(), "thread-self")
        .map_err(at_path("readlink", "/proc/thread-self"))?;
    let pid = link
        .to_str()
        .and_then(|l| l.split('/').next())
        .and_then(|p| p.parse().ok())
        .map(Pid::from_raw)
        .ok_or(HelperError::Syscall(
            "readlink(/proc/thread-self)",
            nix::Error::EINVAL,
        ))?;
    let stat = process::stat_in(Some(proc_dir.as_fd()), pid.as_raw())?.ok_or(
        HelperError::Syscall("stat(/proc/thread-self)", nix::Error::ESRCH),
    )?;
    Ok((pid, stat.start_time))
}

/// Checkpoints the supervisor's pid and start time and reports them to the
/// host, so a running container always has a `pid` checkpoint.
fn checkpoint_and_report(l: &Launch<'_>) -> Result<(), HelperError> {
    let (pid, start_time) = host_identity(l.proc_dir)?;
    write_at(
        l.runtime,
        PID_FILE,
        channel::pid_file_text(&channel::PidRecord {
            pid: pid.as_raw(),
            start_time,
            own_pid_namespace: l.clone.contains(CloneFlags::CLONE_NEWPID),
        })
        .as_bytes(),
    )?;
    write_fd(
        1,
        &Report::Started {
            pid: pid.as_raw(),
            start_time,
        }
        .to_line(),
    );
    Ok(())
}

/// The supervisor; returns its exit code. Writes `status` in every case
/// after it reported the container as started.
///
/// It is pid 1 of the container's pid namespace, so the container can see
/// its descriptors (`/proc/1/fd`, given CAP_SYS_PTRACE): after the `pid`
/// checkpoint it keeps nothing of the host's but regular files — the
/// `status` file, the sandbox logs — through which no directory of the host
/// can be reached. The host's procfs and runtime directory are closed.
fn supervise(mut l: Launch<'_>) -> i32 {
    // Signals sent once the host knows the pid stay pending until the
    // command runs, then are forwarded; none is lost or kills us meanwhile.
    let all = SigSet::all();
    let mut previous = SigSet::empty();
    if let Err(e) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&all), Some(&mut previous)) {
        return report_failure(&HelperError::Syscall("sigprocmask", e));
    }
    if let Err(e) = die_with_parent(l.user.is_some())
        .map_err(HelperError::from)
        .and_then(|()| join_cgroups(&mut l.cgroups))
    {
        return report_failure(&e);
    }
    // In the pod's user namespace, the setup runs first, as host root (see
    // `user_namespace`); it then fails the launch rather than the command.
    let early = match &l.user {
        Some(user) => match setup_for_user_namespace(&l, user) {
            Ok(prepared) => Some(prepared),
            Err(e) => return report_failure(&e),
        },
        None => None,
    };
    if let Err(e) = checkpoint_and_report(&l) {
        return report_failure(&e);
    }
    // Raw closes: the `OwnedFd`s live in the helper's memory, and the
    // helper still owns its own descriptors with these numbers.
    // SAFETY: closes this process' copies; nothing here uses them again.
    unsafe {
        libc::close(l.runtime.as_raw_fd());
        libc::close(l.proc_dir.as_raw_fd());
    }
    let status_file = l.status;
    let fail = |text: String| -> i32 {
        write_fd(2, &format!("nestguard-launch: {text}\n"));
        let _ = write_status(&status_file, SETUP_FAILURE << 8);
        SETUP_FAILURE
    };
    // The namespaces' descriptors are closed in this process' table (the
    // helper keeps its own until it exits).
    if l.user.take().is_some()
        && let Err(e) = user_namespace::become_root()
    {
        return fail(e.to_string());
    }
    if let Err(e) = nix::unistd::dup2_stdout(&l.stdout) {
        return fail(format!("dup2(stdout): {e}"));
    }
    let in_workdir = early.is_some();
    let prepared = match early {
        Some(prepared) => prepared,
        None => match setup_inside(l.control, l.info, l.clone, None) {
            Ok(p) => p,
            Err(text) => return fail(text),
        },
    };
    if let Some(Err(text)) = l.stdio.as_ref().map(Handed::take_terminal) {
        return fail(text);
    }
    // SAFETY: single-threaded supervisor, suspended until the command execs;
    // the command ends in `execve` or `_exit`.
    // The default working directory is the sandbox, entered by path as
    // root: the command checks it entered the directory the host prepared.
    let expect_cwd = (l.info.rootfs.is_none() && prepared.workdir == l.control.sandbox)
        .then_some(l.control.sandbox_identity)
        .flatten();
    let child = match unsafe {
        vfork::spawn(false, || {
            exec_command(
                &prepared,
                &previous,
                l.filters,
                (expect_cwd, in_workdir),
                l.stdio.as_ref(),
            )
        })
    } {
        Err(e) => return fail(format!("clone(CLONE_VM|CLONE_VFORK): {e}")),
        Ok(child) => child,
    };
    // The command has its copies (it has exec'd or exited).
    if let Some(handed) = &l.stdio {
        handed.close();
    }
    let status = forward_and_reap(child);
    match write_status(&status_file, status) {
        Ok(()) => 0,
        Err(e) => {
            write_fd(2, &format!("nestguard-launch: {e}\n"));
            SETUP_FAILURE
        }
    }
}

/// Fills the `status` checkpoint (created empty by the helper): one write
/// of the decimal status, no flush (see [`write_at`]). Readers look only
/// once the supervisor is gone; an empty file reads as unknown (9), as
/// Mesos reads a missing or empty one.
fn write_status(file: &OwnedFd, status: i32) -> Result<(), HelperError> {
    let text = status.to_string();
    let written =
        nix::sys::uio::pwrite(file, text.as_bytes(), 0).map_err(at_path("write", STATUS_FILE))?;
    if written != text.len() {
        return Err(HelperError::Syscall("write(status)", nix::Error::EIO));
    }
    Ok(())
}

/// The setup of a container in the pod's user namespace, as host root in
/// its own mount namespace: [`setup_inside`] with idmapped binds, the hard
/// limits raised, the working directory entered (its path may cross
/// directories the pod's ids cannot search); then the pod's user namespace
/// and a mount namespace owned by it are entered, locking every mount.
fn setup_for_user_namespace(l: &Launch<'_>, user: &UserFdsReady) -> Result<Prepared, HelperError> {
    let prepared =
        setup_inside(l.control, l.info, l.clone, Some(user)).map_err(HelperError::Setup)?;
    user_namespace::raise_hard_limits(&prepared.rlimits)?;
    nix::unistd::chdir(&prepared.workdir).map_err(at_path("chdir", &prepared.workdir))?;
    user_namespace::enter(user.userns.as_fd())?;
    Ok(prepared)
}

/// In-container setup that needs the supervisor's namespaces; `user`: the
/// container runs in the pod's user namespace (its binds are idmapped).
fn setup_inside(
    control: &Control,
    info: &ContainerLaunchInfo,
    clone: CloneFlags,
    user: Option<&UserFdsReady>,
) -> Result<Prepared, String> {
    let own_mounts = clone.contains(CloneFlags::CLONE_NEWNS);
    let enter = CloneFlags::from_bits_truncate(control.enter);
    // A fresh /proc of the supervisor's pid namespace (its own, or the
    // parent's it entered): the copy of the host's mount table would show
    // the host's processes. With a rootfs, its own /proc is mounted there.
    if own_mounts && info.rootfs.is_none() && (clone | enter).contains(CloneFlags::CLONE_NEWPID) {
        namespace_ops::mount_proc().map_err(|e| e.to_string())?;
    }
    if clone.contains(CloneFlags::CLONE_NEWNET) {
        namespace_ops::loopback_up().map_err(|e| e.to_string())?;
    }
    if let Some(name) = &control.hostname {
        nix::unistd::sethostname(name).map_err(|e| format!("sethostname: {e}"))?;
    }
    if let Some(u) = user {
        if let Some(tree) = &u.sandbox_tree {
            user_namespace::attach_sandbox(tree, &control.sandbox, control.sandbox_identity)
                .map_err(|e| e.to_string())?;
        }
        // The image first: volumes mounted into it come after (an image
        // with idmapped volumes in it could not be idmapped again).
        if let Some(rootfs) = info.rootfs.as_deref().map(Path::new) {
            // The image is the pod's own: its files map as the pod's
            // namespace maps them (on-disk root is root inside).
            rootfs::make_mount_points(rootfs).map_err(|e| e.to_string())?;
            user_namespace::idmapped_bind(rootfs, u.userns.as_fd()).map_err(|e| e.to_string())?;
        }
    }
    let trees = user.map(|u| &u.bind_trees);
    mounts::apply(&info.mounts, &control.sandboxes, trees).map_err(|e| e.to_string())?;
    // After the isolators' mounts (their targets are host paths, inside the
    // rootfs for a container that has one), as Mesos' launch helper.
    let sandbox = match &info.rootfs {
        Some(rootfs) => {
            rootfs::enter(
                Path::new(rootfs),
                &control.sandbox,
                control.sandbox_identity,
            )
            .map_err(|e| e.to_string())?;
            PathBuf::from(rootfs::SANDBOX_IN_ROOTFS)
        }
        None => control.sandbox.clone(),
    };
    if own_mounts && control.read_only_paths {
        mounts::read_only_kernel_paths().map_err(|e| e.to_string())?;
    }
    // A new session in a shared pid namespace too: destroy can then find
    // every process of the container by session id.
    if nix::unistd::getsid(None).ok() != Some(nix::unistd::getpid()) {
        setsid().map_err(|e| format!("setsid: {e}"))?;
    }
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| format!("prctl(PR_SET_CHILD_SUBREAPER): {e}"))?;
    command::prepare(info, &sandbox).map_err(|e| e.to_string())
}

/// Waits for signals: SIGCHLD reaps (every descendant, as init or subreaper),
/// anything else goes to the command. Returns the command's raw status.
fn forward_and_reap(child: Pid) -> i32 {
    let all = SigSet::all();
    loop {
        // Reap first: the command may have exited before we started waiting.
        loop {
            match process::waitpid_raw(-1, libc::WNOHANG) {
                Ok(Some((pid, status))) if pid == child.as_raw() => return status,
                Ok(Some(_)) => continue,
                Ok(None) => break,
                // No children left: cannot happen before the command is reaped.
                Err(_) => return libc::SIGKILL,
            }
        }
        match all.wait() {
            Ok(Signal::SIGCHLD) | Err(_) => {}
            Ok(sig) => {
                let _ = kill(child, sig);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_at_is_atomic_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let fd = open(
            dir.path(),
            OFlag::O_DIRECTORY | OFlag::O_RDONLY,
            Mode::empty(),
        )
        .unwrap();
        write_at(&fd, "status", b"256").unwrap();
        write_at(&fd, "status", b"9").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("status")).unwrap(),
            "9"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
