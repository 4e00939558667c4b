//! Module parameters (Mesos' `mesos.Parameters`, key → value) of the
//! isolators, and building the [`Composite`] from them. Unknown keys,
//! repeated keys and malformed values are refused with the key named.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `isolation` | `cgroups,namespaces,filesystem/linux,volume/sandbox_path,[environment/credentials,]hardening,seccomp,disk/du` | isolators, in order; a list without `hardening` or `seccomp` is logged as a warning at load |
//! | `user_namespace_range` | none | with `namespaces/user` in `isolation` (opt-in, and then required): the pool of host ids, `<start>-<end>/<size>`, one range of `size` per pod (see [`super::user_namespace`]) |
//! | `cgroups_mount_root` | `/sys/fs/cgroup` | where cgroup file systems are mounted |
//! | `cgroups_root` | `nestguard` | our directory in each hierarchy |
//! | `cgroups_destroy_timeout_secs` | `60` | how long killing may take |
//! | `disk_watch_interval_secs` | none; `15` with `launcher=mesos` | `disk/du`: sample sandboxes in the background this often and report the last sample (Mesos' `--container_disk_watch_interval`); none: every `usage` walks the sandbox |
//! | `cgroups_enable_cfs` | `false` | the CPU request is also a hard quota |
//! | `cgroups_pids_max` | none | `pids.max` of every container with its own cgroup |
//! | `cgroups_owner` | `process <pid>` | who claims `cgroups_root` (the agent passes its ID and work dir); recorded in the root's lock file and named when another agent is refused (see `cgroups::owner`) |
//! | `cgroups_skip_freezer` | `false`; `true` with `launcher=mesos` | v1: no freezer cgroups of ours; `isolate` leaves the freezer alone (the default under Mesos' launcher: its LinuxLauncher tracks and destroys processes through its own freezer cgroup) |
//! | `disallow_sharing_agent_pid_namespace` | `true` | as Mesos' flag (whose default is `false`: we refuse by default) |
//! | `hardening_no_new_privileges` | `true` | set `no_new_privileges` |
//! | `hardening_capabilities` | Docker's default set | what every container gets: comma list of `CapabilityInfo` names (`CHOWN,KILL`), `*` = untouched (a warning at load) |
//! | `hardening_allowed_capabilities` | `hardening_capabilities` | what a container may ask for (`LinuxInfo.capability_info`, `effective_capabilities`, `bounding_capabilities`): a superset of `hardening_capabilities`, e.g. `SYS_PTRACE` for debuggers |
//! | `hardening_masked_paths` | Mesos' list | comma list of absolute paths, empty = none |
//! | `credentials_jwt_key` | none | executor-token signing key file, a path or `file://` URL (token mode) |
//! | `credentials_http_credentials` | none | `--http_credentials` file, a path or `file://` URL (secret mode: fails closed for nested containers, whose `ContainerConfig` has no `FrameworkInfo.principal`) |
//! | `credentials_allow_open_permissions` | `false` | accept group/other-readable key files |
//! | `max_file_size` | `16777216` | largest key or credentials file read, in bytes (only regular files are read) |
//! | `seccomp_config_dir` | none | directory of Docker-format seccomp profiles (Mesos' `--seccomp_config_dir`) |
//! | `seccomp_profile_name` | Docker's default (built in) | default profile, a file in `seccomp_config_dir` (Mesos' `--seccomp_profile_name`) |
//! | `seccomp_allow_unconfined` | `false` | honour `LinuxInfo.seccomp.unconfined` |
//! | `launcher` | `nestguard` | what runs the containers: `nestguard`, or `mesos` (Mesos 1.11's launch helper; the C++ shim sets it) |
//! | `mesos_launcher` | `posix` on a cgroup v2-only host, else `linux` | with `launcher=mesos`: the agent's `--launcher`. Under `posix` (Mesos 1.11's only launcher on a v2-only host) the isolator hands no namespace to Mesos' posix launcher, which refuses them; the wrapper joins the container's cgroup and makes its namespaces instead (`exec_stage::posix_launcher`) |
//! | `exec_stage_keys` | `/run/nestguard/exec-stage` | with `launcher=mesos`: where the module writes the key that seals its stage commands (root only); the `mesos-containerizer` wrapper reads the keys there and hands the user switch only to sealed commands |
//! | `exec_stage` | `nestguard-exec` beside the library | with `launcher=mesos`: the exec stage that applies capabilities, `no_new_privileges`, seccomp and read-only kernel paths (see `exec_stage`); the module does not load without it |
//!
//! `environment/credentials` is in the default list only when a key or
//! credentials file is given; listing it without either is an error.
//! `seccomp` is in the default list (Mesos has it off unless `linux/seccomp`
//! is listed): an explicit `isolation` without it is the one way to run
//! containers without a filter, and its parameters without it are an error.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Isolator;
use super::cgroups::{CgroupsIsolator, CgroupsOptions};
use super::composite::Composite;
use super::disk::DiskIsolator;
use super::environment::CredentialsIsolator;
use super::error::{IsolatorError, Result};
use super::exec_stage::{ExecStage, default_stage_path};
use super::filesystem::FilesystemIsolator;
use super::hardening::HardeningIsolator;
use super::namespace_policy::NamespacesIsolator;
use super::seccomp::SeccompIsolator;
use super::volume::{SandboxPathIsolator, SandboxRegistry};
use crate::credentials::file::{LoadOptions, load_credentials};
use crate::credentials::injection::Injector;
use crate::credentials::jwt::load_key;
use crate::isolation::cgroups::{Cgroups, CgroupsConfig};
use crate::proto::mesos::Parameters;
use crate::proto::mesos::capability_info::Capability;

/// Every isolator name we know, in the default order.
pub const ISOLATORS: [&str; 8] = [
    "cgroups",
    "namespaces",
    "filesystem/linux",
    "volume/sandbox_path",
    "environment/credentials",
    "hardening",
    "seccomp",
    "disk/du",
];

const KEYS: [&str; 26] = [
    "isolation",
    "cgroups_owner",
    "cgroups_mount_root",
    "cgroups_root",
    "cgroups_destroy_timeout_secs",
    "disk_watch_interval_secs",
    "cgroups_enable_cfs",
    "cgroups_pids_max",
    "cgroups_skip_freezer",
    "disallow_sharing_agent_pid_namespace",
    "hardening_no_new_privileges",
    "hardening_capabilities",
    "hardening_allowed_capabilities",
    "hardening_masked_paths",
    "credentials_jwt_key",
    "credentials_http_credentials",
    "credentials_allow_open_permissions",
    "max_file_size",
    "seccomp_config_dir",
    "seccomp_profile_name",
    "seccomp_allow_unconfined",
    "launcher",
    "mesos_launcher",
    "exec_stage",
    "exec_stage_keys",
    "user_namespace_range",
];

/// Parsed isolator parameters.
#[derive(Debug, Clone)]
pub struct IsolatorParams {
    /// Isolators in order.
    pub isolation: Vec<String>,
    /// The cgroups manager's configuration.
    pub cgroups: CgroupsConfig,
    /// The cgroups isolator's options.
    pub cgroups_options: CgroupsOptions,
    /// Who claims the cgroup root (`cgroups_owner`).
    pub cgroups_owner: Option<String>,
    /// Mesos' `--disallow_sharing_agent_pid_namespace`.
    pub disallow_sharing_agent_pid_namespace: bool,
    /// The hardening isolator.
    pub hardening: HardeningIsolator,
    /// Executor-token signing key.
    pub jwt_key: Option<PathBuf>,
    /// HTTP credentials file.
    pub http_credentials: Option<PathBuf>,
    /// Accept open permissions on the two files above.
    pub allow_open_permissions: bool,
    /// Largest key or credentials file read, in bytes.
    pub max_file_size: u64,
    /// Directory of seccomp profiles.
    pub seccomp_config_dir: Option<PathBuf>,
    /// Default seccomp profile (a file in the directory).
    pub seccomp_profile_name: Option<String>,
    /// Honour `LinuxInfo.seccomp.unconfined`.
    pub seccomp_allow_unconfined: bool,
    /// Mesos' own launch helper runs the containers (`launcher=mesos`).
    pub mesos_launcher: bool,
    /// The agent runs `--launcher=posix` (`mesos_launcher=posix`): the exec
    /// stage's wrapper makes the namespaces and joins the cgroup.
    pub mesos_posix_launcher: bool,
    /// `disk/du`'s sampling interval (`None`: a walk per `usage`).
    pub disk_watch_interval: Option<Duration>,
    /// The exec stage under Mesos' launcher (`None`: beside the library).
    pub exec_stage: Option<PathBuf>,
    /// Where the stage's sealing key is written (the wrapper reads there).
    pub exec_stage_keys: PathBuf,
    /// `namespaces/user`'s pool (see [`super::user_namespace`]).
    pub user_namespaces: Option<crate::isolation::id_map::RangePool>,
}

fn parameter(key: &str, expected: &'static str, found: &str) -> IsolatorError {
    IsolatorError::Parameter {
        key: key.to_owned(),
        expected,
        found: found.to_owned(),
    }
}

fn boolean(key: &str, v: &str) -> Result<bool> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(parameter(key, "'true' or 'false'", v)),
    }
}

fn number(key: &str, v: &str) -> Result<u64> {
    v.parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| parameter(key, "a positive integer", v))
}

fn capability_list(key: &str, v: &str) -> Result<BTreeSet<i32>> {
    let mut set = BTreeSet::new();
    for name in list(v) {
        let cap = Capability::from_str_name(&name)
            .filter(|c| *c != Capability::Unknown)
            .ok_or_else(|| parameter(key, "capability names such as CHOWN,KILL", &name))?;
        set.insert(cap as i32);
    }
    Ok(set)
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// True when the cgroup hierarchy at `mount_root` uses v1 controllers (an
/// undetectable one counts as not v1: nothing to skip there).
fn uses_v1(mount_root: &Path) -> bool {
    crate::isolation::cgroups::detect_with_root(mount_root).is_ok_and(|h| h.uses_v1())
}

/// The pairs as a map, refusing unknown keys and repeated ones before any
/// value is read.
fn known_keys_once<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<HashMap<&'a str, &'a str>> {
    let mut map: HashMap<&str, &str> = HashMap::new();
    for (k, v) in pairs {
        if !KEYS.contains(&k) {
            return Err(parameter(
                k,
                "a known key (see the isolator parameter table)",
                k,
            ));
        }
        if map.insert(k, v).is_some() {
            return Err(parameter(k, "the key once", "it repeated"));
        }
    }
    Ok(map)
}

/// The `cgroups_mount_root`, `cgroups_root` and
/// `cgroups_destroy_timeout_secs` group.
fn cgroups_config(map: &HashMap<&str, &str>) -> Result<CgroupsConfig> {
    let mut cgroups = CgroupsConfig::default();
    if let Some(v) = map.get("cgroups_mount_root") {
        cgroups.mount_root = PathBuf::from(v);
        if !cgroups.mount_root.is_absolute() {
            return Err(parameter("cgroups_mount_root", "an absolute path", v));
        }
    }
    if let Some(v) = map.get("cgroups_root") {
        cgroups.cgroups_root = PathBuf::from(v);
        // Checked here so the module does not load at all (and the
        // agent's --cgroups_root, passed as this parameter, with it).
        if crate::isolation::cgroups::validate_cgroups_root(&cgroups.cgroups_root).is_err() {
            return Err(parameter(
                "cgroups_root",
                "a relative path of plain names (not empty, no '.', '..' or leading '/')",
                v,
            ));
        }
    }
    if let Some(v) = map.get("cgroups_destroy_timeout_secs") {
        cgroups.destroy_timeout = Duration::from_secs(number("cgroups_destroy_timeout_secs", v)?);
    }
    Ok(cgroups)
}

/// Whether the Mesos agent's launcher is its posix one (`mesos_launcher`:
/// `linux` or `posix`), by default on a cgroup v2-only host, where Mesos
/// 1.11's LinuxLauncher (built on the v1 freezer) cannot start.
fn mesos_launcher_is_posix(map: &HashMap<&str, &str>, mount_root: &Path) -> Result<bool> {
    Ok(match map.get("mesos_launcher").copied() {
        None => !uses_v1(mount_root),
        Some("linux") => false,
        Some("posix") => true,
        Some(other) => return Err(parameter("mesos_launcher", "'linux' or 'posix'", other)),
    })
}

/// Whether `launcher` names Mesos' launcher rather than ours.
fn launcher_is_mesos(map: &HashMap<&str, &str>) -> Result<bool> {
    Ok(match map.get("launcher").copied() {
        None | Some("nestguard") => false,
        Some("mesos") => true,
        Some(other) => return Err(parameter("launcher", "'nestguard' or 'mesos'", other)),
    })
}

/// The `cgroups_enable_cfs`, `cgroups_pids_max` and `cgroups_skip_freezer`
/// group, the last defaulting on the launcher and the hierarchy version.
fn cgroups_options(
    map: &HashMap<&str, &str>,
    mesos_launcher: bool,
    mount_root: &Path,
) -> Result<CgroupsOptions> {
    Ok(CgroupsOptions {
        enable_cfs: map
            .get("cgroups_enable_cfs")
            .map_or(Ok(false), |v| boolean("cgroups_enable_cfs", v))?,
        pids_max: map
            .get("cgroups_pids_max")
            .map(|v| number("cgroups_pids_max", v))
            .transpose()?,
        // Under Mesos' launcher on cgroup v1 the freezer is Mesos': its
        // LinuxLauncher finds and destroys a container through its own
        // freezer cgroup, so moving the pids into ours would leave Mesos'
        // empty (and v2 has no separate freezer to skip).
        skip_freezer: map.get("cgroups_skip_freezer").map_or_else(
            || Ok(mesos_launcher && uses_v1(mount_root)),
            |v| boolean("cgroups_skip_freezer", v),
        )?,
    })
}

/// The `hardening_*` group: capabilities, the allowed superset, masked paths.
fn hardening(map: &HashMap<&str, &str>) -> Result<HardeningIsolator> {
    let mut hardening = HardeningIsolator::default();
    if let Some(v) = map.get("hardening_no_new_privileges") {
        hardening.no_new_privileges = boolean("hardening_no_new_privileges", v)?;
    }
    if let Some(v) = map.get("hardening_capabilities") {
        hardening.capabilities = if v.trim() == "*" {
            None
        } else {
            Some(capability_list("hardening_capabilities", v)?)
        };
    }
    hardening.allowed = match map.get("hardening_allowed_capabilities") {
        None => hardening.capabilities.clone(),
        Some(v) if v.trim() == "*" => None,
        Some(v) => {
            let allowed = capability_list("hardening_allowed_capabilities", v)?;
            if let Some(given) = &hardening.capabilities
                && let Some(missing) = given.difference(&allowed).next()
            {
                return Err(parameter(
                    "hardening_allowed_capabilities",
                    "a superset of hardening_capabilities",
                    &format!("{v} (without {})", super::hardening::cap_name(*missing)),
                ));
            }
            Some(allowed)
        }
    };
    if let Some(v) = map.get("hardening_masked_paths") {
        let paths = list(v);
        if let Some(bad) = paths
            .iter()
            .find(|p| !p.starts_with('/') || p.contains("/../"))
        {
            return Err(parameter("hardening_masked_paths", "absolute paths", bad));
        }
        hardening.masked_paths = paths;
    }
    Ok(hardening)
}

/// The `isolation` list, checked against the known isolators; without it,
/// every isolator, the credentials one only when a credentials file is named.
fn isolation_list(map: &HashMap<&str, &str>, with_credentials: bool) -> Result<Vec<String>> {
    Ok(match map.get("isolation") {
        Some(v) => {
            let names = list(v);
            let mut seen = BTreeSet::new();
            for n in &names {
                if !ISOLATORS.contains(&n.as_str()) && n != super::user_namespace::NAME {
                    return Err(parameter(
                        "isolation",
                        "names among cgroups, namespaces, filesystem/linux, volume/sandbox_path, environment/credentials, hardening, seccomp, disk/du, namespaces/user",
                        n,
                    ));
                }
                if !seen.insert(n.clone()) {
                    return Err(parameter("isolation", "each isolator once", n));
                }
            }
            names
        }
        None => ISOLATORS
            .iter()
            .filter(|n| with_credentials || **n != "environment/credentials")
            .map(|n| (*n).to_owned())
            .collect(),
    })
}

/// `seccomp_config_dir`, absolute; and no `seccomp_*` key unless the
/// seccomp isolator is on.
fn seccomp_config_dir(map: &HashMap<&str, &str>, isolation: &[String]) -> Result<Option<PathBuf>> {
    let seccomp_config_dir = map.get("seccomp_config_dir").map(PathBuf::from);
    if let Some(dir) = &seccomp_config_dir
        && !dir.is_absolute()
    {
        return Err(parameter(
            "seccomp_config_dir",
            "an absolute path",
            &dir.display().to_string(),
        ));
    }
    if !isolation.iter().any(|n| n == "seccomp")
        && let Some(key) = [
            "seccomp_config_dir",
            "seccomp_profile_name",
            "seccomp_allow_unconfined",
        ]
        .into_iter()
        .find(|k| map.contains_key(k))
    {
        return Err(parameter(
            key,
            "'seccomp' in the isolation list",
            "it missing",
        ));
    }
    Ok(seccomp_config_dir)
}

impl IsolatorParams {
    /// The one cgroups manager of an isolator set: built here only, then
    /// shared by the `cgroups` isolator and (through
    /// [`Composite::cgroups`]) the launcher, so both act on the same
    /// hierarchy and the same claim on `cgroups_root`. The root is claimed
    /// before anything else: a second agent on it fails here, naming the
    /// first.
    pub fn cgroups_manager(&self) -> Result<Arc<Cgroups>> {
        let mut manager = Cgroups::new(self.cgroups.clone())?;
        if self.cgroups_options.skip_freezer && !manager.is_v2() {
            // Mesos' launcher tracks processes in its own
            // freezer: create no empty ones of ours.
            manager.skip_freezer()?;
        }
        let owner = self
            .cgroups_owner
            .clone()
            .unwrap_or_else(|| format!("process {}", std::process::id()));
        manager.claim(&owner)?;
        Ok(Arc::new(manager))
    }

    /// Parses key/value pairs.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let map = known_keys_once(pairs)?;
        let cgroups = cgroups_config(&map)?;
        let mesos_launcher = launcher_is_mesos(&map)?;
        let mesos_posix_launcher =
            mesos_launcher && mesos_launcher_is_posix(&map, &cgroups.mount_root)?;
        // Under a Mesos agent, as Mesos' own `disk/du`: 15 s by default.
        let disk_watch_interval = match map.get("disk_watch_interval_secs") {
            Some(v) => Some(Duration::from_secs(number("disk_watch_interval_secs", v)?)),
            None => mesos_launcher.then_some(Duration::from_secs(15)),
        };
        let cgroups_options = cgroups_options(&map, mesos_launcher, &cgroups.mount_root)?;
        let cgroups_owner = map.get("cgroups_owner").map(|v| (*v).to_owned());
        let hardening = hardening(&map)?;
        // Paths or `file://` URLs, as the hook's `http_credentials` and
        // Mesos' own `--jwt_secret_key`/`--http_credentials` take them: one
        // manifest value works for every module that names the file.
        let file = |key: &str| {
            map.get(key)
                .map(|v| crate::input::flag_path(v).to_path_buf())
        };
        let jwt_key = file("credentials_jwt_key");
        let http_credentials = file("credentials_http_credentials");
        let with_credentials = jwt_key.is_some() || http_credentials.is_some();
        let isolation = isolation_list(&map, with_credentials)?;
        let seccomp_config_dir = seccomp_config_dir(&map, &isolation)?;
        let user_namespaces = super::user_namespace::pool(&map, &isolation, mesos_launcher)?;
        Ok(Self {
            user_namespaces,
            isolation,
            cgroups,
            cgroups_options,
            cgroups_owner,
            disallow_sharing_agent_pid_namespace: map
                .get("disallow_sharing_agent_pid_namespace")
                .map_or(Ok(true), |v| {
                boolean("disallow_sharing_agent_pid_namespace", v)
            })?,
            hardening,
            jwt_key,
            http_credentials,
            allow_open_permissions: map
                .get("credentials_allow_open_permissions")
                .map_or(Ok(false), |v| {
                    boolean("credentials_allow_open_permissions", v)
                })?,
            max_file_size: map.get("max_file_size").map_or(
                Ok(crate::input::DEFAULT_MAX_FILE_SIZE),
                |v| {
                    crate::input::parse_limit(v)
                        .map_err(|_| parameter("max_file_size", "a positive number of bytes", v))
                },
            )?,
            seccomp_config_dir,
            seccomp_profile_name: map.get("seccomp_profile_name").map(|v| (*v).to_owned()),
            seccomp_allow_unconfined: map
                .get("seccomp_allow_unconfined")
                .map_or(Ok(false), |v| boolean("seccomp_allow_unconfined", v))?,
            mesos_launcher,
            mesos_posix_launcher,
            disk_watch_interval,
            exec_stage: file("exec_stage"),
            exec_stage_keys: file("exec_stage_keys")
                .unwrap_or_else(|| PathBuf::from(crate::isolation::exec_stage::seal::KEY_DIR)),
        })
    }

    /// Parses a `mesos.Parameters` message.
    pub fn from_proto(parameters: &Parameters) -> Result<Self> {
        Self::parse(
            parameters
                .parameter
                .iter()
                .map(|p| (p.key.as_str(), p.value.as_str())),
        )
    }

    /// Every defence left off by a parameter, as a warning at load: opting
    /// out is allowed, never silent.
    pub fn warn_about_opt_outs(&self) {
        let listed = |name: &str| self.isolation.iter().any(|n| n == name);
        let mut off: Vec<&'static str> = Vec::new();
        if !listed("seccomp") {
            off.push("seccomp (not in 'isolation'): containers run without a syscall filter");
        }
        if !listed("hardening") {
            off.push(
                "hardening (not in 'isolation'): containers keep every capability, \
                 no no_new_privileges, no masked paths",
            );
        } else {
            if self.hardening.capabilities.is_none() {
                off.push("hardening_capabilities=*: containers keep every capability");
            }
            if !self.hardening.no_new_privileges {
                off.push("hardening_no_new_privileges=false");
            }
            if self.hardening.masked_paths.is_empty() {
                off.push("hardening_masked_paths is empty: /proc/kcore and the rest are visible");
            }
        }
        if self.seccomp_allow_unconfined {
            off.push("seccomp_allow_unconfined=true: a container may ask for no filter");
        }
        for what in off {
            tracing::warn!(defence = what, "isolation weaker than nestguard's default");
        }
    }

    fn injector(&self) -> Result<Injector> {
        let options = LoadOptions {
            allow_open_permissions: self.allow_open_permissions,
            max_file_size: self.max_file_size,
        };
        let key = match &self.jwt_key {
            Some(p) => Some(load_key(p, &options).map_err(|e| IsolatorError::Parameter {
                key: "credentials_jwt_key".into(),
                expected: "a readable signing key file",
                found: e.to_string(),
            })?),
            None => None,
        };
        let store = match &self.http_credentials {
            Some(p) => Some(Arc::new(load_credentials(p, &options).map_err(|e| {
                IsolatorError::Parameter {
                    key: "credentials_http_credentials".into(),
                    expected: "a valid credentials file",
                    found: e.to_string(),
                }
            })?)),
            None => None,
        };
        Ok(Injector::from_config(key, store)?)
    }
}

impl Composite {
    /// Builds the isolators named in `params.isolation`, in that order. The
    /// cgroups manager (if `cgroups` is listed) is available from
    /// [`Composite::cgroups`] for the launcher.
    pub fn from_parameters(params: &IsolatorParams) -> Result<Self> {
        let sandboxes = Arc::new(SandboxRegistry::default());
        let mut isolators: Vec<Arc<dyn Isolator>> = Vec::new();
        let mut cgroups = None;
        params.warn_about_opt_outs();
        // Under Mesos' launcher the stage applies what Mesos 1.11's helper
        // aborts on (capabilities, seccomp where cap_last_cap > 37).
        let exec_stage = if params.mesos_launcher {
            Some(
                ExecStage::new(
                    params.exec_stage.clone().unwrap_or_else(default_stage_path),
                    &params.exec_stage_keys,
                    &params.cgroups.cgroups_root.display().to_string(),
                )?
                .under_posix_launcher(params.mesos_posix_launcher)?,
            )
        } else {
            None
        };
        for name in &params.isolation {
            let isolator: Arc<dyn Isolator> = match name.as_str() {
                "cgroups" => {
                    let manager = params.cgroups_manager()?;
                    cgroups = Some(manager.clone());
                    Arc::new(CgroupsIsolator::new(
                        manager,
                        params.cgroups_options.clone(),
                    )?)
                }
                "namespaces" => Arc::new(NamespacesIsolator {
                    disallow_sharing_agent_pid_namespace: params
                        .disallow_sharing_agent_pid_namespace,
                }),
                "filesystem/linux" => Arc::new(
                    FilesystemIsolator::new(sandboxes.clone()).with_images(params.mesos_launcher),
                ),
                "volume/sandbox_path" => Arc::new(SandboxPathIsolator::new(sandboxes.clone())),
                "environment/credentials" => Arc::new(CredentialsIsolator::new(params.injector()?)),
                "hardening" => Arc::new(params.hardening.clone()),
                "seccomp" => Arc::new(SeccompIsolator::new(
                    params.seccomp_config_dir.clone(),
                    params.seccomp_profile_name.clone(),
                    params.seccomp_allow_unconfined,
                )?),
                "disk/du" => Arc::new(DiskIsolator::new(
                    sandboxes.clone(),
                    params.disk_watch_interval,
                )),
                // The launcher's (see `user_namespace`): no isolator object.
                super::user_namespace::NAME => continue,
                other => {
                    return Err(parameter("isolation", "a known isolator", other));
                }
            };
            isolators.push(isolator);
        }
        let mut composite = Composite::with_cgroups(isolators, cgroups)
            .with_user_namespaces(params.user_namespaces);
        if let Some(stage) = exec_stage {
            composite = composite.with_exec_stage(stage);
        }
        tracing::info!(isolators = ?composite.names(), "isolators configured");
        Ok(composite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_name_the_key() {
        let e = IsolatorParams::parse([("cgroups_pids_max", "lots")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "isolator parameter 'cgroups_pids_max': expected a positive integer, got 'lots'"
        );
        let e = IsolatorParams::parse([("isolation", "cgroups,posix/cpu")]).unwrap_err();
        assert!(e.to_string().contains("'posix/cpu'"), "{e}");
        let e = IsolatorParams::parse([("nope", "1")]).unwrap_err();
        assert!(e.to_string().contains("'nope'"), "{e}");
        let e = IsolatorParams::parse([("hardening_capabilities", "CHOWN,FLY")]).unwrap_err();
        assert!(e.to_string().contains("'FLY'"), "{e}");
        for bad in ["", ".", "./ng", "ng/../x", "/ng", "//ng", ".."] {
            let e = IsolatorParams::parse([("cgroups_root", bad)]).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("isolator parameter 'cgroups_root': expected a relative path"),
                "{bad}: {e}"
            );
        }
        IsolatorParams::parse([("cgroups_root", "tenant/a/")]).unwrap();
    }

    #[test]
    fn mesos_launcher_takes_seccomp_through_the_exec_stage() {
        let e = IsolatorParams::parse([("launcher", "docker")]).unwrap_err();
        assert!(e.to_string().contains("'docker'"), "{e}");
        // Any executable stands in for the stage at load.
        let keys = std::env::temp_dir().join(format!("ng-params-keys-{}", std::process::id()));
        let keys_arg = keys.display().to_string();
        let p = IsolatorParams::parse([
            ("isolation", "hardening,seccomp"),
            ("launcher", "mesos"),
            ("exec_stage", "/bin/true"),
            ("exec_stage_keys", &keys_arg),
        ])
        .unwrap();
        assert_eq!(
            Composite::from_parameters(&p).unwrap().names(),
            ["hardening", "seccomp"]
        );
        let p = IsolatorParams::parse([
            ("isolation", "hardening"),
            ("launcher", "mesos"),
            ("exec_stage", "/etc/passwd"),
        ])
        .unwrap();
        let e = Composite::from_parameters(&p).unwrap_err().to_string();
        assert!(e.contains("executable regular file"), "{e}");
        assert!(keys.join("nestguard.key").exists());
        std::fs::remove_dir_all(&keys).unwrap();
        let e = IsolatorParams::parse([
            ("isolation", "hardening"),
            ("seccomp_allow_unconfined", "true"),
        ])
        .unwrap_err();
        assert!(
            e.to_string().contains("'seccomp' in the isolation list"),
            "{e}"
        );
        let e = IsolatorParams::parse([("hardening_allowed_capabilities", "KILL")]).unwrap_err();
        assert!(
            e.to_string().contains("superset of hardening_capabilities"),
            "{e}"
        );
        let p = IsolatorParams::parse([(
            "hardening_allowed_capabilities",
            "CHOWN,DAC_OVERRIDE,FSETID,FOWNER,MKNOD,NET_RAW,SETGID,SETUID,SETFCAP,SETPCAP,\
             NET_BIND_SERVICE,SYS_CHROOT,KILL,AUDIT_WRITE,SYS_PTRACE",
        )])
        .unwrap();
        assert_eq!(p.hardening.allowed.as_ref().map(|a| a.len()), Some(15));
    }

    #[test]
    fn mesos_launcher_leaves_the_freezer_to_mesos_by_default() {
        assert!(
            !IsolatorParams::parse([])
                .unwrap()
                .cgroups_options
                .skip_freezer
        );
        let p = IsolatorParams::parse([("launcher", "mesos")]).unwrap();
        assert_eq!(
            p.cgroups_options.skip_freezer,
            uses_v1(Path::new("/sys/fs/cgroup"))
        );
        let p = IsolatorParams::parse([("launcher", "mesos"), ("cgroups_skip_freezer", "false")])
            .unwrap();
        assert!(!p.cgroups_options.skip_freezer);
    }

    #[test]
    fn disk_usage_is_sampled_on_an_interval_under_mesos_launcher() {
        assert_eq!(IsolatorParams::parse([]).unwrap().disk_watch_interval, None);
        let p = IsolatorParams::parse([("launcher", "mesos")]).unwrap();
        assert_eq!(p.disk_watch_interval, Some(Duration::from_secs(15)));
        let p = IsolatorParams::parse([("disk_watch_interval_secs", "3")]).unwrap();
        assert_eq!(p.disk_watch_interval, Some(Duration::from_secs(3)));
        let e = IsolatorParams::parse([("disk_watch_interval_secs", "0")]).unwrap_err();
        assert!(e.to_string().contains("'disk_watch_interval_secs'"), "{e}");
    }

    #[test]
    fn credential_files_take_paths_and_file_urls() {
        let p = IsolatorParams::parse([
            ("credentials_jwt_key", "file:///etc/mesos/jwt.key"),
            ("credentials_http_credentials", "/etc/mesos/creds.json"),
        ])
        .unwrap();
        assert_eq!(p.jwt_key.as_deref(), Some(Path::new("/etc/mesos/jwt.key")));
        assert_eq!(
            p.http_credentials.as_deref(),
            Some(Path::new("/etc/mesos/creds.json"))
        );
        let p =
            IsolatorParams::parse([("credentials_http_credentials", "file:///c.json")]).unwrap();
        assert_eq!(p.http_credentials.as_deref(), Some(Path::new("/c.json")));
    }

    #[test]
    fn defaults() {
        let p = IsolatorParams::parse([]).unwrap();
        assert_eq!(
            p.isolation,
            [
                "cgroups",
                "namespaces",
                "filesystem/linux",
                "volume/sandbox_path",
                "hardening",
                "seccomp",
                "disk/du"
            ]
        );
        assert!(p.hardening.no_new_privileges);
        let p = IsolatorParams::parse([
            ("hardening_capabilities", "*"),
            ("hardening_masked_paths", ""),
        ])
        .unwrap();
        assert!(p.hardening.capabilities.is_none());
        assert!(p.hardening.masked_paths.is_empty());
    }
}
