//! Mesos' checkpoint files: atomic writes and the length-prefixed protobuf
//! framing (`stout/protobuf.hpp`).
//!
//! A protobuf checkpoint is a 4-byte native-endian length followed by the
//! serialized message. Text checkpoints (`pid`, `status`) are raw bytes.
//! Every write goes to a temporary file in the same directory and is renamed
//! over the target, so a reader sees the old or the new content, never a mix.
//! How far that holds is the writer's choice ([`Outlives`]): a rename alone
//! outlives any process crash (the page cache is the kernel's); fsync of the
//! file and of its directory also outlives a host crash, at a disk flush each.

#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use prost::Message;

/// A checkpoint that could not be written or read; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A filesystem call failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation that failed (e.g. "create temporary file in").
        op: &'static str,
        /// The file or directory it failed on.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is shorter than its length prefix says.
    #[error("checkpoint {path} is truncated: expected {expected} bytes, found {found}")]
    Truncated {
        /// The checkpoint file.
        path: PathBuf,
        /// Bytes the framing promised.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// Bytes follow the single record.
    #[error("checkpoint {path} has {extra} bytes after its record")]
    TrailingBytes {
        /// The checkpoint file.
        path: PathBuf,
        /// How many.
        extra: usize,
    },
    /// The record does not decode as the expected message.
    #[error("checkpoint {path} does not decode as {message}: {source}")]
    Decode {
        /// The checkpoint file.
        path: PathBuf,
        /// The message type expected.
        message: &'static str,
        /// The decoder's error.
        #[source]
        source: prost::DecodeError,
    },
    /// A message larger than [`MAX_RECORD`] (far more than any real
    /// checkpoint), so it is never written and never read back.
    #[error(
        "message for {path} is {len} bytes, more than a checkpoint record may hold ({MAX_RECORD} bytes)"
    )]
    TooLarge {
        /// The checkpoint file.
        path: PathBuf,
        /// The encoded length.
        len: usize,
    },
    /// The file is not a regular file or larger than [`MAX_RECORD`] plus
    /// its prefix: it is refused before it is read (a link to `/dev/zero`
    /// or a huge file must not exhaust the agent's memory).
    #[error("checkpoint {path}: {reason}")]
    Unreadable {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong (names no content).
        reason: String,
    },
}

/// The largest record written or read: checkpoints hold a few protobuf
/// messages (infos, configs, a termination) of a few KiB; the cap is
/// generous for task data and keeps a damaged or hostile file from
/// exhausting memory on recovery.
pub const MAX_RECORD: usize = 4 * 1024 * 1024;

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> CheckpointError + 'a {
    move |source| CheckpointError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// What a checkpoint must outlive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outlives {
    /// A crash of any process, the agent's included (kill -9): temp file and
    /// rename, no flush. The state of running containers (their config,
    /// launch info, pid, exit status, termination): a host crash ends every
    /// container, so their state has nothing to describe afterwards, and
    /// Mesos writes the same files without a sync (`slave/state.hpp`:
    /// `checkpoint(..., sync = false)`). A flush here cost a launch two to
    /// eleven disk flushes on the agent's path (issue 29). Readers of such
    /// files take an empty or short one, which only a host crash can leave,
    /// as a container that is gone.
    ProcessCrash,
    /// A host crash too: fsync of the temporary file before the rename and of
    /// the directory after it. The agent's own records that a restarted host
    /// still needs (its id, frameworks, pods, status updates) and a pod's
    /// user-namespace range.
    HostCrash,
}

/// Writes `bytes` to `path` atomically (temp file, rename), and with
/// [`Outlives::HostCrash`] durably (fsync before the rename, fsync of the
/// directory after it).
pub fn write_atomic(path: &Path, bytes: &[u8], outlives: Outlives) -> Result<(), CheckpointError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".checkpoint-")
        .tempfile_in(dir)
        .map_err(io("create temporary file in", dir))?;
    tmp.write_all(bytes).map_err(io("write", tmp.path()))?;
    if outlives == Outlives::HostCrash {
        tmp.as_file().sync_all().map_err(io("fsync", tmp.path()))?;
    }
    tmp.persist(path).map_err(|e| CheckpointError::Io {
        op: "rename temporary file to",
        path: path.to_path_buf(),
        source: e.error,
    })?;
    if outlives == Outlives::HostCrash {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io("fsync directory", dir))?;
    }
    Ok(())
}

/// Frames a message as Mesos does: native-endian `u32` length, then bytes.
pub fn frame<M: Message>(message: &M, path: &Path) -> Result<Vec<u8>, CheckpointError> {
    let len = message.encoded_len();
    let prefix = u32::try_from(len)
        .ok()
        .filter(|_| len <= MAX_RECORD)
        .ok_or_else(|| CheckpointError::TooLarge {
            path: path.to_path_buf(),
            len,
        })?;
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(&prefix.to_ne_bytes());
    message.encode_raw(&mut out);
    Ok(out)
}

/// Writes one protobuf record to `path` atomically.
pub fn write_message<M: Message>(
    path: &Path,
    message: &M,
    outlives: Outlives,
) -> Result<(), CheckpointError> {
    write_atomic(path, &frame(message, path)?, outlives)
}

/// Reads the single protobuf record of `path`.
pub fn read_message<M: Message + Default>(path: &Path) -> Result<M, CheckpointError> {
    let bytes = read_bounded(path, MAX_RECORD as u64 + 4)?;
    decode_record(&bytes, path)
}

/// Reads a checkpoint file of at most `limit` bytes through
/// [`crate::input`]: not blocking on a FIFO, refusing devices and files
/// beyond the limit before reading them.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, CheckpointError> {
    use crate::input::InputError;
    crate::input::read_file(path, limit).map_err(|e| match e {
        InputError::Open { source, .. } | InputError::Read { source, .. } => CheckpointError::Io {
            op: "read",
            path: path.to_path_buf(),
            source,
        },
        InputError::TooLarge { limit, .. } => CheckpointError::Unreadable {
            path: path.to_path_buf(),
            reason: format!("larger than {limit} bytes"),
        },
        InputError::NotRegular { kind, .. } => CheckpointError::Unreadable {
            path: path.to_path_buf(),
            reason: format!("is {kind}, expected a regular file"),
        },
        e => CheckpointError::Unreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
    })
}

/// Decodes the single framed record in `bytes` (read from `path`).
pub fn decode_record<M: Message + Default>(
    bytes: &[u8],
    path: &Path,
) -> Result<M, CheckpointError> {
    let truncated = |expected| CheckpointError::Truncated {
        path: path.to_path_buf(),
        expected,
        found: bytes.len(),
    };
    let prefix: [u8; 4] = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or(truncated(4))?;
    let len = u32::from_ne_bytes(prefix) as usize;
    let body = bytes.get(4..4 + len).ok_or(truncated(4 + len))?;
    let extra = bytes.len() - 4 - len;
    if extra != 0 {
        return Err(CheckpointError::TrailingBytes {
            path: path.to_path_buf(),
            extra,
        });
    }
    M::decode(body).map_err(|source| CheckpointError::Decode {
        path: path.to_path_buf(),
        message: std::any::type_name::<M>(),
        source,
    })
}

/// Writes a text checkpoint (`pid`, `status`) atomically.
pub fn write_text(path: &Path, text: &str, outlives: Outlives) -> Result<(), CheckpointError> {
    write_atomic(path, text.as_bytes(), outlives)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::slave::ContainerTermination;

    #[test]
    fn round_trip_and_framing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("termination");
        let t = ContainerTermination {
            status: Some(256),
            message: Some("exited".into()),
            ..Default::default()
        };
        write_message(&path, &t, Outlives::HostCrash).unwrap();
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(&raw[..4], &(t.encoded_len() as u32).to_ne_bytes());
        assert_eq!(read_message::<ContainerTermination>(&path).unwrap(), t);
        // Nothing but the target is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A checkpoint that links to /dev/zero, is a FIFO or is huge is
    /// refused at once with an error naming it, instead of being read.
    #[test]
    fn hostile_checkpoint_files_are_refused_before_reading() {
        let started = std::time::Instant::now();
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("executor.info");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = read_message::<ContainerTermination>(&zero).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("executor.info: is a character device, expected a regular file"),
            "{err}"
        );
        let fifo = dir.path().join("config");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read_message::<ContainerTermination>(&fifo).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");
        let huge = dir.path().join("framework.info");
        let file = File::create(&huge).unwrap();
        file.set_len(1 << 40).unwrap(); // sparse: 1 TiB claimed
        let err = read_message::<ContainerTermination>(&huge).unwrap_err();
        assert!(
            err.to_string().contains(&format!(
                "framework.info: larger than {} bytes",
                MAX_RECORD + 4
            )),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        // Never written either.
        let big = ContainerTermination {
            message: Some("x".repeat(MAX_RECORD + 1)),
            ..Default::default()
        };
        let err = write_message(&dir.path().join("t"), &big, Outlives::ProcessCrash).unwrap_err();
        assert!(matches!(err, CheckpointError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn truncated_and_trailing_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let mut bytes = frame(
            &ContainerTermination {
                status: Some(9),
                ..Default::default()
            },
            &path,
        )
        .unwrap();
        bytes.pop();
        assert!(matches!(
            decode_record::<ContainerTermination>(&bytes, &path),
            Err(CheckpointError::Truncated { .. })
        ));
        bytes.extend_from_slice(&[0, 0]);
        assert!(matches!(
            decode_record::<ContainerTermination>(&bytes, &path),
            Err(CheckpointError::TrailingBytes { .. })
        ));
        assert!(matches!(
            decode_record::<ContainerTermination>(&[1], &path),
            Err(CheckpointError::Truncated { .. })
        ));
    }
}
