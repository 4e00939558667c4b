//! Sandbox directories as Mesos makes them: mode 0750, owned by the
//! container user, with `stdout` and `stderr` files.
//!
//! A nested container's sandbox lies inside its parent's, which belongs to
//! the parent's user: every component below the outermost sandbox may be
//! swapped for a symbolic link at any moment. So the directory is made and
//! opened through [`crate::beneath`] (no link followed), and everything
//! after — `fchmod`, `fchown`, the log files (`openat` with `O_NOFOLLOW`) —
//! goes through its descriptor, never through the path again.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

use super::helper::command::{self, CommandError};
use super::paths::{STDERR_FILE, STDOUT_FILE};

/// A sandbox that could not be prepared; names the path.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A filesystem call failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was attempted.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The sandbox is not below the directory it must be in, or a symbolic
    /// link was found on the way.
    #[error(transparent)]
    Beneath(#[from] crate::beneath::BeneathError),
    /// A log file exists but is not a plain file of its own (a FIFO, a
    /// device, a hard link to another file): never written to or chowned.
    #[error("{0} is not a regular file with a single link; refusing to use it")]
    NotRegular(PathBuf),
    /// A nested sandbox whose outermost ancestor sandbox is unknown: there
    /// is no directory of the agent to walk down from.
    #[error("the sandbox of {0}'s outermost ancestor is unknown; refusing to create it by path")]
    UnknownOutermost(PathBuf),
    /// The user is unknown.
    #[error(transparent)]
    User(#[from] CommandError),
}

/// The sandbox directory that was prepared: its device and inode, which
/// the launch helper checks when it reopens the directory by path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(rustix::io::Errno) -> SandboxError + 'a {
    move |e| SandboxError::Io {
        op,
        path: path.to_path_buf(),
        source: e.into(),
    }
}

/// Creates `path` (and missing parents) with mode 0750, chowned to `user`
/// when given, and its `stdout`/`stderr` files (0640, same owner). On a
/// chown failure the directory is removed again, as Mesos does. `path`'s
/// parent is trusted (it belongs to the agent).
pub fn create(path: &Path, user: Option<&str>) -> Result<Identity, SandboxError> {
    create_in(path.parent().unwrap_or(path), path, user, None, None)
}

/// Chowns the directories strictly between `root` and `path` (a nested
/// sandbox's `containers` directories) to the pod's root: seen through the
/// outermost sandbox's idmapped mount, a directory of host root's could be
/// searched by no one, not even host root (its owner is unmapped there).
fn own_between(root: &Path, path: &Path, uid: u32, gid: u32) -> Result<(), SandboxError> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Ok(());
    };
    let mut at = root.to_path_buf();
    let components: Vec<_> = rel.components().collect();
    for component in components.iter().take(components.len().saturating_sub(1)) {
        at.push(component);
        let fd = crate::beneath::open_dir(root, &at)?;
        rustix::fs::fchown(
            &fd,
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
        )
        .map_err(io("chown", &at))?;
    }
    Ok(())
}

/// [`create`] below `root` (the outermost sandbox for a nested container,
/// the agent's directory holding it otherwise), where no component may be
/// a symbolic link. For a container with its own rootfs the user is the
/// image's (looked up in `<rootfs>/etc/passwd`, without NSS).
///
/// In a pod's user namespace (`pod_base`: the host id of the pod's root)
/// a sandbox run by root belongs to the pod's root on the host; an image's
/// user gets the pod's mapped ids (`pod_base + uid`), never a host
/// account's; directories on the way below `root` become the pod's root's
/// too (seen through an idmapped sandbox, host root's would be no one's).
pub fn create_in(
    root: &Path,
    path: &Path,
    user: Option<&str>,
    rootfs: Option<&Path>,
    pod_base: Option<u32>,
) -> Result<Identity, SandboxError> {
    let owner = match (user, rootfs) {
        (Some(name), Some(rootfs)) => Some(command::lookup_user_in_rootfs(rootfs, name, &[])?),
        (Some(name), None) => Some(command::lookup_user(name, &[])?),
        (None, _) => None,
    };
    let identity = |uid: u32, gid: u32| command::Identity {
        uid: nix::unistd::Uid::from_raw(uid),
        gid: nix::unistd::Gid::from_raw(gid),
        groups: Vec::new(),
    };
    let owner = match (owner, pod_base) {
        (None, Some(base)) => Some(identity(base, base)),
        (Some(o), Some(base)) if o.uid.is_root() => Some(identity(base, base)),
        (Some(o), Some(base)) if rootfs.is_some() => {
            Some(identity(base + o.uid.as_raw(), base + o.gid.as_raw()))
        }
        (owner, _) => owner,
    };
    let dir = crate::beneath::create_dir_all(root, path, 0o750)?;
    if let Some(base) = pod_base {
        own_between(root, path, base, base)?;
    }
    rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o750)).map_err(io("chmod 0750", path))?;
    let chown = |fd: &OwnedFd, at: &Path| -> Result<(), SandboxError> {
        if let Some(o) = &owner {
            rustix::fs::fchown(
                fd,
                Some(rustix::fs::Uid::from_raw(o.uid.as_raw())),
                Some(rustix::fs::Gid::from_raw(o.gid.as_raw())),
            )
            .map_err(io("chown", at))?;
        }
        Ok(())
    };
    if let Err(e) = chown(&dir, path) {
        drop(dir);
        if root != path {
            let _ = crate::beneath::remove_dir_all(root, path);
        }
        return Err(e);
    }
    for name in [STDOUT_FILE, STDERR_FILE] {
        let file = path.join(name);
        let fd = open_log(dir.as_fd(), name, OFlags::CREATE, &file)?;
        chown(&fd, &file)?;
    }
    let stat = rustix::fs::fstat(&dir).map_err(io("stat", path))?;
    Ok(Identity {
        dev: stat.st_dev,
        ino: stat.st_ino,
    })
}

/// Opens the log `name` in the sandbox `dir` for appending (`extra`:
/// `O_CREAT` to make it, mode 0640), never through a symbolic link, and
/// only if it is a regular file with one link; `O_NONBLOCK` while opening,
/// so a FIFO planted there cannot block the caller.
pub fn open_log(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &str,
    extra: OFlags,
    path: &Path,
) -> Result<OwnedFd, SandboxError> {
    let flags = OFlags::WRONLY
        | OFlags::APPEND
        | OFlags::NOFOLLOW
        | OFlags::NONBLOCK
        | OFlags::CLOEXEC
        | OFlags::NOCTTY
        | extra;
    let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o640))
        .map_err(io("open", path))?;
    let stat = rustix::fs::fstat(&fd).map_err(io("stat", path))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_nlink != 1 {
        return Err(SandboxError::NotRegular(path.to_path_buf()));
    }
    rustix::fs::fcntl_setfl(&fd, OFlags::WRONLY | OFlags::APPEND).map_err(io("fcntl", path))?;
    Ok(fd)
}
