//! [`Document`] → [`Policy`]: per-list indexes that find the first matching
//! entry without scanning the list.
//!
//! A request has one subject (a principal value, or ANY when
//! unauthenticated) and one object (a value, or ANY). An entry's side is
//! either *wild* (ANY or NONE: matches every request) or SOME (matches only
//! request values it lists; never matches a request ANY). So the first match
//! is the smallest entry index among four buckets, each answerable with at
//! most one hash lookup:
//!
//! | principals \ object | wild | SOME |
//! |---|---|---|
//! | wild | `wild` (one number) | `objects[o]` |
//! | SOME | `principals[s].any_object` | `principals[s].objects[o]` |
//!
//! Building a bucket in entry order and keeping the first index per key
//! preserves Mesos' first-match semantics exactly. An entry with SOME and no
//! values matches nothing and is indexed nowhere. The SOME×SOME bucket holds
//! one key per (principal, user) pair of an entry; that product is what the
//! index costs in memory.

use std::collections::HashMap;
use std::collections::hash_map::Entry as MapEntry;

use rustc_hash::FxBuildHasher;

use super::lists::List;
use super::parse::{Document, Entity, EntityType};

/// "No entry matched".
pub const NO_MATCH: u32 = u32::MAX;

type Map<V> = HashMap<Box<[u8]>, V, FxBuildHasher>;

/// Where an entry of a compiled list came from, and its verdict if it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryMeta {
    /// The list the entry is written in (`manage_nested_containers` for
    /// appended entries).
    pub origin: List,
    /// Its index in that list.
    pub index: u32,
    /// The decision when it is the first match: `allows()` on both sides,
    /// i.e. neither side is NONE.
    pub allows: bool,
}

/// One side of a request: a value, or ANY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Req<'a> {
    /// No value: unauthenticated subject, or an object without the field.
    Any,
    /// A single value (possibly empty).
    Some(&'a [u8]),
}

#[derive(Debug, Default)]
struct PrincipalSlot {
    any_object: u32,
    objects: Map<u32>,
}

/// One list, compiled.
#[derive(Debug)]
pub struct CompiledList {
    entries: Box<[EntryMeta]>,
    principals: Map<PrincipalSlot>,
    objects: Map<u32>,
    wild: u32,
}

fn is_wild(e: &Entity) -> bool {
    e.kind != EntityType::Some
}

fn keep_first(slot: &mut u32, index: u32) {
    if *slot > index {
        *slot = index;
    }
}

impl CompiledList {
    fn build<'a>(entries: impl Iterator<Item = (List, u32, &'a Entity, &'a Entity)>) -> Self {
        let mut list = CompiledList {
            entries: Box::new([]),
            principals: Map::default(),
            objects: Map::default(),
            wild: NO_MATCH,
        };
        let mut metas = Vec::new();
        for (i, (origin, index, principals, object)) in entries.enumerate() {
            #[expect(
                clippy::expect_used,
                reason = "validate() refuses a list whose entries do not fit below NO_MATCH"
            )]
            let i = u32::try_from(i).expect("a validated list's entries are numbered in u32");
            metas.push(EntryMeta {
                origin,
                index,
                allows: principals.kind != EntityType::None && object.kind != EntityType::None,
            });
            match (is_wild(principals), is_wild(object)) {
                (true, true) => keep_first(&mut list.wild, i),
                (true, false) => {
                    for u in &object.values {
                        list.objects.entry(key(u)).or_insert(i);
                    }
                }
                (false, true) => {
                    for p in &principals.values {
                        keep_first(&mut list.slot(p).any_object, i);
                    }
                }
                (false, false) => {
                    for p in &principals.values {
                        let slot = list.slot(p);
                        for u in &object.values {
                            slot.objects.entry(key(u)).or_insert(i);
                        }
                    }
                }
            }
        }
        list.entries = metas.into_boxed_slice();
        list
    }

    fn slot(&mut self, principal: &str) -> &mut PrincipalSlot {
        match self.principals.entry(key(principal)) {
            MapEntry::Occupied(e) => e.into_mut(),
            MapEntry::Vacant(e) => e.insert(PrincipalSlot {
                any_object: NO_MATCH,
                objects: Map::default(),
            }),
        }
    }

    /// The index of the first entry matching (subject, object), or [`NO_MATCH`].
    #[inline]
    pub fn first_match(&self, subject: Req<'_>, object: Req<'_>) -> u32 {
        let mut best = self.wild;
        if let Req::Some(o) = object
            && let Some(&i) = self.objects.get(o)
        {
            best = best.min(i);
        }
        if let Req::Some(s) = subject
            && let Some(slot) = self.principals.get(s)
        {
            best = best.min(slot.any_object);
            if let Req::Some(o) = object
                && let Some(&i) = slot.objects.get(o)
            {
                best = best.min(i);
            }
        }
        best
    }

    /// The entry at a compiled index.
    pub fn entry(&self, index: u32) -> Option<EntryMeta> {
        self.entries.get(index as usize).copied()
    }

    /// Number of entries (including appended `manage_nested_containers`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn key(s: &str) -> Box<[u8]> {
    Box::from(s.as_bytes())
}

/// A loaded, validated and compiled ACL policy. Immutable; shared by `Arc`.
#[derive(Debug)]
pub struct Policy {
    /// The source document (for explanations, lint and role actions).
    pub doc: Document,
    /// Where it came from (file path or `<inline>`).
    pub origin: String,
    lists: Box<[CompiledList]>,
}

impl Policy {
    /// Compiles a document that passed [`super::validate::validate`] (which
    /// bounds the number of entries per list).
    pub fn compile(doc: Document, origin: String) -> Self {
        let lists = List::ALL
            .iter()
            .map(|&list| {
                let own = doc
                    .list(list)
                    .iter()
                    .enumerate()
                    .map(move |(i, e)| (list, idx(i), &e.principals, &e.object));
                let manage: &[_] = if list.receives_manage() {
                    doc.list(List::ManageNestedContainers)
                } else {
                    &[]
                };
                let appended = manage.iter().enumerate().map(|(i, e)| {
                    (
                        List::ManageNestedContainers,
                        idx(i),
                        &e.principals,
                        &e.object,
                    )
                });
                CompiledList::build(own.chain(appended))
            })
            .collect();
        Policy { doc, origin, lists }
    }

    /// `ACLs.permissive`.
    pub fn permissive(&self) -> bool {
        self.doc.permissive
    }

    /// A compiled list.
    pub fn list(&self, list: List) -> &CompiledList {
        // `lists` has one element per `List::ALL` entry, indexed by discriminant.
        &self.lists[list as usize]
    }
}

#[expect(
    clippy::expect_used,
    reason = "validate() refuses a list whose entries do not fit below NO_MATCH"
)]
fn idx(i: usize) -> u32 {
    u32::try_from(i).expect("a validated list's entries are numbered in u32")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::parse::{Entry, Location};

    fn entry(p: Entity, o: Entity) -> Entry {
        Entry {
            principals: p,
            object: o,
            location: Location::default(),
        }
    }

    #[test]
    fn first_match_across_buckets() {
        let mut doc = Document::default();
        let l = List::KillNestedContainers;
        doc.push(l, entry(Entity::some(["a"]), Entity::some(["x"])));
        doc.push(l, entry(Entity::some(["a"]), Entity::any()));
        doc.push(l, entry(Entity::any(), Entity::some(["y"])));
        doc.push(l, entry(Entity::none(), Entity::none()));
        doc.push(
            List::ManageNestedContainers,
            entry(Entity::some(["m"]), Entity::any()),
        );
        let p = Policy::compile(doc, "<t>".into());
        let c = p.list(l);
        assert_eq!(c.len(), 5);
        assert_eq!(c.first_match(Req::Some(b"a"), Req::Some(b"x")), 0);
        assert_eq!(c.first_match(Req::Some(b"a"), Req::Some(b"y")), 1);
        assert_eq!(c.first_match(Req::Some(b"b"), Req::Some(b"y")), 2);
        assert_eq!(c.first_match(Req::Any, Req::Some(b"y")), 2);
        assert_eq!(c.first_match(Req::Any, Req::Any), 3);
        assert_eq!(c.entry(4).unwrap().origin, List::ManageNestedContainers);
        assert!(!c.entry(3).unwrap().allows);
    }
}
