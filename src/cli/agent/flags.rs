//! The agent's flags, spelled as the Mesos agent spells them (`--name=value`;
//! booleans also as `--name` and `--name=false`).

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{ArgAction, Args};

/// Which launcher runs containers (`--launcher`), as in Mesos.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LauncherKind {
    /// Namespaces, nested cgroups, the supervising launch helper (needs root).
    Linux,
    /// Plain processes in their own session; no isolation (any user).
    Posix,
}

/// `nestguard agent` flags.
#[derive(Debug, Clone, Args)]
#[command(rename_all = "snake_case")]
pub struct AgentFlags {
    /// The modules manifest: inline JSON, a path, or a file:// URL (Mesos' `--modules`).
    #[arg(long)]
    pub modules: Option<String>,
    /// Authorizer module name; `local` (the default) with no module means every call is allowed, as Mesos.
    #[arg(long, default_value = "local")]
    pub authorizer: String,
    /// Comma-separated isolators; module names are created from the manifest.
    #[arg(long, default_value = "")]
    pub isolation: String,
    /// Comma-separated hook module names.
    #[arg(long, default_value = "")]
    pub hooks: String,
    /// Path of the HTTP credentials file (Mesos' credentials JSON).
    #[arg(long)]
    pub http_credentials: Option<PathBuf>,
    /// Require authentication for the read-write agent API.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub authenticate_http_readwrite: bool,
    /// File whose whole content is the HS256 key for executor tokens.
    #[arg(long)]
    pub jwt_secret_key: Option<PathBuf>,
    /// Refuse `LinuxInfo.share_pid_namespace` for top-level containers: such
    /// a container would see every process of the host. Mesos' flag
    /// defaults to `false`; ours to `true` (`=false` allows sharing).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value = "true")]
    pub disallow_sharing_agent_pid_namespace: bool,
    /// `linux` (default when root) or `posix`.
    #[arg(long, value_enum)]
    pub launcher: Option<LauncherKind>,
    /// Where sandboxes and the agent's checkpoints live.
    #[arg(long)]
    pub work_dir: PathBuf,
    /// Where container runtime checkpoints live (default `<work_dir>/run`).
    #[arg(long)]
    pub runtime_dir: Option<PathBuf>,
    /// Address to serve the API on; loopback only.
    #[arg(long, default_value = "127.0.0.1")]
    pub ip: IpAddr,
    /// Port to serve the API on (0 picks a free port; the chosen one is printed).
    #[arg(long, default_value_t = 5051)]
    pub port: u16,
    /// Path of libnestguard.so for modules that name the library by `name`
    /// (default: next to this executable).
    #[arg(long)]
    pub library: Option<PathBuf>,
}

impl AgentFlags {
    /// Comma list → names, empty entries dropped.
    pub fn list(value: &str) -> Vec<String> {
        value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The effective runtime directory.
    pub fn runtime_dir(&self) -> PathBuf {
        self.runtime_dir
            .clone()
            .unwrap_or_else(|| self.work_dir.join("run"))
    }

    /// The effective launcher: the flag, else `linux` as root and `posix` otherwise.
    pub fn launcher(&self) -> LauncherKind {
        self.launcher.unwrap_or(if nix_is_root() {
            LauncherKind::Linux
        } else {
            LauncherKind::Posix
        })
    }
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        flags: AgentFlags,
    }

    #[test]
    fn mesos_spelling() {
        let w = Wrapper::try_parse_from([
            "x",
            "--work_dir=/tmp/w",
            "--authenticate_http_readwrite",
            "--isolation=filesystem/linux,io_nestguard_Isolator",
            "--launcher=posix",
            "--port=0",
        ])
        .unwrap();
        assert!(w.flags.authenticate_http_readwrite);
        assert_eq!(
            AgentFlags::list(&w.flags.isolation),
            ["filesystem/linux", "io_nestguard_Isolator"]
        );
        assert_eq!(w.flags.launcher(), LauncherKind::Posix);
        let w =
            Wrapper::try_parse_from(["x", "--work_dir=/w", "--authenticate_http_readwrite=false"])
                .unwrap();
        assert!(!w.flags.authenticate_http_readwrite);
        assert!(w.flags.disallow_sharing_agent_pid_namespace);
        let w = Wrapper::try_parse_from([
            "x",
            "--work_dir=/w",
            "--disallow_sharing_agent_pid_namespace=false",
        ])
        .unwrap();
        assert!(!w.flags.disallow_sharing_agent_pid_namespace);
    }
}
