//! Nested cgroups for containers: creation in Mesos' layout, limits, pids,
//! statistics, OOM watch, killing a container subtree, removal and
//! recovery — on cgroup v1 (legacy or hybrid) and cgroup v2.
//!
//! # Layout
//!
//! A container's cgroup is `<cgroups_root>/<root>/mesos/<child>/mesos/<grandchild>`
//! below each hierarchy's mount point, as Mesos' cgroups isolators and
//! LinuxLauncher lay them out (`cgroups_root` defaults to `nestguard`, not
//! Mesos' `mesos`, so we never collide with a real agent on the same host).
//!
//! * **v1**: one directory per controller we use — `freezer` (always: it is
//!   how a container's processes are found and killed), and `cpu`,
//!   `cpuacct`, `memory`, `pids` unless the container shares its parent's
//!   cgroups (`LinuxInfo.share_cgroups`). Its processes then sit in the
//!   nearest ancestor's directory in those controllers. Only the freezer is
//!   required; a missing other controller disables its limits (an update
//!   that needs it fails naming it) and its statistics.
//! * **v2**: the container directory holds limits and children only; its
//!   processes live in `<container>/leaf` (the no-internal-process rule).
//!   Controllers are enabled in `cgroup.subtree_control` from the mount root
//!   down to the container, so nested containers can carry their own limits.
//!   A sharing container still gets its own directory (so it can be killed
//!   alone) but no limits: it stays inside its parent's.
//!
//! # v2 next to upstream Mesos' cgroups2 isolator
//!
//! Mesos 1.11 has no v2 support; its unreleased master branch has a
//! `cgroups2` isolator. On a cgroup v2-only host (the VM of
//! `scripts/vm.sh`) nestguard follows it where it has a design:
//! processes in a `leaf` child of each container's cgroup; nested
//! containers always get a cgroup, `share_cgroups` deciding whether limits
//! apply; `memory.low` from the memory request and `memory.max` from the
//! limit (at least 32 MB); `cpu.weight` of 100 per CPU (at least 1) and
//! `cpu.max` with a 100 ms period for a CPU limit (or the request under
//! `cgroups_enable_cfs`); `pids.max`; `cgroup.kill` to destroy (freeze,
//! SIGKILL, thaw before 5.14); OOM from the `oom` counter of the
//! container's `memory.events`. Where it differs, and why:
//!
//! * `memory.swap.max` is 0 with a memory limit (upstream leaves swap
//!   alone): a limit that swap can stretch is no limit, and v1's
//!   `memory.memsw.limit_in_bytes` forbade it too.
//! * OOM is read from `memory.events.local`, not the hierarchical
//!   `memory.events`: an OOM in a nested container with a limit of its
//!   own is that container's, not its parent's (upstream blames both).
//! * A sharing container's `usage` has no statistics of its own on v2
//!   (as upstream; on v1 it reports the cgroup it shares).
//! * No `io`, `cpuset`, `hugetlb`, `devices` or `perf_event` controllers
//!   (Mesos 1.11's v1 isolators we replace had no `io` either; the others
//!   are opt-in isolators upstream, not part of the pod design).
//! * Under Mesos' posix launcher (the only one of Mesos 1.11 that starts
//!   on a v2-only host) the container joins its `leaf` from the
//!   `mesos-containerizer` wrapper, before anything forks, not from
//!   `isolate` after the fork (see `exec_stage::posix_launcher`).
//!
//! # Why hand-rolled
//!
//! `cgroups-rs` and youki's `libcgroups` were checked. Both find
//! hierarchies through `/proc/self/mountinfo` (no injectable root for
//! tests), create a v1 cgroup in *every* mounted controller (cpuset, devices,
//! blkio…) rather than the few we use, know neither Mesos' `mesos/`
//! separator nor the v2 `leaf`, and lack an OOM eventfd watch that yields a
//! limitation; youki also pulls in oci-spec and takes OCI resources as input.
//! What we need is small: writes to control files, plus four syscalls
//! (statfs, eventfd, inotify, poll) that `rustix` wraps safely.
//!
//! # How the launcher and the isolator use it
//!
//! * isolator `prepare`: [`Cgroups::create`] with the container's limits and
//!   `share_cgroups` (parents before children).
//! * launcher, before the command runs: the helper writes `0` into each of
//!   [`Cgroups::procs_files`] before it forks anything.
//! * isolator `watch`: [`Cgroups::watch_oom`], poll its fd, then
//!   [`OomWatcher::check`]; `update`: [`Cgroups::update`]; `usage`:
//!   [`Cgroups::usage`].
//! * launcher `destroy`: [`ContainerProcesses::kill_all`] (children's
//!   processes included), then isolator `cleanup`:
//!   [`ContainerProcesses::destroy`] (idempotent).
//! * agent restart: [`Cgroups::scan`] lists containers with cgroups, and
//!   [`Cgroups::recover`] kills and removes those the agent does not know.
//!
//! # Concurrency
//!
//! [`Cgroups`] holds no mutable state: everything is derived from the file
//! system, so it is `Send + Sync` and survives an agent restart unchanged.

mod detect;
mod error;
mod fsops;
mod kill;
mod layout;
pub mod limits;
mod oom;
pub mod owner;
mod stats;
mod v1;
mod v2;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use detect::{DEFAULT_MOUNT_ROOT, Hierarchy, detect, detect_with_root};
pub use error::{CgroupError, Result};
pub(crate) use layout::validate_cgroups_root;
pub use layout::{LEAF, SEPARATOR, container_path, parse_relative};
pub use limits::Limits;
pub use oom::{OomWatcher, format_bytes};
pub(crate) use stats::now_secs;

use crate::container_id::to_dotted;
use crate::proto::mesos::{ContainerId, ResourceStatistics};

/// The default `cgroups_root`: ours, not Mesos' `mesos`.
pub const DEFAULT_CGROUPS_ROOT: &str = "nestguard";

/// How the cgroups of all containers are placed and torn down.
#[derive(Debug, Clone)]
pub struct CgroupsConfig {
    /// Where cgroup file systems are mounted (normally `/sys/fs/cgroup`).
    pub mount_root: PathBuf,
    /// The directory under each hierarchy that holds all our containers
    /// (relative, e.g. `nestguard`).
    pub cgroups_root: PathBuf,
    /// How long killing and removal may take (Mesos'
    /// `--cgroups_destroy_timeout`, default 1 minute).
    pub destroy_timeout: Duration,
}

impl Default for CgroupsConfig {
    fn default() -> Self {
        Self {
            mount_root: PathBuf::from(DEFAULT_MOUNT_ROOT),
            cgroups_root: PathBuf::from(DEFAULT_CGROUPS_ROOT),
            destroy_timeout: Duration::from_secs(60),
        }
    }
}

/// Options of [`Cgroups::create`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CreateOptions {
    /// Keep a nested container in its parent's resource cgroups (Mesos'
    /// `LinuxInfo.share_cgroups`; note the proto's default is `true`, the
    /// isolator maps it). Ignored for top-level containers.
    pub share_cgroups: bool,
    /// Limits to apply at creation (not allowed with `share_cgroups`).
    pub limits: Limits,
}

/// A cgroup v1 controller we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Controller {
    /// `freezer`: finding and killing all processes.
    Freezer,
    /// `cpu`: shares and CFS quota.
    Cpu,
    /// `cpuacct`: CPU time accounting.
    Cpuacct,
    /// `memory`: limit, usage and OOM.
    Memory,
    /// `pids`: task count limit.
    Pids,
}

impl Controller {
    /// Every controller, freezer first (it must exist before the others are
    /// joined, and is removed last).
    pub const ALL: [Controller; 5] = [
        Controller::Freezer,
        Controller::Cpu,
        Controller::Cpuacct,
        Controller::Memory,
        Controller::Pids,
    ];

    /// The controller's name as mounted.
    pub fn name(self) -> &'static str {
        match self {
            Self::Freezer => "freezer",
            Self::Cpu => "cpu",
            Self::Cpuacct => "cpuacct",
            Self::Memory => "memory",
            Self::Pids => "pids",
        }
    }
}

/// The hierarchy's version-specific half; [`Cgroups`] holds what both share
/// (configuration, layout, claim) and dispatches the rest here.
#[derive(Debug, Clone)]
enum Backend {
    V1(v1::V1),
    V2(v2::V2),
}

/// The cgroups of all containers under one `cgroups_root`.
#[derive(Debug, Clone)]
pub struct Cgroups {
    config: CgroupsConfig,
    hierarchy: Hierarchy,
    backend: Backend,
    /// This manager's claim on `cgroups_root` ([`Cgroups::claim`]).
    owner: Option<Arc<owner::RootLock>>,
}

/// The calls a launcher needs to place and kill a container's processes;
/// a trait so a launcher can be tested against a double.
pub trait ContainerProcesses: Send + Sync {
    /// Moves `pid` (with all its threads) into the container's cgroups.
    fn add_pid(&self, id: &ContainerId, pid: u32) -> Result<()>;
    /// The `cgroup.procs` files a process writes `0` into to join the
    /// container's cgroups itself (the launch helper does, before it forks).
    fn procs_files(&self, id: &ContainerId) -> Result<Vec<PathBuf>>;
    /// Every container that has cgroups, parents first (after a restart,
    /// the launcher cross-checks them with its checkpoints).
    fn scan(&self) -> Result<Vec<ContainerId>>;
    /// Every process of the container and its nested containers.
    fn subtree_pids(&self, id: &ContainerId) -> Result<Vec<u32>>;
    /// Kills every process of the container and its nested containers and
    /// returns once none is left. A container without cgroups is a no-op.
    fn kill_all(&self, id: &ContainerId) -> Result<()>;
    /// `kill_all`, then removes the cgroups of the container and its nested
    /// containers. Idempotent.
    fn destroy(&self, id: &ContainerId) -> Result<()>;
    /// Makes sure this process owns the cgroup root before recovery treats
    /// what it finds there as orphans; the returned claim is held for as
    /// long as the caller keeps it. A root owned by another process is an
    /// error ([`CgroupError::Owned`]). Doubles without a root have nothing
    /// to claim.
    fn claim_for_recovery(&self) -> Result<Option<Arc<owner::RootLock>>> {
        Ok(None)
    }
}

impl Cgroups {
    /// Detects the hierarchy at `config.mount_root` and manages containers
    /// there: v2 when unified, v1 controllers when hybrid or legacy.
    pub fn new(config: CgroupsConfig) -> Result<Self> {
        let hierarchy = detect_with_root(&config.mount_root)?;
        if hierarchy.uses_v1() {
            let mut cgroups = Self::v1_with_root(config)?;
            cgroups.hierarchy = hierarchy;
            Ok(cgroups)
        } else {
            Self::v2_with_root(config)
        }
    }

    /// cgroup v1 with controllers at `<mount_root>/<controller>`, without
    /// checking file-system types (tests point this at fixture directories).
    pub fn v1_with_root(config: CgroupsConfig) -> Result<Self> {
        layout::validate_cgroups_root(&config.cgroups_root)?;
        let backend = v1::V1::new(&config.mount_root, &config.cgroups_root)?;
        Ok(Self {
            config,
            hierarchy: Hierarchy::Legacy,
            backend: Backend::V1(backend),
            owner: None,
        })
    }

    /// cgroup v2 mounted at `mount_root` itself (pass
    /// `/sys/fs/cgroup/unified` to use a hybrid host's cgroup2 mount).
    pub fn v2_with_root(config: CgroupsConfig) -> Result<Self> {
        layout::validate_cgroups_root(&config.cgroups_root)?;
        let backend = v2::V2::new(&config.mount_root, &config.cgroups_root)?;
        Ok(Self {
            config,
            hierarchy: Hierarchy::Unified,
            backend: Backend::V2(backend),
            owner: None,
        })
    }

    /// cgroup v1 without our freezer cgroups (the isolator's
    /// `cgroups_skip_freezer`, for Mesos' LinuxLauncher, which tracks
    /// processes in its own freezer cgroups): none is ever created. A
    /// container's processes are then found in its `pids` cgroup (else
    /// `cpuacct`, `cpu`, `memory`: the first mounted), where a container
    /// sharing its parent's cgroups gets a directory of its own, and a kill
    /// signals them until none is left, without a freeze.
    pub fn skip_freezer(&mut self) -> Result<()> {
        match &mut self.backend {
            Backend::V1(v1) => v1.skip_freezer(),
            Backend::V2(_) => Err(CgroupError::Invalid(
                "skipping the freezer needs cgroup v1".into(),
            )),
        }
    }

    /// Claims `cgroups_root` for this process for the manager's lifetime
    /// (see [`owner`]): an agent does this before it recovers anything, so
    /// a second agent on the same root stops with an error naming the first
    /// instead of destroying its containers. `description` names the owner
    /// (e.g. "agent <id>, work dir <path>").
    pub fn claim(&mut self, description: &str) -> Result<()> {
        if self.owner.is_none() {
            self.owner = Some(owner::claim(
                &self.config.mount_root,
                &self.config.cgroups_root,
                description,
            )?);
        }
        Ok(())
    }

    /// This manager's claim, or a claim for the time of a recovery (so a
    /// manager that never claimed still never destroys in a root another
    /// process owns).
    fn recovery_claim(&self) -> Result<Arc<owner::RootLock>> {
        match &self.owner {
            Some(lock) => Ok(lock.clone()),
            None => owner::claim(
                &self.config.mount_root,
                &self.config.cgroups_root,
                &format!("recovery in process {}", std::process::id()),
            ),
        }
    }

    /// The hierarchy in use.
    pub fn hierarchy(&self) -> Hierarchy {
        self.hierarchy
    }

    /// True when managing cgroup v2.
    pub fn is_v2(&self) -> bool {
        matches!(self.backend, Backend::V2(_))
    }

    /// The configuration.
    pub fn config(&self) -> &CgroupsConfig {
        &self.config
    }

    fn rel(&self, id: &ContainerId) -> Result<PathBuf> {
        container_path(&self.config.cgroups_root, id)
    }

    /// The container's directory in each used v1 controller, or its v2
    /// directory (the non-leaf).
    pub fn container_dirs(&self, id: &ContainerId) -> Result<Vec<PathBuf>> {
        let rel = self.rel(id)?;
        Ok(match &self.backend {
            Backend::V1(v1) => v1.container_dirs(&rel),
            Backend::V2(v2) => vec![v2.dir(&rel)],
        })
    }

    /// True if the container has a cgroup (v1: a freezer directory).
    pub fn exists(&self, id: &ContainerId) -> Result<bool> {
        let rel = self.rel(id)?;
        Ok(match &self.backend {
            Backend::V1(v1) => v1.process_dir(&rel).is_dir(),
            Backend::V2(v2) => v2.dir(&rel).is_dir(),
        })
    }

    /// The container's own directories in used controllers that do not
    /// exist (v1: one per controller; v2: its one directory). A container
    /// that does not share its parent's cgroups has a directory in every
    /// used controller once created; one missing means the cgroups were
    /// made by something else or partly removed.
    pub fn missing_dirs(&self, id: &ContainerId) -> Result<Vec<PathBuf>> {
        Ok(self
            .container_dirs(id)?
            .into_iter()
            .filter(|d| !d.is_dir())
            .collect())
    }

    /// Creates the container's cgroups nested under its parent's, and
    /// applies `options.limits`. A nested container needs its parent's
    /// cgroup; an existing cgroup is an error (Mesos: "already exists").
    pub fn create(&self, id: &ContainerId, options: &CreateOptions) -> Result<()> {
        options.limits.validate()?;
        let nested = id.parent.is_some();
        let share = nested && options.share_cgroups;
        if share && !options.limits.is_empty() {
            return Err(CgroupError::Invalid(format!(
                "container '{}' shares its parent's cgroups and cannot have its own limits",
                to_dotted(id)
            )));
        }
        let rel = self.rel(id)?;
        if self.exists(id)? {
            let path = self
                .container_dirs(id)?
                .into_iter()
                .next()
                .unwrap_or_default();
            return Err(CgroupError::AlreadyExists {
                id: to_dotted(id),
                path,
            });
        }
        if let Some(parent) = id.parent.as_deref()
            && !self.exists(parent)?
        {
            let path = self
                .container_dirs(parent)?
                .into_iter()
                .next()
                .unwrap_or_default();
            return Err(CgroupError::ParentMissing {
                id: to_dotted(id),
                path,
            });
        }
        let result = match &self.backend {
            Backend::V1(v1) => v1.create(id, &rel, share),
            Backend::V2(v2) => v2.create(id, &rel, share),
        }
        .and_then(|()| {
            if options.limits.is_empty() {
                Ok(())
            } else {
                self.update(id, &options.limits)
            }
        });
        if let Err(e) = result {
            if matches!(e, CgroupError::AlreadyExists { .. }) {
                // A concurrent create won the race: its cgroup is not ours
                // to remove.
                return Err(e);
            }
            // Leave nothing half-made behind.
            if let Err(cleanup) = self.destroy(id) {
                tracing::warn!(container = %to_dotted(id), error = %cleanup, "cleanup after failed create");
            }
            return Err(e);
        }
        tracing::info!(container = %to_dotted(id), share, "created cgroups");
        Ok(())
    }

    /// Applies limits to the container's own cgroup. Only set fields change.
    pub fn update(&self, id: &ContainerId, limits: &Limits) -> Result<()> {
        limits.validate()?;
        let rel = self.rel(id)?;
        match &self.backend {
            Backend::V1(v1) => v1.update(id, &rel, limits)?,
            Backend::V2(v2) => v2.update(id, &rel, limits)?,
        }
        tracing::info!(container = %to_dotted(id), ?limits, "updated cgroup limits");
        Ok(())
    }

    /// The `cgroup.procs` files a process must join to be in the container
    /// (v1: one per controller; v2: the leaf's). A helper can write `0`
    /// (itself) to each before exec.
    pub fn procs_files(&self, id: &ContainerId) -> Result<Vec<PathBuf>> {
        let rel = self.rel(id)?;
        match &self.backend {
            Backend::V1(v1) => v1.procs_files(id, &rel),
            Backend::V2(v2) => v2.procs_files(id, &rel),
        }
    }

    /// Processes directly in the container's own cgroup (not in nested
    /// containers). On v1 this is the freezer cgroup.
    pub fn pids(&self, id: &ContainerId) -> Result<Vec<u32>> {
        let rel = self.rel(id)?;
        let dir = match &self.backend {
            Backend::V1(v1) => v1.process_dir(&rel),
            Backend::V2(v2) => v2.dir(&rel).join(LEAF),
        };
        let dir = existing_dir(id, dir)?;
        fsops::read_pids(&dir.join("cgroup.procs"))
    }

    fn process_root(&self, id: &ContainerId) -> Result<PathBuf> {
        let rel = self.rel(id)?;
        Ok(match &self.backend {
            Backend::V1(v1) => v1.process_dir(&rel),
            Backend::V2(v2) => v2.dir(&rel),
        })
    }

    /// Real statistics of the container: CPU times and throttling, memory,
    /// process and thread counts. A sharing container reports the cgroup it
    /// shares.
    pub fn usage(&self, id: &ContainerId) -> Result<ResourceStatistics> {
        let mut out = ResourceStatistics {
            timestamp: stats::now_secs(),
            ..ResourceStatistics::default()
        };
        let rel = self.rel(id)?;
        match &self.backend {
            Backend::V1(v1) => v1.usage(id, &rel, &mut out)?,
            Backend::V2(v2) => v2.usage(id, &rel, &mut out)?,
        }
        Ok(out)
    }

    /// Starts watching the container's memory cgroup for OOM kills. For a
    /// sharing container this watches the cgroup it shares.
    pub fn watch_oom(&self, id: &ContainerId) -> Result<OomWatcher> {
        let rel = self.rel(id)?;
        match &self.backend {
            Backend::V1(v1) => v1.watch_oom(id, &rel),
            Backend::V2(v2) => v2.watch_oom(&rel),
        }
    }

    /// Every container with a cgroup under `cgroups_root`, parents first
    /// (union over the controllers on v1).
    pub fn scan(&self) -> Result<Vec<ContainerId>> {
        let bases = match &self.backend {
            Backend::V1(v1) => v1.scan_bases(),
            Backend::V2(v2) => vec![v2.base()],
        };
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for base in bases {
            for id in layout::scan(&base)? {
                if seen.insert(to_dotted(&id)) {
                    out.push(id);
                }
            }
        }
        // Parents before children across controllers too.
        out.sort_by_key(|id| crate::container_id::chain(id).len());
        Ok(out)
    }

    /// After a restart: kills and removes the cgroups of every container not
    /// in `known` (with everything nested in them), keeps the rest. Returns
    /// the top-most container of each removed subtree.
    pub fn recover(&self, known: &[ContainerId]) -> Result<Vec<ContainerId>> {
        // Never destroy in a root another process owns.
        let _claim = self.recovery_claim()?;
        let known: HashSet<String> = known.iter().map(to_dotted).collect();
        let mut removed: Vec<ContainerId> = Vec::new();
        for id in self.scan()? {
            let dotted = to_dotted(&id);
            if known.contains(&dotted) {
                continue;
            }
            // Already gone with an unknown ancestor.
            if removed
                .iter()
                .any(|r| dotted.starts_with(&format!("{}.", to_dotted(r))))
            {
                continue;
            }
            tracing::info!(container = %dotted, "removing cgroups of an unknown container");
            self.destroy(&id)?;
            removed.push(id);
        }
        Ok(removed)
    }

    /// Kills and removes every container under `cgroups_root`, then the
    /// `cgroups_root` directories themselves (tests, uninstall).
    pub fn destroy_all(&self) -> Result<()> {
        for id in self.scan()? {
            if id.parent.is_none() {
                self.destroy(&id)?;
            }
        }
        // Strays that are not containers may still hold processes.
        let timeout = self.config.destroy_timeout;
        match &self.backend {
            Backend::V1(v1) => v1.destroy_root(timeout),
            Backend::V2(v2) => v2.destroy_root(timeout),
        }
    }
}

impl ContainerProcesses for Cgroups {
    fn claim_for_recovery(&self) -> Result<Option<Arc<owner::RootLock>>> {
        self.recovery_claim().map(Some)
    }

    fn procs_files(&self, id: &ContainerId) -> Result<Vec<PathBuf>> {
        Cgroups::procs_files(self, id)
    }

    fn scan(&self) -> Result<Vec<ContainerId>> {
        Cgroups::scan(self)
    }

    fn add_pid(&self, id: &ContainerId, pid: u32) -> Result<()> {
        let value = pid.to_string();
        for file in self.procs_files(id)? {
            fsops::write(&file, &value)?;
        }
        tracing::debug!(container = %to_dotted(id), pid, "added process to cgroups");
        Ok(())
    }

    fn subtree_pids(&self, id: &ContainerId) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        for dir in fsops::subtree_bottom_up(&self.process_root(id)?)? {
            out.extend(fsops::read_pids(&dir.join("cgroup.procs"))?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
    fn kill_all(&self, id: &ContainerId) -> Result<()> {
        let timeout = self.config.destroy_timeout;
        let rel = self.rel(id)?;
        match &self.backend {
            Backend::V1(v1) => v1.kill_all(&rel, timeout),
            Backend::V2(v2) => kill::kill_v2(&v2.dir(&rel), timeout),
        }
    }

    fn destroy(&self, id: &ContainerId) -> Result<()> {
        self.kill_all(id)?;
        let dirs = self.container_dirs(id)?;
        kill::remove_subtrees(&dirs, self.config.destroy_timeout)?;
        // The parent's `mesos` separator goes with its last child, so a
        // running parent keeps no empty directory; one still in use
        // (ENOTEMPTY, EBUSY) stays, and a concurrent create re-makes it
        // ([`mkdir_in`]).
        if id.parent.is_some() {
            for dir in &dirs {
                if let Some(separator) = dir.parent().filter(|p| p.ends_with(SEPARATOR)) {
                    let _ = std::fs::remove_dir(separator);
                }
            }
        }
        tracing::info!(container = %to_dotted(id), "destroyed cgroups");
        Ok(())
    }
}

/// `dir` if it exists: every operation on a container's cgroup first checks
/// that it is there, so that an unknown container is reported the same way
/// (`NotFound`, naming the container) by both hierarchies.
fn existing_dir(id: &ContainerId, dir: PathBuf) -> Result<PathBuf> {
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(CgroupError::NotFound {
            id: to_dotted(id),
            path: dir,
        })
    }
}

/// `mkdir` of a container's directory whose parent was just made: if a
/// concurrent destroy of its last sibling removed the parent `mesos`
/// separator meanwhile, the parents are made again (a few times at most).
fn mkdir_in(mount: &Path, dir: &Path) -> Result<bool> {
    let mut tries = 0;
    loop {
        match fsops::mkdir(dir) {
            Err(CgroupError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && tries < 3 =>
            {
                tries += 1;
                if let Some(parent) = dir.parent() {
                    create_dirs(mount, parent)?;
                }
            }
            other => return other,
        }
    }
}

/// Creates `dir` and its missing ancestors below `mount` (never `mount`
/// itself or anything above it).
fn create_dirs(mount: &Path, dir: &Path) -> Result<()> {
    let Ok(relative) = dir.strip_prefix(mount) else {
        return Err(CgroupError::Invalid(format!(
            "'{}' is not below the mount point '{}'",
            dir.display(),
            mount.display()
        )));
    };
    let mut current = mount.to_path_buf();
    for component in relative.components() {
        current.push(component);
        fsops::mkdir(&current)?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
