//! Mesos' local authorizer: [`Authorizer`] (`authorized(request)`,
//! `getApprover(subject, action)`, hot reload, the audit sink), and
//! [`Explained`], a decision with the policy that made it.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use prost::Message;

use super::approver::{Approver, Judge, Kind};
use super::shared::Shared;
use super::source::{LoadError, ParameterError, Source, load_limited};
use crate::authz::audit::{Audit, AuditOptions, AuditSink, ObjectSummary, subject_summary};
use crate::authz::compile::Policy;
use crate::authz::evaluate::{Decision, EvalError};
use crate::authz::parse::ParseMode;
use crate::authz::view::ObjectView;
use crate::authz::wire;
use crate::input::{self, DEFAULT_MAX_FILE_SIZE};
use crate::proto::mesos::authorization::{Action, Object, Request, Subject};

/// A Mesos-compatible local authorizer over a hot-reloadable ACL policy.
///
/// The policy lives in an `ArcSwap`: every decision loads the current policy
/// lock-free (no global lock, no allocation), and a reload swaps in a new one
/// atomically, so a caller sees the old or the new policy, never a mix.
/// Approvers hold the authorizer's shared state, not a policy snapshot, so
/// long-lived approvers (Mesos caches them) follow reloads.
///
/// `Send + Sync`: any number of threads may decide concurrently.
#[derive(Debug, Clone)]
pub struct Authorizer {
    shared: Arc<Shared>,
}

/// A decision with the policy snapshot that made it, so its explanation
/// names the entries that decided even if a reload swapped the policy since.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The decision.
    pub decision: Decision,
    /// The policy it was decided against.
    pub policy: Arc<Policy>,
}

impl Explained {
    /// The explanation as JSON (see [`crate::authz::explain::to_json`]).
    pub fn to_json(&self) -> serde_json::Value {
        crate::authz::explain::to_json(&self.policy, &self.decision)
    }
}

impl Authorizer {
    /// Loads ACLs from a source (strict unless `mode.strict` is false).
    pub fn new(source: Source, mode: ParseMode) -> Result<Self, LoadError> {
        Self::with_max_file_size(source, mode, DEFAULT_MAX_FILE_SIZE)
    }

    /// [`Authorizer::new`] reading at most `max_file_size` bytes of a file
    /// source, now and on every reload.
    pub fn with_max_file_size(
        source: Source,
        mode: ParseMode,
        max_file_size: u64,
    ) -> Result<Self, LoadError> {
        let policy = load_limited(&source, mode, max_file_size)?;
        tracing::info!(origin = %policy.origin, strict = mode.strict, "ACLs loaded");
        Ok(Authorizer {
            shared: Arc::new(Shared {
                current: ArcSwap::from_pointee(policy),
                source,
                mode,
                max_file_size,
                reloading: Mutex::new(()),
                executor_tokens_any_user: Default::default(),
                audit: Audit::default(),
            }),
        })
    }

    /// From module parameters, as Mesos' `LocalAuthorizer::create(Parameters)`:
    /// the value of key `acls` (the last one wins) is JSON text, a path or a
    /// `file://` URL. Errors carry Mesos' texts ("No ACLs for default
    /// authorizer provided", "Contents of 'acls' parameter could not be
    /// parsed into a valid ACLs object", followed by the located detail).
    /// `max_file_size` (bytes, default 16 MiB) bounds the file.
    pub fn from_parameters<'a>(
        parameters: impl IntoIterator<Item = (&'a str, &'a str)>,
        strict: bool,
    ) -> Result<Self, ParameterError> {
        let mut acls = None;
        let mut limit = None;
        for (key, value) in parameters {
            match key {
                "acls" => acls = Some(value),
                "max_file_size" => limit = Some(value),
                _ => {}
            }
        }
        let value = acls.ok_or(ParameterError::Missing)?;
        let limit = limit
            .map(input::parse_limit)
            .transpose()
            .map_err(ParameterError::MaxFileSize)?
            .unwrap_or(DEFAULT_MAX_FILE_SIZE);
        Self::with_max_file_size(Source::from_flag(value), ParseMode { strict }, limit)
            .map_err(ParameterError::Invalid)
    }

    /// Restores Mesos' rule for executor tokens (module parameter
    /// `executor_tokens_any_user=true`): a token may launch a nested
    /// container as any user, root included. By default nestguard lets a
    /// token launch only as its executor's own user, or as a user that
    /// `launch_nested_containers_as_user` allows the framework's principal.
    pub fn set_executor_tokens_any_user(&self, any_user: bool) {
        self.shared
            .executor_tokens_any_user
            .store(any_user, Ordering::Relaxed);
    }

    /// Whether executor tokens may launch as any user (Mesos' behaviour).
    pub fn executor_tokens_any_user(&self) -> bool {
        self.shared.tokens_any_user()
    }

    /// Reports every later decision of this authorizer and of its approvers
    /// (old and new) to `sink`, filtered by `options`, replacing any sink
    /// registered before. See [`crate::authz::audit`].
    pub fn set_audit_sink(&self, sink: Arc<dyn AuditSink>, options: AuditOptions) {
        self.shared.audit.register(sink, options);
    }

    /// Stops the audit log. When this returns, no sink call is running or
    /// will run. Must not be called from the sink itself (it would wait for
    /// itself).
    pub fn clear_audit_sink(&self) {
        self.shared.audit.unregister();
    }

    /// From JSON text.
    pub fn from_json(text: &str, strict: bool) -> Result<Self, LoadError> {
        Self::new(Source::Inline(text.to_owned()), ParseMode { strict })
    }

    /// From a file.
    pub fn from_path(path: &Path, strict: bool) -> Result<Self, LoadError> {
        Self::new(Source::File(path.to_path_buf()), ParseMode { strict })
    }

    /// The policy in force now.
    pub fn policy(&self) -> Arc<Policy> {
        self.shared.current.load_full()
    }

    /// Re-reads the source and swaps the new policy in atomically. On any
    /// error the old policy stays in force and the error says why.
    pub fn reload(&self) -> Result<(), LoadError> {
        // Serializes reloads only; decisions never take this lock.
        let _one_at_a_time = self
            .shared
            .reloading
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match load_limited(
            &self.shared.source,
            self.shared.mode,
            self.shared.max_file_size,
        ) {
            Ok(policy) => {
                tracing::info!(origin = %policy.origin, "ACLs reloaded");
                self.shared.current.store(Arc::new(policy));
                Ok(())
            }
            Err(err) => {
                tracing::warn!(error = %err, "ACL reload failed; keeping the previous policy");
                Err(err)
            }
        }
    }

    /// Mesos' `getApprover(subject, action)`.
    pub fn approver(&self, subject: Option<&Subject>, action: Action) -> Approver {
        Approver::new(Arc::clone(&self.shared), subject, action)
    }

    /// Mesos' `authorized(request)`.
    pub fn authorized(&self, request: &Request) -> Result<bool, EvalError> {
        self.explain(request).map(|d| d.allowed)
    }

    /// `authorized(request)` for a serialized `mesos.authorization.Request`,
    /// read in place by [`crate::authz::wire`] without decoding it: `None`
    /// when that reader declines (malformed bytes, or fields and actions it
    /// does not serve), and the caller must decode the request and call
    /// [`Authorizer::authorized`], which then decides identically. Counted
    /// and timed as [`Authorizer::explain`]. While an audit sink is
    /// registered it declines too: the record describes the whole request,
    /// so decoding it once beats reading it twice.
    pub fn authorized_wire(&self, bytes: &[u8]) -> Option<Result<bool, EvalError>> {
        if self.shared.audit.on() {
            return None;
        }
        let request = wire::read_request(bytes)?;
        let kind = Kind::of_principal(request.principal, request.action);
        let judge = Judge {
            action: request.action,
            kind: &kind,
            shared: &self.shared,
        };
        // Decoded once, and only if a sink registered since the check above
        // asks for a record. The reader accepted it, so prost does too (the
        // default is never used).
        let full = std::cell::OnceCell::new();
        let decoded = || full.get_or_init(|| Request::decode(bytes).unwrap_or_default());
        let result = self.shared.judge(
            &self.shared.current.load(),
            request.action as i32,
            || subject_summary(decoded().subject.as_ref()),
            || ObjectSummary::from_proto(decoded().object.as_ref()),
            |policy| judge.decide(policy, request.object.as_ref()),
        );
        Some(result.map(|d| d.allowed))
    }

    /// `authorized(request)` with what decided it.
    pub fn explain(&self, request: &Request) -> Result<Decision, EvalError> {
        self.judged(&self.shared.current.load(), request)
    }

    /// `authorized(request)` decided once, counted and audited as
    /// [`Authorizer::explain`], with the policy snapshot that decided it (to
    /// explain a denial without deciding again, against the same policy).
    pub fn decide(&self, request: &Request) -> Result<Explained, EvalError> {
        let policy = self.shared.current.load_full();
        let decision = self.judged(&policy, request)?;
        Ok(Explained { decision, policy })
    }

    /// A request decided against `policy`, counted and (off the fast path)
    /// timed and audited.
    #[inline(always)]
    fn judged(&self, policy: &Policy, request: &Request) -> Result<Decision, EvalError> {
        self.shared.judge(
            policy,
            request.action.unwrap_or(0),
            || subject_summary(request.subject.as_ref()),
            || ObjectSummary::from_proto(request.object.as_ref()),
            |policy| self.explain_in(policy, request),
        )
    }

    /// Explains a request as JSON (`allowed`, `list`, `index`, ...), using
    /// one policy snapshot for the decision and its rendering. Not counted
    /// or audited (an explanation, not a decision).
    pub fn explain_json(&self, request: &Request) -> Result<serde_json::Value, EvalError> {
        let policy = self.policy();
        let decision = self.explain_in(&policy, request)?;
        Ok(crate::authz::explain::to_json(&policy, &decision))
    }

    /// [`Authorizer::explain`] against a given policy snapshot: the request
    /// checked as Mesos checks it, its object lowered once, and decided on
    /// the one path approvers use (without making an approver).
    pub fn explain_in(&self, policy: &Policy, request: &Request) -> Result<Decision, EvalError> {
        let action = request
            .action
            .ok_or(EvalError::InvalidRequest("the request has no action"))?;
        let action = Action::try_from(action).map_err(|_| {
            EvalError::InvalidRequest("the request's action number is not a known Action")
        })?;
        if let Some(s) = &request.subject
            && s.value.is_none()
            && s.claims.is_none()
        {
            return Err(EvalError::InvalidRequest(
                "the subject has neither a value nor claims",
            ));
        }
        if let Some(o) = &request.object
            && !has_accepted_field(o)
        {
            return Err(EvalError::InvalidRequest(
                "the object is set but has none of the fields Mesos accepts",
            ));
        }
        let kind = Kind::of(request.subject.as_ref(), action);
        let judge = Judge {
            action,
            kind: &kind,
            shared: &self.shared,
        };
        let view = request
            .object
            .as_ref()
            .map(|o| ObjectView::lower(action, o));
        judge.decide(policy, view.as_ref())
    }
}

/// Whether an object carries any field Mesos' `authorized()` accepts.
fn has_accepted_field(o: &Object) -> bool {
    o.value.is_some()
        || o.framework_info.is_some()
        || o.task.is_some()
        || o.task_info.is_some()
        || o.executor_info.is_some()
        || has_quota_info(o)
        || o.weight_info.is_some()
        || o.container_id.is_some()
        || o.resource.is_some()
}

#[expect(
    deprecated,
    reason = "Mesos still accepts objects carrying only quota_info"
)]
fn has_quota_info(o: &Object) -> bool {
    o.quota_info.is_some()
}
