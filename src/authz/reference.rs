//! A deliberately plain transcription of Mesos' matching rules: scan the
//! list in order, first entry whose subject and object both match decides.
//! The property tests check the compiled engine against it, and the bench
//! uses it as the "plain first-match scan" baseline.

use super::compile::Req;
use super::parse::{Entity, EntityType, Entry};

/// Mesos' `matches(request, acl)` for a request with at most one value.
pub fn matches(request: Req<'_>, acl: &Entity) -> bool {
    match (request, acl.kind) {
        (_, EntityType::Any | EntityType::None) => true,
        (Req::Any, EntityType::Some) => false,
        (Req::Some(v), EntityType::Some) => acl.values.iter().any(|a| a.as_bytes() == v),
    }
}

/// Mesos' `allows(request, acl)`.
pub fn allows(request: Req<'_>, acl: &Entity) -> bool {
    match (request, acl.kind) {
        (_, EntityType::None) => false,
        (_, EntityType::Any) => true,
        (Req::Any, EntityType::Some) => false,
        (Req::Some(v), EntityType::Some) => acl.values.iter().any(|a| a.as_bytes() == v),
    }
}

/// First match over `entries`: `(index, allowed)` of the deciding entry, or
/// `(None, permissive)`.
pub fn first_match<'e>(
    entries: impl IntoIterator<Item = &'e Entry>,
    permissive: bool,
    subject: Req<'_>,
    object: Req<'_>,
) -> (Option<usize>, bool) {
    for (i, e) in entries.into_iter().enumerate() {
        if matches(subject, &e.principals) && matches(object, &e.object) {
            return (
                Some(i),
                allows(subject, &e.principals) && allows(object, &e.object),
            );
        }
    }
    (None, permissive)
}
