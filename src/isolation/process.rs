//! Process facts read from procfs, pidfds and raw wait statuses.
//!
//! Hand-rolled on purpose: we need three fields of `/proc/<pid>/stat`
//! (state, session, start time) and `NSpid` of `/proc/<pid>/status`, read
//! through a caller-chosen procfs directory fd (the helper keeps the host's
//! procfs open across `setns`). A procfs crate would pull in far more than that
//! and could not read through a directory fd. `pidfd_open` is `rustix`'s
//! (`nix` 0.32 has no wrapper).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::fcntl::{OFlag, openat};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::Mode;

/// A procfs read or process syscall that failed; names the call and the path.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// A procfs file could not be read.
    #[error("read {path}: {source}")]
    Read {
        /// The procfs path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A procfs file did not have the expected shape.
    #[error("parse {path}: {what}")]
    Parse {
        /// The procfs path.
        path: PathBuf,
        /// What was expected.
        what: &'static str,
    },
    /// A syscall failed.
    #[error("{call}({pid}): {source}")]
    Syscall {
        /// The syscall.
        call: &'static str,
        /// Its pid argument.
        pid: i32,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// The fields of `/proc/<pid>/stat` the launcher needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// One-letter state (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Parent pid.
    pub ppid: i32,
    /// Session id.
    pub session: i32,
    /// Start time in clock ticks after boot: with the pid, a unique identity
    /// for a process (a reused pid has a later start time — MESOS-8125).
    pub start_time: u64,
}

impl ProcStat {
    /// A zombie has exited; it only waits to be reaped.
    pub fn exited(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Parses the text of `/proc/<pid>/stat` (`path` only names it in errors).
pub fn parse_stat(text: &str, path: PathBuf) -> Result<ProcStat, ProcessError> {
    let bad = |what| ProcessError::Parse {
        path: path.clone(),
        what,
    };
    // The command name may contain spaces and parentheses: split after the
    // last ')'.
    let close = text.rfind(')').ok_or_else(|| bad("a `(comm)` field"))?;
    let rest: Vec<&str> = text
        .get(close + 1..)
        .ok_or_else(|| bad("fields after `(comm)`"))?
        .split_whitespace()
        .collect();
    let field = |i: usize, what| rest.get(i).copied().ok_or_else(|| bad(what));
    let state = field(0, "a state field")?
        .chars()
        .next()
        .ok_or_else(|| bad("a state letter"))?;
    let ppid = field(1, "a ppid field")?
        .parse()
        .map_err(|_| bad("a numeric ppid"))?;
    let session = field(3, "a session field")?
        .parse()
        .map_err(|_| bad("a numeric session"))?;
    let start_time = field(19, "a starttime field")?
        .parse()
        .map_err(|_| bad("a numeric starttime"))?;
    Ok(ProcStat {
        state,
        ppid,
        session,
        start_time,
    })
}

fn read_proc_file(proc_dir: Option<BorrowedFd<'_>>, rel: &str) -> std::io::Result<String> {
    let mut text = String::new();
    match proc_dir {
        Some(dir) => {
            let fd = openat(dir, rel, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty())
                .map_err(std::io::Error::from)?;
            File::from(fd).read_to_string(&mut text)?;
        }
        None => {
            File::open(format!("/proc/{rel}"))?.read_to_string(&mut text)?;
        }
    }
    Ok(text)
}

/// `/proc/<pid>/stat` through `proc_dir` (or `/proc`); `None` if the process
/// does not exist.
pub fn stat_in(
    proc_dir: Option<BorrowedFd<'_>>,
    pid: i32,
) -> Result<Option<ProcStat>, ProcessError> {
    let rel = format!("{pid}/stat");
    match read_proc_file(proc_dir, &rel) {
        Ok(text) => parse_stat(&text, PathBuf::from(format!("/proc/{rel}"))).map(Some),
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ESRCH) =>
        {
            Ok(None)
        }
        Err(source) => Err(ProcessError::Read {
            path: PathBuf::from(format!("/proc/{rel}")),
            source,
        }),
    }
}

/// `/proc/<pid>/stat`; `None` if the process does not exist.
pub fn stat(pid: i32) -> Result<Option<ProcStat>, ProcessError> {
    stat_in(None, pid)
}

/// True if `pid` is running (not a zombie) and started at `start_time`.
pub fn is_running(pid: i32, start_time: u64) -> Result<bool, ProcessError> {
    Ok(stat(pid)?.is_some_and(|s| s.start_time == start_time && !s.exited()))
}

/// True if `pid` is the init (pid 1) of its own pid namespace: the last
/// `NSpid` entry of `/proc/<pid>/status` is 1.
///
/// A process reaped since the caller last saw it is not an init: its
/// `status` file is gone (ENOENT, or ESRCH while it is being torn down), and
/// a destroy racing its exit must go on to its session rather than fail.
pub fn is_pid_namespace_init(pid: i32) -> Result<bool, ProcessError> {
    let path = PathBuf::from(format!("/proc/{pid}/status"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ESRCH) =>
        {
            return Ok(false);
        }
        Err(source) => {
            return Err(ProcessError::Read {
                path: path.clone(),
                source,
            });
        }
    };
    let line = text
        .lines()
        .find(|l| l.starts_with("NSpid:"))
        .ok_or(ProcessError::Parse {
            path,
            what: "an NSpid line",
        })?;
    let fields: Vec<&str> = line.split_whitespace().skip(1).collect();
    Ok(fields.len() > 1 && fields.last() == Some(&"1"))
}

/// Every pid whose session id is `sid` (the session leader included), seen
/// from this process' pid namespace.
pub fn session_members(sid: i32) -> Result<Vec<i32>, ProcessError> {
    let dir = std::fs::read_dir("/proc").map_err(|source| ProcessError::Read {
        path: PathBuf::from("/proc"),
        source,
    })?;
    let mut pids = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Ok(Some(s)) = stat(pid)
            && s.session == sid
            && !s.exited()
        {
            pids.push(pid);
        }
    }
    Ok(pids)
}

/// `pidfd_open(2)`: a file descriptor that becomes readable when `pid` exits,
/// for children and non-children alike.
pub fn pidfd_open(pid: i32) -> Result<OwnedFd, ProcessError> {
    let failed = |source: std::io::Error| ProcessError::Syscall {
        call: "pidfd_open",
        pid,
        source,
    };
    // Not a process: 0 and negative pids name groups for kill(2), and
    // pidfd_open(2) refuses them.
    let target = rustix::process::Pid::from_raw(pid.max(0))
        .ok_or_else(|| failed(std::io::Error::from_raw_os_error(libc::EINVAL)))?;
    rustix::process::pidfd_open(target, rustix::process::PidfdFlags::empty())
        .map_err(|e| failed(e.into()))
}

/// Waits until `fd` is readable (a pidfd: the process exited) or `timeout`
/// passes (`None` waits forever). Returns true if readable.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> Result<bool, ProcessError> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let remaining = match deadline {
            None => PollTimeout::NONE,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                PollTimeout::try_from(left.as_millis().min(i32::MAX as u128) as i32)
                    .unwrap_or(PollTimeout::MAX)
            }
        };
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, remaining) {
            Ok(0) => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(false);
                }
            }
            Ok(_) => return Ok(true),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => {
                return Err(ProcessError::Syscall {
                    call: "poll",
                    pid: fd.as_raw_fd(),
                    source: e.into(),
                });
            }
        }
    }
}

/// `waitpid` returning the raw status word (Mesos checkpoints it as is);
/// retries on EINTR.
pub fn waitpid_raw(pid: i32, flags: i32) -> Result<Option<(i32, i32)>, ProcessError> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer for the duration of the call.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r > 0 {
            return Ok(Some((r, status)));
        }
        if r == 0 {
            return Ok(None);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(ProcessError::Syscall {
                call: "waitpid",
                pid,
                source: err,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parses_comm_with_parens() {
        let text = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 10";
        let s = parse_stat(text, PathBuf::from("/proc/42/stat")).unwrap();
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.session, 42);
        assert_eq!(s.start_time, 12345);
        assert!(parse_stat("42 (x", PathBuf::from("p")).is_err());
    }

    #[test]
    fn own_process_is_running() {
        let me = std::process::id() as i32;
        let s = stat(me).unwrap().unwrap();
        assert!(is_running(me, s.start_time).unwrap());
        assert!(!is_running(me, s.start_time + 1).unwrap());
    }
}
