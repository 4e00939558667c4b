//! Rebuilding the container tree after a restart, from the runtime
//! directory and the cgroups.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::checkpoint;
use crate::container_id;
use crate::isolation::channel;
use crate::isolation::paths::{self, CONFIG_FILE, PID_FILE, TERMINATION_FILE};
use crate::isolation::process;
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::slave::ContainerConfig;

use super::tree::Counted;
use super::{Container, Launcher, LauncherError, io};

impl Launcher {
    /// Takes over a top-level container that has checkpoints but is not
    /// managed (recover was not called for it), with everything under it.
    /// Returns false if there is nothing to take over.
    pub(super) fn adopt_checkpointed(&self, id: &ContainerId) -> Result<bool, LauncherError> {
        let runtime = paths::runtime_path(&self.options.runtime_dir, id);
        if id.parent.is_some() || !runtime.is_dir() {
            return Ok(false);
        }
        let key = container_id::to_dotted(id);
        let mut containers = self.lock();
        if !containers.contains_key(&key) {
            containers.insert(key.clone(), recover_one(id, &runtime, false)?);
        }
        let known = HashSet::from([key]);
        let mut orphans = Vec::new();
        self.recover_dir(
            &runtime.join(paths::CONTAINERS),
            Some(id),
            &known,
            &mut containers,
            &mut orphans,
        )?;
        Ok(true)
    }

    /// Rebuilds the container tree from the runtime directory (and, with
    /// cgroups, from the containers that have cgroups) after a restart.
    /// `known` are the containers the caller (the agent) knows; every
    /// container whose root is not among them is an orphan, and so is every
    /// container that has cgroups but no checkpoints: it is managed like any
    /// other (so it can be destroyed) and returned. Containers that exited
    /// while nobody watched keep their checkpointed status.
    pub fn recover(&self, known: &[ContainerId]) -> Result<Vec<ContainerId>, LauncherError> {
        let known: HashSet<String> = known.iter().map(container_id::to_dotted).collect();
        let mut containers = self.lock();
        let mut orphans = Vec::new();
        let root = self.options.runtime_dir.join(paths::CONTAINERS);
        self.recover_dir(&root, None, &known, &mut containers, &mut orphans)?;
        self.recover_cgroups(&mut containers, &mut orphans)?;
        tracing::info!(
            containers = containers.len(),
            orphans = orphans.len(),
            "launcher recovered"
        );
        crate::metrics::isolation().recovered();
        Ok(orphans)
    }

    /// Containers that have cgroups but no checkpoints: the agent stopped
    /// between creating a container's cgroups and checkpointing its launch,
    /// or while destroying it. What may run in them was never reported as
    /// running, so they are orphans (destroyed through their cgroups, as
    /// Mesos' launcher does with freezer cgroups it does not know).
    fn recover_cgroups(
        &self,
        containers: &mut BTreeMap<String, Container>,
        orphans: &mut Vec<ContainerId>,
    ) -> Result<(), LauncherError> {
        let Some(cgroups) = &self.cgroups else {
            return Ok(());
        };
        // Cgroups in a root another agent owns are that agent's containers,
        // not orphans: refuse (naming the owner) rather than destroy them.
        let _claim = cgroups.claim_for_recovery()?;
        for id in cgroups.scan()? {
            let key = container_id::to_dotted(&id);
            if containers.contains_key(&key) {
                continue;
            }
            tracing::warn!(container = %key, "cgroups without checkpoints: orphan");
            containers.insert(
                key,
                Container {
                    runtime: paths::runtime_path(&self.options.runtime_dir, &id),
                    id: id.clone(),
                    sandbox: None,
                    pid: None,
                    pidfd: None,
                    helper: None,
                    status: None,
                    counted: Counted::new(true),
                    user_range: None,
                    idmap_owner: None,
                },
            );
            orphans.push(id);
        }
        Ok(())
    }

    fn recover_dir(
        &self,
        dir: &Path,
        parent: Option<&ContainerId>,
        known: &HashSet<String>,
        containers: &mut BTreeMap<String, Container>,
        orphans: &mut Vec<ContainerId>,
    ) -> Result<(), LauncherError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io("read directory", dir)(e)),
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        for name in names {
            let id = ContainerId {
                value: name,
                parent: parent.map(|p| Box::new(p.clone())),
            };
            container_id::validate(&id)?;
            let key = container_id::to_dotted(&id);
            let runtime = dir.join(&id.value);
            let finished = runtime.join(TERMINATION_FILE).exists();
            if !finished && !containers.contains_key(&key) {
                let orphan = !known.contains(&container_id::to_dotted(container_id::root(&id)));
                containers.insert(key, recover_one(&id, &runtime, orphan)?);
                if orphan {
                    orphans.push(id.clone());
                }
            }
            self.recover_dir(
                &runtime.join(paths::CONTAINERS),
                Some(&id),
                known,
                containers,
                orphans,
            )?;
        }
        Ok(())
    }
}

/// A container's record from its checkpoints; `orphan`: the agent does not
/// know it (destroying it counts in the metrics' `orphans_destroyed`).
fn recover_one(id: &ContainerId, runtime: &Path, orphan: bool) -> Result<Container, LauncherError> {
    let pid_path = runtime.join(PID_FILE);
    let pid = match std::fs::read_to_string(&pid_path) {
        Ok(text) if text.is_empty() => empty_is_gone(id),
        Ok(text) => Some(channel::parse_pid_file(&text, pid_path.clone())?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("read", &pid_path)(e)),
    };
    // A pidfd only for the very process that was checkpointed: same pid and
    // start time, checked after opening so the fd cannot name a newcomer.
    let pidfd = pid.and_then(|r| {
        process::pidfd_open(r.pid)
            .ok()
            .filter(|_| process::is_running(r.pid, r.start_time).unwrap_or(false))
    });
    let sandbox = checkpoint::read_message::<ContainerConfig>(&runtime.join(CONFIG_FILE))
        .ok()
        .map(|c| PathBuf::from(c.directory));
    Ok(Container {
        id: id.clone(),
        runtime: runtime.to_path_buf(),
        sandbox,
        pid,
        pidfd,
        helper: None,
        status: None,
        counted: Counted::new(orphan),
        user_range: if id.parent.is_none() {
            super::user_ranges::recover_range(runtime)?
        } else {
            None
        },
        idmap_owner: super::user_ranges::recover_owner(runtime)?,
    })
}

/// An empty `pid` checkpoint: what a host crash can leave of one written
/// unflushed and renamed into place
/// ([`crate::checkpoint::Outlives::ProcessCrash`]; ext4 allocates the data
/// later than the name). A host crash ended the container, so it is
/// recovered as one whose supervisor is gone (status unknown; destroy still
/// empties its cgroups) instead of stopping the whole recovery. Any other
/// unparsable content is an error naming the file, never a guess.
fn empty_is_gone(id: &ContainerId) -> Option<channel::PidRecord> {
    tracing::warn!(container = %container_id::to_dotted(id), "empty pid checkpoint (a host crash?): recovered as a container whose supervisor is gone");
    None
}
