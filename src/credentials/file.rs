//! Mesos credential files: the `--credentials`/`--http_credentials` list, the
//! single `--credential`, and the legacy text form of older clusters.
//!
//! Formats (Mesos `src/credentials/credentials.hpp`):
//! * list: `{"credentials":[{"principal":"p","secret":"s"}, ...]}`;
//! * single: `{"principal":"p","secret":"s"}`;
//! * legacy text (Mesos ≤ 1.10): one `principal secret` per line. Lines are
//!   split on `\n` with empty lines skipped, fields on runs of spaces (a tab is
//!   not a separator and a trailing `\r` stays part of the secret, exactly as
//!   Mesos tokenizes). Exactly two fields per line.
//!
//! A file whose first non-blank character is `{` or `[` is JSON (a syntax
//! error is reported as such rather than as a confusing legacy-format error);
//! anything else is legacy text.
//!
//! Stricter than Mesos on purpose: duplicate principals, unknown JSON keys,
//! missing or empty secrets, empty files and files readable or writable by group or
//! others are errors (Mesos only warns about "others"); the last can be
//! allowed with [`LoadOptions::allow_open_permissions`].
//!
//! The JSON is walked by hand over `serde_json::Value` rather than
//! deserialized with serde: serde's type errors quote the offending value,
//! which could be a secret, and we want errors located by JSON path.
//! Secrets are moved (not copied) out of the parsed value and the file buffer
//! is wiped, so no unwiped copy outlives loading.

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use zeroize::Zeroizing;

use super::secret::Secret;
use super::store::{Credential, CredentialStore};
use crate::input::{self, DEFAULT_MAX_FILE_SIZE, InputError};

/// Why a credentials file was refused. Texts name the file and the line or
/// JSON path; they never contain a secret.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened or read, is not a regular file (a
    /// FIFO, `/dev/zero`), or is larger than `max_file_size`.
    #[error("failed to read credentials file: {0}")]
    Read(#[source] InputError),
    /// Group or others may read or write the file.
    #[error(
        "permissions on credentials file '{path}' are too open (mode {mode:04o}): it must not be \
         readable or writable by group or others (chmod 600, or explicitly allow open permissions)"
    )]
    TooOpen {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file holds no credential.
    #[error("credentials file '{origin}' must contain at least one credential")]
    Empty {
        /// The file (or input name).
        origin: String,
    },
    /// The file is not valid UTF-8.
    #[error("credentials file '{origin}' is not valid UTF-8")]
    NotUtf8 {
        /// The file (or input name).
        origin: String,
    },
    /// JSON syntax error.
    #[error("credentials file '{origin}': invalid JSON at line {line}, column {column}: {reason}")]
    JsonSyntax {
        /// The file (or input name).
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The category of syntax error (never the offending text).
        reason: String,
    },
    /// JSON of the wrong shape.
    #[error("credentials file '{origin}': at {path}: expected {expected}")]
    JsonShape {
        /// The file (or input name).
        origin: String,
        /// JSON path, e.g. `$.credentials[2].secret`.
        path: String,
        /// What was expected there.
        expected: String,
    },
    /// A legacy text line without exactly two fields.
    #[error(
        "credentials file '{origin}' line {line}: invalid credential format: expected \
         `principal secret` (2 space-separated fields), found {fields} field(s)"
    )]
    LegacyFormat {
        /// The file (or input name).
        origin: String,
        /// 1-based physical line.
        line: usize,
        /// Number of fields found.
        fields: usize,
    },
    /// A single-credential file with several credentials.
    #[error("credential file '{origin}' line {line}: expecting only one credential, found another")]
    MoreThanOne {
        /// The file (or input name).
        origin: String,
        /// 1-based line of the second credential.
        line: usize,
    },
    /// A principal with a `:`, which HTTP Basic can never carry (the
    /// first `:` of `user:password` ends the user).
    #[error(
        "credentials file '{origin}': at {at}: expected a principal without ':' (HTTP Basic \
         splits on the first ':', so it could never log in)"
    )]
    Colon {
        /// The file (or input name).
        origin: String,
        /// Where (line or JSON path).
        at: String,
    },
    /// The same principal twice.
    #[error(
        "credentials file '{origin}': duplicate principal '{principal}' at {at} (first at {first})"
    )]
    Duplicate {
        /// The file (or input name).
        origin: String,
        /// The principal.
        principal: String,
        /// Where it repeats (line or JSON path).
        at: String,
        /// Where it first appeared.
        first: String,
    },
}

/// Options for loading credential files.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    /// Accept a file readable or writable by group or others (only warn,
    /// as Mesos does). Off by default.
    pub allow_open_permissions: bool,
    /// Largest file read, in bytes (default [`DEFAULT_MAX_FILE_SIZE`]).
    pub max_file_size: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            allow_open_permissions: false,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

/// Which syntax a file used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Mesos JSON.
    Json,
    /// Legacy `principal secret` lines.
    LegacyText,
}

/// Loads a credentials list (`--credentials`, `--http_credentials`).
pub fn load_credentials(path: &Path, options: &LoadOptions) -> Result<CredentialStore, FileError> {
    let text = read_checked(path, options)?;
    let origin = path.display().to_string();
    let store = parse_store(&text, &origin)?;
    tracing::info!(path = %origin, count = store.len(), "loaded credentials");
    Ok(store)
}

/// Parses a credentials list straight into a store.
pub fn parse_store(text: &str, origin: &str) -> Result<CredentialStore, FileError> {
    let (list, _) = parse_credentials(text, origin)?;
    // Duplicates were reported with their locations by `parse_credentials`.
    CredentialStore::from_credentials(list).map_err(|d| FileError::Duplicate {
        origin: origin.into(),
        principal: d.principal,
        at: "a later entry".into(),
        first: "an earlier entry".into(),
    })
}

/// Loads a single credential (`--credential`).
pub fn load_credential(path: &Path, options: &LoadOptions) -> Result<Credential, FileError> {
    let text = read_checked(path, options)?;
    let origin = path.display().to_string();
    let (credential, _) = parse_credential(&text, &origin)?;
    tracing::info!(path = %origin, principal = %credential.principal, "loaded credential");
    Ok(credential)
}

/// Reads the file after checking its permissions; the buffer is wiped on drop.
fn read_checked(path: &Path, options: &LoadOptions) -> Result<Zeroizing<String>, FileError> {
    let bytes = read_secret_file(path, options)?;
    match std::str::from_utf8(&bytes) {
        Ok(s) => Ok(Zeroizing::new(s.to_owned())),
        Err(_) => Err(FileError::NotUtf8 {
            origin: path.display().to_string(),
        }),
    }
}

/// Reads a file holding secrets (credentials, a signing key) after refusing
/// group/other read or write permission unless `options` allow it. Only a
/// regular file of at most `options.max_file_size` bytes is read, without
/// blocking on a FIFO (see [`crate::input`]).
pub fn read_secret_file(
    path: &Path,
    options: &LoadOptions,
) -> Result<Zeroizing<Vec<u8>>, FileError> {
    // Permissions are checked on the opened file, not the path, so the file
    // read is the file checked.
    let (file, meta) = input::open_regular(path, options.max_file_size).map_err(FileError::Read)?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o066 != 0 {
        if options.allow_open_permissions {
            tracing::warn!(
                path = %path.display(),
                mode = format_args!("{mode:04o}"),
                "permissions on credentials file are too open; allowed by configuration"
            );
        } else {
            return Err(FileError::TooOpen {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    let mut bytes = Zeroizing::new(Vec::with_capacity(
        usize::try_from(meta.len()).unwrap_or(0).saturating_add(1),
    ));
    input::read_limited(path, file, options.max_file_size, &mut bytes).map_err(FileError::Read)?;
    Ok(bytes)
}

/// Where a credential was found in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Location {
    /// 1-based line (legacy text).
    Line(usize),
    /// JSON path.
    Path(String),
}

impl Location {
    fn line(&self) -> Option<usize> {
        match self {
            Location::Line(n) => Some(*n),
            Location::Path(_) => None,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Path(p) => f.write_str(p),
        }
    }
}

fn looks_like_json(text: &str) -> bool {
    matches!(text.trim_start().chars().next(), Some('{' | '['))
}

/// Which reading of `text` applies. Mesos reads a credentials file as JSON
/// only when it parses as a JSON object, and as text lines otherwise
/// (`credentials.hpp`), so a text file whose first principal starts with
/// `{` or `[` is text there, and is text here. Text that starts like JSON
/// but is neither a JSON object nor valid text keeps the JSON error, which
/// is what its author most likely meant to write.
fn json_object(text: &str) -> bool {
    looks_like_json(text) && matches!(serde_json::from_str::<Value>(text), Ok(Value::Object(_)))
}

/// The text reading of a file that starts like JSON but is no JSON object:
/// the legacy lines if they parse into usable principals, else the JSON
/// error.
fn legacy_or_json_error<T>(
    text: &str,
    origin: &str,
    json: impl FnOnce() -> Result<T, FileError>,
) -> Result<Vec<(Credential, Location)>, FileError> {
    let legacy = parse_legacy(text, origin).and_then(|list| {
        for (c, at) in &list {
            check_principal(c, at, origin)?;
        }
        Ok(list)
    });
    match legacy {
        Ok(list) => Ok(list),
        Err(legacy) => match json() {
            Err(e) => Err(e),
            Ok(_) => Err(legacy),
        },
    }
}

/// Parses the text of a credentials list; `origin` names it in errors.
pub fn parse_credentials(text: &str, origin: &str) -> Result<(Vec<Credential>, Format), FileError> {
    let (list, format) = if json_object(text) {
        (parse_json_list(text, origin)?, Format::Json)
    } else if looks_like_json(text) {
        let list = legacy_or_json_error(text, origin, || parse_json_list(text, origin))?;
        (list, Format::LegacyText)
    } else {
        (parse_legacy(text, origin)?, Format::LegacyText)
    };
    if list.is_empty() {
        return Err(FileError::Empty {
            origin: origin.into(),
        });
    }
    check_duplicates(&list, origin)?;
    Ok((list.into_iter().map(|(c, _)| c).collect(), format))
}

/// Parses the text of a single-credential file.
pub fn parse_credential(text: &str, origin: &str) -> Result<(Credential, Format), FileError> {
    if json_object(text) {
        let mut value = parse_json(text, origin)?;
        let c = take_credential(&mut value, "$", origin)?;
        check_principal(&c, &Location::Path("$".into()), origin)?;
        return Ok((c, Format::Json));
    }
    let mut list = if looks_like_json(text) {
        legacy_or_json_error(text, origin, || parse_json(text, origin))?
    } else {
        parse_legacy(text, origin)?
    };
    if list.len() > 1 {
        return Err(FileError::MoreThanOne {
            origin: origin.into(),
            line: list[1].1.line().unwrap_or(0),
        });
    }
    match list.pop() {
        Some((c, at)) => {
            check_principal(&c, &at, origin)?;
            Ok((c, Format::LegacyText))
        }
        None => Err(FileError::Empty {
            origin: origin.into(),
        }),
    }
}

/// Duplicate principals and principals with a `:` (stricter than Mesos).
fn check_duplicates(list: &[(Credential, Location)], origin: &str) -> Result<(), FileError> {
    let mut seen = std::collections::HashMap::new();
    for (c, at) in list {
        check_principal(c, at, origin)?;
        if let Some(first) = seen.insert(c.principal.as_str(), at) {
            return Err(FileError::Duplicate {
                origin: origin.into(),
                principal: c.principal.clone(),
                at: at.to_string(),
                first: first.to_string(),
            });
        }
    }
    Ok(())
}

fn check_principal(c: &Credential, at: &Location, origin: &str) -> Result<(), FileError> {
    if c.principal.contains(':') {
        let at = match at {
            Location::Line(n) => format!("line {n}"),
            Location::Path(p) => format!("{p}.principal"),
        };
        return Err(FileError::Colon {
            origin: origin.into(),
            at,
        });
    }
    Ok(())
}

fn parse_json(text: &str, origin: &str) -> Result<Value, FileError> {
    serde_json::from_str::<Value>(text).map_err(|e| FileError::JsonSyntax {
        origin: origin.into(),
        line: e.line(),
        column: e.column(),
        reason: syntax_reason(&e),
    })
}

/// A syntax error's category without any quoted input.
fn syntax_reason(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Eof => "unexpected end of input".into(),
        Category::Syntax => {
            // serde_json syntax messages are fixed phrases ("expected `,` or
            // `}`", "trailing comma", ...) followed by the position; they do
            // not quote the input. Strip the position we already report.
            let msg = e.to_string();
            msg.split(" at line ")
                .next()
                .unwrap_or("syntax error")
                .to_owned()
        }
        Category::Io | Category::Data => "invalid JSON".into(),
    }
}

fn shape(origin: &str, path: &str, expected: &str) -> FileError {
    FileError::JsonShape {
        origin: origin.into(),
        path: path.into(),
        expected: expected.into(),
    }
}

fn parse_json_list(text: &str, origin: &str) -> Result<Vec<(Credential, Location)>, FileError> {
    let mut value = parse_json(text, origin)?;
    let Value::Object(map) = &mut value else {
        return Err(shape(origin, "$", "an object {\"credentials\": [...]}"));
    };
    if let Some(key) = map.keys().find(|k| k.as_str() != "credentials") {
        let path = format!("$.{key}");
        return Err(shape(origin, &path, "no other key than \"credentials\""));
    }
    let Some(list) = map.get_mut("credentials") else {
        return Err(shape(
            origin,
            "$.credentials",
            "an array of credentials (key missing)",
        ));
    };
    let Value::Array(items) = list else {
        return Err(shape(origin, "$.credentials", "an array of credentials"));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter_mut().enumerate() {
        let path = format!("$.credentials[{i}]");
        let c = take_credential(item, &path, origin)?;
        out.push((c, Location::Path(path)));
    }
    Ok(out)
}

/// Moves a credential out of a JSON object (wiping nothing is left behind:
/// the secret string's buffer itself becomes the `Secret`).
fn take_credential(value: &mut Value, path: &str, origin: &str) -> Result<Credential, FileError> {
    let Value::Object(map) = value else {
        return Err(shape(
            origin,
            path,
            "an object {\"principal\": ..., \"secret\": ...}",
        ));
    };
    if let Some(key) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "principal" | "secret"))
    {
        let mut p = String::new();
        let _ = write!(p, "{path}.{key}");
        return Err(shape(origin, &p, "only \"principal\" and \"secret\""));
    }
    let principal = match map.get_mut("principal") {
        Some(Value::String(s)) if !s.is_empty() => std::mem::take(s),
        Some(Value::String(_)) => {
            return Err(shape(
                origin,
                &format!("{path}.principal"),
                "a non-empty string",
            ));
        }
        Some(_) => return Err(shape(origin, &format!("{path}.principal"), "a string")),
        None => {
            return Err(shape(
                origin,
                &format!("{path}.principal"),
                "a string (key missing)",
            ));
        }
    };
    let secret = match map.get_mut("secret") {
        // An empty secret would let an empty password in (HTTP Basic).
        Some(Value::String(s)) if s.is_empty() => {
            return Err(shape(
                origin,
                &format!("{path}.secret"),
                "a non-empty string",
            ));
        }
        Some(Value::String(s)) => Secret::from_string(std::mem::take(s)),
        Some(_) => return Err(shape(origin, &format!("{path}.secret"), "a string")),
        None => {
            return Err(shape(
                origin,
                &format!("{path}.secret"),
                "a string (key missing)",
            ));
        }
    };
    Ok(Credential { principal, secret })
}

fn parse_legacy(text: &str, origin: &str) -> Result<Vec<(Credential, Location)>, FileError> {
    let mut out = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
        if fields.len() != 2 {
            return Err(FileError::LegacyFormat {
                origin: origin.into(),
                line: index + 1,
                fields: fields.len(),
            });
        }
        out.push((
            Credential {
                principal: fields[0].to_owned(),
                secret: Secret::from(fields[1]),
            },
            Location::Line(index + 1),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_tokenization() {
        let (list, f) = parse_credentials("\n a  b \n\nc d\n", "t").unwrap();
        assert_eq!(f, Format::LegacyText);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].principal, "a");
        assert!(list[0].secret.ct_eq(b"b"));
        let err = parse_credentials("a\tb\n", "t").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
        let (list, _) = parse_credentials("a b\r\n", "t").unwrap();
        assert!(list[0].secret.ct_eq(b"b\r"));
    }

    /// Found by the `credentials_file` fuzz target: text whose first
    /// principal starts with `[` or `{` was read as JSON and refused, where
    /// Mesos reads it as text (JSON only when it parses as an object).
    #[test]
    fn text_that_starts_like_json_is_text_as_in_mesos() {
        let (list, f) = parse_credentials("[a v\n{b w\n", "t").unwrap();
        assert_eq!(f, Format::LegacyText);
        assert_eq!(list[0].principal, "[a");
        assert_eq!(list[1].principal, "{b");
        let (one, f) = parse_credential("{x y\n", "t").unwrap();
        assert_eq!((one.principal.as_str(), f), ("{x", Format::LegacyText));
        // A valid JSON array is no JSON object: text, as Mesos reads it.
        let (list, f) = parse_credentials("[1, 2]", "t").unwrap();
        assert_eq!((list[0].principal.as_str(), f), ("[1,", Format::LegacyText));
    }

    #[test]
    fn broken_json_keeps_its_json_error() {
        let err = parse_credentials("{\"credentials\": [\n", "t").unwrap_err();
        assert!(matches!(err, FileError::JsonSyntax { .. }), "{err}");
        let err = parse_credential("{\"principal\": \"a\", \"secret\":", "t").unwrap_err();
        assert!(matches!(err, FileError::JsonSyntax { .. }), "{err}");
        let err = parse_credentials("{\"other\": []}", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("$.other"), "a JSON object stays JSON: {err}");
    }
}
