//! The cases file of `nestguard acls test`, JSON or YAML: `.yaml` / `.yml`
//! are YAML, `.json` is JSON, any other name is JSON when its first
//! character that is not blank or a `#` comment line is `[`, else YAML.
//!
//! YAML is read here, not in the library, so that the plugin does not link
//! a YAML parser: each case becomes the JSON value the library's runner
//! takes (`run_case_values`), with the line and column where it starts.
//! saphyr (the maintained successor of yaml-rust2; serde_yaml is
//! deprecated) keeps a span on every node, so errors name the file, line
//! and column. YAML 1.2's core schema applies (`no` is a string, not
//! false, and `!!str` and the other core tags resolve as usual); other tags
//! are refused, since a case has no type to give them. Aliases are
//! resolved by the loader (a copy of the anchored node).

use std::path::Path;

use nestguard::authz::Location;
use nestguard::authz::analysis::{self, AnalysisError, CasesReport};
use nestguard::authz::compile::Policy;
use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use saphyr_parser::Event;
use serde_json::Value;

/// Runs the cases of `path` (at most 16 MiB) against `policy`.
pub fn run(policy: &Policy, path: &Path) -> Result<CasesReport, AnalysisError> {
    let (text, origin) = analysis::read_cases_file(path)?;
    if is_yaml(path, &text) {
        let cases = yaml_cases(&text, &origin)?;
        analysis::run_case_values(policy, cases, &origin)
    } else {
        analysis::run_cases(policy, &text, &origin)
    }
}

/// Whether `path` holds YAML (see the module notes).
fn is_yaml(path: &Path, text: &str) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => true,
        Some("json") => false,
        _ => !text
            .lines()
            .map(str::trim_start)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .is_some_and(|l| l.starts_with('[')),
    }
}

fn at(span_start: &saphyr::Marker) -> Location {
    Location {
        line: u32::try_from(span_start.line()).unwrap_or(u32::MAX),
        column: u32::try_from(span_start.col() + 1).unwrap_or(u32::MAX),
    }
}

/// The cases of a YAML document: a sequence of mappings.
fn yaml_cases(text: &str, origin: &str) -> Result<Vec<(Location, Value)>, AnalysisError> {
    let syntax = |location, message: String| AnalysisError::CasesSyntax {
        origin: origin.to_owned(),
        location,
        message,
    };
    nesting_within(text, MAX_NESTING).map_err(|(location, message)| syntax(location, message))?;
    let docs = MarkedYaml::load_from_str(text)
        .map_err(|e| syntax(at(e.marker()), format!("not valid YAML: {}", e.info())))?;
    let first_line = Location { line: 1, column: 1 };
    let [doc] = docs.as_slice() else {
        return Err(syntax(
            first_line,
            format!(
                "expected one YAML document holding a list of test cases, found {}",
                docs.len()
            ),
        ));
    };
    let YamlData::Sequence(items) = &doc.data else {
        return Err(syntax(
            at(&doc.span.start),
            "expected a YAML list of test cases".to_owned(),
        ));
    };
    items
        .iter()
        .map(|item| {
            let value = to_json(item).map_err(|(node, message)| syntax(node, message))?;
            Ok((at(&item.span.start), value))
        })
        .collect()
}

/// The deepest nesting of sequences and mappings a cases file may have. A
/// case is a mapping of a few levels; the conversion below recurses once
/// per level, and so does dropping saphyr's tree, so a file nested a
/// million deep would overflow the stack and abort the process.
const MAX_NESTING: usize = 64;

/// Checks on the parser's events, before any tree is built (building it
/// is what recurses), that no node is nested deeper than `max`, counting
/// an alias as deep as the node it copies. The error names the line and
/// column of the collection that goes too deep; a YAML error is left to
/// the loader, which reports it the same way.
fn nesting_within(text: &str, max: usize) -> Result<(), (Location, String)> {
    /// An open collection: its anchor, and the height of its tallest child.
    struct Open {
        anchor: usize,
        tallest: usize,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let too_deep = |span: &saphyr_parser::Span| {
        (
            at(&span.start),
            format!("nested deeper than {max} levels (lists and mappings)"),
        )
    };
    for event in saphyr_parser::Parser::new_from_str(text) {
        let Ok((event, span)) = event else {
            return Ok(());
        };
        let height = match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if open.len() >= max {
                    return Err(too_deep(&span));
                }
                open.push(Open { anchor, tallest: 0 });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(done) = open.pop() else { continue };
                let height = done.tallest + 1;
                if done.anchor > 0 {
                    anchors.insert(done.anchor, height);
                }
                height
            }
            Event::Scalar(..) => 0,
            Event::Alias(anchor) => {
                let height = anchors.get(&anchor).copied().unwrap_or(0);
                if open.len() + height > max {
                    return Err(too_deep(&span));
                }
                height
            }
            _ => continue,
        };
        if let Some(parent) = open.last_mut() {
            parent.tallest = parent.tallest.max(height);
        }
    }
    Ok(())
}

/// A node as JSON, or where and why it cannot be.
fn to_json(node: &MarkedYaml<'_>) -> Result<Value, (Location, String)> {
    let here = at(&node.span.start);
    match &node.data {
        YamlData::Value(scalar) => {
            scalar_json(scalar).ok_or((here, "a number that JSON cannot hold".to_owned()))
        }
        YamlData::Representation(text, style, tag) => {
            let resolved =
                MarkedYaml::value_from_cow_and_metadata(text.clone(), *style, tag.as_ref());
            match resolved.data {
                YamlData::Value(scalar) => {
                    scalar_json(&scalar).ok_or((here, "a number that JSON cannot hold".to_owned()))
                }
                _ => Err((here, format!("`{text}` is not a valid value"))),
            }
        }
        YamlData::Sequence(items) => items
            .iter()
            .map(to_json)
            .collect::<Result<_, _>>()
            .map(Value::Array),
        YamlData::Mapping(map) => {
            let mut object = serde_json::Map::new();
            for (key, value) in map {
                let name = match &key.data {
                    YamlData::Value(Scalar::String(s)) => s.to_string(),
                    _ => {
                        return Err((
                            at(&key.span.start),
                            "a mapping key must be a string".to_owned(),
                        ));
                    }
                };
                if object.insert(name.clone(), to_json(value)?).is_some() {
                    return Err((at(&key.span.start), format!("duplicate key `{name}`")));
                }
            }
            Ok(Value::Object(object))
        }
        YamlData::Tagged(tag, _) => Err((
            here,
            format!("tags ({tag}) are not accepted in a cases file"),
        )),
        // The loader resolves aliases; one left over names nothing.
        YamlData::Alias(_) => Err((here, "an alias to no anchor".to_owned())),
        YamlData::BadValue => Err((here, "not a valid YAML value".to_owned())),
    }
}

fn scalar_json(scalar: &Scalar<'_>) -> Option<Value> {
    Some(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::from(*i),
        Scalar::FloatingPoint(f) => Value::Number(serde_json::Number::from_f64(f.into_inner())?),
        Scalar::String(s) => Value::String(s.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_picked_by_extension_then_by_content() {
        assert!(is_yaml(Path::new("c.yaml"), "[]"));
        assert!(is_yaml(Path::new("c.yml"), "[]"));
        assert!(!is_yaml(Path::new("c.json"), "- a: 1"));
        assert!(!is_yaml(Path::new("cases"), "  # a comment\n\n [ {} ]"));
        assert!(is_yaml(Path::new("cases"), "# a comment\n- name: x\n"));
    }

    #[test]
    fn cases_keep_their_lines_and_yaml_12_scalars() {
        let text = "# cases\n- name: one\n  expect: allow\n  user: no\n\n- {name: two, n: 3, f: 1.5, z: null, t: true}\n";
        let cases = yaml_cases(text, "c.yaml").unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].0, Location { line: 2, column: 3 });
        assert_eq!(
            cases[0].1,
            serde_json::json!({"name": "one", "expect": "allow", "user": "no"})
        );
        assert_eq!(cases[1].0.line, 6);
        assert_eq!(
            cases[1].1,
            serde_json::json!({"name": "two", "n": 3, "f": 1.5, "z": null, "t": true})
        );
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let message = |text: &str| yaml_cases(text, "c.yaml").unwrap_err().to_string();
        assert_eq!(
            message("name: x\n"),
            "c.yaml:1:1: expected a YAML list of test cases"
        );
        let broken = message("- name: x\n  expect: [allow\n");
        assert!(broken.starts_with("c.yaml:3:"), "{broken}");
        assert!(broken.contains("not valid YAML"), "{broken}");
        let dup = message("- name: x\n  name: y\n");
        assert!(dup.starts_with("c.yaml:2:"), "{dup}");
        assert_eq!(
            message("- !custom x\n"),
            "c.yaml:1:3: tags (!custom) are not accepted in a cases file"
        );
    }

    #[test]
    fn deep_nesting_is_refused_before_a_tree_is_built() {
        let message = |text: &str| yaml_cases(text, "c.yaml").unwrap_err().to_string();
        // A million levels: converting or dropping such a tree would
        // overflow the stack.
        let deep = format!("{}x\n", "- ".repeat(1_000_000));
        assert_eq!(
            message(&deep),
            "c.yaml:1:129: nested deeper than 64 levels (lists and mappings)"
        );
        let flow = format!("{}{}\n", "[".repeat(100), "]".repeat(100));
        let flow = message(&flow);
        assert!(flow.starts_with("c.yaml:1:65: nested deeper"), "{flow}");
        // saphyr's scanner bounds flow nesting itself (an error, no crash).
        let flow = format!("{}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let flow = message(&flow);
        assert!(flow.contains("not valid YAML"), "{flow}");
        // An alias is as deep as what it copies.
        let half = "[".repeat(40) + &"]".repeat(40);
        let aliased = format!(
            "- &a {half}\n- [[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"
        );
        let aliased = message(&aliased);
        assert!(aliased.contains("nested deeper than 64"), "{aliased}");
        // 64 levels are fine as far as nesting goes.
        let ok = format!("- {}{}\n", "[".repeat(63), "]".repeat(63));
        assert!(nesting_within(&ok, MAX_NESTING).is_ok());
    }
}
