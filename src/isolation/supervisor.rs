//! The `nestguard-launch` helper: namespace setup, then the supervisor.
//!
//! Three processes (youki has the same split: main, intermediate, init):
//!
//! * **helper** — exec'd by the host right after fork. Reads the launch data
//!   from stdin, `setsid`s, enters the parent's namespaces, creates new ones,
//!   forks the supervisor (through an intermediate process that does the
//!   checkpoint, release and report when the pid namespace is new inside
//!   the parent's), checkpoints its pid, releases it, reports
//!   `ok <pid> <start>` on stdout and waits for it, so the host's child
//!   never becomes a zombie nobody reaps.
//! * **supervisor** — pid 1 of a new pid namespace (or a child subreaper in a
//!   shared one). Finishes in-namespace setup (procfs, loopback, hostname,
//!   mounts), forks the command, forwards every signal to it, reaps all
//!   descendants, and when the command exits writes its raw wait status to
//!   `status` (atomically), then exits. Setup failures write `code << 8`.
//! * **command** — rlimits, working directory, user, no_new_privs, `execve`.
//!
//! All three are single-threaded, so work after their forks is safe.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use nix::fcntl::{OFlag, open, openat, renameat};
use nix::sched::CloneFlags;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::stat::Mode;
use nix::unistd::{ForkResult, Pid, fork, fsync, setsid};

use super::channel::{self, Control, Report};
use super::command::{self, Prepared};
use super::namespaces;
use super::paths::{PID_FILE, STATUS_FILE, STDOUT_FILE};
use super::process;
use crate::proto::mesos::slave::ContainerLaunchInfo;

/// Exit code of the command when setup or `execve` fails (status `1 << 8`,
/// as Mesos' helper).
const SETUP_FAILURE: i32 = 1;

/// A helper step that failed; names the step and the path or syscall.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// Reading the launch data.
    #[error("read launch data from stdin: {0}")]
    Stdin(#[source] std::io::Error),
    /// The launch data is malformed.
    #[error(transparent)]
    Channel(#[from] channel::ChannelError),
    /// A namespace step.
    #[error(transparent)]
    Namespace(#[from] namespaces::NamespaceError),
    /// A procfs read.
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    /// The parent container's init is gone (or its pid was reused).
    #[error("parent container init {0} is not running")]
    ParentGone(i32),
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
    /// The intermediate process (new pid namespace) failed.
    #[error("intermediate process: {0}")]
    Intermediate(String),
    /// Another syscall failed.
    #[error("{0}: {1}")]
    Syscall(&'static str, #[source] nix::Error),
}

fn at_path(call: &'static str, path: impl AsRef<Path>) -> impl FnOnce(nix::Error) -> HelperError {
    let path = path.as_ref().display().to_string();
    move |source| HelperError::Path { call, path, source }
}

/// Writes `bytes` to `<dir>/<name>` atomically: temp file, fsync, rename,
/// fsync of the directory. Works through a directory fd, so it still
/// targets the host's runtime directory after `setns` into another mount
/// namespace.
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
    fsync(file.as_fd()).map_err(at_path("fsync", &tmp))?;
    drop(file);
    renameat(dir.as_fd(), tmp.as_str(), dir.as_fd(), name).map_err(at_path("rename", name))?;
    fsync(dir.as_fd()).map_err(at_path("fsync", "runtime directory"))?;
    Ok(())
}

fn write_fd(fd: i32, text: &str) {
    // SAFETY: fd 1/2 are the helper's standard streams, owned for its lifetime;
    // ManuallyDrop keeps them open.
    let mut file =
        std::mem::ManuallyDrop::new(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    let _ = file.write_all(text.as_bytes());
}

/// Entry point of `nestguard-launch`; returns the helper's exit code.
pub fn helper_main() -> i32 {
    match run_helper() {
        Ok(()) => 0,
        Err(e) => {
            let text = e.to_string();
            write_fd(2, &format!("nestguard-launch: {text}\n"));
            write_fd(1, &Report::Failed(text).to_line());
            1
        }
    }
}

fn run_helper() -> Result<(), HelperError> {
    // Descriptors the host leaked without CLOEXEC must not reach the
    // container.
    // SAFETY: close_range(3, ~0, 0) only closes descriptors; we own none yet.
    unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    let mut data = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut data)
        .map_err(HelperError::Stdin)?;
    let (control, info) = channel::decode(&data)?;

    let devnull = open("/dev/null", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty())
        .map_err(at_path("open", "/dev/null"))?;
    nix::unistd::dup2_stdin(&devnull).map_err(|e| HelperError::Syscall("dup2(stdin)", e))?;
    let runtime = open(
        &control.runtime_dir,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_path("open", &control.runtime_dir))?;
    let proc_dir = open(
        "/proc",
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_path("open", "/proc"))?;
    let stdout_path = control.sandbox.join(STDOUT_FILE);
    let stdout = open(
        &stdout_path,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_APPEND | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o640),
    )
    .map_err(at_path("open", &stdout_path))?;
    setsid().map_err(|e| HelperError::Syscall("setsid", e))?;

    let enter = CloneFlags::from_bits_truncate(control.enter);
    let clone = CloneFlags::from_bits_truncate(control.clone);
    if let Some((pid, start)) = control.parent {
        let opened = namespaces::open_namespaces(proc_dir.as_fd(), pid, enter)?;
        // Opened first, checked second: the fds surely belong to the parent.
        let alive = process::stat_in(Some(proc_dir.as_fd()), pid)?
            .is_some_and(|s| s.start_time == start && !s.exited());
        if !alive {
            return Err(HelperError::ParentGone(pid));
        }
        namespaces::enter(&opened)?;
    }
    // A new pid namespace inside the parent's: see [`via_intermediate`].
    let intermediate =
        enter.contains(CloneFlags::CLONE_NEWPID) && clone.contains(CloneFlags::CLONE_NEWPID);
    if !intermediate {
        namespaces::create(clone)?;
    }

    let (go_read, go_write) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| HelperError::Syscall("pipe2", e))?;
    if intermediate {
        return via_intermediate(Launch {
            control: &control,
            info: &info,
            clone,
            runtime: &runtime,
            proc_dir: &proc_dir,
            stdout,
            go_read,
            go_write,
            devnull: &devnull,
        });
    }
    // SAFETY: the helper is single-threaded; the child only runs our code.
    let child = match unsafe { fork() }.map_err(|e| HelperError::Syscall("fork", e))? {
        ForkResult::Child => {
            drop(go_write);
            let code = supervise(&control, &info, clone, &runtime, stdout, go_read);
            std::process::exit(code);
        }
        ForkResult::Parent { child } => child,
    };
    drop(go_read);
    drop(stdout);
    let start = match checkpoint_and_release(
        &runtime,
        &proc_dir,
        child,
        go_write,
        clone.contains(CloneFlags::CLONE_NEWPID),
    ) {
        Ok(start) => start,
        Err(e) => {
            let _ = kill(child, Signal::SIGKILL);
            let _ = process::waitpid_raw(child.as_raw(), 0);
            return Err(e);
        }
    };
    write_fd(
        1,
        &Report::Started {
            pid: child.as_raw(),
            start_time: start,
        }
        .to_line(),
    );
    nix::unistd::dup2_stdout(&devnull).map_err(|e| HelperError::Syscall("dup2(stdout)", e))?;
    process::waitpid_raw(child.as_raw(), 0)?;
    Ok(())
}

/// What the intermediate process sends the helper once it has reported the
/// container as started (anything else is its error text).
const REPORTED: &str = "reported";

/// Everything the intermediate process needs (a new pid namespace).
struct Launch<'a> {
    control: &'a Control,
    info: &'a ContainerLaunchInfo,
    clone: CloneFlags,
    runtime: &'a OwnedFd,
    proc_dir: &'a OwnedFd,
    stdout: OwnedFd,
    go_read: OwnedFd,
    go_write: OwnedFd,
    devnull: &'a OwnedFd,
}

/// A new pid namespace can only be created by a process whose active pid
/// namespace is the one it entered: after `setns` into the parent's pid
/// namespace, an intermediate child does the `unshare` and forks the
/// supervisor (Mesos' `ns::clone` double fork). The intermediate itself
/// checkpoints the supervisor's pid, releases it and reports it to the host
/// (its stdout is the helper's), so the launch does not wait for one more
/// process hop back through the helper; it then exits, the supervisor is
/// reparented to the parent container's init, which reaps it. The helper
/// only relays the intermediate's error, if any.
fn via_intermediate(l: Launch<'_>) -> Result<(), HelperError> {
    let (err_read, err_write) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| HelperError::Syscall("pipe2", e))?;
    // SAFETY: the helper is single-threaded.
    match unsafe { fork() }.map_err(|e| HelperError::Syscall("fork", e))? {
        ForkResult::Child => {
            drop(err_read);
            let message = match namespaces::create(l.clone) {
                Err(e) => e.to_string(),
                // SAFETY: the intermediate process is single-threaded.
                Ok(()) => match unsafe { fork() } {
                    Ok(ForkResult::Child) => {
                        drop(err_write);
                        drop(l.go_write);
                        let code =
                            supervise(l.control, l.info, l.clone, l.runtime, l.stdout, l.go_read);
                        std::process::exit(code);
                    }
                    Ok(ForkResult::Parent { child: local }) => {
                        drop(l.go_read);
                        drop(l.stdout);
                        let started = only_child(l.proc_dir).and_then(|host| {
                            checkpoint_and_release(l.runtime, l.proc_dir, host, l.go_write, true)
                                .map(|start| (host, start))
                        });
                        match started {
                            Ok((host, start_time)) => {
                                write_fd(
                                    1,
                                    &Report::Started {
                                        pid: host.as_raw(),
                                        start_time,
                                    }
                                    .to_line(),
                                );
                                REPORTED.to_owned()
                            }
                            Err(e) => {
                                // `local`: the supervisor as this process sees it.
                                let _ = kill(local, Signal::SIGKILL);
                                let _ = process::waitpid_raw(local.as_raw(), 0);
                                e.to_string()
                            }
                        }
                    }
                    Err(e) => format!("fork: {e}"),
                },
            };
            let _ = File::from(err_write).write_all(message.as_bytes());
            // SAFETY: _exit is async-signal-safe; nothing to flush.
            unsafe { libc::_exit(0) }
        }
        ForkResult::Parent { child } => {
            drop(err_write);
            drop(l.go_write);
            drop(l.go_read);
            drop(l.stdout);
            let mut message = String::new();
            let _ = File::from(err_read).read_to_string(&mut message);
            process::waitpid_raw(child.as_raw(), 0)?;
            if message != REPORTED {
                return Err(HelperError::Intermediate(message));
            }
            nix::unistd::dup2_stdout(l.devnull)
                .map_err(|e| HelperError::Syscall("dup2(stdout)", e))?;
            Ok(())
        }
    }
}

/// The calling process' single child (host pid), read from the host's procfs.
fn only_child(proc_dir: &OwnedFd) -> Result<Pid, HelperError> {
    // `thread-self` resolves in the procfs' own pid namespace (the host's),
    // whatever pid namespace the caller is in.
    let rel = "thread-self/children";
    let fd = openat(
        proc_dir.as_fd(),
        rel,
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_path("open", format!("/proc/{rel}")))?;
    let mut text = String::new();
    File::from(fd).read_to_string(&mut text).map_err(|e| {
        at_path("read", format!("/proc/{rel}"))(nix::Error::from_raw(
            e.raw_os_error().unwrap_or(libc::EIO),
        ))
    })?;
    let pids: Vec<&str> = text.split_whitespace().collect();
    match pids.as_slice() {
        [one] => one
            .parse()
            .map(Pid::from_raw)
            .map_err(|_| HelperError::Intermediate(format!("unexpected children list {text:?}"))),
        _ => Err(HelperError::Intermediate(format!(
            "expected exactly one supervisor child, found {text:?}"
        ))),
    }
}

/// Checkpoints the supervisor's pid and start time, then lets it proceed, so a
/// running container always has a `pid` checkpoint.
fn checkpoint_and_release(
    runtime: &OwnedFd,
    proc_dir: &OwnedFd,
    child: Pid,
    go: OwnedFd,
    own_pid_namespace: bool,
) -> Result<u64, HelperError> {
    let stat = process::stat_in(Some(proc_dir.as_fd()), child.as_raw())?
        .ok_or(HelperError::ParentGone(child.as_raw()))?;
    write_at(
        runtime,
        PID_FILE,
        channel::pid_file_text(&channel::PidRecord {
            pid: child.as_raw(),
            start_time: stat.start_time,
            own_pid_namespace,
        })
        .as_bytes(),
    )?;
    File::from(go).write_all(b"g").map_err(|e| {
        HelperError::Syscall(
            "write(go pipe)",
            nix::Error::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
        )
    })?;
    Ok(stat.start_time)
}

/// The supervisor; returns its exit code. Writes `status` in every case where
/// the helper reached it.
fn supervise(
    control: &Control,
    info: &ContainerLaunchInfo,
    clone: CloneFlags,
    runtime: &OwnedFd,
    stdout: OwnedFd,
    go: OwnedFd,
) -> i32 {
    let fail = |text: String| -> i32 {
        write_fd(2, &format!("nestguard-launch: {text}\n"));
        let _ = write_at(
            runtime,
            STATUS_FILE,
            format!("{}", SETUP_FAILURE << 8).as_bytes(),
        );
        SETUP_FAILURE
    };
    if let Err(e) = nix::unistd::dup2_stdout(&stdout) {
        return fail(format!("dup2(stdout): {e}"));
    }
    drop(stdout);
    // In-namespace setup runs while the helper checkpoints our pid; the
    // command is forked, and a setup failure reported, only once released,
    // so a container never runs (or ends) without its `pid` checkpoint.
    let prepared = setup_inside(control, info, clone);
    let mut byte = [0u8; 1];
    if !matches!(File::from(go).read(&mut byte), Ok(1)) {
        return fail("the helper exited before releasing the supervisor".into());
    }
    let prepared = match prepared {
        Ok(p) => p,
        Err(text) => return fail(text),
    };

    let all = SigSet::all();
    let mut previous = SigSet::empty();
    if let Err(e) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&all), Some(&mut previous)) {
        return fail(format!("sigprocmask: {e}"));
    }
    // SAFETY: single-threaded supervisor; the child only execs.
    let child = match unsafe { fork() } {
        Err(e) => return fail(format!("fork: {e}")),
        Ok(ForkResult::Child) => exec_command(&prepared, &previous),
        Ok(ForkResult::Parent { child }) => child,
    };
    let status = forward_and_reap(child);
    match write_at(runtime, STATUS_FILE, status.to_string().as_bytes()) {
        Ok(()) => 0,
        Err(e) => {
            write_fd(2, &format!("nestguard-launch: {e}\n"));
            SETUP_FAILURE
        }
    }
}

/// In-container setup that needs the supervisor's namespaces.
fn setup_inside(
    control: &Control,
    info: &ContainerLaunchInfo,
    clone: CloneFlags,
) -> Result<Prepared, String> {
    if clone.contains(CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNS) {
        namespaces::mount_proc().map_err(|e| e.to_string())?;
    }
    if clone.contains(CloneFlags::CLONE_NEWNET) {
        namespaces::loopback_up().map_err(|e| e.to_string())?;
    }
    if let Some(name) = &control.hostname {
        nix::unistd::sethostname(name).map_err(|e| format!("sethostname: {e}"))?;
    }
    for m in &info.mounts {
        nix::mount::mount(
            m.source.as_deref(),
            m.target.as_str(),
            m.r#type.as_deref(),
            nix::mount::MsFlags::from_bits_retain(m.flags.unwrap_or(0) as libc::c_ulong),
            m.options.as_deref(),
        )
        .map_err(|e| format!("mount {:?} on {}: {e}", m.source, m.target))?;
    }
    // A new session in a shared pid namespace too: destroy can then find
    // every process of the container by session id.
    if nix::unistd::getsid(None).ok() != Some(nix::unistd::getpid()) {
        setsid().map_err(|e| format!("setsid: {e}"))?;
    }
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| format!("prctl(PR_SET_CHILD_SUBREAPER): {e}"))?;
    command::prepare(info, &control.sandbox).map_err(|e| e.to_string())
}

/// In the command process: apply limits and identity, then `execve`.
fn exec_command(p: &Prepared, mask: &SigSet) -> ! {
    let result = (|| -> Result<std::convert::Infallible, String> {
        for (res, soft, hard) in &p.rlimits {
            nix::sys::resource::setrlimit(*res, *soft, *hard)
                .map_err(|e| format!("setrlimit({res:?}): {e}"))?;
        }
        nix::unistd::chdir(&p.workdir)
            .map_err(|e| format!("chdir {}: {e}", p.workdir.display()))?;
        if let Some(c) = &p.capabilities {
            for cap in caps::all().difference(&c.bounding) {
                caps::drop(None, caps::CapSet::Bounding, *cap)
                    .map_err(|e| format!("prctl(PR_CAPBSET_DROP, {cap}): {e}"))?;
            }
            if c.effective.is_some() && p.user.is_some() {
                nix::sys::prctl::set_keepcaps(true)
                    .map_err(|e| format!("prctl(PR_SET_KEEPCAPS): {e}"))?;
            }
        }
        // Already that user (the posix launcher run by a non-root host):
        // nothing to switch, and an unprivileged setgroups would fail.
        let already = p
            .user
            .as_ref()
            .is_some_and(|u| nix::unistd::geteuid() == u.uid && !nix::unistd::geteuid().is_root());
        if let Some(user) = p.user.as_ref().filter(|_| !already) {
            nix::unistd::setgroups(&user.groups).map_err(|e| format!("setgroups: {e}"))?;
            nix::unistd::setgid(user.gid).map_err(|e| format!("setgid({}): {e}", user.gid))?;
            nix::unistd::setuid(user.uid).map_err(|e| format!("setuid({}): {e}", user.uid))?;
        }
        if let Some(effective) = p.capabilities.as_ref().and_then(|c| c.effective.as_ref()) {
            // Effective first (it must stay within permitted), then
            // permitted; ambient last (it needs the capability permitted and
            // inheritable).
            for set in [
                caps::CapSet::Effective,
                caps::CapSet::Permitted,
                caps::CapSet::Inheritable,
                caps::CapSet::Ambient,
            ] {
                caps::set(None, set, effective).map_err(|e| format!("capset({set:?}): {e}"))?;
            }
        }
        if p.no_new_privs {
            nix::sys::prctl::set_no_new_privs()
                .map_err(|e| format!("prctl(PR_SET_NO_NEW_PRIVS): {e}"))?;
        }
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(mask), None)
            .map_err(|e| format!("sigprocmask: {e}"))?;
        nix::unistd::execve(&p.path, &p.argv, &p.env)
            .map_err(|e| format!("execve {:?}: {e}", p.path))
    })();
    let Err(text) = result;
    write_fd(2, &format!("nestguard-launch: {text}\n"));
    // SAFETY: _exit is always safe; skips atexit handlers of the copied image.
    unsafe { libc::_exit(SETUP_FAILURE) }
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
