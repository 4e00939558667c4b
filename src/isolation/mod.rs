//! The nesting-aware launcher and isolators: namespaces, cgroups, sandboxes,
//! the supervising launch helper, checkpoints and recovery.
//!
//! Host side: [`launcher::Launcher`]. Helper side (the `nestguard-launch`
//! binary): [`supervisor::helper_main`].
//!
//! Processes of one container, host first:
//!
//! ```text
//! host ──exec──▶ nestguard-launch (helper: setns into the parent's namespaces)
//!                   └─(intermediate: unshare, only for a new pid namespace)
//!                         └─ supervisor (pid 1 / subreaper; writes `status`)
//!                               └─ command
//! ```
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
pub mod namespaces;
pub mod paths;
pub mod process;
pub mod sandbox;
pub mod supervisor;

pub use launcher::{Launcher, LauncherError, LauncherOptions, Mode};
