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

use hashbrown::{HashMap, HashTable};
use rustc_hash::{FxBuildHasher, FxHasher};

use super::lists::List;
use super::parse::{Document, Entity, EntityType};

/// "No entry matched".
pub const NO_MATCH: u32 = u32::MAX;

/// A value's number in a policy's [`Interner`].
type Sym = u32;

type Map<K> = HashMap<K, u32, FxBuildHasher>;

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

/// Every distinct value a policy's SOME entities name, stored once: the
/// bytes back to back, where each one starts, and a table of symbols keyed
/// by the hash of their bytes (4 bytes a slot, not a boxed key).
#[derive(Debug, Default)]
pub struct Interner {
    bytes: Vec<u8>,
    /// `starts[s]..starts[s + 1]` is symbol `s`; one more than the symbols.
    starts: Vec<u32>,
    table: HashTable<Sym>,
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

impl Interner {
    fn new() -> Self {
        Interner {
            bytes: Vec::new(),
            starts: vec![0],
            table: HashTable::new(),
        }
    }

    /// The bytes of a symbol (empty for a symbol not made here).
    fn get<'b>(bytes: &'b [u8], starts: &[u32], sym: Sym) -> &'b [u8] {
        let i = sym as usize;
        match (starts.get(i), starts.get(i + 1)) {
            (Some(&a), Some(&b)) => bytes.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The symbol of `value`, if the policy names it.
    #[inline]
    pub fn lookup(&self, value: &[u8]) -> Option<Sym> {
        let (bytes, starts) = (&self.bytes, &self.starts);
        self.table
            .find(hash(value), |&s| Self::get(bytes, starts, s) == value)
            .copied()
    }

    /// The symbol of `value`, made if new. [`super::validate::validate`]
    /// bounds the values' total size below `u32::MAX` bytes, so offsets and
    /// symbols fit.
    fn intern(&mut self, value: &str) -> Sym {
        let value = value.as_bytes();
        let h = hash(value);
        let Interner {
            bytes,
            starts,
            table,
        } = self;
        if let Some(&s) = table.find(h, |&s| Self::get(bytes, starts, s) == value) {
            return s;
        }
        let sym = to_u32(starts.len() - 1);
        bytes.extend_from_slice(value);
        starts.push(to_u32(bytes.len()));
        table.insert_unique(h, sym, |&s| hash(Self::get(bytes, starts, s)));
        sym
    }

    fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
        self.starts.shrink_to_fit();
        let (bytes, starts) = (&self.bytes, &self.starts);
        self.table
            .shrink_to_fit(|&s| hash(Self::get(bytes, starts, s)));
    }
}

/// One list, compiled.
#[derive(Debug)]
pub struct CompiledList {
    entries: Box<[EntryMeta]>,
    /// wild principals × SOME object: object symbol → first entry.
    by_object: Map<Sym>,
    /// SOME principals × wild object: principal symbol → first entry.
    by_principal: Map<Sym>,
    /// SOME × SOME: (principal, object) symbols → first entry.
    pairs: Map<(Sym, Sym)>,
    wild: u32,
}

fn is_wild(e: &Entity) -> bool {
    e.kind != EntityType::Some
}

fn keep_first<K: std::hash::Hash + Eq>(map: &mut Map<K>, key: K, index: u32) {
    map.entry(key).or_insert(index);
}

impl CompiledList {
    fn build<'a>(
        strings: &mut Interner,
        entries: impl Iterator<Item = (List, u32, &'a Entity, &'a Entity)>,
    ) -> Self {
        let mut list = CompiledList {
            entries: Box::new([]),
            by_object: Map::default(),
            by_principal: Map::default(),
            pairs: Map::default(),
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
                        keep_first(&mut list.by_object, strings.intern(u), i);
                    }
                }
                (false, true) => {
                    for p in &principals.values {
                        keep_first(&mut list.by_principal, strings.intern(p), i);
                    }
                }
                (false, false) => {
                    objects.clear();
                    objects.extend(object.values.iter().map(|u| strings.intern(u)));
                    for p in &principals.values {
                        let p = strings.intern(p);
                        for &u in &objects {
                            keep_first(&mut list.pairs, (p, u), i);
                        }
                    }
                }
            }
        }
        list.entries = metas.into_boxed_slice();
        list.by_object.shrink_to_fit();
        list.by_principal.shrink_to_fit();
        list.pairs.shrink_to_fit();
        list
    }

    /// The index of the first entry matching (subject, object) given as
    /// symbols (`None`: ANY, or a value the policy never names, which no
    /// SOME side matches), or [`NO_MATCH`].
    #[inline]
    fn first_match(&self, subject: Option<Sym>, object: Option<Sym>) -> u32 {
        let mut best = self.wild;
        if let Some(o) = object
            && let Some(&i) = self.by_object.get(&o)
        {
            best = best.min(i);
        }
        if let Some(s) = subject {
            if let Some(&i) = self.by_principal.get(&s) {
                best = best.min(i);
            }
            if let Some(o) = object
                && let Some(&i) = self.pairs.get(&(s, o))
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
    strings: Interner,
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
        let mut strings = Interner::new();
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
        strings.shrink();
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
        let sym = |r: Req<'_>| match r {
            Req::Any => None,
            Req::Some(v) => self.strings.lookup(v),
        };
        // ANY and a value the policy never names both match wild sides only.
        self.list(list).first_match(sym(subject), sym(object))
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
        let mut s = Interner::new();
        let a = s.intern("alpha");
        let b = s.intern("");
        assert_eq!(s.intern("alpha"), a);
        assert_ne!(a, b);
        s.shrink();
        assert_eq!(s.lookup(b"alpha"), Some(a));
        assert_eq!(s.lookup(b""), Some(b));
        assert_eq!(s.lookup(b"alph"), None);
        assert_eq!(s.bytes, b"alpha");
    }
}
