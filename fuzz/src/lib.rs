//! The bodies of the fuzz targets: `library` for libnestguard's inputs,
//! `agent` for the simulated agent's. Each `fuzz_targets/NAME.rs` calls one;
//! `seeds` runs them over their seeds for the normal test suite.

pub mod agent;
pub mod library;
pub mod seeds;
