//! The public entry points, one file per job: [`source`] (where ACLs come
//! from, loading and its errors), [`authorizer`] (Mesos' `authorized` and
//! `getApprover`, reload, the audit sink), [`approver`] (`approved(object)`
//! and the one decision path), [`shared`] (the state they share and the one
//! place a decision is counted, timed and audited).
//!
//! Every entry point decides on one path: a protobuf object is lowered once
//! to the [`crate::authz::ObjectView`] that borrowed-field callers hand over,
//! and [`approver`]'s judge decides over it; the decision carries what
//! decided it ([`crate::authz::Basis`]), so a denial is explained without
//! deciding again ([`Explained`]).

mod approver;
mod authorizer;
mod shared;
mod source;

pub use approver::Approver;
pub use authorizer::{Authorizer, Explained};
pub use source::{LoadError, ParameterError, Source, load, load_limited};

use super::lists::List;

/// The list a `Basis::Acl` or a launch half refers to, for callers that
/// only need names.
pub fn list_name(list: List) -> &'static str {
    list.spec().json
}
