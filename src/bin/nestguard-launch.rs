//! `nestguard-launch`: the container launch helper.
//!
//! The launcher execs this helper right after fork, so that the multi-threaded
//! host does nothing but async-signal-safe work between fork and exec. The
//! helper reads the launch data from its stdin (a pipe), sets up namespaces,
//! forks the supervisor that runs and reaps the command, and the supervisor
//! reports its pid on stdout. The logic is in
//! `nestguard::isolation::helper::supervisor`.
//!
//! `no_main`: the helper is on every launch's critical path, and the Rust
//! runtime's start-up (checking fds 0–2 with `poll`, reading
//! `/proc/self/maps` for the main thread's stack guard, ignoring SIGPIPE —
//! which `execve` would then pass on to the container) buys it nothing.

#![no_main]

/// The C entry point. The launch data comes over stdin; the arguments only
/// name the stdio descriptors the host handed over, if any.
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
    let all = unsafe { nestguard::isolation::helper::c_args(argc, argv) };
    let args = all.get(1..).unwrap_or_default();
    nestguard::isolation::helper::supervisor::helper_main(args)
}
