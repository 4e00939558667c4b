//! `nestguard-launch`: the container launch helper.
//!
//! The launcher execs this helper right after clone, so that the multi-threaded
//! host does nothing but async-signal-safe work between fork and exec. The
//! helper reads the launch info from a pipe, sets up namespaces, mounts,
//! limits and the user, then forks the command and supervises it.
//!
//! Its body comes with the launcher work; until then it refuses to run.

fn main() -> std::process::ExitCode {
    eprintln!("nestguard-launch: the launch helper is not implemented in this build");
    std::process::ExitCode::from(2)
}
