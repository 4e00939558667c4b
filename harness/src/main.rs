//! `nestguard`: the operator command line (and, later, the simulated agent).

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
