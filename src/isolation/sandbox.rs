//! Sandbox directories as Mesos makes them: mode 0750, owned by the
//! container user, with `stdout` and `stderr` files.

use std::fs::{OpenOptions, Permissions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::command::{self, CommandError};
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
    /// The user is unknown.
    #[error(transparent)]
    User(#[from] CommandError),
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> SandboxError + 'a {
    move |source| SandboxError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `path` (and missing parents) with mode 0750, chowned to `user`
/// when given, and its `stdout`/`stderr` files (0640, same owner). On a
/// chown failure the directory is removed again, as Mesos does.
pub fn create(path: &Path, user: Option<&str>) -> Result<(), SandboxError> {
    create_in(path, user, None)
}

/// [`create`] for a container with its own rootfs: the user is the image's
/// (looked up in `<rootfs>/etc/passwd`, without NSS).
pub fn create_in(
    path: &Path,
    user: Option<&str>,
    rootfs: Option<&Path>,
) -> Result<(), SandboxError> {
    let owner = match (user, rootfs) {
        (Some(name), Some(root)) => Some(command::lookup_user_in_passwd(
            &root.join("etc/passwd"),
            name,
            &[],
        )?),
        (Some(name), None) => Some(command::lookup_user(name, &[])?),
        (None, _) => None,
    };
    std::fs::create_dir_all(path).map_err(io("create directory", path))?;
    std::fs::set_permissions(path, Permissions::from_mode(0o750))
        .map_err(io("chmod 0750", path))?;
    let chown = |p: &Path| -> Result<(), SandboxError> {
        if let Some(o) = &owner {
            std::os::unix::fs::chown(p, Some(o.uid.as_raw()), Some(o.gid.as_raw()))
                .map_err(io("chown", p))?;
        }
        Ok(())
    };
    if let Err(e) = chown(path) {
        let _ = std::fs::remove_dir_all(path);
        return Err(e);
    }
    for name in [STDOUT_FILE, STDERR_FILE] {
        let file = path.join(name);
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o640)
            .open(&file)
            .map_err(io("create", &file))?;
        chown(&file)?;
    }
    Ok(())
}
