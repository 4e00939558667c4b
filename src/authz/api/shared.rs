//! What an [`super::Authorizer`] and its approvers share: the policy in
//! force (an `ArcSwap`, swapped whole by a reload), the reload settings,
//! Mesos' executor-token switch and the audit log; and the one place a
//! decision is counted, timed and audited.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;

use super::source::Source;
use crate::authz::audit::{Audit, Facts, ObjectSummary};
use crate::authz::compile::Policy;
use crate::authz::evaluate::{Decision, EvalError};
use crate::authz::parse::ParseMode;
use crate::metrics::{self, Outcome};

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) current: ArcSwap<Policy>,
    pub(super) source: Source,
    pub(super) mode: ParseMode,
    pub(super) max_file_size: u64,
    pub(super) reloading: Mutex<()>,
    /// Mesos' behaviour for executor tokens: a token may launch nested
    /// containers as any user. Off by default (see
    /// [`super::Authorizer::set_executor_tokens_any_user`]).
    pub(super) executor_tokens_any_user: AtomicBool,
    /// The decision audit log (off unless a sink is registered).
    pub(super) audit: Audit,
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

/// What a decision is about, for the audit log; only read when a record is
/// written, so the fast path never builds it.
pub(super) struct About<'f> {
    /// The action's number (for the metrics) and Mesos name (for the record).
    pub(super) action: (i32, &'static str),
    /// The subject as the record names it.
    pub(super) subject: &'f dyn Fn() -> String,
    /// The object's users and ids.
    pub(super) object: &'f dyn Fn() -> ObjectSummary,
}

impl Shared {
    /// Mesos' executor-token switch, as it stands now.
    #[inline(always)]
    pub(super) fn tokens_any_user(&self) -> bool {
        self.executor_tokens_any_user.load(Ordering::Relaxed)
    }

    /// Whether a decision leaves the fast path: an audit sink is registered,
    /// or this decision's latency is to be sampled (see [`crate::metrics`]).
    /// Two relaxed loads.
    #[inline(always)]
    fn observed(&self) -> bool {
        self.audit.on() || metrics::authz().timing_due()
    }

    /// Every decision goes through here, once: decided against `policy`,
    /// counted, and (off the fast path) timed and audited.
    #[inline(always)]
    pub(super) fn judge(
        &self,
        policy: &Policy,
        about: About<'_>,
        decide: impl FnOnce(&Policy) -> Result<Decision, EvalError>,
    ) -> Result<Decision, EvalError> {
        if self.observed() {
            return self.observe(policy, about, decide);
        }
        let result = decide(policy);
        count(about.action.0, &result);
        result
    }

    /// A decision off the fast path: timed if its sample is due, counted,
    /// and reported to the audit sink if one is registered.
    #[cold]
    #[inline(never)]
    fn observe(
        &self,
        policy: &Policy,
        about: About<'_>,
        decide: impl FnOnce(&Policy) -> Result<Decision, EvalError>,
    ) -> Result<Decision, EvalError> {
        let timed = metrics::authz().take_timing();
        let started = std::time::Instant::now();
        let result = decide(policy);
        if timed {
            metrics::authz().record_latency(started.elapsed());
        }
        count(about.action.0, &result);
        if self.audit.on() {
            self.audit.emit(
                started,
                &result,
                Facts {
                    policy,
                    action: about.action.1,
                    subject: about.subject,
                    object: about.object,
                },
            );
        }
        result
    }
}
