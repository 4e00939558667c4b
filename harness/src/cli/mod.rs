//! Command-line parsing and dispatch; one file per command family.

mod acls;
mod agent;
mod client;
mod credentials;
mod demo;
mod exec;
mod executor;
mod library;
mod log_format;
pub mod out;
mod pod;
mod process_io;
mod recordio;
mod smoke;
mod wire;

/// The functions that take a client's bytes before anything trusts them,
/// public for the fuzz targets (`fuzz/`) and nothing else: the agent's `Call`
/// negotiation, decoding and validation, the executor API's call
/// validation, and RecordIO framing.
pub mod inputs {
    pub use super::agent::inputs::*;
    pub use super::recordio::{Decoder, RecordIoError, encode as encode_record};
}

/// The agent's handles on the loaded `libnestguard.so` (isolator and
/// launcher modules), public for the whole-path benchmark
/// (`benches/agent_path.rs`), which runs the agent's launch sequence
/// without the agent; nothing else uses them from outside.
pub mod modules {
    pub use super::agent::abi::{Abi, Isolator, Launcher};
}

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
    Demo(demo::DemoArgs),
    /// Print the library, ABI and protocol versions.
    Version,
    /// Run the simulated Mesos agent (loads libnestguard.so from --modules).
    Agent(agent::flags::AgentFlags),
    /// Run nestguard's default executor (inside a pod's executor container).
    Executor,
    /// Run a stand-in for Mesos' command executor (`mesos-executor`): one
    /// command task, in its executor's container.
    CommandExecutor(executor::command::CommandExecutorFlags),
    /// Run a command in a new nested container of a running container
    /// (a debug session, like `mesos task exec`).
    Exec(exec::ExecArgs),
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

/// Routes logs to stderr; `RUST_LOG` overrides the level. The filter can be
/// raised for a while with [`set_logging_level`] (the agent's
/// SET_LOGGING_LEVEL).
pub fn init_logging(verbose: u8) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let directive = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| tracing_subscriber::EnvFilter::try_new(v).is_ok())
        .unwrap_or_else(|| default.to_owned());
    let filter = tracing_subscriber::EnvFilter::new(&directive);
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    // Colours only on a terminal: log files stay greppable.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                // Tenant text in a field never breaks a line or reaches
                // the terminal raw (issue 25).
                .fmt_fields(log_format::EscapedFields)
                .with_ansi(ansi)
                .with_writer(std::io::stderr)
                // Its report of a failed write is an `eprintln!`, which
                // panics when stderr is a closed pipe (`2>&1 | head`).
                .log_internal_errors(false),
        )
        .try_init();
    if installed.is_ok() {
        let _ = LOG_FILTER.set(LogFilter { handle, directive });
    }
}

struct LogFilter {
    handle: tracing_subscriber::reload::Handle<
        tracing_subscriber::EnvFilter,
        tracing_subscriber::Registry,
    >,
    directive: String,
}

static LOG_FILTER: std::sync::OnceLock<LogFilter> = std::sync::OnceLock::new();
static LOG_LEVEL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static LOG_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The verbosity set by [`set_logging_level`] (0: the start-up filter),
/// Mesos' `FLAGS_v`.
pub fn logging_level() -> u32 {
    LOG_LEVEL.load(std::sync::atomic::Ordering::SeqCst)
}

/// Sets glog-style verbosity `level` for `duration` (0: the start-up
/// filter, 1: debug, 2 and more: trace), then returns to the start-up
/// filter unless a later call set another level.
pub fn set_logging_level(level: u32, duration: std::time::Duration) -> Result<(), String> {
    use std::sync::atomic::Ordering;
    let Some(filter) = LOG_FILTER.get() else {
        return Err("logging is not initialized".into());
    };
    // Held across the reload so the timer cannot reset an older level in
    // between.
    let timer = log_timer();
    let mut due = timer.due.lock().unwrap_or_else(|e| e.into_inner());
    let directive = match level {
        0 => filter.directive.clone(),
        1 => "debug".to_owned(),
        _ => "trace".to_owned(),
    };
    filter
        .handle
        .reload(tracing_subscriber::EnvFilter::new(directive))
        .map_err(|e| e.to_string())?;
    LOG_LEVEL.store(level, Ordering::SeqCst);
    let generation = LOG_GENERATION.fetch_add(1, Ordering::SeqCst) + 1;
    // A new call replaces the previous deadline; level 0 needs none.
    *due = (level != 0).then(|| {
        (
            std::time::Instant::now() + duration.min(MAX_LOGGING_DURATION),
            generation,
        )
    });
    timer.changed.notify_all();
    Ok(())
}

/// The longest a SET_LOGGING_LEVEL call keeps its level: Mesos sets no cap,
/// but a caller-chosen duration of years would pin the level for the life
/// of the agent (and `Instant + Duration` panics on overflow). One day.
pub const MAX_LOGGING_DURATION: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The one deadline of [`set_logging_level`]: when it passes and no later
/// call set another level, the start-up filter comes back. One thread
/// serves every call (a thread per call let a caller pile up sleepers).
struct LogTimer {
    due: std::sync::Mutex<Option<(std::time::Instant, u64)>>,
    changed: std::sync::Condvar,
}

fn log_timer() -> &'static LogTimer {
    static TIMER: std::sync::OnceLock<&'static LogTimer> = std::sync::OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static LogTimer = Box::leak(Box::new(LogTimer {
            due: std::sync::Mutex::new(None),
            changed: std::sync::Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("log-level-timer".into())
            .spawn(move || run_log_timer(timer))
            .map_err(|e| tracing::warn!(error = %e, "no logging level timer"))
            .ok();
        timer
    })
}

fn run_log_timer(timer: &LogTimer) {
    use std::sync::atomic::Ordering;
    let mut due = timer.due.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let Some((deadline, generation)) = *due else {
            due = timer.changed.wait(due).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let now = std::time::Instant::now();
        if now < deadline {
            due = timer
                .changed
                .wait_timeout(due, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        *due = None;
        if LOG_GENERATION.load(Ordering::SeqCst) == generation
            && let Some(filter) = LOG_FILTER.get()
        {
            let _ = filter
                .handle
                .reload(tracing_subscriber::EnvFilter::new(&filter.directive));
            LOG_LEVEL.store(0, Ordering::SeqCst);
        }
    }
}

/// Runs a command and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Version => {
            let v = agent::bindings::NESTGUARD_ABI_VERSION;
            out::outln!(
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
        Command::CommandExecutor(flags) => executor::command::run(flags),
        Command::Demo(args) => demo::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Pod(command) => pod::run(command),
        Command::Acls(command) => acls::run(command),
        Command::Credentials(cmd) => credentials::run_credentials(cmd),
        Command::Token(cmd) => credentials::run_token(cmd),
    }
}
