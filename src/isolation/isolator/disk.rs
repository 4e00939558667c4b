//! The `disk/du` isolator: a container's sandbox usage in
//! `ResourceStatistics.disk_used_bytes` (and its `disk` resource as
//! `disk_limit_bytes`; not enforced, as Mesos without
//! `--enforce_container_disk_quota`).
//!
//! Usage is the allocated size (`st_blocks`) of everything below the
//! sandbox, each inode counted once, without following symbolic links or
//! crossing into another file system, and without the container's volume
//! mount points (design §6.3.3.1: a shared volume is its owner's disk, not
//! every sharer's). Nested sandboxes (`containers/<child>`) count for their
//! parent too, as they sit on its disk, exactly as Mesos' `du` of an
//! executor sandbox. Walked in-process rather than by spawning `du`, so no
//! process is forked from a multi-threaded agent per sample.
//!
//! With an interval (`disk_watch_interval_secs`, the default under Mesos'
//! launcher, as Mesos' `--container_disk_watch_interval`), `usage` never
//! walks: a background thread of the isolator samples each sandbox once per
//! interval (a new container at once) and `usage` reports the last sample,
//! or no `disk_used_bytes` before the first one, as Mesos' `disk/du` does. A
//! walk of a large sandbox takes seconds; the host's thread that asked for
//! statistics (a Mesos agent's) must not wait for it. Without an interval
//! every `usage` call walks (`nestguard agent`'s default, whose statistics
//! are read on demand).

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Isolator;
use super::error::{IsolatorError, Result};
use super::volume::SandboxRegistry;
use crate::container_id::to_dotted;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerState};
use crate::proto::mesos::{ContainerId, ResourceStatistics};

/// The `disk/du` isolator.
#[derive(Debug)]
pub struct DiskIsolator {
    sandboxes: Arc<SandboxRegistry>,
    limits: Mutex<HashMap<String, u64>>,
    /// Present with an interval: usage comes from its samples.
    sampler: Option<Arc<Sampler>>,
}

/// The samples of every known container, refreshed by one thread (started
/// with the first container, ended when the isolator is dropped).
#[derive(Debug)]
struct Sampler {
    interval: Duration,
    state: Mutex<SamplerState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct SamplerState {
    /// By dotted container id: the id, when the next sample is due, the last
    /// sample.
    containers: HashMap<String, Sampled>,
    started: bool,
    stopped: bool,
}

#[derive(Debug)]
struct Sampled {
    id: ContainerId,
    due: Instant,
    used: Option<u64>,
}

impl Sampler {
    fn state(&self) -> MutexGuard<'_, SamplerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts sampling `id` (at once); starts the thread the first time.
    fn add(self: &Arc<Self>, id: &ContainerId, sandboxes: &Arc<SandboxRegistry>) {
        let mut state = self.state();
        state.containers.insert(
            to_dotted(id),
            Sampled {
                id: id.clone(),
                due: Instant::now(),
                used: None,
            },
        );
        if !state.started {
            state.started = true;
            let sampler = Arc::clone(self);
            let sandboxes = Arc::clone(sandboxes);
            let spawned = std::thread::Builder::new()
                .name("nestguard-du".into())
                .spawn(move || sampler.run(&sandboxes));
            if let Err(e) = spawned {
                // Usage then reports no disk figures; the container runs.
                state.started = false;
                tracing::warn!(error = %e, "cannot start the disk usage thread");
            }
        }
        drop(state);
        self.wake.notify_all();
    }

    fn remove(&self, id: &ContainerId) {
        self.state().containers.remove(&to_dotted(id));
    }

    fn used(&self, id: &ContainerId) -> Option<u64> {
        self.state()
            .containers
            .get(&to_dotted(id))
            .and_then(|s| s.used)
    }

    fn stop(&self) {
        self.state().stopped = true;
        self.wake.notify_all();
    }

    /// The thread: walks every due sandbox (outside the lock), then sleeps
    /// until the next one is due or a container is added.
    fn run(&self, sandboxes: &SandboxRegistry) {
        let mut state = self.state();
        loop {
            if state.stopped {
                return;
            }
            let now = Instant::now();
            let due: Vec<ContainerId> = state
                .containers
                .values()
                .filter(|s| s.due <= now)
                .map(|s| s.id.clone())
                .collect();
            if due.is_empty() {
                let next = state.containers.values().map(|s| s.due).min();
                let wait = next.map_or(self.interval, |d| d.saturating_duration_since(now));
                state = self
                    .wake
                    .wait_timeout(state, wait)
                    .map_or_else(|p| p.into_inner().0, |(g, _)| g);
                continue;
            }
            drop(state);
            let samples: Vec<(String, Option<u64>)> = due
                .iter()
                .map(|id| (to_dotted(id), sample(sandboxes, id)))
                .collect();
            state = self.state();
            let next = Instant::now() + self.interval;
            for (key, used) in samples {
                // Removed meanwhile (cleanup): the sample is dropped.
                if let Some(s) = state.containers.get_mut(&key) {
                    s.due = next;
                    if used.is_some() {
                        s.used = used;
                    }
                }
            }
        }
    }
}

/// One walk of a container's sandbox; a failure is logged and keeps the
/// previous sample.
fn sample(sandboxes: &SandboxRegistry, id: &ContainerId) -> Option<u64> {
    let sandbox = sandboxes.get(id)?;
    match disk_usage(&sandbox, &sandboxes.mount_points(id)) {
        Ok(used) => Some(used),
        Err(e) => {
            tracing::warn!(container = %to_dotted(id), error = %e, "disk usage sample failed");
            None
        }
    }
}

/// Bytes allocated below `root`, skipping `excluded` paths, symbolic links
/// and other file systems; hard links counted once.
pub fn disk_usage(root: &Path, excluded: &[PathBuf]) -> Result<u64> {
    let top = std::fs::symlink_metadata(root).map_err(IsolatorError::io("stat", root))?;
    let device = top.dev();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        if excluded.iter().any(|e| e == &path) {
            continue;
        }
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            // Removed while we walk: nothing to count.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(IsolatorError::io("stat", &path)(e)),
        };
        if meta.dev() != device {
            continue;
        }
        if seen.insert((meta.dev(), meta.ino())) {
            total = total.saturating_add(meta.blocks().saturating_mul(512));
        }
        if meta.is_dir() {
            let entries = match std::fs::read_dir(&path) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(IsolatorError::io("read directory", &path)(e)),
            };
            for entry in entries {
                let entry = entry.map_err(IsolatorError::io("read directory", &path))?;
                stack.push(entry.path());
            }
        }
    }
    Ok(total)
}

impl DiskIsolator {
    /// Reads sandboxes and mount points from `sandboxes` (filled by the
    /// filesystem and volume isolators, which must come before this one).
    /// `interval`: sample every sandbox in the background this often and
    /// answer `usage` from the samples; `None`: walk on every `usage`.
    pub fn new(sandboxes: Arc<SandboxRegistry>, interval: Option<Duration>) -> Self {
        Self {
            sandboxes,
            limits: Mutex::new(HashMap::new()),
            sampler: interval.map(|interval| {
                Arc::new(Sampler {
                    interval,
                    state: Mutex::new(SamplerState::default()),
                    wake: Condvar::new(),
                })
            }),
        }
    }

    fn limits(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        self.limits.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a finite positive number of megabytes"
)]
fn disk_limit(resources: &[crate::proto::mesos::Resource]) -> Option<u64> {
    let mb: f64 = resources
        .iter()
        .filter(|r| r.name == "disk")
        .filter_map(|r| r.scalar.as_ref().map(|s| s.value))
        .sum();
    (mb.is_finite() && mb > 0.0).then_some((mb * 1024.0 * 1024.0) as u64)
}

impl Drop for DiskIsolator {
    /// Ends the sampling thread (after the walk in progress, if any; it is
    /// not waited for).
    fn drop(&mut self) {
        if let Some(sampler) = &self.sampler {
            sampler.stop();
        }
    }
}

impl Isolator for DiskIsolator {
    serves_all_containers!("disk/du");

    fn recover(&self, states: &[ContainerState], _orphans: &[ContainerId]) -> Result<()> {
        self.sandboxes.insert_recovered(states);
        if let Some(sampler) = &self.sampler {
            for state in states {
                sampler.add(&state.container_id, &self.sandboxes);
            }
        }
        Ok(())
    }

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        if self.sandboxes.get(id).is_none() {
            self.sandboxes.insert(id, Path::new(&config.directory));
        }
        if let Some(sampler) = &self.sampler {
            sampler.add(id, &self.sandboxes);
        }
        if let Some(limit) = disk_limit(&config.resources) {
            self.limits().insert(to_dotted(id), limit);
        }
        Ok(None)
    }

    fn update(
        &self,
        id: &ContainerId,
        requests: &[crate::proto::mesos::Resource],
        _limits: &super::ResourceLimits,
    ) -> Result<()> {
        match disk_limit(requests) {
            Some(limit) => self.limits().insert(to_dotted(id), limit),
            None => self.limits().remove(&to_dotted(id)),
        };
        Ok(())
    }

    fn usage(&self, id: &ContainerId) -> Result<ResourceStatistics> {
        let Some(sandbox) = self.sandboxes.get(id) else {
            return Err(IsolatorError::UnknownContainer(to_dotted(id)));
        };
        let used = match &self.sampler {
            Some(sampler) => sampler.used(id),
            None => Some(disk_usage(&sandbox, &self.sandboxes.mount_points(id))?),
        };
        Ok(ResourceStatistics {
            disk_used_bytes: used,
            disk_limit_bytes: self.limits().get(&to_dotted(id)).copied(),
            ..ResourceStatistics::default()
        })
    }

    fn cleanup(&self, id: &ContainerId) -> Result<()> {
        self.limits().remove(&to_dotted(id));
        if let Some(sampler) = &self.sampler {
            sampler.remove(id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn du_counts_files_once_and_skips_excluded_paths_and_symlinks() {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-du-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        std::fs::write(d.join("a"), vec![1u8; 256 * 1024]).unwrap();
        std::fs::hard_link(d.join("a"), d.join("a-link")).unwrap();
        std::fs::create_dir(d.join("shared")).unwrap();
        std::fs::write(d.join("shared/big"), vec![1u8; 1024 * 1024]).unwrap();
        std::os::unix::fs::symlink("/usr", d.join("usr")).unwrap();
        let all = disk_usage(d, &[]).unwrap();
        let without = disk_usage(d, &[d.join("shared")]).unwrap();
        assert!(all >= 1024 * 1024 + 256 * 1024, "{all}");
        assert!((256 * 1024..512 * 1024).contains(&without), "{without}");
        assert!(all - without >= 1024 * 1024);
    }

    #[test]
    fn with_an_interval_usage_reports_the_background_sample_and_never_walks() {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-du-")
            .tempdir()
            .unwrap();
        let sandbox = dir.path().join("sandbox");
        std::fs::create_dir(&sandbox).unwrap();
        std::fs::write(sandbox.join("a"), vec![1u8; 256 * 1024]).unwrap();
        let registry = Arc::new(SandboxRegistry::default());
        // An hour: only the first sample (taken at once) can happen here.
        let iso = DiskIsolator::new(registry, Some(Duration::from_secs(3600)));
        let id = ContainerId {
            value: "du-sampled".into(),
            ..ContainerId::default()
        };
        let config = ContainerConfig {
            directory: sandbox.display().to_string(),
            ..ContainerConfig::default()
        };
        iso.prepare(&id, &config).unwrap();
        // The first sample comes from the thread, not from this call.
        let first = (0..200)
            .find_map(|_| {
                let used = iso.usage(&id).unwrap().disk_used_bytes;
                if used.is_none() {
                    std::thread::sleep(Duration::from_millis(25));
                }
                used
            })
            .expect("a first sample within 5 s");
        assert!(first >= 256 * 1024, "{first}");
        // More data: usage keeps the sample (no walk per call) until the
        // next interval.
        std::fs::write(sandbox.join("b"), vec![1u8; 1024 * 1024]).unwrap();
        assert_eq!(iso.usage(&id).unwrap().disk_used_bytes, Some(first));
        iso.cleanup(&id).unwrap();
        iso.sandboxes.remove(&id);
        assert!(iso.usage(&id).is_err());
    }
}
