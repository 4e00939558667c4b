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

use std::os::fd::OwnedFd;
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
pub fn create_dir_all(root: &Path, path: &Path, mode: u32) -> Result<()> {
    let parts = relative_parts(root, path)?;
    let io = |op, at: &Path| {
        let at = at.to_path_buf();
        move |e: rustix::io::Errno| BeneathError::Io {
            op,
            path: at,
            source: e.into(),
        }
    };
    std::fs::create_dir_all(root).map_err(|source| BeneathError::Io {
        op: "create directory",
        path: root.to_path_buf(),
        source,
    })?;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let mut dir: OwnedFd =
        rustix::fs::open(root, flags, Mode::empty()).map_err(io("open", root))?;
    let mut at = root.to_path_buf();
    for part in &parts {
        at.push(part);
        let mut opened = rustix::fs::openat2(&dir, part.as_os_str(), flags, Mode::empty(), resolve);
        if matches!(opened, Err(rustix::io::Errno::NOENT)) {
            match rustix::fs::mkdirat(&dir, part.as_os_str(), Mode::from_raw_mode(mode)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(io("create directory", &at)(e)),
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
            Err(e) => return Err(io("open", &at)(e)),
        };
    }
    Ok(())
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
}
