//! The nesting-aware launcher and isolators: namespaces, cgroups, sandboxes,
//! the supervising launch helper, checkpoints and recovery.
//!
//! Host side: [`launcher::Launcher`]. Helper side (the `nestguard-launch`
//! binary): [`supervisor::helper_main`].
//!
//! Processes of one container, host first:
//!
//! ```text
//! host ──exec──▶ nestguard-launch (helper: joins the cgroups, setns into the
//!                   │               parent's namespaces, unshare its own)
//!                   └─ supervisor (pid 1 / subreaper; checkpoints `pid`,
//!                         │        reports, writes `status`)
//!                         └─ command
//! ```
//!
//! A nested container's helper is started in its parent's pid namespace
//! (the host thread's `pid_for_children`, set and restored around the
//! spawn), so a new pid namespace needs no intermediate process (one is
//! used on kernels before 5.8). The supervisor and the command are created
//! with `CLONE_VM | CLONE_VFORK` ([`vfork`]): no address-space copy.
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
pub mod rootfs;
pub mod sandbox;
pub mod supervisor;
mod vfork;

pub use launcher::{Launcher, LauncherError, LauncherOptions, Mode};
