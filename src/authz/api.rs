//! The public entry points: [`Authorizer`] (Mesos' `authorized(request)` and
//! `getApprover(subject, action)`) and [`Approver`] (`approved(object)`).
//!
//! The policy lives in an `ArcSwap`: every decision loads the current policy
//! lock-free (no global lock, no allocation), and a reload swaps in a new one
//! atomically, so a caller sees the old or the new policy, never a mix.
//! Approvers hold the authorizer's shared state, not a policy snapshot, so
//! long-lived approvers (Mesos caches them) follow reloads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::audit::{Audit, AuditOptions, AuditSink, Facts, ObjectSummary, subject_summary};

use super::compile::{Policy, Req};
use super::evaluate::{
    Basis, Decision, EvalError, ListOutcome, ObjectView, decide_launch, decide_list,
    framework_user, launch_objects, proto_entity, view_entity,
};
use super::lists::{List, Route, route};
use super::parse::{ParseError, ParseMode, parse};
use super::roles::{decide_role, role_objects};
use super::validate::{ValidateError, validate};
use crate::credentials::claims::Claims;
use crate::input::{self, DEFAULT_MAX_FILE_SIZE, FlagValue, InputError};
use crate::metrics::{self, Outcome};
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::authorization::{Action, Object, Request, Subject};

/// Where ACLs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// JSON text.
    Inline(String),
    /// A file, re-read on reload.
    File(PathBuf),
}

impl Source {
    /// Interprets a value the way Mesos' `--acls` flag does: `file://PATH`
    /// or a path names a file, text starting with `{` is JSON.
    pub fn from_flag(value: &str) -> Source {
        match FlagValue::parse(value) {
            FlagValue::Inline(text) => Source::Inline(text.to_owned()),
            FlagValue::File(path) => Source::File(path),
        }
    }

    fn origin(&self) -> String {
        match self {
            Source::Inline(_) => "<inline>".to_owned(),
            Source::File(p) => p.display().to_string(),
        }
    }
}

/// Why ACLs did not load. A failed load never yields an authorizer (fail
/// closed) and a failed reload keeps the previous policy.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read: missing, not a regular file (a FIFO,
    /// `/dev/zero`), larger than `max_file_size`, not UTF-8.
    #[error("{path}: cannot read ACLs: {source}")]
    Read {
        /// The file.
        path: String,
        /// What went wrong.
        #[source]
        source: InputError,
    },
    /// The JSON is malformed or does not fit `mesos.ACLs`.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Mesos' validation rejects the ACLs.
    #[error(transparent)]
    Invalid(#[from] ValidateError),
}

/// Why module parameters did not yield an authorizer.
#[derive(Debug, thiserror::Error)]
pub enum ParameterError {
    /// No `acls` parameter.
    #[error("No ACLs for default authorizer provided")]
    Missing,
    /// The `acls` parameter did not load.
    #[error("Contents of 'acls' parameter could not be parsed into a valid ACLs object: {0}")]
    Invalid(#[source] LoadError),
    /// A bad `max_file_size` parameter.
    #[error(transparent)]
    MaxFileSize(InputError),
}

/// Loads, validates and compiles ACLs; a file may hold at most
/// [`DEFAULT_MAX_FILE_SIZE`] bytes.
pub fn load(source: &Source, mode: ParseMode) -> Result<Policy, LoadError> {
    load_limited(source, mode, DEFAULT_MAX_FILE_SIZE)
}

/// [`load`] with a file size limit: only a regular file of at most
/// `max_file_size` bytes is read (see [`crate::input`]).
pub fn load_limited(
    source: &Source,
    mode: ParseMode,
    max_file_size: u64,
) -> Result<Policy, LoadError> {
    let origin = source.origin();
    let text;
    let json = match source {
        Source::Inline(t) => t.as_str(),
        Source::File(path) => {
            text = input::read_text(path, max_file_size).map_err(|source| LoadError::Read {
                path: origin.clone(),
                source,
            })?;
            text.as_str()
        }
    };
    let doc = parse(json, &origin, mode)?;
    validate(&doc, &origin)?;
    Ok(Policy::compile(doc, origin))
}

#[derive(Debug)]
struct Shared {
    current: ArcSwap<Policy>,
    source: Source,
    mode: ParseMode,
    max_file_size: u64,
    reloading: Mutex<()>,
    /// Mesos' behaviour for executor tokens: a token may launch nested
    /// containers as any user. Off by default (see [`Authorizer::set_executor_tokens_any_user`]).
    executor_tokens_any_user: AtomicBool,
    /// The decision audit log (off unless a sink is registered).
    audit: Audit,
}

/// Counts a decision in the process-wide metrics (an add to this thread's
/// own counter: no locked instruction).
#[inline(always)]
fn count(action: i32, result: &Result<Decision, EvalError>) {
    let outcome = match result {
        Ok(d) if d.allowed => Outcome::Allowed,
        Ok(_) => Outcome::Denied,
        Err(_) => Outcome::Error,
    };
    metrics::authz().count(action, outcome);
}

impl Shared {
    /// Whether a decision leaves the fast path: an audit sink is registered,
    /// or this decision's latency is to be sampled (see [`crate::metrics`]).
    /// Two relaxed loads.
    #[inline(always)]
    fn observed(&self) -> bool {
        self.audit.on() || metrics::authz().timing_due()
    }

    /// A decision off the fast path: timed if its sample is due, counted,
    /// and reported to the audit sink if one is registered.
    #[cold]
    #[inline(never)]
    fn observe(
        &self,
        action: i32,
        name: &'static str,
        subject: &dyn Fn() -> String,
        object: &dyn Fn() -> ObjectSummary,
        decide: impl FnOnce(&Policy) -> Result<Decision, EvalError>,
    ) -> Result<Decision, EvalError> {
        let timed = metrics::authz().take_timing();
        let started = std::time::Instant::now();
        let policy = self.current.load();
        let result = decide(&policy);
        if timed {
            metrics::authz().record_latency(started.elapsed());
        }
        count(action, &result);
        if self.audit.on() {
            self.audit.emit(
                started,
                &result,
                Facts {
                    policy: &policy,
                    action: name,
                    subject,
                    object,
                },
            );
        }
        result
    }
}

/// A Mesos-compatible local authorizer over a hot-reloadable ACL policy.
///
/// `Send + Sync`: any number of threads may decide concurrently.
#[derive(Debug, Clone)]
pub struct Authorizer {
    shared: Arc<Shared>,
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
                executor_tokens_any_user: AtomicBool::new(false),
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
        self.shared.executor_tokens_any_user.load(Ordering::Relaxed)
    }

    /// Reports every later decision of this authorizer and of its approvers
    /// (old and new) to `sink`, filtered by `options`, replacing any sink
    /// registered before. See [`super::audit`].
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
        Approver {
            shared: Arc::clone(&self.shared),
            action,
            kind: ApproverKind::for_subject(subject, action),
        }
    }

    /// Mesos' `authorized(request)`.
    pub fn authorized(&self, request: &Request) -> Result<bool, EvalError> {
        self.explain(request).map(|d| d.allowed)
    }

    /// `authorized(request)` with what decided it.
    pub fn explain(&self, request: &Request) -> Result<Decision, EvalError> {
        let action = request.action.unwrap_or(0);
        if self.shared.observed() {
            let name = Action::try_from(action).map_or("UNKNOWN", |a| a.as_str_name());
            return self.shared.observe(
                action,
                name,
                &|| subject_summary(request.subject.as_ref()),
                &|| ObjectSummary::from_proto(request.object.as_ref()),
                |policy| self.explain_in(policy, request),
            );
        }
        let result = self.explain_in(&self.shared.current.load(), request);
        count(action, &result);
        result
    }

    /// Explains a request as JSON (`allowed`, `list`, `index`, ...), using
    /// one policy snapshot for the decision and its rendering.
    pub fn explain_json(&self, request: &Request) -> Result<serde_json::Value, EvalError> {
        let policy = self.policy();
        let decision = self.explain_in(&policy, request)?;
        Ok(super::explain::to_json(&policy, &decision))
    }

    /// [`Authorizer::explain`] against a given policy snapshot.
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
        if let Some(o) = &request.object {
            let any = o.value.is_some()
                || o.framework_info.is_some()
                || o.task.is_some()
                || o.task_info.is_some()
                || o.executor_info.is_some()
                || has_quota_info(o)
                || o.weight_info.is_some()
                || o.container_id.is_some()
                || o.resource.is_some();
            if !any {
                return Err(EvalError::InvalidRequest(
                    "the object is set but has none of the fields Mesos accepts",
                ));
            }
        }
        self.approver(request.subject.as_ref(), action)
            .decide_proto_in(policy, request.object.as_ref())
    }
}

#[derive(Debug)]
enum ApproverKind {
    Reject(&'static str),
    Executor(Box<[u8]>),
    ResourceProvider(Box<[u8]>),
    Acl {
        route: Route,
        principal: Option<Box<[u8]>>,
    },
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

impl ApproverKind {
    fn for_subject(subject: Option<&Subject>, action: Action) -> Self {
        if let Some(s) = subject
            && s.value.is_none()
        {
            if let Some(claims) = Claims::of(s) {
                if EXECUTOR_ACTIONS.contains(&action) {
                    // The first `cid` claim with a value.
                    return match claims.container_id() {
                        Some(cid) => ApproverKind::Executor(Box::from(cid.as_bytes())),
                        None => ApproverKind::Reject("the subject's claims have no `cid`"),
                    };
                }
                if RESOURCE_PROVIDER_ACTIONS.contains(&action) {
                    // The last `cid_prefix` claim with a value.
                    return match claims.container_id_prefix() {
                        // Stricter than Mesos: an empty prefix would match
                        // every container id; it grants nothing.
                        Some("") => {
                            ApproverKind::Reject("the subject's `cid_prefix` claim is empty")
                        }
                        Some(prefix) => {
                            ApproverKind::ResourceProvider(Box::from(prefix.as_bytes()))
                        }
                        None => ApproverKind::Reject("the subject's claims have no `cid_prefix`"),
                    };
                }
            }
            return ApproverKind::Reject(
                "a subject without a principal value is only accepted for the implicit executor and resource provider actions",
            );
        }
        match route(action) {
            Route::Reject => ApproverKind::Reject("the action is UNKNOWN"),
            route => ApproverKind::Acl {
                route,
                principal: subject
                    .and_then(|s| s.value.as_deref())
                    .map(|v| Box::from(v.as_bytes())),
            },
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
    kind: ApproverKind,
}

#[expect(
    deprecated,
    reason = "Mesos still accepts objects carrying only quota_info"
)]
fn has_quota_info(o: &Object) -> bool {
    o.quota_info.is_some()
}

fn root_of(id: &ContainerId) -> &ContainerId {
    let mut id = id;
    while let Some(parent) = id.parent.as_deref() {
        id = parent;
    }
    id
}

impl Approver {
    /// The policy in force now (for rendering an explanation).
    pub fn policy(&self) -> Arc<Policy> {
        self.shared.current.load_full()
    }

    /// The action.
    pub fn action(&self) -> Action {
        self.action
    }

    /// `approved(object)` over borrowed fields (`None` = no object).
    #[inline]
    pub fn approved(&self, object: Option<&ObjectView<'_>>) -> Result<bool, EvalError> {
        self.decide(object).map(|d| d.allowed)
    }

    fn subject(&self) -> Req<'_> {
        match &self.kind {
            ApproverKind::Acl {
                principal: Some(p), ..
            } => Req::Some(p),
            _ => Req::Any,
        }
    }

    /// `approved(object)` with what decided it, over borrowed fields.
    #[inline]
    pub fn decide(&self, object: Option<&ObjectView<'_>>) -> Result<Decision, EvalError> {
        if self.shared.observed() {
            return self.shared.observe(
                self.action as i32,
                self.action.as_str_name(),
                &|| self.subject_summary(),
                &|| ObjectSummary::from_view(object),
                |policy| self.decide_in(policy, object),
            );
        }
        let result = self.decide_in(&self.shared.current.load(), object);
        count(self.action as i32, &result);
        result
    }

    /// Who this approver decides for, as an audit record names it.
    fn subject_summary(&self) -> String {
        match &self.kind {
            ApproverKind::Acl {
                principal: Some(p), ..
            } => String::from_utf8_lossy(p).into_owned(),
            ApproverKind::Acl {
                principal: None, ..
            } => "unauthenticated".to_owned(),
            ApproverKind::Executor(cid) => format!("token for {}", String::from_utf8_lossy(cid)),
            ApproverKind::ResourceProvider(prefix) => format!(
                "token for containers under {}",
                String::from_utf8_lossy(prefix)
            ),
            ApproverKind::Reject(_) => "subject without a principal".to_owned(),
        }
    }

    /// [`Approver::decide`] against a given policy snapshot.
    pub fn decide_in(
        &self,
        policy: &Policy,
        object: Option<&ObjectView<'_>>,
    ) -> Result<Decision, EvalError> {
        match &self.kind {
            ApproverKind::Reject(why) => Ok(rejected(why)),
            ApproverKind::Executor(cid) => {
                let owns = object.is_some_and(|o| {
                    o.container_id.is_some()
                        && o.root_container_id.or(o.container_id) == Some(&cid[..])
                });
                if !owns {
                    return Ok(Decision {
                        allowed: false,
                        basis: Basis::ImplicitExecutor,
                    });
                }
                let user = object.and_then(|o| o.has_command.then_some(o.command_user).flatten());
                let own = object.and_then(|o| {
                    o.executor_user
                        .or(o.framework_user.filter(|_| o.has_framework_info))
                });
                // Another user is decided by the framework's principal, which
                // the borrowed view does not carry: the protobuf entry point
                // must decide (see `token_user_decision`).
                let launches = matches!(
                    self.action,
                    Action::LaunchNestedContainer | Action::LaunchNestedContainerSession
                );
                let any_user = self.shared.executor_tokens_any_user.load(Ordering::Relaxed);
                if launches && !any_user && user.is_some() && user != own {
                    return Err(EvalError::NeedsProtobuf {
                        action: self.action.as_str_name(),
                    });
                }
                Ok(self.token_user_decision(policy, user, own, None))
            }
            ApproverKind::ResourceProvider(prefix) => Ok(Decision {
                allowed: object
                    .and_then(|o| o.container_id)
                    .is_some_and(|c| c.starts_with(prefix)),
                basis: Basis::ImplicitResourceProvider,
            }),
            ApproverKind::Acl { route, .. } => {
                let subject = self.subject();
                match *route {
                    Route::Generic(list) => {
                        let o = view_entity(self.action, object)?;
                        Ok(acl(decide_list(policy, list, subject, o)))
                    }
                    Route::Nested { parent, child } => {
                        let (p, c) = launch_objects(object);
                        Ok(decide_launch(policy, parent, child, subject, p, c))
                    }
                    Route::Roles(_) => Err(EvalError::NeedsProtobuf {
                        action: self.action.as_str_name(),
                    }),
                    Route::Reject => Ok(rejected("the action is UNKNOWN")),
                }
            }
        }
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
        let any_user = self.shared.executor_tokens_any_user.load(Ordering::Relaxed);
        let Some(user) = user.filter(|_| launches && !any_user) else {
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

    /// `approved(object)` with what decided it, over a protobuf object.
    pub fn decide_proto(&self, object: Option<&Object>) -> Result<Decision, EvalError> {
        if self.shared.observed() {
            return self.shared.observe(
                self.action as i32,
                self.action.as_str_name(),
                &|| self.subject_summary(),
                &|| ObjectSummary::from_proto(object),
                |policy| self.decide_proto_in(policy, object),
            );
        }
        let result = self.decide_proto_in(&self.shared.current.load(), object);
        count(self.action as i32, &result);
        result
    }

    /// [`Approver::decide_proto`] against a given policy snapshot.
    pub fn decide_proto_in(
        &self,
        policy: &Policy,
        object: Option<&Object>,
    ) -> Result<Decision, EvalError> {
        match &self.kind {
            ApproverKind::Executor(cid) => {
                let owns = object
                    .and_then(|o| o.container_id.as_ref())
                    .is_some_and(|c| root_of(c).value.as_bytes() == &cid[..]);
                let Some(o) = object.filter(|_| owns) else {
                    return Ok(Decision {
                        allowed: false,
                        basis: Basis::ImplicitExecutor,
                    });
                };
                let user = o
                    .command_info
                    .as_ref()
                    .and_then(|c| c.user.as_deref())
                    .map(str::as_bytes);
                let own = o
                    .executor_info
                    .as_ref()
                    .and_then(|e| e.command.as_ref())
                    .and_then(|c| c.user.as_deref())
                    .map(str::as_bytes)
                    .or_else(|| o.framework_info.as_ref().and_then(framework_user));
                let principal = o
                    .framework_info
                    .as_ref()
                    .and_then(|f| f.principal.as_deref())
                    .filter(|p| !p.is_empty())
                    .map(str::as_bytes);
                Ok(self.token_user_decision(policy, user, own, principal))
            }
            ApproverKind::Reject(_) | ApproverKind::ResourceProvider(_) => {
                let view = object.map(|o| ObjectView {
                    container_id: o.container_id.as_ref().map(|c| c.value.as_bytes()),
                    ..ObjectView::default()
                });
                self.decide_in(policy, view.as_ref())
            }
            ApproverKind::Acl { route, .. } => {
                let subject = self.subject();
                match *route {
                    Route::Generic(list) => {
                        let o = proto_entity(self.action, object)?;
                        Ok(acl(decide_list(policy, list, subject, o)))
                    }
                    Route::Nested { parent, child } => {
                        let view = object.map(|o| ObjectView {
                            has_executor_info: o.executor_info.is_some(),
                            executor_user: o
                                .executor_info
                                .as_ref()
                                .and_then(|e| e.command.as_ref())
                                .and_then(|c| c.user.as_deref())
                                .map(str::as_bytes),
                            has_framework_info: o.framework_info.is_some(),
                            framework_user: o.framework_info.as_ref().and_then(framework_user),
                            has_command: o.command_info.is_some(),
                            command_user: o
                                .command_info
                                .as_ref()
                                .and_then(|c| c.user.as_deref())
                                .map(str::as_bytes),
                            ..ObjectView::default()
                        });
                        let (p, c) = launch_objects(view.as_ref());
                        Ok(decide_launch(policy, parent, child, subject, p, c))
                    }
                    Route::Roles(list) => {
                        let objects = role_objects(self.action, object)?;
                        let mut last = None;
                        for o in &objects {
                            let outcome = decide_role(
                                policy.doc.list(list),
                                list,
                                policy.permissive(),
                                subject,
                                *o,
                            );
                            if !outcome.allowed {
                                return Ok(acl(outcome));
                            }
                            last = Some(outcome);
                        }
                        Ok(match last {
                            Some(o) => acl(o),
                            // A multi-role framework with no roles: permissive decides.
                            None => acl(ListOutcome {
                                list,
                                entry: None,
                                allowed: policy.permissive(),
                            }),
                        })
                    }
                    Route::Reject => Ok(rejected("the action is UNKNOWN")),
                }
            }
        }
    }
}

fn acl(outcome: ListOutcome) -> Decision {
    Decision {
        allowed: outcome.allowed,
        basis: Basis::Acl(outcome),
    }
}

fn rejected(why: &'static str) -> Decision {
    Decision {
        allowed: false,
        basis: Basis::Rejected(why),
    }
}

/// The list a `Basis::Acl` or a launch half refers to, for callers that
/// only need names.
pub fn list_name(list: List) -> &'static str {
    list.spec().json
}
