//! Every line the `nestguard` command prints goes through here
//! ([`outln!`](crate::cli::out::outln), [`errln!`](crate::cli::out::errln)):
//! `println!` panics when stdout is a closed pipe (`nestguard acls test … |
//! head -1`), because Rust ignores SIGPIPE and the write fails with EPIPE.
//! `harness/clippy.toml` forbids the std printing macros in this crate so no
//! command slips back.
//!
//! Why not restore SIGPIPE's default disposition instead: the signal ends
//! the process at the write, so no destructor runs (the demo's and `pod
//! run`'s clean-up) and the exit status no longer says whether a check
//! passed; and the agent and the executor, which must outlive any reader,
//! would die of a client's SIGPIPE on a socket or pipe.
//!
//! What a closed stdout does: output stops, quietly (nothing on stderr, no
//! panic), and nothing else changes: the command finishes and exits with its
//! own status, so a check or a policy test still fails when it fails.
//! Commands that follow something long (`pod run`, `exec`) may ask
//! [`closed`] to stop early; the demo has its own rule (it ends at its next
//! step). Any other write error (a full disk) is reported once on stderr and
//! makes a successful command exit 1, as coreutils' `close_stdout` does: the
//! output was lost and the caller must know.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout failed with EPIPE: nobody reads any more.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write error on stdout other than EPIPE.
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// `println!` that never panics: see the module doc.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// `print!` that never panics: see the module doc.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write_stdout(format_args!($($arg)*))
    };
}
pub(crate) use out;

/// `eprintln!` that never panics (a closed or full stderr loses the line:
/// there is nowhere left to say so).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::out::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use errln;

/// Whether stdout was found closed (a write failed with EPIPE).
pub fn closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes `args` to stdout and flushes; a failure is remembered, never
/// raised (see the module doc).
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    if closed() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.flush());
    if let Err(e) = written {
        stdout_failed(&e);
    }
}

/// Writes raw bytes to stdout (a session's output) and flushes, as
/// [`write_stdout`] does.
pub fn write_stdout_bytes(bytes: &[u8]) {
    if closed() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out.write_all(bytes).and_then(|()| out.flush());
    if let Err(e) = written {
        stdout_failed(&e);
    }
}

/// Writes `args` to stderr; errors are dropped.
pub fn write_stderr(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Writes raw bytes to stderr; errors are dropped.
pub fn write_stderr_bytes(bytes: &[u8]) {
    let _ = std::io::stderr().lock().write_all(bytes);
}

fn stdout_failed(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        return;
    }
    let mut first = STDOUT_ERROR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if first.is_none() {
        *first = Some(e.to_string());
        write_stderr(format_args!("nestguard: writing to stdout: {e}\n"));
    }
}

/// The exit code of a command that returned `code`: 1 instead of success
/// when its output was lost to a write error other than a closed pipe.
pub fn finish(code: ExitCode) -> ExitCode {
    let _ = std::io::stdout()
        .lock()
        .flush()
        .map_err(|e| stdout_failed(&e));
    let failed = STDOUT_ERROR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_some();
    if failed && code == ExitCode::SUCCESS {
        ExitCode::from(1)
    } else {
        code
    }
}
