//! `--audit_log`: the authorizer's decision records, one JSON object per
//! line, in a file rotated by size (PATH → PATH.1, one old file kept).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

use super::abi::Authorizer;
use super::flags::AgentFlags;

/// The open log and its size.
struct State {
    file: File,
    size: u64,
}

/// A JSON-lines file that rotates before a line would take it past
/// `max_size`.
pub struct AuditLog {
    path: PathBuf,
    max_size: u64,
    state: Mutex<State>,
}

/// Opens for appending, created 0600 (records name principals and users),
/// never through a symbolic link, and only a regular file (a FIFO would
/// block every decision).
fn open(path: &Path) -> std::io::Result<State> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(State {
        file,
        size: meta.len(),
    })
}

impl AuditLog {
    /// Opens (appends to) `path`.
    pub fn open(path: &Path, max_size: u64) -> anyhow::Result<AuditLog> {
        let state =
            open(path).with_context(|| format!("{}: cannot open the audit log", path.display()))?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            max_size,
            state: Mutex::new(state),
        })
    }

    /// Appends one record and a newline, rotating first when needed. Errors
    /// are logged, never returned: the decision has been made already.
    pub fn write(&self, record: &[u8]) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let len = record.len() as u64 + 1;
        if state.size > 0 && state.size + len > self.max_size {
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            let rotated = std::fs::rename(&self.path, &old).and_then(|()| open(&self.path));
            match rotated {
                Ok(fresh) => *state = fresh,
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "audit log rotation failed")
                }
            }
        }
        let mut line = Vec::with_capacity(record.len() + 1);
        line.extend_from_slice(record);
        line.push(b'\n');
        match state.file.write_all(&line) {
            Ok(()) => state.size += len,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "audit log write failed")
            }
        }
    }
}

/// Registers the audit callback on `authorizer` when `--audit_log` is set
/// (which needs an authorizer module: `local` makes no decisions to log).
pub fn install(authorizer: Option<&Authorizer>, flags: &AgentFlags) -> anyhow::Result<()> {
    let Some(path) = &flags.audit_log else {
        return Ok(());
    };
    let Some(authorizer) = authorizer else {
        anyhow::bail!("--audit_log needs an authorizer module (--authorizer names none)");
    };
    let log = AuditLog::open(path, flags.audit_log_max_size)?;
    authorizer
        .set_audit(
            Box::new(move |record| log.write(record)),
            flags.audit_sample,
            flags.audit_denials_only,
        )
        .context("registering the audit callback")?;
    tracing::info!(path = %path.display(), "decision audit log on");
    Ok(())
}
