//! The claims of a token-authenticated subject, read one way everywhere.
//!
//! An executor's JWT (`fid`, `eid`, `cid`) and a resource provider's token
//! (`cid_prefix`) reach the authorizer and the agent as the `claims` labels
//! of an `authorization.Subject` without a `value`. Mesos keeps claims in a
//! map, so a key has one value; labels can repeat a key, and Mesos' local
//! authorizer then reads the first `cid` with a value and the last
//! `cid_prefix` with a value. This type is the one reader of those labels,
//! so the authorizer, the agent's token checks and its logs cannot read the
//! same subject differently.

use crate::proto::mesos::Label;
use crate::proto::mesos::authorization::Subject;

/// The framework ID claim of an executor token.
pub const FRAMEWORK_ID: &str = "fid";
/// The executor ID claim of an executor token.
pub const EXECUTOR_ID: &str = "eid";
/// The container ID claim of an executor token.
pub const CONTAINER_ID: &str = "cid";
/// The container ID prefix claim of a resource provider's token.
pub const CONTAINER_ID_PREFIX: &str = "cid_prefix";

/// A subject's claims, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Claims<'a> {
    labels: &'a [Label],
}

impl<'a> Claims<'a> {
    /// The claims of `subject`, if it carries any (a token's subject).
    pub fn of(subject: &'a Subject) -> Option<Claims<'a>> {
        subject
            .claims
            .as_ref()
            .map(|c| Claims { labels: &c.labels })
    }

    /// The value of the first claim `key` that has one.
    pub fn first(&self, key: &str) -> Option<&'a str> {
        self.labels
            .iter()
            .find(|l| l.key == key && l.value.is_some())
            .and_then(|l| l.value.as_deref())
    }

    /// The value of the last claim `key` that has one.
    pub fn last(&self, key: &str) -> Option<&'a str> {
        self.labels
            .iter()
            .rev()
            .find(|l| l.key == key && l.value.is_some())
            .and_then(|l| l.value.as_deref())
    }

    /// The container an executor token belongs to (the first `cid`).
    pub fn container_id(&self) -> Option<&'a str> {
        self.first(CONTAINER_ID)
    }

    /// The container ID prefix of a resource provider's token (the last
    /// `cid_prefix`).
    pub fn container_id_prefix(&self) -> Option<&'a str> {
        self.last(CONTAINER_ID_PREFIX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::Labels;

    fn subject(labels: &[(&str, Option<&str>)]) -> Subject {
        Subject {
            value: None,
            claims: Some(Labels {
                labels: labels
                    .iter()
                    .map(|(k, v)| Label {
                        key: (*k).to_owned(),
                        value: v.map(str::to_owned),
                    })
                    .collect(),
            }),
        }
    }

    /// Repeated keys read as Mesos' authorizer reads them: the first `cid`
    /// with a value, the last `cid_prefix` with a value; a label without a
    /// value is skipped, never read as an empty value.
    #[test]
    fn repeated_claims_read_as_the_authorizer_reads_them() {
        let s = subject(&[
            ("cid", None),
            ("cid", Some("a")),
            ("cid", Some("b")),
            ("cid_prefix", Some("p1")),
            ("cid_prefix", Some("p2")),
            ("cid_prefix", None),
        ]);
        let claims = Claims::of(&s).unwrap();
        assert_eq!(claims.container_id(), Some("a"));
        assert_eq!(claims.container_id_prefix(), Some("p2"));
        assert_eq!(claims.first(FRAMEWORK_ID), None);
        let principal = Subject {
            value: Some("ops".into()),
            claims: None,
        };
        assert!(Claims::of(&principal).is_none());
    }
}
