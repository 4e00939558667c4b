//! The nesting-aware launcher and isolators: namespaces, cgroups, sandboxes,
//! the supervising launch helper, checkpoints and recovery.
//!
//! The layout follows who runs the code:
//!
//! * host side (the agent's process): [`launcher`] — the container tree,
//!   launch, wait, kill, destroy, recover, and the [`launcher::killer`]s;
//! * helper side (the `nestguard-launch` binary and the processes it forks):
//!   [`helper`] — [`helper::supervisor::helper_main`], the vforks, mounts,
//!   the rootfs and the command's preparation. The host calls into it only
//!   for checks that must fail a launch before the helper runs
//!   ([`helper::command::validate`], user look-up for the sandbox's owner);
//!   the helper never calls the launcher;
//! * between them, [`channel`] is the only protocol (launch data in, report
//!   out, the `pid` checkpoint);
//! * shared by both: plain data and kernel wrappers — [`paths`] (Mesos'
//!   runtime layout), [`process`] (`/proc` and pidfds), [`namespace_ops`]
//!   (planned by the host, entered and created by the helper), [`sandbox`]
//!   (created by the host, its logs opened by the helper) and [`seccomp`]
//!   (compiled by the host, installed by the helper);
//! * the isolators ([`isolator`]) and [`cgroups`] run on the host.
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
//! with `CLONE_VM | CLONE_VFORK` (module `helper::vfork`) — no page-table copy, and only
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
//! watches it through a pidfd. Killing is behind [`launcher::killer::ContainerKiller`]
//! (pid namespace / session by default, cgroups with
//! [`Launcher::with_cgroups`]).

pub mod cgroups;
pub mod channel;
pub mod exec_stage;
pub mod helper;
pub mod id_map;
pub mod isolator;
pub mod launcher;
pub mod namespace_ops;
pub mod paths;
pub mod process;
pub mod sandbox;
pub mod seccomp;

pub use launcher::{Defences, Launcher, LauncherError, LauncherOptions, Mode};
