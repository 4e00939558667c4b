//! The agent: the modules it was configured with and its parts, each with
//! its own state and lock (the records in [`super::records`], the executor
//! API's queues, the status updates, the switchboards, the framework
//! bindings), composed here; the operations are `impl Agent` blocks in the
//! files above this one.

use std::path::PathBuf;
use std::sync::Mutex;

use super::records::{ExecutorRecord, Registry, lock};
use crate::cli::agent::abi::{Authorizer, CredentialInjector, Isolator, Launcher};
use crate::cli::agent::paths::Layout;

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
    pub(super) executors_api: super::executor_queue::Executors,
    /// Status updates awaiting the framework's acknowledgement.
    pub(super) status_updates: super::update_streams::StatusUpdates,
    /// The IO switchboards of DEBUG and TTY containers.
    pub(super) switchboards: super::switchboard::Boards,
    /// The framework IDs bound to their principals.
    pub(super) frameworks: super::frameworks::Bindings,
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
