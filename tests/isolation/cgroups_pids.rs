//! A pids limit holds: forks beyond it fail. Root only.

use crate::cgroups_support;

use std::io::Read;
use std::time::Duration;

use cgroups_support::{TestCgroups, id, require_root};
use nestguard::isolation::cgroups::{ContainerProcesses, CreateOptions, Limits};

#[test]
fn forks_beyond_the_pids_limit_fail() {
    if !require_root() {
        return;
    }
    let mut t = TestCgroups::host("pids");
    let c = id("forker");
    t.cg.create(
        &c,
        &CreateOptions {
            share_cgroups: false,
            limits: Limits {
                pids_max: Some(6),
                ..Limits::default()
            },
        },
    )
    .unwrap();
    let shell = t.spawn(
        &c,
        "i=0; while [ $i -lt 30 ]; do sleep 60 2>/dev/null & i=$((i+1)); done; echo all-forked >&2; wait",
    );
    let status = t
        .wait_exit(shell, Duration::from_secs(20))
        .expect("the shell gives up");
    let mut stderr = String::new();
    t.children[shell]
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "{status:?} {stderr}");
    assert!(stderr.to_lowercase().contains("fork"), "{stderr}");
    assert!(!stderr.contains("all-forked"), "{stderr}");

    let pids = t.cg.subtree_pids(&c).unwrap();
    assert!(!pids.is_empty() && pids.len() <= 6, "{pids:?}");
    if !t.cg.is_v2() {
        // The kernel counted the refused forks.
        let events =
            t.cg.config()
                .mount_root
                .join("pids")
                .join(&t.cg.config().cgroups_root)
                .join("forker/pids.events");
        let text = std::fs::read_to_string(&events).unwrap();
        let refused: u64 = text.trim().strip_prefix("max ").unwrap().parse().unwrap();
        assert!(refused > 0, "{text}");
    }
    let usage = t.cg.usage(&c).unwrap();
    assert!(usage.processes.unwrap() <= 6, "{usage:?}");
    t.cg.kill_all(&c).unwrap();
    assert!(t.cg.subtree_pids(&c).unwrap().is_empty());
}
