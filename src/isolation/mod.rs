//! The nesting-aware launcher and isolators: namespaces, cgroups, sandboxes,
//! the supervising launch helper, checkpoints and recovery.
//!
//! Host side: [`launcher::Launcher`]. Helper side (the `nestguard-launch`
//! binary): [`supervisor::helper_main`].
//!
//! Processes of one container, host first:
//!
//! ```text
//! host ──exec──▶ nestguard-launch (helper: setns into the parent's
//!                   │               namespaces through a pidfd, unshare)
//!                   └─ intermediate (only for a new pid namespace inside the
//!                         │          parent's: joins the cgroups, unshares)
//!                         └─ supervisor (pid 1 / subreaper; joins the cgroups
//!                               │        if no intermediate did, checkpoints
//!                               │        `pid`, reports, writes `status`)
//!                               └─ command (optionally in its own rootfs)
//! ```
//!
//! What a launch costs, and why it is fast: every hop is on the critical
//! path, so the intermediate, the supervisor and the command are created
//! with `CLONE_VM | CLONE_VFORK` (module `vfork`) — no page-table copy, and only
//! one of the processes sharing the memory runs at a time; the supervisor
//! checkpoints and reports its own pid, so no process waits for another's
//! go-ahead; the helper is `no_main` and spawned one launch ahead, idle on
//! its stdin, so its exec is not on the launch's path at all. The helper
//! stays out of the container's cgroups: a destroy kills everything in them,
//! and the helper must live to reap the intermediate, or the parent's pid
//! namespace could not end.
//!
//! Checkpoints follow Mesos' runtime layout ([`paths`]); the supervisor's
//! identity is its pid plus start time ([`channel::PidRecord`]); the host
//! watches it through a pidfd. Killing is behind [`kill::ContainerKiller`]
//! (pid namespace / session by default, cgroups with
//! [`Launcher::with_cgroups`]).

pub mod cgroups;
pub mod channel;
pub mod command;
pub mod isolator;
pub mod kill;
pub mod launcher;
pub mod mounts;
pub mod namespaces;
pub mod paths;
pub mod process;
pub mod rootfs;
pub mod sandbox;
pub mod seccomp;
pub mod supervisor;
mod vfork;

pub use launcher::{Defences, Launcher, LauncherError, LauncherOptions, Mode};
