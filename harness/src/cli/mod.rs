//! Command-line parsing and dispatch; one file per command family.

mod acls;
mod agent;
mod client;
mod credentials;
mod demo;
mod executor;
mod library;
mod pod;
mod recordio;
mod smoke;
mod wire;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// nestguard: nested-container authorization, credentials and isolation for Mesos agents.
#[derive(Debug, Parser)]
#[command(name = "nestguard", version)]
pub struct Cli {
    /// Log more (repeat for more detail); logs go to stderr.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the demo: a pod through the simulated agent, then clean up.
    Demo,
    /// Print the library, ABI and protocol versions.
    Version,
    /// Run the simulated Mesos agent (loads libnestguard.so from --modules).
    Agent(agent::flags::AgentFlags),
    /// Run nestguard's default executor (inside a pod's executor container).
    Executor,
    /// Launch pods on an agent.
    #[command(subcommand)]
    Pod(pod::PodCommand),
    /// Load libnestguard.so through its C ABI and exercise it end to end.
    Smoke {
        /// Path of libnestguard.so (default: next to this executable).
        #[arg(long)]
        library: Option<PathBuf>,
    },
    /// Check, lint and explain Mesos ACL files.
    #[command(subcommand)]
    Acls(acls::AclsCommand),
    /// Check credential files.
    #[command(subcommand)]
    Credentials(credentials::CredentialsCommand),
    /// Issue and verify Mesos executor tokens (JWT).
    #[command(subcommand)]
    Token(credentials::TokenCommand),
}

/// Routes logs to stderr; `RUST_LOG` overrides the level.
pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colours only on a terminal: log files stay greppable.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs a command and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Version => {
            let v = nestguard::abi::version::ABI_VERSION;
            println!(
                "nestguard {} (C ABI {}.{}.{})",
                env!("CARGO_PKG_VERSION"),
                v >> 16,
                (v >> 8) & 0xff,
                v & 0xff
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Smoke { library } => smoke::run(library),
        Command::Agent(flags) => agent::run(flags),
        Command::Executor => executor::run(),
        Command::Demo => demo::run(),
        Command::Pod(command) => pod::run(command),
        Command::Acls(command) => acls::run(command),
        Command::Credentials(cmd) => credentials::run_credentials(cmd),
        Command::Token(cmd) => credentials::run_token(cmd),
    }
}
