//! The container calls: launch (Mesos' launch sequence through the
//! isolator and the launcher), reaping, wait, kill, remove and listing.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nestguard::checkpoint::{Outlives::ProcessCrash, write_message};
use nestguard::container_id::{self, to_dotted};
use nestguard::isolation::paths::nested_sandbox;
use nestguard::proto::mesos::authorization::{Action, Object, Subject};
use nestguard::proto::mesos::environment::Variable;
use nestguard::proto::mesos::slave::{
    ContainerConfig, ContainerLaunchInfo, ContainerLimitation, ContainerTermination,
};
use nestguard::proto::mesos::{self, CommandInfo, ContainerId, ContainerInfo, Environment};

use super::container_io::ChildIo;
use super::records::{ApiError, ContainerRecord, ExecutorRecord, Launched, lock};
use super::recovery::{exited, recovery_failed};
use super::registry::Agent;
use super::switchboard::Switchboard;
use crate::cli::agent::abi::{LaunchIo, Watch, codes};
use crate::cli::wire::twin;

/// Removes a launch marker when the launch is over, whatever its outcome;
/// only a crash of the agent leaves it (see
/// [`Layout::launch_marker`](crate::cli::agent::paths::Layout::launch_marker)).
pub(super) struct LaunchMarker(PathBuf);

impl LaunchMarker {
    pub(super) fn create(path: PathBuf) -> Result<LaunchMarker, ApiError> {
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

pub(super) fn env_var(name: &str, value: impl Into<String>) -> Variable {
    Variable {
        name: name.to_owned(),
        value: Some(value.into()),
        r#type: None,
        secret: None,
    }
}

/// Later entries override earlier ones, as the launch helper does.
pub(super) fn merge_env(layers: &[&Environment]) -> Environment {
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

/// Marks a container as launching until the launch is over; a launch with
/// a switchboard (a debug session, a `tty_info` container) also holds its
/// place among the switchboards until the switchboard serves it (which then
/// holds it) or the launch failed.
struct Launching<'a> {
    agent: &'a Agent,
    key: String,
    /// The generation of the place among the switchboards that is still
    /// this guard's to free.
    place: Option<u64>,
}

impl Drop for Launching<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.agent.state);
        state.launching.remove(&self.key);
        if let Some(place) = self.place {
            free_place(&mut state.boards, &self.key, place);
        }
    }
}

/// Frees `key`'s place among the switchboards if it is still the one of
/// generation `place` (never a later launch's of the same ID).
pub(super) fn free_place(boards: &mut BTreeMap<String, u64>, key: &str, place: u64) {
    if boards.get(key) == Some(&place) {
        boards.remove(key);
    }
}

/// 409 while an earlier container of `key` still has its switchboard (it
/// drains the output after the container ended and was removed): a new one
/// would share its ID with it (attaches would reach the old one). Checked
/// for every launch, with or without a switchboard.
fn no_earlier_switchboard(boards: &BTreeMap<String, u64>, key: &str) -> Result<(), ApiError> {
    if boards.contains_key(key) {
        return Err(ApiError::Conflict(format!(
            "Container {key}'s earlier I/O switchboard is still draining its output; \
             launch it again once that ended"
        )));
    }
    Ok(())
}

/// 503 when [`MAX_SESSIONS`](super::switchboard::MAX_SESSIONS) containers
/// with a switchboard (debug sessions and `tty_info` launches) launch or
/// run under `id`'s root container already, or
/// [`MAX_SWITCHBOARDS`](super::switchboard::MAX_SWITCHBOARDS) on the whole
/// agent: each holds pipes or a host pty and agent threads.
fn room_for_a_switchboard(
    boards: &BTreeMap<String, u64>,
    id: &ContainerId,
) -> Result<(), ApiError> {
    use super::switchboard::{MAX_SESSIONS, MAX_SWITCHBOARDS};
    if boards.len() >= MAX_SWITCHBOARDS {
        return Err(ApiError::Unavailable(format!(
            "Too many debug sessions and TTY containers on this agent (at most {MAX_SWITCHBOARDS})"
        )));
    }
    let root = &container_id::root(id).value;
    let prefix = format!("{root}.");
    let running = boards
        .keys()
        .filter(|k| *k == root || k.starts_with(&prefix))
        .count();
    if running >= MAX_SESSIONS {
        return Err(ApiError::Unavailable(format!(
            "Too many debug sessions and TTY containers in container {root} (at most {MAX_SESSIONS})"
        )));
    }
    Ok(())
}

impl Agent {
    /// LAUNCH_NESTED_CONTAINER / LAUNCH_CONTAINER (already authorized).
    pub fn launch(
        self: &Arc<Self>,
        id: &ContainerId,
        command: Option<CommandInfo>,
        container: Option<ContainerInfo>,
        resources: Vec<mesos::Resource>,
        limits: BTreeMap<String, mesos::value::Scalar>,
    ) -> Result<Launched, ApiError> {
        let class = mesos::slave::ContainerClass::Default;
        self.launch_as(id, command, container, resources, limits, class)
    }

    /// A launch of either class (DEBUG: a debug session's container).
    pub(super) fn launch_as(
        self: &Arc<Self>,
        id: &ContainerId,
        command: Option<CommandInfo>,
        container: Option<ContainerInfo>,
        resources: Vec<mesos::Resource>,
        limits: BTreeMap<String, mesos::value::Scalar>,
        class: mesos::slave::ContainerClass,
    ) -> Result<Launched, ApiError> {
        let key = to_dotted(id);
        // A duplicate of a launching, running or ended container is Mesos'
        // ALREADY_LAUNCHED (202), before anything is made for it: a second
        // switchboard (a new pty) must never replace the running one's, nor
        // a second isolator preparation touch its cgroups.
        let Some(mut launching) = self.reserve_launch(id, &key, class, container.as_ref())? else {
            return Ok(Launched::Already);
        };
        if let Some(c) = &container
            && c.r#type() != mesos::container_info::Type::Mesos
        {
            return Err(ApiError::BadRequest(
                "The provided ContainerInfo is not supported".into(),
            ));
        }
        let command = command.unwrap_or_default();
        let (sandbox, user, base_env, executor) = self.launch_context(id, &command)?;
        // The marker comes first: a crash anywhere below leaves it, and
        // recovery then ends the launch as one the crash cut off, with its
        // checkpoint (even half written) and its sandbox. Created later, a
        // crash in between left a checkpoint no recovery would end (found
        // by scripts/soak.sh).
        let _marker = LaunchMarker::create(self.layout.launch_marker(&key))?;
        self.create_sandbox(&sandbox)?;
        let board =
            self.prepare_switchboard(&sandbox, user.as_deref(), class, container.as_ref())?;
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
            container_class: Some(class as i32),
            ..Default::default()
        };
        if id.parent.is_none() {
            self.checkpoint_standalone(id, &config)?;
        }
        // The container's side of the switchboard's stdio, dropped once the
        // launch returned (the container holds its own copies).
        let child_io = board.as_ref().and_then(|b| b.take_child_io());
        let started = self.start(
            id.clone(),
            config,
            merge_env(&[&sandbox_env, &base_env]),
            child_io.as_ref(),
        );
        drop(child_io);
        if started.is_err() && id.parent.is_none() {
            let _ = std::fs::remove_dir_all(self.layout.standalone_meta(id));
        }
        match (&started, board) {
            (Ok(Launched::Now), Some(board)) => {
                // The switchboard holds the place from now on.
                let place = launching.place.take();
                self.start_switchboard(key.clone(), board, place);
            }
            // A launch that raced a duplicate (the launcher has the
            // container): the running one keeps its switchboard.
            (Ok(Launched::Already) | Err(_), Some(board)) => Agent::abandon_switchboard(&board),
            _ => {}
        }
        started
    }

    /// Marks `key` as launching under the registry's lock, with its
    /// switchboard's place when it needs one; None: a duplicate of a
    /// launching, running or ended container (Mesos' ALREADY_LAUNCHED).
    fn reserve_launch<'a>(
        self: &'a Arc<Self>,
        id: &ContainerId,
        key: &str,
        class: mesos::slave::ContainerClass,
        container: Option<&ContainerInfo>,
    ) -> Result<Option<Launching<'a>>, ApiError> {
        let mut state = lock(&self.state);
        if state.containers.contains_key(key) || state.launching.contains(key) {
            return Ok(None);
        }
        no_earlier_switchboard(&state.boards, key)?;
        let place = if Switchboard::required(class, container) {
            room_for_a_switchboard(&state.boards, id)?;
            let place = state.next_board;
            state.next_board += 1;
            state.boards.insert(key.to_owned(), place);
            Some(place)
        } else {
            None
        };
        state.launching.insert(key.to_owned());
        Ok(Some(Launching {
            agent: self,
            key: key.to_owned(),
            place,
        }))
    }

    /// Where a container runs and as whom: a nested one in its running
    /// parent's sandbox, as its parent's user unless it names one, with its
    /// executor's injected credentials; a standalone one in its own.
    fn launch_context(
        &self,
        id: &ContainerId,
        command: &CommandInfo,
    ) -> Result<
        (
            PathBuf,
            Option<String>,
            Environment,
            Option<mesos::ExecutorInfo>,
        ),
        ApiError,
    > {
        Ok(match &id.parent {
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
                // A parent recovered without its user checkpoint: a launch
                // that names no user would run as the agent's (root).
                if p.user_unknown && command.user.is_none() {
                    return Err(ApiError::BadRequest(format!(
                        "Container {parent_key}'s user could not be recovered from its checkpoint: \
                         a nested container under it must name its 'command.user'"
                    )));
                }
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
        })
    }

    /// Remembers a standalone container across agent restarts (not a host
    /// crash, which ends it; recovery keeps an unreadable one as damaged).
    fn checkpoint_standalone(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<(), ApiError> {
        let dir = self.layout.standalone_meta(id);
        nestguard::beneath::create_dir_all(&self.layout.work_dir, &dir, 0o755)
            .map_err(anyhow::Error::from)
            .and_then(|_| Ok(write_message(&dir.join("config"), config, ProcessCrash)?))
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
    /// Others may search (not list) it: a pod's mapped ids must (0750 after).
    pub(super) fn create_sandbox(&self, sandbox: &Path) -> Result<(), ApiError> {
        nestguard::beneath::create_dir_all(&self.layout.work_dir, sandbox, 0o751)
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
    /// [`Launched::Already`] when the launcher already has the container.
    pub(super) fn start(
        self: &Arc<Self>,
        id: ContainerId,
        config: ContainerConfig,
        agent_env: Environment,
        io: Option<&ChildIo>,
    ) -> Result<Launched, ApiError> {
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
        // Mesos destroys a container whose launch failed.
        let failed = |agent: &Agent, step: &str, message: &str| {
            let _ = agent.modules.launcher.destroy(&id);
            cleanup(agent);
            ApiError::BadRequest(format!("Failed to {step} container {key}: {message}"))
        };
        let pid = match self.modules.launcher.launch(
            &id,
            &info,
            config.container_info.as_ref(),
            &sandbox,
            io.map(|io| LaunchIo {
                // Checkpointed as its class: a restarted agent destroys it.
                debug: config.container_class == Some(mesos::slave::ContainerClass::Debug as i32),
                ..io.fds()
            }),
        ) {
            Ok(pid) => pid,
            Err(e) if e.code == codes::LAUNCHER_CONTAINER_EXISTS => {
                return Ok(Launched::Already);
            }
            Err(e) if e.code == codes::LAUNCHER_PARENT_NOT_RUNNING => {
                cleanup(self);
                let parent = id.parent.as_deref().map(to_dotted).unwrap_or_default();
                return Err(ApiError::BadRequest(format!(
                    "Parent container {parent} does not exist"
                )));
            }
            Err(e) => return Err(failed(self, "launch", &e.message)),
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
                Err(e) => return Err(failed(self, "isolate", &e.message)),
            }
        }
        tracing::info!(container_id = %key, pid, "launched container");
        let record = ContainerRecord::running(id.clone(), sandbox, config.user.clone(), None);
        lock(&self.state).containers.insert(key, record);
        self.reap(id, watch);
        Ok(Launched::Now)
    }

    /// Waits for the container's exit on a blocking thread while watching
    /// for limitations (an OOM kill ends the container with Mesos' reason),
    /// then destroys it (its nested containers too) and publishes the
    /// termination.
    pub(super) fn reap(self: &Arc<Self>, id: ContainerId, mut watch: Option<Watch>) {
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
            // An OOM kill is in the cgroup's counters once its victim is reaped: check once.
            if limitation.is_none()
                && let Some(Ok(Some(l))) = watch.as_mut().map(|w| w.poll(0))
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
        let recovery_error = self.recovery_error(&key);
        let termination = match limitation {
            Some(l) => ContainerTermination {
                status: Some(status),
                state: Some(mesos::TaskState::TaskFailed as i32),
                reason: l.reason,
                message: l.message,
                limited_resources: l.resources,
            },
            None => exited(status, recovery_error),
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
                Ok(Some(status)) => Ok(exited(status, None)),
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
            if !self.filter(subject, Action::ViewContainer, object) {
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
                        self.filter(subject, Action::ViewStandaloneContainer, object)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(dotted: &str) -> ContainerId {
        container_id::parse_dotted(dotted).unwrap()
    }

    /// A switchboard that outlived its removed container frees only its own
    /// place: a relaunch of the ID (with a place of a later generation)
    /// keeps its own, and is refused while the old one is still there.
    #[test]
    fn an_old_switchboard_frees_only_its_own_place() {
        let mut boards = BTreeMap::new();
        boards.insert("root.s".to_owned(), 1);
        let refused = no_earlier_switchboard(&boards, "root.s");
        assert!(
            matches!(&refused, Err(ApiError::Conflict(t)) if t.contains("still draining")),
            "{refused:?}"
        );
        free_place(&mut boards, "root.s", 1);
        assert!(no_earlier_switchboard(&boards, "root.s").is_ok());
        boards.insert("root.s".to_owned(), 2);
        // The old board (generation 1) ends after the relaunch took a place.
        free_place(&mut boards, "root.s", 1);
        assert_eq!(boards.get("root.s"), Some(&2));
    }

    /// The per-root cap counts the root's own `tty_info` switchboard and
    /// its nested ones, not another root's; the agent-wide cap counts all.
    #[test]
    fn the_caps_count_every_switchboard() {
        let mut boards = BTreeMap::new();
        boards.insert("a".to_owned(), 0);
        for i in 0..15 {
            boards.insert(format!("a.{i}"), i + 1);
        }
        boards.insert("ab.0".to_owned(), 99);
        assert!(matches!(
            room_for_a_switchboard(&boards, &id("a.x")),
            Err(ApiError::Unavailable(_))
        ));
        assert!(room_for_a_switchboard(&boards, &id("ab.1")).is_ok());
        for i in 0..super::super::switchboard::MAX_SWITCHBOARDS as u64 {
            boards.insert(format!("r{i}"), 1000 + i);
        }
        let full = room_for_a_switchboard(&boards, &id("fresh.x"));
        assert!(
            matches!(&full, Err(ApiError::Unavailable(t)) if t.contains("on this agent (at most 256)")),
            "{full:?}"
        );
    }
}
