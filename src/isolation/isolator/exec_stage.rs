//! Under Mesos' launcher (`launcher=mesos`): the merged launch info's
//! defences move into nestguard's exec stage, which becomes the container's
//! command (see [`crate::isolation::exec_stage`] for the stage and why it is
//! safe).
//!
//! What moves: the capability sets, the seccomp profile (compiled here, for
//! the container's bounding set, as nestguard's launcher does) and
//! `no_new_privileges` (Mesos 1.11's helper has no code for it). Mesos'
//! helper never sees a field it aborts on. What stays Mesos': namespaces,
//! mounts (the masked paths among them), rlimits, environment, working
//! directory, user (or the wrapper's hand-over), stdio.
//!
//! The container's command becomes `<stage> --plan=… -- <path> <argv…>`:
//! a shell command as Mesos runs it (`/bin/sh sh -c <value>`), any other
//! as `value` with `arguments` verbatim. A command task is refused: Mesos
//! CHECK-fails (aborts the agent) when an isolator changes the command
//! executor's `value`, so its task could only run unconfined.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::{IsolatorError, Result};
use crate::container_id::to_dotted;
use crate::isolation::exec_stage::seal::SealKey;
use crate::isolation::exec_stage::{ExecPlan, STAGE_NAME};
use crate::isolation::seccomp;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo};
use crate::proto::mesos::{CommandInfo, ContainerId};

/// The exec stage as the isolators use it.
#[derive(Debug, Clone)]
pub struct ExecStage {
    path: PathBuf,
    agent_mnt_ns: u64,
    key: SealKey,
}

/// The stage beside the running library (or executable).
pub fn default_stage_path() -> PathBuf {
    let helper = crate::isolation::launcher::default_helper_path();
    helper.with_file_name(STAGE_NAME)
}

impl ExecStage {
    /// At module load: the stage must be an executable regular file (a
    /// module that could only launch failing containers should not load);
    /// the sealing key is written as `<key_dir>/<key_name>.key` (the agent's
    /// cgroups root names it: one agent claims a root).
    pub fn new(path: PathBuf, key_dir: &Path, key_name: &str) -> Result<Self> {
        let meta = std::fs::metadata(&path).map_err(|e| IsolatorError::Parameter {
            key: "exec_stage".into(),
            expected: "the nestguard-exec binary (installed beside libnestguard.so)",
            found: format!("{}: {e}", path.display()),
        })?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(IsolatorError::Parameter {
                key: "exec_stage".into(),
                expected: "an executable regular file",
                found: path.display().to_string(),
            });
        }
        let agent_mnt_ns = std::fs::metadata("/proc/self/ns/mnt")
            .map_err(IsolatorError::io("stat", Path::new("/proc/self/ns/mnt")))?
            .ino();
        let key = SealKey::create(key_dir, key_name).map_err(|e| IsolatorError::Parameter {
            key: "exec_stage_keys".into(),
            expected: "a directory where root can write the stage's sealing key",
            found: format!("{}: {e}", key_dir.display()),
        })?;
        tracing::info!(stage = %path.display(), "defences applied by nestguard's exec stage under Mesos' launcher");
        Ok(Self {
            path,
            agent_mnt_ns,
            key,
        })
    }

    /// Moves the defences of `info` into the stage and makes the stage the
    /// container's command.
    pub fn wrap(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
        info: &mut ContainerLaunchInfo,
    ) -> Result<()> {
        if config.task_info.is_some() {
            return Err(IsolatorError::Invalid(format!(
                "container '{}' is a command task: under Mesos' launcher nestguard cannot confine \
                 it (Mesos aborts when an isolator changes a command executor's command); run \
                 the task through an executor (e.g. the default executor, as a task group)",
                to_dotted(id)
            )));
        }
        let command = &config.command_info;
        let Some(value) = command.value.clone() else {
            return Err(IsolatorError::Invalid(format!(
                "container '{}' has no command to run",
                to_dotted(id)
            )));
        };
        let filters = seccomp::filters_for(info)
            .map_err(|e| IsolatorError::Invalid(format!("container '{}': {e}", to_dotted(id))))?;
        let plan = ExecPlan {
            container: to_dotted(id),
            bounding: seccomp::bounding_mask(info),
            effective: info
                .effective_capabilities
                .as_ref()
                .map(|e| seccomp::capability_mask(&e.capabilities)),
            no_new_privs: info.no_new_privileges.unwrap_or(false),
            filters: filters.to_vec(),
            read_only_paths: true,
            agent_mnt_ns: self.agent_mnt_ns,
        };
        info.bounding_capabilities = None;
        info.effective_capabilities = None;
        info.seccomp_profile = None;
        info.no_new_privileges = None;
        let (path, argv) = if command.shell() {
            (
                "/bin/sh".to_owned(),
                vec!["sh".to_owned(), "-c".to_owned(), value],
            )
        } else {
            (value, command.arguments.clone())
        };
        let plan_arg = plan.to_arg();
        let seal = self
            .key
            .seal(&plan_arg, config.user.as_deref().unwrap_or(""));
        let mut arguments = vec![STAGE_NAME.to_owned(), plan_arg, seal, "--".to_owned(), path];
        arguments.extend(argv);
        info.command = Some(CommandInfo {
            value: Some(self.path.display().to_string()),
            shell: Some(false),
            arguments,
            ..CommandInfo::default()
        });
        Ok(())
    }
}
