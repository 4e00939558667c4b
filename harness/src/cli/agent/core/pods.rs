//! Pods: an executor container running nestguard's default executor (or
//! a CUSTOM executor's command), checkpointed so that a restarted agent
//! knows it, and destroyed with everything nested in it.
//!
//! `POST /nestguard/v1/pods` is the harness's stand-in for what a Mesos
//! master sends an agent for a scheduler's LAUNCH_GROUP (the agent's
//! `RunTaskGroupMessage`): it queues the task group and starts the executor;
//! the executor gets the group as LAUNCH_GROUP when it subscribes to the
//! executor API ([`super::executors`]). The other pod routes stand in for
//! the framework's side of that API: its status updates and their
//! acknowledgements ([`super::status_updates`]), KILL of a task, and the
//! teardown (SHUTDOWN, then destroy).

use std::path::Path;
use std::sync::Arc;

use nestguard::checkpoint::Outlives;
use nestguard::container_id;
use nestguard::proto::mesos::authorization::{Action, Object, Subject};
use nestguard::proto::mesos::slave::{ContainerConfig, ContainerTermination};
use nestguard::proto::mesos::{self, CommandInfo, ContainerId, Environment, FrameworkInfo};
use nestguard::proto::nestguard::PodSpec;

use super::containers::{LaunchMarker, env_var, merge_env};
use super::frameworks::{PRINCIPAL_CHANGE, framework_id, principal};
use super::records::{ApiError, ExecutorRecord, lock};
use super::recovery::exited;
use super::registry::Agent;
use crate::cli::agent::abi::codes;
use crate::cli::agent::pod_admission;
use crate::cli::executor::{RESTART_POLICY_LABEL, TRANSIENT_LABEL};
use crate::cli::wire::twin;

/// The checkpointed `TaskGroupInfo` in an executor's meta directory.
const TASKS_FILE: &str = "tasks";

/// Why `pod` cannot run beside the executors the agent has: its executor
/// ID is taken in its framework (executor calls and the sandbox's virtual
/// paths name an executor by the two IDs, so a second one would capture
/// or block the first's), or its framework ID belongs to another principal.
fn clash(
    executors: &std::collections::BTreeMap<String, ExecutorRecord>,
    pod: &PodSpec,
) -> Option<String> {
    let fid = pod.framework.id.as_ref()?.value.as_str();
    let eid = pod.executor.executor_id.value.as_str();
    let same_framework = executors
        .values()
        .filter(|e| e.framework.id.as_ref().map(|f| f.value.as_str()) == Some(fid));
    for e in same_framework {
        if e.executor.executor_id.value == eid {
            return Some(format!(
                "Executor '{eid}' of framework '{fid}' already exists"
            ));
        }
        if e.framework.principal != pod.framework.principal {
            return Some(format!(
                "Framework '{fid}' is registered with another principal"
            ));
        }
    }
    None
}

impl Agent {
    /// One more task on a pod's executor (see [`Agent::launch_task`]),
    /// authorized as the pod's tasks are: RUN_TASK for the task and the
    /// pod's framework, by the framework's principal.
    ///
    /// The task's `executor` is the recorded one: a caller's own is
    /// refused unless it is that one (as the master refuses an ExecutorInfo
    /// incompatible with the running executor's), so the ACL checks the
    /// pod's executor user, never one the caller wrote.
    pub fn launch_single_task(
        &self,
        subject: Option<&Subject>,
        root: &str,
        mut task: mesos::TaskInfo,
    ) -> Result<(), ApiError> {
        // Its IDs and user names, before the lookup and the decision log.
        nestguard::validation::validate_task("task", &task)
            .map_err(|e| ApiError::BadRequest(e.0))?;
        let Some(record) = self.executor(root) else {
            return Err(ApiError::NotFound(format!(
                "Container {root} cannot be found"
            )));
        };
        if let Some(own) = &mut task.executor {
            if own.framework_id.is_none() {
                own.framework_id = record.executor.framework_id.clone();
            }
            if *own != record.executor {
                return Err(ApiError::BadRequest(format!(
                    "The `ExecutorInfo` of task '{}' is different from executor '{}'",
                    task.task_id.value, record.executor.executor_id.value
                )));
            }
        }
        task.executor = Some(record.executor.clone());
        // Authorized as it runs: on this agent, whatever the caller wrote.
        task.slave_id = mesos::SlaveId {
            value: self.layout.agent_id.clone(),
        };
        let object = mesos::authorization::Object {
            framework_info: Some(record.framework.clone()),
            task_info: Some(task.clone()),
            ..Default::default()
        };
        self.require(subject, Action::RunTask, Some(object))?;
        self.launch_task(root, twin(&task))
    }

    /// Launches a pod: its executor container running nestguard's default
    /// executor (or the executor's own command for CUSTOM executors).
    pub fn launch_pod(
        self: &Arc<Self>,
        subject: Option<&Subject>,
        mut pod: PodSpec,
    ) -> Result<ContainerId, ApiError> {
        self.admit_pod(subject, &mut pod)?;
        let id = ContainerId {
            value: uuid::Uuid::new_v4().to_string(),
            parent: None,
        };
        let hook_env = self.hook_environment(&pod, &id)?;
        // First, as for any launch (see `Agent::launch_as`): a crash from
        // here on is a cut-off launch at recovery, whatever it left.
        let _marker = LaunchMarker::create(self.layout.launch_marker(&id.value))?;
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
        self.open_sandbox_path(&sandbox)?;

        let agent_env = self.executor_environment(&pod, &sandbox);
        let config = self.executor_config(&pod, &sandbox);
        let group = self.checkpoint_tasks(&pod, &id)?;
        {
            // Checked again under the lock that inserts: two launches of one
            // executor at once must not both pass.
            let mut state = lock(&self.state);
            if let Some(why) = clash(&state.executors, &pod) {
                drop(state);
                let _ = std::fs::remove_dir_all(self.layout.executor_meta(&id.value));
                return Err(ApiError::Conflict(why));
            }
            state.executors.insert(id.value.clone(), record);
        }
        let started = self.launch_task_group(&id.value, group).and_then(|()| {
            self.start(
                id.clone(),
                config,
                merge_env(&[&agent_env, &hook_env]),
                None,
            )
        });
        if let Err(e) = started {
            lock(&self.state).executors.remove(&id.value);
            self.shutdown_executor(&id.value);
            let _ = std::fs::remove_dir_all(self.layout.executor_meta(&id.value));
            self.forget_updates(&id.value);
            return Err(e);
        }
        tracing::info!(container_id = %id.value, executor_id = %pod.executor.executor_id.value, "pod launched");
        Ok(id)
    }

    /// Admission, before anything touches the disk or starts: Mesos' ID
    /// rules, the master's checks, RUN_TASK of every task as it runs here,
    /// the framework ID bound to the caller, and no clash with a running
    /// executor.
    fn admit_pod(&self, subject: Option<&Subject>, pod: &mut PodSpec) -> Result<(), ApiError> {
        // IDs become paths: Mesos' ID rules, before anything else.
        nestguard::validation::validate_pod_ids(pod).map_err(|e| ApiError::BadRequest(e.0))?;
        // Nothing touches the disk or starts before admission passed.
        let subject = pod_admission::subject(pod, subject)?;
        pod_admission::validate(pod)?;
        // Authorized as they run: on this agent, whatever the caller wrote.
        for t in &mut pod.tasks {
            t.task.slave_id = mesos::SlaveId {
                value: self.layout.agent_id.clone(),
            };
        }
        for object in pod_admission::run_task_objects(pod) {
            self.require(subject.as_ref(), Action::RunTask, Some(object))?;
        }
        // Authorized: the framework ID is (or becomes) this principal's.
        self.claim_framework(subject.as_ref(), &pod.framework)?;
        if let Some(why) = clash(&lock(&self.state).executors, pod) {
            return Err(ApiError::Conflict(why));
        }
        Ok(())
    }

    /// The credential hook's environment for the executor (none without a
    /// hook). It runs before anything exists: in secret mode it refuses a
    /// principal the framework may not hand out (403, nothing created).
    fn hook_environment(&self, pod: &PodSpec, id: &ContainerId) -> Result<Environment, ApiError> {
        Ok(match &self.modules.injector {
            Some(injector) => injector
                .decorate_executor(&pod.executor, &pod.framework, id)
                .map_err(|e| {
                    if e.code == codes::CREDENTIAL_INJECTION {
                        tracing::info!(error = %e, "credential injection refused; 403");
                        ApiError::Forbidden(e.to_string())
                    } else {
                        e.into()
                    }
                })?,
            None => Environment::default(),
        })
    }

    /// The environment a Mesos agent gives an executor of a checkpointing
    /// framework.
    fn executor_environment(&self, pod: &PodSpec, sandbox: &Path) -> Environment {
        let fw_id = pod
            .framework
            .id
            .as_ref()
            .map(|f| f.value.clone())
            .unwrap_or_default();
        Environment {
            variables: vec![
                env_var("MESOS_FRAMEWORK_ID", fw_id),
                env_var("MESOS_EXECUTOR_ID", pod.executor.executor_id.value.clone()),
                env_var("MESOS_DIRECTORY", sandbox.to_string_lossy()),
                env_var("MESOS_SANDBOX", sandbox.to_string_lossy()),
                env_var("MESOS_SLAVE_ID", self.layout.agent_id.clone()),
                env_var("MESOS_AGENT_ENDPOINT", self.endpoint()),
                // Mesos' executor library builds `/slave(1)/api/v1/executor`
                // from the agent's libprocess PID.
                env_var("MESOS_SLAVE_PID", format!("slave(1)@{}", self.endpoint())),
                env_var("MESOS_CHECKPOINT", "1"),
                // What a Mesos agent gives executors of checkpointing
                // frameworks (slave.cpp, executorEnvironment).
                env_var("MESOS_RECOVERY_TIMEOUT", "15mins"),
                env_var("MESOS_SUBSCRIPTION_BACKOFF_MAX", "2secs"),
                env_var("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", "5secs"),
            ],
        }
    }

    /// The executor container's config: nestguard's default executor, or
    /// a CUSTOM executor's own command.
    fn executor_config(&self, pod: &PodSpec, sandbox: &Path) -> ContainerConfig {
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
        let user = pod_admission::executor_user(pod);
        ContainerConfig {
            directory: sandbox.to_string_lossy().into_owned(),
            user,
            executor_info: Some(pod.executor.clone()),
            command_info: command,
            container_info: pod.executor.container.clone(),
            resources: pod.executor.resources.clone(),
            container_class: Some(mesos::slave::ContainerClass::Default as i32),
            ..Default::default()
        }
    }

    /// Checkpoints the pod's task group in the executor's meta directory.
    fn checkpoint_tasks(
        &self,
        pod: &PodSpec,
        id: &ContainerId,
    ) -> Result<mesos::v1::TaskGroupInfo, ApiError> {
        // The agent's own record of the tasks (GET_TASKS, GET_STATE), in its
        // meta directory: the sandbox is the tenant's to write.
        let mut group = task_group(pod);
        // The agent the master assigned them to: this one, whatever the
        // caller wrote (a Mesos agent ignores tasks for another agent ID).
        for task in &mut group.tasks {
            task.agent_id = mesos::v1::AgentId {
                value: self.layout.agent_id.clone(),
            };
        }
        nestguard::checkpoint::write_message(
            &self.layout.executor_meta(&id.value).join(TASKS_FILE),
            &group,
            Outlives::HostCrash,
        )
        .map_err(|e| ApiError::Internal(format!("{e:#}")))?;
        Ok(group)
    }

    /// The task group an executor was given, as checkpointed at launch.
    pub fn launched_task_group(&self, root: &str) -> Option<mesos::v1::TaskGroupInfo> {
        nestguard::checkpoint::read_message(&self.layout.executor_meta(root).join(TASKS_FILE)).ok()
    }

    fn checkpoint_executor(&self, record: &ExecutorRecord) -> anyhow::Result<()> {
        let dir = self.layout.executor_meta(&record.container_id.value);
        nestguard::beneath::create_dir_all(&self.layout.work_dir, &dir, 0o755)?;
        nestguard::checkpoint::write_message(
            &dir.join("framework.info"),
            &record.framework,
            Outlives::HostCrash,
        )?;
        nestguard::checkpoint::write_message(
            &dir.join("executor.info"),
            &record.executor,
            Outlives::HostCrash,
        )?;
        nestguard::checkpoint::write_text(
            &dir.join("sandbox"),
            &record.sandbox.to_string_lossy(),
            Outlives::HostCrash,
        )?;
        Ok(())
    }

    /// Destroys a pod (its executor container and everything nested) and
    /// forgets it.
    pub fn kill_pod(&self, root: &str) -> Result<ContainerTermination, ApiError> {
        let id = ContainerId {
            value: root.to_owned(),
            parent: None,
        };
        let recovery_error = self.recovery_error(root);
        if self.executor(root).is_none() && recovery_error.is_none() {
            return Err(ApiError::NotFound(format!(
                "Container {root} cannot be found"
            )));
        }
        // The teardown a framework's TEARDOWN causes: SHUTDOWN first (an
        // executor with a live stream hears it), then destroy.
        self.shutdown_executor(root);
        let status = self.modules.launcher.destroy(&id)?.unwrap_or(9);
        let termination = exited(status, recovery_error);
        let mut state = lock(&self.state);
        for c in state.containers.values() {
            if container_id::root(&c.id).value == root && c.termination.borrow().is_none() {
                c.termination
                    .send_replace(Some(exited(9, c.recovery_error.clone())));
            }
        }
        state.executors.remove(root);
        drop(state);
        // A launch that came in during the destroy may have queued again.
        self.shutdown_executor(root);
        self.forget_updates(root);
        let _ = std::fs::remove_dir_all(self.layout.executor_meta(root));
        Ok(termination)
    }
}

/// The task group a pod's tasks form, as the master would send it.
pub fn task_group(pod: &PodSpec) -> mesos::v1::TaskGroupInfo {
    let tasks = pod
        .tasks
        .iter()
        .map(|t| {
            let mut task = t.task.clone();
            let mut labels = task.labels.take().unwrap_or_default();
            if let Some(policy) = &t.restart_policy {
                labels.labels.push(mesos::Label {
                    key: RESTART_POLICY_LABEL.into(),
                    value: Some(nestguard::json::to_json(policy)),
                });
            }
            if t.transient() {
                labels.labels.push(mesos::Label {
                    key: TRANSIENT_LABEL.into(),
                    value: Some("true".into()),
                });
            }
            if !labels.labels.is_empty() {
                task.labels = Some(labels);
            }
            twin(&task)
        })
        .collect();
    mesos::v1::TaskGroupInfo { tasks }
}

impl Agent {
    /// Lets the executor's user reach its sandbox, as Mesos' agent does
    /// (its work directory's levels are 0755): the agent's directories on
    /// the way (`slaves/<agent>/frameworks/<fw>/executors/<ex>/runs`) get
    /// 0711, traversable but not listable, so a user reaches only the
    /// sandboxes it owns (each is 0750, chowned to its user at launch).
    /// The sandbox's `containers` directory, where the task containers'
    /// sandboxes go, is made here too, 0711 for the same reason.
    /// `--work_dir` itself is the operator's: it must be traversable.
    fn open_sandbox_path(&self, sandbox: &std::path::Path) -> Result<(), ApiError> {
        use std::os::unix::fs::PermissionsExt;
        let fail = |path: &std::path::Path, e: &dyn std::fmt::Display| {
            ApiError::Internal(format!(
                "Failed to make '{}' traversable: {e}",
                path.display()
            ))
        };
        let containers = sandbox.join("containers");
        nestguard::beneath::create_dir_all(&self.layout.work_dir, &containers, 0o711)
            .map_err(|e| fail(&containers, &e))?;
        let mut levels = vec![containers];
        let mut dir = sandbox.parent();
        while let Some(d) = dir {
            if d == self.layout.work_dir || !d.starts_with(&self.layout.work_dir) {
                break;
            }
            levels.push(d.to_path_buf());
            dir = d.parent();
        }
        for level in levels {
            // Opened without following links, below the work dir.
            let fd = nestguard::beneath::open_dir(&self.layout.work_dir, &level)
                .map_err(|e| fail(&level, &e))?;
            std::fs::File::from(fd)
                .set_permissions(std::fs::Permissions::from_mode(0o711))
                .map_err(|e| fail(&level, &e))?;
        }
        Ok(())
    }
}

impl Agent {
    /// Binds the framework of a pod being launched to its principal, or
    /// refuses the launch when another principal holds it: 409 with Mesos'
    /// text to a caller that may view that framework (VIEW_FRAMEWORK),
    /// else the neutral 403 of any refusal, so the answer does not say the
    /// ID exists.
    pub(super) fn claim_framework(
        &self,
        subject: Option<&Subject>,
        framework: &FrameworkInfo,
    ) -> Result<(), ApiError> {
        let owner = self
            .frameworks
            .claim(framework)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let Some(owner) = owner else {
            return Ok(());
        };
        // The owner's principal goes to the operator's log only.
        tracing::warn!(
            framework_id = ?framework_id(framework),
            principal = ?principal(framework),
            owner = ?principal(&owner),
            "a pod claimed a framework ID bound to another principal; refused"
        );
        let object = Object {
            framework_info: Some(owner),
            ..Default::default()
        };
        if self.filter(subject, Action::ViewFramework, object) {
            Err(ApiError::Conflict(PRINCIPAL_CHANGE.to_owned()))
        } else {
            Err(ApiError::Forbidden(
                "the framework ID is bound to another principal".to_owned(),
            ))
        }
    }
}
