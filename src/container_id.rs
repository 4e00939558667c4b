//! Container IDs: Mesos' validation rules and the `root.child.grandchild`
//! string form.
//!
//! The agent validates every ContainerID of a container call before anything
//! else (Mesos `src/slave/validation.cpp`), and operators grep logs for the
//! dotted form, so both the rules and the error texts follow Mesos.

#![forbid(unsafe_code)]

use crate::proto::mesos::ContainerId;

/// Longest `ContainerID.value` Mesos accepts (`MAX_CONTAINER_ID_LENGTH`).
pub const MAX_CONTAINER_ID_LENGTH: usize = 242;

/// `NAME_MAX` on Linux: Mesos' generic ID check bounds every ID by it.
const NAME_MAX: usize = 255;

/// Most levels (a top-level container and its descendants) we accept.
///
/// Mesos has no explicit bound: it only limits each level's length. We need
/// one because a chain is a linked list of boxes whose construction,
/// validation and `Drop` all recurse per level, so an unbounded chain
/// overflows the stack, a crash no panic boundary catches. 32 because a
/// chain of 32 UUID-sized levels keeps the runtime and sandbox paths
/// (`containers/<id>` per level, about 48 bytes) far below `PATH_MAX` (4096),
/// while Mesos' own users nest two or three levels (executor, task, debug
/// or health check container).
pub const MAX_NESTING_DEPTH: usize = 32;

/// Longest dotted form [`parse_dotted`] looks at: [`MAX_NESTING_DEPTH`]
/// levels of [`MAX_CONTAINER_ID_LENGTH`] bytes and the dots between them.
/// Checked before anything is built, so hostile text costs no memory.
pub const MAX_DOTTED_LENGTH: usize = MAX_NESTING_DEPTH * (MAX_CONTAINER_ID_LENGTH + 1) - 1;

/// Why a ContainerID was rejected. The texts are Mesos' own
/// (`common::validation::validateID` and `validateContainerId`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContainerIdError {
    /// The value is empty.
    #[error("ID must not be empty")]
    Empty,
    /// Longer than `NAME_MAX` bytes.
    #[error("ID must not be greater than {NAME_MAX} characters")]
    LongerThanNameMax,
    /// `.` or `..`, which would name a directory.
    #[error("'{0}' is disallowed")]
    Reserved(String),
    /// ASCII control characters or a path separator.
    #[error("'{0}' contains invalid characters")]
    InvalidIdCharacters(String),
    /// Longer than [`MAX_CONTAINER_ID_LENGTH`].
    #[error("'ContainerID.value' '{0}' exceeds the maximum length ({MAX_CONTAINER_ID_LENGTH})")]
    TooLong(String),
    /// Contains `.` or a space, which would make the dotted form ambiguous.
    #[error("'ContainerID.value' '{0}' contains invalid characters")]
    InvalidCharacters(String),
    /// A parent in the chain is invalid.
    #[error("'ContainerID.parent' is invalid: {0}")]
    Parent(Box<ContainerIdError>),
    /// More than [`MAX_NESTING_DEPTH`] levels.
    #[error("ContainerID exceeds the maximum nesting depth ({MAX_NESTING_DEPTH} levels)")]
    TooDeep,
    /// A dotted form longer than [`MAX_DOTTED_LENGTH`] bytes.
    #[error("ContainerID text of {0} bytes exceeds the maximum length ({MAX_DOTTED_LENGTH})")]
    TextTooLong(usize),
}

/// Mesos' rules for every ID (`validateID`): checked on bytes, as Mesos does.
pub fn validate_generic_id(value: &str) -> Result<(), ContainerIdError> {
    if value.is_empty() {
        return Err(ContainerIdError::Empty);
    }
    if value.len() > NAME_MAX {
        return Err(ContainerIdError::LongerThanNameMax);
    }
    if value == "." || value == ".." {
        return Err(ContainerIdError::Reserved(value.to_owned()));
    }
    if value
        .bytes()
        .any(|b| b.is_ascii_control() || b == b'/' || b == b'\\')
    {
        return Err(ContainerIdError::InvalidIdCharacters(value.to_owned()));
    }
    Ok(())
}

fn validate_value(value: &str) -> Result<(), ContainerIdError> {
    validate_generic_id(value)?;
    if value.len() > MAX_CONTAINER_ID_LENGTH {
        return Err(ContainerIdError::TooLong(value.to_owned()));
    }
    if value.contains('.') || value.contains(' ') {
        return Err(ContainerIdError::InvalidCharacters(value.to_owned()));
    }
    // Stricter than Mesos, whose checks are byte-wise and ASCII-only: no
    // Unicode whitespace or control character either (e.g. U+00A0, U+2028,
    // U+0085), which render paths and logs as confusingly as a space.
    if has_unicode_blank(value) {
        return Err(ContainerIdError::InvalidCharacters(value.to_owned()));
    }
    Ok(())
}

/// Whether `value` holds whitespace or a control character of any script.
pub fn has_unicode_blank(value: &str) -> bool {
    value.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Validates a ContainerID and all of its parents as the Mesos agent does.
pub fn validate(id: &ContainerId) -> Result<(), ContainerIdError> {
    validate_at(id, 0)
}

fn validate_at(id: &ContainerId, depth: usize) -> Result<(), ContainerIdError> {
    if depth >= MAX_NESTING_DEPTH {
        return Err(ContainerIdError::TooDeep);
    }
    validate_value(&id.value)?;
    if let Some(parent) = &id.parent {
        validate_at(parent, depth + 1).map_err(|e| match e {
            ContainerIdError::TooDeep => ContainerIdError::TooDeep,
            other => ContainerIdError::Parent(Box::new(other)),
        })?;
    }
    Ok(())
}

/// The IDs from the root down to `id`.
pub fn chain(id: &ContainerId) -> Vec<&str> {
    let mut values = Vec::new();
    let mut cursor = Some(id);
    while let Some(current) = cursor {
        values.push(current.value.as_str());
        cursor = current.parent.as_deref();
    }
    values.reverse();
    values
}

/// The dotted form Mesos prints: `root.child.grandchild`.
pub fn to_dotted(id: &ContainerId) -> String {
    chain(id).join(".")
}

/// Parses the dotted form (`protobuf::parseContainerId` in Mesos) and
/// validates the result.
///
/// The length and the number of levels are bounded before the chain is
/// built (see [`MAX_NESTING_DEPTH`]): the text comes from C callers and
/// operators, and a million dots must cost neither stack nor memory.
pub fn parse_dotted(text: &str) -> Result<ContainerId, ContainerIdError> {
    if text.len() > MAX_DOTTED_LENGTH {
        return Err(ContainerIdError::TextTooLong(text.len()));
    }
    if text.bytes().filter(|b| *b == b'.').count() >= MAX_NESTING_DEPTH {
        return Err(ContainerIdError::TooDeep);
    }
    let mut id: Option<ContainerId> = None;
    for part in text.split('.') {
        id = Some(ContainerId {
            value: part.to_owned(),
            parent: id.map(Box::new),
        });
    }
    let id = id.ok_or(ContainerIdError::Empty)?;
    validate(&id)?;
    Ok(id)
}

/// The top-level container of `id` (`getRootContainerId`).
pub fn root(id: &ContainerId) -> &ContainerId {
    let mut cursor = id;
    while let Some(parent) = cursor.parent.as_deref() {
        cursor = parent;
    }
    cursor
}

/// How many ancestors `id` has (0 for a top-level container).
pub fn depth(id: &ContainerId) -> usize {
    chain(id).len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_round_trip() {
        let id = parse_dotted("exec.task.sidecar").unwrap();
        assert_eq!(id.value, "sidecar");
        assert_eq!(root(&id).value, "exec");
        assert_eq!(depth(&id), 2);
        assert_eq!(to_dotted(&id), "exec.task.sidecar");
    }

    #[test]
    fn mesos_messages() {
        let bad = ContainerId {
            value: "a b".into(),
            parent: None,
        };
        assert_eq!(
            validate(&bad).unwrap_err().to_string(),
            "'ContainerID.value' 'a b' contains invalid characters"
        );
        let long = ContainerId {
            value: "x".repeat(243),
            parent: None,
        };
        assert_eq!(
            validate(&long).unwrap_err().to_string(),
            format!(
                "'ContainerID.value' '{}' exceeds the maximum length (242)",
                "x".repeat(243)
            )
        );
        let nested = ContainerId {
            value: "child".into(),
            parent: Some(Box::new(ContainerId {
                value: "".into(),
                parent: None,
            })),
        };
        assert_eq!(
            validate(&nested).unwrap_err().to_string(),
            "'ContainerID.parent' is invalid: ID must not be empty"
        );
        assert!(parse_dotted("a..b").is_err());
        assert!(parse_dotted("a/b").is_err());
        assert!(parse_dotted("").is_err());
    }

    #[test]
    fn depth_is_bounded() {
        let text = vec!["x"; MAX_NESTING_DEPTH + 1].join(".");
        assert_eq!(parse_dotted(&text).unwrap_err(), ContainerIdError::TooDeep);
        let text = vec!["x"; MAX_NESTING_DEPTH].join(".");
        assert_eq!(depth(&parse_dotted(&text).unwrap()), MAX_NESTING_DEPTH - 1);
        // Deep and long hostile text is refused before anything is built.
        let text = "a.".repeat(1_000_000);
        assert_eq!(
            parse_dotted(&text).unwrap_err(),
            ContainerIdError::TextTooLong(2_000_000)
        );
        let text = ".".repeat(MAX_DOTTED_LENGTH);
        assert_eq!(parse_dotted(&text).unwrap_err(), ContainerIdError::TooDeep);
        let longest = vec!["x".repeat(MAX_CONTAINER_ID_LENGTH); MAX_NESTING_DEPTH].join(".");
        assert_eq!(longest.len(), MAX_DOTTED_LENGTH);
        assert!(parse_dotted(&longest).is_ok());
    }

    #[test]
    fn decoded_chains_are_bounded_too() {
        // prost refuses messages nested deeper than its recursion limit
        // (100), so a decoded chain can never be deep enough to overflow
        // the stack when dropped; validation then bounds it to 32 levels.
        use prost::Message;
        let mut id = ContainerId {
            value: "x".into(),
            parent: None,
        };
        for _ in 0..200 {
            id = ContainerId {
                value: "x".into(),
                parent: Some(Box::new(id)),
            };
        }
        let bytes = id.encode_to_vec();
        assert!(ContainerId::decode(bytes.as_slice()).is_err());
        assert_eq!(validate(&id).unwrap_err(), ContainerIdError::TooDeep);
    }
}
