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

/// The C entry point; arguments are unused (everything comes over stdin).
#[unsafe(no_mangle)]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    nestguard::isolation::helper::supervisor::helper_main()
}
