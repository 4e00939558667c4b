//! kill_all empties a container subtree, even one that keeps forking, and
//! destroy is idempotent; on v1 through the freezer, on v2 through
//! `cgroup.kill`. Root only.

use crate::cgroups_support;

use std::path::Path;
use std::time::Duration;

use cgroups_support::{TestCgroups, id, is_dead, require_root};
use nestguard::isolation::cgroups::{ContainerProcesses, CreateOptions};

fn kill_subtree_and_destroy(t: &mut TestCgroups) {
    let (exec, task, shared) = (id("exec"), id("exec.task"), id("exec.task.shared"));
    t.cg.create(&exec, &CreateOptions::default()).unwrap();
    t.cg.create(&task, &CreateOptions::default()).unwrap();
    t.cg.create(
        &shared,
        &CreateOptions {
            share_cgroups: true,
            ..CreateOptions::default()
        },
    )
    .unwrap();
    let a = t.spawn(&exec, "sleep 100 & sleep 100 & wait");
    // Keeps forking until killed: the freeze makes that race-free.
    let b = t.spawn(&task, "while :; do sleep 100 & sleep 0.01; done");
    let c = t.spawn(&shared, "exec sleep 100");
    cgroups_support::wait_until(
        "the three commands to start their sleeps",
        Duration::from_secs(10),
        || t.cg.subtree_pids(&exec).is_ok_and(|p| p.len() >= 6),
    );
    let before = t.cg.subtree_pids(&exec).unwrap();
    assert!(before.len() >= 6, "{before:?}");
    assert!(t.cg.subtree_pids(&task).unwrap().len() < before.len());

    // Killing a nested container leaves its parent running.
    t.cg.kill_all(&shared).unwrap();
    assert!(t.wait_exit(c, Duration::from_secs(5)).is_some());
    assert!(t.wait_exit(a, Duration::from_millis(100)).is_none());

    t.cg.kill_all(&exec).unwrap();
    assert!(t.cg.subtree_pids(&exec).unwrap().is_empty());
    for index in [a, b] {
        let status = t.wait_exit(index, Duration::from_secs(5)).expect("killed");
        assert!(!status.success());
    }
    assert!(before.iter().all(|pid| is_dead(*pid)), "{before:?}");

    // Idempotent.
    t.cg.kill_all(&exec).unwrap();
    t.cg.destroy(&exec).unwrap();
    t.cg.destroy(&exec).unwrap();
    assert!(!t.cg.exists(&exec).unwrap());
    assert!(!t.cg.exists(&task).unwrap());
    for root in t.leftovers() {
        let left: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
    t.cg.destroy_all().unwrap();
    assert!(t.leftovers().is_empty(), "{:?}", t.leftovers());
}

#[test]
fn v1_freezer_kill_empties_the_subtree() {
    if !require_root() {
        return;
    }
    let mut t = TestCgroups::host("kill");
    kill_subtree_and_destroy(&mut t);
}

#[test]
fn v2_cgroup_kill_empties_the_subtree() {
    if !require_root() {
        return;
    }
    // The host's cgroup2 mount: the root itself (unified) or `unified`
    // (hybrid). cgroup.kill and leaf cgroups need no controllers.
    let mount = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        Path::new("/sys/fs/cgroup")
    } else {
        Path::new("/sys/fs/cgroup/unified")
    };
    if !mount.join("cgroup.controllers").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no cgroup2 mount"
        );
        eprintln!("skipping: no cgroup2 mount");
        return;
    }
    let mut t = TestCgroups::v2_at(mount, "kill2");
    let leaf = mount.join(&t.cg.config().cgroups_root).join("exec/leaf");
    kill_subtree_and_destroy(&mut t);
    assert!(!leaf.exists());
}

#[test]
fn killing_an_unknown_container_is_a_no_op() {
    if !require_root() {
        return;
    }
    let t = TestCgroups::host("noop");
    t.cg.kill_all(&id("never")).unwrap();
    t.cg.destroy(&id("never.nested")).unwrap();
}
