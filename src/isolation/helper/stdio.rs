//! The helper's side of a stdio handoff ([`crate::isolation::launcher::ContainerIo`]).
//!
//! The host names the three descriptors on the helper's command line
//! (`--stdio <in> <out> <err>`); the helper closes every other descriptor
//! it inherited, checks the launch data asks for the same, and marks them
//! close-on-exec. The supervisor takes the terminal, if they are a pty's
//! slave, as the session's controlling terminal (`TIOCSCTTY`); the command
//! puts them at 0/1/2 and, with a terminal, becomes the foreground process
//! group. The supervisor then closes its copies, so that the reader sees
//! EOF (or the pty master a hang-up) once the command and what it started
//! are gone; the helper's and the intermediate's copies last only as long
//! as the supervisor, which exits once the command was reaped.
//!
//! Why the supervisor and not the command takes the terminal: the command
//! then stays in the supervisor's session, so destroying a container that
//! shares a pid namespace still kills it as a session (see
//! [`crate::isolation::launcher::killer`]); a `setsid` in the command would
//! take it out of reach of that kill.
//!
//! The descriptors are kept as raw numbers, never as `OwnedFd`: the helper,
//! the intermediate and the supervisor share one address space but not
//! always one descriptor table, and a value dropped in one of them would
//! close a number the other may have reused.

use std::os::fd::RawFd;

use rustix::io::Errno;

use crate::isolation::channel::STDIO_ARG;
use crate::isolation::channel::StdioKind;

/// The three descriptors the host handed over, and what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handed {
    /// stdin, stdout, stderr of the command, as the helper inherited them.
    pub fds: [RawFd; 3],
    /// Pipes or a terminal (from the launch data).
    pub kind: StdioKind,
}

/// The helper's arguments do not name three usable descriptors.
#[derive(Debug, thiserror::Error)]
#[error("stdio handed by the host: {0}")]
pub struct StdioArgsError(String);

/// The descriptor numbers after [`STDIO_ARG`], if the helper was given any.
/// Each must be above the standard streams and named once.
pub fn parse_args(args: &[&[u8]]) -> Result<Option<[RawFd; 3]>, StdioArgsError> {
    let bad = |what: &str| StdioArgsError(what.to_owned());
    match args {
        [] => Ok(None),
        [flag, a, b, c] if *flag == STDIO_ARG.as_bytes() => {
            let mut fds = [0; 3];
            for (slot, arg) in fds.iter_mut().zip([a, b, c]) {
                *slot = std::str::from_utf8(arg)
                    .ok()
                    .and_then(|s| s.parse::<RawFd>().ok())
                    .filter(|fd| *fd > 2)
                    .ok_or_else(|| bad("a descriptor number is not above 2"))?;
            }
            if fds[0] == fds[1] || fds[1] == fds[2] || fds[0] == fds[2] {
                return Err(bad("a descriptor is named twice"));
            }
            Ok(Some(fds))
        }
        _ => Err(bad("expected no arguments or --stdio <in> <out> <err>")),
    }
}

/// Closes every descriptor from 3 up but `keep`: nothing the host leaked
/// without close-on-exec may reach the container. Fails (and the launch
/// with it) rather than leave one open.
pub fn close_all_but(keep: Option<[RawFd; 3]>) -> Result<(), StdioArgsError> {
    close_all_but_with(keep, (3, u32::MAX), sys_close_range)
}

/// [`close_all_but`] within `span` (inclusive), with the `close_range` to
/// try first (tests pass one that fails as a kernel before 5.9 does, and a
/// span clear of the test runner's own descriptors).
fn close_all_but_with(
    keep: Option<[RawFd; 3]>,
    span: (u32, u32),
    close_range: impl Fn(u32, u32) -> Result<(), Errno>,
) -> Result<(), StdioArgsError> {
    let mut keep = keep.unwrap_or([-1; 3]);
    keep.sort_unstable();
    let mut ranges = Vec::with_capacity(4);
    let mut from = span.0;
    for fd in keep.into_iter().filter_map(|fd| u32::try_from(fd).ok()) {
        if fd > span.1 {
            break;
        }
        if fd > from {
            ranges.push((from, fd - 1));
        }
        from = from.max(fd + 1);
    }
    if from <= span.1 {
        ranges.push((from, span.1));
    }
    for (first, last) in ranges {
        match close_range(first, last) {
            Ok(()) => {}
            // Linux before 5.9 (ENOSYS), or a seccomp filter of the host's
            // that refuses the call (EPERM): close them one by one.
            Err(Errno::NOSYS | Errno::PERM) => close_listed(first, last)?,
            Err(e) => {
                return Err(StdioArgsError(format!("close_range({first}, {last}): {e}")));
            }
        }
    }
    Ok(())
}

/// A raw syscall: neither rustix 1.1 nor nix 0.32 wraps close_range(2), and
/// closing each fd of /proc/self/fd would cost a directory read on every
/// launch.
fn sys_close_range(first: u32, last: u32) -> Result<(), Errno> {
    // SAFETY: close_range only closes descriptors; the helper owns none in
    // the range (it runs before anything is opened, or `keep` is spared).
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    if rc == -1 {
        return Err(Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    Ok(())
}

/// The fallback without `close_range`: the open descriptors in
/// `first..=last` as `/proc/self/fd` lists them, collected before any is
/// closed (closing while reading would change the listing under the
/// reader), then closed. The directory's own descriptor is listed too; it
/// is closed already when its number comes up (EBADF, ignored).
fn close_listed(first: u32, last: u32) -> Result<(), StdioArgsError> {
    let fail = |e: std::io::Error| {
        StdioArgsError(format!(
            "close the inherited descriptors (no close_range): /proc/self/fd: {e}"
        ))
    };
    let mut open = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").map_err(fail)? {
        let name = entry.map_err(fail)?.file_name();
        if let Some(fd) = name.to_str().and_then(|n| n.parse::<u32>().ok())
            && (first..=last).contains(&fd)
        {
            open.push(fd);
        }
    }
    for fd in open {
        // SAFETY: as in sys_close_range; a number that is no longer open
        // (the listing's own) fails with EBADF.
        unsafe { libc::close(fd as RawFd) };
    }
    Ok(())
}

/// Pairs the descriptors of the command line with the launch data's
/// `stdio`, which must agree, and marks them close-on-exec (the command
/// gets its own copies at 0/1/2).
pub fn check(fds: Option<[RawFd; 3]>, kind: Option<StdioKind>) -> Result<Option<Handed>, String> {
    let handed = match (fds, kind) {
        (None, None) => return Ok(None),
        (Some(fds), Some(kind)) => Handed { fds, kind },
        _ => {
            return Err("the helper's descriptors and the launch data's stdio disagree".to_owned());
        }
    };
    for fd in handed.fds {
        // SAFETY: fcntl on a descriptor number changes only its flags.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
            return Err(format!(
                "fcntl({fd}, F_SETFD): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(Some(handed))
}

impl Handed {
    /// In the supervisor, a session leader without a terminal: the pty
    /// becomes the session's controlling terminal.
    pub fn take_terminal(&self) -> Result<(), String> {
        if self.kind != StdioKind::Tty {
            return Ok(());
        }
        // SAFETY: TIOCSCTTY takes an int argument (0: do not steal).
        if unsafe { libc::ioctl(self.fds[0], libc::TIOCSCTTY, 0) } == -1 {
            return Err(format!(
                "ioctl(TIOCSCTTY): {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// In the command before `execve`: the descriptors become 0/1/2 (the
    /// originals close on exec); with a terminal, the command's own
    /// process group becomes its foreground group (signals are blocked
    /// here, so `tcsetpgrp` from the background raises no SIGTTOU).
    pub fn install(&self) -> Result<(), String> {
        for (fd, target) in self.fds.into_iter().zip(0..) {
            // SAFETY: dup2 onto a standard stream of this process.
            if unsafe { libc::dup2(fd, target) } == -1 {
                return Err(format!(
                    "dup2({fd}, {target}): {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        if self.kind == StdioKind::Tty {
            // SAFETY: plain syscalls on this process and its terminal.
            unsafe {
                if libc::setpgid(0, 0) == -1 {
                    return Err(format!("setpgid: {}", std::io::Error::last_os_error()));
                }
                if libc::tcsetpgrp(0, libc::getpid()) == -1 {
                    return Err(format!("tcsetpgrp: {}", std::io::Error::last_os_error()));
                }
            }
        }
        Ok(())
    }

    /// In the supervisor once the command runs: its copies go.
    pub fn close(&self) {
        for fd in self.fds {
            // SAFETY: closes this process' copy; nothing here uses it again.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn is_open(fd: RawFd) -> bool {
        // SAFETY: F_GETFD only reads a descriptor's flags.
        unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
    }

    /// Without close_range (ENOSYS), the listed descriptors in the span are
    /// closed all the same, and the kept one stays.
    #[test]
    fn without_close_range_the_descriptors_are_closed_one_by_one() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        // High numbers, clear of what other tests open meanwhile.
        let (lo, keep, hi) = (900, 901, 902);
        for (fd, from) in [(lo, &r), (keep, &w), (hi, &r)] {
            // SAFETY: dup2 onto a number nothing of this process uses.
            assert_ne!(unsafe { libc::dup2(from.as_raw_fd(), fd) }, -1);
        }
        let tried = std::cell::Cell::new(0);
        close_all_but_with(Some([keep, -1, -1]), (lo as u32, hi as u32), |_, _| {
            tried.set(tried.get() + 1);
            Err(Errno::NOSYS)
        })
        .unwrap();
        assert_eq!(
            tried.get(),
            2,
            "one close_range per range around the kept fd"
        );
        assert_eq!(
            (is_open(lo), is_open(keep), is_open(hi)),
            (false, true, false)
        );
        // SAFETY: the kept duplicate is this test's.
        unsafe { libc::close(keep) };
    }

    #[test]
    fn arguments_name_three_distinct_descriptors_above_the_standard_streams() {
        assert_eq!(parse_args(&[]).unwrap(), None);
        assert_eq!(
            parse_args(&[b"--stdio", b"10", b"11", b"12"]).unwrap(),
            Some([10, 11, 12])
        );
        for bad in [
            &[&b"--stdio"[..], b"1", b"11", b"12"][..],
            &[b"--stdio", b"10", b"10", b"12"],
            &[b"--stdio", b"10", b"x", b"12"],
            &[b"--stdio", b"10", b"11"],
            &[b"--other"],
        ] {
            assert!(parse_args(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn launch_data_and_arguments_must_agree() {
        assert!(check(Some([10, 11, 12]), None).is_err());
        assert!(check(None, Some(StdioKind::Pipes)).is_err());
        assert_eq!(check(None, None).unwrap(), None);
    }
}
