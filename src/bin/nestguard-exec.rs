//! `nestguard-exec`: the exec stage that applies nestguard's defences to
//! containers run by Mesos' own launch helper, and (installed as
//! `<--launcher_dir>/mesos-containerizer`) the wrapper that hands the user
//! switch to it. The logic and why it is safe:
//! `nestguard::isolation::exec_stage`.
//!
//! `no_main`: the Rust runtime ignores SIGPIPE before `main`, and an
//! ignored signal survives `execve`: the container's command would inherit
//! a disposition Mesos never gave it.

#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use nestguard::isolation::exec_stage::{SETUP_FAILURE, containerizer, stage};

/// The C entry point.
///
/// # Safety
///
/// Called by the C runtime only, with `argc` valid strings in `argv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn main(
    argc: std::ffi::c_int,
    argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    // SAFETY: the C runtime's argc and argv, as `c_args` requires.
    let raw = unsafe { nestguard::isolation::helper::c_args(argc, argv) };
    let args: Vec<OsString> = raw.iter().map(|a| OsString::from_vec(a.to_vec())).collect();
    let invoked = args
        .first()
        .map(|a| a.as_bytes().rsplit(|b| *b == b'/').next().unwrap_or(b""))
        .unwrap_or(b"");
    let (who, text) = if invoked == b"mesos-containerizer" {
        (
            "nestguard mesos-containerizer wrapper",
            containerizer::run(&args),
        )
    } else {
        let rest: Vec<&[u8]> = args.iter().skip(1).map(|a| a.as_bytes()).collect();
        ("nestguard-exec", stage::run(&rest))
    };
    let line = format!("{who}: {text}\n");
    // SAFETY: write(2) of a valid buffer to stderr.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    SETUP_FAILURE
}
