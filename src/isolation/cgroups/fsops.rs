//! Small file helpers for cgroup control files, each turning an OS error into
//! a [`CgroupError`] that names the operation and the path.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::error::{CgroupError, Result};

/// Reads a control file as text.
pub(crate) fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| CgroupError::io("read", path, e))
}

/// Reads a control file holding one unsigned number (or `max`, read as
/// `None`).
pub(crate) fn read_u64_or_max(path: &Path) -> Result<Option<u64>> {
    let text = read(path)?;
    parse_u64_or_max(path, text.trim())
}

/// Parses one unsigned number or `max`.
pub(crate) fn parse_u64_or_max(path: &Path, text: &str) -> Result<Option<u64>> {
    if text == "max" {
        return Ok(None);
    }
    text.parse::<u64>()
        .map(Some)
        .map_err(|_| CgroupError::Parse {
            path: path.to_owned(),
            expected: "an unsigned integer or 'max'",
            found: text.to_owned(),
        })
}

/// Reads a control file holding one unsigned number.
pub(crate) fn read_u64(path: &Path) -> Result<u64> {
    read_u64_or_max(path)?.ok_or_else(|| CgroupError::Parse {
        path: path.to_owned(),
        expected: "an unsigned integer",
        found: "max".to_owned(),
    })
}

/// Writes `value` to a control file in one `write(2)`, as the kernel expects
/// (a control file parses each write on its own; split writes would be
/// rejected or misread). The file must exist unless it is a fixture.
pub(crate) fn write(path: &Path, value: &str) -> Result<()> {
    // O_TRUNC is ignored by cgroupfs and keeps fixture files exact.
    let mut file = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .or_else(|e| {
            // Fixture directories (tests, `_with_root`) start without control
            // files; on a real cgroup a missing file is an error.
            if e.kind() == ErrorKind::NotFound && !is_cgroup_fs(path) {
                fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(path)
            } else {
                Err(e)
            }
        })
        .map_err(|e| CgroupError::io("open for writing", path, e))?;
    file.write_all(value.as_bytes())
        .map_err(|e| CgroupError::io("write", path, e))
}

/// True if `path`'s directory is on a cgroup or cgroup2 file system.
fn is_cgroup_fs(path: &Path) -> bool {
    let dir = path.parent().unwrap_or(path);
    super::detect::fs_magic(dir)
        .map(|magic| {
            magic == super::detect::CGROUP_SUPER_MAGIC
                || magic == super::detect::CGROUP2_SUPER_MAGIC
        })
        .unwrap_or(false)
}

/// Creates a directory; `Ok(false)` if it already existed.
pub(crate) fn mkdir(path: &Path) -> Result<bool> {
    match fs::create_dir(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(CgroupError::io("create directory", path, e)),
    }
}

/// The subdirectories of `dir` (not recursive), sorted; empty if `dir` is
/// missing.
pub(crate) fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CgroupError::io("list directory", dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| CgroupError::io("list directory", dir, e))?;
        let kind = entry
            .file_type()
            .map_err(|e| CgroupError::io("stat", entry.path(), e))?;
        if kind.is_dir() {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// `dir` and every directory below it, deepest first (children before their
/// parent), so removal can proceed in this order.
pub(crate) fn subtree_bottom_up(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if dir.is_dir() {
        collect_post_order(dir, &mut out)?;
    }
    Ok(out)
}

fn collect_post_order(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for child in subdirs(dir)? {
        collect_post_order(&child, out)?;
    }
    out.push(dir.to_owned());
    Ok(())
}

/// Removes an (empty) cgroup directory, retrying on `EBUSY`: the kernel
/// keeps a cgroup busy for a moment after its last task exited. A missing
/// directory is success (removal is idempotent and may race).
pub(crate) fn rmdir_retry(path: &Path, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                return Err(CgroupError::Timeout {
                    what: "become removable (EBUSY)",
                    path: path.to_owned(),
                    timeout,
                });
            }
            Err(e) => return Err(CgroupError::io("remove directory", path, e)),
        }
    }
}

/// Reads a `cgroup.procs` or `tasks` file into pids; a missing file (the
/// cgroup was just removed) reads as empty.
pub(crate) fn read_pids(path: &Path) -> Result<Vec<u32>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        // A cgroup removed between listing and reading reports ENODEV.
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(Vec::new()),
        Err(e) => return Err(CgroupError::io("read", path, e)),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.trim().parse::<u32>().map_err(|_| CgroupError::Parse {
                path: path.to_owned(),
                expected: "one pid per line",
                found: l.to_owned(),
            })
        })
        .collect()
}

/// Parses a flat-keyed file (`key value` per line, as `memory.stat`,
/// `cpu.stat`, `cpuacct.stat`, `memory.events`).
pub(crate) fn parse_flat_keyed(path: &Path, text: &str) -> Result<Vec<(String, u64)>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split_whitespace();
            match (
                parts.next(),
                parts.next().map(str::parse::<u64>),
                parts.next(),
            ) {
                (Some(key), Some(Ok(value)), None) => Ok((key.to_owned(), value)),
                _ => Err(CgroupError::Parse {
                    path: path.to_owned(),
                    expected: "'<key> <unsigned integer>' per line",
                    found: l.to_owned(),
                }),
            }
        })
        .collect()
}

/// Reads and parses a flat-keyed file.
pub(crate) fn read_flat_keyed(path: &Path) -> Result<Vec<(String, u64)>> {
    let text = read(path)?;
    parse_flat_keyed(path, &text)
}

/// Looks a key up in parsed flat-keyed pairs.
pub(crate) fn lookup(pairs: &[(String, u64)], key: &str) -> Option<u64> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}
