//! The descriptors of a switchboard's container (Mesos' `ContainerIO`):
//! pipes the agent creates, or a pseudo-terminal it opens, whose container
//! side goes to the launcher as descriptors (the command gets them as fds
//! 0/1/2). No path names them: nothing in the tenant's sandbox can be
//! swapped for them, and with a TTY the container needs no `/dev/pts`.
//!
//! Every descriptor is close-on-exec, so no other child of the agent (a
//! helper spawned for another launch) inherits one; the launcher hands its
//! own duplicates to the one container. The agent drops its copies of the
//! container side once the launch returned, so that the output reaches EOF
//! (or the pty master a hang-up) when the container's processes are gone.

use std::os::fd::{AsFd, OwnedFd};

use nestguard::proto::mesos::ContainerInfo;
use rustix::fs::{Mode, OFlags};
use rustix::pipe::PipeFlags;
use rustix::pty::OpenptFlags;

use super::records::ApiError;
use crate::cli::agent::abi::LaunchIo;

/// The container's side, handed to the launcher.
pub(super) enum ChildIo {
    /// Three pipe ends: stdin's read end, stdout's and stderr's write ends.
    Pipes([OwnedFd; 3]),
    /// The pty's slave (all three streams).
    Tty(OwnedFd),
}

impl ChildIo {
    /// The descriptors as the launcher takes them.
    pub(super) fn fds(&self) -> LaunchIo<'_> {
        match self {
            ChildIo::Pipes([stdin, stdout, stderr]) => LaunchIo {
                stdin: stdin.as_fd(),
                stdout: stdout.as_fd(),
                stderr: stderr.as_fd(),
                tty: false,
                debug: false,
            },
            ChildIo::Tty(slave) => LaunchIo {
                stdin: slave.as_fd(),
                stdout: slave.as_fd(),
                stderr: slave.as_fd(),
                tty: true,
                debug: false,
            },
        }
    }
}

/// The agent's side and the container's side of one container's stdio.
pub(super) struct Wiring {
    /// Where the agent writes the container's input (non-blocking).
    pub(super) stdin: OwnedFd,
    /// The pty master (reads, window size); None with pipes.
    pub(super) master: Option<OwnedFd>,
    /// The output pipes' read ends (non-blocking); empty with a TTY.
    pub(super) stdout: Option<OwnedFd>,
    pub(super) stderr: Option<OwnedFd>,
    /// The container's side, until the launch.
    pub(super) child: ChildIo,
}

fn internal(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::Internal(format!("Failed to create the I/O switchboard: {what}: {e}"))
}

fn pipe() -> Result<(OwnedFd, OwnedFd), ApiError> {
    rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(|e| internal("pipe", e))
}

fn set_nonblocking(fd: &OwnedFd) -> Result<(), ApiError> {
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| internal("fcntl", e))?;
    rustix::fs::fcntl_setfl(fd, flags | OFlags::NONBLOCK).map_err(|e| internal("fcntl", e))
}

/// Three pipes; the agent's ends are non-blocking, the container's are
/// plain (a command expects blocking stdio).
pub(super) fn pipes() -> Result<Wiring, ApiError> {
    let (stdin_r, stdin_w) = pipe()?;
    let (stdout_r, stdout_w) = pipe()?;
    let (stderr_r, stderr_w) = pipe()?;
    for fd in [&stdin_w, &stdout_r, &stderr_r] {
        set_nonblocking(fd)?;
    }
    Ok(Wiring {
        stdin: stdin_w,
        master: None,
        stdout: Some(stdout_r),
        stderr: Some(stderr_r),
        child: ChildIo::Pipes([stdin_r, stdout_w, stderr_w]),
    })
}

/// A pseudo-terminal from `/dev/ptmx`; its slave is opened through the
/// master (`TIOCGPTPEER`), never by its `/dev/pts` path, and is made the
/// agent's own 0600 (root's when the agent runs as root) so that no other
/// process of the container's user can open that path where the host's
/// `/dev/pts` is visible. The owner is the agent's effective user, not
/// root: a non-root agent may not give a file away (EPERM). The window size
/// is `tty_info`'s.
pub(super) fn pty(container: Option<&ContainerInfo>) -> Result<Wiring, ApiError> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let master = rustix::pty::openpt(flags).map_err(|e| internal("open /dev/ptmx", e))?;
    rustix::pty::unlockpt(&master).map_err(|e| internal("unlockpt", e))?;
    let slave =
        rustix::pty::ioctl_tiocgptpeer(&master, flags).map_err(|e| internal("TIOCGPTPEER", e))?;
    rustix::fs::fchown(
        &slave,
        Some(rustix::process::geteuid()),
        Some(rustix::process::getegid()),
    )
    .map_err(|e| internal("chown the pty", e))?;
    rustix::fs::fchmod(&slave, Mode::from_raw_mode(0o600))
        .map_err(|e| internal("chmod the pty", e))?;
    if let Some(size) = container
        .and_then(|c| c.tty_info.as_ref())
        .and_then(|t| t.window_size)
    {
        let size = rustix::termios::Winsize {
            ws_row: u16::try_from(size.rows).unwrap_or(u16::MAX),
            ws_col: u16::try_from(size.columns).unwrap_or(u16::MAX),
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&master, size).map_err(|e| internal("TIOCSWINSZ", e))?;
    }
    // The master's open file (shared with this duplicate) becomes
    // non-blocking: input is written through the runtime's reactor.
    let writer = master.try_clone().map_err(|e| internal("dup", e))?;
    set_nonblocking(&master)?;
    Ok(Wiring {
        stdin: writer,
        master: Some(master),
        stdout: None,
        stderr: None,
        child: ChildIo::Tty(slave),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn cloexec(fd: &OwnedFd) -> bool {
        rustix::io::fcntl_getfd(fd)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC)
    }

    #[test]
    fn every_descriptor_is_close_on_exec() {
        let w = pipes().unwrap();
        let ChildIo::Pipes(child) = &w.child else {
            panic!("pipes() made a pty");
        };
        for fd in child.iter().chain([&w.stdin]).chain(w.stdout.iter()) {
            assert!(cloexec(fd), "fd {}", fd.as_raw_fd());
        }
        let t = pty(None).unwrap();
        let ChildIo::Tty(slave) = &t.child else {
            panic!("pty() made pipes");
        };
        assert!(cloexec(slave) && cloexec(t.master.as_ref().unwrap()));
    }

    #[test]
    fn the_pty_slave_is_the_agents_0600_and_has_the_window_size() {
        use nestguard::proto::mesos::{TtyInfo, tty_info::WindowSize};
        let info = ContainerInfo {
            tty_info: Some(TtyInfo {
                window_size: Some(WindowSize {
                    rows: 30,
                    columns: 99,
                }),
            }),
            ..Default::default()
        };
        let t = pty(Some(&info)).unwrap();
        let ChildIo::Tty(slave) = &t.child else {
            panic!("pty() made pipes");
        };
        let stat = rustix::fs::fstat(slave).unwrap();
        let me = (
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        );
        assert_eq!(
            (stat.st_uid, stat.st_gid, stat.st_mode & 0o7777),
            (me.0, me.1, 0o600)
        );
        let size = rustix::termios::tcgetwinsize(slave).unwrap();
        assert_eq!((size.ws_row, size.ws_col), (30, 99));
    }

    /// As root, runs the test above again as `nobody` (a non-root agent may
    /// not chown the slave to root: EPERM broke every TTY launch).
    #[test]
    fn a_non_root_agent_gets_its_own_pty() {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        if !rustix::process::geteuid().is_root() {
            return; // the test above already ran as a non-root user
        }
        // A copy of this test binary in a directory `nobody` can traverse:
        // the checkout may sit below a private one (a CI clone in a 0700
        // temporary directory), where `nobody` could not even exec it.
        let dir = tempfile::Builder::new()
            .prefix("nestguard-pty-test")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = dir.path().join("tests");
        std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new(&exe)
            .current_dir(dir.path())
            .args([
                "--exact",
                "cli::agent::core::container_io::tests::the_pty_slave_is_the_agents_0600_and_has_the_window_size",
                "--test-threads=1",
            ])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "as nobody: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
