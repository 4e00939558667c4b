//! `nestguard`: the operator command line, the simulated agent, the default
//! executor and the demo; the code is the package's library (`lib.rs`).

// As the library: a failure outside tests is an error the user reads, not a
// panic.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo)
)]

use std::process::ExitCode;

use clap::Parser;
use nestguard_harness::cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(args.verbose);
    match cli::run(args) {
        Ok(code) => cli::out::finish(code),
        Err(err) => {
            cli::out::write_stderr(format_args!("nestguard: {err:#}\n"));
            ExitCode::from(1)
        }
    }
}
