//! Decisions over the one [`ObjectView`]: the object entity per action
//! (Mesos' §3.4 rules), first match over a compiled list, and the two-list
//! launch approval.
//!
//! Nothing here allocates: request values are borrowed byte slices looked up
//! in the compiled indexes, and outcomes are small `Copy` values.

use super::compile::{EntryMeta, Key, NO_MATCH, Policy, Req};
use super::lists::List;
use super::view::{Lowered, ObjectView};
use crate::proto::mesos::authorization::Action;

/// Why an object could not be decided (Mesos returns an `Error`, or would
/// crash on a failed CHECK; callers must treat this as "not authorized").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The object lacks a field this action requires.
    #[error("authorization of {action} requires `{field}` in the object")]
    MissingField {
        /// The action's Mesos name.
        action: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// The request is malformed (Mesos would CHECK-fail on it).
    #[error("invalid authorization request: {0}")]
    InvalidRequest(&'static str),
}

/// The outcome of first-match over one list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOutcome {
    /// The list evaluated.
    pub list: List,
    /// The deciding entry, or `None` when nothing matched (permissive decided).
    pub entry: Option<EntryMeta>,
    /// The list's verdict.
    pub allowed: bool,
}

/// What decided a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// First match over the action's list.
    Acl(ListOutcome),
    /// A launch: parent list AND (if a command was given) child list.
    Launch {
        /// The executor's-user half.
        parent: ListOutcome,
        /// The command's-user half (absent when the object has no command).
        child: Option<ListOutcome>,
    },
    /// A claims-only subject: the `cid` claim against the root container id.
    ImplicitExecutor,
    /// A claims-only subject: the `cid_prefix` claim against the container id.
    ImplicitResourceProvider,
    /// Rejected without consulting ACLs, with the reason.
    Rejected(&'static str),
}

/// A decision and what made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Authorized or not.
    pub allowed: bool,
    /// Why.
    pub basis: Basis,
}

/// First match over one list for one subject and object.
#[inline]
pub fn decide_list(policy: &Policy, list: List, subject: Req<'_>, object: Req<'_>) -> ListOutcome {
    decide_keys(policy, list, Policy::key(subject), Policy::key(object))
}

/// [`decide_list`] over sides made by [`Policy::key`].
#[inline]
fn decide_keys(
    policy: &Policy,
    list: List,
    subject: Option<Key<'_>>,
    object: Option<Key<'_>>,
) -> ListOutcome {
    let index = policy.first_match_of(list, subject, object);
    if index == NO_MATCH {
        return ListOutcome {
            list,
            entry: None,
            allowed: policy.permissive(),
        };
    }
    let entry = policy.list(list).entry(index);
    ListOutcome {
        list,
        entry,
        allowed: entry.is_some_and(|e| e.allows),
    }
}

fn name(action: Action) -> &'static str {
    action.as_str_name()
}

/// executor user → framework user (if set) → container id → ANY.
fn container_rule<'a>(v: &ObjectView<'a>, with_container_id: bool) -> Req<'a> {
    if let Some(u) = v.executor_user {
        return Req::Some(u);
    }
    if v.has_framework_info
        && let Some(u) = v.framework_user
    {
        return Req::Some(u);
    }
    if with_container_id && let Some(c) = v.container_id {
        return Req::Some(c);
    }
    Req::Any
}

/// The object entity of a generic (single-list) action (Mesos' §3.4 rules).
pub fn view_entity<'a>(action: Action, v: Option<&ObjectView<'a>>) -> Result<Req<'a>, EvalError> {
    let Some(v) = v else { return Ok(Req::Any) };
    use Action as A;
    Ok(match action {
        A::GetEndpointWithPath => Req::Some(v.value.ok_or(EvalError::MissingField {
            action: name(action),
            field: "value",
        })?),
        A::AttachContainerInput
        | A::AttachContainerOutput
        | A::RemoveNestedContainer
        | A::KillNestedContainer
        | A::WaitNestedContainer => container_rule(v, true),
        A::ViewContainer | A::LaunchNestedContainer | A::LaunchNestedContainerSession => {
            if v.has_command
                && matches!(
                    action,
                    A::LaunchNestedContainer | A::LaunchNestedContainerSession
                )
            {
                v.command_user.map_or(Req::Any, Req::Some)
            } else {
                container_rule(v, false)
            }
        }
        A::AccessSandbox => match v.executor_user {
            Some(u) => Req::Some(u),
            None if v.has_framework_info => Req::Some(v.framework_user.unwrap_or(b"")),
            None => Req::Any,
        },
        A::ViewFramework => {
            if !v.has_framework_info {
                return Err(EvalError::MissingField {
                    action: name(action),
                    field: "framework_info",
                });
            }
            Req::Some(v.framework_user.unwrap_or(b""))
        }
        A::ViewExecutor => {
            if !v.has_executor_info || !v.has_framework_info {
                return Err(EvalError::MissingField {
                    action: name(action),
                    field: "executor_info and framework_info",
                });
            }
            Req::Some(v.executor_user.or(v.framework_user).unwrap_or(b""))
        }
        A::RunTask
        | A::ViewTask
        | A::TeardownFramework
        | A::DestroyVolume
        | A::UnreserveResources => match v.lowered {
            Lowered::Entity(entity) => entity,
            Lowered::Missing(field) => {
                return Err(EvalError::MissingField {
                    action: name(action),
                    field,
                });
            }
            Lowered::Fields | Lowered::Roles(_) => {
                return Err(EvalError::MissingField {
                    action: name(action),
                    field: full_object_field(action),
                });
            }
        },
        _ => Req::Any,
    })
}

/// The field a view built field by field lacks for an action whose rule
/// reads beyond the named fields (only a lowered protobuf object has it).
fn full_object_field(action: Action) -> &'static str {
    match action {
        Action::RunTask => "task_info",
        Action::ViewTask => "task or task_info",
        Action::TeardownFramework => "framework_info",
        _ => "resource",
    }
}

/// The two-list launch decision (Mesos' nested-container approver).
///
/// `parent_object` is the executor's user rule (executor user → framework
/// user → ANY), `child_object` the command's user (`None` when the object has
/// no command: the parent alone decides).
#[inline]
pub fn decide_launch(
    policy: &Policy,
    parent: List,
    child: List,
    subject: Req<'_>,
    parent_object: Req<'_>,
    child_object: Option<Req<'_>>,
) -> Decision {
    // Each side hashed once: the subject is the same in both lists, and
    // the command's user is often the executor's.
    let subject = Policy::key(subject);
    let parent_key = Policy::key(parent_object);
    let p = decide_keys(policy, parent, subject, parent_key);
    let c = child_object.map(|o| {
        let o = if o == parent_object {
            parent_key
        } else {
            Policy::key(o)
        };
        decide_keys(policy, child, subject, o)
    });
    Decision {
        allowed: p.allowed && c.is_none_or(|c| c.allowed),
        basis: Basis::Launch {
            parent: p,
            child: c,
        },
    }
}

/// The parent and child objects of a launch, from borrowed fields.
pub fn launch_objects<'a>(v: Option<&ObjectView<'a>>) -> (Req<'a>, Option<Req<'a>>) {
    match v {
        None => (Req::Any, None),
        Some(v) => {
            let parent = container_rule(v, false);
            let child = v
                .has_command
                .then(|| v.command_user.map_or(Req::Any, Req::Some));
            (parent, child)
        }
    }
}
