//! The cgroup v2 code path on the host's cgroup2 mount (on a hybrid host,
//! `/sys/fs/cgroup/unified`, which may offer no controllers): leaf cgroups,
//! processes, usage from the core `cpu.stat`, scan/recover of the v2
//! layout, and clear errors for limits the mount cannot enforce. Root only.

use crate::cgroups_support;

use std::path::Path;
use std::time::Duration;

use cgroups_support::{TestCgroups, id, require_root};
use nestguard::container_id::to_dotted;
use nestguard::isolation::cgroups::{
    CgroupError, Cgroups, ContainerProcesses, CreateOptions, Limits,
};

fn cgroup2_mount() -> Option<&'static Path> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(Path::new)
        .find(|m| m.join("cgroup.controllers").exists())
}

#[test]
fn v2_leaf_cgroups_usage_and_recover() {
    if !require_root() {
        return;
    }
    let Some(mount) = cgroup2_mount() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no cgroup2 mount"
        );
        return;
    };
    let mut t = TestCgroups::v2_at(mount, "v2");
    let base = mount.join(&t.cg.config().cgroups_root);
    for c in ["exec", "exec.task", "stray"] {
        t.cg.create(&id(c), &CreateOptions::default()).unwrap();
    }
    assert!(base.join("exec/leaf").is_dir());
    assert!(base.join("exec/mesos/task/leaf").is_dir());
    assert_eq!(
        t.cg.procs_files(&id("exec.task")).unwrap(),
        vec![base.join("exec/mesos/task/leaf/cgroup.procs")]
    );

    let busy = t.spawn(
        &id("exec.task"),
        "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 60",
    );
    let pid = t.pid(busy);
    assert_eq!(t.cg.pids(&id("exec.task")).unwrap(), vec![pid]);
    assert!(t.cg.pids(&id("exec")).unwrap().is_empty());
    assert_eq!(t.cg.subtree_pids(&id("exec")).unwrap(), vec![pid]);
    cgroups_support::wait_until(
        "the busy loop to be charged some CPU time",
        Duration::from_secs(10),
        || {
            let u = t.cg.usage(&id("exec.task")).unwrap();
            u.cpus_user_time_secs.unwrap() + u.cpus_system_time_secs.unwrap() > 0.0
        },
    );
    let usage = t.cg.usage(&id("exec.task")).unwrap();
    assert_eq!(usage.processes, Some(1));
    assert!(
        usage.cpus_user_time_secs.unwrap() + usage.cpus_system_time_secs.unwrap() > 0.0,
        "{usage:?}"
    );
    // The parent's cpu.stat includes the nested container. Compare the totals: the
    // kernel splits each cgroup's runtime into user and system time on its own
    // (`cputime_adjust` scales by that cgroup's tick samples), so a parent's user time
    // may be below its child's while its user + system never is.
    let parent = t.cg.usage(&id("exec")).unwrap();
    let parent_total = parent.cpus_user_time_secs.unwrap() + parent.cpus_system_time_secs.unwrap();
    let child_total = usage.cpus_user_time_secs.unwrap() + usage.cpus_system_time_secs.unwrap();
    assert!(parent_total >= child_total, "{parent:?} {usage:?}");

    let available = std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap();
    if !available.split_whitespace().any(|c| c == "memory") {
        let err =
            t.cg.update(
                &id("exec"),
                &Limits {
                    memory_bytes: Some(64 << 20),
                    ..Limits::default()
                },
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                CgroupError::ControllerUnavailable {
                    controller: "memory",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("cgroup.controllers"), "{err}");
        assert!(t.cg.watch_oom(&id("exec")).is_err());
    }

    // Recovery parses the v2 layout (`leaf` is no container).
    let restarted = Cgroups::v2_with_root(t.cg.config().clone()).unwrap();
    let found: Vec<String> = restarted.scan().unwrap().iter().map(to_dotted).collect();
    assert_eq!(found, vec!["exec", "stray", "exec.task"]);
    let removed = restarted.recover(&[id("exec"), id("exec.task")]).unwrap();
    assert_eq!(
        removed.iter().map(to_dotted).collect::<Vec<_>>(),
        vec!["stray"]
    );
    assert!(!base.join("stray").exists());
    assert!(t.wait_exit(busy, Duration::from_millis(100)).is_none());

    restarted.destroy(&id("exec")).unwrap();
    assert!(t.wait_exit(busy, Duration::from_secs(5)).is_some());
    restarted.destroy_all().unwrap();
    assert!(!base.exists());
}
