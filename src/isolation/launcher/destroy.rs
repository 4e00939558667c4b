//! Waiting for, signalling and destroying containers (children first).

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::killer;
use crate::checkpoint;
use crate::container_id;
use crate::isolation::paths::{self, TERMINATION_FILE};
use crate::isolation::process;
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::slave::ContainerTermination;

use super::{Container, Launcher, LauncherError, PendingGuard, UNKNOWN_STATUS, in_subtree, io};

/// How long destroy waits for a killed container to be gone.
const DESTROY_TIMEOUT: Duration = Duration::from_secs(30);

impl Launcher {
    /// The pidfd of a running container: readable once it exited. Borrowed
    /// from the launcher, valid until the container is destroyed. `None` if
    /// the container already exited.
    pub fn wait_fd(&self, id: &ContainerId) -> Result<Option<std::os::fd::RawFd>, LauncherError> {
        use std::os::fd::AsRawFd;
        let key = container_id::to_dotted(id);
        let containers = self.lock();
        let c = containers.get(&key).ok_or(LauncherError::Unknown(key))?;
        Ok(c.pidfd.as_ref().map(|f| f.as_raw_fd()))
    }

    /// Waits up to `timeout` (`None`: forever) for `id` to exit and returns
    /// its raw wait status (exit 1 → 256, SIGKILL → 9), `Ok(None)` on timeout.
    /// Works for containers recovered after a restart and for destroyed
    /// nested containers (from their `termination` checkpoint).
    pub fn wait(
        &self,
        id: &ContainerId,
        timeout: Option<Duration>,
    ) -> Result<Option<i32>, LauncherError> {
        container_id::validate(id)?;
        let key = container_id::to_dotted(id);
        let fd = {
            let mut containers = self.lock();
            let Some(c) = containers.get_mut(&key) else {
                drop(containers);
                return self.terminated_status(id).map(Some);
            };
            match c.pidfd.as_ref() {
                None => return c.finish().map(Some),
                Some(fd) => fd.try_clone().map_err(io("dup pidfd of", &c.runtime))?,
            }
        };
        if !process::wait_readable(fd.as_fd(), timeout)? {
            return Ok(None);
        }
        let mut containers = self.lock();
        match containers.get_mut(&key) {
            Some(c) => c.finish().map(Some),
            None => self.terminated_status(id).map(Some),
        }
    }

    fn terminated_status(&self, id: &ContainerId) -> Result<i32, LauncherError> {
        let key = container_id::to_dotted(id);
        if id.parent.is_none() {
            return Err(LauncherError::Unknown(key));
        }
        let path = paths::runtime_path(&self.options.runtime_dir, id).join(TERMINATION_FILE);
        if !path.exists() {
            return Err(LauncherError::Unknown(key));
        }
        let t: ContainerTermination = checkpoint::read_message(&path)?;
        Ok(t.status.unwrap_or(UNKNOWN_STATUS))
    }

    /// Sends `signal` to the container's supervisor, which forwards it to the
    /// command. Returns false if the container already exited.
    pub fn kill(&self, id: &ContainerId, signal: i32) -> Result<bool, LauncherError> {
        let signal = Signal::try_from(signal).map_err(|_| LauncherError::Signal(signal))?;
        let key = container_id::to_dotted(id);
        let containers = self.lock();
        let c = containers
            .get(&key)
            .ok_or_else(|| LauncherError::Unknown(key.clone()))?;
        let Some(target) = c.target().filter(|_| c.status.is_none()) else {
            return Ok(false);
        };
        if !process::is_running(target.pid, target.start_time)? {
            return Ok(false);
        }
        killer::kill_supervisor(&target, signal).map_err(|e| LauncherError::Kill(key, e))?;
        Ok(true)
    }

    /// Destroys `id` and everything nested in it, children first: kills every
    /// process, waits until they are gone, checkpoints `termination` for
    /// nested containers and removes a top-level container's runtime
    /// directory. Idempotent: returns the raw status of `id`, or `None` if
    /// it is unknown.
    pub fn destroy(&self, id: &ContainerId) -> Result<Option<i32>, LauncherError> {
        container_id::validate(id)?;
        let key = container_id::to_dotted(id);
        let prefix = format!("{key}.");
        self.block_launches_under(&key);
        let _pending = PendingGuard {
            launcher: self,
            key: key.clone(),
            destroying: true,
        };
        let mut containers = self.lock();
        let mut subtree: Vec<String> = containers
            .keys()
            .filter(|k| **k == key || k.starts_with(&prefix))
            .cloned()
            .collect();
        if subtree.is_empty() {
            drop(containers);
            return self.destroy_untracked(id);
        }
        // Deepest first: a parent's namespaces outlive its children.
        subtree.sort_by_key(|k| std::cmp::Reverse(k.matches('.').count()));
        // Signal every container first (children first) so the kernel tears
        // them down in parallel — all at once where the killer can (cgroups)
        // — then wait for each and record its status.
        let all_killed = self.signal_subtree(&containers, &key, &subtree)?;
        let mut result = None;
        for k in subtree {
            let Some(c) = containers.get_mut(&k) else {
                continue;
            };
            let status = self.destroy_one(&k, c, !all_killed)?;
            // A container known only from its cgroups has no runtime
            // directory to record anything in.
            if c.id.parent.is_some() && c.runtime.is_dir() {
                let termination = ContainerTermination {
                    status: Some(status),
                    message: Some("container destroyed".into()),
                    ..Default::default()
                };
                checkpoint::write_message(
                    &c.runtime.join(TERMINATION_FILE),
                    &termination,
                    checkpoint::Outlives::ProcessCrash,
                )?;
            }
            if k == key {
                result = Some(status);
            }
            if containers.remove(&k).is_some_and(|c| c.counted.orphan) {
                crate::metrics::isolation().orphan_destroyed();
            }
        }
        // The subtree's cgroups at once, children first, now that none of
        // its containers has a process left.
        if let Some(cgroups) = &self.cgroups {
            cgroups.destroy(id)?;
        }
        if id.parent.is_none() {
            let runtime = paths::runtime_path(&self.options.runtime_dir, id);
            match std::fs::remove_dir_all(&runtime) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("remove", &runtime)(e));
                }
                _ => {}
            }
        }
        tracing::debug!(container = %key, status = ?result, "container destroyed");
        Ok(result)
    }

    /// Blocks new launches under `key` (marking it as being destroyed: the
    /// caller's [`PendingGuard`] unmarks it), and lets those in flight
    /// finish so that they are destroyed too.
    fn block_launches_under(&self, key: &str) {
        let mut pending = self.pending();
        pending.destroying.insert(key.to_owned());
        while pending.launching.iter().any(|k| in_subtree(k, key)) {
            pending = self
                .launched
                .wait(pending)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Destroys `id`, which no running container's subtree holds: the
    /// status of a destroyed nested container from its `termination`
    /// checkpoint, else `None`.
    fn destroy_untracked(&self, id: &ContainerId) -> Result<Option<i32>, LauncherError> {
        match self.terminated_status(id) {
            Ok(s) => Ok(Some(s)),
            Err(LauncherError::Unknown(_)) => {
                if self.adopt_checkpointed(id)? {
                    // Checkpointed but never recovered: destroy it for
                    // real rather than dropping its checkpoints.
                    self.destroy(id).map(|_| None)
                } else {
                    Ok(None)
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Signals every container of `subtree`, in its order; true when the
    /// killer took the subtree of `key` at once (cgroups), so that no
    /// container needs a kill of its own.
    fn signal_subtree(
        &self,
        containers: &BTreeMap<String, Container>,
        key: &str,
        subtree: &[String],
    ) -> Result<bool, LauncherError> {
        let all_killed = match containers.get(key).and_then(Container::target) {
            Some(target) => self
                .killer
                .kill_subtree(&target)
                .map_err(|e| LauncherError::Kill(key.to_owned(), e))?,
            None => false,
        };
        for k in subtree.iter().filter(|_| !all_killed) {
            // Exited containers too: in a shared pid namespace, what the
            // command left behind lives on in its session.
            if let Some(c) = containers.get(k)
                && let Some(target) = c.target()
            {
                self.killer
                    .kill_all(&target)
                    .map_err(|e| LauncherError::Kill(k.clone(), e))?;
            }
        }
        Ok(all_killed)
    }

    /// Waits for one killed container to be gone and records its status;
    /// `kill`: make sure of the kill first (not needed after a subtree kill,
    /// which returns only once every process is gone).
    fn destroy_one(&self, key: &str, c: &mut Container, kill: bool) -> Result<i32, LauncherError> {
        if let Some(target) = c.target() {
            if kill {
                self.killer
                    .kill_all(&target)
                    .map_err(|e| LauncherError::Kill(key.to_owned(), e))?;
            }
            if let Some(fd) = c.pidfd.as_ref()
                && !process::wait_readable(fd.as_fd(), Some(DESTROY_TIMEOUT))?
            {
                return Err(LauncherError::Timeout(key.to_owned(), DESTROY_TIMEOUT));
            }
        }
        let status = c.finish()?;
        // The supervisor is gone, so its helper exits at once.
        if let Some(mut helper) = c.helper.take() {
            let _ = helper.wait();
        }
        Ok(status)
    }
}
