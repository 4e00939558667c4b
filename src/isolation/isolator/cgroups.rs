//! The `cgroups` isolator over [`Cgroups`]: one cgroup per container, nested
//! under its parent's in Mesos' `<root>/mesos/<child>` layout, with limits
//! from the container's resources and limits as Mesos' cgroups subsystems
//! compute them:
//!
//! * `cpus` request → `cpu.shares` (v2 `cpu.weight`); `limits["cpus"]` →
//!   CFS quota; without a limit, the request becomes the quota when
//!   `cgroups_enable_cfs` is set; an infinite limit means no quota.
//! * `mem` request → soft limit; `limits["mem"]` (or, without one, the
//!   request) → hard limit; an infinite limit means no hard limit.
//! * `cgroups_pids_max` → `pids.max` of every container with its own cgroup.
//!
//! `LinuxInfo.share_cgroups` (proto default **true**) keeps a nested
//! container in its parent's cgroups; it may then not carry resources. A
//! sharing container still has its own freezer (v2: own directory) so it
//! can be killed alone. `watch` turns an OOM kill into a limitation with
//! `REASON_CONTAINER_LIMITATION_MEMORY`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use super::error::{IsolatorError, Result};
use super::watch::LimitationSource;
use super::{Isolator, ResourceLimits, linux_info};
use crate::container_id::to_dotted;
use crate::isolation::cgroups::{Cgroups, ContainerProcesses, CreateOptions, Limits};
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerState};
use crate::proto::mesos::{ContainerId, Resource, ResourceStatistics};

/// Options of the cgroups isolator beyond the manager's own.
#[derive(Debug, Clone, Default)]
pub struct CgroupsOptions {
    /// Use the CPU request as a hard CFS quota when no limit is given
    /// (Mesos' `--cgroups_enable_cfs`).
    pub enable_cfs: bool,
    /// `pids.max` for every container with its own cgroup.
    pub pids_max: Option<u64>,
    /// Whether `isolate` also moves the process into our freezer cgroup.
    /// Turn off (cgroup v1 only) when Mesos' LinuxLauncher runs the
    /// containers: it tracks and kills them through its own freezer cgroup,
    /// which a process would otherwise leave (one cgroup per hierarchy).
    pub skip_freezer: bool,
}

#[derive(Debug, Clone, Copy)]
struct Info {
    share: bool,
    /// Recovered without cgroups of ours: the container ran before the
    /// isolator was enabled (or on another `cgroups_root`). Left alone:
    /// no watch, no limits, no statistics of ours (see `recover`).
    unmanaged: bool,
}

/// The `cgroups` isolator.
#[derive(Debug)]
pub struct CgroupsIsolator {
    cgroups: Arc<Cgroups>,
    options: CgroupsOptions,
    infos: Mutex<HashMap<String, Info>>,
}

const MEGABYTE: f64 = 1024.0 * 1024.0;

/// Sums the scalar resources named `name` (unreserved and reserved alike).
fn scalar(resources: &[Resource], name: &str) -> Option<f64> {
    let values: Vec<f64> = resources
        .iter()
        .filter(|r| r.name == name)
        .filter_map(|r| r.scalar.as_ref().map(|s| s.value))
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "megabytes are validated finite and positive before the cast"
)]
fn megabytes(mb: f64) -> u64 {
    (mb * MEGABYTE) as u64
}

impl CgroupsIsolator {
    /// An isolator over an existing manager (built by
    /// [`IsolatorParams::cgroups_manager`]; the launcher gets the same one
    /// from [`Composite::cgroups`]).
    ///
    /// [`IsolatorParams::cgroups_manager`]: super::IsolatorParams::cgroups_manager
    /// [`Composite::cgroups`]: super::Composite::cgroups
    /// `skip_freezer` needs cgroup v1.
    pub fn new(cgroups: Arc<Cgroups>, options: CgroupsOptions) -> Result<Self> {
        if options.skip_freezer && cgroups.is_v2() {
            return Err(IsolatorError::Parameter {
                key: "cgroups_skip_freezer".into(),
                expected: "'false' on cgroup v2 (a process has one cgroup there)",
                found: "true".into(),
            });
        }
        Ok(Self {
            cgroups,
            options,
            infos: Mutex::new(HashMap::new()),
        })
    }

    fn infos(&self) -> MutexGuard<'_, HashMap<String, Info>> {
        self.infos.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Mesos' mapping of requests and limits onto cgroup settings.
    pub fn limits_for(&self, requests: &[Resource], limits: &ResourceLimits) -> Result<Limits> {
        let bad = |what: &str, v: f64| {
            Err(IsolatorError::Invalid(format!(
                "{what} must be a positive number, got {v}"
            )))
        };
        let mut out = Limits {
            pids_max: self.options.pids_max,
            ..Limits::default()
        };
        if let Some(cpus) = scalar(requests, "cpus") {
            if !(cpus.is_finite() && cpus > 0.0) {
                return bad("resource 'cpus'", cpus);
            }
            out.cpu_request = Some(cpus);
            if self.options.enable_cfs {
                out.cpu_limit = Some(cpus);
            }
        }
        if let Some(limit) = limits.get("cpus").map(|s| s.value) {
            if limit.is_infinite() && limit > 0.0 {
                out.cpu_limit = None;
            } else if limit.is_finite() && limit > 0.0 {
                out.cpu_limit = Some(limit);
            } else {
                return bad("limit 'cpus'", limit);
            }
        }
        if let Some(mem) = scalar(requests, "mem") {
            if !(mem.is_finite() && mem > 0.0) {
                return bad("resource 'mem'", mem);
            }
            out.memory_soft_bytes = Some(megabytes(mem));
            out.memory_bytes = Some(megabytes(mem));
        }
        if let Some(limit) = limits.get("mem").map(|s| s.value) {
            if limit.is_infinite() && limit > 0.0 {
                out.memory_bytes = None;
            } else if limit.is_finite() && limit > 0.0 {
                out.memory_bytes = Some(megabytes(limit));
            } else {
                return bad("limit 'mem'", limit);
            }
        }
        Ok(out)
    }
}

impl CgroupsIsolator {
    /// `prepare` of a nested container whose parent is unmanaged (see
    /// `recover`). A sharing child lives in its parent's cgroups, so it
    /// takes its parent's info, as Mesos does: unmanaged too. A child
    /// that asks for cgroups of its own is refused rather than given the
    /// missing parent cgroups: those would be empty (the parent's
    /// processes are not in them, and moving them is not ours to do), the
    /// child's limits would not cover the parent, and at the next
    /// recovery the parent would look managed, with an OOM watch and
    /// statistics of a cgroup it is not in.
    fn prepare_in_unmanaged(
        &self,
        id: &ContainerId,
        parent: &ContainerId,
        share: bool,
    ) -> Result<Option<ContainerLaunchInfo>> {
        if !share {
            return Err(IsolatorError::Invalid(format!(
                "container '{}' asks for cgroups of its own (LinuxInfo.share_cgroups is \
                 false), but its parent '{}' has no cgroups of this isolator (it ran before \
                 the isolator was enabled); launch it sharing its parent's cgroups, or \
                 relaunch the parent",
                to_dotted(id),
                to_dotted(parent)
            )));
        }
        tracing::info!(
            container = %to_dotted(id),
            parent = %to_dotted(parent),
            "a container sharing the cgroups of an unmanaged parent: unmanaged too"
        );
        self.infos().insert(
            to_dotted(id),
            Info {
                share: true,
                unmanaged: true,
            },
        );
        crate::metrics::isolation().unmanaged_added();
        Ok(None)
    }
}

impl Isolator for CgroupsIsolator {
    serves_all_containers!("cgroups");

    /// Keeps the cgroups of `states` and `orphans` (orphans are destroyed
    /// by the agent, which then calls `cleanup`), and kills and removes
    /// every other container's cgroup under our root, as Mesos' cgroups
    /// isolator does with unknown orphans.
    ///
    /// A recovered container without a cgroup of ours was never prepared
    /// by this isolator: it was running when the isolator was enabled on
    /// the agent. Failing its `watch` would make the agent destroy a
    /// healthy container, and creating cgroups for it now would not move
    /// its processes; so it is left alone, logged, counted in
    /// `nestguard/isolation/unmanaged_containers`, and our other calls
    /// for it are no-ops (as Mesos' own cgroups isolator skips containers
    /// it has no info for).
    ///
    /// On cgroup v1 Mesos recovers each hierarchy on its own; a container
    /// with its own cgroups (not sharing) whose directory is missing in
    /// any used controller is also left alone, rather than managed with
    /// the missing controllers skipped: its processes stay in the
    /// directories that exist, so the limits already written there stay
    /// in force either way, while managing it would make `watch`,
    /// `update` and `usage` fail on the missing directory, and a failed
    /// `watch` makes the agent destroy the container. `cleanup` still
    /// removes the directories that exist.
    fn recover(&self, states: &[ContainerState], orphans: &[ContainerId]) -> Result<()> {
        let mut known: Vec<ContainerId> = Vec::new();
        let mut infos = self.infos();
        for state in states {
            let id = &state.container_id;
            let share = id.parent.is_some()
                && state
                    .container_info
                    .as_ref()
                    .and_then(|c| c.linux_info.as_ref())
                    .is_none_or(|l| l.share_cgroups());
            let unmanaged = if !self.cgroups.exists(id)? {
                tracing::warn!(
                    container = %to_dotted(id),
                    pid = state.pid,
                    "recovered a container this isolator never prepared (it ran before the \
                     isolator was enabled): left alone, without limits or OOM watch"
                );
                true
            } else if share {
                false
            } else {
                let missing = self.cgroups.missing_dirs(id)?;
                if !missing.is_empty() {
                    tracing::warn!(
                        container = %to_dotted(id),
                        pid = state.pid,
                        ?missing,
                        "recovered a container whose cgroup is missing in a used controller: \
                         left alone (limits already set stay in force; no updates, OOM watch \
                         or statistics)"
                    );
                }
                !missing.is_empty()
            };
            if unmanaged {
                crate::metrics::isolation().unmanaged_added();
            }
            infos.insert(to_dotted(id), Info { share, unmanaged });
            known.push(id.clone());
        }
        drop(infos);
        known.extend(orphans.iter().cloned());
        // A nested container is only known if its ancestors are: keep them.
        let mut with_ancestors: HashSet<String> = HashSet::new();
        let mut all = Vec::new();
        for id in &known {
            let mut cur = Some(id);
            while let Some(c) = cur {
                if with_ancestors.insert(to_dotted(c)) {
                    all.push(c.clone());
                }
                cur = c.parent.as_deref();
            }
        }
        let removed = self.cgroups.recover(&all)?;
        for id in removed {
            tracing::info!(container = %to_dotted(&id), "removed cgroups of an unknown container");
        }
        Ok(())
    }

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        let nested = id.parent.is_some();
        let share = nested && linux_info(config).is_none_or(|l| l.share_cgroups());
        let limits = if share {
            let has_resources = scalar(&config.resources, "cpus").is_some()
                || scalar(&config.resources, "mem").is_some()
                || !config.limits.is_empty();
            if has_resources {
                return Err(IsolatorError::Invalid(format!(
                    "container '{}' shares its parent's cgroups (LinuxInfo.share_cgroups \
                     is true, the default) and cannot specify resources or limits",
                    to_dotted(id)
                )));
            }
            Limits::default()
        } else {
            self.limits_for(&config.resources, &config.limits)?
        };
        if let Some(parent) = id.parent.as_deref()
            && self
                .infos()
                .get(&to_dotted(parent))
                .is_some_and(|i| i.unmanaged)
        {
            return self.prepare_in_unmanaged(id, parent, share);
        }
        self.cgroups.create(
            id,
            &CreateOptions {
                share_cgroups: share,
                limits,
            },
        )?;
        self.infos().insert(
            to_dotted(id),
            Info {
                share,
                unmanaged: false,
            },
        );
        Ok(None)
    }

    /// Moves `pid` into the container's cgroups (a no-op if a cgroup-aware
    /// launcher already placed it); with `skip_freezer`, into all but the
    /// freezer.
    fn isolate(&self, id: &ContainerId, pid: u32) -> Result<()> {
        if self
            .infos()
            .get(&to_dotted(id))
            .is_some_and(|i| i.unmanaged)
        {
            // No cgroup of ours to move it into: it stays in its parent's.
            return Ok(());
        }
        // Pid 0 names no process: writing it to `cgroup.procs` would move
        // the caller (the agent) into the container's cgroups. A launcher
        // bug, refused rather than taken as "already gone".
        if pid == 0 {
            return Err(IsolatorError::Invalid(format!(
                "cannot isolate pid 0 into container {}",
                to_dotted(id)
            )));
        }
        // A launcher that starts the command before `isolate` (ours does,
        // after placing it in these cgroups itself) may see it exit first:
        // a process that no longer exists has nothing left to isolate.
        if !process_exists(pid) {
            tracing::debug!(container = %to_dotted(id), pid, "process already gone; nothing to isolate");
            return Ok(());
        }
        if !self.options.skip_freezer {
            return match self.cgroups.add_pid(id, pid) {
                // Exited (possibly a zombie) between the check and the write.
                Err(crate::isolation::cgroups::CgroupError::Io { source, .. })
                    if source.raw_os_error() == Some(libc::ESRCH) =>
                {
                    Ok(())
                }
                other => Ok(other?),
            };
        }
        let freezer = self.cgroups.config().mount_root.join("freezer");
        for file in self.cgroups.procs_files(id)? {
            if file.starts_with(&freezer) {
                continue;
            }
            std::fs::write(&file, pid.to_string())
                .map_err(IsolatorError::io("write a pid into", &file))?;
        }
        Ok(())
    }

    /// An OOM watch on the container's own memory cgroup; none for a
    /// sharing container (an OOM there is its parent's limitation) or
    /// without a memory controller.
    fn watch(&self, id: &ContainerId) -> Result<Option<Box<dyn LimitationSource>>> {
        let info = self.infos().get(&to_dotted(id)).copied();
        let Some(info) = info else {
            return Err(IsolatorError::UnknownContainer(to_dotted(id)));
        };
        if info.share || info.unmanaged {
            return Ok(None);
        }
        match self.cgroups.watch_oom(id) {
            Ok(w) => Ok(Some(Box::new(w))),
            Err(
                e @ (crate::isolation::cgroups::CgroupError::ControllerNotMounted { .. }
                | crate::isolation::cgroups::CgroupError::ControllerUnavailable { .. }),
            ) => {
                tracing::warn!(container = %to_dotted(id), error = %e, "no OOM watch");
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn update(
        &self,
        id: &ContainerId,
        requests: &[Resource],
        limits: &ResourceLimits,
    ) -> Result<()> {
        let info = self.infos().get(&to_dotted(id)).copied();
        match info {
            None => Err(IsolatorError::UnknownContainer(to_dotted(id))),
            Some(Info {
                unmanaged: true, ..
            }) => {
                tracing::info!(container = %to_dotted(id), "update of a container this isolator never prepared: ignored");
                Ok(())
            }
            Some(Info { share: true, .. }) => Ok(()),
            Some(_) => {
                let limits = self.limits_for(requests, limits)?;
                Ok(self.cgroups.update(id, &limits)?)
            }
        }
    }

    fn usage(&self, id: &ContainerId) -> Result<ResourceStatistics> {
        if self
            .infos()
            .get(&to_dotted(id))
            .is_some_and(|i| i.unmanaged)
        {
            // Mesos merges isolators' statistics over its own, and the
            // merged `timestamp` (required) is what rates divide by.
            return Ok(ResourceStatistics {
                timestamp: crate::isolation::cgroups::now_secs(),
                ..ResourceStatistics::default()
            });
        }
        Ok(self.cgroups.usage(id)?)
    }

    /// Kills what is left and removes the cgroups of the container and
    /// everything nested in it; unknown containers are a no-op.
    fn cleanup(&self, id: &ContainerId) -> Result<()> {
        if self
            .infos()
            .remove(&to_dotted(id))
            .is_some_and(|i| i.unmanaged)
        {
            crate::metrics::isolation().unmanaged_removed();
        }
        if self.cgroups.exists(id)? {
            ContainerProcesses::destroy(self.cgroups.as_ref(), id)?;
        }
        Ok(())
    }
}

/// Whether `pid` still exists (signal 0).
fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    matches!(
        rustix::process::test_kill_process(pid),
        Ok(()) | Err(rustix::io::Errno::PERM)
    )
}

#[cfg(test)]
mod tests {
    //! Fixture tests: a temp dir stands in for a cgroup v1 mount root, so
    //! these run without root and without touching the host.

    use super::*;
    use crate::container_id::parse_dotted;
    use crate::proto::mesos::{ContainerInfo, LinuxInfo};

    fn fixture() -> (tempfile::TempDir, CgroupsIsolator) {
        let (dir, cgroups) = crate::isolation::cgroups::tests::fixture_v1();
        let iso = CgroupsIsolator::new(Arc::new(cgroups), CgroupsOptions::default()).unwrap();
        (dir, iso)
    }

    fn id(dotted: &str) -> ContainerId {
        parse_dotted(dotted).unwrap()
    }

    fn state(id: &ContainerId) -> ContainerState {
        ContainerState {
            container_id: id.clone(),
            pid: 1,
            ..Default::default()
        }
    }

    fn own_cgroups() -> ContainerConfig {
        ContainerConfig {
            container_info: Some(ContainerInfo {
                linux_info: Some(LinuxInfo {
                    share_cgroups: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn usage_of_an_unmanaged_container_has_a_timestamp() {
        let (_dir, iso) = fixture();
        let before = id("before");
        iso.recover(&[state(&before)], &[]).unwrap();
        let stats = iso.usage(&before).unwrap();
        assert!(stats.timestamp > 0.0, "{stats:?}");
        iso.cleanup(&before).unwrap();
    }

    #[test]
    fn a_child_of_an_unmanaged_parent_shares_its_state_or_is_refused() {
        let (_dir, iso) = fixture();
        let parent = id("before");
        iso.recover(&[state(&parent)], &[]).unwrap();

        let sharing = id("before.debug");
        iso.prepare(&sharing, &ContainerConfig::default()).unwrap();
        assert!(!iso.cgroups.exists(&sharing).unwrap(), "no cgroup made");
        assert!(iso.watch(&sharing).unwrap().is_none());
        iso.isolate(&sharing, std::process::id()).unwrap();
        assert!(iso.usage(&sharing).unwrap().timestamp > 0.0);
        iso.cleanup(&sharing).unwrap();

        let own = id("before.task");
        let err = iso.prepare(&own, &own_cgroups()).unwrap_err().to_string();
        assert!(
            err.contains("'before.task'") && err.contains("parent 'before'"),
            "{err}"
        );
        assert!(!iso.cgroups.exists(&own).unwrap());
        iso.cleanup(&parent).unwrap();
    }

    #[test]
    fn a_container_missing_a_used_controller_is_left_alone() {
        let (dir, iso) = fixture();
        let c = id("partial");
        iso.prepare(&c, &ContainerConfig::default()).unwrap();
        let memory = dir.path().join("memory/nestguard-fixture/partial");
        std::fs::remove_dir_all(&memory).unwrap();
        // A restarted agent: a new isolator over the same cgroups.
        let iso =
            CgroupsIsolator::new(Arc::clone(&iso.cgroups), CgroupsOptions::default()).unwrap();
        iso.recover(&[state(&c)], &[]).unwrap();
        assert!(iso.watch(&c).unwrap().is_none());
        iso.update(&c, &[], &ResourceLimits::default()).unwrap();
        assert!(iso.usage(&c).unwrap().timestamp > 0.0);
        assert!(
            dir.path().join("cpu/nestguard-fixture/partial").is_dir(),
            "kept, with its limits"
        );
    }
}
