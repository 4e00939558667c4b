//! Host restarts: drop the launcher, recover, and get exact statuses —
//! including containers that exited while no launcher was watching; orphans;
//! pid reuse (root).

use crate::launcher_support;

use std::time::Duration;

use launcher_support::*;
use nestguard::container_id::parse_dotted;
use nestguard::isolation::{paths, process};

fn wait_until_exited(pid: i32) {
    for _ in 0..500 {
        if process::stat(pid).unwrap().is_none_or(|s| s.exited()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("process {pid} did not exit");
}

#[test]
fn drop_handle_then_recover_gives_exact_statuses() {
    if !root_or_skip() {
        return;
    }
    let mut f = Fixture::new(nestguard::isolation::Mode::Linux);
    let (exec, _) = f
        .try_launch("nestguard-r-exec", executor("sleep 100"))
        .unwrap();
    let (quick, quick_pid) = f.launch("nestguard-r-exec.quick", "exit 3");
    let (slow, _) = f.launch("nestguard-r-exec.slow", "sleep 100");
    let (top, top_pid) = f.launch("nestguard-r-top", "sleep 0.2; exit 5");
    let (other, _) = f.launch("nestguard-r-other", "sleep 100");
    let (other_child, _) = f.launch("nestguard-r-other.c", "sleep 100");

    // "Restart": the launcher is gone; containers keep running or exit.
    f.launcher = None;
    wait_until_exited(quick_pid);
    wait_until_exited(top_pid);
    f.reopen();
    let orphans = f.l().recover(&[exec.clone(), top.clone()]).unwrap();
    let mut names: Vec<String> = orphans
        .iter()
        .map(nestguard::container_id::to_dotted)
        .collect();
    names.sort();
    assert_eq!(names, ["nestguard-r-other", "nestguard-r-other.c"]);

    assert_eq!(f.wait(&quick), 3 << 8, "exited while no launcher watched");
    assert_eq!(f.wait(&top), 5 << 8);
    assert_eq!(
        f.l().wait(&slow, Some(Duration::from_millis(20))).unwrap(),
        None
    );
    assert!(f.l().kill(&slow, libc::SIGTERM).unwrap());
    assert_eq!(f.wait(&slow), libc::SIGTERM);
    assert!(f.l().wait_fd(&exec).unwrap().is_some(), "still running");

    // Destroying a checkpointed container that was not recovered still
    // kills it (never just drops its checkpoints).
    let mut g = Fixture::new(nestguard::isolation::Mode::Linux);
    let (lost, lost_pid) = g.launch("nestguard-r-lost", "sleep 100");
    let (_, lost_child) = g.launch("nestguard-r-lost.c", "sleep 100");
    g.reopen();
    assert_eq!(
        g.l().destroy(&lost).unwrap(),
        None,
        "unknown to this launcher"
    );
    for pid in [lost_pid, lost_child] {
        assert!(
            process::stat(pid).unwrap().is_none_or(|s| s.exited()),
            "{pid} survived"
        );
    }
    assert!(!paths::runtime_path(&g.runtime_dir(), &lost).exists());
    drop(g);

    // Recover again in the same process: nothing is duplicated.
    assert_eq!(
        f.l().recover(&[exec.clone(), top.clone()]).unwrap().len(),
        0
    );

    // Orphans are destroyable; children die first, the runtime dir goes.
    assert_eq!(f.l().destroy(&other).unwrap(), Some(9));
    assert!(!paths::runtime_path(&f.runtime_dir(), &other).exists());
    assert!(
        f.l().wait(&other_child, None).is_err(),
        "gone with its root"
    );
    f.l().destroy(&exec).unwrap();
    f.l().destroy(&top).unwrap();
    assert!(f.l().containers().is_empty());
}

#[test]
fn reused_pid_is_never_taken_for_the_container() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(nestguard::isolation::Mode::Linux);
    let id = parse_dotted("nestguard-reused").unwrap();
    let runtime = paths::runtime_path(&f.runtime_dir(), &id);
    std::fs::create_dir_all(&runtime).unwrap();
    // The checkpointed pid is now a live process (this test) that started at
    // another time: the container's supervisor is gone, its pid reused.
    let me = std::process::id() as i32;
    let start = process::stat(me).unwrap().unwrap().start_time;
    std::fs::write(runtime.join("pid"), format!("{me}\n{}\n", start + 1)).unwrap();
    assert!(f.l().recover(std::slice::from_ref(&id)).unwrap().is_empty());
    assert_eq!(f.l().wait_fd(&id).unwrap(), None);
    assert_eq!(f.l().wait(&id, Some(Duration::ZERO)).unwrap(), Some(9));
    assert!(
        !f.l().kill(&id, libc::SIGKILL).unwrap(),
        "never signals the newcomer"
    );
    assert_eq!(f.l().destroy(&id).unwrap(), Some(9));
    // Still alive to assert this, and the runtime dir is gone.
    assert!(!runtime.exists());

    // A corrupt pid checkpoint is an error naming the file, not a guess.
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::write(runtime.join("pid"), "garbage").unwrap();
    let err = f
        .l()
        .recover(std::slice::from_ref(&id))
        .unwrap_err()
        .to_string();
    assert!(err.contains("nestguard-reused/pid"), "{err}");

    // An empty one is what a host crash leaves of an unflushed checkpoint:
    // the container is gone, its status unknown, and recovery goes on.
    std::fs::write(runtime.join("pid"), "").unwrap();
    assert!(f.l().recover(std::slice::from_ref(&id)).unwrap().is_empty());
    assert_eq!(f.l().wait(&id, Some(Duration::ZERO)).unwrap(), Some(9));
    assert_eq!(f.l().destroy(&id).unwrap(), Some(9));
    assert!(!runtime.exists());
}
