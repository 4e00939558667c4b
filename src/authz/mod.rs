//! Mesos-compatible ACL authorization: the local authorizer's semantics,
//! compiled so a decision does not scan the ACL lists, explainable, linted
//! and hot-reloadable.
//!
//! Stages, one file each: [`parse`] (JSON with locations, strict by default)
//! → [`validate`] (Mesos' rules and texts) → [`compile`] (per-list indexes)
//! → [`evaluate`] (object entities per action, first match, launches) →
//! [`explain`] / [`lint`]; [`api`] holds the [`Authorizer`] and [`Approver`]
//! and hot reload; [`wire`] reads a serialized request's deciding fields in
//! place. [`mod@reference`] is a plain first-match transcription of
//! Mesos' rules, the oracle for property tests and the bench's baseline.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod api;
pub mod audit;
pub mod compile;
pub mod evaluate;
pub mod explain;
pub mod lint;
pub mod lists;
pub mod parse;
pub mod reference;
pub mod roles;
pub mod validate;
pub mod view;
pub mod wire;

pub use api::{Approver, Authorizer, Explained, LoadError, ParameterError, Source, load};
pub use audit::{
    AUDIT_FIELD_MAX_BYTES, AuditOptions, AuditRecord, AuditSink, ObjectSummary, Truncated,
};
pub use compile::{Policy, Req};
pub use evaluate::{Basis, Decision, EvalError, ListOutcome};
pub use lists::List;
pub use parse::{Document, Entity, EntityType, Entry, Location, ParseError, ParseMode};
pub use view::{Lowered, ObjectView};
