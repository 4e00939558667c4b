//! ACL JSON → [`Document`], keeping each entry's location.
//!
//! Mesos parses `--acls` with stout, which silently ignores unknown keys and
//! unknown enum strings. A misspelled list name or `"type": "any"` then
//! quietly changes decisions, so by default this loader is strict and every
//! problem names the JSON path (`launch_nested_containers_as_user[2].users.type`)
//! and `line:column`. `strict = false` restores stout's leniency for files
//! that must load exactly as Mesos loads them.
//!
//! Located parsing uses `jsonc-parser` (dprint's maintained JSON parser, set
//! to plain JSON: no comments, trailing commas or loose keys), whose AST keeps
//! byte ranges; `serde_json` does not expose positions of values.

use std::fmt::Write as _;

use jsonc_parser::ast::{Array, Object, ObjectProp, Value};
use jsonc_parser::{CollectOptions, ParseOptions};

use super::lists::List;

/// An entity's type (`ACL.Entity.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntityType {
    /// Matches the listed values (the protobuf default).
    Some,
    /// Matches every request.
    Any,
    /// Matches every request, and denies.
    None,
}

/// `ACL.Entity`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entity {
    /// The type.
    pub kind: EntityType,
    /// The values (meaningful for `SOME` only). Boxed slices, not `Vec`s of
    /// `String`s: a policy keeps its document for explanations, and at
    /// 100,000 entries the spare capacity and lengths were a third of it.
    pub values: Box<[Box<str>]>,
}

impl Entity {
    /// An `ANY` entity.
    pub fn any() -> Self {
        Entity {
            kind: EntityType::Any,
            values: Box::default(),
        }
    }
    /// A `NONE` entity.
    pub fn none() -> Self {
        Entity {
            kind: EntityType::None,
            values: Box::default(),
        }
    }
    /// A `SOME` entity with these values.
    pub fn some<S: Into<String>>(values: impl IntoIterator<Item = S>) -> Self {
        Entity {
            kind: EntityType::Some,
            values: values
                .into_iter()
                .map(|v| v.into().into_boxed_str())
                .collect(),
        }
    }
}

/// Where something is in the source: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Location {
    /// Line (1-based; 0 when the entry did not come from text).
    pub line: u32,
    /// Column in characters (1-based).
    pub column: u32,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One ACL entry (`ACL.<X>`): principals and the object entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Field 1, the subject side.
    pub principals: Entity,
    /// Field 2, the object side (`users`, `roles`, ...).
    pub object: Entity,
    /// Where the entry starts in the source.
    pub location: Location,
}

/// A parsed ACL document: `permissive` plus every list's entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `ACLs.permissive` (default true): the decision when no entry matches.
    pub permissive: bool,
    /// Entries per list, indexed by `List as usize`.
    pub lists: Vec<Vec<Entry>>,
}

impl Default for Document {
    fn default() -> Self {
        Document {
            permissive: true,
            lists: vec![Vec::new(); List::ALL.len()],
        }
    }
}

impl Document {
    /// The entries of one list.
    pub fn list(&self, list: List) -> &[Entry] {
        self.lists.get(list as usize).map_or(&[], Vec::as_slice)
    }

    /// Appends an entry to a list.
    pub fn push(&mut self, list: List, entry: Entry) {
        if let Some(l) = self.lists.get_mut(list as usize) {
            l.push(entry);
        }
    }
}

/// Why ACL JSON did not load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not JSON at all.
    #[error("{origin}:{location}: not valid JSON: {message}")]
    Syntax {
        /// File name or `<inline>`.
        origin: String,
        /// Where the parser stopped.
        location: Location,
        /// The parser's message.
        message: String,
    },
    /// JSON of the wrong shape for `ACLs`.
    #[error("{origin}:{location}: {path}: {message}")]
    Shape {
        /// File name or `<inline>`.
        origin: String,
        /// Where the offending value starts.
        location: Location,
        /// JSON path, e.g. `kill_nested_containers[0].users.type`.
        path: String,
        /// What was wrong and what was expected.
        message: String,
    },
}

/// Options for [`parse`].
#[derive(Debug, Clone, Copy)]
pub struct ParseMode {
    /// Reject unknown keys, unknown entity types, `null`s, duplicate keys and
    /// `SOME` entities without values (default true).
    pub strict: bool,
}

impl Default for ParseMode {
    fn default() -> Self {
        ParseMode { strict: true }
    }
}

/// Maps byte offsets to line:column in O(log lines) plus the characters
/// between the previous lookup and this one (lookups come in mostly
/// increasing order while parsing), so large single-line files stay linear.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// (byte offset, column) of the last lookup.
    cursor: std::cell::Cell<(usize, usize)>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines {
            text,
            starts,
            cursor: std::cell::Cell::new((0, 1)),
        }
    }

    fn at(&self, offset: usize) -> Location {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset);
        let line_start = self.starts.get(line.wrapping_sub(1)).copied().unwrap_or(0);
        let (last, last_col) = self.cursor.get();
        let (from, col) = if last >= line_start && last <= offset {
            (last, last_col)
        } else {
            (line_start, 1)
        };
        let column = col + self.text.get(from..offset).map_or(0, |s| s.chars().count());
        self.cursor.set((offset, column));
        Location {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }
}

struct Parser<'a> {
    origin: &'a str,
    lines: Lines<'a>,
    strict: bool,
}

fn json_kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::StringLit(_) => "a string",
        Value::NumberLit(_) => "a number",
        Value::BooleanLit(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::NullKeyword(_) => "null",
    }
}

fn start(v: &Value<'_>) -> usize {
    match v {
        Value::StringLit(s) => s.range.start,
        Value::NumberLit(n) => n.range.start,
        Value::BooleanLit(b) => b.range.start,
        Value::Object(o) => o.range.start,
        Value::Array(a) => a.range.start,
        Value::NullKeyword(n) => n.range.start,
    }
}

impl Parser<'_> {
    fn err(&self, offset: usize, path: &str, message: impl Into<String>) -> ParseError {
        ParseError::Shape {
            origin: self.origin.to_owned(),
            location: self.lines.at(offset),
            path: if path.is_empty() {
                "(top level)".to_owned()
            } else {
                path.to_owned()
            },
            message: message.into(),
        }
    }

    /// The object's properties, last occurrence of a key winning (lenient),
    /// or an error on duplicates (strict). `null` values count as absent in
    /// lenient mode.
    fn props<'b, 'c>(
        &self,
        obj: &'b Object<'c>,
        path: &str,
    ) -> Result<Vec<&'b ObjectProp<'c>>, ParseError> {
        let mut out: Vec<&ObjectProp<'_>> = Vec::with_capacity(obj.properties.len());
        for prop in &obj.properties {
            let name = prop.name.as_str();
            if let Some(pos) = out.iter().position(|p| p.name.as_str() == name) {
                if self.strict {
                    return Err(self.err(
                        prop.range.start,
                        &join(path, name),
                        "duplicate key (Mesos would silently use one of them)",
                    ));
                }
                out.remove(pos);
            }
            if matches!(prop.value, Value::NullKeyword(_)) {
                if self.strict {
                    return Err(self.err(
                        start(&prop.value),
                        &join(path, name),
                        "null is not allowed here; remove the key instead",
                    ));
                }
                continue;
            }
            out.push(prop);
        }
        Ok(out)
    }

    fn unknown_key(
        &self,
        prop: &ObjectProp<'_>,
        path: &str,
        expected: &str,
    ) -> Result<(), ParseError> {
        if self.strict {
            Err(self.err(
                prop.range.start,
                &join(path, prop.name.as_str()),
                format!(
                    "unknown key {:?} (expected {expected}; Mesos would silently ignore it)",
                    prop.name.as_str()
                ),
            ))
        } else {
            tracing::warn!(
                origin = self.origin,
                key = %join(path, prop.name.as_str()),
                "ignoring unknown key in ACLs (lenient mode)"
            );
            Ok(())
        }
    }

    fn document(&self, root: &Value<'_>) -> Result<Document, ParseError> {
        let Value::Object(obj) = root else {
            return Err(self.err(
                start(root),
                "",
                format!(
                    "expected a JSON object (mesos.ACLs), found {}",
                    json_kind(root)
                ),
            ));
        };
        let mut doc = Document::default();
        for prop in self.props(obj, "")? {
            let key = prop.name.as_str();
            if key == "permissive" {
                match &prop.value {
                    Value::BooleanLit(b) => doc.permissive = b.value,
                    other => {
                        return Err(self.err(
                            start(other),
                            key,
                            format!("expected true or false, found {}", json_kind(other)),
                        ));
                    }
                }
                continue;
            }
            let Some(list) = List::from_json_key(key) else {
                self.unknown_key(prop, "", "\"permissive\" or an ACL list name such as \"launch_nested_containers_as_user\"")?;
                continue;
            };
            let Value::Array(array) = &prop.value else {
                return Err(self.err(
                    start(&prop.value),
                    key,
                    format!(
                        "expected an array of ACL entries, found {}",
                        json_kind(&prop.value)
                    ),
                ));
            };
            self.list(list, array, &mut doc)?;
        }
        Ok(doc)
    }

    fn list(&self, list: List, array: &Array<'_>, doc: &mut Document) -> Result<(), ParseError> {
        let spec = list.spec();
        for (i, element) in array.elements.iter().enumerate() {
            let path = format!("{}[{i}]", spec.json);
            let Value::Object(obj) = element else {
                return Err(self.err(
                    start(element),
                    &path,
                    format!("expected an ACL entry object, found {}", json_kind(element)),
                ));
            };
            let mut principals = None;
            let mut object = None;
            for prop in self.props(obj, &path)? {
                let key = prop.name.as_str();
                if key == "principals" {
                    principals = Some(self.entity(&prop.value, &join(&path, key))?);
                } else if key == spec.object {
                    object = Some(self.entity(&prop.value, &join(&path, key))?);
                } else {
                    self.unknown_key(
                        prop,
                        &path,
                        &format!("\"principals\" and \"{}\"", spec.object),
                    )?;
                }
            }
            let mut missing = Vec::new();
            if principals.is_none() {
                missing.push(format!("{path}.principals"));
            }
            if object.is_none() {
                missing.push(format!("{path}.{}", spec.object));
            }
            let (Some(principals), Some(object)) = (principals, object) else {
                return Err(self.err(
                    obj.range.start,
                    &path,
                    format!("Missing required fields: {}", missing.join(", ")),
                ));
            };
            doc.push(
                list,
                Entry {
                    principals,
                    object,
                    location: self.lines.at(obj.range.start),
                },
            );
        }
        Ok(())
    }

    fn entity(&self, value: &Value<'_>, path: &str) -> Result<Entity, ParseError> {
        let Value::Object(obj) = value else {
            return Err(self.err(
                start(value),
                path,
                format!(
                    "expected an entity object like {{\"type\": \"ANY\"}} or {{\"values\": [...]}}, found {}",
                    json_kind(value)
                ),
            ));
        };
        let mut kind = EntityType::Some;
        let mut values = Vec::new();
        for prop in self.props(obj, path)? {
            let key = prop.name.as_str();
            match key {
                "type" => match &prop.value {
                    Value::StringLit(s) => match s.value.as_ref() {
                        "SOME" => kind = EntityType::Some,
                        "ANY" => kind = EntityType::Any,
                        "NONE" => kind = EntityType::None,
                        other => {
                            if self.strict {
                                return Err(self.err(
                                    s.range.start,
                                    &join(path, key),
                                    format!(
                                        "unknown entity type {other:?} (expected \"SOME\", \"ANY\" or \"NONE\", upper case; Mesos would silently treat it as SOME, which with no values matches nothing)"
                                    ),
                                ));
                            }
                            tracing::warn!(origin = self.origin, path = %join(path, key), value = other, "unknown entity type dropped (lenient mode): the entity is SOME");
                            kind = EntityType::Some;
                        }
                    },
                    Value::NumberLit(n) => {
                        return Err(self.err(
                            n.range.start,
                            &join(path, key),
                            "Not expecting a JSON number for field 'type' (use \"SOME\", \"ANY\" or \"NONE\")",
                        ));
                    }
                    other => {
                        return Err(self.err(
                            start(other),
                            &join(path, key),
                            format!(
                                "expected \"SOME\", \"ANY\" or \"NONE\", found {}",
                                json_kind(other)
                            ),
                        ));
                    }
                },
                "values" => {
                    let Value::Array(array) = &prop.value else {
                        return Err(self.err(
                            start(&prop.value),
                            &join(path, key),
                            format!(
                                "expected an array of strings, found {}",
                                json_kind(&prop.value)
                            ),
                        ));
                    };
                    for (i, v) in array.elements.iter().enumerate() {
                        match v {
                            Value::StringLit(s) => values.push(s.value.as_ref().to_owned()),
                            other => {
                                return Err(self.err(
                                    start(other),
                                    &format!("{}[{i}]", join(path, key)),
                                    format!("expected a string, found {}", json_kind(other)),
                                ));
                            }
                        }
                    }
                }
                _ => self.unknown_key(prop, path, "\"type\" and \"values\"")?,
            }
        }
        if self.strict && kind == EntityType::Some && values.is_empty() {
            return Err(self.err(
                obj.range.start,
                path,
                "a SOME entity needs at least one value (with none it matches nothing, so the entry can never apply); use {\"type\": \"ANY\"} or {\"type\": \"NONE\"} or list values",
            ));
        }
        Ok(Entity {
            kind,
            values: values.into_iter().map(String::into_boxed_str).collect(),
        })
    }
}

fn join(path: &str, key: &str) -> String {
    let mut out = String::with_capacity(path.len() + key.len() + 1);
    out.push_str(path);
    if !path.is_empty() {
        out.push('.');
    }
    let _ = write!(out, "{key}");
    out
}

/// Parses ACL JSON text. `origin` names the source in errors (a file path or
/// `<inline>`).
pub fn parse(text: &str, origin: &str, mode: ParseMode) -> Result<Document, ParseError> {
    let options = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let lines = Lines::new(text);
    let parsed =
        jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options).map_err(|e| {
            ParseError::Syntax {
                origin: origin.to_owned(),
                location: lines.at(e.range().start),
                message: e.kind().to_string(),
            }
        })?;
    let Some(root) = parsed.value else {
        return Err(ParseError::Syntax {
            origin: origin.to_owned(),
            location: Location { line: 1, column: 1 },
            message: "the text is empty; expected a JSON object (mesos.ACLs)".to_owned(),
        });
    };
    let parser = Parser {
        origin,
        lines,
        strict: mode.strict,
    };
    parser.document(&root)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: ParseMode = ParseMode { strict: true };
    const LENIENT: ParseMode = ParseMode { strict: false };

    #[test]
    fn parses_entries_with_locations() {
        let text = "{\n  \"permissive\": false,\n  \"kill_nested_containers\": [\n    {\"principals\": {\"values\": [\"ops\"]}, \"users\": {\"type\": \"ANY\"}}\n  ]\n}";
        let doc = parse(text, "<inline>", STRICT).unwrap();
        assert!(!doc.permissive);
        let e = &doc.list(List::KillNestedContainers)[0];
        assert_eq!(e.principals, Entity::some(["ops"]));
        assert_eq!(e.object, Entity::any());
        assert_eq!(e.location, Location { line: 4, column: 5 });
    }

    #[test]
    fn strict_errors_name_path_and_position() {
        let text = "{\"launch_nested_containers_as_user\": [\n {\"principals\": {\"type\": \"ANY\"}, \"users\": {\"type\": \"ANY\"}},\n {\"principals\": {\"type\": \"ANY\"}, \"users\": {\"type\": \"NONE\"}},\n {\"principals\": {\"type\": \"ANY\"}, \"users\": {\"type\": \"any\"}}]}";
        let err = parse(text, "acls.json", STRICT).unwrap_err().to_string();
        assert!(
            err.starts_with("acls.json:4:52: launch_nested_containers_as_user[2].users.type: unknown entity type \"any\""),
            "{err}"
        );
        let doc = parse(text, "acls.json", LENIENT).unwrap();
        assert_eq!(
            doc.list(List::LaunchNestedContainersAsUser)[2].object,
            Entity::some(Vec::<String>::new())
        );
    }

    #[test]
    fn unknown_keys_and_missing_fields() {
        let err = parse(r#"{"kill_nested_container": []}"#, "f", STRICT).unwrap_err();
        assert!(
            err.to_string()
                .contains("kill_nested_container: unknown key"),
            "{err}"
        );
        assert!(parse(r#"{"kill_nested_container": []}"#, "f", LENIENT).is_ok());
        let err = parse(
            r#"{"run_tasks": [{"principals": {"type": "ANY"}}]}"#,
            "f",
            LENIENT,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("Missing required fields: run_tasks[0].users"),
            "{err}"
        );
        let err = parse(
            r#"{"run_tasks": [{"principals": {"type": 1}, "users": {"type": "ANY"}}]}"#,
            "f",
            LENIENT,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("Not expecting a JSON number for field 'type'"),
            "{err}"
        );
        let err = parse(
            r#"{"run_tasks": [{"principals": {}, "users": {"type": "ANY"}}]}"#,
            "f",
            STRICT,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("run_tasks[0].principals: a SOME entity needs"),
            "{err}"
        );
        let err = parse("{\"permissive\": true,}", "f", STRICT).unwrap_err();
        assert!(matches!(err, ParseError::Syntax { .. }), "{err}");
    }
}
