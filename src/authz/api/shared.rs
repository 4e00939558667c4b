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
use crate::proto::mesos::authorization::Action;

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
    /// counted, and (off the fast path) timed and audited, with the subject
    /// and object as `subject` and `object` name them for the record (only
    /// called when a record is written: generic, so the fast path never
    /// builds them).
    #[inline(always)]
    pub(super) fn judge(
        &self,
        policy: &Policy,
        action: i32,
        subject: impl Fn() -> String,
        object: impl Fn() -> ObjectSummary,
        decide: impl FnOnce(&Policy) -> Result<Decision, EvalError>,
    ) -> Result<Decision, EvalError> {
        if self.observed() {
            return self.observe(policy, action, &subject, &object, decide);
        }
        let result = decide(policy);
        count(action, &result);
        result
    }

    /// A decision off the fast path: timed if its sample is due, counted,
    /// and reported to the audit sink if one is registered.
    #[cold]
    #[inline(never)]
    fn observe(
        &self,
        policy: &Policy,
        action: i32,
        subject: &dyn Fn() -> String,
        object: &dyn Fn() -> ObjectSummary,
        decide: impl FnOnce(&Policy) -> Result<Decision, EvalError>,
    ) -> Result<Decision, EvalError> {
        let timed = metrics::authz().take_timing();
        let started = std::time::Instant::now();
        let result = decide(policy);
        if timed {
            metrics::authz().record_latency(started.elapsed());
        }
        count(action, &result);
        if self.audit.on() {
            self.audit.emit(
                started,
                &result,
                Facts {
                    policy,
                    action: Action::try_from(action).map_or("UNKNOWN", |a| a.as_str_name()),
                    subject,
                    object,
                },
            );
        }
        result
    }
}
