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
use super::user_ranges::{IDMAP_OWNER_FILE, USER_NAMESPACE_FILE};
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
            let present = Present::list(&runtime)?;
            containers.insert(key.clone(), recover_one(id, &runtime, &present, false)?);
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
            let present = Present::list(&runtime)?;
            if !present.termination && !containers.contains_key(&key) {
                let orphan = !known.contains(&container_id::to_dotted(container_id::root(&id)));
                containers.insert(key, recover_one(&id, &runtime, &present, orphan)?);
                if orphan {
                    orphans.push(id.clone());
                }
            }
            if !present.containers {
                continue;
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

/// Which checkpoints a container's runtime directory holds, from one
/// listing of it. Why: recovery asked for each by path (an `exists`, an
/// open of each optional file, a listing of `containers/`), most of them
/// absent; at 1,000 containers the path walks of those failed calls were
/// most of its 16 ms (issue 29 holds it to 10 ms).
#[derive(Debug, Default)]
struct Present {
    pid: bool,
    config: bool,
    termination: bool,
    user_namespace: bool,
    idmap_owner: bool,
    containers: bool,
}

impl Present {
    fn list(runtime: &Path) -> Result<Present, LauncherError> {
        let mut present = Present::default();
        let entries = match std::fs::read_dir(runtime) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(present),
            Err(e) => return Err(io("read directory", runtime)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io("read directory", runtime))?;
            let name = entry.file_name();
            let flag = match name.to_str() {
                Some(PID_FILE) => &mut present.pid,
                Some(CONFIG_FILE) => &mut present.config,
                Some(TERMINATION_FILE) => &mut present.termination,
                Some(USER_NAMESPACE_FILE) => &mut present.user_namespace,
                Some(IDMAP_OWNER_FILE) => &mut present.idmap_owner,
                Some(paths::CONTAINERS) => &mut present.containers,
                _ => continue,
            };
            *flag = true;
        }
        Ok(present)
    }
}

/// A container's record from its checkpoints (`present` says which exist);
/// `orphan`: the agent does not know it (destroying it counts in the
/// metrics' `orphans_destroyed`).
fn recover_one(
    id: &ContainerId,
    runtime: &Path,
    present: &Present,
    orphan: bool,
) -> Result<Container, LauncherError> {
    let pid_path = runtime.join(PID_FILE);
    let read_pid = if present.pid {
        std::fs::read_to_string(&pid_path)
    } else {
        Err(std::io::ErrorKind::NotFound.into())
    };
    let pid = match read_pid {
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
    let sandbox = present
        .config
        .then(|| checkpoint::read_message::<ContainerConfig>(&runtime.join(CONFIG_FILE)).ok())
        .flatten()
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
        user_range: if id.parent.is_none() && present.user_namespace {
            super::user_ranges::recover_range(runtime)?
        } else {
            None
        },
        idmap_owner: if present.idmap_owner {
            super::user_ranges::recover_owner(runtime)?
        } else {
            None
        },
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
