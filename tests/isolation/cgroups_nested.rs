//! Nested cgroups on the real hierarchy: layout, limits read back, sharing,
//! and destroy leaves nothing. Root only.

use crate::cgroups_support;

use std::time::Duration;

use cgroups_support::{TestCgroups, id, require_root};
use nestguard::isolation::cgroups::{
    CgroupError, ContainerProcesses, CreateOptions, Hierarchy, Limits, detect,
};

fn read(path: std::path::PathBuf) -> String {
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_owned()
}

#[test]
fn detection_matches_the_host() {
    if !require_root() {
        return;
    }
    let found = detect().unwrap();
    let unified = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let hybrid = std::path::Path::new("/sys/fs/cgroup/unified/cgroup.controllers").exists();
    let expected = if unified {
        Hierarchy::Unified
    } else if hybrid {
        Hierarchy::Hybrid
    } else {
        Hierarchy::Legacy
    };
    assert_eq!(found, expected);
}

#[test]
fn nested_create_limits_share_and_destroy_leave_nothing() {
    if !require_root() {
        return;
    }
    let mut t = TestCgroups::host("nested");
    if t.cg.is_v2() {
        eprintln!("this test reads v1 control files; the v2 path is covered in cgroups_kill");
        return;
    }
    let mount = t.cg.config().mount_root.clone();
    let root = t.cg.config().cgroups_root.clone();
    let (exec, task, debug) = (id("exec"), id("exec.task"), id("exec.task.debug"));
    t.cg.create(&exec, &CreateOptions::default()).unwrap();
    t.cg.create(
        &task,
        &CreateOptions {
            share_cgroups: false,
            limits: Limits {
                cpu_request: Some(0.5),
                cpu_limit: Some(1.5),
                memory_bytes: Some(64 << 20),
                memory_soft_bytes: Some(40 << 20),
                pids_max: Some(50),
            },
        },
    )
    .unwrap();
    t.cg.create(
        &debug,
        &CreateOptions {
            share_cgroups: true,
            ..CreateOptions::default()
        },
    )
    .unwrap();
    let task_rel = root.join("exec/mesos/task");
    let c = |ctrl: &str, file: &str| mount.join(ctrl).join(&task_rel).join(file);
    assert_eq!(read(c("cpu", "cpu.shares")), "512");
    assert_eq!(read(c("cpu", "cpu.cfs_quota_us")), "150000");
    assert_eq!(read(c("cpu", "cpu.cfs_period_us")), "100000");
    assert_eq!(
        read(c("memory", "memory.limit_in_bytes")),
        (64u64 << 20).to_string()
    );
    if c("memory", "memory.memsw.limit_in_bytes").exists() {
        assert_eq!(
            read(c("memory", "memory.memsw.limit_in_bytes")),
            (64u64 << 20).to_string()
        );
    }
    assert_eq!(read(c("pids", "pids.max")), "50");
    assert!(
        mount
            .join("freezer")
            .join(&task_rel)
            .join("mesos/debug")
            .is_dir()
    );
    assert!(
        !mount
            .join("memory")
            .join(&task_rel)
            .join("mesos/debug")
            .exists()
    );

    // update() changes only what it is given.
    t.cg.update(
        &task,
        &Limits {
            memory_bytes: Some(128 << 20),
            ..Limits::default()
        },
    )
    .unwrap();
    assert_eq!(
        read(c("memory", "memory.limit_in_bytes")),
        (128u64 << 20).to_string()
    );
    assert_eq!(read(c("pids", "pids.max")), "50");

    // A sharing container's process: own freezer cgroup, parent's memory.
    let sleeper = t.spawn(&debug, "exec sleep 60");
    let pid = t.pid(sleeper);
    assert_eq!(t.cg.pids(&debug).unwrap(), vec![pid]);
    assert!(
        read(c("memory", "cgroup.procs"))
            .lines()
            .any(|l| l == pid.to_string())
    );
    assert_eq!(t.cg.subtree_pids(&exec).unwrap(), vec![pid]);
    assert!(t.cg.pids(&exec).unwrap().is_empty());
    // Processes are the container's own; memory is the cgroup it shares.
    let usage = t.cg.usage(&debug).unwrap();
    assert_eq!(usage.processes, Some(1));
    assert_eq!(usage.threads, Some(1));
    assert_eq!(usage.mem_limit_bytes, Some(128 << 20));
    assert!(usage.mem_total_bytes.unwrap() > 0);
    let usage = t.cg.usage(&task).unwrap();
    assert_eq!(usage.processes, Some(0));
    assert_eq!(usage.mem_limit_bytes, Some(128 << 20));

    // Errors name the container and path.
    let err = t.cg.create(&task, &CreateOptions::default()).unwrap_err();
    assert!(matches!(err, CgroupError::AlreadyExists { .. }), "{err}");
    let err =
        t.cg.create(&id("ghost.child"), &CreateOptions::default())
            .unwrap_err();
    assert!(
        err.to_string()
            .contains("parent of container 'ghost.child'"),
        "{err}"
    );

    t.cg.destroy(&exec).unwrap();
    assert!(t.wait_exit(sleeper, Duration::from_secs(5)).is_some());
    assert!(t.cg.scan().unwrap().is_empty());
    t.cg.destroy_all().unwrap();
    assert!(t.leftovers().is_empty(), "{:?}", t.leftovers());
}

#[test]
fn the_test_guard_cleans_up_after_a_failing_test() {
    if !require_root() {
        return;
    }
    let mut leftovers = Vec::new();
    let mut pids = Vec::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut t = TestCgroups::host("guard");
        t.cg.create(&id("exec"), &CreateOptions::default()).unwrap();
        t.cg.create(&id("exec.task"), &CreateOptions::default())
            .unwrap();
        let child = t.spawn(&id("exec.task"), "sleep 60 & exec sleep 60");
        cgroups_support::wait_until(
            "the task to start its background sleep",
            Duration::from_secs(10),
            || t.cg.subtree_pids(&id("exec")).is_ok_and(|p| p.len() >= 2),
        );
        pids = t.cg.subtree_pids(&id("exec")).unwrap();
        pids.push(t.pid(child));
        leftovers = t.leftovers();
        panic!("simulated test failure");
    }));
    assert!(outcome.is_err());
    assert!(!leftovers.is_empty());
    assert!(leftovers.iter().all(|p| !p.exists()), "{leftovers:?}");
    assert!(
        pids.iter().all(|p| cgroups_support::is_dead(*p)),
        "{pids:?}"
    );
}

#[test]
fn concurrent_creates_of_one_container_leave_exactly_one_cgroup() {
    if !require_root() {
        return;
    }
    let t = TestCgroups::host("race");
    let target = id("racer");
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| t.cg.create(&target, &CreateOptions::default())))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok = outcomes.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| matches!(e, CgroupError::AlreadyExists { .. }))
    );
    assert!(t.cg.exists(&target).unwrap());
    t.cg.destroy(&target).unwrap();
}
