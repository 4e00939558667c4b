//! Mesos' `ObjectApprover`: [`Approver`] for one (subject, action), and the
//! one decision path every entry point shares ([`Judge::decide`], over an
//! [`ObjectView`]; a protobuf object is lowered to it once).

use std::sync::Arc;

use super::shared::Shared;
use crate::authz::audit::ObjectSummary;
use crate::authz::compile::{Policy, Req};
use crate::authz::evaluate::{
    Basis, Decision, EvalError, ListOutcome, decide_launch, decide_list, launch_objects,
    view_entity,
};
use crate::authz::lists::{List, Route, route};
use crate::authz::roles::decide_roles;
use crate::authz::view::ObjectView;
use crate::credentials::claims::Claims;
use crate::proto::mesos::authorization::{Action, Object, Subject};

/// Which of Mesos' approvers decides for a subject and action, over the
/// subject's bytes held as `B`: borrowed for one `authorized(request)`,
/// boxed in a long-lived [`Approver`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind<B> {
    /// Refused before any ACL, with the reason.
    Reject(&'static str),
    /// A token's implicit executor approver: the `cid` claim.
    Executor(B),
    /// A token's implicit resource-provider approver: the `cid_prefix` claim.
    ResourceProvider(B),
    /// The ACLs, for a principal (or unauthenticated: `None`).
    Acl { route: Route, principal: Option<B> },
}

const EXECUTOR_ACTIONS: &[Action] = &[
    Action::LaunchNestedContainer,
    Action::WaitNestedContainer,
    Action::KillNestedContainer,
    Action::LaunchNestedContainerSession,
    Action::RemoveNestedContainer,
    Action::AttachContainerOutput,
];

const RESOURCE_PROVIDER_ACTIONS: &[Action] = &[
    Action::LaunchStandaloneContainer,
    Action::WaitStandaloneContainer,
    Action::KillStandaloneContainer,
    Action::RemoveStandaloneContainer,
    Action::ViewStandaloneContainer,
];

impl<'s> Kind<&'s [u8]> {
    /// Mesos' `getApprover` dispatch, borrowing the subject.
    pub(super) fn of(subject: Option<&'s Subject>, action: Action) -> Self {
        if let Some(s) = subject
            && s.value.is_none()
        {
            return Self::of_claims(s, action);
        }
        Self::of_principal(
            subject.and_then(|s| s.value.as_deref()).map(str::as_bytes),
            action,
        )
    }

    /// Mesos' `getApprover` dispatch for a subject with a principal value,
    /// or none (unauthenticated).
    pub(super) fn of_principal(principal: Option<&'s [u8]>, action: Action) -> Self {
        match route(action) {
            Route::Reject => Kind::Reject("the action is UNKNOWN"),
            route => Kind::Acl { route, principal },
        }
    }

    /// A subject without a principal: only a token's implicit approvers.
    fn of_claims(s: &'s Subject, action: Action) -> Self {
        if let Some(claims) = Claims::of(s) {
            if EXECUTOR_ACTIONS.contains(&action) {
                // The first `cid` claim with a value.
                return match claims.container_id() {
                    Some(cid) => Kind::Executor(cid.as_bytes()),
                    None => Kind::Reject("the subject's claims have no `cid`"),
                };
            }
            if RESOURCE_PROVIDER_ACTIONS.contains(&action) {
                // The last `cid_prefix` claim with a value.
                return match claims.container_id_prefix() {
                    // Stricter than Mesos: an empty prefix would match
                    // every container id; it grants nothing.
                    Some("") => Kind::Reject("the subject's `cid_prefix` claim is empty"),
                    Some(prefix) => Kind::ResourceProvider(prefix.as_bytes()),
                    None => Kind::Reject("the subject's claims have no `cid_prefix`"),
                };
            }
        }
        Kind::Reject(
            "a subject without a principal value is only accepted for the implicit executor and resource provider actions",
        )
    }

    fn boxed(self) -> Kind<Box<[u8]>> {
        match self {
            Kind::Reject(why) => Kind::Reject(why),
            Kind::Executor(cid) => Kind::Executor(Box::from(cid)),
            Kind::ResourceProvider(p) => Kind::ResourceProvider(Box::from(p)),
            Kind::Acl { route, principal } => Kind::Acl {
                route,
                principal: principal.map(Box::from),
            },
        }
    }
}

impl<B: AsRef<[u8]>> Kind<B> {
    /// Who this approver decides for, as an audit record names it.
    fn summary(&self) -> String {
        let text = |b: &B| String::from_utf8_lossy(b.as_ref()).into_owned();
        match self {
            Kind::Acl {
                principal: Some(p), ..
            } => text(p),
            Kind::Acl {
                principal: None, ..
            } => "unauthenticated".to_owned(),
            Kind::Executor(cid) => format!("token for {}", text(cid)),
            Kind::ResourceProvider(prefix) => {
                format!("token for containers under {}", text(prefix))
            }
            Kind::Reject(_) => "subject without a principal".to_owned(),
        }
    }
}

/// One decision's rules: the approver kind (its subject's bytes boxed or
/// borrowed), the action and the shared state (Mesos' executor-token
/// switch, read only by a token's launch). Borrows everything, allocates
/// nothing.
pub(super) struct Judge<'k, B> {
    pub(super) action: Action,
    pub(super) kind: &'k Kind<B>,
    pub(super) shared: &'k Shared,
}

impl<B: AsRef<[u8]>> Judge<'_, B> {
    /// The one decision path: every entry point (borrowed fields, protobuf
    /// object, `authorized(request)`) ends here with an [`ObjectView`].
    #[inline]
    pub(super) fn decide(
        &self,
        policy: &Policy,
        object: Option<&ObjectView<'_>>,
    ) -> Result<Decision, EvalError> {
        match self.kind {
            Kind::Reject(why) => Ok(rejected(why)),
            Kind::Executor(cid) => Ok(self.executor_decision(policy, cid.as_ref(), object)),
            Kind::ResourceProvider(prefix) => Ok(Decision {
                allowed: object
                    .and_then(|o| o.container_id)
                    .is_some_and(|c| c.starts_with(prefix.as_ref())),
                basis: Basis::ImplicitResourceProvider,
            }),
            Kind::Acl { route, principal } => {
                let subject = principal
                    .as_ref()
                    .map_or(Req::Any, |p| Req::Some(p.as_ref()));
                match *route {
                    Route::Generic(list) => {
                        let o = view_entity(self.action, object)?;
                        Ok(acl(decide_list(policy, list, subject, o)))
                    }
                    Route::Nested { parent, child } => {
                        let (p, c) = launch_objects(object);
                        Ok(decide_launch(policy, parent, child, subject, p, c))
                    }
                    Route::Roles(list) => Ok(acl(decide_roles(
                        policy,
                        self.action,
                        list,
                        subject,
                        object,
                    )?)),
                    Route::Reject => Ok(rejected("the action is UNKNOWN")),
                }
            }
        }
    }

    /// An executor token: it must own the container (its `cid` is the
    /// container's root); a launch is then decided by the user rule.
    fn executor_decision(
        &self,
        policy: &Policy,
        cid: &[u8],
        object: Option<&ObjectView<'_>>,
    ) -> Decision {
        let Some(o) = object.filter(|o| {
            o.container_id.is_some() && o.root_container_id.or(o.container_id) == Some(cid)
        }) else {
            return Decision {
                allowed: false,
                basis: Basis::ImplicitExecutor,
            };
        };
        let user = o.has_command.then_some(o.command_user).flatten();
        let own = o
            .executor_user
            .or(o.framework_user.filter(|_| o.has_framework_info));
        self.token_user_decision(policy, user, own, o.framework_principal)
    }

    /// The user half of an executor token's launch (the token already owns
    /// the container). Mesos lets a token launch as any user; nestguard, by
    /// default, only as the executor's own user (`own`: executor command
    /// user, else framework user) or as a user that
    /// `launch_nested_containers_as_user` allows the framework's
    /// `principal` (explicitly or by `permissive`). `user` is the command's
    /// user (`None`: the container runs as its parent's user).
    fn token_user_decision(
        &self,
        policy: &Policy,
        user: Option<&[u8]>,
        own: Option<&[u8]>,
        principal: Option<&[u8]>,
    ) -> Decision {
        let launches = matches!(
            self.action,
            Action::LaunchNestedContainer | Action::LaunchNestedContainerSession
        );
        let Some(user) = user.filter(|_| launches && !self.shared.tokens_any_user()) else {
            return Decision {
                allowed: true,
                basis: Basis::ImplicitExecutor,
            };
        };
        if own == Some(user) {
            return Decision {
                allowed: true,
                basis: Basis::ImplicitExecutor,
            };
        }
        match principal {
            Some(p) => acl(decide_list(
                policy,
                List::LaunchNestedContainersAsUser,
                Req::Some(p),
                Req::Some(user),
            )),
            None => rejected(
                "an executor token launches only as its executor's user unless \
                 `launch_nested_containers_as_user` allows the framework's principal",
            ),
        }
    }
}

/// Mesos' `ObjectApprover` for one (subject, action).
///
/// `Send + Sync`; `approved` never blocks and never allocates. It follows
/// reloads of the authorizer it came from, and keeps that authorizer's policy
/// alive on its own.
#[derive(Debug)]
pub struct Approver {
    shared: Arc<Shared>,
    action: Action,
    kind: Kind<Box<[u8]>>,
}

impl Approver {
    pub(super) fn new(shared: Arc<Shared>, subject: Option<&Subject>, action: Action) -> Self {
        Approver {
            shared,
            action,
            kind: Kind::of(subject, action).boxed(),
        }
    }

    /// The policy in force now (for rendering an explanation).
    pub fn policy(&self) -> Arc<Policy> {
        self.shared.current.load_full()
    }

    /// The action.
    pub fn action(&self) -> Action {
        self.action
    }

    #[inline]
    fn judge(&self) -> Judge<'_, Box<[u8]>> {
        Judge {
            action: self.action,
            kind: &self.kind,
            shared: &self.shared,
        }
    }

    /// `approved(object)` over borrowed fields (`None` = no object).
    #[inline]
    pub fn approved(&self, object: Option<&ObjectView<'_>>) -> Result<bool, EvalError> {
        self.decide(object).map(|d| d.allowed)
    }

    /// `approved(object)` with what decided it, over borrowed fields.
    #[inline]
    pub fn decide(&self, object: Option<&ObjectView<'_>>) -> Result<Decision, EvalError> {
        self.judged(object, || ObjectSummary::from_view(object))
    }

    /// A decision over the view against the policy in force, counted and
    /// (off the fast path) timed and audited with the object as `summary`
    /// gives it.
    #[inline(always)]
    fn judged(
        &self,
        object: Option<&ObjectView<'_>>,
        summary: impl Fn() -> ObjectSummary,
    ) -> Result<Decision, EvalError> {
        self.shared.judge(
            &self.shared.current.load(),
            self.action as i32,
            || self.kind.summary(),
            summary,
            |policy| self.decide_in(policy, object),
        )
    }

    /// [`Approver::decide`] against a given policy snapshot.
    #[inline]
    pub fn decide_in(
        &self,
        policy: &Policy,
        object: Option<&ObjectView<'_>>,
    ) -> Result<Decision, EvalError> {
        self.judge().decide(policy, object)
    }

    /// `approved(object)` with what decided it, over a protobuf object,
    /// lowered once to the view every decision reads.
    pub fn decide_proto(&self, object: Option<&Object>) -> Result<Decision, EvalError> {
        let view = object.map(|o| ObjectView::lower(self.action, o));
        self.judged(view.as_ref(), || ObjectSummary::from_proto(object))
    }

    /// [`Approver::decide_proto`] against a given policy snapshot.
    pub fn decide_proto_in(
        &self,
        policy: &Policy,
        object: Option<&Object>,
    ) -> Result<Decision, EvalError> {
        let view = object.map(|o| ObjectView::lower(self.action, o));
        self.decide_in(policy, view.as_ref())
    }
}

pub(super) fn acl(outcome: ListOutcome) -> Decision {
    Decision {
        allowed: outcome.allowed,
        basis: Basis::Acl(outcome),
    }
}

pub(super) fn rejected(why: &'static str) -> Decision {
    Decision {
        allowed: false,
        basis: Basis::Rejected(why),
    }
}
