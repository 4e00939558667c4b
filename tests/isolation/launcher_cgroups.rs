//! The launcher with the cgroups manager plugged in (root): every process of
//! a container, including one that escapes the session, is in its cgroup and
//! dies with it; destroy leaves no cgroup behind.

use crate::launcher_support;

use std::sync::Arc;

use launcher_support::*;
use nestguard::container_id::parse_dotted;
use nestguard::isolation::cgroups::{Cgroups, CgroupsConfig, ContainerProcesses, CreateOptions};
use nestguard::isolation::{Launcher, Mode, process};

struct CgroupsGuard(Arc<Cgroups>);

impl Drop for CgroupsGuard {
    fn drop(&mut self) {
        if let Err(e) = self.0.destroy_all() {
            eprintln!("cgroup cleanup failed: {e}");
        }
    }
}

/// A launcher fixture over this test's own cgroups root (removed with
/// everything in it on drop); `None` when not root (and not in CI).
fn setup(prefix: &str) -> Option<(Arc<Cgroups>, CgroupsGuard, Fixture)> {
    if !root_or_skip() {
        return None;
    }
    let cg = Arc::new(
        Cgroups::new(CgroupsConfig {
            cgroups_root: format!("{prefix}-{}", std::process::id()).into(),
            ..CgroupsConfig::default()
        })
        .unwrap(),
    );
    let mut f = Fixture::new(Mode::Linux);
    f.launcher = Some(Launcher::with_cgroups(f.options(), cg.clone()).unwrap());
    Some((cg.clone(), CgroupsGuard(cg), f))
}

#[test]
fn cgroup_killer_catches_escaped_processes_and_removes_cgroups() {
    let Some((cg, _guard, f)) = setup("nestguard-launcher-test") else {
        return;
    };

    let exec = parse_dotted("nestguard-cg").unwrap();
    let task = parse_dotted("nestguard-cg.task").unwrap();
    cg.create(&exec, &CreateOptions::default()).unwrap();
    cg.create(&task, &CreateOptions::default()).unwrap();
    let exec_pid = f
        .l()
        .launch(&exec, &executor("sleep 100"), None, &f.sandbox(&exec))
        .unwrap();
    // The task shares the pid namespace and starts a process in a new
    // session: only the cgroup still knows it belongs to the container.
    let shared = nestguard::proto::mesos::ContainerInfo {
        linux_info: Some(nestguard::proto::mesos::LinuxInfo {
            share_pid_namespace: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    let task_pid = f
        .l()
        .launch(
            &task,
            &shell("setsid sleep 100 & sleep 100"),
            Some(&shared),
            &f.sandbox(&task),
        )
        .unwrap();
    let sessionless_sleep = || {
        cg.subtree_pids(&task)
            .unwrap()
            .into_iter()
            .filter(|p| {
                process::stat(*p as i32)
                    .unwrap()
                    .is_some_and(|s| s.session != task_pid)
            })
            .any(|p| read(format!("/proc/{p}/comm")).trim() == "sleep")
    };
    wait_until(
        "the task's setsid sleep to start",
        std::time::Duration::from_secs(10),
        sessionless_sleep,
    );
    let pids = cg.subtree_pids(&exec).unwrap();
    assert!(
        pids.contains(&(exec_pid as u32)) && pids.contains(&(task_pid as u32)),
        "{pids:?}"
    );
    let escaped: Vec<u32> = cg
        .subtree_pids(&task)
        .unwrap()
        .into_iter()
        .filter(|p| {
            process::stat(*p as i32)
                .unwrap()
                .is_some_and(|s| s.session != task_pid)
        })
        .filter(|p| read(format!("/proc/{p}/comm")).trim() == "sleep")
        .collect();
    assert_eq!(escaped.len(), 1, "one sleep left the session: {escaped:?}");

    assert_eq!(f.l().destroy(&exec).unwrap(), Some(9));
    for p in pids {
        assert!(
            process::stat(p as i32).unwrap().is_none_or(|s| s.exited()),
            "pid {p} survived"
        );
    }
    assert!(
        !cg.exists(&exec).unwrap() && !cg.exists(&task).unwrap(),
        "cgroups removed"
    );
}

/// The agent stopped after creating a container's cgroups and before its
/// launch was checkpointed, with a process already in them: recover finds it
/// from the cgroups alone, as an orphan, and destroying it kills that process
/// and removes the cgroups.
#[test]
fn recover_finds_containers_known_only_from_their_cgroups() {
    let Some((cg, _guard, mut f)) = setup("nestguard-launcher-recover") else {
        return;
    };

    let exec = parse_dotted("nestguard-cgr").unwrap();
    let lost = parse_dotted("nestguard-cgr.lost").unwrap();
    let stray_top = parse_dotted("nestguard-cgr-top").unwrap();
    cg.create(&exec, &CreateOptions::default()).unwrap();
    f.l()
        .launch(&exec, &executor("sleep 100"), None, &f.sandbox(&exec))
        .unwrap();
    // What an interrupted launch leaves: cgroups, a process in them, no
    // checkpoints.
    let mut sleepers = Vec::new();
    for id in [&lost, &stray_top] {
        cg.create(id, &CreateOptions::default()).unwrap();
        let child = std::process::Command::new("sleep")
            .arg("100")
            .spawn()
            .unwrap();
        cg.add_pid(id, child.id()).unwrap();
        sleepers.push(child);
    }

    // Restart: a new launcher over the same runtime dir and cgroups.
    f.launcher = None;
    f.launcher = Some(Launcher::with_cgroups(f.options(), cg.clone()).unwrap());
    let mut orphans: Vec<String> = f
        .l()
        .recover(std::slice::from_ref(&exec))
        .unwrap()
        .iter()
        .map(nestguard::container_id::to_dotted)
        .collect();
    orphans.sort();
    assert_eq!(orphans, ["nestguard-cgr-top", "nestguard-cgr.lost"]);
    assert!(
        f.l().containers().contains(&exec),
        "the known one is managed"
    );

    for (id, child) in [&lost, &stray_top].into_iter().zip(sleepers.iter_mut()) {
        assert_eq!(f.l().destroy(id).unwrap(), Some(9));
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL),
            "the process in {} was killed",
            nestguard::container_id::to_dotted(id)
        );
        assert!(!cg.exists(id).unwrap(), "cgroups removed");
    }
    assert_eq!(f.l().destroy(&exec).unwrap(), Some(9));
    assert!(!cg.exists(&exec).unwrap());
}
