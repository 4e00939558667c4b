//! How every `nestguard` command writes the fields of its log lines: one
//! record is always one line, with no control character, whatever a tenant
//! put in a user name, an ID, a label, a path, a command or an error text
//! that quotes one of them (issue 25).
//!
//! The formatter, not each call site, does it (tracing's default writes a
//! `%` value as it is, newlines and terminal escapes included):
//!
//! - a field value is escaped: `"` and `\` as `\"` and `\\`, `\n`, `\r`,
//!   `\t`, and every other control character (C0, DEL, C1), the Unicode
//!   line and paragraph separators and the bidirectional controls as
//!   `\u{..}`;
//! - a string value (`field = "text"`, `field = value` of a `&str`) is
//!   always quoted, as tracing quotes it; a `%` or `?` value is quoted
//!   unless it is a bare word of `[A-Za-z0-9._:/@+,-]` (`principal=ops`,
//!   `container_id=pod.task`), so a value can never read as more fields;
//! - the message is escaped (its `"` too, so that no text in it reads as a
//!   quoted field), not quoted;
//! - a value longer than [`FIELD_MAX_BYTES`] is cut on a character and
//!   followed by its length and a SHA-256 of the whole value:
//!   `user="uuu…" user.bytes=15728640 user.sha256=<hex>`.

use std::fmt::{self, Write as _};

use sha2::{Digest, Sha256};
use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

/// The most bytes of one field value a log line holds.
pub const FIELD_MAX_BYTES: usize = 1024;

/// The [`FormatFields`] of every command's log (see the module notes).
#[derive(Debug, Default, Clone, Copy)]
pub struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut visitor = Visitor {
            writer: &mut writer,
            result: Ok(()),
            first: true,
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

/// Whether `c` is written as an escape: control characters (C0, DEL, C1),
/// line and paragraph separators, bidirectional marks and controls, and
/// the byte-order mark, all of which move or hide text on a terminal.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// Writes `text` escaped (see the module notes).
fn write_escaped(out: &mut impl fmt::Write, text: &str) -> fmt::Result {
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.write_char('\\')?;
                out.write_char(c)?;
            }
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if needs_escape(c) => write!(out, "\\u{{{:x}}}", u32::from(c))?,
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

/// Whether `text` may stand unquoted: a non-empty word of
/// `[A-Za-z0-9._:/@+,-]`.
fn is_bare_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/@+,-".contains(&b))
}

/// `text` as a log value: as it is when it is a bare word, else quoted and
/// escaped. For text that holds several tenant values, such as the
/// decision log's object summary.
pub fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    if is_bare_word(text) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    // Writing to a String never fails.
    let _ = write_escaped(&mut out, text);
    out.push('"');
    out.into()
}

/// A value as it is formatted: its first [`FIELD_MAX_BYTES`] (cut on a
/// character), its whole length and a hash of all of it, without holding
/// more than the bound however long the value is.
struct Captured {
    kept: String,
    full: bool,
    bytes: usize,
    hash: Sha256,
}

impl Captured {
    fn of(value: impl fmt::Display) -> Captured {
        let mut captured = Captured {
            kept: String::new(),
            full: false,
            bytes: 0,
            hash: Sha256::new(),
        };
        // Only the value's own formatting can fail; what it wrote is kept.
        let _ = write!(captured, "{value}");
        captured
    }

    fn truncated(&self) -> bool {
        self.bytes > self.kept.len()
    }
}

impl fmt::Write for Captured {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes += s.len();
        self.hash.update(s.as_bytes());
        if !self.full {
            let room = FIELD_MAX_BYTES - self.kept.len();
            if s.len() <= room {
                self.kept.push_str(s);
            } else {
                let cut = (0..=room)
                    .rev()
                    .find(|&i| s.is_char_boundary(i))
                    .unwrap_or(0);
                self.kept.push_str(s.get(..cut).unwrap_or_default());
                self.full = true;
            }
        }
        Ok(())
    }
}

struct Visitor<'a, 'writer> {
    writer: &'a mut Writer<'writer>,
    result: fmt::Result,
    first: bool,
}

impl Visitor<'_, '_> {
    fn separate(&mut self) -> fmt::Result {
        if !std::mem::replace(&mut self.first, false) {
            self.writer.write_char(' ')?;
        }
        Ok(())
    }

    fn value(&mut self, field: &Field, value: &Captured, always_quote: bool) -> fmt::Result {
        self.separate()?;
        let name = field.name();
        let name = name.strip_prefix("r#").unwrap_or(name);
        if name == "message" {
            write_escaped(self.writer, &value.kept)?;
        } else if !always_quote && !value.truncated() && is_bare_word(&value.kept) {
            write!(self.writer, "{name}={}", value.kept)?;
        } else {
            write!(self.writer, "{name}=\"")?;
            write_escaped(self.writer, &value.kept)?;
            self.writer.write_char('"')?;
        }
        if value.truncated() {
            write!(self.writer, "… {name}.bytes={} {name}.sha256=", value.bytes)?;
            for byte in value.hash.clone().finalize() {
                write!(self.writer, "{byte:02x}")?;
            }
        }
        Ok(())
    }

    fn plain(&mut self, field: &Field, value: impl fmt::Display) {
        if self.result.is_ok() {
            self.result = self
                .separate()
                .and_then(|()| write!(self.writer, "{}={value}", field.name()));
        }
    }

    fn record(&mut self, field: &Field, value: &Captured, always_quote: bool) {
        if self.result.is_ok() {
            self.result = self.value(field, value, always_quote);
        }
    }
}

impl Visit for Visitor<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record(field, &Captured::of(value), true);
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let chain = ErrorChain(value);
        self.record(field, &Captured::of(chain), true);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.record(field, &Captured::of(format_args!("{value:?}")), false);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.plain(field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.plain(field, value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.plain(field, value);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.plain(field, value);
    }
}

/// An error and its sources, `outer: inner: innermost`.
struct ErrorChain<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(e) = source {
            write!(f, ": {e}")?;
            source = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;

    /// The log text `emit` writes through a subscriber with these fields.
    fn logged(emit: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .fmt_fields(EscapedFields)
                .with_writer(move || sink.clone()),
        );
        tracing::subscriber::with_default(subscriber, emit);
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn tenant_text_stays_on_one_line_without_controls() {
        let user = "daemon\n2026-01-01T00:00:00Z  INFO nestguard::decision: decision=\"allow\"\u{1b}[2J\u{9b}\u{202e}";
        let text = logged(|| {
            tracing::info!(target: "nestguard::decision", principal = %user, user, task = ?user,
                count = 3, ok = true, "a message with\na newline {}", user);
        });
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
        assert!(!text.contains("decision=\"allow\""), "{text}");
        assert!(text.contains(r#"principal="daemon\n2026"#), "{text}");
        assert!(text.contains(r"\u{1b}[2J\u{9b}\u{202e}"), "{text}");
        assert!(text.contains("count=3 ok=true"), "{text}");
        assert!(
            text.contains("a message with\\na newline daemon\\n"),
            "{text}"
        );
    }

    #[test]
    fn words_stay_bare_and_strings_stay_quoted() {
        let text = logged(|| {
            tracing::info!(principal = %"ops", container_id = %"pod.task", action = "KILL",
                object = %"container_id=a command_user=b", empty = %"", "m");
        });
        assert!(
            text.contains(
                r#"m principal=ops container_id=pod.task action="KILL" object="container_id=a command_user=b" empty="""#
            ),
            "{text}"
        );
    }

    #[test]
    fn long_values_are_cut_with_their_length_and_hash() {
        let long = format!(
            "{}é{}",
            "u".repeat(FIELD_MAX_BYTES - 1),
            "v".repeat(1 << 20)
        );
        let text = logged(|| tracing::info!(user = %long, "m"));
        assert!(text.len() < 2 * FIELD_MAX_BYTES, "{} bytes", text.len());
        let hash: String = Sha256::digest(long.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let expected = format!(
            "user=\"{}\"… user.bytes={} user.sha256={hash}",
            "u".repeat(FIELD_MAX_BYTES - 1),
            long.len()
        );
        assert!(text.contains(&expected), "{text}");
    }

    #[test]
    fn errors_are_escaped_with_their_sources() {
        let e = std::io::Error::other("bad\nline");
        let text = logged(|| tracing::warn!(error = &e as &(dyn std::error::Error + 'static), "m"));
        assert!(text.contains(r#"error="bad\nline""#), "{text}");
    }

    #[test]
    fn quoted_text() {
        assert_eq!(quoted("alice"), "alice");
        assert_eq!(quoted("a b"), "\"a b\"");
        assert_eq!(quoted("a\"b\n"), r#""a\"b\n""#);
        assert_eq!(quoted(""), "\"\"");
    }
}
