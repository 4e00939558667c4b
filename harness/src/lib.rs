//! The `nestguard` command as a library: `main.rs` parses the command line
//! and runs it. A library so that the fuzz targets (`fuzz/`) and their seed
//! test (`harness/tests/fuzz_seeds.rs`) can call the agent's pure input
//! functions, [`cli::inputs`], the same code the agent runs on a request.
//! `unsafe` is denied package-wide (`[lints.rust]` in Cargo.toml) but for
//! the `.so` loaders.

// As the library: a failure outside tests is an error the user reads, not a
// panic.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo)
)]

pub mod cli;
