//! The isolators' error type.

use std::path::PathBuf;

use crate::credentials::injection::InjectionError;
use crate::isolation::cgroups::CgroupError;

/// Why an isolator call failed. Texts name the container, file or parameter
/// and never contain a secret.
#[derive(Debug, thiserror::Error)]
pub enum IsolatorError {
    /// A module parameter is unknown or malformed.
    #[error("isolator parameter '{key}': expected {expected}, got '{found}'")]
    Parameter {
        /// The parameter key.
        key: String,
        /// What was expected.
        expected: &'static str,
        /// What was given.
        found: String,
    },
    /// `user_namespace_range` is not a usable pool.
    #[error(transparent)]
    UserNamespace(#[from] crate::isolation::id_map::IdMapError),
    /// Launch infos of two isolators conflict, or one sets a field isolators
    /// must not set (Mesos' merge rules).
    #[error("{0}")]
    LaunchInfoConflict(String),
    /// A volume is invalid (Mesos' validation texts).
    #[error("{0}")]
    Volume(String),
    /// A volume path leaves its sandbox (`..`, a symlink, an absolute path).
    #[error("SANDBOX_PATH volume '{path}' escapes the sandbox '{sandbox}': {reason}")]
    Escape {
        /// The requested path.
        path: String,
        /// The sandbox it must stay in.
        sandbox: PathBuf,
        /// How it escapes.
        reason: String,
    },
    /// The container's configuration is not supported by this isolator.
    #[error("{0}")]
    Invalid(String),
    /// A cgroup operation failed.
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    /// Credentials could not be injected.
    #[error(transparent)]
    Injection(#[from] InjectionError),
    /// A file-system operation failed.
    #[error("{op} '{path}': {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A call for a container the isolator does not know.
    #[error("unknown container '{0}'")]
    UnknownContainer(String),
    /// One isolator of a composite failed; names it and the phase.
    #[error("isolator '{isolator}' failed to {phase} container '{container}': {source}")]
    Failed {
        /// The isolator's name.
        isolator: &'static str,
        /// `prepare`, `isolate`, ….
        phase: &'static str,
        /// The container (dotted).
        container: String,
        /// The underlying error.
        #[source]
        source: Box<IsolatorError>,
    },
}

impl IsolatorError {
    /// Wraps an I/O error with the operation and path.
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { op, path, source }
    }

    /// The innermost error (below composite wrapping).
    pub fn root(&self) -> &IsolatorError {
        match self {
            Self::Failed { source, .. } => source.root(),
            other => other,
        }
    }
}

/// Shorthand for results of the isolators.
pub type Result<T, E = IsolatorError> = std::result::Result<T, E>;
