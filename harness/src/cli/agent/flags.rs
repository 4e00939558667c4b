//! The agent's flags, spelled as the Mesos agent spells them (`--name=value`;
//! booleans also as `--name` and `--name=false`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Require authentication for the v1 executor API (`/api/v1/executor`,
    /// realm `mesos-agent-executor`), as Mesos' flag: off, executors may
    /// call it unauthenticated; on, they must (their token) and
    /// `--jwt_secret_key` is required. Not given, it follows
    /// `--authenticate_http_readwrite` (Mesos defaults to false): that flag
    /// used to cover this route, and an upgrade must not silently open it.
    /// Read it with [`AgentFlags::authenticate_http_executors`].
    #[arg(id = "authenticate_http_executors", long = "authenticate_http_executors", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub authenticate_http_executors_given: Option<bool>,
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
    /// The cgroup root under each hierarchy that holds this agent's
    /// containers (Mesos' `--cgroups_root`; default `nestguard`, not Mesos'
    /// `mesos`). Passed to io_nestguard_Isolator as its `cgroups_root`
    /// parameter. One agent owns a root: a second agent on it refuses to
    /// start, naming the owner.
    #[arg(long)]
    pub cgroups_root: Option<String>,
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
    /// A client must send a request's whole header within this (slow-loris
    /// guard). Mesos-style duration: `10secs`, `500ms`, `2mins`.
    #[arg(long, default_value = "10secs", value_parser = parse_duration)]
    pub http_header_read_timeout: Duration,
    /// A connection with no request in progress is closed after this (or
    /// after `--http_header_read_timeout` if shorter: hyper's header timer
    /// also runs while a kept-alive connection waits for its next request).
    #[arg(long, default_value = "10secs", value_parser = parse_duration)]
    pub http_idle_timeout: Duration,
    /// Once a request is authenticated, its body must arrive within this.
    #[arg(long, default_value = "30secs", value_parser = parse_duration)]
    pub http_body_read_timeout: Duration,
    /// Connections served at once; further clients wait in the listen
    /// backlog until one closes.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_http_connections: u32,
    /// Connections served at once from one peer address (default: three
    /// quarters of `--max_http_connections`, so one client's flood leaves
    /// the rest to others); further connections from it are closed at once.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_http_connections_per_peer: Option<u32>,
    /// Requests one authenticated subject (a principal, or an executor
    /// token's container) may have in progress at once; more get 429. Keep
    /// it well below `--max_http_connections` so that one tenant's WAITs
    /// leave connections for everyone else.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_requests_per_principal: u32,
    /// Bytes of a request body read before authentication (to answer 401 and
    /// keep the connection); a larger body closes the connection.
    #[arg(long, default_value_t = 4096)]
    pub max_unauthenticated_body_bytes: usize,
    /// Largest request body accepted from an authenticated client (413 beyond).
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Write the authorizer's decision audit log here, one JSON record per line.
    #[arg(long)]
    pub audit_log: Option<PathBuf>,
    /// Rotate the audit log when it would exceed this many bytes (PATH → PATH.1, one kept);
    /// at least 64 KiB. One subject's denials take at most a sixteenth of a file; the rest
    /// are counted in summary lines (see acls/README.md, "The decision audit log").
    #[arg(long, default_value_t = 64 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(super::audit_log::MIN_MAX_SIZE..))]
    pub audit_log_max_size: u64,
    /// Log only denied decisions.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub audit_denials_only: bool,
    /// Log one decision in N (1: every one).
    #[arg(long, default_value_t = 1)]
    pub audit_sample: u32,
    /// Serve debug sessions and attach (LAUNCH_NESTED_CONTAINER_SESSION,
    /// ATTACH_CONTAINER_INPUT/OUTPUT, `ContainerInfo.tty_info`), authorized
    /// by the `launch_nested_container_sessions_*` and `attach_containers_*`
    /// ACLs. On by default, as Mesos always serves them (the container gets
    /// its stdio as descriptors from the launcher, never by path);
    /// `--debug_sessions=false` answers them 400.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value = "true")]
    pub debug_sessions: bool,
}

/// Parses a Mesos-style duration (`10secs`, `500ms`, `2mins`, `1hrs`,
/// `1days`, `1weeks`; also `10s`); zero is refused because a zero timeout
/// would close every connection.
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(value.trim())
        .map_err(|e| format!("'{value}' is not a duration like 10secs or 500ms: {e}"))?;
    if duration.is_zero() {
        return Err(format!("'{value}' must be longer than zero"));
    }
    Ok(duration)
}

impl AgentFlags {
    /// The `--audit_*` flags as the audit log takes them.
    pub fn audit_settings(&self) -> super::audit_log::AuditSettings<'_> {
        super::audit_log::AuditSettings {
            path: self.audit_log.as_deref(),
            max_size: self.audit_log_max_size,
            sample: self.audit_sample,
            denials_only: self.audit_denials_only,
        }
    }

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

    /// Whether the executor API is authenticated: `--authenticate_http_executors`
    /// when given, else `--authenticate_http_readwrite` (which covered the
    /// executor API before the flag existed here).
    pub fn authenticate_http_executors(&self) -> bool {
        self.authenticate_http_executors_given
            .unwrap_or(self.authenticate_http_readwrite)
    }

    /// The effective per-peer connection cap.
    pub fn max_http_connections_per_peer(&self) -> u32 {
        self.max_http_connections_per_peer
            .unwrap_or_else(|| (self.max_http_connections - self.max_http_connections / 4).max(1))
    }

    /// Every flag that has a value, by name, as GET_FLAGS and `/flags` list
    /// them (Mesos lists each flag's `stringify`; an unset optional flag is
    /// left out). Durations in Mesos' spelling via humantime.
    pub fn values(&self) -> Vec<(String, String)> {
        fn d(v: Duration) -> String {
            humantime::format_duration(v).to_string()
        }
        fn p(v: &std::path::Path) -> String {
            v.to_string_lossy().into_owned()
        }
        let mut out: Vec<(&str, Option<String>)> = vec![
            ("modules", self.modules.clone()),
            ("authorizer", Some(self.authorizer.clone())),
            ("isolation", Some(self.isolation.clone())),
            ("hooks", Some(self.hooks.clone())),
            ("http_credentials", self.http_credentials.as_deref().map(p)),
            (
                "authenticate_http_readwrite",
                Some(self.authenticate_http_readwrite.to_string()),
            ),
            (
                "authenticate_http_executors",
                Some(self.authenticate_http_executors().to_string()),
            ),
            ("jwt_secret_key", self.jwt_secret_key.as_deref().map(p)),
            (
                "disallow_sharing_agent_pid_namespace",
                Some(self.disallow_sharing_agent_pid_namespace.to_string()),
            ),
            (
                "launcher",
                Some(match self.launcher() {
                    LauncherKind::Linux => "linux".to_owned(),
                    LauncherKind::Posix => "posix".to_owned(),
                }),
            ),
            ("work_dir", Some(p(&self.work_dir))),
            ("runtime_dir", Some(p(&self.runtime_dir()))),
            ("cgroups_root", self.cgroups_root.clone()),
            ("ip", Some(self.ip.to_string())),
            ("port", Some(self.port.to_string())),
            ("library", self.library.as_deref().map(p)),
            (
                "http_header_read_timeout",
                Some(d(self.http_header_read_timeout)),
            ),
            ("http_idle_timeout", Some(d(self.http_idle_timeout))),
            (
                "http_body_read_timeout",
                Some(d(self.http_body_read_timeout)),
            ),
            (
                "max_http_connections",
                Some(self.max_http_connections.to_string()),
            ),
            (
                "max_http_connections_per_peer",
                Some(self.max_http_connections_per_peer().to_string()),
            ),
            (
                "max_requests_per_principal",
                Some(self.max_requests_per_principal.to_string()),
            ),
            (
                "max_unauthenticated_body_bytes",
                Some(self.max_unauthenticated_body_bytes.to_string()),
            ),
            ("max_body_bytes", Some(self.max_body_bytes.to_string())),
            ("audit_log", self.audit_log.as_deref().map(p)),
            (
                "audit_log_max_size",
                Some(self.audit_log_max_size.to_string()),
            ),
            (
                "audit_denials_only",
                Some(self.audit_denials_only.to_string()),
            ),
            ("audit_sample", Some(self.audit_sample.to_string())),
            ("debug_sessions", Some(self.debug_sessions.to_string())),
        ];
        out.sort_by_key(|(name, _)| *name);
        out.into_iter()
            .filter_map(|(name, value)| value.map(|v| (name.to_owned(), v)))
            .collect()
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
    nix::unistd::geteuid().is_root()
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
            "--cgroups_root=tenant/a",
        ])
        .unwrap();
        assert_eq!(w.flags.cgroups_root.as_deref(), Some("tenant/a"));
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
        assert_eq!(w.flags.http_header_read_timeout, Duration::from_secs(10));
        assert_eq!(w.flags.max_http_connections, 256);
        assert_eq!(w.flags.max_requests_per_principal, 64);
        assert_eq!(w.flags.max_http_connections_per_peer(), 192);
        assert!(w.flags.disallow_sharing_agent_pid_namespace);
        let w = Wrapper::try_parse_from([
            "x",
            "--work_dir=/w",
            "--disallow_sharing_agent_pid_namespace=false",
        ])
        .unwrap();
        assert!(!w.flags.disallow_sharing_agent_pid_namespace);
    }

    /// Not given, `--authenticate_http_executors` follows
    /// `--authenticate_http_readwrite`; given, it wins.
    #[test]
    fn executor_authentication_defaults_to_readwrite() {
        let parse = |args: &[&str]| {
            let mut all = vec!["x", "--work_dir=/w"];
            all.extend_from_slice(args);
            Wrapper::try_parse_from(all).unwrap().flags
        };
        assert!(!parse(&[]).authenticate_http_executors());
        assert!(parse(&["--authenticate_http_readwrite"]).authenticate_http_executors());
        assert!(
            !parse(&[
                "--authenticate_http_readwrite",
                "--authenticate_http_executors=false"
            ])
            .authenticate_http_executors()
        );
        assert!(parse(&["--authenticate_http_executors"]).authenticate_http_executors());
        assert!(
            parse(&[
                "--authenticate_http_readwrite=false",
                "--authenticate_http_executors"
            ])
            .authenticate_http_executors()
        );
    }

    #[test]
    fn every_flag_is_listed() {
        use clap::CommandFactory;
        let w = Wrapper::try_parse_from([
            "x",
            "--work_dir=/w",
            "--cgroups_root=r",
            "--modules=m",
            "--http_credentials=/c",
            "--jwt_secret_key=/k",
            "--library=/l",
            "--audit_log=/a",
        ])
        .unwrap();
        let listed: Vec<String> = w.flags.values().into_iter().map(|(k, _)| k).collect();
        let mut declared: Vec<String> = Wrapper::command()
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .filter(|id| id != "help")
            .collect();
        declared.sort();
        assert_eq!(
            listed, declared,
            "a new flag must be added to AgentFlags::values"
        );
        let values = w.flags.values();
        let get = |k: &str| values.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("http_header_read_timeout"), Some("10s"));
        assert_eq!(get("runtime_dir"), Some("/w/run"));
    }

    #[test]
    fn mesos_durations() {
        for (text, want) in [
            ("10secs", Duration::from_secs(10)),
            ("500ms", Duration::from_millis(500)),
            ("2mins", Duration::from_secs(120)),
            ("1hrs", Duration::from_secs(3600)),
            ("1days", Duration::from_secs(86400)),
            ("1weeks", Duration::from_secs(7 * 86400)),
            ("10ns", Duration::from_nanos(10)),
            ("3us", Duration::from_micros(3)),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        for bad in ["", "10", "ten secs", "0secs", "-1secs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let w = Wrapper::try_parse_from([
            "x",
            "--work_dir=/w",
            "--http_header_read_timeout=2secs",
            "--http_idle_timeout=500ms",
            "--max_http_connections=3",
        ])
        .unwrap();
        assert_eq!(w.flags.http_header_read_timeout, Duration::from_secs(2));
        assert_eq!(w.flags.http_idle_timeout, Duration::from_millis(500));
        assert_eq!(w.flags.max_http_connections, 3);
        assert_eq!(w.flags.max_http_connections_per_peer(), 3);
        for zero in [
            "--max_http_connections_per_peer=0",
            "--max_requests_per_principal=0",
        ] {
            assert!(Wrapper::try_parse_from(["x", "--work_dir=/w", zero]).is_err());
        }
        assert!(
            Wrapper::try_parse_from(["x", "--work_dir=/w", "--max_http_connections=0"]).is_err()
        );
    }
}
