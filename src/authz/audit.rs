//! The decision audit log: a structured record of every decision the
//! [`Authorizer`](super::Authorizer) and its approvers make, handed to a sink
//! the host registers (the C ABI turns it into a callback with JSON bytes).
//!
//! Off by default. Deciding pays one relaxed atomic load while it is off,
//! so the fast path keeps its cost; everything else (the clock, the record,
//! the lock that makes unregistering wait for callbacks in flight) happens
//! only when a sink is registered.
//!
//! A record names who asked (a principal, `token for <container id>` for an
//! executor token, or `unauthenticated`), the action, the users and
//! container ids the decision looked at, the verdict and what decided it.
//! It never holds a secret: no token text, no password, no environment, no
//! command line; only the fields the ACL rules read.
//!
//! A record is bounded: each string a caller controls (the subject, every
//! object field, an error text) is copied up to [`AUDIT_FIELD_MAX_BYTES`],
//! cut on a character, and a cut field is named in `truncated` with its
//! whole length and a SHA-256 of its whole value, so that one decision on a
//! huge field cannot fill a log and two such values can still be told
//! apart.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::compile::Policy;
use super::evaluate::{Decision, EvalError};
use super::view::{ObjectView, framework_user};
use crate::credentials::claims::Claims;
use crate::proto::mesos::authorization::{Object, Subject};

/// Receives audit records. Called on the deciding thread (any thread), while
/// the decision's caller waits: keep it short, and never call back into the
/// authorizer from it (registering or unregistering a sink from a sink
/// deadlocks).
pub trait AuditSink: Send + Sync {
    /// One decision.
    fn record(&self, record: &AuditRecord);
}

/// Which decisions reach the sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditOptions {
    /// Report one decision in `sample_every` (after the denials filter);
    /// 0 and 1 report every one. Deterministic: a counter, not a dice.
    pub sample_every: u64,
    /// Report only denials (errors count as denials).
    pub denials_only: bool,
}

/// The users and ids a decision looked at (never secrets: only the fields
/// the ACL rules read). Absent fields are left out of the JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ObjectSummary {
    /// `Object.value` (a user, role or principal name, per action).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `framework_info.user`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework_user: Option<String>,
    /// `framework_info.principal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework_principal: Option<String>,
    /// `executor_info.command.user`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executor_user: Option<String>,
    /// `command_info.user` (a launch's child user).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_user: Option<String>,
    /// `task_info.command.user` or `task.user`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_user: Option<String>,
    /// `container_id.value` (the leaf).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The root of `container_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_container_id: Option<String>,
}

fn text(b: Option<&[u8]>) -> Option<String> {
    b.map(|b| String::from_utf8_lossy(b).into_owned())
}

impl ObjectSummary {
    /// From the borrowed view of the fast path.
    pub fn from_view(o: Option<&ObjectView<'_>>) -> Self {
        let Some(o) = o else {
            return Self::default();
        };
        ObjectSummary {
            value: text(o.value),
            framework_user: text(o.framework_user),
            framework_principal: text(o.framework_principal),
            executor_user: text(o.executor_user),
            command_user: text(o.command_user),
            container_id: text(o.container_id),
            root_container_id: text(o.root_container_id.or(o.container_id)),
            ..Self::default()
        }
    }

    /// From a protobuf object.
    pub fn from_proto(o: Option<&Object>) -> Self {
        let Some(o) = o else {
            return Self::default();
        };
        let root = o.container_id.as_ref().map(|c| {
            let mut c = c;
            while let Some(p) = c.parent.as_deref() {
                c = p;
            }
            c.value.clone()
        });
        ObjectSummary {
            value: o.value.clone(),
            framework_user: text(o.framework_info.as_ref().and_then(framework_user)),
            framework_principal: o.framework_info.as_ref().and_then(|f| f.principal.clone()),
            executor_user: o
                .executor_info
                .as_ref()
                .and_then(|e| e.command.as_ref())
                .and_then(|c| c.user.clone()),
            command_user: o.command_info.as_ref().and_then(|c| c.user.clone()),
            task_user: o
                .task_info
                .as_ref()
                .and_then(|t| t.command.as_ref())
                .and_then(|c| c.user.clone())
                .or_else(|| o.task.as_ref().and_then(|t| t.user.clone())),
            container_id: o.container_id.as_ref().map(|c| c.value.clone()),
            root_container_id: root,
        }
    }
}

/// Who asked, as a record names it: the principal, `token for <cid>` for an
/// executor token (the `cid` claim, never the token), `token for containers
/// under <prefix>` for a resource provider's, or `unauthenticated`.
pub fn subject_summary(subject: Option<&Subject>) -> String {
    let Some(s) = subject else {
        return "unauthenticated".to_owned();
    };
    if let Some(v) = &s.value {
        return v.clone();
    }
    // The claims the authorizer decided on, read as it reads them.
    let claims = Claims::of(s);
    if let Some(cid) = claims.and_then(|c| c.container_id()) {
        return format!("token for {cid}");
    }
    if let Some(prefix) = claims.and_then(|c| c.container_id_prefix()) {
        return format!("token for containers under {prefix}");
    }
    "token without a container claim".to_owned()
}

/// The most bytes of one caller-controlled string a record copies.
pub const AUDIT_FIELD_MAX_BYTES: usize = 256;

/// A field cut to [`AUDIT_FIELD_MAX_BYTES`]: what it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truncated {
    /// The whole value's length in bytes.
    pub len: usize,
    /// SHA-256 of the whole value, lowercase hex.
    pub sha256: String,
}

/// Cuts `value` to [`AUDIT_FIELD_MAX_BYTES`] on a character; returns what it
/// was when it was cut.
fn bound(value: &mut String) -> Option<Truncated> {
    if value.len() <= AUDIT_FIELD_MAX_BYTES {
        return None;
    }
    let sha256 = Sha256::digest(value.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let len = value.len();
    let cut = (0..=AUDIT_FIELD_MAX_BYTES)
        .rev()
        .find(|&i| value.is_char_boundary(i))
        .unwrap_or(0);
    value.truncate(cut);
    Some(Truncated { len, sha256 })
}

impl ObjectSummary {
    /// Every field, by its JSON name.
    fn fields_mut(&mut self) -> [(&'static str, &mut Option<String>); 8] {
        [
            ("value", &mut self.value),
            ("framework_user", &mut self.framework_user),
            ("framework_principal", &mut self.framework_principal),
            ("executor_user", &mut self.executor_user),
            ("command_user", &mut self.command_user),
            ("task_user", &mut self.task_user),
            ("container_id", &mut self.container_id),
            ("root_container_id", &mut self.root_container_id),
        ]
    }
}

/// One decision, as the sink receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRecord {
    /// When the decision finished, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// Who asked (see [`subject_summary`]).
    pub subject: String,
    /// The `mesos.authorization.Action` name.
    pub action: &'static str,
    /// What the decision looked at.
    pub object: ObjectSummary,
    /// The verdict (an error is a denial).
    pub allowed: bool,
    /// What decided: the explanation JSON (`list`, `index` or `null` when
    /// `permissive` decided, `decided_by`, `parent`/`child` for launches),
    /// or `{"error": ...}` when the request could not be decided.
    pub decision: Value,
    /// Time spent deciding, in nanoseconds.
    pub latency_ns: u64,
    /// The fields cut to [`AUDIT_FIELD_MAX_BYTES`] (`subject`, an object
    /// field's name, or `error`), each with its whole length and hash; left
    /// out of the JSON when none was.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub truncated: BTreeMap<&'static str, Truncated>,
}

impl AuditRecord {
    /// The record as one line of JSON.
    pub fn to_json(&self) -> String {
        // A struct of strings, numbers and a `Value` always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}

struct Registered {
    sink: Arc<dyn AuditSink>,
    options: AuditOptions,
    seen: AtomicU64,
}

/// The authorizer's audit state: an on/off flag the deciders read, and the
/// registered sink behind a lock that readers (deciders) share and
/// unregistering takes exclusively, so that once unregistering returns no
/// callback is running or will run (the C side may free its userdata).
#[derive(Default)]
pub(crate) struct Audit {
    on: AtomicBool,
    registered: RwLock<Option<Registered>>,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit").field("on", &self.on()).finish()
    }
}

/// What a decider hands over for a record; built only when it is reported.
pub(crate) struct Facts<'a> {
    pub policy: &'a Policy,
    pub action: &'static str,
    pub subject: &'a dyn Fn() -> String,
    pub object: &'a dyn Fn() -> ObjectSummary,
}

impl Audit {
    /// The one check the deciders make while auditing is off.
    #[inline(always)]
    pub(crate) fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub(crate) fn register(&self, sink: Arc<dyn AuditSink>, options: AuditOptions) {
        let mut slot = self.registered.write().unwrap_or_else(|p| p.into_inner());
        *slot = Some(Registered {
            sink,
            options,
            seen: AtomicU64::new(0),
        });
        self.on.store(true, Ordering::Relaxed);
    }

    pub(crate) fn unregister(&self) {
        self.on.store(false, Ordering::Relaxed);
        // Waits for callbacks in flight.
        let mut slot = self.registered.write().unwrap_or_else(|p| p.into_inner());
        *slot = None;
    }

    /// Reports a decision that started at `started`, if the options let it
    /// through.
    #[cold]
    pub(crate) fn emit(
        &self,
        started: Instant,
        result: &Result<Decision, EvalError>,
        facts: Facts<'_>,
    ) {
        let latency = started.elapsed();
        let slot = self.registered.read().unwrap_or_else(|p| p.into_inner());
        let Some(reg) = slot.as_ref() else {
            return;
        };
        let allowed = result.as_ref().is_ok_and(|d| d.allowed);
        if reg.options.denials_only && allowed {
            return;
        }
        let n = reg.seen.fetch_add(1, Ordering::Relaxed);
        if reg.options.sample_every > 1 && !n.is_multiple_of(reg.options.sample_every) {
            return;
        }
        let mut truncated = BTreeMap::new();
        let decision = match result {
            Ok(d) => super::explain::to_json(facts.policy, d),
            Err(e) => {
                let mut error = e.to_string();
                if let Some(cut) = bound(&mut error) {
                    truncated.insert("error", cut);
                }
                serde_json::json!({ "error": error })
            }
        };
        let mut subject = (facts.subject)();
        if let Some(cut) = bound(&mut subject) {
            truncated.insert("subject", cut);
        }
        let mut object = (facts.object)();
        for (name, field) in object.fields_mut() {
            if let Some(cut) = field.as_mut().and_then(bound) {
                truncated.insert(name, cut);
            }
        }
        let record = AuditRecord {
            time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            subject,
            action: facts.action,
            object,
            allowed,
            decision,
            latency_ns: u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX),
            truncated,
        };
        reg.sink.record(&record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_names_the_framework_principal_as_a_protobuf_object_does() {
        let view = ObjectView {
            framework_user: Some(b"alice"),
            framework_principal: Some(b"fw"),
            has_framework_info: true,
            ..ObjectView::default()
        };
        let summary = ObjectSummary::from_view(Some(&view));
        assert_eq!(summary.framework_principal.as_deref(), Some("fw"));
        assert_eq!(summary.framework_user.as_deref(), Some("alice"));
    }
}
