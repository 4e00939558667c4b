//! The cgroups isolator end to end, as an agent drives it (root): prepare
//! → launch (processes join their cgroups first) → watch → isolate → wait →
//! destroy → cleanup. OOM kills become MEMORY limitations while siblings
//! live on; a CPU quota throttles; a pids limit holds; after a crash,
//! recover + cleanup leave no cgroup behind.

use crate::isolator_support;

use std::time::{Duration, Instant};

use isolator_support::*;
use nestguard::isolation::cgroups::Hierarchy;
use nestguard::isolation::isolator::{Composite, Isolator, IsolatorParams};
use nestguard::proto::mesos::task_status::Reason;

#[test]
fn an_oom_killed_sub_container_is_a_memory_limitation_and_its_siblings_live_on() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("oom", &[]);
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let (calm, _) = agent.launch("exec.calm", config("exec sleep 120"));
    let hog = id("exec.hog");
    let mut hog_config = own_cgroups(config("head -c 67108864 /dev/zero | tail > /dev/null"));
    hog_config.resources = vec![scalar("mem", 32.0), scalar("cpus", 0.5)];
    // Watch before the command runs, as Mesos does (the cgroup exists
    // after prepare; our harness launches right after).
    let (_, _pid) = agent.try_launch(&hog, hog_config).unwrap();
    let mut watch = agent.watch(&hog);
    let limitation = watch
        .wait(Some(Duration::from_secs(60)))
        .unwrap()
        .expect("an OOM limitation within 60 s");
    assert_eq!(
        limitation.reason,
        Some(Reason::ContainerLimitationMemory as i32)
    );
    assert!(
        limitation
            .message
            .as_deref()
            .unwrap_or("")
            .contains("Memory limit exceeded"),
        "{limitation:?}"
    );
    assert_eq!(limitation.resources[0].name, "mem");
    let termination = agent.destroy(&hog, Some(limitation));
    assert_eq!(
        termination.reason,
        Some(Reason::ContainerLimitationMemory as i32)
    );
    assert!(!agent.cg().exists(&hog).unwrap(), "hog's cgroup removed");

    // The sibling and the executor are untouched.
    assert_eq!(agent.wait(&calm, Duration::from_millis(200)), None);
    assert_eq!(agent.wait(&exec, Duration::from_millis(200)), None);
    let mut calm_watch = agent.watch(&calm);
    assert!(calm_watch.check().unwrap().is_none());
    let exec_termination = agent.destroy(&exec, None);
    assert_eq!(exec_termination.status, Some(9));
    assert!(agent.cg().scan().unwrap().is_empty());
}

/// An agent watches after the launch returns: a command OOM-killed before
/// the watch starts must still end as a MEMORY limitation (the watch
/// compares the cgroup's `oom_kill` counter with zero, not with its value
/// when the watch began; CI under load lost this race).
#[test]
fn an_oom_kill_before_the_watch_starts_is_still_reported() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("oomearly", &[]);
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let hog = id("exec.hog");
    let mut hog_config = own_cgroups(config("head -c 67108864 /dev/zero | tail > /dev/null"));
    hog_config.resources = vec![scalar("mem", 32.0), scalar("cpus", 0.5)];
    agent.try_launch(&hog, hog_config).unwrap();
    // The command is gone (killed) before anyone watches.
    assert!(
        agent.wait(&hog, Duration::from_secs(60)).is_some(),
        "the hog ended within 60 s"
    );
    let mut watch = agent.watch(&hog);
    let limitation = watch
        .wait(Some(Duration::from_secs(5)))
        .unwrap()
        .expect("the earlier OOM kill is reported");
    assert_eq!(
        limitation.reason,
        Some(Reason::ContainerLimitationMemory as i32)
    );
    agent.destroy(&hog, Some(limitation));
    agent.destroy(&exec, None);
    assert!(agent.cg().scan().unwrap().is_empty());
}

#[test]
fn a_cpu_quota_throttles_a_sub_container() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("cpu", &[]);
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let mut spin = own_cgroups(config("while :; do :; done & while :; do :; done"));
    spin.resources = vec![scalar("cpus", 0.2), scalar("mem", 64.0)];
    spin.limits.insert("cpus".into(), limit(0.2));
    let (task, _) = agent.launch("exec.spin", spin);
    let start = Instant::now();
    // The sleep is the measurement window, not a wait for a state: the
    // assertions compare the time used in it against the quota.
    std::thread::sleep(Duration::from_secs(2));
    let usage = agent.iso().usage(&task).unwrap();
    let elapsed = start.elapsed().as_secs_f64();
    assert_eq!(usage.cpus_limit, Some(0.2), "{usage:?}");
    assert!(usage.cpus_nr_throttled.unwrap() > 0, "{usage:?}");
    let used = usage.cpus_user_time_secs.unwrap() + usage.cpus_system_time_secs.unwrap();
    assert!(used <= 0.2 * elapsed + 0.15, "used {used}s in {elapsed}s");
    // disk/du reports the sandbox (stdout/stderr files at least exist).
    assert!(usage.disk_used_bytes.is_some(), "{usage:?}");
    assert_eq!(usage.mem_limit_bytes, Some(64 << 20), "{usage:?}");
    agent.destroy(&exec, None);
    assert!(agent.cg().scan().unwrap().is_empty());
}

#[test]
fn a_pids_limit_holds_in_a_sub_container() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("pids", &[("cgroups_pids_max", "8")]);
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    // Each started sleep records its number; the shell dies when fork fails.
    let (task, _) = agent.launch(
        "exec.forker",
        own_cgroups(config(
            "i=0; while [ $i -lt 30 ]; do sleep 60 & i=$((i+1)); echo $i > count; done; sleep 60",
        )),
    );
    let status = agent
        .wait(&task, Duration::from_secs(20))
        .expect("the shell gives up");
    assert_ne!(status, 0);
    let started: u32 = read(agent.sandbox(&task).join("count"))
        .trim()
        .parse()
        .unwrap();
    // 8 tasks in all: the supervisor and the shell are two of them.
    assert!((1..=6).contains(&started), "{started} sleeps started");
    let stderr = read(agent.sandbox(&task).join("stderr"));
    assert!(stderr.to_lowercase().contains("fork"), "stderr: {stderr}");
    // The executor, with the same limit, is unaffected.
    assert_eq!(agent.wait(&exec, Duration::from_millis(100)), None);
    agent.destroy(&exec, None);
}

/// Cgroups for `id` and nothing else: what a crash between an isolator's
/// prepare and the launch leaves.
fn bare_cgroup(agent: &Agent, id: &nestguard::proto::mesos::ContainerId) {
    agent
        .cg()
        .create(id, &nestguard::isolation::cgroups::CreateOptions::default())
        .unwrap();
}

#[test]
fn after_a_crash_recover_and_cleanup_leave_no_cgroup_behind() {
    if !root_or_skip() {
        return;
    }
    let mut agent = Agent::new("recover", &[]);
    let (exec, exec_pid) = agent.launch("exec", config("exec sleep 120"));
    let (task, task_pid) = agent.launch("exec.task", own_cgroups(config("exec sleep 120")));
    // A container whose checkpoints are lost: only its cgroup remains.
    let stray = id("stray");
    bare_cgroup(&agent, &stray);

    // Crash: nothing is cleaned up; a new agent comes up.
    agent.restart();
    let orphans = agent.l().recover(&[]).unwrap();
    assert!(orphans.iter().any(|o| o == &exec), "{orphans:?}");
    // The launcher finds it from its cgroups: an orphan to destroy.
    assert!(orphans.iter().any(|o| o == &stray), "{orphans:?}");
    // One that appears after the launcher's recover is the isolator's to
    // remove.
    let late = id("late");
    bare_cgroup(&agent, &late);
    agent.iso().recover(&[], &orphans).unwrap();
    assert!(
        !agent.cg().exists(&late).unwrap(),
        "unknown cgroup removed at recover"
    );
    assert!(
        agent.cg().exists(&task).unwrap(),
        "orphans are left for destroy"
    );
    // The agent destroys its orphans, then cleans up.
    agent.destroy(&exec, None);
    agent.destroy(&stray, None);
    assert!(
        agent.cg().scan().unwrap().is_empty(),
        "{:?}",
        agent.cg().scan()
    );
    for pid in [exec_pid, task_pid] {
        let stat = nestguard::isolation::process::stat(pid).unwrap();
        assert!(stat.is_none_or(|s| s.exited()), "pid {pid} survived");
    }
    // Cleanup of unknown containers is a no-op.
    agent.iso().cleanup(&id("never.seen")).unwrap();
    agent.iso().cleanup(&exec).unwrap();
}

#[test]
fn sub_containers_share_their_parents_cgroups_by_default() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("share", &[]);
    let mut exec_config = config("exec sleep 120");
    exec_config.resources = vec![scalar("mem", 64.0)];
    let (exec, _) = agent.launch("exec", exec_config);
    // No LinuxInfo: share_cgroups defaults to true.
    let (sharer, sharer_pid) = agent.launch("exec.sharer", config("exec sleep 120"));
    let cgroups = std::fs::read_to_string(format!("/proc/{sharer_pid}/cgroup")).unwrap();
    if agent.cg().is_v2() {
        // v2 (as upstream's cgroups2 isolator): a nested container always
        // gets a cgroup of its own, without limits, inside its parent's.
        let line = cgroups.lines().find(|l| l.starts_with("0::")).unwrap();
        assert!(
            line.ends_with("/exec/mesos/sharer/leaf"),
            "the sharer has its own cgroup below its parent's: {line}"
        );
        let own = agent.cg().container_dirs(&sharer).unwrap().remove(0);
        let limit = std::fs::read_to_string(own.join("memory.max")).unwrap_or("max\n".into());
        assert_eq!(
            limit, "max\n",
            "the sharer carries no memory limit of its own"
        );
    } else {
        let memory_cgroup = cgroups
            .lines()
            .find(|l| l.contains(":memory:"))
            .map(str::to_owned)
            .unwrap_or_default();
        assert!(
            memory_cgroup.ends_with("/exec"),
            "the sharer is in its parent's memory cgroup: {memory_cgroup}"
        );
    }
    // It is its parent's memory limit that applies. On v1 the sharer
    // reports the cgroup it shares; on v2, as upstream's cgroups2
    // isolator, it reports no limit of its own.
    let usage = agent.iso().usage(&sharer).unwrap();
    let expected = if agent.cg().is_v2() {
        None
    } else {
        Some(64 << 20)
    };
    assert_eq!(usage.mem_limit_bytes, expected);
    let parent = agent.iso().usage(&exec).unwrap();
    assert_eq!(parent.mem_limit_bytes, Some(64 << 20));
    // A sharing container cannot carry resources.
    let mut greedy = config("true");
    greedy.resources = vec![scalar("mem", 32.0)];
    let err = agent.try_launch(&id("exec.greedy"), greedy).unwrap_err();
    assert!(err.contains("share_cgroups"), "{err}");
    agent.destroy(&exec, None);
    assert!(agent.cg().scan().unwrap().is_empty());
}

/// Under Mesos' LinuxLauncher the process must stay in Mesos' freezer
/// cgroup: `cgroups_skip_freezer` joins only the resource controllers.
#[test]
fn isolate_can_leave_the_freezer_to_mesos_launcher() {
    if !root_or_skip() {
        return;
    }
    if nestguard::isolation::cgroups::detect().unwrap() == Hierarchy::Unified {
        // A process has one cgroup on v2: nothing to leave to anyone. The
        // parameter is refused, so the module does not load.
        let root = unique_root("skipfreezer");
        let params = IsolatorParams::parse([
            ("cgroups_root", root.as_str()),
            ("cgroups_skip_freezer", "true"),
            ("isolation", "cgroups"),
        ])
        .unwrap();
        let err = Composite::from_parameters(&params).unwrap_err().to_string();
        assert!(err.contains("cgroups_skip_freezer"), "{err}");
        return;
    }
    let agent = Agent::new(
        "skipfreezer",
        &[("cgroups_skip_freezer", "true"), ("isolation", "cgroups")],
    );
    let exec = id("exec");
    let mut c = config("true");
    c.directory = agent.dir.path().to_string_lossy().into_owned();
    c.resources = vec![scalar("mem", 64.0)];
    agent.iso().prepare(&exec, &c).unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    let placed = agent.iso().isolate(&exec, pid);
    let cgroups = read(format!("/proc/{pid}/cgroup"));
    let _ = child.kill();
    let _ = child.wait();
    placed.unwrap();
    let line = |controller: &str| {
        cgroups
            .lines()
            .find(|l| {
                l.split(':')
                    .nth(1)
                    .is_some_and(|c| c.split(',').any(|x| x == controller))
            })
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("memory").ends_with("/exec"), "{cgroups}");
    assert!(!line("freezer").ends_with("/exec"), "{cgroups}");
    agent.iso().cleanup(&exec).unwrap();
    assert!(agent.cg().scan().unwrap().is_empty());
}

/// Pid 0 names no process (`cgroup.procs` would read it as the writer, the
/// agent itself): isolate refuses it and the caller's cgroups stay as they were.
#[test]
fn isolate_refuses_pid_zero() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("pidzero", &[("isolation", "cgroups")]);
    let exec = id("exec");
    let mut c = config("true");
    c.directory = agent.dir.path().to_string_lossy().into_owned();
    c.resources = vec![scalar("mem", 64.0)];
    agent.iso().prepare(&exec, &c).unwrap();
    let before = read("/proc/self/cgroup");
    let err = agent.iso().isolate(&exec, 0).unwrap_err();
    assert!(err.to_string().contains("pid 0"), "{err}");
    assert_eq!(read("/proc/self/cgroup"), before);
    agent.iso().cleanup(&exec).unwrap();
    assert!(agent.cg().scan().unwrap().is_empty());
}

/// A child process killed (and reaped) when dropped, so that a failing
/// assertion does not leak it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Fix (c) of the real-Mesos run: the isolator enabled on an agent that
/// already runs containers. Recover hands it a container it never
/// prepared (no cgroup of ours): watch, update, usage and cleanup must
/// leave it alone instead of failing (a failed watch makes Mesos destroy
/// the container), and its process must live on. A nested container
/// sharing its cgroups is left alone too; one asking for cgroups of its
/// own is refused, naming the parent.
#[test]
fn a_container_running_before_the_isolator_was_enabled_is_left_alone() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("preexisting", &[]);
    let before = id("before");
    let child = KillOnDrop(
        std::process::Command::new("sleep")
            .arg("120")
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    let sandbox = agent.sandbox(&before);
    nestguard::isolation::sandbox::create(&sandbox, None).unwrap();
    let state = nestguard::proto::mesos::slave::ContainerState {
        container_id: before.clone(),
        pid: u64::from(pid),
        directory: sandbox.to_string_lossy().into_owned(),
        ..Default::default()
    };
    agent.iso().recover(&[state], &[]).unwrap();
    let unmanaged = nestguard::metrics::snapshot()
        .into_iter()
        .find(|s| s.name == "nestguard/isolation/unmanaged_containers")
        .map(|s| s.value);
    assert!(unmanaged >= Some(1.0), "{unmanaged:?}");
    let mut watch = agent.iso().watch_all(&before).unwrap();
    assert!(
        matches!(watch.check(), Ok(None)),
        "watch of an unprepared container"
    );
    agent
        .iso()
        .update(
            &before,
            &[scalar("mem", 64.0)],
            &nestguard::isolation::isolator::ResourceLimits::default(),
        )
        .unwrap();
    assert!(agent.iso().usage(&before).unwrap().timestamp > 0.0);

    // Prepared only: our launcher needs a container's own freezer cgroup.
    let prepare = |child: &str, mut c: nestguard::proto::mesos::slave::ContainerConfig| {
        let child = id(child);
        let sandbox = agent.sandbox(&child);
        nestguard::isolation::sandbox::create(&sandbox, None).unwrap();
        c.directory = sandbox.to_string_lossy().into_owned();
        let prepared = agent.iso().prepare(&child, &c).map(|_| ());
        let made = agent.cg().exists(&child).unwrap();
        agent.iso().cleanup(&child).unwrap();
        assert!(!made, "cgroups made for {child:?}");
        prepared
    };
    prepare("before.debug", config("true")).unwrap();
    let err = prepare("before.task", own_cgroups(config("true")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("parent 'before'"), "{err}");

    agent.iso().cleanup(&before).unwrap();
    let alive = nestguard::isolation::process::stat(i32::try_from(pid).unwrap())
        .unwrap()
        .is_some_and(|s| !s.exited());
    assert!(alive, "the container's process was killed");
    assert!(
        !agent.cg().exists(&before).unwrap(),
        "cgroups were created for a container never prepared"
    );
    assert!(agent.cg().scan().unwrap().is_empty());
}

/// A container recovered with our tracking cgroup but without its
/// directory in another used controller (v1) is left alone instead of
/// failing watch, and cleanup still removes what exists.
#[test]
fn a_container_missing_a_controller_directory_is_left_alone_and_cleaned_up() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("partial", &[]);
    if agent.cg().is_v2() {
        return;
    }
    let partial = id("partial");
    let sandbox = agent.sandbox(&partial);
    nestguard::isolation::sandbox::create(&sandbox, None).unwrap();
    let mut c = config("true");
    c.directory = sandbox.to_string_lossy().into_owned();
    c.resources = vec![scalar("mem", 64.0)];
    agent.iso().prepare(&partial, &c).unwrap();
    let memory = agent
        .cg()
        .container_dirs(&partial)
        .unwrap()
        .into_iter()
        .find(|d| d.components().any(|p| p.as_os_str() == "memory"))
        .expect("a memory cgroup");
    std::fs::remove_dir(&memory).unwrap();
    let state = nestguard::proto::mesos::slave::ContainerState {
        container_id: partial.clone(),
        pid: u64::from(std::process::id()),
        directory: c.directory.clone(),
        ..Default::default()
    };
    agent.iso().recover(&[state], &[]).unwrap();
    let mut watch = agent.iso().watch_all(&partial).unwrap();
    assert!(matches!(watch.check(), Ok(None)));
    assert!(agent.iso().usage(&partial).unwrap().timestamp > 0.0);
    agent.iso().cleanup(&partial).unwrap();
    assert!(agent.cg().scan().unwrap().is_empty());
}
