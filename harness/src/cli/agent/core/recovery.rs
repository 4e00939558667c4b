//! Recovery after an agent restart: executors and standalone containers
//! from the agent's checkpoints, containers from the launcher's; orphans
//! destroyed, damaged checkpoints kept for an explicit KILL, launches a
//! crash cut off ended as failed launches.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use nestguard::container_id::{self, to_dotted};
use nestguard::isolation::paths::nested_sandbox;
use nestguard::proto::mesos::slave::{self, ContainerConfig, ContainerTermination};
use nestguard::proto::mesos::{self, ContainerId};

use super::frameworks::{framework_id, principal};
use super::records::{ContainerRecord, ExecutorRecord, lock};
use super::registry::Agent;

/// The reason a container whose checkpoints could not be read reports when
/// it ends. Mesos has no `REASON_CONTAINER_RECOVERY_FAILED`; its agent
/// reports executors it cannot recover after a restart with
/// `REASON_SLAVE_RESTARTED` (`REASON_AGENT_RESTARTED` in the v1 answers of
/// WAIT_CONTAINER, same number), and the message says which file failed.
const RECOVERY_FAILED: mesos::task_status::Reason = mesos::task_status::Reason::SlaveRestarted;

/// A termination for a container whose checkpoints could not be recovered.
pub(super) fn recovery_failed(status: Option<i32>, message: String) -> ContainerTermination {
    ContainerTermination {
        status,
        reason: Some(RECOVERY_FAILED as i32),
        message: Some(message),
        ..Default::default()
    }
}

/// The termination of a container that exited with `status`; one whose
/// checkpoints could not be recovered says so.
pub(super) fn exited(status: i32, recovery_error: Option<String>) -> ContainerTermination {
    match recovery_error {
        Some(message) => recovery_failed(Some(status), message),
        None => ContainerTermination {
            status: Some(status),
            ..Default::default()
        },
    }
}

/// What recovery found in the agent's own checkpoints before it asked the
/// launcher, handed from step to step.
#[derive(Default)]
struct Found {
    /// Every root container with a checkpoint of the agent's.
    known: Vec<ContainerId>,
    /// Root container → why its checkpoint could not be read.
    damaged: HashMap<String, String>,
    /// Executors whose queue of undelivered tasks could not be read.
    queues_damaged: usize,
    /// Standalone containers' configs, by root.
    standalone: HashMap<String, ContainerConfig>,
    /// Launches a crash cut off: container key and marker.
    cut_off: Vec<(String, PathBuf)>,
    /// Cut-off launches whose checkpoint was incomplete (not damage).
    interrupted: HashSet<String>,
}

impl Agent {
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
        // First: a framework ID must never be free for another principal,
        // not even while the rest recovers.
        let bound = self.frameworks.load()?;
        tracing::info!(count = bound, "framework bindings recovered");
        let mut found = Found::default();
        self.recover_executors(&mut found);
        // Executors of an agent from before framework bindings bind theirs.
        let frameworks: Vec<_> = lock(&self.state)
            .executors
            .values()
            .map(|e| e.framework.clone())
            .collect();
        self.adopt_frameworks(&frameworks)?;
        self.recover_standalones(&mut found);
        found.cut_off = self.launch_markers()?;
        // A launch the crash cut off may have left its checkpoint half
        // written: that is the unfinished launch, not damage, and it ends
        // as a failed launch below instead of being kept for inspection.
        for (key, _) in &found.cut_off {
            if let Some(message) = found.damaged.remove(key) {
                tracing::info!(container_id = %key, error = %message, "the checkpoint of a launch the crash cut off is incomplete");
                found.interrupted.insert(key.clone());
            }
        }
        let reply = self.modules.launcher.recover(&found.known)?;
        self.settle_with_launcher(&reply, &found)?;
        let cut_keys: HashSet<&str> = found.cut_off.iter().map(|(k, _)| k.as_str()).collect();
        // Every known container and its checkpointed descendants come back
        // under management: running ones are reaped, exited ones answer WAIT.
        for state in &reply.checkpointed_container_states {
            self.manage_recovered(state, &found, &cut_keys);
        }
        // Cut off before the launcher had anything: no process ever ran.
        for (key, _) in &found.cut_off {
            self.end_launch_cut_off_early(key, &found);
        }
        for (_, marker) in &found.cut_off {
            let _ = std::fs::remove_file(marker);
        }
        tracing::info!(
            known = found.known.len(),
            damaged = found.damaged.len(),
            queues_damaged = found.queues_damaged,
            cut_off = found.cut_off.len(),
            orphans = reply.orphan_container_ids.len(),
            "recovered"
        );
        Ok(())
    }

    /// Executors from the agent's checkpoints, with the tasks queued for
    /// them; an unreadable checkpoint is recorded in `found.damaged`.
    fn recover_executors(&self, found: &mut Found) {
        use std::os::unix::ffi::OsStringExt;
        /// The largest `sandbox` checkpoint read: it holds one path.
        const SANDBOX_CHECKPOINT_MAX: u64 = 64 * 1024;
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
            found.known.push(ContainerId {
                value: root.clone(),
                parent: None,
            });
            match read() {
                Ok(record) => {
                    lock(&self.state).executors.insert(root.clone(), record);
                    // Tasks queued for it before the restart: delivered
                    // when it re-subscribes. A torn queue is reported and
                    // recovery goes on.
                    if self.recover_queue(&root).is_some() {
                        found.queues_damaged += 1;
                    }
                }
                Err(e) => {
                    tracing::error!(container_id = %root, path = %dir.display(), error = %e, "unreadable executor checkpoint: the container is kept as it is until it is killed explicitly");
                    found.damaged.insert(
                        root.clone(),
                        format!("Failed to recover executor container {root}: {e}"),
                    );
                }
            }
        }
    }

    /// Standalone containers: their config says where their sandbox is
    /// and which user they run as.
    fn recover_standalones(&self, found: &mut Found) {
        for (root, dir) in checkpoint_dirs(&self.layout.standalones_meta()) {
            let path = dir.join("config");
            found.known.push(ContainerId {
                value: root.clone(),
                parent: None,
            });
            match nestguard::checkpoint::read_message::<ContainerConfig>(&path) {
                Ok(config) => {
                    found.standalone.insert(root, config);
                }
                Err(e) => {
                    tracing::error!(container_id = %root, path = %path.display(), error = %e, "unreadable standalone container checkpoint: the container is kept as it is until it is killed explicitly");
                    found.damaged.insert(
                        root.clone(),
                        format!("Failed to recover standalone container {root}: {e}"),
                    );
                }
            }
        }
    }

    /// Launches a crash cut off: the markers left in the markers directory.
    fn launch_markers(&self) -> anyhow::Result<Vec<(String, PathBuf)>> {
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
        Ok(cut_off)
    }

    /// What the launcher's answer settles: standalone checkpoints of
    /// containers that ended before the restart go, damaged ones of
    /// containers no longer running are reported, the isolator recovers,
    /// orphans are destroyed.
    fn settle_with_launcher(
        &self,
        reply: &slave::ContainerRecoverInfo,
        found: &Found,
    ) -> anyhow::Result<()> {
        // A standalone container the launcher no longer has (it ended and
        // was destroyed before the restart) has nothing left to recover.
        let managed = |root: &str| {
            reply
                .checkpointed_container_states
                .iter()
                .any(|s| s.container_id.parent.is_none() && s.container_id.value == root)
        };
        for id in found.standalone.keys() {
            if !managed(id) {
                let _ = std::fs::remove_dir_all(self.layout.standalone_meta(&ContainerId {
                    value: id.clone(),
                    parent: None,
                }));
            }
        }
        for (root, message) in &found.damaged {
            if !managed(root) {
                tracing::warn!(container_id = %root, error = %message, "unreadable checkpoint of a container that no longer runs: left for inspection");
            }
        }
        if let Some(isolator) = &self.modules.isolator {
            isolator.recover(reply)?;
        }
        for orphan in &reply.orphan_container_ids {
            tracing::info!(container_id = %to_dotted(orphan), "destroying orphan container");
            let _ = self.modules.launcher.destroy(orphan);
            if let Some(isolator) = &self.modules.isolator {
                let _ = isolator.cleanup(orphan);
            }
        }
        Ok(())
    }

    /// Brings one container the launcher checkpointed back under
    /// management (recorded, then reaped, failed or ended as its state says).
    fn manage_recovered(
        self: &Arc<Self>,
        state: &slave::ContainerState,
        found: &Found,
        cut_keys: &HashSet<&str>,
    ) {
        let id = state.container_id.clone();
        let key = to_dotted(&id);
        let root = container_id::root(&id).value.clone();
        let recovery_error = found
            .damaged
            .get(&root)
            .filter(|_| id.parent.is_none())
            .cloned();
        let (mut sandbox, root_user) = match (self.executor(&root), found.standalone.get(&root)) {
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
            (None, None) if found.damaged.contains_key(&root) => {
                (PathBuf::from(&state.directory), None)
            }
            (None, None) => return,
        };
        if !found.damaged.contains_key(&root) {
            for level in container_id::chain(&id).iter().skip(1) {
                sandbox = sandbox.join("containers").join(level);
            }
        } else if id.parent.is_some() {
            sandbox = PathBuf::from(&state.directory);
        }
        let nested = if id.parent.is_none() {
            Recovered {
                user: root_user,
                user_unknown: false,
                session: false,
            }
        } else {
            self.recovered_config(&id)
        };
        let mut record = ContainerRecord::running(id.clone(), sandbox, nested.user, recovery_error);
        record.user_unknown = nested.user_unknown;
        lock(&self.state).containers.insert(key.clone(), record);
        if cut_keys.contains(key.as_str()) {
            self.fail_cut_off_launch(&id);
            return;
        }
        if nested.session && self.terminated(&key) == Some(false) {
            self.end_recovered_session(&id);
            return;
        }
        if self.terminated(&key) == Some(true) {
            return; // under a cut-off launch destroyed just above
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

    /// Ends a launch cut off before the launcher had anything of it (no
    /// process ever ran), if its root is known.
    fn end_launch_cut_off_early(&self, key: &str, found: &Found) {
        let Ok(id) = container_id::parse_dotted(key) else {
            return;
        };
        let root = container_id::root(&id).value.clone();
        // A standalone launch cut off before its checkpoint was written
        // may have made its sandbox: recorded, WAIT says what happened
        // and REMOVE_CONTAINER removes it.
        let standalone_sandbox = id
            .parent
            .is_none()
            .then(|| self.layout.standalone_sandbox(&id))
            .filter(|s| s.is_dir());
        let root_known = self.executor(&root).is_some()
            || found.standalone.contains_key(&root)
            || found.damaged.contains_key(&root)
            || found.interrupted.contains(&root)
            || standalone_sandbox.is_some();
        if lock(&self.state).containers.contains_key(key) || !root_known {
            return;
        }
        let sandbox = match &id.parent {
            Some(parent) => lock(&self.state)
                .containers
                .get(&to_dotted(parent))
                .map(|p| nested_sandbox(&p.sandbox, &id))
                .unwrap_or_default(),
            None => found
                .standalone
                .get(&root)
                .map(|c| PathBuf::from(&c.directory))
                .or(standalone_sandbox)
                .unwrap_or_default(),
        };
        lock(&self.state).containers.insert(
            key.to_owned(),
            ContainerRecord::running(id.clone(), sandbox, None, None),
        );
        self.fail_cut_off_launch(&id);
    }

    /// Ends a container whose launch a crash of the agent cut off, as Mesos
    /// ends a failed launch: destroyed (with everything nested in it, and
    /// its pod's or standalone checkpoints), terminated with
    /// `REASON_CONTAINER_LAUNCH_FAILED` and a message saying what happened.
    fn fail_cut_off_launch(&self, id: &ContainerId) {
        let key = to_dotted(id);
        let status = self.destroy_recovered(id, "a container whose launch was cut off");
        if id.parent.is_none() {
            lock(&self.state).executors.remove(&id.value);
            // Its queued tasks have no executor to go to.
            self.shutdown_executor(&id.value);
            self.forget_updates(&id.value);
            let _ = std::fs::remove_dir_all(self.layout.executor_meta(&id.value));
            let _ = std::fs::remove_dir_all(self.layout.standalone_meta(id));
        }
        let message = format!(
            "Container {key} failed to launch: the agent stopped before the launch completed; \
             the container was destroyed when the agent recovered"
        );
        tracing::warn!(container_id = %key, status = ?status, "{message}");
        self.terminate_subtree(
            &key,
            ContainerTermination {
                status,
                state: Some(mesos::TaskState::TaskFailed as i32),
                reason: Some(mesos::task_status::Reason::ContainerLaunchFailed as i32),
                message: Some(message),
                ..Default::default()
            },
        );
    }

    /// Ends a debug session that ran when the agent stopped: its stdio's
    /// other ends (the switchboard's pipes or pty master) died with the
    /// agent, so no client can reach it again. Mesos destroys a session's
    /// container when its connection ends; so does recovery, and WAIT then
    /// answers it as killed.
    fn end_recovered_session(&self, id: &ContainerId) {
        let key = to_dotted(id);
        let status = self.destroy_recovered(id, "a debug session after a restart");
        let message = format!(
            "Container {key} was a debug session whose connection ended with the agent; \
             it was destroyed when the agent recovered"
        );
        tracing::info!(container_id = %key, status = ?status, "{message}");
        self.terminate_subtree(
            &key,
            ContainerTermination {
                status,
                state: Some(mesos::TaskState::TaskKilled as i32),
                message: Some(message),
                ..Default::default()
            },
        );
    }

    /// Destroys a recovered container (and what is nested in it) and
    /// cleans its isolation up; its exit status, if known.
    fn destroy_recovered(&self, id: &ContainerId, what: &str) -> Option<i32> {
        let status = self
            .modules
            .launcher
            .destroy(id)
            .inspect_err(|e| {
                tracing::warn!(container_id = %to_dotted(id), error = %e, "destroying {what}");
            })
            .ok()
            .flatten();
        if let Some(isolator) = &self.modules.isolator {
            let _ = isolator.cleanup(id);
        }
        status
    }

    /// Sets `termination` on `key` and everything nested in it that has not
    /// ended yet.
    fn terminate_subtree(&self, key: &str, termination: ContainerTermination) {
        let prefix = format!("{key}.");
        let state = lock(&self.state);
        for (k, c) in state.containers.iter() {
            if (k == key || k.starts_with(&prefix)) && c.termination.borrow().is_none() {
                c.termination.send_replace(Some(termination.clone()));
            }
        }
    }

    /// What a recovered nested container's `ContainerConfig` checkpoint
    /// (the launcher's) says: the user it runs as (as Mesos' containerizer
    /// recovers it) and whether it was a debug session (class DEBUG). A
    /// missing or torn checkpoint fails closed: the user is unknown
    /// (sessions and user-less nested launches under it are refused),
    /// never read as the agent's user. `None` with a readable checkpoint
    /// is a container that ran as the agent's user.
    fn recovered_config(&self, id: &ContainerId) -> Recovered {
        match self.modules.launcher.container_config(id) {
            Ok(config) => Recovered {
                session: config.container_class == Some(mesos::slave::ContainerClass::Debug as i32),
                user: config.user.filter(|u| !u.is_empty()),
                user_unknown: false,
            },
            Err(e) => {
                tracing::warn!(container_id = %to_dotted(id), error = %e,
                    "the user of a recovered nested container is unknown; sessions and launches without a user under it are refused");
                Recovered {
                    user: None,
                    user_unknown: true,
                    session: false,
                }
            }
        }
    }
}

impl Agent {
    /// Binds the frameworks of executors recovered from before bindings
    /// existed (the first one recovered wins; a conflict is logged).
    pub(super) fn adopt_frameworks(
        &self,
        frameworks: &[mesos::FrameworkInfo],
    ) -> anyhow::Result<()> {
        for framework in frameworks {
            if let Some(owner) = self.frameworks.claim(framework)? {
                tracing::warn!(
                    framework_id = ?framework_id(framework),
                    principal = ?principal(framework),
                    owner = ?principal(&owner),
                    "a recovered executor's framework is bound to another principal"
                );
            }
        }
        Ok(())
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

/// What recovery knows of a container from its checkpoints.
struct Recovered {
    user: Option<String>,
    /// The user could not be read (see [`Agent::recovered_config`]).
    user_unknown: bool,
    /// A debug session's container, destroyed on recovery.
    session: bool,
}
