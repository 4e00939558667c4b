//! The one error type of the cgroups module.
//!
//! Every variant that touches the file system names the operation, the path
//! and the OS error, because the first thing an operator does with a cgroup
//! failure is look at that file.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::container_id::ContainerIdError;

/// What went wrong in a cgroup operation.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// A system call on a cgroup file or directory failed.
    #[error("failed to {op} '{path}': {source}")]
    Io {
        /// The operation, e.g. "write", "create directory", "statfs".
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A cgroup file held something we could not parse.
    #[error("failed to parse '{path}': expected {expected}, found '{found}'")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the file should hold.
        expected: &'static str,
        /// The offending text (cgroup files never hold secrets).
        found: String,
    },
    /// No cgroup hierarchy was found at the mount root.
    #[error("no cgroup hierarchy is mounted at '{0}' (expected cgroup2, or cgroup v1 controllers)")]
    NotMounted(PathBuf),
    /// A cgroup v1 controller we need is not mounted.
    #[error("cgroup v1 controller '{controller}' is not mounted at '{path}'")]
    ControllerNotMounted {
        /// The controller name.
        controller: &'static str,
        /// Where we looked.
        path: PathBuf,
    },
    /// A cgroup v2 controller a limit needs is not in `cgroup.controllers`.
    #[error("cgroup v2 controller '{controller}' is not available in '{path}'")]
    ControllerUnavailable {
        /// The controller name.
        controller: &'static str,
        /// The `cgroup.controllers` file that lacks it.
        path: PathBuf,
    },
    /// The container has no cgroup (never created, or already destroyed).
    #[error("container '{id}' has no cgroup at '{path}'")]
    NotFound {
        /// The container in dotted form.
        id: String,
        /// The missing directory.
        path: PathBuf,
    },
    /// create() for a container whose cgroup already exists.
    #[error("cgroup of container '{id}' already exists at '{path}'")]
    AlreadyExists {
        /// The container in dotted form.
        id: String,
        /// The existing directory.
        path: PathBuf,
    },
    /// create() for a nested container whose parent has no cgroup.
    #[error("parent of container '{id}' has no cgroup at '{path}'")]
    ParentMissing {
        /// The container in dotted form.
        id: String,
        /// The parent's missing directory.
        path: PathBuf,
    },
    /// The container ID failed Mesos' validation.
    #[error(transparent)]
    InvalidId(#[from] ContainerIdError),
    /// A limit or option was out of range.
    #[error("invalid cgroup setting: {0}")]
    Invalid(String),
    /// Another process owns the cgroup root (see `cgroups::owner`).
    #[error(
        "cgroup root '{root}' is owned by another agent ({owner}; lock file '{lock}'): refusing to manage it"
    )]
    Owned {
        /// The root (mount root joined with `cgroups_root`).
        root: PathBuf,
        /// What the owner recorded: its pid and description.
        owner: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// Processes did not leave, a freeze did not complete, or a directory
    /// stayed busy within the timeout.
    #[error("timed out after {timeout:?} waiting for '{path}' to {what}")]
    Timeout {
        /// What we waited for, e.g. "become empty".
        what: &'static str,
        /// The cgroup directory or file.
        path: PathBuf,
        /// How long we waited.
        timeout: Duration,
    },
}

impl CgroupError {
    /// Wraps an OS error with the operation and path.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Wraps a rustix errno with the operation and path.
    pub(crate) fn sys(
        op: &'static str,
        path: impl Into<PathBuf>,
        errno: rustix::io::Errno,
    ) -> Self {
        Self::io(op, path, io::Error::from(errno))
    }
}

/// Shorthand for results of this module.
pub type Result<T, E = CgroupError> = std::result::Result<T, E>;
