//! Mesos' `LocalAuthorizer::validate` rules, with Mesos' error texts.
//!
//! Lists whose object can only be `ANY` or `NONE` reject `SOME`, and
//! `get_endpoints` paths must be authorizable endpoints. Lists are checked in
//! Mesos' order, so the same file yields the same first error as in Mesos;
//! the error additionally names the entry's JSON path and position.

use super::compile::NO_MATCH;
use super::lists::{AUTHORIZABLE_ENDPOINTS, List, ObjectRule, VALIDATION_ORDER};
use super::parse::{Document, EntityType, Location};

/// A rule of Mesos' validation that the ACLs break.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{location}: {path}: {mesos}")]
pub struct ValidateError {
    /// File name or `<inline>`.
    pub origin: String,
    /// Where the offending entry starts.
    pub location: Location,
    /// JSON path of the offending entity.
    pub path: String,
    /// Mesos' own error text, e.g. "ACL.LaunchStandaloneContainer type must
    /// be either NONE or ANY".
    pub mesos: String,
}

/// Whether a list's entries can be numbered: the compiled policy numbers
/// them (the list's own, then the `manage_nested_containers` entries it
/// receives) in `u32`, with [`NO_MATCH`] meaning "none". No real file comes
/// near; refusing here keeps a saturated number from ever pointing at the
/// wrong entry.
fn entries_fit(own: usize, received: usize) -> bool {
    own.checked_add(received)
        .is_some_and(|n| n < NO_MATCH as usize)
}

/// The bytes of every value the document names (with a 10-byte allowance
/// for each one's length), if below `u32::MAX`: the compiled policy stores
/// each distinct value once, at a `u32` offset. A
/// file that large is far beyond the 16 MiB default limit; refusing it keeps
/// an offset from ever wrapping onto another value.
fn values_fit(doc: &Document) -> bool {
    let mut total: u64 = 0;
    for e in doc.lists.iter().flatten() {
        for v in e.principals.values.iter().chain(e.object.values.iter()) {
            total = total.saturating_add(v.len() as u64 + 10);
        }
    }
    total < u64::from(u32::MAX)
}

/// The most (principal, object) pairs of SOME × SOME entries a policy may
/// index, over all its compiled lists (`manage_nested_containers` entries
/// count once for every list they are appended to). Each pair is a key of
/// the compiled index, so an entry of n principals and n users costs n²
/// keys: without a bound a 0.5 MB file (30,000 × 30,000 values) would ask
/// for about 20 GiB and the agent would be killed or abort while loading.
/// Four million pairs are about 60 MB; real files hold one pair or a few
/// per entry (100,000 entries of one principal and one user are 100,000).
pub const MAX_INDEX_PAIRS: u64 = 4_000_000;

/// The first entry at which the policy's SOME × SOME pairs pass
/// [`MAX_INDEX_PAIRS`]: its list, index, location and the count so far.
fn too_many_pairs(doc: &Document) -> Option<(List, usize, Location, u64)> {
    let mut total: u64 = 0;
    let manage = doc.list(List::ManageNestedContainers);
    for &list in List::ALL {
        let received: &[_] = if list.receives_manage() { manage } else { &[] };
        let own = doc.list(list).iter().enumerate().map(|(i, e)| (list, i, e));
        let appended = received
            .iter()
            .enumerate()
            .map(|(i, e)| (List::ManageNestedContainers, i, e));
        for (from, i, e) in own.chain(appended) {
            if e.principals.kind != EntityType::Some || e.object.kind != EntityType::Some {
                continue;
            }
            let pairs =
                (e.principals.values.len() as u64).saturating_mul(e.object.values.len() as u64);
            total = total.saturating_add(pairs);
            if total > MAX_INDEX_PAIRS {
                return Some((from, i, e.location, total));
            }
        }
    }
    None
}

/// Checks the document against Mesos' rules; the first violation is returned.
/// Also refuses a list too long to number (see [`entries_fit`]) and values
/// too large to store at `u32` offsets (see [`values_fit`]), which
/// [`super::compile::Policy::compile`] relies on.
pub fn validate(doc: &Document, origin: &str) -> Result<(), ValidateError> {
    if !values_fit(doc) {
        return Err(ValidateError {
            origin: origin.to_owned(),
            location: Location::default(),
            path: String::new(),
            mesos: format!(
                "the values of all entries take {} bytes or more: too large to load",
                u32::MAX
            ),
        });
    }
    let manage = doc.list(List::ManageNestedContainers).len();
    for &list in List::ALL {
        let own = doc.list(list).len();
        let received = if list.receives_manage() { manage } else { 0 };
        if !entries_fit(own, received) {
            return Err(ValidateError {
                origin: origin.to_owned(),
                location: Location::default(),
                path: list.spec().json.to_owned(),
                mesos: format!(
                    "too many entries ({own}, and {received} from manage_nested_containers): \
                     at most {} in all",
                    NO_MATCH - 1
                ),
            });
        }
    }
    if let Some((list, i, location, total)) = too_many_pairs(doc) {
        return Err(ValidateError {
            origin: origin.to_owned(),
            location,
            path: format!("{}[{i}]", list.spec().json),
            mesos: format!(
                "the entries up to this one pair {total} principals with users (or other \
                 objects), more than the {MAX_INDEX_PAIRS} a policy may index: list fewer \
                 values per entry, or use ANY on one side"
            ),
        });
    }
    for &list in VALIDATION_ORDER {
        let spec = list.spec();
        for (i, entry) in doc.list(list).iter().enumerate() {
            if entry.object.kind != EntityType::Some {
                continue;
            }
            let path = format!("{}[{i}].{}", spec.json, spec.object);
            let fail = |mesos: String| ValidateError {
                origin: origin.to_owned(),
                location: entry.location,
                path: path.clone(),
                mesos,
            };
            match spec.rule {
                ObjectRule::AnyOrNone => {
                    return Err(fail(format!(
                        "ACL.{} type must be either NONE or ANY",
                        spec.message
                    )));
                }
                ObjectRule::Endpoints => {
                    if let Some(p) = entry
                        .object
                        .values
                        .iter()
                        .find(|p| !AUTHORIZABLE_ENDPOINTS.contains(&p.as_ref()))
                    {
                        return Err(fail(format!("Path: '{p}' is not an authorizable path")));
                    }
                }
                ObjectRule::Free | ObjectRule::Roles => {}
            }
        }
    }
    debug_assert!(
        VALIDATION_ORDER
            .iter()
            .all(|l| *l != List::ManageNestedContainers)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::parse::{ParseMode, parse};

    #[test]
    fn an_index_of_too_many_pairs_is_refused_naming_the_entry() {
        let values = |prefix: &str, n: usize| {
            let v: Vec<String> = (0..n).map(|i| format!("\"{prefix}{i}\"")).collect();
            v.join(",")
        };
        // 2,001 × 2,000 = 4,002,000 pairs in the second entry, after one.
        let json = format!(
            r#"{{"kill_nested_containers": [
  {{"principals": {{"values": ["a"]}}, "users": {{"values": ["b"]}}}},
  {{"principals": {{"values": [{}]}}, "users": {{"values": [{}]}}}}]}}"#,
            values("p", 2001),
            values("u", 2000)
        );
        let doc = parse(&json, "acls.json", ParseMode::default()).unwrap();
        let err = validate(&doc, "acls.json").unwrap_err();
        assert_eq!(err.path, "kill_nested_containers[1]");
        assert_eq!(err.location.line, 3, "{err}");
        assert!(err.to_string().contains("4002001"), "{err}");
        assert!(err.to_string().contains("4000000"), "{err}");
        // Two principals fewer (3,998,001 pairs) fit.
        let json = json.replace(&values("p", 2001), &values("p", 1999));
        let doc = parse(&json, "acls.json", ParseMode::default()).unwrap();
        assert!(too_many_pairs(&doc).is_none());
    }

    #[test]
    fn lists_too_long_to_number_are_refused() {
        assert!(entries_fit(0, 0));
        assert!(entries_fit(NO_MATCH as usize - 1, 0));
        assert!(!entries_fit(NO_MATCH as usize - 1, 1));
        assert!(!entries_fit(NO_MATCH as usize, 0));
        assert!(!entries_fit(usize::MAX, 1));
    }

    #[test]
    fn mesos_texts() {
        let doc = parse(
            r#"{"launch_standalone_containers": [{"principals": {"type": "ANY"}, "users": {"values": ["a"]}}]}"#,
            "<inline>",
            ParseMode::default(),
        )
        .unwrap();
        let err = validate(&doc, "<inline>").unwrap_err();
        assert_eq!(
            err.mesos,
            "ACL.LaunchStandaloneContainer type must be either NONE or ANY"
        );
        assert_eq!(err.path, "launch_standalone_containers[0].users");
        let doc = parse(
            r#"{"get_endpoints": [{"principals": {"type": "ANY"}, "paths": {"values": ["/flags"]}}]}"#,
            "<inline>",
            ParseMode::default(),
        )
        .unwrap();
        assert_eq!(
            validate(&doc, "<inline>").unwrap_err().mesos,
            "Path: '/flags' is not an authorizable path"
        );
    }
}
