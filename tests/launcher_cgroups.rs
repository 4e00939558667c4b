//! The launcher with the cgroups manager plugged in (root): every process of
//! a container, including one that escapes the session, is in its cgroup and
//! dies with it; destroy leaves no cgroup behind.

mod support;

use std::sync::Arc;

use nestguard::container_id::parse_dotted;
use nestguard::isolation::cgroups::{Cgroups, CgroupsConfig, ContainerProcesses, CreateOptions};
use nestguard::isolation::{Launcher, Mode, process};
use support::*;

struct CgroupsGuard(Arc<Cgroups>);

impl Drop for CgroupsGuard {
    fn drop(&mut self) {
        if let Err(e) = self.0.destroy_all() {
            eprintln!("cgroup cleanup failed: {e}");
        }
    }
}

#[test]
fn cgroup_killer_catches_escaped_processes_and_removes_cgroups() {
    if !root_or_skip() {
        return;
    }
    let cg = Arc::new(
        Cgroups::new(CgroupsConfig {
            cgroups_root: format!("nestguard-launcher-test-{}", std::process::id()).into(),
            ..CgroupsConfig::default()
        })
        .unwrap(),
    );
    let _guard = CgroupsGuard(cg.clone());
    let mut f = Fixture::new(Mode::Linux);
    let l = Launcher::with_cgroups(f.options(), cg.clone()).unwrap();
    f.launcher = Some(l);

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
    std::thread::sleep(std::time::Duration::from_millis(300));
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
