//! The container tree: each container's record, the launches and destroys
//! in flight, and the queries on the tree.

use std::collections::{BTreeMap, HashSet};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::Child;
use std::sync::MutexGuard;

use super::killer::Target;
use crate::container_id;
use crate::isolation::channel::PidRecord;
use crate::proto::mesos::ContainerId;

use super::{Launcher, LauncherError, read_status, reap_strays};

#[derive(Debug)]
pub(super) struct Container {
    pub(super) id: ContainerId,
    pub(super) runtime: PathBuf,
    pub(super) sandbox: Option<PathBuf>,
    /// The supervisor's identity; `None` if it never started.
    pub(super) pid: Option<PidRecord>,
    /// Readable once the supervisor exits; `None` once known to have exited.
    pub(super) pidfd: Option<OwnedFd>,
    /// The helper process when this launcher spawned it.
    pub(super) helper: Option<Child>,
    /// Raw wait status once the container exited.
    pub(super) status: Option<i32>,
    /// Counts it in `nestguard/isolation/containers_tracked` while the
    /// launcher manages it.
    pub(super) counted: Counted,
    /// The pod's host id range (a top-level container in a user
    /// namespace): taken while this record exists.
    pub(super) user_range: Option<crate::isolation::id_map::IdRange>,
    /// In a pod's user namespace: the uid and primary gid its binds pass
    /// besides root (`None`: root only).
    pub(super) idmap_owner: Option<crate::isolation::id_map::BindOwner>,
}

/// A container's place in the metrics: counted as running while the
/// launcher holds it; `orphan`: found by recovery and not known to the
/// agent, so destroying it counts in `orphans_destroyed`.
#[derive(Debug)]
pub(super) struct Counted {
    _running: crate::metrics::ContainerToken,
    pub(super) orphan: bool,
}

impl Counted {
    pub(super) fn new(orphan: bool) -> Self {
        Counted {
            _running: crate::metrics::isolation().container(),
            orphan,
        }
    }
}

impl Container {
    pub(super) fn target(&self) -> Option<Target<'_>> {
        self.pid.map(|r| Target {
            id: &self.id,
            pid: r.pid,
            start_time: r.start_time,
            own_pid_namespace: r.own_pid_namespace,
            pidfd: self.pidfd.as_ref().map(|f| f.as_fd()),
        })
    }

    /// Reads the exit status once the supervisor is gone.
    pub(super) fn finish(&mut self) -> Result<i32, LauncherError> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        // The helper exits right after the supervisor; it is reaped now if
        // it already has, at destroy otherwise: the status does not depend
        // on it, and waiting here would delay every wait.
        if let Some(helper) = self.helper.as_mut()
            && !matches!(helper.try_wait(), Ok(None))
        {
            self.helper = None;
        }
        let status = read_status(&self.runtime)?;
        self.pidfd = None;
        self.status = Some(status);
        Ok(status)
    }
}

#[derive(Debug, Default)]
pub(super) struct Pending {
    pub(super) launching: HashSet<String>,
    pub(super) destroying: HashSet<String>,
    /// Ranges of top-level launches in flight.
    pub(super) user_ranges: BTreeMap<String, crate::isolation::id_map::IdRange>,
}

pub(super) fn in_subtree(key: &str, root: &str) -> bool {
    key == root || (key.starts_with(root) && key.as_bytes().get(root.len()) == Some(&b'.'))
}

/// Removes a key from the pending sets when a launch or destroy ends, on
/// every path.
pub(super) struct PendingGuard<'a> {
    pub(super) launcher: &'a Launcher,
    pub(super) key: String,
    pub(super) destroying: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        let mut pending = self.launcher.pending();
        if self.destroying {
            pending.destroying.remove(&self.key);
        } else {
            pending.launching.remove(&self.key);
            pending.user_ranges.remove(&self.key);
        }
        self.launcher.launched.notify_all();
    }
}

impl Launcher {
    pub(super) fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Container>> {
        reap_strays();
        self.containers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The sandbox a container was launched with, if known.
    pub fn sandbox(&self, id: &ContainerId) -> Option<PathBuf> {
        self.lock()
            .get(&container_id::to_dotted(id))
            .and_then(|c| c.sandbox.clone())
    }

    /// The `ContainerConfig` checkpointed at `id`'s launch (sandbox
    /// directory, user, container class), read from the launcher's own
    /// runtime directory. The one reader of that checkpoint outside
    /// recovery: the agent asks through the ABI and never opens the
    /// launcher's files (their layout is the launcher's to change).
    pub fn container_config(
        &self,
        id: &ContainerId,
    ) -> Result<crate::proto::mesos::slave::ContainerConfig, LauncherError> {
        let key = container_id::to_dotted(id);
        let runtime = self
            .lock()
            .get(&key)
            .map(|c| c.runtime.clone())
            .ok_or(LauncherError::Unknown(key))?;
        Ok(crate::checkpoint::read_message(
            &runtime.join(crate::isolation::paths::CONFIG_FILE),
        )?)
    }

    /// Mesos' `ContainerState` of every managed container, parents first:
    /// its id, supervisor pid (0 if it never started) and sandbox.
    pub fn states(&self) -> Vec<crate::proto::mesos::slave::ContainerState> {
        self.lock()
            .values()
            .map(|c| crate::proto::mesos::slave::ContainerState {
                container_id: c.id.clone(),
                pid: c.pid.map_or(0, |p| u64::try_from(p.pid).unwrap_or(0)),
                directory: c
                    .sandbox
                    .as_ref()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                ..Default::default()
            })
            .collect()
    }

    /// Every container this launcher manages (dotted form), parents first.
    pub fn containers(&self) -> Vec<ContainerId> {
        self.lock().values().map(|c| c.id.clone()).collect()
    }
}
