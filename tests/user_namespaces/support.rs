//! A launcher fixture whose pods run in user namespaces, and readings of a
//! process' ids from the host.

use std::os::unix::fs::PermissionsExt;

use crate::launcher_support::Fixture;
use nestguard::isolation::Mode;
use nestguard::isolation::id_map::RangePool;

/// Two ranges of 65536 ids, far from any account of a test machine.
pub const POOL: &str = "3000000000-3000131072/65536";

/// A Linux-launcher fixture with `pool`; its directories are searchable by
/// others, as the pod's ids must reach their sandboxes.
pub fn fixture(pool: &str) -> Fixture {
    let mut f = Fixture::new(Mode::Linux);
    f.user_namespaces = Some(RangePool::parse(pool).unwrap());
    searchable(f.dir.path());
    std::fs::create_dir_all(f.dir.path().join("runs")).unwrap();
    searchable(&f.dir.path().join("runs"));
    f.reopen();
    f
}

pub fn searchable(dir: &std::path::Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The `Uid:` line of `/proc/<pid>/status` as its four ids.
pub fn uids(pid: i32) -> Vec<u32> {
    ids(pid, "Uid:")
}

/// The `Gid:` line of `/proc/<pid>/status` as its four ids.
pub fn gids(pid: i32) -> Vec<u32> {
    ids(pid, "Gid:")
}

fn ids(pid: i32, key: &str) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// `/proc/<pid>/uid_map`, its fields only.
pub fn uid_map(pid: i32) -> Vec<Vec<u64>> {
    std::fs::read_to_string(format!("/proc/{pid}/uid_map"))
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect()
}

/// The children of `pid` (from `/proc/<pid>/task/<pid>/children`).
pub fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// A recursive bind of `source` onto `target` (a host-path volume, or a
/// volume shared from a parent's sandbox), as the launcher gets it.
pub fn bind(
    source: &std::path::Path,
    target: &std::path::Path,
) -> nestguard::proto::mesos::slave::ContainerMountInfo {
    nestguard::proto::mesos::slave::ContainerMountInfo {
        source: Some(source.to_string_lossy().into_owned()),
        target: target.to_string_lossy().into_owned(),
        flags: Some((libc::MS_BIND | libc::MS_REC) as _),
        ..Default::default()
    }
}
