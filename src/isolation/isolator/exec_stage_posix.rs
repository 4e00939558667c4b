//! The exec stage's part under Mesos' posix launcher: which namespaces and
//! cgroup the `mesos-containerizer` wrapper makes or joins for a container
//! (`exec_stage::posix_launcher` does it), sealed into the stage's plan.
//!
//! Why it keeps pids: the posix launcher enters no namespace, so a nested
//! container's wrapper joins its parent's (IPC shared by default, the pid
//! namespace with `share_pid_namespace` or in a debug session, network and
//! UTS) through the parent's process. Mesos tells an isolator each
//! container's pid (`isolate`, and `ContainerState.pid` on recovery); the
//! plan carries the parent's pid with its start time, so a pid reused by
//! another process is never joined. The mount namespace stays Mesos': its
//! helper enters it itself (`--namespace_mnt_target`), after `execve`, so no
//! tenant mount in it can cover a binary that runs as root before that.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use super::error::{IsolatorError, Result};
use crate::container_id::to_dotted;
use crate::isolation::exec_stage::PosixLaunch;
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::slave::{ContainerLaunchInfo, ContainerState};

/// The pid and start time of each container's first process, kept in
/// memory and in a root-only directory that does not outlive a reboot (with
/// the seal keys, under `/run`): after an agent restart only a process
/// whose start time is the one noted at `isolate` is the container's (its
/// pid may have been reused while the agent was down).
#[derive(Debug, Clone, Default)]
pub struct PosixPids {
    pids: Arc<Mutex<HashMap<String, (u32, u64)>>>,
    /// Where each container's `pid start_time` is kept (`None`: in memory).
    dir: Option<PathBuf>,
}

impl PosixPids {
    /// Kept in `dir` (made root-only) as well as in memory.
    pub fn in_dir(dir: PathBuf) -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        Ok(Self {
            pids: Arc::default(),
            dir: Some(dir),
        })
    }

    fn pids(&self) -> MutexGuard<'_, HashMap<String, (u32, u64)>> {
        self.pids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The file of a container (its dotted id: validated, so no `/`).
    fn file(&self, dotted: &str) -> Option<PathBuf> {
        let ok = !dotted.is_empty() && !dotted.starts_with('.') && !dotted.contains('/');
        self.dir.as_ref().filter(|_| ok).map(|d| d.join(dotted))
    }

    /// Remembers the process Mesos started for `id` (from `isolate`).
    pub fn note(&self, id: &ContainerId, pid: u32) {
        let Ok(raw) = i32::try_from(pid) else { return };
        if let Ok(Some(stat)) = crate::isolation::process::stat(raw) {
            let dotted = to_dotted(id);
            if let Some(file) = self.file(&dotted) {
                let text = format!("{pid} {}\n", stat.start_time);
                if let Err(e) = std::fs::write(&file, text) {
                    tracing::warn!(container = %dotted, error = %e, "cannot keep the container's process for recovery");
                }
            }
            self.pids().insert(dotted, (pid, stat.start_time));
        }
    }

    /// The recovered containers' processes: those still running with the
    /// start time noted at `isolate`. The others are not known, so nothing
    /// enters them (launches under them are refused, naming why).
    pub fn recover(&self, states: &[ContainerState]) {
        for state in states {
            let dotted = to_dotted(&state.container_id);
            let noted = self
                .file(&dotted)
                .and_then(|f| std::fs::read_to_string(f).ok())
                .and_then(|text| {
                    let mut fields = text.split_whitespace();
                    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
                });
            let alive = |(pid, start): (u32, u64)| {
                i32::try_from(pid)
                    .is_ok_and(|p| crate::isolation::process::is_running(p, start).unwrap_or(false))
            };
            match noted {
                Some(entry) if u64::from(entry.0) == state.pid && alive(entry) => {
                    self.pids().insert(dotted, entry);
                }
                _ => {
                    tracing::warn!(container = %dotted, pid = state.pid, "its process is not the one noted at launch: nothing will enter its namespaces")
                }
            }
        }
    }

    /// Forgets a container.
    pub fn forget(&self, id: &ContainerId) {
        let dotted = to_dotted(id);
        if let Some(file) = self.file(&dotted) {
            let _ = std::fs::remove_file(file);
        }
        self.pids().remove(&dotted);
    }

    /// What the wrapper does for `id`: clone the isolators'
    /// `clone_namespaces`, join the cgroup, and enter the parent's other
    /// namespaces (all but the mount one, Mesos' helper's).
    pub fn launch(
        &self,
        id: &ContainerId,
        info: &ContainerLaunchInfo,
        cgroup_procs: Vec<PathBuf>,
    ) -> Result<PosixLaunch> {
        let fold = |flags: &[i32]| flags.iter().fold(0, |all, ns| all | ns);
        let unshare = fold(&info.clone_namespaces);
        let enter = fold(&info.enter_namespaces) & !libc::CLONE_NEWNS;
        let mut launch = PosixLaunch {
            unshare,
            cgroup_procs,
            ..PosixLaunch::default()
        };
        if enter == 0 {
            return Ok(launch);
        }
        let parent = id.parent.as_deref().ok_or_else(|| {
            IsolatorError::Invalid(format!(
                "container '{}' enters namespaces but has no parent",
                to_dotted(id)
            ))
        })?;
        let Some((pid, start_time)) = self.pids().get(&to_dotted(parent)).copied() else {
            return Err(IsolatorError::Invalid(format!(
                "container '{}': under Mesos' posix launcher it joins its parent's namespaces \
                 through the parent's process, and the process of '{}' is not known",
                to_dotted(id),
                to_dotted(parent)
            )));
        };
        launch.enter = enter;
        launch.enter_pid = pid;
        launch.enter_start_time = start_time;
        Ok(launch)
    }
}

/// The launch info Mesos' posix launcher accepts: no namespace to clone,
/// none to enter but the mount one (which Mesos' containerizer hands to
/// its helper as `--namespace_mnt_target`, not to the launcher).
pub fn for_posix_launcher(info: &mut ContainerLaunchInfo) {
    info.clone_namespaces.clear();
    info.enter_namespaces.retain(|ns| *ns == libc::CLONE_NEWNS);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_id::parse_dotted;

    fn info(clone: &[i32], enter: &[i32]) -> ContainerLaunchInfo {
        ContainerLaunchInfo {
            clone_namespaces: clone.to_vec(),
            enter_namespaces: enter.to_vec(),
            ..ContainerLaunchInfo::default()
        }
    }

    #[test]
    fn a_nested_container_joins_its_parents_process_but_not_its_mounts() {
        let pids = PosixPids::default();
        let parent = parse_dotted("pod").unwrap();
        let child = parse_dotted("pod.task").unwrap();
        let nested = info(
            &[libc::CLONE_NEWPID, libc::CLONE_NEWNS],
            &[libc::CLONE_NEWPID, libc::CLONE_NEWIPC, libc::CLONE_NEWNS],
        );
        let err = pids.launch(&child, &nested, vec![]).unwrap_err();
        assert!(err.to_string().contains("not known"), "{err}");

        pids.note(&parent, std::process::id());
        let launch = pids.launch(&child, &nested, vec![]).unwrap();
        assert_eq!(launch.unshare, libc::CLONE_NEWPID | libc::CLONE_NEWNS);
        assert_eq!(launch.enter, libc::CLONE_NEWPID | libc::CLONE_NEWIPC);
        assert_eq!(launch.enter_pid, std::process::id());
        assert!(launch.enter_start_time > 0);

        let mut for_mesos = nested.clone();
        for_posix_launcher(&mut for_mesos);
        assert!(for_mesos.clone_namespaces.is_empty());
        assert_eq!(for_mesos.enter_namespaces, vec![libc::CLONE_NEWNS]);

        pids.forget(&parent);
        assert!(pids.launch(&child, &nested, vec![]).is_err());

        // Kept in a directory: a restarted agent knows the process only
        // if it is the one noted (pid and start time).
        let dir = tempfile::tempdir().unwrap();
        let kept = PosixPids::in_dir(dir.path().join("pids")).unwrap();
        kept.note(&parent, std::process::id());
        let state = |pid: u32| ContainerState {
            container_id: parent.clone(),
            pid: u64::from(pid),
            ..ContainerState::default()
        };
        let restarted = PosixPids::in_dir(dir.path().join("pids")).unwrap();
        restarted.recover(&[state(std::process::id())]);
        assert!(restarted.launch(&child, &nested, vec![]).is_ok());
        let other = PosixPids::in_dir(dir.path().join("pids")).unwrap();
        other.recover(&[state(1)]);
        assert!(
            other.launch(&child, &nested, vec![]).is_err(),
            "another pid"
        );
        std::fs::write(
            dir.path().join("pids/pod"),
            format!("{} 1\n", std::process::id()),
        )
        .unwrap();
        let stale = PosixPids::in_dir(dir.path().join("pids")).unwrap();
        stale.recover(&[state(std::process::id())]);
        assert!(
            stale.launch(&child, &nested, vec![]).is_err(),
            "another start time"
        );
        let top = pids.launch(&parent, &info(&[libc::CLONE_NEWNS], &[]), vec![]);
        assert_eq!(top.unwrap().enter, 0);
    }
}
