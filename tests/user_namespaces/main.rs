//! Pods in user namespaces (`namespaces/user`), root only: the launcher
//! end to end (`launcher.rs`), what root inside can no longer do
//! (`defences.rs`), files and their owners (`files.rs`), and the isolator's
//! parameters with the agent's composite (`isolator.rs`). Apart from the
//! `isolation` binary: idmapped mounts need a file system that has them
//! (tmpfs only from Linux 6.3), which the v2 guest's temporary directory is
//! not on its 6.1 kernel.

#[path = "../common/mod.rs"]
mod common;
#[path = "../isolator_support/mod.rs"]
mod isolator_support;
#[path = "../launcher_support/mod.rs"]
mod launcher_support;

mod support;

mod defences;
mod files;
mod isolator;
mod launcher;
