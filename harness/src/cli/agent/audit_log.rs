//! `--audit_log`: the authorizer's decision records, one JSON object per
//! line, in a file rotated by size (PATH → PATH.1, one old file kept).
//!
//! History one caller cannot push out (issue 25): each subject's denials
//! get a budget of [`SUBJECT_SHARE`]th of the file (`--audit_log_max_size`
//! / 16 bytes); once a subject's denials written to the current file reach
//! it, its further denials there are counted instead of written. The count
//! goes into a summary line, `{"summary":{"subject":..,"suppressed":N,
//! "first":..,"last":..,"budget":..}}` (N: every denial of that subject not
//! written to this file so far), written before the next record of anyone
//! and at the top of the next file when the log rotates. Allowed decisions
//! are always written whole. The library bounds each record (every field a
//! caller controls cut to 256 bytes, with its length and hash), so one
//! subject alone never rotates the log: pushing a record out of PATH.1
//! takes more than `--audit_log_max_size` bytes of records after it, from
//! allowed decisions or the denials of 16 or more subjects.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

use super::abi::Authorizer;

/// One subject's denials take at most this fraction (1/N) of a file (the
/// record that crosses it is still written).
pub const SUBJECT_SHARE: u64 = 16;

/// Smallest `--audit_log_max_size`: a subject's budget holds a few of the
/// largest records the library writes (about 3 KiB).
pub const MIN_MAX_SIZE: u64 = 64 * 1024;

/// Subjects with a budget of their own in one file; the denials of any
/// further subjects share [`OTHER_SUBJECTS`]'s.
const MAX_SUBJECTS: usize = 4096;

/// The budget of the subjects past [`MAX_SUBJECTS`].
const OTHER_SUBJECTS: &str = "<other subjects>";

/// One subject's denials in the current file.
#[derive(Default)]
struct Budget {
    /// Bytes of its denials written.
    written: u64,
    /// Denials counted instead of written.
    suppressed: u64,
    /// `suppressed` as the last summary line gave it.
    reported: u64,
    /// Times of the first and the last suppressed denial.
    first: String,
    last: String,
}

/// The open log, its size and the budgets of its subjects.
struct State {
    file: File,
    size: u64,
    budgets: HashMap<String, Budget>,
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
        budgets: HashMap::new(),
    })
}

/// The subject and the verdict of a record, and its time.
fn head(record: &[u8]) -> Option<(String, bool, String)> {
    let v: serde_json::Value = serde_json::from_slice(record).ok()?;
    Some((
        v["subject"].as_str()?.to_owned(),
        v["allowed"].as_bool()?,
        v["time"].as_str().unwrap_or_default().to_owned(),
    ))
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

    fn budget(&self) -> u64 {
        self.max_size / SUBJECT_SHARE
    }

    /// Appends one record and a newline, rotating first when needed; a
    /// denial over its subject's budget is counted instead (see the module
    /// notes). Errors are logged, never returned: the decision has been
    /// made already.
    pub fn write(&self, record: &[u8]) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((subject, false, time)) = head(record) {
            let known = state.budgets.contains_key(&subject);
            let key = if known || state.budgets.len() < MAX_SUBJECTS {
                subject
            } else {
                OTHER_SUBJECTS.to_owned()
            };
            let budget = self.budget();
            let entry = state.budgets.entry(key).or_default();
            if entry.written >= budget {
                entry.suppressed += 1;
                if entry.first.is_empty() {
                    entry.first.clone_from(&time);
                }
                entry.last = time;
                return;
            }
            entry.written += record.len() as u64 + 1;
        }
        self.write_summaries(&mut state);
        self.append(&mut state, record);
    }

    /// A summary line for each subject with denials counted since its last
    /// one.
    fn write_summaries(&self, state: &mut State) {
        let budget = self.budget();
        let lines: Vec<Vec<u8>> = state
            .budgets
            .iter_mut()
            .filter(|(_, b)| b.suppressed > b.reported)
            .map(|(subject, b)| {
                b.reported = b.suppressed;
                serde_json::json!({"summary": {
                    "subject": subject,
                    "suppressed": b.suppressed,
                    "first": b.first,
                    "last": b.last,
                    "budget": budget,
                }})
                .to_string()
                .into_bytes()
            })
            .collect();
        for line in lines {
            self.append(state, &line);
        }
    }

    /// Appends `record` and a newline, rotating first when it would take
    /// the file past the limit.
    fn append(&self, state: &mut State, record: &[u8]) {
        let len = record.len() as u64 + 1;
        if state.size > 0 && state.size + len > self.max_size {
            self.rotate(state);
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

    /// PATH → PATH.1 and a fresh PATH with fresh budgets, whose first lines
    /// are the summaries the old file had not written yet.
    fn rotate(&self, state: &mut State) {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        let rotated = std::fs::rename(&self.path, &old).and_then(|()| open(&self.path));
        match rotated {
            Ok(fresh) => {
                let mut budgets = std::mem::replace(state, fresh).budgets;
                budgets.retain(|_, b| b.suppressed > b.reported);
                for b in budgets.values_mut() {
                    // Counts of the old file, not a budget in the new one.
                    b.written = 0;
                }
                state.budgets = budgets;
                self.write_summaries(state);
                state.budgets.clear();
            }
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "audit log rotation failed")
            }
        }
    }
}

impl Drop for AuditLog {
    /// The last counts, when the log is closed.
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.write_summaries(&mut state);
    }
}

/// What the agent's `--audit_*` flags ask of the audit log: plain values,
/// so this module does not depend on the flag parser (which depends on it for
/// [`MIN_MAX_SIZE`]).
pub struct AuditSettings<'a> {
    /// `--audit_log`: no log when `None`.
    pub path: Option<&'a Path>,
    /// `--audit_log_max_size`.
    pub max_size: u64,
    /// `--audit_sample`: one decision in N.
    pub sample: u32,
    /// `--audit_denials_only`.
    pub denials_only: bool,
}

/// Registers the audit callback on `authorizer` when `--audit_log` is set
/// (which needs an authorizer module: `local` makes no decisions to log).
pub fn install(authorizer: Option<&Authorizer>, settings: &AuditSettings) -> anyhow::Result<()> {
    let Some(path) = settings.path else {
        return Ok(());
    };
    let Some(authorizer) = authorizer else {
        anyhow::bail!("--audit_log needs an authorizer module (--authorizer names none)");
    };
    let log = AuditLog::open(path, settings.max_size)?;
    authorizer
        .set_audit(
            Box::new(move |record| log.write(record)),
            settings.sample,
            settings.denials_only,
        )
        .context("registering the audit callback")?;
    tracing::info!(path = %path.display(), "decision audit log on");
    Ok(())
}
