//! Which principals a framework may hand to its executors in secret mode:
//! an operator-written mapping, module parameter `executor_principals`.
//!
//! By default an executor receives the credentials of its framework's own
//! authenticated principal (`FrameworkInfo.principal`) and nothing else. An
//! ExecutorInfo label `principal` is written by the framework, so it may name
//! another principal only where this mapping allows it:
//!
//! ```json
//! {"marathon": ["marathon-executors", "batch"], "ci": ["ci-runner"]}
//! ```
//!
//! The parameter value is that JSON text (when it starts with `{`), or a
//! path / `file://` URL of a regular file holding it (at most 1 MiB).
//! Principals are non-empty and never contain `:` (they could not log in).

use std::collections::{BTreeMap, BTreeSet};

use crate::input::{FlagValue, InputError};

/// Why a mapping did not load. Never contains a secret.
#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    /// The file could not be read: missing, not a regular file (a FIFO,
    /// a device), larger than 1 MiB or not UTF-8; the text names the file.
    #[error("executor_principals: {source}")]
    File {
        /// What is wrong with the file.
        #[source]
        source: InputError,
    },
    /// Larger than 1 MiB.
    #[error("executor_principals: '{}' is larger than 1 MiB", path.display())]
    TooLarge {
        /// The file.
        path: std::path::PathBuf,
    },
    /// The JSON does not have the expected shape.
    #[error(
        "executor_principals ({origin}): {detail}; expected a JSON object mapping a framework principal to an array of principal names, e.g. {{\"fw\": [\"exec\"]}}"
    )]
    Shape {
        /// `<inline>` or the path.
        origin: String,
        /// What is wrong, with line/column or the JSON path.
        detail: String,
    },
}

/// The largest mapping file read.
const MAX_FILE: u64 = 1 << 20;

/// Framework principal → the principals its executors may be given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutorPrincipals {
    allowed: BTreeMap<String, BTreeSet<String>>,
}

impl ExecutorPrincipals {
    /// Whether `framework_principal` may hand `principal` to its executors
    /// (its own principal always).
    pub fn allows(&self, framework_principal: &str, principal: &str) -> bool {
        framework_principal == principal
            || self
                .allowed
                .get(framework_principal)
                .is_some_and(|set| set.contains(principal))
    }

    /// From the parameter value: inline JSON, a path, or a `file://` URL.
    pub fn from_parameter(value: &str) -> Result<Self, DelegationError> {
        let value = FlagValue::parse(value);
        // Bounded and non-blocking like every operator-named file: a FIFO
        // or a device fails at once instead of hanging the module load.
        let text = value.content(MAX_FILE).map_err(|source| match source {
            // The input text names `max_file_size`, which this fixed
            // limit is not.
            InputError::TooLarge { path, .. } => DelegationError::TooLarge { path },
            source => DelegationError::File { source },
        })?;
        Self::parse(&text, &value.origin("<inline>"))
    }

    /// From JSON text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, DelegationError> {
        let shape = |detail: String| DelegationError::Shape {
            origin: origin.to_owned(),
            detail,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| shape(e.to_string()))?;
        let object = value
            .as_object()
            .ok_or_else(|| shape("the top level is not an object".into()))?;
        let valid = |p: &str| !p.is_empty() && !p.contains(':');
        let mut allowed = BTreeMap::new();
        for (framework, list) in object {
            if !valid(framework) {
                return Err(shape(format!(
                    "key {framework:?} is not a principal (empty or contains ':')"
                )));
            }
            let items = list
                .as_array()
                .ok_or_else(|| shape(format!("{framework:?}: the value is not an array")))?;
            let mut set = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let name = item
                    .as_str()
                    .filter(|p| valid(p))
                    .ok_or_else(|| shape(format!("{framework:?}[{i}]: not a principal name")))?;
                set.insert(name.to_owned());
            }
            allowed.insert(framework.clone(), set);
        }
        Ok(ExecutorPrincipals { allowed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_allows() {
        let m = ExecutorPrincipals::parse(r#"{"fw": ["exec", "batch"]}"#, "<inline>").unwrap();
        assert!(m.allows("fw", "exec"));
        assert!(m.allows("fw", "fw"));
        assert!(m.allows("other", "other"));
        assert!(!m.allows("fw", "ops"));
        assert!(!m.allows("other", "exec"));
    }

    #[test]
    fn bad_shapes_say_what_is_expected() {
        for (text, needle) in [
            ("[]", "top level"),
            (r#"{"fw": "exec"}"#, "not an array"),
            (r#"{"fw": [1]}"#, "\"fw\"[0]"),
            (r#"{"a:b": []}"#, "contains ':'"),
            ("{", "EOF"),
        ] {
            let err = ExecutorPrincipals::parse(text, "<inline>")
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.contains("expected a JSON object"), "{err}");
        }
    }

    #[test]
    fn files_must_be_regular() {
        let err = ExecutorPrincipals::from_parameter("/dev/zero").unwrap_err();
        assert!(err.to_string().contains("expected a regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("map.json");
        std::fs::write(&path, r#"{"fw": ["x"]}"#).unwrap();
        let m = ExecutorPrincipals::from_parameter(&format!("file://{}", path.display())).unwrap();
        assert!(m.allows("fw", "x"));
        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b' '; (MAX_FILE + 1) as usize]).unwrap();
        let err = ExecutorPrincipals::from_parameter(big.to_str().unwrap()).unwrap_err();
        assert!(
            err.to_string().ends_with("big.json' is larger than 1 MiB"),
            "{err}"
        );
    }

    /// A FIFO nobody writes fails at once instead of blocking the module
    /// load in open(2).
    #[test]
    fn a_fifo_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("map.fifo");
        // This module forbids `unsafe`: mkfifo(1) makes it.
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let path = fifo.display().to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(ExecutorPrincipals::from_parameter(&path).map(|_| ()));
        });
        let err = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("executor_principals on a FIFO blocked")
            .unwrap_err();
        assert!(err.to_string().contains("a FIFO"), "{err}");
        assert!(err.to_string().contains("map.fifo"), "{err}");
    }
}
