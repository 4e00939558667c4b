//! The nesting-aware launcher and isolators: namespaces, cgroups, sandboxes,
//! the supervising launch helper, checkpoints and recovery.
pub mod cgroups;
