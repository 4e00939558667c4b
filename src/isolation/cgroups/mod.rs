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

/// The v2 controllers we enable for containers when the host offers them.
const V2_CONTROLLERS: [&str; 3] = ["cpu", "memory", "pids"];

#[derive(Debug, Clone)]
enum Backend {
    /// Mount point of each v1 controller (co-mounted ones repeat a path).
    V1(Vec<(Controller, PathBuf)>),
    /// The cgroup2 mount point.
    V2(PathBuf),
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
        let mut mounts = Vec::new();
        for controller in Controller::ALL {
            let path = config.mount_root.join(controller.name());
            if path.is_dir() {
                mounts.push((controller, path));
            } else if controller == Controller::Freezer {
                // Without the freezer, processes cannot be found or killed.
                return Err(CgroupError::ControllerNotMounted {
                    controller: controller.name(),
                    path,
                });
            } else {
                // Usable without it; limits that need it fail clearly.
                tracing::warn!(controller = controller.name(), path = %path.display(), "cgroup v1 controller not mounted");
            }
        }
        Ok(Self {
            config,
            hierarchy: Hierarchy::Legacy,
            backend: Backend::V1(mounts),
            owner: None,
        })
    }

    /// cgroup v2 mounted at `mount_root` itself (pass
    /// `/sys/fs/cgroup/unified` to use a hybrid host's cgroup2 mount).
    pub fn v2_with_root(config: CgroupsConfig) -> Result<Self> {
        layout::validate_cgroups_root(&config.cgroups_root)?;
        if !config.mount_root.join("cgroup.controllers").is_file() {
            return Err(CgroupError::NotMounted(config.mount_root));
        }
        let mount = config.mount_root.clone();
        Ok(Self {
            config,
            hierarchy: Hierarchy::Unified,
            backend: Backend::V2(mount),
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
        let Backend::V1(mounts) = &mut self.backend else {
            return Err(CgroupError::Invalid(
                "skipping the freezer needs cgroup v1".into(),
            ));
        };
        mounts.retain(|(c, _)| *c != Controller::Freezer);
        if mounts.is_empty() {
            return Err(CgroupError::ControllerNotMounted {
                controller: "pids",
                path: self.config.mount_root.join("pids"),
            });
        }
        Ok(())
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
            Backend::V1(mounts) => unique(mounts.iter().map(|(_, m)| m.join(&rel))),
            Backend::V2(mount) => vec![mount.join(&rel)],
        })
    }

    /// The directory of a v1 controller for a relative path (for an
    /// unmounted controller, where it would be: it never exists).
    fn v1_dir(&self, mounts: &[(Controller, PathBuf)], c: Controller, rel: &Path) -> PathBuf {
        Self::v1_mount(mounts, c)
            .unwrap_or_else(|| self.config.mount_root.join(c.name()))
            .join(rel)
    }

    fn v1_mount(mounts: &[(Controller, PathBuf)], c: Controller) -> Option<PathBuf> {
        mounts.iter().find(|(k, _)| *k == c).map(|(_, m)| m.clone())
    }

    fn require_mounted(&self, mounts: &[(Controller, PathBuf)], c: Controller) -> Result<()> {
        match Self::v1_mount(mounts, c) {
            Some(_) => Ok(()),
            None => Err(CgroupError::ControllerNotMounted {
                controller: c.name(),
                path: self.config.mount_root.join(c.name()),
            }),
        }
    }

    /// The directory of a v1 controller that holds the container's
    /// processes: its own, or the nearest ancestor's when it shares.
    fn v1_effective_dir(
        &self,
        mounts: &[(Controller, PathBuf)],
        c: Controller,
        id: &ContainerId,
    ) -> Result<PathBuf> {
        self.require_mounted(mounts, c)?;
        let ancestors = layout::ancestor_paths(&self.config.cgroups_root, id)?;
        for rel in ancestors.iter().rev() {
            let dir = self.v1_dir(mounts, c, rel);
            if dir.is_dir() {
                return Ok(dir);
            }
        }
        Err(CgroupError::NotFound {
            id: to_dotted(id),
            path: self.v1_dir(mounts, c, &self.rel(id)?),
        })
    }

    /// True if the container has a cgroup (v1: a freezer directory).
    pub fn exists(&self, id: &ContainerId) -> Result<bool> {
        let rel = self.rel(id)?;
        Ok(match &self.backend {
            Backend::V1(mounts) => self.v1_dir(mounts, tracker(mounts), &rel).is_dir(),
            Backend::V2(mount) => mount.join(&rel).is_dir(),
        })
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
            Backend::V1(mounts) => self.create_v1(mounts, id, &rel, share),
            Backend::V2(mount) => self.create_v2(mount, id, &rel, share),
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

    fn create_v1(
        &self,
        mounts: &[(Controller, PathBuf)],
        id: &ContainerId,
        rel: &Path,
        share: bool,
    ) -> Result<()> {
        let tracker = tracker(mounts);
        for (controller, mount) in mounts {
            if share && *controller != tracker {
                continue;
            }
            let base = mount.join(&self.config.cgroups_root);
            create_dirs(mount, &base)?;
            let dir = mount.join(rel);
            // Intermediate `mesos` separators, and for a non-sharing child
            // of a sharing parent, the parent's dir in this controller.
            if let Some(parent) = dir.parent() {
                create_dirs(mount, parent)?;
            }
            if !mkdir_in(mount, &dir)? && *controller == tracker {
                return Err(CgroupError::AlreadyExists {
                    id: to_dotted(id),
                    path: dir,
                });
            }
            if *controller == Controller::Memory {
                // A cgroup inherits `oom_kill_disable` from its parent; make
                // sure the kernel OOM killer acts (Mesos does the same), or
                // a container over its limit would hang instead of dying.
                fsops::write(&dir.join("memory.oom_control"), "0")?;
            }
        }
        Ok(())
    }

    fn create_v2(&self, mount: &Path, id: &ContainerId, rel: &Path, share: bool) -> Result<()> {
        let dir = mount.join(rel);
        if let Some(parent) = dir.parent() {
            create_dirs(mount, parent)?;
        }
        if !mkdir_in(mount, &dir)? {
            return Err(CgroupError::AlreadyExists {
                id: to_dotted(id),
                path: dir,
            });
        }
        if !share {
            // Enable what the host offers so nested containers can be limited.
            let available = self.v2_available(mount)?;
            let wanted: Vec<&str> = V2_CONTROLLERS
                .iter()
                .copied()
                .filter(|c| available.contains(*c))
                .collect();
            enable_v2(mount, &dir, &wanted, true)?;
        }
        fsops::mkdir(&dir.join(LEAF))?;
        Ok(())
    }

    fn v2_available(&self, mount: &Path) -> Result<HashSet<String>> {
        let text = fsops::read(&mount.join("cgroup.controllers"))?;
        Ok(text.split_whitespace().map(str::to_owned).collect())
    }

    /// Applies limits to the container's own cgroup. Only set fields change.
    pub fn update(&self, id: &ContainerId, limits: &Limits) -> Result<()> {
        limits.validate()?;
        let rel = self.rel(id)?;
        match &self.backend {
            Backend::V1(mounts) => {
                let dir = |c| self.v1_dir(mounts, c, &rel);
                let needed = [
                    (
                        Controller::Cpu,
                        limits.cpu_request.is_some() || limits.cpu_limit.is_some(),
                    ),
                    (
                        Controller::Memory,
                        limits.memory_bytes.is_some() || limits.memory_soft_bytes.is_some(),
                    ),
                    (Controller::Pids, limits.pids_max.is_some()),
                ];
                for (controller, needed) in needed {
                    if needed {
                        self.require_mounted(mounts, controller)?;
                    }
                    if needed && !dir(controller).is_dir() {
                        return Err(CgroupError::NotFound {
                            id: to_dotted(id),
                            path: dir(controller),
                        });
                    }
                }
                limits::apply_v1_cpu(&dir(Controller::Cpu), limits)?;
                limits::apply_v1_memory(&dir(Controller::Memory), limits)?;
                limits::apply_pids(&dir(Controller::Pids), limits)?;
            }
            Backend::V2(mount) => {
                let dir = mount.join(&rel);
                if !dir.is_dir() {
                    return Err(CgroupError::NotFound {
                        id: to_dotted(id),
                        path: dir,
                    });
                }
                let mut wanted = Vec::new();
                if limits.cpu_request.is_some() || limits.cpu_limit.is_some() {
                    wanted.push("cpu");
                }
                if limits.memory_bytes.is_some() || limits.memory_soft_bytes.is_some() {
                    wanted.push("memory");
                }
                if limits.pids_max.is_some() {
                    wanted.push("pids");
                }
                enable_v2(mount, &dir, &wanted, false)?;
                limits::apply_v2_cpu(&dir, limits)?;
                limits::apply_v2_memory(&dir, limits)?;
                limits::apply_pids(&dir, limits)?;
            }
        }
        tracing::info!(container = %to_dotted(id), ?limits, "updated cgroup limits");
        Ok(())
    }

    /// The `cgroup.procs` files a process must join to be in the container
    /// (v1: one per controller; v2: the leaf's). A helper can write `0`
    /// (itself) to each before exec.
    pub fn procs_files(&self, id: &ContainerId) -> Result<Vec<PathBuf>> {
        match &self.backend {
            Backend::V1(mounts) => {
                let rel = self.rel(id)?;
                let freezer = self.v1_dir(mounts, tracker(mounts), &rel);
                if !freezer.is_dir() {
                    return Err(CgroupError::NotFound {
                        id: to_dotted(id),
                        path: freezer,
                    });
                }
                let mut dirs = Vec::new();
                for (controller, _) in mounts {
                    dirs.push(self.v1_effective_dir(mounts, *controller, id)?);
                }
                Ok(unique(dirs.into_iter())
                    .into_iter()
                    .map(|d| d.join("cgroup.procs"))
                    .collect())
            }
            Backend::V2(mount) => {
                let leaf = mount.join(self.rel(id)?).join(LEAF);
                if !leaf.is_dir() {
                    return Err(CgroupError::NotFound {
                        id: to_dotted(id),
                        path: leaf,
                    });
                }
                Ok(vec![leaf.join("cgroup.procs")])
            }
        }
    }

    /// Processes directly in the container's own cgroup (not in nested
    /// containers). On v1 this is the freezer cgroup.
    pub fn pids(&self, id: &ContainerId) -> Result<Vec<u32>> {
        let dir = match &self.backend {
            Backend::V1(mounts) => self.v1_dir(mounts, tracker(mounts), &self.rel(id)?),
            Backend::V2(mount) => mount.join(self.rel(id)?).join(LEAF),
        };
        if !dir.is_dir() {
            return Err(CgroupError::NotFound {
                id: to_dotted(id),
                path: dir,
            });
        }
        fsops::read_pids(&dir.join("cgroup.procs"))
    }

    fn process_root(&self, id: &ContainerId) -> Result<PathBuf> {
        Ok(match &self.backend {
            Backend::V1(mounts) => self.v1_dir(mounts, tracker(mounts), &self.rel(id)?),
            Backend::V2(mount) => mount.join(self.rel(id)?),
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
        match &self.backend {
            Backend::V1(mounts) => {
                if !self.exists(id)? {
                    return Err(CgroupError::NotFound {
                        id: to_dotted(id),
                        path: self.v1_dir(mounts, tracker(mounts), &self.rel(id)?),
                    });
                }
                // Statistics of each mounted controller; a sharing container
                // reports the cgroup it shares.
                let mounted = |c| Self::v1_mount(mounts, c).is_some();
                if mounted(Controller::Cpuacct) {
                    let dir = self.v1_effective_dir(mounts, Controller::Cpuacct, id)?;
                    stats::v1_cpuacct(&dir, &mut out)?;
                }
                if mounted(Controller::Cpu) {
                    let dir = self.v1_effective_dir(mounts, Controller::Cpu, id)?;
                    stats::v1_cpu(&dir, &mut out)?;
                }
                if mounted(Controller::Memory) {
                    let dir = self.v1_effective_dir(mounts, Controller::Memory, id)?;
                    stats::v1_memory(&dir, &mut out)?;
                }
                // Processes from the container's own freezer cgroup, which
                // every container has, sharing or not.
                let freezer = self.v1_dir(mounts, tracker(mounts), &self.rel(id)?);
                stats::processes(&freezer, "tasks", &mut out)?;
            }
            Backend::V2(mount) => {
                let dir = mount.join(self.rel(id)?);
                if !dir.is_dir() {
                    return Err(CgroupError::NotFound {
                        id: to_dotted(id),
                        path: dir,
                    });
                }
                stats::v2_cpu(&dir, &mut out)?;
                stats::v2_memory(&dir, &mut out)?;
                stats::processes(&dir.join(LEAF), "cgroup.threads", &mut out)?;
            }
        }
        Ok(out)
    }

    /// Starts watching the container's memory cgroup for OOM kills. For a
    /// sharing container this watches the cgroup it shares.
    pub fn watch_oom(&self, id: &ContainerId) -> Result<OomWatcher> {
        match &self.backend {
            Backend::V1(mounts) => {
                if !self.exists(id)? {
                    return Err(CgroupError::NotFound {
                        id: to_dotted(id),
                        path: self.v1_dir(mounts, tracker(mounts), &self.rel(id)?),
                    });
                }
                OomWatcher::v1(&self.v1_effective_dir(mounts, Controller::Memory, id)?)
            }
            Backend::V2(mount) => {
                let dir = mount.join(self.rel(id)?);
                if !dir.join("memory.events").exists() {
                    return Err(CgroupError::ControllerUnavailable {
                        controller: "memory",
                        path: dir.join("memory.events"),
                    });
                }
                OomWatcher::v2(&dir)
            }
        }
    }

    /// Every container with a cgroup under `cgroups_root`, parents first
    /// (union over the controllers on v1).
    pub fn scan(&self) -> Result<Vec<ContainerId>> {
        let bases = match &self.backend {
            Backend::V1(mounts) => unique(
                mounts
                    .iter()
                    .map(|(_, m)| m.join(&self.config.cgroups_root)),
            ),
            Backend::V2(mount) => vec![mount.join(&self.config.cgroups_root)],
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
        let root = &self.config.cgroups_root;
        match &self.backend {
            Backend::V1(mounts) => {
                let freezer = self.v1_dir(mounts, Controller::Freezer, root);
                let others = unique(
                    mounts
                        .iter()
                        .filter(|(c, _)| *c != Controller::Freezer)
                        .map(|(_, m)| m.join(root)),
                );
                kill::kill_v1(&freezer, &others, timeout)?;
                for base in others {
                    kill::remove_subtree(&base, timeout)?;
                }
                kill::remove_subtree(&freezer, timeout)?;
            }
            Backend::V2(mount) => {
                let base = mount.join(root);
                kill::kill_v2(&base, timeout)?;
                kill::remove_subtree(&base, timeout)?;
            }
        }
        Ok(())
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
        match &self.backend {
            Backend::V1(mounts) => {
                let rel = self.rel(id)?;
                let freezer = self.v1_dir(mounts, Controller::Freezer, &rel);
                let others: Vec<PathBuf> = mounts
                    .iter()
                    .filter(|(c, _)| *c != Controller::Freezer)
                    .map(|(_, m)| m.join(&rel))
                    .collect();
                kill::kill_v1(&freezer, &unique(others.into_iter()), timeout)
            }
            Backend::V2(mount) => kill::kill_v2(&mount.join(self.rel(id)?), timeout),
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

/// The v1 controller whose directories say which containers exist and
/// hold their processes: the freezer, or without it (see
/// [`Cgroups::skip_freezer`]) the first mounted of `pids`, `cpuacct`, `cpu`,
/// `memory`.
fn tracker(mounts: &[(Controller, PathBuf)]) -> Controller {
    [
        Controller::Freezer,
        Controller::Pids,
        Controller::Cpuacct,
        Controller::Cpu,
        Controller::Memory,
    ]
    .into_iter()
    .find(|c| mounts.iter().any(|(m, _)| m == c))
    .unwrap_or(Controller::Freezer)
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

/// Enables v2 controllers in `cgroup.subtree_control` from the mount root
/// down to `dir`'s parent (so `dir` gets the control files) and, when
/// `including_dir`, in `dir` itself (so its children can be limited).
fn enable_v2(mount: &Path, dir: &Path, controllers: &[&str], including_dir: bool) -> Result<()> {
    if controllers.is_empty() {
        return Ok(());
    }
    let Ok(relative) = dir.strip_prefix(mount) else {
        return Err(CgroupError::Invalid(format!(
            "'{}' is not below the mount point '{}'",
            dir.display(),
            mount.display()
        )));
    };
    let mut chain = vec![mount.to_path_buf()];
    let mut current = mount.to_path_buf();
    for component in relative.components() {
        current.push(component);
        chain.push(current.clone());
    }
    if !including_dir {
        chain.pop();
    }
    for cgroup in chain {
        let available_file = cgroup.join("cgroup.controllers");
        let available = fsops::read(&available_file)?;
        let enabled_file = cgroup.join("cgroup.subtree_control");
        let enabled = fsops::read(&enabled_file)?;
        for controller in controllers {
            if !available.split_whitespace().any(|c| c == *controller) {
                return Err(CgroupError::ControllerUnavailable {
                    controller: static_name(controller),
                    path: available_file,
                });
            }
            if !enabled.split_whitespace().any(|c| c == *controller) {
                fsops::write(&enabled_file, &format!("+{controller}"))?;
            }
        }
    }
    Ok(())
}

fn static_name(controller: &str) -> &'static str {
    V2_CONTROLLERS
        .iter()
        .copied()
        .find(|c| *c == controller)
        .unwrap_or("unknown")
}

/// Paths without duplicates (co-mounted v1 controllers share a directory),
/// order kept. Identity is the directory's device and inode (one `statx`,
/// where canonicalizing costs a `readlink` per component on every launch);
/// a path that does not exist is its own identity.
fn unique(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    #[derive(PartialEq, Eq, Hash)]
    enum Key {
        Inode(u64, u64),
        Path(PathBuf),
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for p in paths {
        let key = match std::fs::metadata(&p) {
            Ok(m) => Key::Inode(m.dev(), m.ino()),
            Err(_) => Key::Path(p.clone()),
        };
        if seen.insert(key) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests;
