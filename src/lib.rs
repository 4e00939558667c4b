//! nestguard: nested-container authorization, credentials and isolation for
//! Apache Mesos agents.
//!
//! The crate builds as a `cdylib` (`libnestguard.so`, the C ABI in [`abi`],
//! declared in `include/nestguard.h`) and as an `rlib` for the command-line
//! tools and the tests. The library never prints: it logs through `tracing`,
//! and the host chooses where logs go.

#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo)
)]

pub mod abi;
pub mod authz;
pub mod beneath;
pub mod checkpoint;
pub mod container_id;
pub mod credentials;
pub mod input;
pub mod isolation;
pub mod json;
pub mod metrics;
pub mod proto;
pub mod validation;
