//! A memory-limited sub-container that allocates past its limit is
//! OOM-killed and reported as REASON_CONTAINER_LIMITATION_MEMORY, while its
//! sibling lives on. Root only.

use crate::cgroups_support;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use cgroups_support::{TestCgroups, id, require_root};
use nestguard::isolation::cgroups::{ContainerProcesses, CreateOptions, Limits};
use nestguard::proto::mesos::task_status::Reason;

#[test]
fn oom_kills_the_limited_container_and_spares_its_sibling() {
    if !require_root() {
        return;
    }
    let mut t = TestCgroups::host("oom");
    let (pod, hog, sibling) = (id("pod"), id("pod.hog"), id("pod.sibling"));
    t.cg.create(&pod, &CreateOptions::default()).unwrap();
    let limited = |bytes| CreateOptions {
        share_cgroups: false,
        limits: Limits {
            memory_bytes: Some(bytes),
            ..Limits::default()
        },
    };
    t.cg.create(&hog, &limited(32 << 20)).unwrap();
    t.cg.create(&sibling, &limited(256 << 20)).unwrap();

    let mut hog_watch = t.cg.watch_oom(&hog).unwrap();
    let mut sibling_watch = t.cg.watch_oom(&sibling).unwrap();
    let mut pod_watch = t.cg.watch_oom(&pod).unwrap();
    let calm = t.spawn(&sibling, "exec sleep 120");
    // `tail` keeps the whole line in memory: 64 MB of zeros has no newline.
    let greedy = t.spawn(&hog, "head -c 67108864 /dev/zero | tail > /dev/null");

    // The raw fd (what an event loop or the C++ isolator polls) fires.
    let mut fds = [rustix::event::PollFd::new(
        &hog_watch,
        rustix::event::PollFlags::IN,
    )];
    let timeout = rustix::event::Timespec {
        tv_sec: 60,
        tv_nsec: 0,
    };
    let ready = rustix::event::poll(&mut fds, Some(&timeout)).unwrap();
    assert_eq!(ready, 1, "the OOM fd becomes readable");

    let limitation = hog_watch
        .wait(Some(Duration::from_secs(60)))
        .unwrap()
        .expect("the OOM kill is reported");
    assert_eq!(
        limitation.reason,
        Some(Reason::ContainerLimitationMemory as i32)
    );
    let message = limitation.message.clone().unwrap();
    assert!(
        message.starts_with("Memory limit exceeded: Requested: 32MB Maximum Used: "),
        "{message}"
    );
    assert!(message.contains("MEMORY STATISTICS"), "{message}");
    assert_eq!(limitation.resources[0].name, "mem");
    let used_mb = limitation.resources[0].scalar.unwrap().value;
    assert!((30.0..=33.0).contains(&used_mb), "peak {used_mb} MB");

    // The pipeline dies: tail by the OOM killer, so sh reports a failure.
    let status = t
        .wait_exit(greedy, Duration::from_secs(30))
        .expect("the hog exits");
    assert!(
        status.signal() == Some(9) || status.code() == Some(137),
        "hog status {status:?}"
    );

    // The sibling is untouched and saw no OOM.
    assert!(
        t.wait_exit(calm, Duration::from_millis(200)).is_none(),
        "sibling still runs"
    );
    assert_eq!(t.cg.pids(&sibling).unwrap(), vec![t.pid(calm)]);
    assert!(sibling_watch.check().unwrap().is_none());
    // The parent is not blamed for its child's own limit.
    assert!(pod_watch.check().unwrap().is_none());

    let usage = t.cg.usage(&hog).unwrap();
    assert_eq!(usage.mem_limit_bytes, Some(32 << 20));
    t.cg.destroy(&pod).unwrap();
    assert!(t.leftovers().iter().all(|root| {
        std::fs::read_dir(root)
            .unwrap()
            .all(|e| !e.unwrap().path().is_dir())
    }));
}

#[test]
fn a_watch_ends_when_its_cgroup_is_destroyed() {
    if !require_root() {
        return;
    }
    let t = TestCgroups::host("oomgone");
    let c = id("short");
    t.cg.create(
        &c,
        &CreateOptions {
            share_cgroups: false,
            limits: Limits {
                memory_bytes: Some(64 << 20),
                ..Limits::default()
            },
        },
    )
    .unwrap();
    let mut watch = t.cg.watch_oom(&c).unwrap();
    t.cg.destroy(&c).unwrap();
    let start = std::time::Instant::now();
    assert!(watch.wait(Some(Duration::from_secs(30))).unwrap().is_none());
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}
