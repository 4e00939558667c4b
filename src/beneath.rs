//! The last line of defence for paths built from IDs: directories are
//! created one component at a time below a root that must contain them.
//!
//! Every ID that becomes a path is validated first (Mesos' `validateID`,
//! [`crate::validation`]); this module protects what validation might miss
//! (a future caller that forgets it, a symbolic link planted in the work
//! directory). Each component is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`
//! relative to its parent's descriptor and missing ones are made with
//! `mkdirat` on that descriptor, so neither `..`, an absolute component nor
//! any symbolic link below the root can lead outside it, and nothing is
//! created before the whole walk proved it stays inside. The root itself is
//! opened normally: it is the operator's `--work_dir` and may be a link.
//!
//! `openat2` is wrapped by `rustix`; the component walk is hand-rolled
//! because no well-kept crate offers creation under `RESOLVE_BENEATH`.

#![forbid(unsafe_code)]

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// Why a path was refused or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    /// A component that is not one plain name (`/`, `.`, `..`, NUL, empty).
    #[error("'{component}' is not a plain path component (building a path under '{root}')")]
    Component {
        /// The root the path must stay under.
        root: PathBuf,
        /// The offending component (lossy UTF-8).
        component: String,
    },
    /// The path is not under the root at all, or leaves it.
    #[error("'{path}' is not below '{root}': {reason}")]
    Escape {
        /// The path.
        path: PathBuf,
        /// The root.
        root: PathBuf,
        /// What was found (a symbolic link, `..`, another root).
        reason: String,
    },
    /// A filesystem call failed.
    #[error("{op} '{path}': {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// Where.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

type Result<T> = std::result::Result<T, BeneathError>;

/// Whether `name` is one plain path component: not empty, not `.` or `..`,
/// no `/` and no NUL.
pub fn is_plain_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// `root/c1/c2/...` after checking that every component is plain.
pub fn join(root: &Path, components: &[&str]) -> Result<PathBuf> {
    let mut path = root.to_path_buf();
    for component in components {
        if !is_plain_component(component) {
            return Err(BeneathError::Component {
                root: root.to_path_buf(),
                component: (*component).to_owned(),
            });
        }
        path.push(component);
    }
    Ok(path)
}

/// The components of `path` below `root`; refuses a path elsewhere and any
/// `..`, NUL or absolute component in the rest.
fn relative_parts(root: &Path, path: &Path) -> Result<Vec<std::ffi::OsString>> {
    let escape = |reason: &str| BeneathError::Escape {
        path: path.to_path_buf(),
        root: root.to_path_buf(),
        reason: reason.to_owned(),
    };
    let rest = path
        .strip_prefix(root)
        .map_err(|_| escape("it names another directory"))?;
    let mut parts = Vec::new();
    for component in rest.components() {
        match component {
            Component::Normal(p) if !p.as_encoded_bytes().contains(&0) => parts.push(p.to_owned()),
            Component::Normal(_) => return Err(escape("a component holds a NUL byte")),
            Component::CurDir => {}
            Component::ParentDir => return Err(escape("'..' is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(escape("an absolute component"));
            }
        }
    }
    Ok(parts)
}

/// Creates `path` and its missing parents below `root` (created first if
/// missing, like `create_dir_all`), with `mode` (before umask) for the
/// directories it makes. Refuses, before creating anything below `root`,
/// a path outside `root`, `..`, and every symbolic link below `root`.
///
/// Returns the directory opened (read-only): whatever is done to it next
/// (`fchown`, `fchmod`, files made with `openat`) goes through this
/// descriptor, never through the path again, which its owner may have
/// swapped for a link since.
pub fn create_dir_all(root: &Path, path: &Path, mode: u32) -> Result<OwnedFd> {
    std::fs::create_dir_all(root).map_err(|source| BeneathError::Io {
        op: "create directory",
        path: root.to_path_buf(),
        source,
    })?;
    walk(root, path, Some(mode))
}

/// Opens the existing directory `path` below `root` (read-only), refusing
/// what [`create_dir_all`] refuses.
pub fn open_dir(root: &Path, path: &Path) -> Result<OwnedFd> {
    walk(root, path, None)
}

/// Removes `path` (a directory tree or a file, which must lie strictly
/// below `root`) without ever following a symbolic link: the walk to its
/// parent refuses links like [`create_dir_all`], and the tree is removed
/// relative to directory descriptors ([`remove_tree_at`]). A missing
/// `path` is not an error.
pub fn remove_dir_all(root: &Path, path: &Path) -> Result<()> {
    let parts = relative_parts(root, path)?;
    let Some((name, _)) = parts.split_last() else {
        return Err(BeneathError::Escape {
            path: path.to_path_buf(),
            root: root.to_path_buf(),
            reason: "the root itself is never removed".to_owned(),
        });
    };
    let parent = path.parent().unwrap_or(root);
    let dir = match open_dir(root, parent) {
        Ok(dir) => dir,
        Err(BeneathError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let dev = rustix::fs::fstat(&dir)
        .map_err(|e| io_error("stat", parent, e))?
        .st_dev;
    remove_tree_at(&dir, name.as_os_str(), dev, 0).map_err(|e| io_error("remove", path, e))
}

/// How deep [`remove_tree_at`] descends: each level holds a descriptor, so
/// a tenant's endlessly nested directories must not exhaust the agent's
/// descriptors or stack; a deeper tree is left in place with an error.
const MAX_REMOVE_DEPTH: usize = 256;

/// Removes `name` in `dir`: unlinks it if it is not a directory (a
/// symbolic link is unlinked, never followed); otherwise opens it with
/// `O_NOFOLLOW`, empties it recursively through that descriptor and removes
/// it. Never crosses into another filesystem (`dev`: a mount point in the
/// tree is left, with an error).
///
/// Hand-rolled on `rustix` because `std::fs::remove_dir_all` takes a path
/// (fine for its last component only), and `cap-std`'s `Dir::remove_dir_all`
/// would still follow links that stay inside its directory and brings a
/// family of crates for these thirty lines.
fn remove_tree_at(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    dev: u64,
    depth: usize,
) -> std::result::Result<(), rustix::io::Errno> {
    use rustix::fs::AtFlags;
    use rustix::io::Errno;
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        Err(Errno::ISDIR | Errno::PERM) => {}
        Err(e) => return Err(e),
    }
    if depth >= MAX_REMOVE_DEPTH {
        return Err(Errno::NAMETOOLONG);
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let child = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    if rustix::fs::fstat(&child)?.st_dev != dev {
        return Err(Errno::XDEV);
    }
    // Names first, removal after: the listing is not disturbed by the
    // removals it drives.
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&child)? {
        let entry = entry?;
        let entry_name = entry.file_name().to_bytes();
        if entry_name != b"." && entry_name != b".." {
            names.push(std::ffi::OsStr::from_bytes(entry_name).to_owned());
        }
    }
    for entry in &names {
        remove_tree_at(&child, entry, dev, depth + 1)?;
    }
    drop(child);
    match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Opens the plain name `name` in the directory `dir` with `openat2(RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: never through a symbolic link (the
/// last component included, so `O_CREAT` cannot create a link's target), never
/// outside `dir`. `at` names the file in errors only.
///
/// For work inside a directory its owner can change (a sandbox): the caller
/// opened `dir` once ([`open_dir`]), and what it does next goes through the
/// returned descriptor (`fstat`, `fchown`, `fchmod`), never the path again.
pub fn open_at(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &str,
    flags: OFlags,
    mode: u32,
    at: &Path,
) -> Result<OwnedFd> {
    if !is_plain_component(name) {
        return Err(BeneathError::Component {
            root: at.to_path_buf(),
            component: name.to_owned(),
        });
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
        resolve,
    ) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::LOOP) => Err(BeneathError::Escape {
            path: at.to_path_buf(),
            root: at.parent().unwrap_or(at).to_path_buf(),
            reason: format!("'{}' is a symbolic link", at.display()),
        }),
        Err(e) => Err(io_error("open", at, e)),
    }
}

fn io_error(op: &'static str, at: &Path, e: rustix::io::Errno) -> BeneathError {
    BeneathError::Io {
        op,
        path: at.to_path_buf(),
        source: e.into(),
    }
}

/// Opens every component of `path` below `root` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` relative to its parent,
/// making missing ones with `mode` when given.
fn walk(root: &Path, path: &Path, mode: Option<u32>) -> Result<OwnedFd> {
    let parts = relative_parts(root, path)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let mut dir: OwnedFd =
        rustix::fs::open(root, flags, Mode::empty()).map_err(|e| io_error("open", root, e))?;
    let mut at = root.to_path_buf();
    for part in &parts {
        at.push(part);
        let mut opened = rustix::fs::openat2(&dir, part.as_os_str(), flags, Mode::empty(), resolve);
        if let (Err(rustix::io::Errno::NOENT), Some(mode)) = (&opened, mode) {
            match rustix::fs::mkdirat(&dir, part.as_os_str(), Mode::from_raw_mode(mode)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(io_error("create directory", &at, e)),
            }
            opened = rustix::fs::openat2(&dir, part.as_os_str(), flags, Mode::empty(), resolve);
        }
        dir = match opened {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP) => {
                return Err(BeneathError::Escape {
                    path: path.to_path_buf(),
                    root: root.to_path_buf(),
                    reason: format!("'{}' is a symbolic link", at.display()),
                });
            }
            Err(rustix::io::Errno::XDEV) => {
                return Err(BeneathError::Escape {
                    path: path.to_path_buf(),
                    root: root.to_path_buf(),
                    reason: format!("'{}' leads outside", at.display()),
                });
            }
            Err(e) => return Err(io_error("open", &at, e)),
        };
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components() {
        for bad in ["", ".", "..", "a/b", "/a", "a\0b"] {
            assert!(!is_plain_component(bad), "{bad:?}");
        }
        for good in ["a", "...", "a b", "a.b", "é"] {
            assert!(is_plain_component(good), "{good:?}");
        }
        assert!(join(Path::new("/r"), &["a", ".."]).is_err());
        assert_eq!(
            join(Path::new("/r"), &["a", "b"]).unwrap(),
            Path::new("/r/a/b")
        );
    }

    #[test]
    fn creates_below_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        create_dir_all(&root, &root.join("a/b/c"), 0o750).unwrap();
        assert!(root.join("a/b/c").is_dir());
        // `..` and foreign paths are refused before anything is made.
        assert!(create_dir_all(&root, &root.join("a/../../x"), 0o750).is_err());
        assert!(create_dir_all(&root, &dir.path().join("x"), 0o750).is_err());
        assert!(!dir.path().join("x").exists());
        // A symbolic link below the root is never followed.
        std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
        let err = create_dir_all(&root, &root.join("link/escaped"), 0o750).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(!dir.path().join("escaped").exists());
    }

    #[test]
    fn open_at_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let fd = create_dir_all(&root, &root, 0o750).unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let write = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC;
        let err = open_at(
            std::os::fd::AsFd::as_fd(&fd),
            "link",
            write,
            0o600,
            &root.join("link"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert!(open_at(std::os::fd::AsFd::as_fd(&fd), "../x", write, 0o600, &root).is_err());
        open_at(
            std::os::fd::AsFd::as_fd(&fd),
            "new",
            write,
            0o600,
            &root.join("new"),
        )
        .unwrap();
        assert!(root.join("new").is_file());
    }

    #[test]
    fn removes_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(outside.join("keep")).unwrap();
        std::fs::write(outside.join("keep/file"), b"x").unwrap();
        create_dir_all(&root, &root.join("a/b/c"), 0o750).unwrap();
        std::fs::write(root.join("a/b/c/f"), b"x").unwrap();
        // Links inside the tree are unlinked, not followed.
        std::os::unix::fs::symlink(&outside, root.join("a/b/link")).unwrap();
        // A link on the way to the tree is refused.
        std::os::unix::fs::symlink(&outside, root.join("via")).unwrap();
        let err = remove_dir_all(&root, &root.join("via/keep")).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        remove_dir_all(&root, &root.join("a")).unwrap();
        assert!(!root.join("a").exists());
        assert!(outside.join("keep/file").is_file());
        // Missing is fine; the root itself is refused.
        remove_dir_all(&root, &root.join("a")).unwrap();
        assert!(remove_dir_all(&root, &root).is_err());
    }
}
