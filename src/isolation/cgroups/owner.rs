//! One owner per cgroup root: a process that manages containers under a
//! `cgroups_root` holds an exclusive `flock` on a lock file for that root,
//! and writes who it is (pid and a description, e.g. the agent's ID and work
//! dir) into it. A second agent on the same root fails to claim it and says
//! who owns it, instead of taking the first agent's containers for orphans
//! and destroying them.
//!
//! # Where the lock lives
//!
//! cgroupfs holds no regular files, so the lock cannot sit in the root
//! itself. It is `/run/nestguard/cgroups-roots/<key>.lock`, where `<key>` is
//! the hierarchy's mount root and the cgroups root joined by `/` and
//! percent-escaped (`/` → `%2F`, `%` → `%25`), e.g.
//! `%2Fsys%2Ffs%2Fcgroup%2Fnestguard.lock`: one file per root on the host,
//! whatever the agents' work or runtime directories. `/run` is a tmpfs, so
//! nothing outlives a reboot (nor do containers).
//!
//! # Lifetime
//!
//! The kernel drops the `flock` when the owner exits, however it exits, so a
//! SIGKILLed agent's successor takes the root over at once. An owner that
//! ends cleanly also unlinks the file — when its last claim is dropped, or
//! at process exit (an `atexit` handler: an agent whose containers outlive
//! it never drops its isolator); a claimant that opened the file just
//! before the unlink sees that its descriptor no longer names the path and
//! opens it again.
//!
//! Within one process the claim is shared (a registry of live claims): a
//! process is one owner, and tests that build several managers on a root in
//! one process keep working. So a second claim in the same process is not
//! refused, it silently joins the first: nestguard supports one agent per
//! process (the agent loads the library once), and two isolators of one
//! process on one root are the same owner. Only other processes are kept
//! out.
//!
//! `flock` through `rustix` (no hand-rolled syscalls); the registry is a
//! small map because no crate offers process-shared `flock` handles.

use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use rustix::fs::{FlockOperation, flock};

use super::error::{CgroupError, Result};

/// Where the lock files of all cgroup roots live.
pub const LOCK_DIR: &str = "/run/nestguard/cgroups-roots";

/// The longest owner description kept (the rest is cut): a lock file is
/// read by every claimant and must stay small.
const MAX_DESCRIPTION: usize = 512;

/// An exclusive claim on one cgroup root, released when the last handle is
/// dropped (the file is then unlinked).
#[derive(Debug)]
pub struct RootLock {
    path: PathBuf,
    file: std::fs::File,
}

static CLAIMS: Mutex<Vec<(PathBuf, Weak<RootLock>)>> = Mutex::new(Vec::new());

/// Registers [`unlink_at_exit`] once.
static AT_EXIT: std::sync::Once = std::sync::Once::new();

/// Unlinks the lock files of the claims still live when the process exits
/// (we still hold their locks: nobody else can have taken them). Never
/// blocks or panics: it runs inside `exit`.
extern "C" fn unlink_at_exit() {
    let Ok(claims) = CLAIMS.try_lock() else {
        return;
    };
    for (path, weak) in claims.iter() {
        if weak.strong_count() > 0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The lock file of the root `cgroups_root` under `mount_root`.
///
/// Keyed by the root, not its spelling: `mount_root` is canonicalized
/// (symlinks, `..`) when it exists, and both paths are taken component by
/// component, so `nestguard`, `nestguard/`, `nestguard//` and
/// `nestguard/.` (one cgroup) share one lock file. `cgroups_root` spellings
/// with `..`, a leading `.` or `/` never get here ([`claim`] rejects them).
/// Bytes other than printable ASCII are escaped too (`%XX`), so two roots
/// never share a key.
pub fn lock_path(mount_root: &Path, cgroups_root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let mount = std::fs::canonicalize(mount_root).unwrap_or_else(|_| mount_root.to_path_buf());
    let mut key = String::new();
    for part in mount.components().chain(cgroups_root.components()) {
        let Component::Normal(part) = part else {
            continue;
        };
        key.push_str("%2F");
        for &b in part.as_bytes() {
            match b {
                b'%' => key.push_str("%25"),
                b'!'..=b'~' => key.push(char::from(b)),
                b => key.push_str(&format!("%{b:02X}")),
            }
        }
    }
    Path::new(LOCK_DIR).join(format!("{key}.lock"))
}

/// Claims the root for this process (or joins this process' live claim).
/// `description` names the owner for whoever is refused later.
pub fn claim(mount_root: &Path, cgroups_root: &Path, description: &str) -> Result<Arc<RootLock>> {
    super::layout::validate_cgroups_root(cgroups_root)?;
    let path = lock_path(mount_root, cgroups_root);
    let mut claims = CLAIMS.lock().unwrap_or_else(|p| p.into_inner());
    claims.retain(|(_, weak)| weak.strong_count() > 0);
    if let Some(live) = claims
        .iter()
        .find(|(p, _)| *p == path)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(live);
    }
    let lock = Arc::new(acquire(&path, mount_root, cgroups_root, description)?);
    AT_EXIT.call_once(|| {
        // SAFETY: registers a handler that neither unwinds nor calls `exit`.
        if unsafe { libc::atexit(unlink_at_exit) } != 0 {
            tracing::warn!("cannot register the exit handler: a clean exit may leave a lock file");
        }
    });
    claims.push((path, Arc::downgrade(&lock)));
    Ok(lock)
}

/// Whether this process holds a live claim on the root.
pub fn held(mount_root: &Path, cgroups_root: &Path) -> bool {
    let path = lock_path(mount_root, cgroups_root);
    CLAIMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|(p, w)| *p == path && w.strong_count() > 0)
}

fn acquire(
    path: &Path,
    mount_root: &Path,
    cgroups_root: &Path,
    description: &str,
) -> Result<RootLock> {
    let dir = Path::new(LOCK_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| CgroupError::io("create directory", dir, e))?;
    loop {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| CgroupError::io("open", path, e))?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut owner = String::new();
                let _ = (&file)
                    .take(MAX_DESCRIPTION as u64 * 2)
                    .read_to_string(&mut owner);
                let owner = owner.trim();
                return Err(CgroupError::Owned {
                    root: mount_root.join(cgroups_root),
                    owner: if owner.is_empty() {
                        "an owner that has not recorded itself yet".into()
                    } else {
                        owner.replace('\n', ", ")
                    },
                    lock: path.to_path_buf(),
                });
            }
            Err(e) => return Err(CgroupError::sys("flock", path, e)),
        }
        // The previous owner may have unlinked the file between our open
        // and our lock: then this lock guards nothing; start over.
        let ours = file
            .metadata()
            .map_err(|e| CgroupError::io("stat", path, e))?;
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.dev() == ours.dev() && m.ino() == ours.ino() => {}
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(CgroupError::io("stat", path, e)),
        }
        let mut text = format!("pid={}\nowner={}\n", std::process::id(), description);
        if text.len() > MAX_DESCRIPTION {
            let mut cut = MAX_DESCRIPTION;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('\n');
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(text.as_bytes()))
            .map_err(|e| CgroupError::io("write", path, e))?;
        tracing::info!(root = %mount_root.join(cgroups_root).display(), lock = %path.display(), "claimed the cgroup root");
        return Ok(RootLock {
            path: path.to_path_buf(),
            file,
        });
    }
}

impl Drop for RootLock {
    fn drop(&mut self) {
        // Unlinked while still locked, so no claimant can lock this inode
        // and believe it owns the root while we still do.
        let _ = std::fs::remove_file(&self.path);
        let _ = flock(&self.file, FlockOperation::Unlock);
    }
}

/// The lock file of a claim.
impl RootLock {
    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_escaped_and_distinct() {
        let a = lock_path(Path::new("/sys/fs/cgroup"), Path::new("nestguard"));
        assert_eq!(
            a,
            Path::new(LOCK_DIR).join("%2Fsys%2Ffs%2Fcgroup%2Fnestguard.lock")
        );
        let b = lock_path(Path::new("/sys/fs/cgroup"), Path::new("a/b"));
        let c = lock_path(Path::new("/sys/fs/cgroup/a"), Path::new("b%"));
        assert_ne!(b, c);
        assert!(
            c.to_string_lossy()
                .ends_with("%2Fsys%2Ffs%2Fcgroup%2Fa%2Fb%25.lock")
        );
        let d = lock_path(Path::new("/sys/fs/cgroup"), Path::new("a\u{e9} b"));
        assert!(
            d.to_string_lossy().ends_with("%2Fa%C3%A9%20b.lock"),
            "{d:?}"
        );
    }

    /// One root, one key, whatever the spelling.
    #[test]
    fn spellings_of_one_root_share_a_key() {
        let mount = Path::new("/nonexistent-mount");
        let key = lock_path(mount, Path::new("nestguard/x"));
        for spelling in [
            "nestguard/x/",
            "nestguard//x",
            "nestguard/./x",
            "nestguard/x/.",
        ] {
            assert_eq!(lock_path(mount, Path::new(spelling)), key, "{spelling}");
        }
        assert_eq!(
            lock_path(Path::new("/nonexistent-mount//"), Path::new("nestguard/x")),
            key
        );
    }

    /// Spellings that could name another cgroup are refused before any
    /// lock is taken.
    #[test]
    fn claims_refuse_roots_that_are_not_plain() {
        let mount = Path::new("/nonexistent-mount");
        for bad in [
            "",
            ".",
            "./nestguard",
            "x/../nestguard",
            "/nestguard",
            "//nestguard",
            "..",
        ] {
            let err = claim(mount, Path::new(bad), "t").unwrap_err();
            assert!(
                err.to_string().contains("must be a relative path"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn one_claim_per_process_is_shared() {
        if !rustix::process::geteuid().is_root() {
            return; // /run is root's; the agent tests cover the conflict
        }
        let root = PathBuf::from(format!("nestguard-owner-unit-{}", std::process::id()));
        let mount = Path::new("/nonexistent-mount");
        let first = claim(mount, &root, "first").unwrap();
        let second = claim(mount, &root, "second").unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(held(mount, &root));
        let path = first.path().to_path_buf();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("owner=first")
        );
        drop(first);
        drop(second);
        assert!(!held(mount, &root));
        assert!(
            !path.exists(),
            "the lock file is removed with the last claim"
        );
    }
}
