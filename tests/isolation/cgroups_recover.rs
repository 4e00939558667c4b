//! After a crash, recover() keeps the cgroups of known containers and kills
//! and removes everything else under our root. Root only.

use crate::cgroups_support;

use std::time::Duration;

use cgroups_support::{TestCgroups, id, is_dead, require_root};
use nestguard::container_id::to_dotted;
use nestguard::isolation::cgroups::{Cgroups, ContainerProcesses, CreateOptions};

#[test]
fn recover_removes_unknown_containers_and_keeps_known_ones() {
    if !require_root() {
        return;
    }
    let mut t = TestCgroups::host("recover");
    for c in ["keep", "keep.child", "orphan", "orphan.sub", "keep.stray"] {
        t.cg.create(&id(c), &CreateOptions::default()).unwrap();
    }
    let kept = t.spawn(&id("keep.child"), "exec sleep 60");
    let lost = t.spawn(&id("orphan.sub"), "sleep 60 & exec sleep 60");
    cgroups_support::wait_until(
        "the orphan's command to start its sleep",
        Duration::from_secs(10),
        || t.cg.subtree_pids(&id("orphan")).is_ok_and(|p| p.len() >= 2),
    );
    let lost_pids = t.cg.subtree_pids(&id("orphan")).unwrap();
    assert_eq!(lost_pids.len(), 2);

    // A directory that is not a container is ignored by the scan.
    let freezer_root = if t.cg.is_v2() {
        t.cg.config().mount_root.join(&t.cg.config().cgroups_root)
    } else {
        t.cg.config()
            .mount_root
            .join("freezer")
            .join(&t.cg.config().cgroups_root)
    };
    std::fs::create_dir(freezer_root.join("keep/not-a-separator")).unwrap();

    // "Crash": a new handle with nothing but the file system to go on.
    let restarted = Cgroups::new(t.cg.config().clone()).unwrap();
    let found: Vec<String> = restarted.scan().unwrap().iter().map(to_dotted).collect();
    assert_eq!(
        found,
        vec!["keep", "orphan", "keep.child", "keep.stray", "orphan.sub"]
    );

    let removed = restarted.recover(&[id("keep"), id("keep.child")]).unwrap();
    let removed: Vec<String> = removed.iter().map(to_dotted).collect();
    assert_eq!(removed, vec!["orphan", "keep.stray"]);
    assert!(t.wait_exit(lost, Duration::from_secs(5)).is_some());
    assert!(lost_pids.iter().all(|p| is_dead(*p)), "{lost_pids:?}");
    assert!(
        t.wait_exit(kept, Duration::from_millis(100)).is_none(),
        "known container still runs"
    );
    let after: Vec<String> = restarted.scan().unwrap().iter().map(to_dotted).collect();
    assert_eq!(after, vec!["keep", "keep.child"]);
    assert!(!restarted.exists(&id("orphan.sub")).unwrap());
    assert!(freezer_root.join("keep/not-a-separator").is_dir());

    restarted.destroy(&id("keep")).unwrap();
    assert!(restarted.scan().unwrap().is_empty());
}
