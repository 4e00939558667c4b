//! Pods: an executor container running nestguard's default executor (or
//! a CUSTOM executor's command), checkpointed so that a restarted agent
//! knows it, and destroyed with everything nested in it.

use std::sync::Arc;

use nestguard::container_id;
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::mesos::slave::{ContainerConfig, ContainerTermination};
use nestguard::proto::mesos::{self, CommandInfo, ContainerId, Environment};
use nestguard::proto::nestguard::PodSpec;

use super::containers::{LaunchMarker, env_var, merge_env};
use super::recovery::exited;
use super::registry::{Agent, ApiError, ExecutorRecord, lock};
use crate::cli::agent::abi::codes;
use crate::cli::agent::pod_admission;

impl Agent {
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
        let _ = std::fs::remove_dir_all(self.layout.executor_meta(root));
        Ok(termination)
    }
}
