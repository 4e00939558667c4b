//! The cgroup v2 backend: one unified hierarchy; a container's processes
//! live in its `leaf` (see the module's layout notes).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{CgroupError, Result};
use super::{
    LEAF, Limits, OomWatcher, create_dirs, existing_dir, fsops, kill, limits, mkdir_in, stats,
};
use crate::container_id::to_dotted;
use crate::proto::mesos::{ContainerId, ResourceStatistics};

/// The v2 controllers we enable for containers when the host offers them.
const V2_CONTROLLERS: [&str; 3] = ["cpu", "memory", "pids"];

/// The cgroup2 mount point in use.
#[derive(Debug, Clone)]
pub(super) struct V2 {
    /// The cgroup2 mount point.
    mount: PathBuf,
    /// Our directory under the mount point.
    cgroups_root: PathBuf,
}

impl V2 {
    /// cgroup2 mounted at `mount` itself.
    pub(super) fn new(mount: &Path, cgroups_root: &Path) -> Result<Self> {
        if !mount.join("cgroup.controllers").is_file() {
            return Err(CgroupError::NotMounted(mount.to_path_buf()));
        }
        Ok(Self {
            mount: mount.to_path_buf(),
            cgroups_root: cgroups_root.to_path_buf(),
        })
    }

    /// The container's directory (the non-leaf: limits and children).
    pub(super) fn dir(&self, rel: &Path) -> PathBuf {
        self.mount.join(rel)
    }

    pub(super) fn create(&self, id: &ContainerId, rel: &Path, share: bool) -> Result<()> {
        let mount = &self.mount;
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
            let available = self.available()?;
            let wanted: Vec<&str> = V2_CONTROLLERS
                .iter()
                .copied()
                .filter(|c| available.contains(*c))
                .collect();
            enable(mount, &dir, &wanted, true)?;
        }
        fsops::mkdir(&dir.join(LEAF))?;
        Ok(())
    }

    fn available(&self) -> Result<HashSet<String>> {
        let text = fsops::read(&self.mount.join("cgroup.controllers"))?;
        Ok(text.split_whitespace().map(str::to_owned).collect())
    }

    pub(super) fn update(&self, id: &ContainerId, rel: &Path, limits: &Limits) -> Result<()> {
        let dir = existing_dir(id, self.dir(rel))?;
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
        enable(&self.mount, &dir, &wanted, false)?;
        limits::apply_v2_cpu(&dir, limits)?;
        limits::apply_v2_memory(&dir, limits)?;
        limits::apply_pids(&dir, limits)
    }

    pub(super) fn procs_files(&self, id: &ContainerId, rel: &Path) -> Result<Vec<PathBuf>> {
        let leaf = existing_dir(id, self.dir(rel).join(LEAF))?;
        Ok(vec![leaf.join("cgroup.procs")])
    }

    pub(super) fn usage(
        &self,
        id: &ContainerId,
        rel: &Path,
        out: &mut ResourceStatistics,
    ) -> Result<()> {
        let dir = existing_dir(id, self.dir(rel))?;
        stats::v2_cpu(&dir, out)?;
        stats::v2_memory(&dir, out)?;
        stats::processes(&dir.join(LEAF), "cgroup.threads", out)
    }

    pub(super) fn watch_oom(&self, rel: &Path) -> Result<OomWatcher> {
        let dir = self.dir(rel);
        if !dir.join("memory.events").exists() {
            return Err(CgroupError::ControllerUnavailable {
                controller: "memory",
                path: dir.join("memory.events"),
            });
        }
        OomWatcher::v2(&dir)
    }

    /// `cgroups_root` below the mount point.
    pub(super) fn base(&self) -> PathBuf {
        self.mount.join(&self.cgroups_root)
    }

    /// Kills what is left under `cgroups_root` and removes it.
    pub(super) fn destroy_root(&self, timeout: Duration) -> Result<()> {
        let base = self.base();
        kill::kill_v2(&base, timeout)?;
        kill::remove_subtree(&base, timeout)
    }
}

/// Enables v2 controllers in `cgroup.subtree_control` from the mount root
/// down to `dir`'s parent (so `dir` gets the control files) and, when
/// `including_dir`, in `dir` itself (so its children can be limited).
fn enable(mount: &Path, dir: &Path, controllers: &[&str], including_dir: bool) -> Result<()> {
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
