//! Handing a container its stdio as descriptors (Mesos' `ContainerIO`):
//! the caller's pipe ends, or the slave side of a pseudo-terminal, become
//! the command's fds 0/1/2. Nothing is opened by path, so nothing in the
//! tenant's sandbox can be swapped for them.
//!
//! The helper of such a launch is spawned for it (not the spare, which
//! exists before the descriptors do): the host duplicates them above the
//! standard streams with close-on-exec, clears that flag in the forked
//! child only (`pre_exec`; `fcntl` is async-signal-safe), and names their
//! numbers on the helper's command line. Duplicates made before the spawn
//! can never collide with the descriptors `std::process` opens for it.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::isolation::channel::{STDIO_ARG, StdioKind};

/// Duplicates are made at or above this number, clear of 0/1/2.
const FIRST_HANDOFF_FD: RawFd = 10;

/// The command's stdin, stdout and stderr, borrowed for the launch: the
/// launcher duplicates them, the caller closes its own copies afterwards.
#[derive(Debug, Clone, Copy)]
pub struct ContainerIo<'a> {
    /// The command's fd 0.
    pub stdin: BorrowedFd<'a>,
    /// The command's fd 1.
    pub stdout: BorrowedFd<'a>,
    /// The command's fd 2.
    pub stderr: BorrowedFd<'a>,
    /// The three are a pseudo-terminal's slave, which becomes the
    /// command's controlling terminal.
    pub tty: bool,
    /// The container is a debug session's (Mesos' `ContainerClass`
    /// DEBUG): checkpointed as its class in its `ContainerConfig`, so that
    /// a restarted agent, whose ends of these descriptors died with it,
    /// knows to destroy it as Mesos destroys a session whose connection
    /// ended.
    pub debug: bool,
}

/// An invalid [`ContainerIo`].
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// A descriptor could not be duplicated (closed, or out of descriptors).
    #[error("duplicate the container's {0}: {1}")]
    Dup(&'static str, #[source] rustix::io::Errno),
    /// `tty` was set, but the descriptor is not a terminal.
    #[error("the container's {0} is not a terminal, but a TTY was asked for")]
    NotATerminal(&'static str),
    /// The descriptor is not open (or its flags cannot be read).
    #[error("the container's {0} is not an open descriptor: {1}")]
    NotOpen(&'static str, #[source] rustix::io::Errno),
    /// The descriptor is of a kind a command cannot use as its stdio.
    #[error(
        "the container's {0} is {1}; expected a pipe, a socket, a character device or a regular file"
    )]
    Kind(&'static str, &'static str),
    /// With a TTY, the three are not one pseudo-terminal's slave.
    #[error(
        "a TTY was asked for, but stdin, stdout and stderr are not one pseudo-terminal's slave ({0})"
    )]
    NotOnePtySlave(&'static str),
}

/// Linux's majors of pty slaves (`UNIX98_PTY_SLAVE_MAJOR` and the 7 after
/// it); a master (`/dev/ptmx`, 5:2) is outside, and handing the container
/// a master would let it read and type on another terminal.
const PTY_SLAVE_MAJORS: std::ops::RangeInclusive<u32> = 136..=143;

/// Checks that `fd` can be a command's stdio: open, not an `O_PATH`
/// descriptor (which grants no reads or writes, only a name to reopen), and
/// a pipe, socket, character device or regular file (not a directory);
/// returns its `stat`.
fn usable(name: &'static str, fd: BorrowedFd<'_>) -> Result<rustix::fs::Stat, StdioError> {
    use rustix::fs::{FileType, OFlags};
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| StdioError::NotOpen(name, e))?;
    if flags.contains(OFlags::PATH) {
        return Err(StdioError::Kind(name, "an O_PATH descriptor"));
    }
    let stat = rustix::fs::fstat(fd).map_err(|e| StdioError::NotOpen(name, e))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Fifo | FileType::Socket | FileType::CharacterDevice | FileType::RegularFile => {
            Ok(stat)
        }
        FileType::Directory => Err(StdioError::Kind(name, "a directory")),
        _ => Err(StdioError::Kind(
            name,
            "a block device or other special file",
        )),
    }
}

/// With a TTY: the three name one device, and it is a pty's slave.
fn one_pty_slave(stats: &[rustix::fs::Stat]) -> Result<(), StdioError> {
    let rdev = stats[0].st_rdev;
    if stats.iter().any(|s| s.st_rdev != rdev) {
        return Err(StdioError::NotOnePtySlave("they are different devices"));
    }
    let is_char = rustix::fs::FileType::from_raw_mode(stats[0].st_mode)
        == rustix::fs::FileType::CharacterDevice;
    if !is_char || !PTY_SLAVE_MAJORS.contains(&rustix::fs::major(rdev)) {
        return Err(StdioError::NotOnePtySlave(
            "the device is not a pty slave (a master, or another terminal)",
        ));
    }
    Ok(())
}

/// The host's duplicates, alive until the helper was spawned.
pub(super) struct Handoff {
    fds: [OwnedFd; 3],
    kind: StdioKind,
}

impl Handoff {
    /// Checks and duplicates `io` (close-on-exec).
    pub(super) fn new(io: &ContainerIo<'_>) -> Result<Handoff, StdioError> {
        let named = [
            ("stdin", io.stdin),
            ("stdout", io.stdout),
            ("stderr", io.stderr),
        ];
        let mut stats = Vec::with_capacity(3);
        for (name, fd) in named {
            stats.push(usable(name, fd)?);
            if io.tty && !rustix::termios::isatty(fd) {
                return Err(StdioError::NotATerminal(name));
            }
        }
        if io.tty {
            one_pty_slave(&stats)?;
        }
        let mut fds = Vec::with_capacity(3);
        for (name, fd) in named {
            fds.push(
                rustix::io::fcntl_dupfd_cloexec(fd, FIRST_HANDOFF_FD)
                    .map_err(|e| StdioError::Dup(name, e))?,
            );
        }
        let Ok(fds) = <[OwnedFd; 3]>::try_from(fds) else {
            unreachable!("three descriptors were pushed")
        };
        Ok(Handoff {
            fds,
            kind: if io.tty {
                StdioKind::Tty
            } else {
                StdioKind::Pipes
            },
        })
    }

    pub(super) fn kind(&self) -> StdioKind {
        self.kind
    }

    /// Makes `command` (the helper) inherit the duplicates and name them.
    pub(super) fn pass_to(&self, command: &mut Command) {
        let raw: [RawFd; 3] = [
            self.fds[0].as_raw_fd(),
            self.fds[1].as_raw_fd(),
            self.fds[2].as_raw_fd(),
        ];
        command.arg(STDIO_ARG);
        command.args(raw.iter().map(RawFd::to_string));
        // SAFETY: the closure only calls fcntl (async-signal-safe) on
        // descriptors the parent keeps open across the spawn.
        unsafe {
            command.pre_exec(move || {
                for fd in raw {
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_tty_launch_refuses_pipes() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        let io = ContainerIo {
            stdin: r.as_fd(),
            stdout: w.as_fd(),
            stderr: w.as_fd(),
            tty: true,
            debug: false,
        };
        assert!(matches!(
            Handoff::new(&io),
            Err(StdioError::NotATerminal("stdin"))
        ));
    }

    #[test]
    fn duplicates_are_close_on_exec_and_clear_of_the_standard_streams() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        let io = ContainerIo {
            stdin: r.as_fd(),
            stdout: w.as_fd(),
            stderr: w.as_fd(),
            tty: false,
            debug: false,
        };
        let handoff = Handoff::new(&io).unwrap();
        assert_eq!(handoff.kind(), StdioKind::Pipes);
        for fd in &handoff.fds {
            assert!(fd.as_raw_fd() >= FIRST_HANDOFF_FD);
            let flags = rustix::io::fcntl_getfd(fd).unwrap();
            assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        }
    }
}
