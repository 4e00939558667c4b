//! What the default executor does when a task's container exits: the
//! design's restart policy (§6.1.1), and the pod-level consequence.
//!
//! Kept free of I/O so every rule is unit-tested.

use std::time::Duration;

use nestguard::proto::nestguard::{PodTask, RestartPolicy, restart_policy};

/// Mesos' reading of a raw wait status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with a code (WIFEXITED / WEXITSTATUS).
    Code(i32),
    /// Killed by a signal (WIFSIGNALED / WTERMSIG).
    Signal(i32),
}

impl Exit {
    /// Decodes a raw `waitpid` status as the default executor does.
    pub fn from_raw(status: i32) -> Exit {
        if libc::WIFEXITED(status) {
            Exit::Code(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Signal(libc::SIGKILL)
        }
    }

    /// Success is exit code 0.
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exited with status {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// What to do with a task whose container exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Launch it again after the delay (TASK_RESTARTING).
    Restart {
        /// Wait this long first.
        delay: Duration,
        /// Which restart this is (1-based).
        attempt: u32,
    },
    /// The task is done: TASK_FINISHED.
    Finished,
    /// The task failed for good: TASK_FAILED.
    Failed,
}

/// Applies the task's restart policy to an exit, given how many times the
/// task was already restarted.
pub fn decide(policy: Option<&RestartPolicy>, exit: Exit, restarts_so_far: u32) -> Decision {
    let terminal = if exit.success() {
        Decision::Finished
    } else {
        Decision::Failed
    };
    let Some(policy) = policy else {
        return terminal;
    };
    let wants_restart = match policy.r#type() {
        restart_policy::Type::Always => true,
        restart_policy::Type::OnFailure => !exit.success(),
        restart_policy::Type::Unknown => false,
    };
    let budget_left = policy
        .max_restarts
        .is_none_or(|max| i64::from(restarts_so_far) < i64::from(max));
    if wants_restart && budget_left {
        let delay = policy
            .min_restart_delay
            .as_ref()
            .map_or(Duration::ZERO, |d| {
                Duration::from_nanos(u64::try_from(d.nanoseconds).unwrap_or(0))
            });
        Decision::Restart {
            delay,
            attempt: restarts_so_far + 1,
        }
    } else {
        terminal
    }
}

/// Whether a terminal task ends the pod: a task that fails for good kills the
/// rest (unless it is transient); when every non-transient task is terminal
/// the pod is over.
pub fn ends_pod(task: &PodTask, decision: &Decision) -> bool {
    !task.transient() && matches!(decision, Decision::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nestguard::proto::mesos::DurationInfo;

    fn policy(kind: restart_policy::Type, max: Option<i32>, delay_ms: i64) -> RestartPolicy {
        RestartPolicy {
            r#type: Some(kind as i32),
            max_restarts: max,
            min_restart_delay: Some(DurationInfo {
                nanoseconds: delay_ms * 1_000_000,
            }),
        }
    }

    #[test]
    fn raw_statuses() {
        assert_eq!(Exit::from_raw(0), Exit::Code(0));
        assert_eq!(Exit::from_raw(256), Exit::Code(1));
        assert_eq!(Exit::from_raw(9), Exit::Signal(9));
    }

    #[test]
    fn no_policy_is_terminal() {
        assert_eq!(decide(None, Exit::Code(0), 0), Decision::Finished);
        assert_eq!(decide(None, Exit::Code(3), 0), Decision::Failed);
    }

    #[test]
    fn on_failure_restarts_until_the_budget_is_spent() {
        let p = policy(restart_policy::Type::OnFailure, Some(2), 100);
        assert_eq!(
            decide(Some(&p), Exit::Code(1), 0),
            Decision::Restart {
                delay: Duration::from_millis(100),
                attempt: 1
            }
        );
        assert_eq!(
            decide(Some(&p), Exit::Signal(9), 1),
            Decision::Restart {
                delay: Duration::from_millis(100),
                attempt: 2
            }
        );
        assert_eq!(decide(Some(&p), Exit::Code(1), 2), Decision::Failed);
        assert_eq!(decide(Some(&p), Exit::Code(0), 0), Decision::Finished);
    }

    #[test]
    fn always_restarts_success_too_and_unlimited_by_default() {
        let p = policy(restart_policy::Type::Always, None, 0);
        assert!(matches!(
            decide(Some(&p), Exit::Code(0), 1000),
            Decision::Restart { attempt: 1001, .. }
        ));
    }

    #[test]
    fn transient_failures_do_not_end_the_pod() {
        let mut task = PodTask::default();
        assert!(ends_pod(&task, &Decision::Failed));
        assert!(!ends_pod(&task, &Decision::Finished));
        task.transient = Some(true);
        assert!(!ends_pod(&task, &Decision::Failed));
    }
}
