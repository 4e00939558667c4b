//! Which cgroup hierarchy a host runs, found with `statfs(2)` on the mount
//! root: the file-system magic tells cgroup2 from cgroup v1 from the tmpfs
//! that holds v1 controller mounts, without parsing `/proc/self/mountinfo`.

use std::path::Path;

use super::error::{CgroupError, Result};

/// `CGROUP2_SUPER_MAGIC` from `<linux/magic.h>`.
pub const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// `CGROUP_SUPER_MAGIC` (cgroup v1) from `<linux/magic.h>`.
pub const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;

/// The default mount root of cgroup file systems.
pub const DEFAULT_MOUNT_ROOT: &str = "/sys/fs/cgroup";

/// The layout of the cgroup file systems under the mount root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hierarchy {
    /// The mount root itself is cgroup2 (pure v2).
    Unified,
    /// v1 controllers at `<root>/<controller>` and a cgroup2 mount at
    /// `<root>/unified` (usually without controllers). Limits go to v1.
    Hybrid,
    /// Only v1 controllers at `<root>/<controller>`.
    Legacy,
}

impl Hierarchy {
    /// True if limits and processes are managed through cgroup v1.
    pub fn uses_v1(self) -> bool {
        !matches!(self, Self::Unified)
    }
}

/// The file-system magic number of `path`.
pub(crate) fn fs_magic(path: &Path) -> Result<i64> {
    let stat = rustix::fs::statfs(path).map_err(|e| CgroupError::sys("statfs", path, e))?;
    #[allow(
        clippy::unnecessary_cast,
        trivial_numeric_casts,
        reason = "f_type's integer type differs between targets"
    )]
    Ok(stat.f_type as i64)
}

/// Detects the hierarchy at the default mount root.
pub fn detect() -> Result<Hierarchy> {
    detect_with_root(Path::new(DEFAULT_MOUNT_ROOT))
}

/// Detects the hierarchy mounted at `root` (normally `/sys/fs/cgroup`).
///
/// cgroup2 at `root` is [`Hierarchy::Unified`]; otherwise any v1 controller
/// mount below `root` makes it [`Hierarchy::Hybrid`] when `root/unified` is
/// cgroup2, else [`Hierarchy::Legacy`]. Nothing mounted is an error.
pub fn detect_with_root(root: &Path) -> Result<Hierarchy> {
    if fs_magic(root)? == CGROUP2_SUPER_MAGIC {
        return Ok(Hierarchy::Unified);
    }
    let any_v1 = ["freezer", "memory", "cpu", "cpuacct", "pids"]
        .iter()
        .any(|c| fs_magic(&root.join(c)).ok() == Some(CGROUP_SUPER_MAGIC));
    if !any_v1 {
        return Err(CgroupError::NotMounted(root.to_owned()));
    }
    if fs_magic(&root.join("unified")).ok() == Some(CGROUP2_SUPER_MAGIC) {
        Ok(Hierarchy::Hybrid)
    } else {
        Ok(Hierarchy::Legacy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_directory_is_not_a_cgroup_mount() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("memory")).unwrap();
        let err = detect_with_root(dir.path()).unwrap_err();
        assert!(matches!(err, CgroupError::NotMounted(_)), "{err}");
        assert!(err.to_string().contains(&dir.path().display().to_string()));
    }

    #[test]
    fn a_missing_root_names_statfs_and_the_path() {
        let err = detect_with_root(Path::new("/nonexistent-nestguard-root")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to statfs '/nonexistent-nestguard-root': No such file or directory (os error 2)"
        );
    }

    #[test]
    fn the_host_hierarchy_is_detected() {
        // Every Linux host running these tests has some cgroup mount.
        let found = detect().unwrap();
        if Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
            assert!(found.uses_v1());
        }
        if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            assert_eq!(found, Hierarchy::Unified);
        }
    }
}
