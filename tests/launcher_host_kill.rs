//! The host process is SIGKILLed with containers running and exiting; a new
//! launcher recovers them with exact statuses (root). In its own test binary:
//! it makes this process a child subreaper to reap what the killed host left.

#[path = "common/mod.rs"]
mod common;
mod launcher_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use launcher_support::*;
use nestguard::container_id::parse_dotted;
use nestguard::isolation::{Launcher, LauncherOptions, Mode, process};

const HOST_ENV: &str = "NESTGUARD_TEST_HOST_RUNTIME";

/// Runs only as the child "host" process: launches containers, says ready,
/// and waits to be killed.
#[test]
#[ignore = "helper body, run by host_sigkill_then_recover"]
fn host_body() {
    let Ok(dir) = std::env::var(HOST_ENV) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let l = Launcher::new(LauncherOptions {
        runtime_dir: dir.join("runtime"),
        helper: HELPER.into(),
        mode: Mode::Linux,
        allow_sharing_agent_pid_namespace: false,
        defences: Default::default(),
        user_namespaces: None,
    })
    .unwrap();
    let launch = |dotted: &str, info| {
        let id = parse_dotted(dotted).unwrap();
        let sb = dir.join("runs").join(dotted.replace('.', "/containers/"));
        l.launch(&id, &info, None, &sb).unwrap()
    };
    launch("nestguard-k-exec", executor("sleep 100"));
    launch("nestguard-k-exec.later", shell("sleep 0.5; exit 7"));
    launch("nestguard-k-exec.running", shell("sleep 100"));
    launch("nestguard-k-top", shell("sleep 0.5; kill -KILL $$"));
    println!("NESTGUARD-READY");
    std::thread::sleep(Duration::from_secs(100));
}

#[test]
fn host_sigkill_then_recover() {
    if !root_or_skip() {
        return;
    }
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let f = Fixture::new(Mode::Linux);
    let mut host = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "host_body",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOST_ENV, f.dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(host.stdout.take().unwrap());
    assert!(
        out.lines().any(|l| l.unwrap().contains("NESTGUARD-READY")),
        "host did not get ready"
    );
    host.kill().unwrap();
    host.wait().unwrap();

    // Let the short containers exit while no launcher is alive.
    std::thread::sleep(Duration::from_millis(900));
    let exec = parse_dotted("nestguard-k-exec").unwrap();
    let top = parse_dotted("nestguard-k-top").unwrap();
    let l = f.l();
    assert!(l.recover(&[exec.clone(), top.clone()]).unwrap().is_empty());
    let later = parse_dotted("nestguard-k-exec.later").unwrap();
    let running = parse_dotted("nestguard-k-exec.running").unwrap();
    assert_eq!(f.wait(&later), 7 << 8);
    assert_eq!(f.wait(&top), 9);
    assert_eq!(
        l.wait(&running, Some(Duration::from_millis(10))).unwrap(),
        None
    );
    assert!(l.kill(&running, libc::SIGTERM).unwrap());
    assert_eq!(f.wait(&running), libc::SIGTERM);
    l.destroy(&exec).unwrap();
    l.destroy(&top).unwrap();

    // Reap what the killed host left to us (its helpers), then nothing of
    // ours may remain.
    let me = std::process::id() as i32;
    let children = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| {
                process::stat(*p)
                    .ok()
                    .flatten()
                    .is_some_and(|s| s.ppid == me)
            })
            .collect()
    };
    // The killed host's helpers exit and are reaped; on a timeout the panic
    // names the children that were left.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let leftovers = loop {
        while let Ok(Some(_)) = process::waitpid_raw(-1, libc::WNOHANG) {}
        let left = children();
        if left.is_empty() || std::time::Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(leftovers.is_empty(), "children left: {leftovers:?}");
    assert_eq!(zombie_children(), 0);
}
