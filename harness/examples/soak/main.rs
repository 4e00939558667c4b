//! The soak and crash campaign of issue 17 (item 3) and the memory figures
//! of item 5, driving a real `nestguard agent` over loopback HTTP. Run it
//! through `scripts/soak.sh`, which builds it, gives it its own work
//! directory, cgroup root and port, and cleans up after it.
//!
//! * `crash`: N rounds of a launch burst (standalone containers and pods,
//!   with containers nested two and three levels below them) with the agent
//!   killed by SIGKILL at a random moment, restarted on the same work
//!   directory, then every launch checked (acknowledged ones recovered with
//!   the right status, unanswered ones recovered, reported failed with a
//!   reason, or never started), orphans looked for, everything destroyed,
//!   and the host checked for leaked processes, cgroups, mounts, fds,
//!   zombies and checkpoint files.
//! * `sequential`: launch → wait → remove of `/bin/true` containers one
//!   after another, with the agent's RSS and fd count at start and end.
//! * `memory`: N idle containers; the agent's RSS per 1,000 containers and
//!   the memory of one container's helper processes (helper, supervisor).
//!
//! Deterministic given `--seed`: the plan of every round (kinds, depths,
//! commands, exit codes, start offsets and the moment of the kill) comes
//! from one seeded generator. What the kill interrupts still depends on
//! timing, so outcomes are classified, not replayed.
//!
//! The driver makes itself a child subreaper: processes the killed agent
//! leaves (its spare launch helper, helpers whose container is destroyed)
//! are reparented to it and reaped, as init would on a host (this machine's
//! pid 1 reaps nothing). Any zombie left below it is the project's.

#![allow(
    clippy::disallowed_macros,
    reason = "a measuring program: its report is what it prints"
)]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

/// The ACLs: the `ops` principal may do everything the campaign does.
const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "manage_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
}"#;
const OPS: (&str, &str) = ("ops", "soak-ops-secret");
/// A long-running command: running is its right status after a restart.
const LONG: &str = "sleep 600";
/// The cgroup separator of Mesos' layout (`<root>/<id>/mesos/<child>`).
const SEPARATOR: &str = "mesos";

#[derive(Debug, Parser)]
#[command(name = "soak")]
struct Cli {
    /// A directory of the driver's own (created; the agent's work dir and
    /// configuration go below it).
    #[arg(long)]
    work: PathBuf,
    /// The directory holding `nestguard`, `nestguard-launch` and
    /// `libnestguard.so`.
    #[arg(long)]
    bin: PathBuf,
    /// The agent's loopback port, the same on every restart (0: one that
    /// is free when the driver starts).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The cgroup root of the driver's agent (nobody else's).
    #[arg(long)]
    cgroups_root: String,
    /// Stop starting rounds or launches after this many seconds.
    #[arg(long, default_value_t = 540)]
    deadline_secs: u64,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Launch bursts with the agent SIGKILLed at a random moment.
    Crash {
        #[arg(long, default_value_t = 10)]
        rounds: u32,
        #[arg(long, default_value_t = 17)]
        seed: u64,
        /// Launch trees per round, launched concurrently.
        #[arg(long, default_value_t = 6)]
        units: usize,
        /// The kill comes at a random moment within this many ms of the
        /// burst's start; units start within the same window.
        #[arg(long, default_value_t = 600)]
        window_ms: u64,
    },
    /// Sequential launch → wait → remove, with RSS and fds at start and end.
    Sequential {
        #[arg(long, default_value_t = 10_000)]
        count: u32,
    },
    /// Idle containers: the agent's RSS per 1,000, one container's helpers.
    Memory {
        #[arg(long, default_value_t = 1_000)]
        containers: u32,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        eprintln!("soak: cannot become a child subreaper: {e}");
        return ExitCode::from(2);
    }
    let setup = match Setup::write(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let deadline = Instant::now() + Duration::from_secs(cli.deadline_secs);
    let ok = match cli.mode {
        Mode::Crash {
            rounds,
            seed,
            units,
            window_ms,
        } => crash(&setup, rounds, seed, units, window_ms, deadline),
        Mode::Sequential { count } => sequential(&setup, count, deadline),
        Mode::Memory { containers } => memory(&setup, containers, deadline),
    };
    match ok {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::from(2)
        }
    }
}

type Result<T> = std::result::Result<T, String>;

mod agent;
mod crash;
mod host;
mod http;
mod memory;
mod sequential;

use agent::*;
use crash::*;
use host::*;
use http::*;
use memory::*;
use sequential::*;
