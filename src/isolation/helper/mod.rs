//! The helper side: code that runs in the `nestguard-launch` helper and the
//! processes it forks (intermediate, supervisor, command), never in the host.
//!
//! It reads the launch data the host sent over [`super::channel`], enters and
//! creates namespaces, forks the supervisor, sets up mounts and the rootfs,
//! prepares the command and execs it.

pub mod command;
pub mod mounts;
pub mod rootfs;
pub mod stdio;
pub mod supervisor;
mod vfork;
