//! The agent's state: the modules it was configured with, the table of
//! the containers and executors it knows, and the lookups into it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use nestguard::proto::mesos::slave::ContainerTermination;
use nestguard::proto::mesos::{ContainerId, ExecutorInfo, FrameworkInfo};
use tokio::sync::watch;

use crate::cli::agent::abi::{AbiFailure, Authorizer, CredentialInjector, Isolator, Launcher};
use crate::cli::agent::paths::Layout;

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

/// The modules the agent was configured with.
pub struct Modules {
    /// `--authorizer` (None: everything allowed, as Mesos' local authorizer without ACLs).
    pub authorizer: Option<Authorizer>,
    /// `--hooks` with io_nestguard_CredentialHook.
    pub injector: Option<CredentialInjector>,
    /// `--isolation` with io_nestguard_Isolator.
    pub isolator: Option<Isolator>,
    /// The launcher (sharing the isolator's cgroups).
    pub launcher: Launcher,
}

/// The agent.
pub struct Agent {
    pub(super) modules: Modules,
    pub(super) layout: Layout,
    endpoint: Mutex<String>,
    pub(super) nestguard_exe: PathBuf,
    pub(super) state: Mutex<Registry>,
    /// The executor API's state of each executor.
    pub(super) executors_api: super::executors::Executors,
    /// Status updates awaiting the framework's acknowledgement.
    pub(super) status_updates: super::status_updates::StatusUpdates,
    /// The IO switchboards of DEBUG and TTY containers.
    pub(super) switchboards: super::switchboard::Boards,
    /// The framework IDs bound to their principals.
    pub(super) frameworks: super::frameworks::Bindings,
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
    /// [`super::switchboard::MAX_SESSIONS`] per root and
    /// [`super::switchboard::MAX_SWITCHBOARDS`] in all under this lock, so
    /// racing launches cannot pass a cap together. A place is freed only
    /// by the launch or switchboard of its generation.
    pub(super) boards: BTreeMap<String, u64>,
    /// The generation of the next place in `boards`.
    pub(super) next_board: u64,
}

pub(super) fn lock(m: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Agent {
    /// Creates the agent; call [`Agent::recover`] before serving.
    pub fn new(modules: Modules, layout: Layout, nestguard_exe: PathBuf) -> Agent {
        Agent {
            frameworks: super::frameworks::Bindings::new(&layout.work_dir),
            modules,
            layout,
            endpoint: Mutex::new(String::new()),
            nestguard_exe,
            state: Mutex::new(Registry::default()),
            executors_api: Default::default(),
            status_updates: Default::default(),
            switchboards: Default::default(),
        }
    }

    /// The `ip:port` executors reach the agent at.
    pub fn set_endpoint(&self, endpoint: String) {
        *self
            .endpoint
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = endpoint;
    }

    pub(super) fn endpoint(&self) -> String {
        self.endpoint
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The authorizer module, if any (for reloads).
    pub fn authorizer(&self) -> Option<&Authorizer> {
        self.modules.authorizer.as_ref()
    }

    pub(super) fn terminated(&self, key: &str) -> Option<bool> {
        lock(&self.state)
            .containers
            .get(key)
            .map(|c| c.termination.borrow().is_some())
    }

    /// Why the checkpoints of a known container could not be recovered.
    pub(super) fn recovery_error(&self, key: &str) -> Option<String> {
        lock(&self.state)
            .containers
            .get(key)
            .and_then(|c| c.recovery_error.clone())
    }

    /// The executor record of a pod's root container.
    pub fn executor(&self, root: &str) -> Option<ExecutorRecord> {
        lock(&self.state).executors.get(root).cloned()
    }
}
