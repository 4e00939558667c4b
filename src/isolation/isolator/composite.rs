//! Drives a list of isolators the way Mesos' containerizer does
//! (src/slave/containerizer/mesos/containerizer.cpp): skip an isolator for
//! nested containers unless it supports nesting (and for standalone trees
//! unless it supports standalone), prepare in order and merge the launch
//! infos with Mesos' rules, isolate in parallel, clean up in reverse order.
//!
//! The composite is itself an [`Isolator`], so the C++ shim exposes one
//! `mesos::slave::Isolator` module for all of ours, and Mesos merges our
//! merged launch info with its built-in isolators' by the same rules.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use prost::Message;

use super::error::{IsolatorError, Result};
use super::exec_stage::ExecStage;
use super::watch::{LimitationSource, Watch};
use super::{Isolator, ResourceLimits};
use crate::container_id::{root, to_dotted};
use crate::isolation::cgroups::Cgroups;
use crate::proto::mesos::slave::{
    ContainerConfig, ContainerLaunchInfo, ContainerMountInfo, ContainerState,
};
use crate::proto::mesos::{ContainerId, ContainerStatus, Resource, ResourceStatistics};

/// Isolators in order, driven as one.
pub struct Composite {
    isolators: Vec<Arc<dyn Isolator>>,
    /// Root container (dotted) → standalone (no executor or task info).
    roots: Mutex<HashMap<String, bool>>,
    /// The cgroups manager of the `cgroups` isolator, for the launcher.
    cgroups: Option<Arc<Cgroups>>,
    /// Under Mesos' launcher: the stage that applies the defences.
    exec_stage: Option<ExecStage>,
    /// `namespaces/user`'s pool, for the launcher.
    user_namespaces: Option<crate::isolation::id_map::RangePool>,
}

impl std::fmt::Debug for Composite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Composite")
            .field("isolators", &self.names())
            .finish_non_exhaustive()
    }
}

/// Merges one isolator's launch info into `merged` (Mesos' rules): an
/// isolator must not set `rootfs` or `user`; at most one sets
/// `working_directory`, `effective_capabilities`, `bounding_capabilities`,
/// `rlimits` or `tty_slave_path`; everything else is protobuf `MergeFrom`
/// (repeated fields appended, set scalars replace).
pub fn merge_launch_info(
    merged: &mut ContainerLaunchInfo,
    info: &ContainerLaunchInfo,
) -> Result<()> {
    let conflict = |m: &str| Err(IsolatorError::LaunchInfoConflict(m.to_owned()));
    if info.rootfs.is_some() {
        return conflict("Isolator should not specify rootfs");
    }
    if info.user.is_some() {
        return conflict("Isolator should not specify user");
    }
    if info.working_directory.is_some() && merged.working_directory.is_some() {
        return conflict("Multiple isolators specify working directory");
    }
    if info.effective_capabilities.is_some() && merged.effective_capabilities.is_some() {
        return conflict("Multiple isolators specify effective capabilities");
    }
    if info.bounding_capabilities.is_some() && merged.bounding_capabilities.is_some() {
        return conflict("Multiple isolators specify bounding capabilities");
    }
    if info.rlimits.is_some() && merged.rlimits.is_some() {
        return conflict("Multiple isolators specify rlimits");
    }
    if info.tty_slave_path.is_some() && merged.tty_slave_path.is_some() {
        return conflict("Multiple isolators specify tty");
    }
    merge_message(merged, info)
}

/// Protobuf `MergeFrom` through the wire format (which defines it).
fn merge_message<M: Message>(into: &mut M, from: &M) -> Result<()> {
    into.merge(from.encode_to_vec().as_slice())
        .map_err(|e| IsolatorError::Invalid(format!("merging messages: {e}")))
}

/// After merging: namespaces and supplementary groups de-duplicated (sorted,
/// as Mesos' `std::set`); masked paths become mounts ([`mask_mounts`]), and
/// only when the container gets its own mount namespace — masking in a
/// shared one would hide the host's (or the parent's) `/proc` entries.
fn finish(merged: &mut ContainerLaunchInfo) {
    fn dedup<T: Ord + Copy>(v: &mut Vec<T>) {
        let set: BTreeSet<T> = v.iter().copied().collect();
        *v = set.into_iter().collect();
    }
    dedup(&mut merged.enter_namespaces);
    dedup(&mut merged.clone_namespaces);
    dedup(&mut merged.supplementary_groups);
    let mut seen = BTreeSet::new();
    let masked: Vec<String> = std::mem::take(&mut merged.masked_paths)
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .collect();
    if masked.is_empty() {
        return;
    }
    if !merged.clone_namespaces.contains(&libc::CLONE_NEWNS) {
        tracing::debug!(
            paths = masked.len(),
            "no own mount namespace: masked paths dropped"
        );
        return;
    }
    merged.mounts.extend(mask_mounts(&masked));
}

/// Masked paths as mounts, the way Mesos' launch helper masks them (a file
/// under a read-only bind of `/dev/null`, a directory under an empty
/// read-only tmpfs; a path that does not exist is skipped). Expressed as
/// `mounts` so every launcher that executes mounts masks them — nestguard's
/// launcher has no `masked_paths` support — and placed last, after any
/// `/proc` mount. Whether a path is a file or a directory is read on the
/// host (`/proc` and `/sys` entries look the same in the container).
pub fn mask_mounts(paths: &[String]) -> Vec<ContainerMountInfo> {
    let flags = |f: libc::c_ulong| u32::try_from(f).unwrap_or(0);
    let mut out = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => out.push(ContainerMountInfo {
                source: Some("tmpfs".into()),
                target: path.clone(),
                r#type: Some("tmpfs".into()),
                flags: Some(flags(libc::MS_RDONLY)),
                options: Some("size=0".into()),
            }),
            Ok(_) => {
                out.push(ContainerMountInfo {
                    source: Some("/dev/null".into()),
                    target: path.clone(),
                    r#type: None,
                    flags: Some(flags(libc::MS_BIND)),
                    options: None,
                });
                out.push(ContainerMountInfo {
                    source: None,
                    target: path.clone(),
                    r#type: None,
                    flags: Some(flags(libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY)),
                    options: None,
                });
            }
            Err(_) => tracing::debug!(path = %path, "masked path does not exist: skipped"),
        }
    }
    out
}

impl Composite {
    /// The isolators, in the order they prepare.
    pub fn new(isolators: Vec<Arc<dyn Isolator>>) -> Self {
        Self {
            isolators,
            roots: Mutex::new(HashMap::new()),
            cgroups: None,
            exec_stage: None,
            user_namespaces: None,
        }
    }

    /// The launcher built with this composite runs every pod in a user
    /// namespace mapped to a range of `pool` (`namespaces/user`).
    pub fn with_user_namespaces(
        mut self,
        pool: Option<crate::isolation::id_map::RangePool>,
    ) -> Self {
        self.user_namespaces = pool;
        self
    }

    /// `namespaces/user`'s pool, if listed.
    pub fn user_namespaces(&self) -> Option<crate::isolation::id_map::RangePool> {
        self.user_namespaces
    }

    /// Under Mesos' launcher: every prepared container's defences go
    /// through `stage` ([`ExecStage::wrap`]).
    pub fn with_exec_stage(mut self, stage: ExecStage) -> Self {
        self.exec_stage = Some(stage);
        self
    }

    /// Under Mesos' posix launcher, the container's `cgroup.procs` files for
    /// the wrapper to join (none without the `cgroups` isolator). A
    /// container without a cgroup of ours (nested in one nestguard did not
    /// start) is refused: it would stay in the agent's cgroup.
    fn cgroup_procs_for_posix(&self, stage: &ExecStage, id: &ContainerId) -> Result<Vec<PathBuf>> {
        match &self.cgroups {
            Some(cgroups) if stage.posix() => cgroups.procs_files(id).map_err(|e| {
                IsolatorError::Invalid(format!(
                    "container '{}': under Mesos' posix launcher it joins its cgroup itself, \
                     and it has none: {e}",
                    to_dotted(id)
                ))
            }),
            _ => Ok(Vec::new()),
        }
    }

    /// The cgroups manager the `cgroups` isolator uses, to plug into the
    /// launcher (`Launcher::with_cgroups`), so processes join their cgroups
    /// before they run and are killed through them.
    pub fn cgroups(&self) -> Option<Arc<Cgroups>> {
        self.cgroups.clone()
    }

    /// The isolators with the cgroups manager the `cgroups` isolator among
    /// them uses ([`IsolatorParams::cgroups_manager`]), fixed for the
    /// composite's life: the launcher gets the very manager the isolator has.
    ///
    /// [`IsolatorParams::cgroups_manager`]: super::IsolatorParams::cgroups_manager
    pub fn with_cgroups(isolators: Vec<Arc<dyn Isolator>>, cgroups: Option<Arc<Cgroups>>) -> Self {
        Self {
            cgroups,
            ..Self::new(isolators)
        }
    }

    /// The isolators' names in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.isolators.iter().map(|i| i.name()).collect()
    }

    /// The isolator named `name`, if configured.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Isolator>> {
        self.isolators.iter().find(|i| i.name() == name)
    }

    fn roots(&self) -> MutexGuard<'_, HashMap<String, bool>> {
        self.roots.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_standalone(&self, id: &ContainerId) -> bool {
        self.roots()
            .get(&to_dotted(root(id)))
            .copied()
            .unwrap_or(false)
    }

    /// Mesos' `isSupportedByIsolator`.
    fn supports(&self, isolator: &dyn Isolator, id: &ContainerId, standalone: bool) -> bool {
        (id.parent.is_none() || isolator.supports_nesting())
            && (!standalone || isolator.supports_standalone())
    }

    /// The isolators that handle `id`, in order.
    fn for_container(&self, id: &ContainerId) -> Vec<Arc<dyn Isolator>> {
        let standalone = self.is_standalone(id);
        self.isolators
            .iter()
            .filter(|i| self.supports(i.as_ref(), id, standalone))
            .cloned()
            .collect()
    }

    fn wrap(
        isolator: &dyn Isolator,
        phase: &'static str,
        id: &ContainerId,
    ) -> impl FnOnce(IsolatorError) -> IsolatorError {
        let name = isolator.name();
        let container = to_dotted(id);
        move |source| IsolatorError::Failed {
            isolator: name,
            phase,
            container,
            source: Box::new(source),
        }
    }
}

impl Isolator for Composite {
    serves_all_containers!("nestguard");

    fn recover(&self, states: &[ContainerState], orphans: &[ContainerId]) -> Result<()> {
        if let Some(stage) = &self.exec_stage {
            stage.recover(states);
        }
        {
            let mut roots = self.roots();
            for state in states {
                if state.container_id.parent.is_none() {
                    roots.insert(
                        to_dotted(&state.container_id),
                        state.executor_info.is_none(),
                    );
                }
            }
        }
        for isolator in &self.isolators {
            let states: Vec<ContainerState> = states
                .iter()
                .filter(|s| {
                    self.supports(
                        isolator.as_ref(),
                        &s.container_id,
                        self.is_standalone(&s.container_id),
                    )
                })
                .cloned()
                .collect();
            // Orphans' standalone-ness is unknown: nesting decides.
            let orphans: Vec<ContainerId> = orphans
                .iter()
                .filter(|o| o.parent.is_none() || isolator.supports_nesting())
                .cloned()
                .collect();
            isolator
                .recover(&states, &orphans)
                .map_err(|source| IsolatorError::Failed {
                    isolator: isolator.name(),
                    phase: "recover",
                    container: "*".to_owned(),
                    source: Box::new(source),
                })?;
        }
        Ok(())
    }

    /// Prepares with every isolator in order and returns the merged launch
    /// info (`None` when no isolator contributed). On failure, call
    /// [`Isolator::cleanup`] as Mesos does: isolators prepared so far undo
    /// their work there.
    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        crate::container_id::validate(id).map_err(|e| IsolatorError::Invalid(e.to_string()))?;
        if id.parent.is_none() {
            let standalone = config.executor_info.is_none() && config.task_info.is_none();
            self.roots().insert(to_dotted(id), standalone);
        }
        let mut merged: Option<ContainerLaunchInfo> = None;
        for isolator in self.for_container(id) {
            let info = isolator.prepare(id, config).map_err(Self::wrap(
                isolator.as_ref(),
                "prepare",
                id,
            ))?;
            if let Some(info) = info {
                let target = merged.get_or_insert_with(ContainerLaunchInfo::default);
                merge_launch_info(target, &info).map_err(Self::wrap(
                    isolator.as_ref(),
                    "prepare",
                    id,
                ))?;
            }
        }
        // The stage checks the isolators' mounts before the masked paths
        // (ours, onto /proc) join them.
        if let Some(stage) = &self.exec_stage {
            let info = merged.get_or_insert_with(ContainerLaunchInfo::default);
            stage.wrap(id, config, info, self.cgroup_procs_for_posix(stage, id)?)?;
        }
        if let Some(m) = merged.as_mut() {
            finish(m);
            if self.exec_stage.as_ref().is_some_and(ExecStage::posix) {
                // Mesos' posix launcher refuses namespaces: the wrapper makes
                // and enters those sealed in the plan.
                super::exec_stage_posix::for_posix_launcher(m);
            }
        }
        tracing::debug!(container = %to_dotted(id), "isolators prepared");
        Ok(merged)
    }

    /// Isolates with every isolator at once (one thread each, as Mesos'
    /// `await` over futures); the first failure is returned after all ended.
    fn isolate(&self, id: &ContainerId, pid: u32) -> Result<()> {
        if let Some(stage) = &self.exec_stage {
            stage.isolate(id, pid);
        }
        let isolators = self.for_container(id);
        let results: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = isolators
                .iter()
                .map(|isolator| {
                    scope.spawn(move || {
                        isolator.isolate(id, pid).map_err(Self::wrap(
                            isolator.as_ref(),
                            "isolate",
                            id,
                        ))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(IsolatorError::Invalid("an isolate thread panicked".into()))
                    })
                })
                .collect()
        });
        results.into_iter().collect()
    }

    fn watch(&self, id: &ContainerId) -> Result<Option<Box<dyn LimitationSource>>> {
        let watch = self.watch_all(id)?;
        Ok(Some(Box::new(watch)))
    }

    fn update(
        &self,
        id: &ContainerId,
        requests: &[Resource],
        limits: &ResourceLimits,
    ) -> Result<()> {
        for isolator in self.for_container(id) {
            isolator.update(id, requests, limits).map_err(Self::wrap(
                isolator.as_ref(),
                "update",
                id,
            ))?;
        }
        Ok(())
    }

    /// Every isolator's statistics merged (`MergeFrom`), stamped now.
    fn usage(&self, id: &ContainerId) -> Result<ResourceStatistics> {
        let mut out = ResourceStatistics::default();
        for isolator in self.for_container(id) {
            let part = isolator.usage(id).map_err(Self::wrap(
                isolator.as_ref(),
                "collect usage of",
                id,
            ))?;
            merge_message(&mut out, &part)?;
        }
        out.timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        Ok(out)
    }

    fn status(&self, id: &ContainerId) -> Result<ContainerStatus> {
        let mut out = ContainerStatus::default();
        for isolator in self.for_container(id) {
            let part = isolator.status(id).map_err(Self::wrap(
                isolator.as_ref(),
                "get the status of",
                id,
            ))?;
            merge_message(&mut out, &part)?;
        }
        Ok(out)
    }

    /// Cleans up in reverse order; every isolator runs even if one fails,
    /// and the first failure is returned.
    fn cleanup(&self, id: &ContainerId) -> Result<()> {
        let mut first = None;
        for isolator in self.for_container(id).iter().rev() {
            if let Err(e) = isolator.cleanup(id) {
                tracing::warn!(container = %to_dotted(id), isolator = isolator.name(), error = %e, "cleanup failed");
                first.get_or_insert(Self::wrap(isolator.as_ref(), "clean up", id)(e));
            }
        }
        if id.parent.is_none() {
            self.roots().remove(&to_dotted(id));
        }
        if let Some(stage) = &self.exec_stage {
            stage.cleanup(id);
        }
        first.map_or(Ok(()), Err)
    }
}

impl Composite {
    /// Mesos' `watch()` over every isolator, as one pollable [`Watch`].
    pub fn watch_all(&self, id: &ContainerId) -> Result<Watch> {
        let mut sources = Vec::new();
        for isolator in self.for_container(id) {
            if let Some(source) =
                isolator
                    .watch(id)
                    .map_err(Self::wrap(isolator.as_ref(), "watch", id))?
            {
                sources.push(source);
            }
        }
        Watch::new(sources)
    }
}

impl LimitationSource for Watch {
    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        // SAFETY: the epoll fd is owned by `self` and outlives the borrow.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(Watch::fd(self)) }
    }

    fn check(&mut self) -> Result<Option<crate::proto::mesos::slave::ContainerLimitation>> {
        Watch::check(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_id::parse_dotted;
    use crate::proto::mesos::{CapabilityInfo, ExecutorInfo, RLimitInfo};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// Records calls; `isolate` of the two `pair` isolators only returns
    /// once the other one has started (so it fails unless run in parallel).
    struct Probe {
        name: &'static str,
        nesting: bool,
        standalone: bool,
        log: Arc<Mutex<Vec<String>>>,
        started: Arc<[AtomicBool; 2]>,
        slot: usize,
    }

    impl Isolator for Probe {
        fn name(&self) -> &'static str {
            self.name
        }
        fn supports_nesting(&self) -> bool {
            self.nesting
        }
        fn supports_standalone(&self) -> bool {
            self.standalone
        }
        fn prepare(
            &self,
            id: &ContainerId,
            _config: &ContainerConfig,
        ) -> Result<Option<ContainerLaunchInfo>> {
            self.log
                .lock()
                .unwrap()
                .push(format!("prepare {} {}", self.name, to_dotted(id)));
            Ok(Some(ContainerLaunchInfo {
                clone_namespaces: vec![libc::CLONE_NEWNS],
                ..Default::default()
            }))
        }
        fn isolate(&self, _id: &ContainerId, _pid: u32) -> Result<()> {
            self.started[self.slot].store(true, Ordering::SeqCst);
            let other = &self.started[1 - self.slot];
            let deadline = Instant::now() + Duration::from_secs(10);
            while !other.load(Ordering::SeqCst) {
                if Instant::now() > deadline {
                    return Err(IsolatorError::Invalid("isolate ran alone".into()));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(())
        }
        fn cleanup(&self, id: &ContainerId) -> Result<()> {
            self.log
                .lock()
                .unwrap()
                .push(format!("cleanup {} {}", self.name, to_dotted(id)));
            Ok(())
        }
    }

    fn probes() -> (Composite, Arc<Mutex<Vec<String>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let started = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let make = |name, nesting, standalone, slot| -> Arc<dyn Isolator> {
            Arc::new(Probe {
                name,
                nesting,
                standalone,
                log: log.clone(),
                started: started.clone(),
                slot,
            })
        };
        let composite = Composite::new(vec![
            make("first", true, true, 0),
            make("flat", false, true, 0),
            make("last", true, false, 1),
        ]);
        (composite, log)
    }

    #[test]
    fn mesos_order_parallel_isolate_and_nesting_support() {
        let (c, log) = probes();
        let exec = parse_dotted("exec").unwrap();
        let task = parse_dotted("exec.task").unwrap();
        let executor = ContainerConfig {
            executor_info: Some(ExecutorInfo::default()),
            ..Default::default()
        };
        let info = c.prepare(&exec, &executor).unwrap().unwrap();
        assert_eq!(
            info.clone_namespaces,
            vec![libc::CLONE_NEWNS],
            "de-duplicated"
        );
        c.prepare(&task, &executor).unwrap();
        // `first` and `last` isolate in parallel (each waits for the other).
        c.isolate(&task, 1).unwrap();
        c.cleanup(&task).unwrap();
        c.cleanup(&exec).unwrap();
        c.cleanup(&parse_dotted("unknown").unwrap()).unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log[..9],
            [
                "prepare first exec",
                "prepare flat exec",
                "prepare last exec",
                // `flat` does not support nesting: skipped for the task.
                "prepare first exec.task",
                "prepare last exec.task",
                "cleanup last exec.task",
                "cleanup first exec.task",
                "cleanup last exec",
                "cleanup flat exec",
            ]
        );
    }

    #[test]
    fn standalone_trees_skip_isolators_without_standalone_support() {
        let (c, log) = probes();
        let solo = parse_dotted("solo").unwrap();
        c.prepare(&solo, &ContainerConfig::default()).unwrap();
        c.prepare(
            &parse_dotted("solo.child").unwrap(),
            &ContainerConfig::default(),
        )
        .unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log,
            [
                "prepare first solo",
                "prepare flat solo",
                "prepare first solo.child"
            ]
        );
    }

    #[test]
    fn merge_refuses_rootfs_user_and_second_owners() {
        let mut m = ContainerLaunchInfo::default();
        let rootfs = ContainerLaunchInfo {
            rootfs: Some("/x".into()),
            ..Default::default()
        };
        assert_eq!(
            merge_launch_info(&mut m, &rootfs).unwrap_err().to_string(),
            "Isolator should not specify rootfs"
        );
        let user = ContainerLaunchInfo {
            user: Some("nobody".into()),
            ..Default::default()
        };
        assert_eq!(
            merge_launch_info(&mut m, &user).unwrap_err().to_string(),
            "Isolator should not specify user"
        );
        for (info, text) in [
            (
                ContainerLaunchInfo {
                    working_directory: Some("/a".into()),
                    ..Default::default()
                },
                "Multiple isolators specify working directory",
            ),
            (
                ContainerLaunchInfo {
                    effective_capabilities: Some(CapabilityInfo::default()),
                    ..Default::default()
                },
                "Multiple isolators specify effective capabilities",
            ),
            (
                ContainerLaunchInfo {
                    rlimits: Some(RLimitInfo::default()),
                    ..Default::default()
                },
                "Multiple isolators specify rlimits",
            ),
            (
                ContainerLaunchInfo {
                    tty_slave_path: Some("/dev/pts/1".into()),
                    ..Default::default()
                },
                "Multiple isolators specify tty",
            ),
        ] {
            let mut m = ContainerLaunchInfo::default();
            merge_launch_info(&mut m, &info).unwrap();
            assert_eq!(
                merge_launch_info(&mut m, &info).unwrap_err().to_string(),
                text
            );
        }
    }

    #[test]
    fn namespaces_and_groups_are_deduplicated_and_masks_need_a_mount_namespace() {
        let mut m = ContainerLaunchInfo::default();
        for info in [
            ContainerLaunchInfo {
                enter_namespaces: vec![libc::CLONE_NEWNET, libc::CLONE_NEWPID],
                clone_namespaces: vec![libc::CLONE_NEWPID],
                supplementary_groups: vec![5, 3],
                masked_paths: vec!["/proc/keys".into()],
                ..Default::default()
            },
            ContainerLaunchInfo {
                enter_namespaces: vec![libc::CLONE_NEWPID],
                clone_namespaces: vec![libc::CLONE_NEWPID],
                supplementary_groups: vec![3],
                masked_paths: vec!["/proc/keys".into()],
                ..Default::default()
            },
        ] {
            merge_launch_info(&mut m, &info).unwrap();
        }
        let mut without_mnt = m.clone();
        finish(&mut without_mnt);
        assert_eq!(without_mnt.enter_namespaces.len(), 2);
        assert_eq!(without_mnt.clone_namespaces, vec![libc::CLONE_NEWPID]);
        assert_eq!(without_mnt.supplementary_groups, vec![3, 5]);
        assert!(without_mnt.masked_paths.is_empty() && without_mnt.mounts.is_empty());
        m.clone_namespaces.push(libc::CLONE_NEWNS);
        finish(&mut m);
        assert!(m.masked_paths.is_empty());
        assert_eq!(m.mounts.len(), 2, "{:?}", m.mounts);
        assert_eq!(m.mounts[0].source.as_deref(), Some("/dev/null"));
        assert_eq!(m.mounts[0].target, "/proc/keys");
    }
}
