//! Classes of equivalent principals at one object point, so `who-can`
//! answers by class instead of the product of principals and objects.
//!
//! Matching is by equality (module doc of [`super`]): at an object value
//! `v`, the only entries that can match any request are those whose object
//! is `ANY`/`NONE` or names `v` (for role lists, where `x/%` prefixes match
//! too, every entry is counted). A principal named by none of those entries
//! matches exactly the entries a principal no file names matches, so it
//! decides like [`super::Principal::Other`] there. The principals that may
//! decide otherwise are the ones those entries name: the *candidates* of
//! the point. Each is decided by the evaluator; the rest are one class,
//! answered by `Other`. The count of candidates is what `who-can` spends
//! (see [`super::who_can::WHO_CAN_BUDGET`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::domain::lists_of;
use crate::authz::compile::Policy;
use crate::authz::lists::{List, Route, route};
use crate::authz::parse::{EntityType, Entry};
use crate::proto::mesos::authorization::Action;

/// The entries of some lists, indexed by the object value they name.
#[derive(Debug, Default)]
pub struct Candidates<'p> {
    /// Principals named by entries that may match every object value.
    everywhere: BTreeSet<&'p str>,
    /// Per object value, the entries that name it (principal-valued only).
    by_value: HashMap<&'p str, Vec<&'p Entry>>,
    /// Every object value an entry names, whatever its principals.
    named: HashSet<&'p str>,
}

impl<'p> Candidates<'p> {
    /// The index of the lists `action` consults.
    pub fn new(policy: &'p Policy, action: Action) -> Candidates<'p> {
        Candidates::of(policy, action, &lists_of(action))
    }

    /// The index of `lists` (consulted for `action`). Entries whose
    /// principals are `ANY`/`NONE` name no candidate: they match every
    /// principal value alike, so they never tell two principals apart.
    pub fn of(policy: &'p Policy, action: Action, lists: &[List]) -> Candidates<'p> {
        let roles = matches!(route(action), Route::Roles(_));
        let mut out = Candidates::default();
        for &list in lists {
            for e in policy.doc.list(list) {
                if e.object.kind == EntityType::Some {
                    out.named.extend(e.object.values.iter().map(AsRef::as_ref));
                }
                if e.principals.kind != EntityType::Some {
                    continue;
                }
                if roles || e.object.kind != EntityType::Some {
                    out.everywhere
                        .extend(e.principals.values.iter().map(AsRef::as_ref));
                    continue;
                }
                for v in &e.object.values {
                    out.by_value.entry(v.as_ref()).or_default().push(e);
                }
            }
        }
        out
    }

    /// Whether an entry of the lists names `value` as its object: if none
    /// does, `value` decides like "any other" value there.
    pub fn names(&self, value: &str) -> bool {
        self.named.contains(value)
    }

    /// The principals that may decide unlike `Other` at a target whose
    /// object values are `values`, sorted.
    pub fn at<'v>(&self, values: impl Iterator<Item = &'v str>) -> BTreeSet<&'p str> {
        let mut out = self.everywhere.clone();
        for v in values {
            for e in self.by_value.get(v).into_iter().flatten() {
                out.extend(e.principals.values.iter().map(AsRef::as_ref));
            }
        }
        out
    }
}

/// The lists one half of a launch consults: its own, and
/// `manage_nested_containers` where its entries are appended.
pub fn half_lists(list: List) -> Vec<List> {
    let mut out = vec![list];
    if list.receives_manage() {
        out.push(List::ManageNestedContainers);
    }
    out
}
