//! Scale and leak checks with real processes (root): a 100-container pod is
//! destroyed without leaving a process or mount; 1,000 launches in a loop
//! have no failures and leak no fds or zombies.

#[path = "common/mod.rs"]
mod common;
mod launcher_support;

use std::time::Duration;

use launcher_support::*;
use nestguard::isolation::{Mode, process};

/// fd and zombie counts are per process: the two tests must not overlap.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Destroys a pod when dropped: its executor sleeps for an hour (a
/// thousand launches under emulation take minutes), so a failing test must
/// not leave it behind.
struct PodGuard<'a>(&'a Fixture, nestguard::proto::mesos::ContainerId);

impl Drop for PodGuard<'_> {
    fn drop(&mut self) {
        let _ = self.0.l().destroy(&self.1);
    }
}

fn mounts() -> usize {
    read("/proc/self/mountinfo").lines().count()
}

#[test]
fn destroy_pod_with_100_nested_containers() {
    if !root_or_skip() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let f = Fixture::new_tmpfs(Mode::Linux);
    let mounts_before = mounts();
    let (pod, pod_pid) = f
        .try_launch("nestguard-big", executor("sleep 3600"))
        .unwrap();
    let _pod_guard = PodGuard(&f, pod.clone());
    let mut pids = vec![pod_pid];
    for i in 0..100 {
        // Each task also forks a background process.
        let (_, pid) = f.launch(&format!("nestguard-big.t{i}"), "sleep 100 & sleep 100");
        pids.push(pid);
    }
    let sessions: Vec<i32> = pids.clone();
    assert_eq!(f.l().destroy(&pod).unwrap(), Some(9));
    for pid in &pids {
        assert!(
            process::stat(*pid).unwrap().is_none_or(|s| s.exited()),
            "supervisor {pid} survived"
        );
    }
    for sid in sessions {
        assert!(
            process::session_members(sid).unwrap().is_empty(),
            "session {sid} survived"
        );
    }
    assert_eq!(
        mounts(),
        mounts_before,
        "no mount left in the host namespace"
    );
    assert!(!f.runtime_dir().join("containers/nestguard-big").exists());
    assert!(f.l().containers().is_empty());
}

#[test]
fn thousand_launches_no_failure_no_leak() {
    if !root_or_skip() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let f = Fixture::new_tmpfs(Mode::Linux);
    let (pod, _) = f
        .try_launch("nestguard-loop", executor("sleep 3600"))
        .unwrap();
    let _pod_guard = PodGuard(&f, pod.clone());
    // Warm up once so lazily opened descriptors don't count as growth.
    let (w, _) = f.launch("nestguard-loop.warm", "true");
    f.wait(&w);
    f.l().destroy(&w).unwrap();
    let fds = open_fds();
    let zombies = zombie_children();
    let started = std::time::Instant::now();
    for i in 0..1000 {
        let dotted = format!("nestguard-loop.c{i}");
        let (id, _) = f.launch(&dotted, if i % 2 == 0 { "true" } else { "exit 2" });
        let status = f.l().wait(&id, Some(Duration::from_secs(30))).unwrap();
        assert_eq!(status, Some(if i % 2 == 0 { 0 } else { 512 }), "launch {i}");
        assert_eq!(
            f.l().destroy(&id).unwrap(),
            Some(if i % 2 == 0 { 0 } else { 512 })
        );
    }
    eprintln!("1000 nested launch/wait/destroy: {:?}", started.elapsed());
    assert_eq!(open_fds(), fds, "fd growth");
    assert_eq!(zombie_children(), zombies, "zombie growth");
    f.l().destroy(&pod).unwrap();
}

#[test]
fn concurrent_launches_from_many_host_threads() {
    if !root_or_skip() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let f = Fixture::new_tmpfs(Mode::Linux);
    let (pod, _) = f
        .try_launch("nestguard-threads", executor("sleep 3600"))
        .unwrap();
    let _pod_guard = PodGuard(&f, pod.clone());
    std::thread::scope(|s| {
        for t in 0..4 {
            let f = &f;
            s.spawn(move || {
                for i in 0..25 {
                    let (id, _) =
                        f.launch(&format!("nestguard-threads.t{t}x{i}"), &format!("exit {i}"));
                    assert_eq!(f.wait(&id), i << 8);
                    f.l().destroy(&id).unwrap();
                }
            });
        }
    });
    f.l().destroy(&pod).unwrap();
    assert!(f.l().containers().is_empty());
}

#[test]
fn destroy_races_with_nested_launches() {
    if !root_or_skip() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let f = Fixture::new_tmpfs(Mode::Linux);
    let (pod, _) = f
        .try_launch("nestguard-race", executor("sleep 3600"))
        .unwrap();
    let _pod_guard = PodGuard(&f, pod.clone());
    let pids = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..40 {
                // Launches after the destroy began must fail, not leak.
                if let Ok((_, pid)) =
                    f.try_launch(&format!("nestguard-race.c{i}"), shell("sleep 100"))
                {
                    pids.lock().unwrap().push(pid);
                }
            }
        });
        // The race is the subject: destroy while the launches are under way.
        std::thread::sleep(Duration::from_millis(60));
        f.l().destroy(&pod).unwrap();
    });
    // Whatever launched before the destroy is gone with the pod; whatever
    // came after was refused (its parent is no longer running).
    for pid in pids.into_inner().unwrap() {
        assert!(
            process::stat(pid).unwrap().is_none_or(|s| s.exited()),
            "{pid} survived"
        );
    }
    for id in f.l().containers() {
        let status = f.l().wait(&id, Some(Duration::from_secs(5))).unwrap();
        assert_eq!(status, Some(9), "late launch {id:?} is not running");
        f.l().destroy(&id).unwrap();
    }
    assert!(!f.runtime_dir().join("containers/nestguard-race").exists());
}
