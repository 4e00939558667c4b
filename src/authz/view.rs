//! The one form of an object every decision reads: [`ObjectView`], borrowed
//! fields, lowered once from a protobuf `mesos.authorization.Object` (or
//! handed over field by field by the C++ shim).
//!
//! Why one form: the rules (Mesos' §3.4 object entities, the launch halves,
//! an executor token's user rule, the role approver) are then written once,
//! over the view, and the protobuf entry points only lower. Lowering reads
//! each field Mesos' rules may read, borrows it, and allocates nothing; what
//! the named fields cannot hold (a task's user, a reservation's principal, a
//! framework's roles) is reduced at lowering to the one value the action's
//! rule reads, kept in [`Lowered`].

use super::compile::Req;
use super::roles::lower_role;
use crate::proto::mesos::authorization::{Action, Object};
use crate::proto::mesos::{ContainerId, FrameworkInfo};

/// An object as borrowed fields: what every decision reads.
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
    /// `framework_info.principal` when set and not empty: the principal whose
    /// `launch_nested_containers_as_user` decides an executor token's launch
    /// as a user other than its executor's.
    pub framework_principal: Option<&'a [u8]>,
    /// Whether `command_info` is set.
    pub has_command: bool,
    /// `command_info.user` when set.
    pub command_user: Option<&'a [u8]>,
    /// `container_id.value` (the leaf) when `container_id` is set.
    pub container_id: Option<&'a [u8]>,
    /// The value of the root of `container_id` (itself when it has no parent).
    pub root_container_id: Option<&'a [u8]>,
    /// What the object says beyond the named fields, for the actions whose
    /// rule reads more (see [`Lowered`]).
    pub lowered: Lowered<'a>,
}

/// The object entity of an action whose rule reads fields the view does not
/// name, reduced when a protobuf object is lowered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Lowered<'a> {
    /// Nothing beyond the named fields (a view built field by field): the
    /// actions below cannot be decided from it.
    #[default]
    Fields,
    /// The entity of `RUN_TASK`, `VIEW_TASK`, `TEARDOWN_FRAMEWORK`,
    /// `DESTROY_VOLUME`, `UNRESERVE_RESOURCES`, or a role action's role.
    Entity(Req<'a>),
    /// `REGISTER_FRAMEWORK` of a multi-role framework: every role must pass.
    Roles(&'a [String]),
    /// The object lacks the field the action's rule requires (Mesos answers
    /// `Error`); named for the error, raised only where the rule reads it.
    Missing(&'static str),
}

/// `framework_info.user` as "set" for Mesos' `has_user()` tests.
///
/// `FrameworkInfo.user` is a proto2 `required` field, so prost cannot tell
/// "absent" from "empty" after decoding; an empty user is treated as absent
/// (the rules that use the user unconditionally still see "").
pub fn framework_user(f: &FrameworkInfo) -> Option<&[u8]> {
    (!f.user.is_empty()).then_some(f.user.as_bytes())
}

/// The root of a container id (itself when it has no parent).
pub fn root_of(id: &ContainerId) -> &ContainerId {
    let mut id = id;
    while let Some(parent) = id.parent.as_deref() {
        id = parent;
    }
    id
}

/// A lowered entity naming one value.
pub(super) fn entity(s: &str) -> Lowered<'_> {
    Lowered::Entity(Req::Some(s.as_bytes()))
}

fn bytes(s: Option<&str>) -> Option<&[u8]> {
    s.map(str::as_bytes)
}

impl<'a> ObjectView<'a> {
    /// Lowers a protobuf object for `action`, once: the named fields, and in
    /// [`ObjectView::lowered`] the entity of the actions that read more.
    /// Never fails: a missing required field is kept as
    /// [`Lowered::Missing`] and reported by the rule that reads it, so a
    /// decision that never reads it (an executor token's, a rejection) is
    /// unaffected, as in Mesos.
    pub fn lower(action: Action, o: &'a Object) -> Self {
        let executor_command = o.executor_info.as_ref().and_then(|e| e.command.as_ref());
        let framework = o.framework_info.as_ref();
        ObjectView {
            value: bytes(o.value.as_deref()),
            has_executor_info: o.executor_info.is_some(),
            executor_user: bytes(executor_command.and_then(|c| c.user.as_deref())),
            has_framework_info: framework.is_some(),
            framework_user: framework.and_then(framework_user),
            framework_principal: bytes(framework.and_then(|f| f.principal.as_deref()))
                .filter(|p| !p.is_empty()),
            has_command: o.command_info.is_some(),
            command_user: bytes(o.command_info.as_ref().and_then(|c| c.user.as_deref())),
            container_id: o.container_id.as_ref().map(|c| c.value.as_bytes()),
            root_container_id: o.container_id.as_ref().map(|c| root_of(c).value.as_bytes()),
            lowered: lower_entity(action, o),
        }
    }
}

/// What the task, volume and framework actions read beyond the named fields
/// (Mesos' `LocalAuthorizerObjectApprover` rules, §3.4), and the role actions'
/// role.
fn lower_entity(action: Action, o: &Object) -> Lowered<'_> {
    use Action as A;
    let some = entity;
    let none = Lowered::Entity(Req::Any);
    match action {
        A::TeardownFramework => match (&o.framework_info, &o.value) {
            (Some(f), _) => some(f.principal()),
            (None, Some(v)) => some(v),
            (None, None) => none,
        },
        A::DestroyVolume => match (&o.resource, &o.value) {
            (Some(r), _) => some(
                r.disk
                    .as_ref()
                    .and_then(|d| d.persistence.as_ref())
                    .map_or("", |p| p.principal()),
            ),
            (None, Some(v)) => some(v),
            (None, None) => none,
        },
        A::UnreserveResources => match (&o.resource, &o.value) {
            (Some(r), _) => some(match r.reservations.last() {
                Some(res) => res.principal(),
                None => r.reservation.as_ref().map_or("", |res| res.principal()),
            }),
            (None, Some(v)) => some(v),
            (None, None) => none,
        },
        A::RunTask => run_task_user(o).map_or(none, some),
        A::ViewTask => view_task_user(o),
        _ => lower_role(action, o),
    }
}

/// RUN_TASK: the task's command user, else its executor's, else the
/// framework's user (unconditionally, "" included), else ANY.
fn run_task_user(o: &Object) -> Option<&str> {
    let task = o.task_info.as_ref();
    task.and_then(|t| t.command.as_ref())
        .and_then(|c| c.user.as_deref())
        .or_else(|| {
            task.and_then(|t| t.executor.as_ref())
                .and_then(|e| e.command.as_ref())
                .and_then(|c| c.user.as_deref())
        })
        .or_else(|| o.framework_info.as_ref().map(|f| f.user.as_str()))
}

/// VIEW_TASK: requires a task (or task info) and the framework; the task's
/// user, else the framework's.
fn view_task_user(o: &Object) -> Lowered<'_> {
    if o.task.is_none() && o.task_info.is_none() {
        return Lowered::Missing("task or task_info");
    }
    let Some(f) = &o.framework_info else {
        return Lowered::Missing("framework_info");
    };
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
    Lowered::Entity(Req::Some(task_user.unwrap_or(&f.user).as_bytes()))
}
