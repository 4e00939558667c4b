//! Warnings about ACLs that load fine but probably do not do what the
//! operator meant: entries that can never decide, duplicates, a NONE
//! principal that silences the rest of a list, and `permissive: true` next
//! to nested-container lists.
//!
//! "Can never decide" is exact for first-match: entry *j* is unreachable if an
//! earlier entry *i* matches every request *j* matches, i.e. each side of *i*
//! is wild (ANY/NONE) or a superset of *j*'s SOME values. The pairwise check
//! is quadratic, so lists longer than [`PAIRWISE_LIMIT`] only get the
//! wild-entry checks.

use std::collections::HashSet;

use super::lists::List;
use super::parse::{Document, Entity, EntityType, Location};

/// Longest list checked pairwise.
pub const PAIRWISE_LIMIT: usize = 4096;

/// One warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The list (None for document-wide warnings).
    pub list: Option<List>,
    /// The entry index in that list.
    pub index: Option<usize>,
    /// Where the entry is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.list, self.index) {
            (Some(l), Some(i)) => write!(
                f,
                "{}: {}[{i}]: {}",
                self.location,
                l.spec().json,
                self.message
            ),
            _ => f.write_str(&self.message),
        }
    }
}

fn wild(e: &Entity) -> bool {
    e.kind != EntityType::Some
}

/// Whether every request side matched by `later` is matched by `earlier`.
fn covers(earlier: &Entity, later: &Entity) -> bool {
    if wild(earlier) {
        return true;
    }
    if wild(later) {
        return false;
    }
    later.values.iter().all(|v| earlier.values.contains(v))
}

fn same(a: &Entity, b: &Entity) -> bool {
    a.kind == b.kind
        && (a.kind != EntityType::Some || {
            let x: HashSet<&str> = a.values.iter().map(AsRef::as_ref).collect();
            let y: HashSet<&str> = b.values.iter().map(AsRef::as_ref).collect();
            x == y
        })
}

/// All warnings for a document.
pub fn lint(doc: &Document) -> Vec<Warning> {
    let mut out = Vec::new();
    for &list in List::ALL {
        let entries = doc.list(list);
        let json = list.spec().json;
        let first_wild = entries
            .iter()
            .position(|p| wild(&p.principals) && wild(&p.object));
        for (j, e) in entries.iter().enumerate() {
            let warn = |message: String| Warning {
                list: Some(list),
                index: Some(j),
                location: e.location,
                message,
            };
            if (e.principals.kind == EntityType::Some && e.principals.values.is_empty())
                || (e.object.kind == EntityType::Some && e.object.values.is_empty())
            {
                out.push(warn(
                    "a SOME entity has no values, so this entry matches nothing".to_owned(),
                ));
                continue;
            }
            if (wild(&e.principals) && !e.principals.values.is_empty())
                || (wild(&e.object) && !e.object.values.is_empty())
            {
                out.push(warn(
                    "values are ignored for ANY and NONE entities".to_owned(),
                ));
            }
            let earlier: Box<dyn Iterator<Item = (usize, &_)>> = if entries.len() <= PAIRWISE_LIMIT
            {
                Box::new(entries.iter().enumerate().take(j))
            } else {
                // Only the first entry wild on both sides can shadow everything after it.
                Box::new(
                    first_wild
                        .filter(|&i| i < j)
                        .and_then(|i| entries.get(i).map(|p| (i, p)))
                        .into_iter(),
                )
            };
            for (i, p) in earlier {
                if !(covers(&p.principals, &e.principals) && covers(&p.object, &e.object)) {
                    continue;
                }
                let message = if same(&p.principals, &e.principals) && same(&p.object, &e.object) {
                    format!("duplicate of {json}[{i}]; it can never decide")
                } else if p.principals.kind == EntityType::None && wild(&p.object) {
                    format!(
                        "unreachable: {json}[{i}] has principals NONE, which matches every request and denies it, so no entry after it ever decides"
                    )
                } else {
                    format!(
                        "unreachable: {json}[{i}] matches every request this entry matches (it is shadowed)"
                    )
                };
                out.push(warn(message));
                break;
            }
        }
    }
    let nested: Vec<&str> = List::ALL
        .iter()
        .filter(|l| l.is_nested_container() && !doc.list(**l).is_empty())
        .map(|l| l.spec().json)
        .collect();
    if doc.permissive && !nested.is_empty() {
        out.push(Warning {
            list: None,
            index: None,
            location: Location::default(),
            message: format!(
                "permissive is true (the default) while nested-container lists are set ({}): any request no entry matches is ALLOWED; consider \"permissive\": false or a final {{\"principals\": {{\"type\": \"ANY\"}}, \"users\": {{\"type\": \"NONE\"}}}} entry",
                nested.join(", ")
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::parse::{ParseMode, parse};

    #[test]
    fn finds_shadowed_duplicates_and_none() {
        let doc = parse(
            r#"{"permissive": false, "kill_nested_containers": [
              {"principals": {"values": ["a", "b"]}, "users": {"type": "ANY"}},
              {"principals": {"values": ["a"]}, "users": {"values": ["x"]}},
              {"principals": {"values": ["b", "a"]}, "users": {"type": "ANY"}},
              {"principals": {"type": "NONE"}, "users": {"type": "ANY"}},
              {"principals": {"values": ["c"]}, "users": {"type": "ANY"}}
            ]}"#,
            "<t>",
            ParseMode::default(),
        )
        .unwrap();
        let w: Vec<String> = lint(&doc).iter().map(ToString::to_string).collect();
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("[1]: unreachable"), "{w:?}");
        assert!(
            w[1].contains("[2]: duplicate of kill_nested_containers[0]"),
            "{w:?}"
        );
        assert!(
            w[2].contains("[4]: unreachable: kill_nested_containers[3] has principals NONE"),
            "{w:?}"
        );
    }

    #[test]
    fn permissive_with_nested_lists() {
        let doc = parse(
            r#"{"manage_nested_containers": [{"principals": {"values": ["a"]}, "users": {"type": "ANY"}}]}"#,
            "<t>",
            ParseMode::default(),
        )
        .unwrap();
        let w = lint(&doc);
        assert_eq!(w.len(), 1);
        assert!(w[0].message.contains("permissive is true"));
    }

    #[test]
    fn long_lists_only_check_wild_shadowing() {
        use crate::authz::parse::Entry;
        let mut doc = Document::default();
        let n = PAIRWISE_LIMIT + 10;
        for i in 0..n {
            let (p, o) = if i == 5 {
                (Entity::any(), Entity::none())
            } else {
                (
                    Entity::some([format!("p{i}")]),
                    Entity::some([format!("u{i}")]),
                )
            };
            doc.push(
                List::ViewContainers,
                Entry {
                    principals: p,
                    object: o,
                    location: Location::default(),
                },
            );
        }
        let w = lint(&doc);
        assert_eq!(w.len(), n - 6);
        assert!(w.iter().all(|w| w.message.contains("view_containers[5]")));
    }
}
