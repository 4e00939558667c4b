//! `nestguard`: the operator command line (and, later, the simulated agent).

// No unsafe code but the `.so` loaders' (`cli/library.rs`, `cli/agent/abi.rs`),
// which allow it for their calls into libnestguard.so. (A crate attribute,
// not `[lints.rust]` in Cargo.toml, while the integration tests still call
// libc directly: package lints would reach them too.)
#![deny(unsafe_code)]
// As the library: a failure outside tests is an error the user reads, not a
// panic.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo)
)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(args.verbose);
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("nestguard: {err:#}");
            ExitCode::from(1)
        }
    }
}
