//! Fixture tests of the layout logic: a tempdir stands in for the mount
//! root, so these run without root and without touching the host.

use super::*;
use crate::container_id::parse_dotted;

/// A v1 mount root of empty controller directories in a temp dir, and
/// a manager over it (root `nestguard-fixture`).
pub(crate) fn fixture_v1() -> (tempfile::TempDir, Cgroups) {
    let dir = tempfile::tempdir().unwrap();
    for c in Controller::ALL {
        std::fs::create_dir(dir.path().join(c.name())).unwrap();
    }
    let cgroups = Cgroups::v1_with_root(CgroupsConfig {
        mount_root: dir.path().to_owned(),
        cgroups_root: PathBuf::from("nestguard-fixture"),
        destroy_timeout: Duration::from_secs(1),
    })
    .unwrap();
    (dir, cgroups)
}

fn id(dotted: &str) -> ContainerId {
    parse_dotted(dotted).unwrap()
}

#[test]
fn v1_nesting_mirrors_mesos_layout_in_each_controller() {
    let (dir, cg) = fixture_v1();
    cg.create(&id("exec"), &CreateOptions::default()).unwrap();
    let limits = Limits {
        memory_bytes: Some(64 << 20),
        memory_soft_bytes: None,
        pids_max: Some(10),
        cpu_request: Some(0.5),
        cpu_limit: Some(0.5),
    };
    cg.create(
        &id("exec.task"),
        &CreateOptions {
            share_cgroups: false,
            limits: limits.clone(),
        },
    )
    .unwrap();
    cg.create(
        &id("exec.task.debug"),
        &CreateOptions {
            share_cgroups: true,
            limits: Limits::default(),
        },
    )
    .unwrap();
    let root = dir.path();
    for c in ["freezer", "cpu", "cpuacct", "memory", "pids"] {
        assert!(
            root.join(c)
                .join("nestguard-fixture/exec/mesos/task")
                .is_dir(),
            "{c}"
        );
    }
    assert!(
        root.join("freezer/nestguard-fixture/exec/mesos/task/mesos/debug")
            .is_dir()
    );
    assert!(
        !root
            .join("memory/nestguard-fixture/exec/mesos/task/mesos/debug")
            .exists()
    );
    let task_mem = root.join("memory/nestguard-fixture/exec/mesos/task");
    assert_eq!(
        std::fs::read_to_string(task_mem.join("memory.limit_in_bytes")).unwrap(),
        (64u64 << 20).to_string()
    );
    assert_eq!(
        std::fs::read_to_string(root.join("pids/nestguard-fixture/exec/mesos/task/pids.max"))
            .unwrap(),
        "10"
    );

    // The sharing container joins its own freezer and its parent's others.
    let files = cg.procs_files(&id("exec.task.debug")).unwrap();
    assert!(files.contains(
        &root.join("freezer/nestguard-fixture/exec/mesos/task/mesos/debug/cgroup.procs")
    ));
    assert!(files.contains(&task_mem.join("cgroup.procs")));
    assert_eq!(files.len(), 5);

    let found: Vec<String> = cg.scan().unwrap().iter().map(to_dotted).collect();
    assert_eq!(found, vec!["exec", "exec.task", "exec.task.debug"]);
}

#[test]
fn create_refuses_duplicates_orphans_and_limits_on_sharers() {
    let (_dir, cg) = fixture_v1();
    let err = cg
        .create(&id("exec.task"), &CreateOptions::default())
        .unwrap_err();
    assert!(matches!(err, CgroupError::ParentMissing { .. }), "{err}");
    assert!(err.to_string().contains("nestguard-fixture/exec"), "{err}");
    cg.create(&id("exec"), &CreateOptions::default()).unwrap();
    let err = cg
        .create(&id("exec"), &CreateOptions::default())
        .unwrap_err();
    assert!(matches!(err, CgroupError::AlreadyExists { .. }), "{err}");
    let err = cg
        .create(
            &id("exec.task"),
            &CreateOptions {
                share_cgroups: true,
                limits: Limits {
                    pids_max: Some(3),
                    ..Limits::default()
                },
            },
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("shares its parent's cgroups"),
        "{err}"
    );
    let hostile = ContainerId {
        value: "../../etc".to_owned(),
        parent: None,
    };
    assert!(matches!(
        cg.create(&hostile, &CreateOptions::default()).unwrap_err(),
        CgroupError::InvalidId(_)
    ));
}

#[test]
fn unknown_containers_are_reported_as_not_found() {
    let (_dir, cg) = fixture_v1();
    let err = cg.pids(&id("ghost")).unwrap_err();
    assert!(matches!(err, CgroupError::NotFound { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("container 'ghost' has no cgroup at '"),
        "{err}"
    );
    assert!(cg.usage(&id("ghost")).is_err());
    assert!(!cg.exists(&id("ghost")).unwrap());
}

#[test]
fn the_freezer_is_required_and_other_controllers_are_optional() {
    let dir = tempfile::tempdir().unwrap();
    let err = Cgroups::v1_with_root(CgroupsConfig {
        mount_root: dir.path().to_owned(),
        ..CgroupsConfig::default()
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cgroup v1 controller 'freezer' is not mounted at"),
        "{err}"
    );

    // Only freezer and memory: containers work, pids limits fail clearly.
    std::fs::create_dir(dir.path().join("freezer")).unwrap();
    std::fs::create_dir(dir.path().join("memory")).unwrap();
    let cg = Cgroups::v1_with_root(CgroupsConfig {
        mount_root: dir.path().to_owned(),
        cgroups_root: PathBuf::from("nestguard-fixture"),
        destroy_timeout: Duration::from_secs(1),
    })
    .unwrap();
    cg.create(&id("exec"), &CreateOptions::default()).unwrap();
    assert_eq!(cg.procs_files(&id("exec")).unwrap().len(), 2);
    let err = cg
        .update(
            &id("exec"),
            &Limits {
                pids_max: Some(5),
                ..Limits::default()
            },
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cgroup v1 controller 'pids' is not mounted at"),
        "{err}"
    );
    assert!(dir.path().join("freezer/nestguard-fixture/exec").is_dir());
    assert!(!dir.path().join("pids").exists());
}
