//! Decisions: the object entity per action (Mesos' §3.4 rules), first match
//! over a compiled list, and the two-list launch approval.
//!
//! Nothing here allocates: request values are borrowed byte slices looked up
//! in the compiled indexes, and outcomes are small `Copy` values.

use super::compile::{EntryMeta, NO_MATCH, Policy, Req};
use super::lists::List;
use crate::proto::mesos::authorization::{Action, Object};

/// An object given as borrowed fields instead of a protobuf message: what the
/// C++ shim can hand over without serializing anything.
///
/// Each `Option` is "the field is set" (`has_user()` in Mesos terms), and an
/// empty slice is a set-but-empty value.
#[derive(Debug, Clone, Copy, Default)]
pub struct ObjectView<'a> {
    /// `Object.value`.
    pub value: Option<&'a [u8]>,
    /// Whether `executor_info` is set.
    pub has_executor_info: bool,
    /// `executor_info.command.user` when set.
    pub executor_user: Option<&'a [u8]>,
    /// Whether `framework_info` is set.
    pub has_framework_info: bool,
    /// `framework_info.user` when set.
    pub framework_user: Option<&'a [u8]>,
    /// Whether `command_info` is set.
    pub has_command: bool,
    /// `command_info.user` when set.
    pub command_user: Option<&'a [u8]>,
    /// `container_id.value` (the leaf) when `container_id` is set.
    pub container_id: Option<&'a [u8]>,
    /// The value of the root of `container_id` (itself when it has no parent).
    pub root_container_id: Option<&'a [u8]>,
}

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
    /// The action's object has fields the borrowed-field fast path does not carry.
    #[error("authorization of {action} needs the full object; use the protobuf entry point")]
    NeedsProtobuf {
        /// The action's Mesos name.
        action: &'static str,
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
    let compiled = policy.list(list);
    let index = compiled.first_match(subject, object);
    if index == NO_MATCH {
        return ListOutcome {
            list,
            entry: None,
            allowed: policy.permissive(),
        };
    }
    let entry = compiled.entry(index);
    ListOutcome {
        list,
        entry,
        allowed: entry.is_some_and(|e| e.allows),
    }
}

fn name(action: Action) -> &'static str {
    action.as_str_name()
}

fn some(s: &str) -> Req<'_> {
    Req::Some(s.as_bytes())
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

/// The object entity of a generic (single-list) action from borrowed fields.
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
        | A::UnreserveResources => {
            return Err(EvalError::NeedsProtobuf {
                action: name(action),
            });
        }
        _ => Req::Any,
    })
}

/// `framework_info.user` as "set" for Mesos' `has_user()` tests.
///
/// `FrameworkInfo.user` is a proto2 `required` field, so prost cannot tell
/// "absent" from "empty" after decoding; an empty user is treated as absent
/// (the rules that use the user unconditionally still see "").
pub fn framework_user(f: &crate::proto::mesos::FrameworkInfo) -> Option<&[u8]> {
    (!f.user.is_empty()).then_some(f.user.as_bytes())
}

/// The object entity of a generic (single-list) action from the protobuf object.
pub fn proto_entity<'a>(action: Action, o: Option<&'a Object>) -> Result<Req<'a>, EvalError> {
    let Some(o) = o else { return Ok(Req::Any) };
    use Action as A;
    let exec_user = o
        .executor_info
        .as_ref()
        .and_then(|e| e.command.as_ref())
        .and_then(|c| c.user.as_deref());
    let fw = o.framework_info.as_ref();
    let missing = |field| EvalError::MissingField {
        action: name(action),
        field,
    };
    Ok(match action {
        A::TeardownFramework => match (fw, &o.value) {
            (Some(f), _) => some(f.principal()),
            (None, Some(v)) => some(v),
            (None, None) => Req::Any,
        },
        A::DestroyVolume => match (&o.resource, &o.value) {
            (Some(r), _) => some(
                r.disk
                    .as_ref()
                    .and_then(|d| d.persistence.as_ref())
                    .map_or("", |p| p.principal()),
            ),
            (None, Some(v)) => some(v),
            (None, None) => Req::Any,
        },
        A::UnreserveResources => match (&o.resource, &o.value) {
            (Some(r), _) => some(match r.reservations.last() {
                Some(res) => res.principal(),
                None => r.reservation.as_ref().map_or("", |res| res.principal()),
            }),
            (None, Some(v)) => some(v),
            (None, None) => Req::Any,
        },
        A::RunTask => {
            let ti = o.task_info.as_ref();
            if let Some(u) = ti
                .and_then(|t| t.command.as_ref())
                .and_then(|c| c.user.as_deref())
            {
                some(u)
            } else if let Some(u) = ti
                .and_then(|t| t.executor.as_ref())
                .and_then(|e| e.command.as_ref())
                .and_then(|c| c.user.as_deref())
            {
                some(u)
            } else if let Some(f) = fw {
                some(&f.user)
            } else {
                Req::Any
            }
        }
        A::ViewTask => {
            if o.task.is_none() && o.task_info.is_none() {
                return Err(missing("task or task_info"));
            }
            let f = fw.ok_or_else(|| missing("framework_info"))?;
            let task_user = if let Some(u) = o.task.as_ref().and_then(|t| t.user.as_deref()) {
                Some(u)
            } else if let Some(ti) = o.task_info.as_ref() {
                ti.command
                    .as_ref()
                    .and_then(|c| c.user.as_deref())
                    .or_else(|| {
                        ti.executor
                            .as_ref()
                            .and_then(|e| e.command.as_ref())
                            .and_then(|c| c.user.as_deref())
                    })
            } else {
                None
            };
            some(task_user.unwrap_or(&f.user))
        }
        _ => {
            let view = ObjectView {
                value: o.value.as_deref().map(str::as_bytes),
                has_executor_info: o.executor_info.is_some(),
                executor_user: exec_user.map(str::as_bytes),
                has_framework_info: fw.is_some(),
                framework_user: fw.and_then(framework_user),
                has_command: o.command_info.is_some(),
                command_user: o
                    .command_info
                    .as_ref()
                    .and_then(|c| c.user.as_deref())
                    .map(str::as_bytes),
                container_id: o.container_id.as_ref().map(|c| c.value.as_bytes()),
                root_container_id: None,
            };
            return view_entity(action, Some(&view));
        }
    })
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
    let p = decide_list(policy, parent, subject, parent_object);
    let c = child_object.map(|o| decide_list(policy, child, subject, o));
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
