//! A CFS quota visibly throttles a busy loop. Root only.

use crate::cgroups_support;

use std::time::{Duration, Instant};

use cgroups_support::{TestCgroups, id, require_root};
use nestguard::isolation::cgroups::{CreateOptions, Limits};

#[test]
fn a_cpu_quota_throttles_a_busy_loop() {
    if !require_root() {
        return;
    }
    let mut t = TestCgroups::host("cpu");
    let (exec, task) = (id("exec"), id("exec.spin"));
    t.cg.create(&exec, &CreateOptions::default()).unwrap();
    t.cg.create(
        &task,
        &CreateOptions {
            share_cgroups: false,
            limits: Limits {
                cpu_request: Some(0.2),
                cpu_limit: Some(0.2),
                ..Limits::default()
            },
        },
    )
    .unwrap();
    let start = Instant::now();
    // Two spinners, so the group wants far more than its quota even when
    // other work on this shared machine competes for the CPUs.
    t.spawn(&task, "while :; do :; done");
    t.spawn(&task, "while :; do :; done");
    // The sleep is the measurement window, not a wait for a state: the
    // assertions compare the time used in it against the quota.
    std::thread::sleep(Duration::from_secs(2));
    let usage = t.cg.usage(&task).unwrap();
    let elapsed = start.elapsed().as_secs_f64();

    assert_eq!(usage.cpus_limit, Some(0.2));
    assert!(usage.cpus_nr_periods.unwrap() > 5, "{usage:?}");
    assert!(usage.cpus_nr_throttled.unwrap() > 0, "{usage:?}");
    assert!(usage.cpus_throttled_time_secs.unwrap() > 0.0, "{usage:?}");
    let used = usage.cpus_user_time_secs.unwrap() + usage.cpus_system_time_secs.unwrap();
    // Near the quota: never above it (plus one period and tick rounding),
    // and not starved far below it (the machine is shared, so loosely).
    assert!(used <= 0.2 * elapsed + 0.15, "used {used}s in {elapsed}s");
    assert!(used >= 0.05 * elapsed, "used {used}s in {elapsed}s");
    assert_eq!(usage.processes, Some(2));

    // The parent's accounting includes the child (v1 cpuacct is hierarchical).
    let parent = t.cg.usage(&exec).unwrap();
    assert!(
        parent.cpus_user_time_secs.unwrap() + parent.cpus_system_time_secs.unwrap() >= used - 0.02
    );
}
