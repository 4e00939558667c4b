//! The cgroup v1 backend: one hierarchy per controller, a container's
//! directory in each controller it uses (see the module's layout notes).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{CgroupError, Result};
use super::{Controller, OomWatcher, create_dirs, fsops, kill, layout, limits, mkdir_in, stats};
use super::{Limits, container_path, existing_dir};
use crate::container_id::to_dotted;
use crate::proto::mesos::{ContainerId, ResourceStatistics};

/// Mount points of the v1 controllers in use.
#[derive(Debug, Clone)]
pub(super) struct V1 {
    /// Mount point of each v1 controller (co-mounted ones repeat a path).
    mounts: Vec<(Controller, PathBuf)>,
    /// Where controllers are mounted; an unmounted one would be below it.
    mount_root: PathBuf,
    /// Our directory under each controller's mount point.
    cgroups_root: PathBuf,
}

impl V1 {
    /// Controllers at `<mount_root>/<controller>`; the freezer is required.
    pub(super) fn new(mount_root: &Path, cgroups_root: &Path) -> Result<Self> {
        let mut mounts = Vec::new();
        for controller in Controller::ALL {
            let path = mount_root.join(controller.name());
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
            mounts,
            mount_root: mount_root.to_path_buf(),
            cgroups_root: cgroups_root.to_path_buf(),
        })
    }

    /// See [`super::Cgroups::skip_freezer`].
    pub(super) fn skip_freezer(&mut self) -> Result<()> {
        self.mounts.retain(|(c, _)| *c != Controller::Freezer);
        if self.mounts.is_empty() {
            return Err(CgroupError::ControllerNotMounted {
                controller: "pids",
                path: self.mount_root.join("pids"),
            });
        }
        Ok(())
    }

    /// The directory of a controller for a relative path (for an unmounted
    /// controller, where it would be: it never exists).
    fn dir(&self, c: Controller, rel: &Path) -> PathBuf {
        self.mount(c)
            .unwrap_or_else(|| self.mount_root.join(c.name()))
            .join(rel)
    }

    fn mount(&self, c: Controller) -> Option<PathBuf> {
        self.mounts
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, m)| m.clone())
    }

    fn require_mounted(&self, c: Controller) -> Result<()> {
        match self.mount(c) {
            Some(_) => Ok(()),
            None => Err(CgroupError::ControllerNotMounted {
                controller: c.name(),
                path: self.mount_root.join(c.name()),
            }),
        }
    }

    /// The directory of a controller that holds the container's processes:
    /// its own, or the nearest ancestor's when it shares.
    fn effective_dir(&self, c: Controller, id: &ContainerId) -> Result<PathBuf> {
        self.require_mounted(c)?;
        let ancestors = layout::ancestor_paths(&self.cgroups_root, id)?;
        for rel in ancestors.iter().rev() {
            let dir = self.dir(c, rel);
            if dir.is_dir() {
                return Ok(dir);
            }
        }
        Err(CgroupError::NotFound {
            id: to_dotted(id),
            path: self.dir(c, &container_path(&self.cgroups_root, id)?),
        })
    }

    /// The controller whose directories say which containers exist and
    /// hold their processes: the freezer, or without it (see
    /// [`super::Cgroups::skip_freezer`]) the first mounted of `pids`,
    /// `cpuacct`, `cpu`, `memory`.
    fn tracker(&self) -> Controller {
        [
            Controller::Freezer,
            Controller::Pids,
            Controller::Cpuacct,
            Controller::Cpu,
            Controller::Memory,
        ]
        .into_iter()
        .find(|c| self.mounts.iter().any(|(m, _)| m == c))
        .unwrap_or(Controller::Freezer)
    }

    /// The container's directory in each used controller.
    pub(super) fn container_dirs(&self, rel: &Path) -> Vec<PathBuf> {
        unique(self.mounts.iter().map(|(_, m)| m.join(rel)))
    }

    /// The container's directory in the tracking controller: it holds the
    /// container's own processes, and says whether the container exists.
    pub(super) fn process_dir(&self, rel: &Path) -> PathBuf {
        self.dir(self.tracker(), rel)
    }

    pub(super) fn create(&self, id: &ContainerId, rel: &Path, share: bool) -> Result<()> {
        let tracker = self.tracker();
        for (controller, mount) in &self.mounts {
            if share && *controller != tracker {
                continue;
            }
            let base = mount.join(&self.cgroups_root);
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

    pub(super) fn update(&self, id: &ContainerId, rel: &Path, limits: &Limits) -> Result<()> {
        let dir = |c| self.dir(c, rel);
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
                self.require_mounted(controller)?;
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
        limits::apply_pids(&dir(Controller::Pids), limits)
    }

    pub(super) fn procs_files(&self, id: &ContainerId, rel: &Path) -> Result<Vec<PathBuf>> {
        existing_dir(id, self.process_dir(rel))?;
        let mut dirs = Vec::new();
        for (controller, _) in &self.mounts {
            dirs.push(self.effective_dir(*controller, id)?);
        }
        Ok(unique(dirs.into_iter())
            .into_iter()
            .map(|d| d.join("cgroup.procs"))
            .collect())
    }

    pub(super) fn usage(
        &self,
        id: &ContainerId,
        rel: &Path,
        out: &mut ResourceStatistics,
    ) -> Result<()> {
        let freezer = existing_dir(id, self.process_dir(rel))?;
        // Statistics of each mounted controller; a sharing container
        // reports the cgroup it shares.
        let mounted = |c| self.mount(c).is_some();
        if mounted(Controller::Cpuacct) {
            let dir = self.effective_dir(Controller::Cpuacct, id)?;
            stats::v1_cpuacct(&dir, out)?;
        }
        if mounted(Controller::Cpu) {
            let dir = self.effective_dir(Controller::Cpu, id)?;
            stats::v1_cpu(&dir, out)?;
        }
        if mounted(Controller::Memory) {
            let dir = self.effective_dir(Controller::Memory, id)?;
            stats::v1_memory(&dir, out)?;
        }
        // Processes from the container's own freezer cgroup, which
        // every container has, sharing or not.
        stats::processes(&freezer, "tasks", out)
    }

    pub(super) fn watch_oom(&self, id: &ContainerId, rel: &Path) -> Result<OomWatcher> {
        existing_dir(id, self.process_dir(rel))?;
        OomWatcher::v1(&self.effective_dir(Controller::Memory, id)?)
    }

    /// `cgroups_root` in each controller (union of the containers there).
    pub(super) fn scan_bases(&self) -> Vec<PathBuf> {
        unique(self.mounts.iter().map(|(_, m)| m.join(&self.cgroups_root)))
    }

    /// Kills everything below `rel` (freezer first, then the others'
    /// strays) and returns once nothing is left.
    pub(super) fn kill_all(&self, rel: &Path, timeout: Duration) -> Result<()> {
        let freezer = self.dir(Controller::Freezer, rel);
        let others: Vec<PathBuf> = self
            .mounts
            .iter()
            .filter(|(c, _)| *c != Controller::Freezer)
            .map(|(_, m)| m.join(rel))
            .collect();
        kill::kill_v1(&freezer, &unique(others.into_iter()), timeout)
    }

    /// Kills what is left under `cgroups_root` and removes it.
    pub(super) fn destroy_root(&self, timeout: Duration) -> Result<()> {
        let root = &self.cgroups_root;
        let freezer = self.dir(Controller::Freezer, root);
        let others = unique(
            self.mounts
                .iter()
                .filter(|(c, _)| *c != Controller::Freezer)
                .map(|(_, m)| m.join(root)),
        );
        kill::kill_v1(&freezer, &others, timeout)?;
        for base in others {
            kill::remove_subtree(&base, timeout)?;
        }
        kill::remove_subtree(&freezer, timeout)
    }
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
