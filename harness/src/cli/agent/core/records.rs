//! The records the agent keeps, under one lock ([`Registry`], taken with
//! [`lock`]), and the error every agent operation answers with. Plain data:
//! every part of the agent depends on it, it depends on none of them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use nestguard::proto::mesos::slave::ContainerTermination;
use nestguard::proto::mesos::{ContainerId, ExecutorInfo, FrameworkInfo};
use tokio::sync::watch;

use crate::cli::agent::abi::AbiFailure;

/// An error that becomes an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// 400 with a message.
    BadRequest(String),
    /// 403 (with the authorizer's explanation for the log and the body).
    Forbidden(String),
    /// 404 with a message.
    NotFound(String),
    /// 409 with a message.
    Conflict(String),
    /// 500 with a message.
    Internal(String),
    /// 503 with a message (the agent cannot serve it now).
    Unavailable(String),
}

impl From<AbiFailure> for ApiError {
    fn from(e: AbiFailure) -> Self {
        ApiError::Internal(e.to_string())
    }
}

/// What a launch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launched {
    /// 200: launched now.
    Now,
    /// 202: it already existed.
    Already,
}

/// What the agent remembers of an executor (checkpointed).
#[derive(Debug, Clone)]
pub struct ExecutorRecord {
    /// Its framework.
    pub framework: FrameworkInfo,
    /// The executor.
    pub executor: ExecutorInfo,
    /// Its top-level container.
    pub container_id: ContainerId,
    /// Its sandbox.
    pub sandbox: PathBuf,
}

/// A container the agent knows.
#[derive(Debug, Clone)]
pub(super) struct ContainerRecord {
    pub(super) id: ContainerId,
    pub(super) sandbox: PathBuf,
    pub(super) user: Option<String>,
    /// `user` is not known: a nested container recovered after a restart
    /// whose `ContainerConfig` checkpoint (the launcher's, holding the
    /// user it ran as) is missing or torn. Debug sessions, and nested
    /// launches without `command.user`, under it are refused rather than
    /// run as the agent's user.
    pub(super) user_unknown: bool,
    /// Why its checkpoint could not be recovered (it runs on, unmanaged by
    /// anything but an explicit KILL); its termination carries this.
    pub(super) recovery_error: Option<String>,
    /// Set once the container terminated; every waiter watches it.
    pub(super) termination: watch::Sender<Option<ContainerTermination>>,
}

impl ContainerRecord {
    /// The record of a container that has not terminated.
    pub(super) fn running(
        id: ContainerId,
        sandbox: PathBuf,
        user: Option<String>,
        recovery_error: Option<String>,
    ) -> ContainerRecord {
        let (termination, _) = watch::channel(None);
        ContainerRecord {
            id,
            sandbox,
            user,
            user_unknown: false,
            recovery_error,
            termination,
        }
    }
}

#[derive(Default)]
pub(super) struct Registry {
    pub(super) executors: BTreeMap<String, ExecutorRecord>,
    pub(super) containers: BTreeMap<String, ContainerRecord>,
    /// Containers being launched (not yet in `containers`): a second
    /// launch of one is ALREADY_LAUNCHED, as Mesos' containerizer answers
    /// for a container it knows, launched or launching.
    pub(super) launching: std::collections::BTreeSet<String>,
    /// Containers with an IO switchboard (debug sessions and `tty_info`
    /// launches), launching or served until their switchboard closed, by
    /// key, with the generation of the place: counted against
    /// `switchboard::MAX_SESSIONS` per root and `switchboard::MAX_SWITCHBOARDS`
    /// in all under this lock, so
    /// racing launches cannot pass a cap together. A place is freed only
    /// by the launch or switchboard of its generation.
    pub(super) boards: BTreeMap<String, u64>,
    /// The generation of the next place in `boards`.
    pub(super) next_board: u64,
}

pub(super) fn lock(m: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
