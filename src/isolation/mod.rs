//! The nesting-aware launcher and isolators: namespaces, cgroups, sandboxes,
//! the supervising launch helper, checkpoints and recovery.
//!
//! Host side: [`launcher::Launcher`]. Helper side (the `nestguard-launch`
//! binary): [`supervisor::helper_main`].

pub mod cgroups;
pub mod channel;
pub mod command;
pub mod kill;
pub mod launcher;
pub mod namespaces;
pub mod paths;
pub mod process;
pub mod sandbox;
pub mod supervisor;

pub use launcher::{Launcher, LauncherError, LauncherOptions, Mode};
