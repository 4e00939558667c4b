//! `nestguard-launch`: the container launch helper.
//!
//! The launcher execs this helper right after fork, so that the multi-threaded
//! host does nothing but async-signal-safe work between fork and exec. The
//! helper reads the launch data from its stdin (a pipe), sets up namespaces,
//! forks the supervisor that runs and reaps the command, and reports the
//! supervisor's pid on its stdout. The logic is in
//! `nestguard::isolation::supervisor`.

fn main() {
    std::process::exit(nestguard::isolation::supervisor::helper_main());
}
