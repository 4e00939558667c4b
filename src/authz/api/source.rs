//! Where a policy comes from and how it loads: [`Source`] (Mesos' `--acls`
//! flag forms), [`load`] (read → parse → validate → compile), and the errors
//! of a load and of module parameters.

use std::path::PathBuf;

use crate::authz::compile::Policy;
use crate::authz::parse::{ParseError, ParseMode, parse};
use crate::authz::validate::{ValidateError, validate};
use crate::input::{self, DEFAULT_MAX_FILE_SIZE, FlagValue, InputError};

/// Where ACLs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// JSON text.
    Inline(String),
    /// A file, re-read on reload.
    File(PathBuf),
}

impl Source {
    /// Interprets a value the way Mesos' `--acls` flag does: `file://PATH`
    /// or a path names a file, text starting with `{` is JSON.
    pub fn from_flag(value: &str) -> Source {
        match FlagValue::parse(value) {
            FlagValue::Inline(text) => Source::Inline(text.to_owned()),
            FlagValue::File(path) => Source::File(path),
        }
    }

    pub(super) fn origin(&self) -> String {
        match self {
            Source::Inline(_) => "<inline>".to_owned(),
            Source::File(p) => p.display().to_string(),
        }
    }
}

/// Why ACLs did not load. A failed load never yields an authorizer (fail
/// closed) and a failed reload keeps the previous policy.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read: missing, not a regular file (a FIFO,
    /// `/dev/zero`), larger than `max_file_size`, not UTF-8.
    #[error("{path}: cannot read ACLs: {source}")]
    Read {
        /// The file.
        path: String,
        /// What went wrong.
        #[source]
        source: InputError,
    },
    /// The JSON is malformed or does not fit `mesos.ACLs`.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Mesos' validation rejects the ACLs.
    #[error(transparent)]
    Invalid(#[from] ValidateError),
}

/// Why module parameters did not yield an authorizer.
#[derive(Debug, thiserror::Error)]
pub enum ParameterError {
    /// No `acls` parameter.
    #[error("No ACLs for default authorizer provided")]
    Missing,
    /// The `acls` parameter did not load.
    #[error("Contents of 'acls' parameter could not be parsed into a valid ACLs object: {0}")]
    Invalid(#[source] LoadError),
    /// A bad `max_file_size` parameter.
    #[error(transparent)]
    MaxFileSize(InputError),
}

/// Loads, validates and compiles ACLs; a file may hold at most
/// [`DEFAULT_MAX_FILE_SIZE`] bytes.
pub fn load(source: &Source, mode: ParseMode) -> Result<Policy, LoadError> {
    load_limited(source, mode, DEFAULT_MAX_FILE_SIZE)
}

/// [`load`] with a file size limit: only a regular file of at most
/// `max_file_size` bytes is read (see [`crate::input`]).
pub fn load_limited(
    source: &Source,
    mode: ParseMode,
    max_file_size: u64,
) -> Result<Policy, LoadError> {
    let origin = source.origin();
    let text;
    let json = match source {
        Source::Inline(t) => t.as_str(),
        Source::File(path) => {
            text = input::read_text(path, max_file_size).map_err(|source| LoadError::Read {
                path: origin.clone(),
                source,
            })?;
            text.as_str()
        }
    };
    let doc = parse(json, &origin, mode)?;
    validate(&doc, &origin)?;
    Ok(Policy::compile(doc, origin))
}
