//! Bounded reading of the files an operator names (ACLs, credentials, keys,
//! module manifests), and Mesos' rule for flag values that are either the
//! content itself or a file.
//!
//! A path can name `/dev/zero`, a FIFO nobody writes, a terminal or a
//! multi-gigabyte file. Reading one with `read_to_string` hangs or eats the
//! host's memory while the module loads. So every such file is opened with
//! `O_NONBLOCK` (opening a FIFO returns at once), checked with `fstat` to be
//! a regular file, and read through `take(limit + 1)`, so memory stays
//! below the limit whatever the file does while it is read. The limit is
//! [`DEFAULT_MAX_FILE_SIZE`] unless a module's `max_file_size` parameter
//! says otherwise.

#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The size limit for input files unless configured: far above any real
/// ACL or credential file, far below what could hurt a host.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 16 * 1024 * 1024;

/// Why an input file was refused. Texts name the file and what was
/// expected; never any content.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// open(2) or fstat(2) failed.
    #[error("cannot open '{path}': {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A FIFO, device, socket or directory.
    #[error("'{path}' is {kind}, expected a regular file")]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a FIFO", "a character device", ...).
        kind: &'static str,
    },
    /// Larger than the limit.
    #[error(
        "'{path}' is larger than the limit of {limit} bytes (module parameter 'max_file_size')"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// read(2) failed.
    #[error("cannot read '{path}': {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not UTF-8 text.
    #[error("'{path}' is not valid UTF-8")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// A `max_file_size` value that is not a positive number of bytes.
    #[error("'max_file_size' must be a positive number of bytes, not '{0}'")]
    BadLimit(String),
}

type Result<T> = std::result::Result<T, InputError>;

fn kind(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading without blocking on a FIFO and checks that it
/// is a regular file no larger than `limit`; returns it with its metadata
/// (for callers that check permissions before reading).
pub fn open_regular(path: &Path, limit: u64) -> Result<(File, std::fs::Metadata)> {
    let open_err = |source| InputError::Open {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(open_err)?;
    let meta = check_regular(path, &file, limit)?;
    Ok((file, meta))
}

/// Checks with `fstat` that an opened file is a regular file no larger
/// than `limit`.
fn check_regular(path: &Path, file: &File, limit: u64) -> Result<std::fs::Metadata> {
    let meta = file.metadata().map_err(|source| InputError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_file() {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind: kind(meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(meta)
}

/// Reads a file the caller opened itself (e.g. with `openat2` beneath a
/// root; opened `O_NONBLOCK` so a FIFO did not block), checking it is a
/// regular file of at most `limit` bytes. `path` names it in errors.
pub fn read_opened(path: &Path, file: File, limit: u64) -> Result<Vec<u8>> {
    let meta = check_regular(path, &file, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    read_limited(path, file, limit, &mut bytes)?;
    Ok(bytes)
}

/// Reads an opened file to its end, into `buffer`, refusing more than
/// `limit` bytes (a file may grow after `fstat`).
pub fn read_limited(path: &Path, file: File, limit: u64, buffer: &mut Vec<u8>) -> Result<()> {
    file.take(limit.saturating_add(1))
        .read_to_end(buffer)
        .map_err(|source| InputError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if buffer.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(())
}

/// Reads a regular file of at most `limit` bytes.
pub fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (file, meta) = open_regular(path, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    read_limited(path, file, limit, &mut bytes)?;
    Ok(bytes)
}

/// Reads a regular UTF-8 text file of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String> {
    String::from_utf8(read_file(path, limit)?).map_err(|_| InputError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// Parses a `max_file_size` parameter (bytes, > 0).
pub fn parse_limit(value: &str) -> Result<u64> {
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(InputError::BadLimit(value.to_owned())),
    }
}

/// A flag value under Mesos' rule for JSON-valued flags and parameters
/// (`--acls`, `--modules`, `executor_principals`): `file://PATH` or a plain
/// path names a file; text whose first non-blank character is `{` is the
/// JSON itself. This is the one reader of that rule; every flag and module
/// parameter of that kind goes through [`FlagValue::parse`] (or
/// [`flag_path`] where only a file is accepted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagValue<'a> {
    /// The content itself.
    Inline(&'a str),
    /// A file to read (bounded) for the content.
    File(PathBuf),
}

/// The file a flag value names when it names one: `file://PATH` or `PATH`.
/// For entry points that take only a file (a value starting with `{` is
/// then a path like any other).
pub fn flag_path(value: &str) -> &Path {
    Path::new(value.strip_prefix("file://").unwrap_or(value))
}

impl<'a> FlagValue<'a> {
    /// Classifies `value`.
    pub fn parse(value: &'a str) -> FlagValue<'a> {
        if !value.starts_with("file://") && value.trim_start().starts_with('{') {
            FlagValue::Inline(value)
        } else {
            FlagValue::File(flag_path(value).to_path_buf())
        }
    }

    /// Names where the content comes from, for messages: the file's path,
    /// or `inline` (e.g. the flag's name) for inline content.
    pub fn origin(&self, inline: &str) -> String {
        match self {
            FlagValue::Inline(_) => inline.to_owned(),
            FlagValue::File(path) => path.display().to_string(),
        }
    }

    /// The content: the inline text, or the file read with [`read_text`]
    /// (bounded by `limit`, a regular file only).
    pub fn content(&self, limit: u64) -> Result<std::borrow::Cow<'a, str>> {
        match self {
            FlagValue::Inline(text) => Ok(std::borrow::Cow::Borrowed(text)),
            FlagValue::File(path) => read_text(path, limit).map(std::borrow::Cow::Owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_huge_files_are_refused_fast() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_file(Path::new("/dev/zero"), 1024).unwrap_err();
        assert_eq!(
            err.to_string(),
            "'/dev/zero' is a character device, expected a regular file"
        );
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let started = std::time::Instant::now();
        let err = read_file(&fifo, 1024).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is a FIFO, expected a regular file")
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let err = read_file(dir.path(), 1024).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is a directory, expected a regular file")
        );
        let big = dir.path().join("big");
        let f = File::create(&big).unwrap();
        f.set_len(1025).unwrap();
        let err = read_file(&big, 1024).unwrap_err();
        assert!(
            matches!(err, InputError::TooLarge { limit: 1024, .. }),
            "{err}"
        );
        std::fs::write(&big, "ok").unwrap();
        assert_eq!(read_text(&big, 2).unwrap(), "ok");
    }

    #[test]
    fn flag_values() {
        assert_eq!(
            FlagValue::parse(" {\"a\":1}"),
            FlagValue::Inline(" {\"a\":1}")
        );
        assert_eq!(
            FlagValue::parse("file:///etc/x"),
            FlagValue::File("/etc/x".into())
        );
        assert_eq!(FlagValue::parse("/etc/x"), FlagValue::File("/etc/x".into()));
        assert_eq!(
            FlagValue::parse("file://{x}"),
            FlagValue::File("{x}".into())
        );
        assert_eq!(FlagValue::parse("{}").origin("--acls"), "--acls");
        assert_eq!(FlagValue::parse("file:///etc/x").origin("--acls"), "/etc/x");
        assert_eq!(flag_path("file:///etc/x"), Path::new("/etc/x"));
        assert_eq!(flag_path("{x}"), Path::new("{x}"));
        assert!(parse_limit("0").is_err());
        assert!(parse_limit("x").is_err());
        assert_eq!(parse_limit("4096").unwrap(), 4096);
    }
}
