//! Role actions (reserve, create volume, quotas, weights, register framework,
//! ...): Mesos' hierarchical role approver, where a value `a/%` covers every
//! role nested under `a/`.
//!
//! These actions are master-side and rare on an agent, so this evaluates by
//! scanning the list (not indexed); it follows Mesos' split of an entry into
//! one recursive entry per `x/%` value followed by one entry with the rest.

use super::compile::{EntryMeta, Policy, Req};
use super::evaluate::{EvalError, ListOutcome};
use super::lists::{List, Route, route};
use super::parse::{Entity, EntityType};
use super::view::{Lowered, ObjectView, entity};
use crate::proto::mesos::authorization::{Action, Object};
use crate::proto::mesos::framework_info::capability::Type as CapabilityType;

fn matches(req: Req<'_>, acl: &Entity, values: &[&str]) -> bool {
    match (req, acl.kind) {
        (_, EntityType::None) => true,
        (_, EntityType::Any) => true,
        (Req::Any, EntityType::Some) => false,
        (Req::Some(v), EntityType::Some) => values.iter().any(|a| a.as_bytes() == v),
    }
}

/// First match over a role list for one role object.
pub fn decide_role(
    entries: &[super::parse::Entry],
    list: List,
    permissive: bool,
    subject: Req<'_>,
    object: Req<'_>,
) -> ListOutcome {
    for (i, e) in entries.iter().enumerate() {
        #[expect(
            clippy::expect_used,
            reason = "the policy's document passed validate(), which refuses a list \
                      whose entries do not fit below NO_MATCH"
        )]
        let index = u32::try_from(i).expect("a validated list's entries are numbered in u32");
        let meta = |allows| EntryMeta {
            origin: list,
            index,
            allows,
        };
        let principal_values: Vec<&str> = e.principals.values.iter().map(AsRef::as_ref).collect();
        let subject_matches = matches(subject, &e.principals, &principal_values);
        let subject_allows = subject_matches && e.principals.kind != EntityType::None;
        // Mesos' split: one generic ACL per recursive value, then the rest.
        let split: Vec<(bool, Vec<&str>)> = if e.object.kind == EntityType::Some {
            let mut parts: Vec<(bool, Vec<&str>)> = e
                .object
                .values
                .iter()
                .filter(|v| v.ends_with("/%"))
                .map(|v| (true, vec![v.as_ref()]))
                .collect();
            let rest: Vec<&str> = e
                .object
                .values
                .iter()
                .filter(|v| !v.ends_with("/%"))
                .map(AsRef::as_ref)
                .collect();
            if !rest.is_empty() {
                parts.push((false, rest));
            }
            parts
        } else {
            vec![(false, Vec::new())]
        };
        for (recursive, values) in split {
            let part = Entity {
                kind: e.object.kind,
                values: Box::default(),
            };
            if !recursive || values.len() != 1 {
                if subject_matches && matches(object, &part, &values) {
                    let allowed = subject_allows && e.object.kind != EntityType::None;
                    return ListOutcome {
                        list,
                        entry: Some(meta(allowed)),
                        allowed,
                    };
                }
            } else if let (Req::Some(role), Some(parent)) = (object, values.first()) {
                let prefix = parent.trim_end_matches('%');
                if role.starts_with(prefix.as_bytes()) && subject_matches {
                    return ListOutcome {
                        list,
                        entry: Some(meta(subject_allows)),
                        allowed: subject_allows,
                    };
                }
            }
        }
    }
    ListOutcome {
        list,
        entry: None,
        allowed: permissive,
    }
}

/// The role a role action's rule reads, lowered from the protobuf object
/// (several for a multi-role `REGISTER_FRAMEWORK`); [`Lowered::Fields`] for
/// every other action.
pub fn lower_role(action: Action, o: &Object) -> Lowered<'_> {
    if !matches!(route(action), Route::Roles(_)) {
        return Lowered::Fields;
    }
    let s = entity;
    let any = Lowered::Entity(Req::Any);
    use Action as A;
    match action {
        A::RegisterFramework => {
            if let Some(f) = &o.framework_info {
                let multi = f
                    .capabilities
                    .iter()
                    .any(|c| c.r#type() == CapabilityType::MultiRole);
                if multi {
                    Lowered::Roles(&f.roles)
                } else {
                    s(f.role())
                }
            } else if let Some(v) = &o.value {
                s(v)
            } else {
                any
            }
        }
        A::UpdateWeight => match (&o.weight_info, &o.value) {
            (Some(w), _) => s(w.role()),
            (None, Some(v)) => s(v),
            (None, None) => any,
        },
        A::ViewRole | A::UpdateQuotaWithConfig => {
            o.value.as_deref().map_or(Lowered::Missing("value"), s)
        }
        A::GetQuota => o.value.as_deref().map_or(any, s),
        #[expect(deprecated, reason = "Mesos still routes the deprecated action")]
        A::UpdateQuota => o
            .quota_info
            .as_ref()
            .map_or(Lowered::Missing("quota_info"), |q| s(q.role())),
        _ => match (&o.resource, &o.value) {
            (Some(r), _) => s(match r.reservations.last() {
                Some(res) => res.role(),
                None => r.role(),
            }),
            (None, Some(v)) => s(v),
            (None, None) => any,
        },
    }
}

/// A role action's decision: first match for the role, or for each role of
/// a multi-role framework (the first denial decides; with no roles at all,
/// `permissive`). No object is one ANY role.
pub fn decide_roles(
    policy: &Policy,
    action: Action,
    list: List,
    subject: Req<'_>,
    object: Option<&ObjectView<'_>>,
) -> Result<ListOutcome, EvalError> {
    let one = |role| {
        decide_role(
            policy.doc.list(list),
            list,
            policy.permissive(),
            subject,
            role,
        )
    };
    let roles = match object.map_or(Lowered::Entity(Req::Any), |o| o.lowered) {
        Lowered::Entity(role) => return Ok(one(role)),
        Lowered::Roles(roles) => roles,
        Lowered::Missing(field) => return Err(missing(action, field)),
        Lowered::Fields => return Err(missing(action, "the role (a protobuf object)")),
    };
    let mut last = None;
    for role in roles {
        let outcome = one(Req::Some(role.as_bytes()));
        if !outcome.allowed {
            return Ok(outcome);
        }
        last = Some(outcome);
    }
    // A multi-role framework with no roles: permissive decides.
    Ok(last.unwrap_or(ListOutcome {
        list,
        entry: None,
        allowed: policy.permissive(),
    }))
}

fn missing(action: Action, field: &'static str) -> EvalError {
    EvalError::MissingField {
        action: action.as_str_name(),
        field,
    }
}
