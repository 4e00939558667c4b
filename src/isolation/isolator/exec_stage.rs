//! Under Mesos' launcher (`launcher=mesos`): the merged launch info's
//! defences move into nestguard's exec stage, which becomes the container's
//! command (see [`crate::isolation::exec_stage`] for the stage and why it is
//! safe).
//!
//! What moves: the capability sets, the seccomp profile (compiled here, for
//! the container's bounding set, as nestguard's launcher does) and
//! `no_new_privileges` (Mesos 1.11's helper has no code for it). Mesos'
//! helper never sees a field it aborts on. What stays Mesos': namespaces,
//! mounts (the masked paths among them; not those from or onto a sandbox,
//! which the wrapper hands to the stage: see
//! [`crate::isolation::exec_stage::launch_mounts`]; the plan names the
//! sandboxes), rlimits, working directory, stdio; the user and the
//! environment go to the stage through the `mesos-containerizer` wrapper.
//!
//! The container's command becomes `<stage> --plan=… -- <path> <argv…>`,
//! with [`WRAPPED_STAGE`] for `<stage>` until the wrapper runs it:
//! a shell command as Mesos runs it (`/bin/sh sh -c <value>`), any other
//! as `value` with `arguments` verbatim. A command task's executor command
//! may only get arguments (Mesos CHECK-fails when an isolator changes its
//! `value`): the sealed plan goes there, and the `mesos-containerizer`
//! wrapper makes that container's command the stage
//! ([`crate::isolation::exec_stage::command_task`]), so the executor and
//! the task it starts are confined alike.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::{IsolatorError, Result};
use super::exec_stage_posix::PosixPids;
use super::is_debug;
use crate::container_id::to_dotted;
use crate::isolation::exec_stage::seal::SealKey;
use crate::isolation::exec_stage::{
    ExecPlan, PosixLaunch, STAGE_NAME, StageIdentity, WRAPPED_STAGE, command_task, docker_command,
};
use crate::isolation::seccomp;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerState};
use crate::proto::mesos::{CommandInfo, ContainerId};

/// The longest plan argument: half the kernel's limit on one `execve`
/// argument or environment string (`MAX_ARG_STRLEN`, 128 KiB), because Mesos
/// passes the whole launch info, plan included, as one environment string
/// (`MESOS_CONTAINERIZER_LAUNCH_INFO`), beside the environment and mounts.
const MAX_PLAN_ARG: usize = 64 * 1024;

/// The exec stage as the isolators use it.
#[derive(Debug, Clone)]
pub struct ExecStage {
    path: PathBuf,
    agent_mnt_ns: u64,
    key: SealKey,
    /// The containers with their own image (dotted ids): a debug session
    /// into one is refused at prepare, with an answer saying why (see
    /// [`ExecStage::refuse_debug_in_image`]).
    images: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// The agent runs Mesos' posix launcher: the plan carries the
    /// namespaces and the cgroup for the wrapper to make and join.
    posix: Option<PosixPids>,
    /// Where the key is, and its name: the posix launcher's processes are
    /// kept beside it.
    key_dir: PathBuf,
    key_name: String,
}

/// What the stage needs intact until it has applied the defences (itself,
/// the dynamic loader and libraries, their configuration, `/proc`), and the
/// binaries a root debug session runs in the container's mount namespace.
const PROTECTED: [&str; 7] = ["/lib", "/lib64", "/usr", "/etc", "/proc", "/bin", "/sbin"];

/// Refuses a mount (a volume's `container_path`) onto, above or below
/// anything the stage runs from: a tenant's file there would run as the
/// stage, before any defence.
fn check_mount_targets(id: &ContainerId, info: &ContainerLaunchInfo, stage: &Path) -> Result<()> {
    let overlaps = |target: &Path, protected: &Path| {
        target.starts_with(protected) || protected.starts_with(target)
    };
    for mount in &info.mounts {
        if mount.target.is_empty() {
            continue;
        }
        let target = Path::new(&mount.target);
        let hit = PROTECTED
            .iter()
            .map(Path::new)
            .chain(std::iter::once(stage))
            .find(|p| overlaps(target, p));
        if let Some(p) = hit {
            return Err(IsolatorError::Invalid(format!(
                "container '{}': a mount onto '{}' would cover '{}', which nestguard's exec \
                 stage runs from under Mesos' launcher",
                to_dotted(id),
                target.display(),
                p.display()
            )));
        }
    }
    Ok(())
}

/// The sandboxes of `id`'s tree, outermost first, from its own
/// (`directory`, Mesos' `ContainerConfig.directory`) in Mesos' layout: a
/// nested container's is its parent's plus `containers/<id>`. The stage
/// resolves every mount from or onto them below the outermost one
/// ([`crate::isolation::exec_stage::launch_mounts`]); a nested container's
/// sandbox that is not where that layout puts it is refused, since its
/// parents' could not be named (and their paths then mounted by path).
fn sandbox_chain(id: &ContainerId, directory: &str) -> Result<Vec<PathBuf>> {
    let own = PathBuf::from(directory);
    if !own.is_absolute() {
        return Err(IsolatorError::Invalid(format!(
            "container '{}': its sandbox '{directory}' is not an absolute path",
            to_dotted(id)
        )));
    }
    let mut chain = vec![own.clone()];
    let mut here = own.as_path();
    let mut level = id;
    while let Some(parent) = level.parent.as_deref() {
        let up = here
            .parent()
            .filter(|_| here.file_name() == Some(level.value.as_ref()))
            .filter(|up| up.file_name() == Some("containers".as_ref()))
            .and_then(Path::parent);
        let Some(up) = up else {
            return Err(IsolatorError::Invalid(format!(
                "container '{}': its sandbox '{directory}' is not in Mesos' layout \
                 (<parent's sandbox>/containers/<id>), so its parents' cannot be named",
                to_dotted(id)
            )));
        };
        chain.push(up.to_path_buf());
        here = up;
        level = parent;
    }
    chain.reverse();
    Ok(chain)
}

/// The container's own root file system (an image's), which the stage
/// enters itself (`exec_stage::rootfs`); refused for a command task, whose
/// command executor runs on the host and enters the task's image with a
/// `mesos-containerizer launch` of its own, after the stage.
fn image_root(id: &ContainerId, config: &ContainerConfig) -> Result<Option<PathBuf>> {
    let Some(rootfs) = config.rootfs.as_deref() else {
        return Ok(None);
    };
    if config.task_info.is_some() {
        return Err(IsolatorError::Invalid(format!(
            "command task '{}' has its own image: under Mesos' launcher its command executor \
             would enter the image after nestguard's exec stage, by a launch of its own that \
             nestguard cannot confine; run it as a task of a task group (a pod) or give its \
             executor the image instead",
            to_dotted(id)
        )));
    }
    let path = PathBuf::from(rootfs);
    if !path.is_absolute() {
        return Err(IsolatorError::Invalid(format!(
            "container '{}': its rootfs '{rootfs}' is not an absolute path",
            to_dotted(id)
        )));
    }
    Ok(Some(path))
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
            images: Default::default(),
            posix: None,
            key_dir: key_dir.to_path_buf(),
            key_name: key_name.to_owned(),
        })
    }

    /// Under Mesos' posix launcher (`mesos_launcher=posix`), which neither
    /// clones namespaces nor joins cgroups: see `exec_stage::posix_launcher`.
    pub fn under_posix_launcher(mut self, posix: bool) -> Result<Self> {
        self.posix = if posix {
            let dir = self.key_dir.join(format!("{}.pids", self.key_name));
            Some(
                PosixPids::in_dir(dir.clone()).map_err(|e| IsolatorError::Parameter {
                    key: "exec_stage_keys".into(),
                    expected: "a directory where root can keep the containers' processes",
                    found: format!("{}: {e}", dir.display()),
                })?,
            )
        } else {
            None
        };
        Ok(self)
    }

    /// Whether the agent runs Mesos' posix launcher.
    pub fn posix(&self) -> bool {
        self.posix.is_some()
    }

    /// The process Mesos started for `id` (its nested containers join its
    /// namespaces through it under the posix launcher).
    pub fn isolate(&self, id: &ContainerId, pid: u32) {
        if let Some(pids) = &self.posix {
            pids.note(id, pid);
        }
    }

    fn images_held(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.images
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A debug session (`LAUNCH_NESTED_CONTAINER_SESSION`) joins its
    /// parent's mount namespace; in a container with its own image that is
    /// the image, where the stage is not (the wrapper refuses it too, but
    /// only once the container runs, with a message the session's client
    /// may never see): refused here, so the call itself says why.
    fn refuse_debug_in_image(&self, id: &ContainerId, config: &ContainerConfig) -> Result<()> {
        let Some(parent) = id.parent.as_deref().filter(|_| is_debug(config)) else {
            return Ok(());
        };
        if self.images_held().contains(&to_dotted(parent)) {
            return Err(IsolatorError::Invalid(format!(
                "debug container '{}': its parent '{}' runs its own image, and under Mesos' \
                 launcher nestguard's exec stage cannot run inside it; launch a nested container \
                 with the image instead",
                to_dotted(id),
                to_dotted(parent)
            )));
        }
        Ok(())
    }

    /// After an agent restart: the recovered containers with their own
    /// image (a `MesosInfo.image` in their `ContainerInfo`).
    pub fn recover(&self, states: &[ContainerState]) {
        if let Some(pids) = &self.posix {
            pids.recover(states);
        }
        let mut images = self.images_held();
        for state in states {
            let image = state
                .container_info
                .as_ref()
                .and_then(|c| c.mesos.as_ref())
                .is_some_and(|m| m.image.is_some());
            if image {
                images.insert(to_dotted(&state.container_id));
            }
        }
    }

    /// The container is gone.
    pub fn cleanup(&self, id: &ContainerId) {
        if let Some(pids) = &self.posix {
            pids.forget(id);
        }
        self.images_held().remove(&to_dotted(id));
    }

    /// Moves the defences of `info` into the stage and makes the stage the
    /// container's command.
    pub fn wrap(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
        info: &mut ContainerLaunchInfo,
        cgroup_procs: Vec<PathBuf>,
    ) -> Result<()> {
        self.refuse_debug_in_image(id, config)?;
        let rootfs = image_root(id, config)?;
        if rootfs.is_some() {
            self.images_held().insert(to_dotted(id));
        }
        check_mount_targets(id, info, &self.path)?;
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
            sandboxes: sandbox_chain(id, &config.directory)?,
            stage: StageIdentity::of(&self.path)
                .map_err(IsolatorError::io("stat", self.path.as_path()))?,
            rootfs,
            posix: match &self.posix {
                Some(pids) => pids.launch(id, info, cgroup_procs)?,
                None => PosixLaunch::default(),
            },
        };
        info.bounding_capabilities = None;
        info.effective_capabilities = None;
        info.seccomp_profile = None;
        info.no_new_privileges = None;
        let plan_arg = plan.to_arg();
        if plan_arg.len() > MAX_PLAN_ARG {
            // execve would fail with E2BIG in the agent or the container:
            // say why here.
            return Err(IsolatorError::Invalid(format!(
                "container '{}': its exec stage plan is {} bytes, more than the {MAX_PLAN_ARG} \
                 that fit in Mesos' launch info beside the rest (the kernel's MAX_ARG_STRLEN \
                 is 128 KiB): use a smaller seccomp profile",
                to_dotted(id),
                plan_arg.len()
            )));
        }
        let stage = self.path.display().to_string();
        let user = config.user.as_deref().unwrap_or("");
        if config.task_info.is_some() {
            // Only arguments may be added to a command executor's command;
            // the wrapper makes it the stage (`exec_stage::command_task`).
            let seal = self.key.seal(&plan_arg, &stage, user, &[]);
            let mut command = info.command.take().unwrap_or_default();
            command
                .arguments
                .extend(command_task::arguments(&stage, &plan_arg, &seal));
            info.command = Some(command);
            return Ok(());
        }
        // An image's own command: docker/runtime makes it the container's
        // command, and Mesos puts its arguments before ours (see
        // `docker_command`); the seal covers them where they will be.
        let docker = match plan.rootfs {
            Some(_) => docker_command::of(config),
            None => None,
        };
        let (path, argv) =
            command_path_and_argv(id, docker.as_ref().unwrap_or(&config.command_info))?;
        let mut tail = vec!["--".to_owned(), path];
        tail.extend(argv);
        let mut sealed: Vec<String> = docker.map(|c| c.arguments).unwrap_or_default();
        sealed.extend(tail.iter().cloned());
        let seal = self.key.seal(&plan_arg, &stage, user, &sealed);
        let mut arguments = vec![STAGE_NAME.to_owned(), plan_arg, seal];
        arguments.extend(tail);
        info.command = Some(CommandInfo {
            value: Some(WRAPPED_STAGE.to_owned()),
            shell: Some(false),
            arguments,
            ..CommandInfo::default()
        });
        Ok(())
    }
}

/// The executable and argv the stage runs for `command`: a shell command as
/// Mesos runs it (`/bin/sh sh -c <value>`), any other as `value` with its
/// `arguments` verbatim.
fn command_path_and_argv(id: &ContainerId, command: &CommandInfo) -> Result<(String, Vec<String>)> {
    let Some(value) = command.value.clone() else {
        return Err(IsolatorError::Invalid(format!(
            "container '{}' has no command to run",
            to_dotted(id)
        )));
    };
    Ok(if command.shell() {
        (
            "/bin/sh".to_owned(),
            vec!["sh".to_owned(), "-c".to_owned(), value],
        )
    } else {
        (value, command.arguments.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::slave::ContainerMountInfo;

    #[test]
    fn the_sandboxes_of_a_tree_follow_mesos_layout() {
        let id = |v: &str, parent: Option<ContainerId>| ContainerId {
            value: v.into(),
            parent: parent.map(Box::new),
        };
        let root = id("r", None);
        let child = id("c", Some(root.clone()));
        let grandchild = id("g", Some(child.clone()));
        assert_eq!(
            sandbox_chain(&root, "/w/runs/r").unwrap(),
            [PathBuf::from("/w/runs/r")]
        );
        assert_eq!(
            sandbox_chain(&grandchild, "/w/runs/r/containers/c/containers/g").unwrap(),
            [
                PathBuf::from("/w/runs/r"),
                PathBuf::from("/w/runs/r/containers/c"),
                PathBuf::from("/w/runs/r/containers/c/containers/g"),
            ]
        );
        for bad in [
            "/w/runs/r/containers/x",
            "/w/runs/r/other/c",
            "containers/c",
            "/c",
        ] {
            assert!(sandbox_chain(&child, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mounts_over_what_the_stage_runs_from_are_refused() {
        let id = ContainerId {
            value: "c".into(),
            parent: None,
        };
        let stage = Path::new("/opt/ng/nestguard-exec");
        let with = |target: &str| ContainerLaunchInfo {
            mounts: vec![ContainerMountInfo {
                target: target.into(),
                ..ContainerMountInfo::default()
            }],
            ..ContainerLaunchInfo::default()
        };
        for bad in [
            "/opt/ng/nestguard-exec",
            "/opt",
            "/",
            "/usr/local/lib",
            "/lib64",
            "/etc",
        ] {
            let e = check_mount_targets(&id, &with(bad), stage)
                .unwrap_err()
                .to_string();
            assert!(e.contains("exec"), "{bad}: {e}");
        }
        for good in ["/sandbox/vol", "/dev/shm", "/opt/other", "/srv/data"] {
            check_mount_targets(&id, &with(good), stage).unwrap();
        }
    }
}
