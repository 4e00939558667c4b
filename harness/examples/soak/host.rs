//! What the host holds: processes, and the leak and orphan checks after each
//! round.

use super::*;

/// One process as /proc shows it.
pub(super) struct Proc {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) state: char,
    pub(super) exe: String,
}

pub(super) fn processes() -> HashMap<i32, Proc> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.insert(
            pid,
            Proc {
                pid,
                ppid,
                state,
                exe,
            },
        );
    }
    out
}

/// Whether `pid` descends from `ancestor` (not counting itself).
pub(super) fn descends(procs: &HashMap<i32, Proc>, pid: i32, ancestor: i32) -> bool {
    let mut p = procs.get(&pid).map(|p| p.ppid);
    let mut hops = 0;
    while let Some(pp) = p {
        if pp == ancestor {
            return true;
        }
        if pp <= 1 || hops > 64 {
            return false;
        }
        hops += 1;
        p = procs.get(&pp).map(|p| p.ppid);
    }
    false
}

/// What the host holds of the driver's agent beyond the agent itself.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Leaks {
    pub(super) processes: usize,
    pub(super) zombies: usize,
    pub(super) cgroups: usize,
    pub(super) mounts: usize,
    /// Agent fds above the baseline.
    pub(super) fds: usize,
    /// Checkpoint or sandbox entries of containers that are gone.
    pub(super) files: usize,
}

impl Leaks {
    pub(super) fn total(&self) -> usize {
        self.processes + self.zombies + self.cgroups + self.mounts + self.fds + self.files
    }

    pub(super) fn add(&mut self, o: &Leaks) {
        self.processes += o.processes;
        self.zombies += o.zombies;
        self.cgroups += o.cgroups;
        self.mounts += o.mounts;
        self.fds += o.fds;
        self.files += o.files;
    }
}

impl std::fmt::Display for Leaks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "processes {}, zombies {}, cgroups {}, mounts {}, fds {}, files {}",
            self.processes, self.zombies, self.cgroups, self.mounts, self.fds, self.files
        )
    }
}

/// The host's state once every container is gone: nothing of ours may be
/// left but the agent and its one spare launch helper. `fd_baseline` is a
/// fresh agent's fd count. Polls for 15 s before it counts a leak
/// (destruction finishes asynchronously).
pub(super) fn leaks(
    setup: &Setup,
    agent: Option<&AgentProc>,
    fd_baseline: usize,
) -> (Leaks, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        reap();
        let (found, details) = count_leaks(setup, agent, fd_baseline);
        if found.total() == 0 || Instant::now() > deadline {
            return (found, details);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(super) fn count_leaks(
    setup: &Setup,
    agent: Option<&AgentProc>,
    fd_baseline: usize,
) -> (Leaks, Vec<String>) {
    let mut l = Leaks::default();
    let mut details = Vec::new();
    let me = std::process::id() as i32;
    let agent_pid = agent.map(|a| a.pid.as_raw());
    let procs = processes();
    for p in procs.values() {
        if !descends(&procs, p.pid, me) || Some(p.pid) == agent_pid {
            continue;
        }
        if p.state == 'Z' {
            // The driver reaps its own children; a zombie below anyone
            // else is a parent that does not reap.
            if p.ppid != me {
                l.zombies += 1;
                details.push(format!("zombie {} (parent {})", p.pid, p.ppid));
            }
            continue;
        }
        let spare = Some(p.ppid) == agent_pid && p.exe.ends_with("/nestguard-launch");
        if !spare {
            l.processes += 1;
            details.push(format!("process {} {} (parent {})", p.pid, p.exe, p.ppid));
        }
    }
    for top in setup.cgroup_tops() {
        let dirs = tree(&top);
        // The root and its separator are the agent's (Mesos leaves them).
        for d in dirs.iter().skip(1) {
            if d.file_name().is_some_and(|n| n == SEPARATOR)
                && d.parent().is_some_and(|p| p.ends_with(&setup.cgroups_root))
            {
                continue;
            }
            l.cgroups += 1;
            details.push(format!("cgroup {}", d.display()));
        }
    }
    let work = setup.agent_work.to_string_lossy().into_owned();
    if let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in mountinfo.lines().filter(|l| l.contains(&work)) {
            l.mounts += 1;
            details.push(format!("mount {line}"));
        }
    }
    if let Some(a) = agent {
        let fds = a.fds();
        if fds > fd_baseline {
            l.fds = fds - fd_baseline;
            let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
            for e in std::fs::read_dir(format!("/proc/{}/fd", a.pid))
                .into_iter()
                .flatten()
                .flatten()
            {
                let target = std::fs::read_link(e.path())
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // `socket:[123]` → `socket`; paths as they are.
                let kind = target.split(":[").next().unwrap_or("").to_owned();
                *kinds.entry(kind).or_default() += 1;
            }
            details.push(format!(
                "agent fds {fds} (a fresh agent has {fd_baseline}): {kinds:?}"
            ));
        }
    }
    for dir in [
        "meta/standalone",
        "meta/launching",
        "meta/executors",
        "containers",
    ] {
        for name in entries(&setup.agent_work.join(dir)) {
            l.files += 1;
            details.push(format!("{dir}/{name}"));
        }
    }
    (l, details)
}

/// `top` and every directory below it, parents first.
pub(super) fn tree(top: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![top.to_path_buf()];
    let mut i = 0;
    while let Some(dir) = dirs.get(i) {
        if let Ok(children) = std::fs::read_dir(dir) {
            let more: Vec<PathBuf> = children
                .flatten()
                .map(|c| c.path())
                .filter(|p| p.is_dir())
                .collect();
            dirs.extend(more);
        }
        i += 1;
    }
    dirs
}

pub(super) fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Processes in the cgroups of containers the agent does not list as
/// running: orphans recovery should have destroyed.
pub(super) fn orphans(setup: &Setup, running: &BTreeMap<String, Option<String>>) -> Vec<String> {
    let mut out = Vec::new();
    let Some(top) = setup.container_cgroups() else {
        return out;
    };
    for d in tree(&top).iter().skip(1) {
        let Ok(rel) = d.strip_prefix(&top) else {
            continue;
        };
        let chain: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .filter(|c| c != SEPARATOR)
            .collect();
        if chain.is_empty() {
            continue;
        }
        let id = chain.join(".");
        let procs = std::fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
        let n = procs.lines().count();
        if n > 0 && !running.contains_key(&id) {
            out.push(id);
        }
    }
    out
}
