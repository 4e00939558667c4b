//! Framework IDs bound to their principal for good.
//!
//! Mesos' master refuses a principal change for a framework ID it knows
//! ("Changing framework's principal is not allowed.",
//! src/master/validation.cpp:591-617 `validateUpdate`). The pod endpoint is
//! the master's stand-in here, and its callers choose the framework ID, so
//! the agent binds an ID to the principal of the first pod launched with it
//! and keeps the binding after that pod ends: another principal can never
//! take the ID over (its sandboxes would land under the owner's
//! `frameworks/<id>/`, and the owner would be locked out while it holds it).
//!
//! Each binding is a checkpoint, `<work_dir>/meta/frameworks/<id>.info`: a
//! `FrameworkInfo` with the ID, principal and user only (what VIEW_FRAMEWORK
//! decides on), written atomically before anything of the pod exists. The
//! bindings are read before anything else is recovered; one that cannot be
//! read, is not a regular file or names another framework stops the agent
//! with an error naming the file, never a silent unbinding.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use nestguard::checkpoint::CheckpointError;

use nestguard::proto::mesos::{FrameworkId, FrameworkInfo};

/// A binding file's name is the framework ID and this suffix; the atomic
/// writer's temporary files (`.checkpoint-XXXXXX`) never end so.
const SUFFIX: &str = ".info";

/// Mesos' text for a principal change (validation.cpp:617).
pub const PRINCIPAL_CHANGE: &str = "Changing framework's principal is not allowed.";

/// A binding that could not be read or recorded.
#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    /// A binding file that cannot be trusted: the agent does not start.
    #[error(
        "{path}: the binding of framework '{framework}' to its principal is damaged: {reason}; the agent does not start rather than unbind the framework ID (repair the file, or remove it to release the ID on purpose)"
    )]
    Damaged {
        /// The binding file.
        path: PathBuf,
        /// The framework ID its name says.
        framework: String,
        /// What is wrong.
        reason: String,
    },
    /// The bindings directory could not be read or made.
    #[error("framework bindings in {dir}: {reason}")]
    Directory {
        /// `<work_dir>/meta/frameworks`.
        dir: PathBuf,
        /// What failed.
        reason: String,
    },
    /// A new binding could not be checkpointed (the pod is not launched).
    #[error("recording the binding of framework '{framework}': {source}")]
    Write {
        /// The framework ID.
        framework: String,
        /// The checkpoint's error.
        #[source]
        source: CheckpointError,
    },
}

/// The framework IDs the agent bound, and where it keeps them.
pub struct Bindings {
    work_dir: PathBuf,
    dir: PathBuf,
    bound: Mutex<BTreeMap<String, FrameworkInfo>>,
}

/// The principal a `FrameworkInfo` names (an empty one is none).
pub(super) fn principal(framework: &FrameworkInfo) -> Option<&str> {
    framework.principal.as_deref().filter(|p| !p.is_empty())
}

pub(super) fn framework_id(framework: &FrameworkInfo) -> &str {
    framework.id.as_ref().map_or("", |id| id.value.as_str())
}

impl Bindings {
    /// The bindings of the agent on `work_dir` (none read yet).
    pub fn new(work_dir: &Path) -> Bindings {
        Bindings {
            work_dir: work_dir.to_path_buf(),
            dir: work_dir.join("meta").join("frameworks"),
            bound: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, FrameworkInfo>> {
        self.bound
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads every binding checkpoint; the first that cannot be trusted is
    /// the error. Returns how many were read.
    pub fn load(&self) -> Result<usize, BindingError> {
        let directory = |reason: String| BindingError::Directory {
            dir: self.dir.clone(),
            reason,
        };
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(directory(e.to_string())),
        };
        let mut bound = BTreeMap::new();
        for entry in entries {
            let entry = entry.map_err(|e| directory(e.to_string()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(SUFFIX) else {
                // A temporary file of a write a crash cut off.
                tracing::debug!(file = ?name, "not a framework binding; skipped");
                continue;
            };
            let record = read_binding(&entry.path(), id)?;
            bound.insert(id.to_owned(), record);
        }
        let count = bound.len();
        *self.lock() = bound;
        Ok(count)
    }

    /// Binds `framework`'s ID to its principal unless it is bound already.
    /// None: the ID is (now) this principal's; Some: the binding of another.
    pub fn claim(&self, framework: &FrameworkInfo) -> Result<Option<FrameworkInfo>, BindingError> {
        let id = framework_id(framework).to_owned();
        // Held across the write: two principals racing for a new ID cannot
        // both get it.
        let mut bound = self.lock();
        if let Some(owner) = bound.get(&id) {
            return Ok((principal(owner) != principal(framework)).then(|| owner.clone()));
        }
        let record = FrameworkInfo {
            id: Some(FrameworkId { value: id.clone() }),
            principal: principal(framework).map(str::to_owned),
            user: framework.user.clone(),
            ..Default::default()
        };
        let write = |source| BindingError::Write {
            framework: id.clone(),
            source,
        };
        nestguard::beneath::create_dir_all(&self.work_dir, &self.dir, 0o700).map_err(|e| {
            BindingError::Directory {
                dir: self.dir.clone(),
                reason: e.to_string(),
            }
        })?;
        nestguard::checkpoint::write_message(
            &self.dir.join(format!("{id}{SUFFIX}")),
            &record,
            nestguard::checkpoint::Outlives::HostCrash,
        )
        .map_err(write)?;
        tracing::info!(framework_id = ?id, principal = ?record.principal, "framework ID bound to its principal");
        bound.insert(id, record);
        Ok(None)
    }
}

/// Reads the binding of framework `id` at `path`, refusing anything but a
/// regular file holding one `FrameworkInfo` of that ID.
fn read_binding(path: &Path, id: &str) -> Result<FrameworkInfo, BindingError> {
    let damaged = |reason: String| BindingError::Damaged {
        path: path.to_path_buf(),
        framework: id.to_owned(),
        reason,
    };
    nestguard::validation::validate_path_id(id)
        .map_err(|e| damaged(format!("its name is not a framework ID: {e}")))?;
    let meta = std::fs::symlink_metadata(path).map_err(|e| damaged(e.to_string()))?;
    if meta.file_type().is_symlink() {
        return Err(damaged("it is a symbolic link".into()));
    }
    let record: FrameworkInfo =
        nestguard::checkpoint::read_message(path).map_err(|e| damaged(e.to_string()))?;
    let recorded = framework_id(&record);
    if recorded != id {
        return Err(damaged(format!("it records framework '{recorded}'")));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framework(id: &str, principal: Option<&str>) -> FrameworkInfo {
        FrameworkInfo {
            id: Some(FrameworkId { value: id.into() }),
            principal: principal.map(str::to_owned),
            user: "root".into(),
            name: "a name that is not kept".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_binding_is_kept_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let bindings = Bindings::new(dir.path());
        assert_eq!(bindings.load().unwrap(), 0);
        assert!(
            bindings
                .claim(&framework("fw", Some("alice")))
                .unwrap()
                .is_none()
        );
        assert!(
            bindings
                .claim(&framework("fw", Some("alice")))
                .unwrap()
                .is_none()
        );
        let owner = bindings
            .claim(&framework("fw", Some("bob")))
            .unwrap()
            .unwrap();
        assert_eq!(owner.principal.as_deref(), Some("alice"));
        assert_eq!(owner.name, "");
        // No principal is a principal of its own: it cannot take the ID.
        assert!(bindings.claim(&framework("fw", None)).unwrap().is_some());
        assert!(
            bindings
                .claim(&framework("fw", Some("")))
                .unwrap()
                .is_some()
        );

        let again = Bindings::new(dir.path());
        assert_eq!(again.load().unwrap(), 1);
        assert!(
            again
                .claim(&framework("fw", Some("bob")))
                .unwrap()
                .is_some()
        );
        assert!(
            again
                .claim(&framework("fw", Some("alice")))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn leftover_temporary_files_are_skipped_and_bad_names_refused() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join("meta/frameworks");
        std::fs::create_dir_all(&meta).unwrap();
        std::fs::write(meta.join(".checkpoint-AbC123"), b"torn").unwrap();
        assert_eq!(Bindings::new(dir.path()).load().unwrap(), 0);
        std::fs::write(meta.join("a b.info"), b"").unwrap();
        let e = Bindings::new(dir.path()).load().unwrap_err().to_string();
        assert!(
            e.contains("framework 'a b'") && e.contains("not a framework ID"),
            "{e}"
        );
    }
}
