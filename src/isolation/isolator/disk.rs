//! The `disk/du` isolator: a container's sandbox usage in
//! `ResourceStatistics.disk_used_bytes` (and its `disk` resource as
//! `disk_limit_bytes`; not enforced, as Mesos without
//! `--enforce_container_disk_quota`).
//!
//! Usage is the allocated size (`st_blocks`) of everything below the
//! sandbox, each inode counted once, without following symbolic links or
//! crossing into another file system, and without the container's volume
//! mount points (design §6.3.3.1: a shared volume is its owner's disk, not
//! every sharer's). Nested sandboxes (`containers/<child>`) count for their
//! parent too, as they sit on its disk, exactly as Mesos' `du` of an
//! executor sandbox. Walked in-process rather than by spawning `du`, so no
//! process is forked from a multi-threaded agent per sample.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Isolator;
use super::error::{IsolatorError, Result};
use super::volume::SandboxRegistry;
use crate::container_id::to_dotted;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerState};
use crate::proto::mesos::{ContainerId, ResourceStatistics};

/// The `disk/du` isolator.
#[derive(Debug)]
pub struct DiskIsolator {
    sandboxes: Arc<SandboxRegistry>,
    limits: Mutex<HashMap<String, u64>>,
}

/// Bytes allocated below `root`, skipping `excluded` paths, symbolic links
/// and other file systems; hard links counted once.
pub fn disk_usage(root: &Path, excluded: &[PathBuf]) -> Result<u64> {
    let top = std::fs::symlink_metadata(root).map_err(IsolatorError::io("stat", root))?;
    let device = top.dev();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        if excluded.iter().any(|e| e == &path) {
            continue;
        }
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            // Removed while we walk: nothing to count.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(IsolatorError::io("stat", &path)(e)),
        };
        if meta.dev() != device {
            continue;
        }
        if seen.insert((meta.dev(), meta.ino())) {
            total = total.saturating_add(meta.blocks().saturating_mul(512));
        }
        if meta.is_dir() {
            let entries = match std::fs::read_dir(&path) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(IsolatorError::io("read directory", &path)(e)),
            };
            for entry in entries {
                let entry = entry.map_err(IsolatorError::io("read directory", &path))?;
                stack.push(entry.path());
            }
        }
    }
    Ok(total)
}

impl DiskIsolator {
    /// Reads sandboxes and mount points from `sandboxes` (filled by the
    /// filesystem and volume isolators, which must come before this one).
    pub fn new(sandboxes: Arc<SandboxRegistry>) -> Self {
        Self {
            sandboxes,
            limits: Mutex::new(HashMap::new()),
        }
    }

    fn limits(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        self.limits.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a finite positive number of megabytes"
)]
fn disk_limit(resources: &[crate::proto::mesos::Resource]) -> Option<u64> {
    let mb: f64 = resources
        .iter()
        .filter(|r| r.name == "disk")
        .filter_map(|r| r.scalar.as_ref().map(|s| s.value))
        .sum();
    (mb.is_finite() && mb > 0.0).then_some((mb * 1024.0 * 1024.0) as u64)
}

impl Isolator for DiskIsolator {
    serves_all_containers!("disk/du", recover_sandboxes);

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        if self.sandboxes.get(id).is_none() {
            self.sandboxes.insert(id, Path::new(&config.directory));
        }
        if let Some(limit) = disk_limit(&config.resources) {
            self.limits().insert(to_dotted(id), limit);
        }
        Ok(None)
    }

    fn update(
        &self,
        id: &ContainerId,
        requests: &[crate::proto::mesos::Resource],
        _limits: &super::ResourceLimits,
    ) -> Result<()> {
        match disk_limit(requests) {
            Some(limit) => self.limits().insert(to_dotted(id), limit),
            None => self.limits().remove(&to_dotted(id)),
        };
        Ok(())
    }

    fn usage(&self, id: &ContainerId) -> Result<ResourceStatistics> {
        let Some(sandbox) = self.sandboxes.get(id) else {
            return Err(IsolatorError::UnknownContainer(to_dotted(id)));
        };
        let used = disk_usage(&sandbox, &self.sandboxes.mount_points(id))?;
        Ok(ResourceStatistics {
            disk_used_bytes: Some(used),
            disk_limit_bytes: self.limits().get(&to_dotted(id)).copied(),
            ..ResourceStatistics::default()
        })
    }

    fn cleanup(&self, id: &ContainerId) -> Result<()> {
        self.limits().remove(&to_dotted(id));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn du_counts_files_once_and_skips_excluded_paths_and_symlinks() {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-du-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        std::fs::write(d.join("a"), vec![1u8; 256 * 1024]).unwrap();
        std::fs::hard_link(d.join("a"), d.join("a-link")).unwrap();
        std::fs::create_dir(d.join("shared")).unwrap();
        std::fs::write(d.join("shared/big"), vec![1u8; 1024 * 1024]).unwrap();
        std::os::unix::fs::symlink("/usr", d.join("usr")).unwrap();
        let all = disk_usage(d, &[]).unwrap();
        let without = disk_usage(d, &[d.join("shared")]).unwrap();
        assert!(all >= 1024 * 1024 + 256 * 1024, "{all}");
        assert!((256 * 1024..512 * 1024).contains(&without), "{without}");
        assert!(all - without >= 1024 * 1024);
    }
}
