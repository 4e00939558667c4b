//! The agent's container bookkeeping and the operations behind the API:
//! launch, wait, kill, remove of nested and standalone containers, pods
//! (executor containers running the default executor), and recovery after
//! a restart. Module work goes through [`super::abi`] only.

use std::collections::{BTreeMap, HashMap};
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
use super::paths::{Layout, nested_sandbox};

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
    /// Set once the container terminated; every waiter watches it.
    termination: watch::Sender<Option<ContainerTermination>>,
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
        let principal = subject
            .and_then(|s| s.value.clone())
            .unwrap_or_else(|| "<claims or anonymous>".into());
        if allowed {
            tracing::info!(
                principal,
                action = action.as_str_name(),
                decision = "allow",
                "authorized"
            );
            Ok(())
        } else {
            let why = authorizer.explain(&request).unwrap_or_default();
            tracing::info!(principal, action = action.as_str_name(), decision = "deny", explanation = %why, "forbidden");
            Err(ApiError::Forbidden(why))
        }
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
        let started = self.start(id.clone(), config, merge_env(&[&sandbox_env, &base_env]));
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
            .and_then(|()| {
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
        nestguard::beneath::create_dir_all(&self.layout.work_dir, sandbox, 0o750).map_err(|e| {
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
        let mut watch = None;
        if let Some(isolator) = &self.modules.isolator {
            let isolated = isolator
                .isolate(&id, u32::try_from(pid).unwrap_or(0))
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
            if self.terminated(&to_dotted(&child)) == Some(false) {
                let _ = self.modules.launcher.destroy(&child);
            }
        }
        let destroyed = self.modules.launcher.destroy(id);
        if let Some(isolator) = &self.modules.isolator
            && let Err(e) = isolator.cleanup(id)
        {
            tracing::warn!(container_id = %key, error = %e, "isolator cleanup failed");
        }
        let status = destroyed.ok().flatten().unwrap_or(status);
        let termination = match limitation {
            Some(l) => ContainerTermination {
                status: Some(status),
                state: Some(mesos::TaskState::TaskFailed as i32),
                reason: l.reason,
                message: l.message,
                limited_resources: l.resources,
            },
            None => ContainerTermination {
                status: Some(status),
                ..Default::default()
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
            let _ = std::fs::remove_dir_all(&r.sandbox);
        }
        if id.parent.is_none() {
            let _ = std::fs::remove_dir_all(self.layout.standalone_meta(id));
        }
        Ok(())
    }

    /// GET_CONTAINERS: every known container with its executor.
    pub fn list(
        &self,
        show_nested: bool,
    ) -> Vec<mesos::v1::agent::response::get_containers::Container> {
        use mesos::v1::agent::response::get_containers::Container;
        let state = lock(&self.state);
        state
            .containers
            .values()
            .filter(|c| show_nested || c.id.parent.is_none())
            .filter(|c| c.termination.borrow().is_none())
            .map(|c| {
                let exec = state.executors.get(&container_id::root(&c.id).value);
                Container {
                    framework_id: exec
                        .and_then(|e| e.framework.id.as_ref())
                        .and_then(|f| nestguard::proto::convert(f).ok()),
                    executor_id: exec
                        .and_then(|e| nestguard::proto::convert(&e.executor.executor_id).ok()),
                    executor_name: exec.and_then(|e| e.executor.name.clone()),
                    container_id: nestguard::proto::convert(&c.id).unwrap_or_default(),
                    ..Default::default()
                }
            })
            .collect()
    }

    // ----- pods -------------------------------------------------------------

    /// Launches a pod: its executor container running nestguard's default
    /// executor (or the executor's own command for CUSTOM executors).
    pub fn launch_pod(
        self: &Arc<Self>,
        subject: Option<&Subject>,
        pod: PodSpec,
    ) -> Result<ContainerId, ApiError> {
        // IDs become paths: Mesos' ID rules, before anything else.
        nestguard::validation::validate_pod_ids(&pod).map_err(|e| ApiError::BadRequest(e.0))?;
        for task in &pod.tasks {
            let object = Object {
                framework_info: Some(pod.framework.clone()),
                task_info: Some(task.task.clone()),
                ..Default::default()
            };
            self.authorize_object(subject, Action::RunTask, object)?;
        }
        let id = ContainerId {
            value: uuid::Uuid::new_v4().to_string(),
            parent: None,
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
        let hook_env = match &self.modules.injector {
            Some(injector) => injector.decorate_executor(&pod.executor, &pod.framework, &id)?,
            None => Environment::default(),
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
        let user = Some(pod.framework.user.clone()).filter(|u| !u.is_empty());
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
        if let Err(e) = self.start(id.clone(), config, merge_env(&[&agent_env, &hook_env])) {
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
        if self.executor(root).is_none() {
            return Err(ApiError::NotFound(format!(
                "Container {root} cannot be found"
            )));
        }
        let status = self.modules.launcher.destroy(&id)?.unwrap_or(9);
        let termination = ContainerTermination {
            status: Some(status),
            ..Default::default()
        };
        let mut state = lock(&self.state);
        for c in state.containers.values() {
            if container_id::root(&c.id).value == root && c.termination.borrow().is_none() {
                c.termination.send_replace(Some(ContainerTermination {
                    status: Some(9),
                    ..Default::default()
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
    pub fn recover(self: &Arc<Self>) -> anyhow::Result<()> {
        let mut known = Vec::new();
        if let Ok(entries) = std::fs::read_dir(self.layout.executors_meta()) {
            for entry in entries.flatten() {
                let dir = entry.path();
                let root = entry.file_name().to_string_lossy().into_owned();
                let read = || -> anyhow::Result<ExecutorRecord> {
                    Ok(ExecutorRecord {
                        framework: nestguard::checkpoint::read_message(
                            &dir.join("framework.info"),
                        )?,
                        executor: nestguard::checkpoint::read_message(&dir.join("executor.info"))?,
                        container_id: ContainerId {
                            value: root.clone(),
                            parent: None,
                        },
                        sandbox: PathBuf::from(std::fs::read_to_string(dir.join("sandbox"))?),
                    })
                };
                match read() {
                    Ok(record) => {
                        known.push(record.container_id.clone());
                        lock(&self.state).executors.insert(root, record);
                    }
                    Err(e) => {
                        tracing::warn!(path = %dir.display(), error = %e, "ignoring an unreadable executor checkpoint")
                    }
                }
            }
        }
        // Standalone containers: their config says where their sandbox is
        // and which user they run as.
        let mut standalone: HashMap<String, ContainerConfig> = HashMap::new();
        if let Ok(entries) = std::fs::read_dir(self.layout.standalones_meta()) {
            for entry in entries.flatten() {
                let path = entry.path().join("config");
                match nestguard::checkpoint::read_message::<ContainerConfig>(&path) {
                    Ok(config) => {
                        let id = ContainerId {
                            value: entry.file_name().to_string_lossy().into_owned(),
                            parent: None,
                        };
                        known.push(id.clone());
                        standalone.insert(id.value, config);
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable standalone container checkpoint")
                    }
                }
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
        // Every known container and its checkpointed descendants come back
        // under management: running ones are reaped, exited ones answer WAIT.
        for state in &reply.checkpointed_container_states {
            let id = state.container_id.clone();
            let root = container_id::root(&id).value.clone();
            let (mut sandbox, root_user) = match (self.executor(&root), standalone.get(&root)) {
                (Some(exec), _) => (exec.sandbox.clone(), Some(exec.framework.user.clone())),
                (None, Some(config)) => (PathBuf::from(&config.directory), config.user.clone()),
                (None, None) => continue,
            };
            for level in container_id::chain(&id).iter().skip(1) {
                sandbox = sandbox.join("containers").join(level);
            }
            let (tx, _) = watch::channel(None);
            let user = if id.parent.is_none() { root_user } else { None };
            lock(&self.state).containers.insert(
                to_dotted(&id),
                ContainerRecord {
                    id: id.clone(),
                    sandbox,
                    user,
                    termination: tx,
                },
            );
            let watch = self
                .modules
                .isolator
                .as_ref()
                .and_then(|i| i.watch(&id).ok());
            self.reap(id, watch);
        }
        tracing::info!(
            known = known.len(),
            orphans = reply.orphan_container_ids.len(),
            "recovered"
        );
        Ok(())
    }
}
