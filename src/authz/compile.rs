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
//! | wild | `wild` (one number) | `by_object[o]` |
//! | SOME | `by_principal[s]` | `pairs[(s, o)]` |
//!
//! Building a bucket in entry order and keeping the first index per key
//! preserves Mesos' first-match semantics exactly. An entry with SOME and no
//! values matches nothing and is indexed nowhere. The SOME×SOME bucket holds
//! one key per (principal, user) pair of an entry; that product is what the
//! index costs in memory.
//!
//! Why symbols: every value is stored once, in the policy's [`Interner`],
//! and the buckets are keyed by 4-byte symbols. A request's values are
//! resolved to symbols once (one string hash each); a value the policy never
//! names matches no SOME side, so those buckets are skipped outright. Before
//! this (issue 29), each principal owned a hash map of its own and every
//! key a boxed copy of its string: 509 bytes per `p<i>`→`u<i>` entry.

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use super::lists::List;
use super::parse::{Document, Entity, EntityType};

/// "No entry matched".
pub const NO_MATCH: u32 = u32::MAX;

/// A value's number: its offset in the policy's [`Strings`].
type Sym = u32;

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

/// Every distinct value a policy's SOME entities name, stored once, each
/// as its length (a protobuf varint) then its bytes; a value's offset is its
/// symbol. The table that finds a value's symbol is needed only while
/// compiling ([`Interner`]), not kept.
#[derive(Debug, Default)]
struct Strings {
    bytes: Vec<u8>,
}

impl Strings {
    /// The value of a symbol (empty for an offset not made here: never).
    #[inline(always)]
    fn get(&self, sym: Sym) -> &[u8] {
        let mut rest = self.bytes.get(sym as usize..).unwrap_or_default();
        let len = match rest.split_first() {
            // The usual value is shorter than 128 bytes: a one-byte length.
            Some((&len, tail)) if len < 0x80 => {
                rest = tail;
                u64::from(len)
            }
            _ => prost::encoding::decode_varint(&mut rest).unwrap_or(0),
        };
        usize::try_from(len)
            .ok()
            .and_then(|len| rest.get(..len))
            .unwrap_or_default()
    }
}

/// The hash of a value, as buckets are keyed.
#[inline(always)]
fn hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

/// The hash of a (principal, object) pair from the two values' hashes
/// (already mixed by [`hash`]; rotated so that equal values do not cancel).
#[inline]
fn pair_hash(principal: u64, object: u64) -> u64 {
    principal ^ object.rotate_left(32)
}

/// A request's value, hashed once per decision (a launch reads two lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key<'a> {
    bytes: &'a [u8],
    hash: u64,
}

/// Compile-time only: the symbol of each value already stored.
#[derive(Default)]
struct Interner {
    strings: Strings,
    table: HashTable<(Sym, u64)>,
}

impl Interner {
    /// The symbol and hash of `value`, stored if new. [`super::validate::validate`]
    /// bounds the values' total size (with their lengths) below `u32::MAX`
    /// bytes, so offsets fit.
    fn intern(&mut self, value: &str) -> (Sym, u64) {
        let value = value.as_bytes();
        let h = hash(value);
        let Interner { strings, table } = self;
        if let Some(&(sym, _)) = table.find(h, |&(s, _)| strings.get(s) == value) {
            return (sym, h);
        }
        let sym = to_u32(strings.bytes.len());
        prost::encoding::encode_varint(value.len() as u64, &mut strings.bytes);
        strings.bytes.extend_from_slice(value);
        table.insert_unique(h, (sym, h), |&(_, h)| h);
        (sym, h)
    }

    /// The values, without spare capacity, and without the table.
    fn finish(self) -> Strings {
        let mut strings = self.strings;
        strings.bytes.shrink_to_fit();
        strings
    }
}

/// One list, compiled.
#[derive(Debug)]
pub struct CompiledList {
    entries: Box<[EntryMeta]>,
    /// wild principals × SOME object: (object, first entry).
    by_object: HashTable<(Sym, u32)>,
    /// SOME principals × wild object: (principal, first entry).
    by_principal: HashTable<(Sym, u32)>,
    /// SOME × SOME: (principal, object, first entry), keyed by
    /// [`pair_hash`] so a lookup is one probe, comparing both values.
    pairs: HashTable<(Sym, Sym, u32)>,
    wild: u32,
}

fn is_wild(e: &Entity) -> bool {
    e.kind != EntityType::Some
}

/// Keeps the first entry per value: later entries with it never decide.
fn keep_first(table: &mut HashTable<(Sym, u32)>, strings: &Strings, (sym, h): (Sym, u64), i: u32) {
    if table.find(h, |&(s, _)| s == sym).is_none() {
        table.insert_unique(h, (sym, i), |&(s, _)| hash(strings.get(s)));
    }
}

impl CompiledList {
    fn build<'a>(
        strings: &mut Interner,
        entries: impl Iterator<Item = (List, u32, &'a Entity, &'a Entity)>,
    ) -> Self {
        let mut list = CompiledList {
            entries: Box::new([]),
            by_object: HashTable::new(),
            by_principal: HashTable::new(),
            pairs: HashTable::new(),
            wild: NO_MATCH,
        };
        let mut metas = Vec::new();
        let mut objects = Vec::new();
        for (i, (origin, index, principals, object)) in entries.enumerate() {
            let i = to_u32(i);
            metas.push(EntryMeta {
                origin,
                index,
                allows: principals.kind != EntityType::None && object.kind != EntityType::None,
            });
            match (is_wild(principals), is_wild(object)) {
                (true, true) => list.wild = list.wild.min(i),
                (true, false) => {
                    for u in &object.values {
                        let key = strings.intern(u);
                        keep_first(&mut list.by_object, &strings.strings, key, i);
                    }
                }
                (false, true) => {
                    for p in &principals.values {
                        let key = strings.intern(p);
                        keep_first(&mut list.by_principal, &strings.strings, key, i);
                    }
                }
                (false, false) => {
                    objects.clear();
                    objects.extend(object.values.iter().map(|u| strings.intern(u)));
                    for p in &principals.values {
                        let (p, ph) = strings.intern(p);
                        for &(o, oh) in &objects {
                            list.keep_first_pair(&strings.strings, (p, ph), (o, oh), i);
                        }
                    }
                }
            }
        }
        list.entries = metas.into_boxed_slice();
        let strings = &strings.strings;
        let one = |&(s, _): &(Sym, u32)| hash(strings.get(s));
        list.by_object.shrink_to_fit(one);
        list.by_principal.shrink_to_fit(one);
        list.pairs
            .shrink_to_fit(|&(p, o, _)| pair_hash(hash(strings.get(p)), hash(strings.get(o))));
        list
    }

    fn keep_first_pair(
        &mut self,
        strings: &Strings,
        (p, ph): (Sym, u64),
        (o, oh): (Sym, u64),
        i: u32,
    ) {
        let h = pair_hash(ph, oh);
        if self.pairs.find(h, |&(a, b, _)| a == p && b == o).is_none() {
            self.pairs.insert_unique(h, (p, o, i), |&(a, b, _)| {
                pair_hash(hash(strings.get(a)), hash(strings.get(b)))
            });
        }
    }

    /// The index of the first entry matching (subject, object) (`None`:
    /// ANY, which no SOME side matches), or [`NO_MATCH`].
    #[inline]
    fn first_match(
        &self,
        strings: &Strings,
        subject: Option<Key<'_>>,
        object: Option<Key<'_>>,
    ) -> u32 {
        let mut best = self.wild;
        // An empty table is not probed at all: most lists leave two of the
        // three empty, and a probe of an empty table costs a few ns.
        let one = |table: &HashTable<(Sym, u32)>, k: Key<'_>| {
            if table.is_empty() {
                return None;
            }
            table
                .find(k.hash, |&(s, _)| strings.get(s) == k.bytes)
                .map(|&(_, i)| i)
        };
        if let Some(o) = object
            && let Some(i) = one(&self.by_object, o)
        {
            best = best.min(i);
        }
        if let Some(s) = subject {
            if let Some(i) = one(&self.by_principal, s) {
                best = best.min(i);
            }
            if let Some(o) = object
                && !self.pairs.is_empty()
                && let Some(&(_, _, i)) =
                    self.pairs.find(pair_hash(s.hash, o.hash), |&(p, q, _)| {
                        strings.get(p) == s.bytes && strings.get(q) == o.bytes
                    })
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

/// A loaded, validated and compiled ACL policy. Immutable; shared by `Arc`.
#[derive(Debug)]
pub struct Policy {
    /// The source document (for explanations, lint and role actions).
    pub doc: Document,
    /// Where it came from (file path or `<inline>`).
    pub origin: String,
    strings: Strings,
    lists: Box<[CompiledList]>,
}

impl Policy {
    /// Compiles a document that passed [`super::validate::validate`] (which
    /// bounds the number of entries per list and the values' total size).
    pub fn compile(mut doc: Document, origin: String) -> Self {
        // Kept for explanations: no spare capacity from parsing.
        for l in &mut doc.lists {
            l.shrink_to_fit();
        }
        let mut strings = Interner::default();
        let lists = List::ALL
            .iter()
            .map(|&list| {
                let own = doc
                    .list(list)
                    .iter()
                    .enumerate()
                    .map(move |(i, e)| (list, to_u32(i), &e.principals, &e.object));
                let manage: &[_] = if list.receives_manage() {
                    doc.list(List::ManageNestedContainers)
                } else {
                    &[]
                };
                let appended = manage.iter().enumerate().map(|(i, e)| {
                    (
                        List::ManageNestedContainers,
                        to_u32(i),
                        &e.principals,
                        &e.object,
                    )
                });
                CompiledList::build(&mut strings, own.chain(appended))
            })
            .collect();
        let strings = strings.finish();
        Policy {
            doc,
            origin,
            strings,
            lists,
        }
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

    /// The index in `list` of the first entry matching (subject, object), or
    /// [`NO_MATCH`].
    #[inline]
    pub fn first_match(&self, list: List, subject: Req<'_>, object: Req<'_>) -> u32 {
        self.first_match_of(list, Self::key(subject), Self::key(object))
    }

    /// A request side as the buckets look it up: `None` for ANY (which no
    /// SOME side matches), else the value with its hash. Hashed once per
    /// decision (a launch reads two lists).
    #[inline]
    pub fn key(side: Req<'_>) -> Option<Key<'_>> {
        match side {
            Req::Any => None,
            Req::Some(bytes) => Some(Key {
                bytes,
                hash: hash(bytes),
            }),
        }
    }

    /// [`Policy::first_match`] over sides made by [`Policy::key`].
    #[inline]
    pub fn first_match_of(
        &self,
        list: List,
        subject: Option<Key<'_>>,
        object: Option<Key<'_>>,
    ) -> u32 {
        self.list(list).first_match(&self.strings, subject, object)
    }
}

#[expect(
    clippy::expect_used,
    reason = "validate() refuses a list whose entries, or values whose bytes, do not fit in u32"
)]
fn to_u32(i: usize) -> u32 {
    u32::try_from(i).expect("validated: entries and value bytes are numbered in u32")
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
        let m = |s, o| p.first_match(l, s, o);
        assert_eq!(m(Req::Some(b"a"), Req::Some(b"x")), 0);
        assert_eq!(m(Req::Some(b"a"), Req::Some(b"y")), 1);
        assert_eq!(m(Req::Some(b"b"), Req::Some(b"y")), 2);
        assert_eq!(m(Req::Any, Req::Some(b"y")), 2);
        assert_eq!(m(Req::Any, Req::Any), 3);
        assert_eq!(m(Req::Some(b"a"), Req::Some(b"zz")), 1);
        assert_eq!(m(Req::Some(b"zz"), Req::Some(b"x")), 3);
        assert_eq!(c.entry(4).unwrap().origin, List::ManageNestedContainers);
        assert!(!c.entry(3).unwrap().allows);
    }

    fn entity() -> impl proptest::strategy::Strategy<Value = Entity> {
        use proptest::prelude::*;
        prop_oneof![
            1 => Just(Entity::any()),
            1 => Just(Entity::none()),
            4 => proptest::collection::vec(proptest::sample::select(&["a", "b", "", "x"][..]), 0..3)
                .prop_map(Entity::some),
        ]
    }

    proptest::proptest! {
        /// The symbol-keyed buckets, with one interner shared by every list
        /// (a value named in one list only, values in both sides, values
        /// no list names), find the entry a plain first-match scan finds.
        #[test]
        fn symbol_buckets_equal_a_scan(
            lists in proptest::collection::vec(
                proptest::collection::vec((entity(), entity()), 0..8), 3),
            subject in proptest::option::of(proptest::sample::select(&["a", "b", "", "x", "zz"][..])),
            object in proptest::option::of(proptest::sample::select(&["a", "b", "", "x", "zz"][..])),
        ) {
            let names = [List::KillNestedContainers, List::WaitNestedContainers, List::ViewContainers];
            let mut doc = Document::default();
            for (&l, entries) in names.iter().zip(&lists) {
                for (p, o) in entries {
                    doc.push(l, entry(p.clone(), o.clone()));
                }
            }
            let req = |v: Option<&'static str>| v.map_or(Req::Any, |v| Req::Some(v.as_bytes()));
            let policy = Policy::compile(doc.clone(), "<t>".into());
            for &l in &names {
                let (want, _) = crate::authz::reference::first_match(
                    doc.list(l), true, req(subject), req(object));
                let got = policy.first_match(l, req(subject), req(object));
                proptest::prop_assert_eq!(want.map_or(NO_MATCH, to_u32), got);
            }
        }
    }

    #[test]
    fn interner_stores_each_value_once() {
        let mut s = Interner::default();
        let (a, ah) = s.intern("alpha");
        let (b, _) = s.intern("");
        assert_eq!(s.intern("alpha"), (a, ah));
        assert_ne!(a, b);
        assert_eq!(s.intern("x").0, 7);
        let strings = s.finish();
        assert_eq!(strings.get(a), b"alpha");
        assert_eq!(strings.get(b), b"");
        assert_eq!(strings.bytes, b"\x05alpha\x00\x01x");
    }
}
