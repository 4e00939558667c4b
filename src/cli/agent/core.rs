//! The agent's container bookkeeping and the operations behind the API:
//! launch, wait, kill, remove of nested and standalone containers, pods
//! (executor containers running the default executor), and recovery after
//! a restart. Module work goes through [`super::abi`] only.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use nestguard::container_id::{self, to_dotted};
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::environment::Variable;
use nestguard::proto::mesos::slave::{
    ContainerConfig, ContainerLaunchInfo, ContainerLimitation, ContainerTermination,
};
use nestguard::proto::mesos::{
    self, CommandInfo, ContainerId, ContainerInfo, Environment, ExecutorInfo, FrameworkInfo,
};
use nestguard::proto::nestguard::PodSpec;
use tokio::sync::watch;

use super::abi::{AbiFailure, Authorizer, CredentialInjector, Isolator, Launcher, Watch, codes};
use super::decision::{deciding_acl, log_decision, object_text, subject_text};
use super::paths::{Layout, nested_sandbox};
use super::pod_admission;
use crate::cli::wire::twin;

/// An error that becomes an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// 400 with a message.
    BadRequest(String),
    /// 403 (with the authorizer's explanation for the log and the body).
    Forbidden(String),
    /// 404 with a message.
    NotFound(String),
    /// 500 with a message.
    Internal(String),
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
struct ContainerRecord {
    id: ContainerId,
    sandbox: PathBuf,
    user: Option<String>,
    /// Why its checkpoint could not be recovered (it runs on, unmanaged by
    /// anything but an explicit KILL); its termination carries this.
    recovery_error: Option<String>,
    /// Set once the container terminated; every waiter watches it.
    termination: watch::Sender<Option<ContainerTermination>>,
}

/// The reason a container whose checkpoints could not be read reports when
/// it ends. Mesos has no `REASON_CONTAINER_RECOVERY_FAILED`; its agent
/// reports executors it cannot recover after a restart with
/// `REASON_SLAVE_RESTARTED`, and the message says which file failed.
const RECOVERY_FAILED: mesos::task_status::Reason = mesos::task_status::Reason::SlaveRestarted;

/// A termination for a container whose checkpoints could not be recovered.
fn recovery_failed(status: Option<i32>, message: String) -> ContainerTermination {
    ContainerTermination {
        status,
        reason: Some(RECOVERY_FAILED as i32),
        message: Some(message),
        ..Default::default()
    }
}

/// Removes a launch marker when the launch is over, whatever its outcome;
/// only a crash of the agent leaves it (see [`Layout::launch_marker`]).
struct LaunchMarker(PathBuf);

impl LaunchMarker {
    fn create(path: PathBuf) -> Result<LaunchMarker, ApiError> {
        std::fs::write(&path, b"").map_err(|e| {
            ApiError::Internal(format!(
                "Failed to checkpoint the launch in '{}': {e}",
                path.display()
            ))
        })?;
        Ok(LaunchMarker(path))
    }
}

impl Drop for LaunchMarker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
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
    modules: Modules,
    layout: Layout,
    endpoint: Mutex<String>,
    nestguard_exe: PathBuf,
    state: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    executors: BTreeMap<String, ExecutorRecord>,
    containers: BTreeMap<String, ContainerRecord>,
}

fn lock(m: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn env_var(name: &str, value: impl Into<String>) -> Variable {
    Variable {
        name: name.to_owned(),
        value: Some(value.into()),
        r#type: None,
        secret: None,
    }
}

/// Later entries override earlier ones, as the launch helper does.
fn merge_env(layers: &[&Environment]) -> Environment {
    let mut merged: Vec<Variable> = Vec::new();
    for layer in layers {
        for v in &layer.variables {
            if v.r#type() == mesos::environment::variable::Type::Secret {
                continue; // resolved by a secret resolver in Mesos; not by us
            }
            merged.retain(|m| m.name != v.name);
            merged.push(Variable {
                r#type: None,
                ..v.clone()
            });
        }
    }
    Environment { variables: merged }
}

impl Agent {
    /// Creates the agent; call [`Agent::recover`] before serving.
    pub fn new(modules: Modules, layout: Layout, nestguard_exe: PathBuf) -> Agent {
        Agent {
            modules,
            layout,
            endpoint: Mutex::new(String::new()),
            nestguard_exe,
            state: Mutex::new(Registry::default()),
        }
    }

    /// The `ip:port` executors reach the agent at.
    pub fn set_endpoint(&self, endpoint: String) {
        *self
            .endpoint
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = endpoint;
    }

    fn endpoint(&self) -> String {
        self.endpoint
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    // ----- authorization -------------------------------------------------

    /// The authorizer module, if any (for reloads).
    pub fn authorizer(&self) -> Option<&Authorizer> {
        self.modules.authorizer.as_ref()
    }

    /// The object Mesos builds for a container call (§3.7).
    fn object(&self, id: &ContainerId, command: Option<&CommandInfo>, nested: bool) -> Object {
        if nested {
            let root = container_id::root(id).value.clone();
            if let Some(exec) = lock(&self.state).executors.get(&root) {
                return Object {
                    executor_info: Some(exec.executor.clone()),
                    framework_info: Some(exec.framework.clone()),
                    command_info: command.cloned(),
                    container_id: Some(id.clone()),
                    ..Default::default()
                };
            }
        }
        Object {
            container_id: Some(id.clone()),
            ..Default::default()
        }
    }

    /// Authorizes `action` on a container; 403 carries the explanation.
    pub fn authorize(
        &self,
        subject: Option<&Subject>,
        action: Action,
        id: &ContainerId,
        command: Option<&CommandInfo>,
    ) -> Result<(), ApiError> {
        let nested = id.parent.is_some();
        let object = self.object(id, command, nested);
        self.authorize_object(subject, action, object)
    }

    fn authorize_object(
        &self,
        subject: Option<&Subject>,
        action: Action,
        object: Object,
    ) -> Result<(), ApiError> {
        let Some(authorizer) = &self.modules.authorizer else {
            return Ok(());
        };
        let request = Request {
            subject: subject.cloned(),
            action: Some(action as i32),
            object: Some(object),
        };
        // An authorizer error is logged and treated as a denial, as Mesos does.
        let allowed = authorizer.authorize(&request).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "authorizer failed; denying");
            false
        });
        let acl = if allowed {
            String::new()
        } else {
            deciding_acl(authorizer.explain(&request).ok().as_deref())
        };
        log_decision(&request, allowed, &acl);
        if allowed {
            Ok(())
        } else {
            Err(ApiError::Forbidden(acl))
        }
    }

    /// A decision that filters a listing rather than answering 403: no
    /// explanation is computed, the decision log gets it at debug level.
    fn allowed_to_view(&self, subject: Option<&Subject>, action: Action, object: Object) -> bool {
        let Some(authorizer) = &self.modules.authorizer else {
            return true;
        };
        let request = Request {
            subject: subject.cloned(),
            action: Some(action as i32),
            object: Some(object),
        };
        let allowed = authorizer.authorize(&request).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "authorizer failed; denying");
            false
        });
        tracing::debug!(
            target: "nestguard::decision",
            principal = %subject_text(request.subject.as_ref()),
            action = action.as_str_name(),
            object = %object_text(request.object.as_ref()),
            decision = if allowed { "allow" } else { "deny" },
            "view filter"
        );
        allowed
    }

    /// Whether a subject may still act: a principal always; an executor
    /// token (claims naming a `cid`) only while that root container runs.
    /// Mesos accepts a token for as long as its signature is valid; the
    /// agent knows which containers live, so a dead pod's token is refused.
    pub fn token_is_live(&self, subject: &Subject) -> bool {
        if subject.value.is_some() {
            return true;
        }
        let Some(claims) = &subject.claims else {
            return true;
        };
        // The authorizer reads the first `cid` claim with a value.
        let Some(cid) = claims
            .labels
            .iter()
            .find(|l| l.key == "cid" && l.value.is_some())
            .and_then(|l| l.value.as_deref())
        else {
            return true;
        };
        lock(&self.state)
            .containers
            .get(cid)
            .is_some_and(|c| c.id.parent.is_none() && c.termination.borrow().is_none())
    }

    // ----- launch ----------------------------------------------------------

    fn terminated(&self, key: &str) -> Option<bool> {
        lock(&self.state)
            .containers
            .get(key)
            .map(|c| c.termination.borrow().is_some())
    }

    /// LAUNCH_NESTED_CONTAINER / LAUNCH_CONTAINER (already authorized).
    pub fn launch(
        self: &Arc<Self>,
        id: &ContainerId,
        command: Option<CommandInfo>,
        container: Option<ContainerInfo>,
        resources: Vec<mesos::Resource>,
        limits: BTreeMap<String, mesos::value::Scalar>,
    ) -> Result<Launched, ApiError> {
        let key = to_dotted(id);
        if self.terminated(&key).is_some() {
            return Ok(Launched::Already);
        }
        if let Some(c) = &container
            && c.r#type() != mesos::container_info::Type::Mesos
        {
            return Err(ApiError::BadRequest(
                "The provided ContainerInfo is not supported".into(),
            ));
        }
        let command = command.unwrap_or_default();
        let (sandbox, user, base_env, executor) = match &id.parent {
            Some(parent) => {
                let parent_key = to_dotted(parent);
                let state = lock(&self.state);
                let Some(p) = state
                    .containers
                    .get(&parent_key)
                    .filter(|p| p.termination.borrow().is_none())
                else {
                    return Err(ApiError::BadRequest(format!(
                        "Parent container {parent_key} does not exist"
                    )));
                };
                let user = command.user.clone().or_else(|| p.user.clone());
                let sandbox = nested_sandbox(&p.sandbox, id);
                let root = container_id::root(id).value.clone();
                let exec = state.executors.get(&root).cloned();
                drop(state);
                let mut env = Environment::default();
                if let (Some(injector), Some(exec)) = (&self.modules.injector, &exec) {
                    env = injector.nested(&exec.executor, &exec.framework, &exec.container_id)?;
                }
                (sandbox, user, env, exec.map(|e| e.executor))
            }
            None => (
                self.layout.standalone_sandbox(id),
                command.user.clone(),
                Environment::default(),
                None,
            ),
        };
        self.create_sandbox(&sandbox)?;
        let sandbox_env = Environment {
            variables: vec![env_var("MESOS_SANDBOX", sandbox.to_string_lossy())],
        };
        let config = ContainerConfig {
            directory: sandbox.to_string_lossy().into_owned(),
            user: user.clone(),
            executor_info: executor,
            command_info: command,
            container_info: container,
            resources,
            limits,
            container_class: Some(mesos::slave::ContainerClass::Default as i32),
            ..Default::default()
        };
        if id.parent.is_none() {
            self.checkpoint_standalone(id, &config)?;
        }
        let marker = LaunchMarker::create(self.layout.launch_marker(&key));
        let started = marker.and_then(|_marker| {
            self.start(id.clone(), config, merge_env(&[&sandbox_env, &base_env]))
        });
        if started.is_err() && id.parent.is_none() {
            let _ = std::fs::remove_dir_all(self.layout.standalone_meta(id));
        }
        started?;
        Ok(Launched::Now)
    }

    /// Remembers a standalone container across agent restarts.
    fn checkpoint_standalone(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<(), ApiError> {
        let dir = self.layout.standalone_meta(id);
        nestguard::beneath::create_dir_all(&self.layout.work_dir, &dir, 0o755)
            .map_err(anyhow::Error::from)
            .and_then(|_| {
                Ok(nestguard::checkpoint::write_message(
                    &dir.join("config"),
                    config,
                )?)
            })
            .map_err(|e| {
                ApiError::Internal(format!(
                    "Failed to checkpoint container {}: {e}",
                    to_dotted(id)
                ))
            })
    }

    /// Creates a sandbox, which must lie below `--work_dir`: every ID in
    /// its path was validated, and [`nestguard::beneath`] refuses `..` and
    /// symbolic links below the work directory whatever slipped through.
    fn create_sandbox(&self, sandbox: &Path) -> Result<(), ApiError> {
        nestguard::beneath::create_dir_all(&self.layout.work_dir, sandbox, 0o750)
            .map(drop)
            .map_err(|e| {
                ApiError::Internal(format!(
                    "Failed to create sandbox '{}': {e}",
                    sandbox.display()
                ))
            })
    }

    /// Mesos' launch sequence: isolators prepare, the launcher forks, the
    /// isolators isolate the new pid and start watching; then the container
    /// is reaped. `agent_env` is the agent's part of the environment (lowest
    /// priority, under the isolators' and then the command's).
    fn start(
        self: &Arc<Self>,
        id: ContainerId,
        config: ContainerConfig,
        agent_env: Environment,
    ) -> Result<(), ApiError> {
        let key = to_dotted(&id);
        let sandbox = PathBuf::from(&config.directory);
        let prepared = match &self.modules.isolator {
            Some(isolator) => match isolator.prepare(&id, &config) {
                Ok(info) => info.unwrap_or_default(),
                Err(e) => {
                    let _ = isolator.cleanup(&id);
                    return Err(ApiError::BadRequest(format!(
                        "Failed to prepare isolation for container {key}: {}",
                        e.message
                    )));
                }
            },
            None => ContainerLaunchInfo::default(),
        };
        let command = config.command_info.clone();
        let command_env = command.environment.clone().unwrap_or_default();
        let isolator_env = prepared.environment.clone().unwrap_or_default();
        let info = ContainerLaunchInfo {
            environment: Some(merge_env(&[&agent_env, &isolator_env, &command_env])),
            command: Some(CommandInfo {
                environment: None,
                user: None,
                uris: Vec::new(),
                ..command
            }),
            working_directory: Some(config.directory.clone()),
            user: config.user.clone(),
            ..prepared
        };
        let cleanup = |agent: &Agent| {
            if let Some(isolator) = &agent.modules.isolator {
                let _ = isolator.cleanup(&id);
            }
        };
        let pid =
            match self
                .modules
                .launcher
                .launch(&id, &info, config.container_info.as_ref(), &sandbox)
            {
                Ok(pid) => pid,
                Err(e) if e.code == codes::LAUNCHER_CONTAINER_EXISTS => return Ok(()),
                Err(e) if e.code == codes::LAUNCHER_PARENT_NOT_RUNNING => {
                    cleanup(self);
                    let parent = id.parent.as_deref().map(to_dotted).unwrap_or_default();
                    return Err(ApiError::BadRequest(format!(
                        "Parent container {parent} does not exist"
                    )));
                }
                Err(e) => {
                    // Mesos destroys a container whose launch failed.
                    let _ = self.modules.launcher.destroy(&id);
                    cleanup(self);
                    return Err(ApiError::BadRequest(format!(
                        "Failed to launch container {key}: {}",
                        e.message
                    )));
                }
            };
        // A pid that is not positive would be a launcher bug; isolating pid
        // 0 would move the agent itself into the container's cgroups.
        let Some(pid) = u32::try_from(pid).ok().filter(|p| *p > 0) else {
            let _ = self.modules.launcher.destroy(&id);
            cleanup(self);
            return Err(ApiError::Internal(format!(
                "the launcher returned pid {pid} for container {key}"
            )));
        };
        let mut watch = None;
        if let Some(isolator) = &self.modules.isolator {
            let isolated = isolator
                .isolate(&id, pid)
                .and_then(|()| isolator.watch(&id));
            match isolated {
                Ok(w) => watch = Some(w),
                Err(e) => {
                    let _ = self.modules.launcher.destroy(&id);
                    cleanup(self);
                    return Err(ApiError::BadRequest(format!(
                        "Failed to isolate container {key}: {}",
                        e.message
                    )));
                }
            }
        }
        tracing::info!(container_id = %key, pid, "launched container");
        let (tx, _) = watch::channel(None);
        let record = ContainerRecord {
            id: id.clone(),
            sandbox,
            user: config.user.clone(),
            recovery_error: None,
            termination: tx,
        };
        lock(&self.state).containers.insert(key, record);
        self.reap(id, watch);
        Ok(())
    }

    /// Waits for the container's exit on a blocking thread while watching
    /// for limitations (an OOM kill ends the container with Mesos' reason),
    /// then destroys it (its nested containers too) and publishes the
    /// termination.
    fn reap(self: &Arc<Self>, id: ContainerId, mut watch: Option<Watch>) {
        let agent = Arc::clone(self);
        std::thread::spawn(move || {
            let key = to_dotted(&id);
            let mut limitation: Option<ContainerLimitation> = None;
            let status = loop {
                match agent
                    .modules
                    .launcher
                    .wait(&id, if watch.is_some() { 250 } else { -1 })
                {
                    Ok(Some(status)) => break status,
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(container_id = %key, error = %e, "wait failed; treating as killed");
                        break 9;
                    }
                }
                if let Some(Ok(Some(l))) = watch.as_mut().map(|w| w.poll(0)) {
                    tracing::info!(container_id = %key, message = l.message.as_deref().unwrap_or(""), "container limitation");
                    limitation = Some(l);
                    let _ = agent.modules.launcher.destroy(&id);
                }
            };
            // A limitation that killed the container may be reported just after its exit.
            if limitation.is_none()
                && let Some(Ok(Some(l))) = watch.as_mut().map(|w| w.poll(100))
            {
                limitation = Some(l);
            }
            drop(watch);
            agent.finish(&id, status, limitation);
        });
    }

    fn finish(&self, id: &ContainerId, status: i32, limitation: Option<ContainerLimitation>) {
        let key = to_dotted(id);
        // Children first: destroy every known descendant still running.
        let children: Vec<ContainerId> = lock(&self.state)
            .containers
            .values()
            .filter(|c| c.id.parent.as_deref().is_some_and(|p| to_dotted(p) == key))
            .map(|c| c.id.clone())
            .collect();
        for child in children {
            if self.terminated(&to_dotted(&child)) == Some(false)
                && let Err(e) = self.modules.launcher.destroy(&child)
            {
                tracing::warn!(container_id = %to_dotted(&child), error = %e, "destroying a child failed");
            }
        }
        let destroyed = self.modules.launcher.destroy(id);
        if let Some(isolator) = &self.modules.isolator
            && let Err(e) = isolator.cleanup(id)
        {
            tracing::warn!(container_id = %key, error = %e, "isolator cleanup failed");
        }
        let status = match destroyed {
            Ok(destroyed) => destroyed.unwrap_or(status),
            Err(e) => {
                tracing::warn!(container_id = %key, error = %e, "destroy failed");
                status
            }
        };
        let recovery_error = lock(&self.state)
            .containers
            .get(&key)
            .and_then(|c| c.recovery_error.clone());
        let termination = match limitation {
            Some(l) => ContainerTermination {
                status: Some(status),
                state: Some(mesos::TaskState::TaskFailed as i32),
                reason: l.reason,
                message: l.message,
                limited_resources: l.resources,
            },
            None => match recovery_error {
                Some(message) => recovery_failed(Some(status), message),
                None => ContainerTermination {
                    status: Some(status),
                    ..Default::default()
                },
            },
        };
        tracing::info!(container_id = %key, status, reason = ?termination.reason, "container terminated");
        if let Some(c) = lock(&self.state).containers.get(&key) {
            c.termination.send_replace(Some(termination));
        }
    }

    // ----- wait / kill / remove -------------------------------------------

    /// WAIT_(NESTED_)CONTAINER: the termination, once there is one.
    pub async fn wait(&self, id: &ContainerId) -> Result<ContainerTermination, ApiError> {
        let key = to_dotted(id);
        let rx = lock(&self.state)
            .containers
            .get(&key)
            .map(|c| c.termination.subscribe());
        let Some(mut rx) = rx else {
            // Unknown to the agent: a checkpointed termination still answers.
            return match self.modules.launcher.wait(id, 0) {
                Ok(Some(status)) => Ok(ContainerTermination {
                    status: Some(status),
                    ..Default::default()
                }),
                // Its termination checkpoint exists but cannot be read: the
                // container ended, how is lost. Say so rather than 404.
                Err(e) if e.code == codes::CHECKPOINT => {
                    tracing::error!(container_id = %key, error = %e.message, "the termination checkpoint of a container is unreadable");
                    Ok(recovery_failed(
                        None,
                        format!(
                            "Failed to recover the termination of container {key}: {}",
                            e.message
                        ),
                    ))
                }
                _ => Err(ApiError::NotFound(format!(
                    "Container {key} cannot be found"
                ))),
            };
        };
        loop {
            if let Some(t) = rx.borrow_and_update().clone() {
                return Ok(t);
            }
            if rx.changed().await.is_err() {
                return Err(ApiError::NotFound(format!(
                    "Container {key} cannot be found"
                )));
            }
        }
    }

    /// KILL_(NESTED_)CONTAINER.
    pub fn kill(&self, id: &ContainerId, signal: i32) -> Result<(), ApiError> {
        let key = to_dotted(id);
        let gone = || {
            ApiError::NotFound(format!(
                "Container '{key}' cannot be found (or is already killed)"
            ))
        };
        if self.terminated(&key) != Some(false) {
            return Err(gone());
        }
        match self.modules.launcher.kill(id, signal) {
            Ok(true) => Ok(()),
            Ok(false) => Err(gone()),
            Err(e) if e.code == codes::LAUNCHER_UNKNOWN_CONTAINER => Err(gone()),
            Err(e) => Err(e.into()),
        }
    }

    /// REMOVE_(NESTED_)CONTAINER: forget a terminated container and its sandbox.
    pub fn remove(&self, id: &ContainerId) -> Result<(), ApiError> {
        let key = to_dotted(id);
        match self.terminated(&key) {
            Some(false) => {
                return Err(ApiError::Internal(
                    "Nested container has not terminated yet".into(),
                ));
            }
            None => return Ok(()),
            Some(true) => {}
        }
        let record = lock(&self.state).containers.remove(&key);
        if let Some(r) = record {
            // The sandbox's parents (a nested one's are its ancestors'
            // sandboxes) belong to tenants: removed below the work
            // directory, never through a symbolic link.
            if let Err(e) = nestguard::beneath::remove_dir_all(&self.layout.work_dir, &r.sandbox) {
                tracing::warn!(container = %key, error = %e, "sandbox not removed");
            }
        }
        if id.parent.is_none() {
            let _ = std::fs::remove_dir_all(self.layout.standalone_meta(id));
        }
        Ok(())
    }

    /// GET_CONTAINERS as Mesos' `Http::__containers` filters it: each live
    /// executor container the subject may VIEW_CONTAINER (object: executor
    /// and framework info) is listed with its framework and executor; every
    /// other container is listed by ID only, nested ones with `show_nested`,
    /// standalone ones with `show_standalone`, under a root the subject may
    /// see (an authorized executor, or VIEW_STANDALONE_CONTAINER on the
    /// standalone root's ID).
    pub fn list(
        &self,
        subject: Option<&Subject>,
        show_nested: bool,
        show_standalone: bool,
    ) -> Vec<mesos::v1::agent::response::get_containers::Container> {
        use mesos::v1::agent::response::get_containers::Container;
        let (executors, containers) = {
            let state = lock(&self.state);
            let live = |id: &ContainerId| {
                state
                    .containers
                    .get(&to_dotted(id))
                    .is_some_and(|c| c.termination.borrow().is_none())
            };
            let executors: Vec<ExecutorRecord> = state
                .executors
                .values()
                .filter(|e| live(&e.container_id))
                .cloned()
                .collect();
            let containers: Vec<ContainerId> = state
                .containers
                .values()
                .filter(|c| c.termination.borrow().is_none())
                .map(|c| c.id.clone())
                .collect();
            (executors, containers)
        };
        let executor_roots: std::collections::HashSet<String> = executors
            .iter()
            .map(|e| e.container_id.value.clone())
            .collect();
        let mut out = Vec::new();
        let mut authorized_roots = std::collections::HashSet::new();
        for e in &executors {
            let object = Object {
                executor_info: Some(e.executor.clone()),
                framework_info: Some(e.framework.clone()),
                ..Default::default()
            };
            if !self.allowed_to_view(subject, Action::ViewContainer, object) {
                continue;
            }
            authorized_roots.insert(e.container_id.value.clone());
            out.push(Container {
                framework_id: e
                    .executor
                    .framework_id
                    .as_ref()
                    .or(e.framework.id.as_ref())
                    .map(twin),
                executor_id: Some(twin(&e.executor.executor_id)),
                executor_name: e.executor.name.clone(),
                container_id: twin(&e.container_id),
                ..Default::default()
            });
        }
        let mut standalone_allowed: HashMap<String, bool> = HashMap::new();
        for id in containers {
            let nested = id.parent.is_some();
            let root = container_id::root(&id).clone();
            if !nested && executor_roots.contains(&id.value) {
                continue; // an executor container, listed above
            }
            let root_standalone = !executor_roots.contains(&root.value);
            if nested && !show_nested {
                continue;
            }
            if !nested && root_standalone && !show_standalone {
                continue;
            }
            let visible = if root_standalone {
                *standalone_allowed
                    .entry(root.value.clone())
                    .or_insert_with(|| {
                        let object = Object {
                            container_id: Some(root.clone()),
                            ..Default::default()
                        };
                        self.allowed_to_view(subject, Action::ViewStandaloneContainer, object)
                    })
            } else {
                authorized_roots.contains(&root.value)
            };
            if visible {
                out.push(Container {
                    container_id: twin(&id),
                    ..Default::default()
                });
            }
        }
        out
    }

    // ----- pods -------------------------------------------------------------

    /// Launches a pod: its executor container running nestguard's default
    /// executor (or the executor's own command for CUSTOM executors).
    pub fn launch_pod(
        self: &Arc<Self>,
        subject: Option<&Subject>,
        mut pod: PodSpec,
    ) -> Result<ContainerId, ApiError> {
        // IDs become paths: Mesos' ID rules, before anything else.
        nestguard::validation::validate_pod_ids(&pod).map_err(|e| ApiError::BadRequest(e.0))?;
        // Nothing touches the disk or starts before admission passed.
        let subject = pod_admission::subject(&mut pod, subject)?;
        pod_admission::validate(&mut pod)?;
        for object in pod_admission::run_task_objects(&pod) {
            self.authorize_object(subject.as_ref(), Action::RunTask, object)?;
        }
        let id = ContainerId {
            value: uuid::Uuid::new_v4().to_string(),
            parent: None,
        };
        // The hook runs before anything exists: in secret mode it refuses a
        // principal the framework may not hand out (403, nothing created).
        let hook_env = match &self.modules.injector {
            Some(injector) => injector
                .decorate_executor(&pod.executor, &pod.framework, &id)
                .map_err(|e| {
                    if e.code == codes::CREDENTIAL_INJECTION {
                        tracing::info!(error = %e, "credential injection refused; 403");
                        ApiError::Forbidden(e.to_string())
                    } else {
                        e.into()
                    }
                })?,
            None => Environment::default(),
        };
        let sandbox = self
            .layout
            .executor_sandbox(&pod.framework, &pod.executor, &id);
        self.create_sandbox(&sandbox)?;
        let record = ExecutorRecord {
            framework: pod.framework.clone(),
            executor: pod.executor.clone(),
            container_id: id.clone(),
            sandbox: sandbox.clone(),
        };
        self.checkpoint_executor(&record)
            .map_err(|e| ApiError::Internal(format!("{e:#}")))?;
        let spec_path = sandbox.join("pod.json");
        std::fs::write(&spec_path, nestguard::json::to_json(&pod))
            .map_err(|e| ApiError::Internal(format!("writing {}: {e}", spec_path.display())))?;

        let fw_id = pod
            .framework
            .id
            .as_ref()
            .map(|f| f.value.clone())
            .unwrap_or_default();
        let agent_env = Environment {
            variables: vec![
                env_var("MESOS_FRAMEWORK_ID", fw_id),
                env_var("MESOS_EXECUTOR_ID", pod.executor.executor_id.value.clone()),
                env_var("MESOS_DIRECTORY", sandbox.to_string_lossy()),
                env_var("MESOS_SANDBOX", sandbox.to_string_lossy()),
                env_var("MESOS_SLAVE_ID", self.layout.agent_id.clone()),
                env_var("MESOS_AGENT_ENDPOINT", self.endpoint()),
                env_var("MESOS_CHECKPOINT", "1"),
                env_var("NESTGUARD_EXECUTOR_CONTAINER_ID", id.value.clone()),
            ],
        };
        let executor_command = pod.executor.command.clone();
        let command = match (&pod.executor.r#type(), executor_command) {
            (mesos::executor_info::Type::Custom, Some(c)) => c,
            _ => CommandInfo {
                shell: Some(false),
                value: Some(self.nestguard_exe.to_string_lossy().into_owned()),
                arguments: vec!["nestguard".into(), "executor".into()],
                ..Default::default()
            },
        };
        let user = pod_admission::executor_user(&pod);
        let config = ContainerConfig {
            directory: sandbox.to_string_lossy().into_owned(),
            user,
            executor_info: Some(pod.executor.clone()),
            command_info: command,
            container_info: pod.executor.container.clone(),
            resources: pod.executor.resources.clone(),
            container_class: Some(mesos::slave::ContainerClass::Default as i32),
            ..Default::default()
        };
        lock(&self.state).executors.insert(id.value.clone(), record);
        let marker = LaunchMarker::create(self.layout.launch_marker(&id.value));
        let started = marker.and_then(|_marker| {
            self.start(id.clone(), config, merge_env(&[&agent_env, &hook_env]))
        });
        if let Err(e) = started {
            lock(&self.state).executors.remove(&id.value);
            let _ = std::fs::remove_dir_all(self.layout.executor_meta(&id.value));
            return Err(e);
        }
        tracing::info!(container_id = %id.value, executor_id = %pod.executor.executor_id.value, "pod launched");
        Ok(id)
    }

    fn checkpoint_executor(&self, record: &ExecutorRecord) -> anyhow::Result<()> {
        let dir = self.layout.executor_meta(&record.container_id.value);
        nestguard::beneath::create_dir_all(&self.layout.work_dir, &dir, 0o755)?;
        nestguard::checkpoint::write_message(&dir.join("framework.info"), &record.framework)?;
        nestguard::checkpoint::write_message(&dir.join("executor.info"), &record.executor)?;
        nestguard::checkpoint::write_text(&dir.join("sandbox"), &record.sandbox.to_string_lossy())?;
        Ok(())
    }

    /// The executor record of a pod's root container.
    pub fn executor(&self, root: &str) -> Option<ExecutorRecord> {
        lock(&self.state).executors.get(root).cloned()
    }

    /// Destroys a pod (its executor container and everything nested) and
    /// forgets it.
    pub fn kill_pod(&self, root: &str) -> Result<ContainerTermination, ApiError> {
        let id = ContainerId {
            value: root.to_owned(),
            parent: None,
        };
        let recovery_error = lock(&self.state)
            .containers
            .get(root)
            .and_then(|c| c.recovery_error.clone());
        if self.executor(root).is_none() && recovery_error.is_none() {
            return Err(ApiError::NotFound(format!(
                "Container {root} cannot be found"
            )));
        }
        let status = self.modules.launcher.destroy(&id)?.unwrap_or(9);
        let termination = match recovery_error {
            Some(message) => recovery_failed(Some(status), message),
            None => ContainerTermination {
                status: Some(status),
                ..Default::default()
            },
        };
        let mut state = lock(&self.state);
        for c in state.containers.values() {
            if container_id::root(&c.id).value == root && c.termination.borrow().is_none() {
                c.termination.send_replace(Some(match &c.recovery_error {
                    Some(message) => recovery_failed(Some(9), message.clone()),
                    None => ContainerTermination {
                        status: Some(9),
                        ..Default::default()
                    },
                }));
            }
        }
        state.executors.remove(root);
        drop(state);
        let _ = std::fs::remove_dir_all(self.layout.executor_meta(root));
        Ok(termination)
    }

    // ----- recovery -----------------------------------------------------------

    /// Rebuilds state after a restart: executors from the agent's
    /// checkpoints, containers from the launcher's; orphans are destroyed.
    ///
    /// A checkpoint of the agent's own that cannot be read destroys nothing:
    /// its container stays known (so it is no orphan), keeps running, is
    /// listed, and ends — by itself or by an explicit KILL — with
    /// [`RECOVERY_FAILED`] and a message naming the file and the error.
    /// A launch cut off by a crash (its marker is still there) ends as a
    /// failed launch, as Mesos ends one: destroyed, with
    /// `REASON_CONTAINER_LAUNCH_FAILED`.
    pub fn recover(self: &Arc<Self>) -> anyhow::Result<()> {
        use std::os::unix::ffi::OsStringExt;
        /// The largest `sandbox` checkpoint read: it holds one path.
        const SANDBOX_CHECKPOINT_MAX: u64 = 64 * 1024;
        let mut known = Vec::new();
        // Root container → why its checkpoint could not be read.
        let mut damaged: HashMap<String, String> = HashMap::new();
        for (root, dir) in checkpoint_dirs(&self.layout.executors_meta()) {
            let read = || -> anyhow::Result<ExecutorRecord> {
                let sandbox = dir.join("sandbox");
                Ok(ExecutorRecord {
                    framework: nestguard::checkpoint::read_message(&dir.join("framework.info"))?,
                    executor: nestguard::checkpoint::read_message(&dir.join("executor.info"))?,
                    container_id: ContainerId {
                        value: root.clone(),
                        parent: None,
                    },
                    // A path: bounded (a link to /dev/zero or a FIFO fails
                    // at once, naming the file).
                    sandbox: PathBuf::from(std::ffi::OsString::from_vec(
                        nestguard::checkpoint::read_bounded(&sandbox, SANDBOX_CHECKPOINT_MAX)?,
                    )),
                })
            };
            known.push(ContainerId {
                value: root.clone(),
                parent: None,
            });
            match read() {
                Ok(record) => {
                    lock(&self.state).executors.insert(root, record);
                }
                Err(e) => {
                    tracing::error!(container_id = %root, path = %dir.display(), error = %e, "unreadable executor checkpoint: the container is kept as it is until it is killed explicitly");
                    damaged.insert(
                        root.clone(),
                        format!("Failed to recover executor container {root}: {e}"),
                    );
                }
            }
        }
        // Standalone containers: their config says where their sandbox is
        // and which user they run as.
        let mut standalone: HashMap<String, ContainerConfig> = HashMap::new();
        for (root, dir) in checkpoint_dirs(&self.layout.standalones_meta()) {
            let path = dir.join("config");
            known.push(ContainerId {
                value: root.clone(),
                parent: None,
            });
            match nestguard::checkpoint::read_message::<ContainerConfig>(&path) {
                Ok(config) => {
                    standalone.insert(root, config);
                }
                Err(e) => {
                    tracing::error!(container_id = %root, path = %path.display(), error = %e, "unreadable standalone container checkpoint: the container is kept as it is until it is killed explicitly");
                    damaged.insert(
                        root.clone(),
                        format!("Failed to recover standalone container {root}: {e}"),
                    );
                }
            }
        }
        // Launches a crash cut off.
        let markers = self.layout.launch_markers();
        std::fs::create_dir_all(&markers)
            .with_context(|| format!("creating {}", markers.display()))?;
        let mut cut_off: Vec<(String, PathBuf)> = Vec::new();
        for entry in
            std::fs::read_dir(&markers).with_context(|| format!("reading {}", markers.display()))?
        {
            let entry = entry.with_context(|| format!("reading {}", markers.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if container_id::parse_dotted(&name).is_ok() {
                cut_off.push((name, entry.path()));
            } else {
                tracing::warn!(path = %entry.path().display(), "ignoring a launch marker that names no container");
            }
        }
        let reply = self.modules.launcher.recover(&known)?;
        // A standalone container the launcher no longer has (it ended and
        // was destroyed before the restart) has nothing left to recover.
        for id in standalone.keys() {
            let managed = reply
                .checkpointed_container_states
                .iter()
                .any(|s| s.container_id.parent.is_none() && &s.container_id.value == id);
            if !managed {
                let _ = std::fs::remove_dir_all(self.layout.standalone_meta(&ContainerId {
                    value: id.clone(),
                    parent: None,
                }));
            }
        }
        for (root, message) in &damaged {
            let managed = reply
                .checkpointed_container_states
                .iter()
                .any(|s| s.container_id.parent.is_none() && &s.container_id.value == root);
            if !managed {
                tracing::warn!(container_id = %root, error = %message, "unreadable checkpoint of a container that no longer runs: left for inspection");
            }
        }
        if let Some(isolator) = &self.modules.isolator {
            isolator.recover(&reply)?;
        }
        for orphan in &reply.orphan_container_ids {
            tracing::info!(container_id = %to_dotted(orphan), "destroying orphan container");
            let _ = self.modules.launcher.destroy(orphan);
            if let Some(isolator) = &self.modules.isolator {
                let _ = isolator.cleanup(orphan);
            }
        }
        let cut_keys: HashSet<&str> = cut_off.iter().map(|(k, _)| k.as_str()).collect();
        // Every known container and its checkpointed descendants come back
        // under management: running ones are reaped, exited ones answer WAIT.
        for state in &reply.checkpointed_container_states {
            let id = state.container_id.clone();
            let key = to_dotted(&id);
            let root = container_id::root(&id).value.clone();
            let recovery_error = damaged.get(&root).filter(|_| id.parent.is_none()).cloned();
            let (mut sandbox, root_user) = match (self.executor(&root), standalone.get(&root)) {
                (Some(exec), _) => (
                    exec.sandbox.clone(),
                    exec.executor
                        .command
                        .as_ref()
                        .and_then(|c| c.user.clone())
                        .or_else(|| Some(exec.framework.user.clone()))
                        .filter(|u| !u.is_empty()),
                ),
                (None, Some(config)) => (PathBuf::from(&config.directory), config.user.clone()),
                // Where the launcher says it is.
                (None, None) if damaged.contains_key(&root) => {
                    (PathBuf::from(&state.directory), None)
                }
                (None, None) => continue,
            };
            if !damaged.contains_key(&root) {
                for level in container_id::chain(&id).iter().skip(1) {
                    sandbox = sandbox.join("containers").join(level);
                }
            } else if id.parent.is_some() {
                sandbox = PathBuf::from(&state.directory);
            }
            let (tx, _) = watch::channel(None);
            let user = if id.parent.is_none() { root_user } else { None };
            lock(&self.state).containers.insert(
                key.clone(),
                ContainerRecord {
                    id: id.clone(),
                    sandbox,
                    user,
                    recovery_error,
                    termination: tx,
                },
            );
            if cut_keys.contains(key.as_str()) {
                self.fail_cut_off_launch(&id);
                continue;
            }
            if self.terminated(&key) == Some(true) {
                continue; // under a cut-off launch destroyed just above
            }
            let watch = self.modules.isolator.as_ref().and_then(|i| {
                i.watch(&id)
                    .inspect_err(|e| {
                        tracing::warn!(container_id = %key, error = %e,
                            "no limitation watch for the recovered container");
                    })
                    .ok()
            });
            self.reap(id, watch);
        }
        // Cut off before the launcher had anything: no process ever ran.
        for (key, _) in &cut_off {
            let Ok(id) = container_id::parse_dotted(key) else {
                continue;
            };
            let root = container_id::root(&id).value.clone();
            let root_known = self.executor(&root).is_some()
                || standalone.contains_key(&root)
                || damaged.contains_key(&root);
            if lock(&self.state).containers.contains_key(key) || !root_known {
                continue;
            }
            let sandbox = match &id.parent {
                Some(parent) => lock(&self.state)
                    .containers
                    .get(&to_dotted(parent))
                    .map(|p| nested_sandbox(&p.sandbox, &id))
                    .unwrap_or_default(),
                None => PathBuf::new(),
            };
            let (tx, _) = watch::channel(None);
            lock(&self.state).containers.insert(
                key.clone(),
                ContainerRecord {
                    id: id.clone(),
                    sandbox,
                    user: None,
                    recovery_error: None,
                    termination: tx,
                },
            );
            self.fail_cut_off_launch(&id);
        }
        for (_, marker) in &cut_off {
            let _ = std::fs::remove_file(marker);
        }
        tracing::info!(
            known = known.len(),
            damaged = damaged.len(),
            cut_off = cut_off.len(),
            orphans = reply.orphan_container_ids.len(),
            "recovered"
        );
        Ok(())
    }

    /// Ends a container whose launch a crash of the agent cut off, as Mesos
    /// ends a failed launch: destroyed (with everything nested in it, and
    /// its pod's or standalone checkpoints), terminated with
    /// `REASON_CONTAINER_LAUNCH_FAILED` and a message saying what happened.
    fn fail_cut_off_launch(&self, id: &ContainerId) {
        let key = to_dotted(id);
        let status = match self.modules.launcher.destroy(id) {
            Ok(status) => status,
            Err(e) => {
                tracing::warn!(container_id = %key, error = %e, "destroying a container whose launch was cut off");
                None
            }
        };
        if let Some(isolator) = &self.modules.isolator {
            let _ = isolator.cleanup(id);
        }
        if id.parent.is_none() {
            lock(&self.state).executors.remove(&id.value);
            let _ = std::fs::remove_dir_all(self.layout.executor_meta(&id.value));
            let _ = std::fs::remove_dir_all(self.layout.standalone_meta(id));
        }
        let message = format!(
            "Container {key} failed to launch: the agent stopped before the launch completed; \
             the container was destroyed when the agent recovered"
        );
        tracing::warn!(container_id = %key, status = ?status, "{message}");
        let termination = ContainerTermination {
            status,
            state: Some(mesos::TaskState::TaskFailed as i32),
            reason: Some(mesos::task_status::Reason::ContainerLaunchFailed as i32),
            message: Some(message),
            ..Default::default()
        };
        let state = lock(&self.state);
        for (k, c) in state.containers.iter() {
            if (k == &key || k.starts_with(&format!("{key}."))) && c.termination.borrow().is_none()
            {
                c.termination.send_replace(Some(termination.clone()));
            }
        }
    }
}

/// The checkpoint directories under `dir` named by a valid top-level
/// container ID, as (id, path); anything else is logged and skipped.
fn checkpoint_dirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let id = ContainerId {
            value: name.clone(),
            parent: None,
        };
        if container_id::validate(&id).is_ok() {
            out.push((name, entry.path()));
        } else {
            tracing::warn!(path = %entry.path().display(), "ignoring a checkpoint directory that names no container");
        }
    }
    out
}
