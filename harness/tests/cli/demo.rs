//! The README's first command: `nestguard demo` runs a pod end to end and
//! cleans up after itself.

use std::process::Command;

#[test]
fn demo_runs_and_leaves_nothing() {
    let child = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .arg("demo")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nestguard demo");
    let root = format!("nestguard-demo-{}", child.id());
    let out = child.wait_with_output().expect("demo output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "-> HTTP 403 Forbidden",
        "decided by kill_nested_containers[1]",
        "TASK_RESTARTING  flaky",
        "TASK_FINISHED    backup",
        "TASK_KILLED      app",
        "cleaned up: pod destroyed, agent stopped, work directory removed",
        "status updates from the executor acknowledged by the framework",
        // The audit log's record of the refused kill, and the metrics.
        "audit log (--audit_log): ",
        r#""subject":"intruder","action":"KILL_NESTED_CONTAINER""#,
        r#""allowed":false"#,
        "metrics (/metrics/snapshot; Prometheus text at /metrics):",
        "nestguard/authz/kill_nested_container/denied",
        "nestguard/isolation/launches",
        // Statuses in words; sampled latency labelled so.
        "pod ended; the executor exited with status ",
        "(sampled: 1 decision in 64 is timed, of ",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    // The counters moved: one refused kill, some launches.
    let metric = |name: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in:\n{stdout}"));
        line.split_whitespace().last().unwrap().parse().unwrap()
    };
    assert_eq!(metric("nestguard/authz/kill_nested_container/denied"), 1.0);
    assert!(metric("nestguard/authz/allowed") >= 1.0);
    assert!(metric("nestguard/isolation/launches") >= 1.0);
    assert!(!stdout.contains("Some("), "a Rust Option in:\n{stdout}");
    // The executor went through the executor API: its updates were
    // acknowledged (it exits only then).
    assert!(
        !stdout.contains("executor API: 0 status updates"),
        "no update was acknowledged:\n{stdout}"
    );
    // Nothing of the demo's is left: its cgroups root and its claim.
    let leftovers = leftover_cgroups(&root);
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The demo's cgroups roots left in any controller, and its claim on the
/// root (the agent releases it when it stops): none once the demo ended.
fn leftover_cgroups(root: &str) -> Vec<std::path::PathBuf> {
    let claims = std::fs::read_dir("/run/nestguard/cgroups-roots")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(&format!("%2F{root}.lock"))
        })
        .map(|e| e.path());
    // On a cgroup v2-only host the root is `/sys/fs/cgroup/<root>` itself.
    let unified = std::path::Path::new("/sys/fs/cgroup").join(root);
    std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|c| std::fs::read_dir(c.path()).ok())
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy() == root)
        .map(|e| e.path())
        .chain(unified.is_dir().then_some(unified))
        .chain(claims)
        .collect()
}

/// Starts the demo and reads its stdout until a line containing `until`;
/// returns the child (its stdout still open, held by the returned reader).
// The child is returned: every caller waits for it.
#[allow(clippy::zombie_processes)]
fn demo_until(
    until: &str,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStdout>,
) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .arg("demo")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nestguard demo");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("demo ended before {until:?}:\n{seen}");
        }
        seen.push_str(&line);
        if line.contains(until) {
            return (child, out);
        }
    }
}

#[test]
fn demo_with_closed_stdout_ends_quietly_and_cleans_up() {
    // `nestguard demo | head`: the reader goes away once the pod runs.
    let (child, out) = demo_until("launched by 'ops'");
    let root = format!("nestguard-demo-{}", child.id());
    drop(out);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let leftovers = leftover_cgroups(&root);
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

#[test]
fn demo_interrupted_by_sigterm_cleans_up() {
    let (child, out) = demo_until("launched by 'ops'");
    let root = format!("nestguard-demo-{}", child.id());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let waited = child.wait_with_output().unwrap();
    drop(out);
    let stderr = String::from_utf8_lossy(&waited.stderr);
    assert_eq!(waited.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let leftovers = leftover_cgroups(&root);
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

/// The kernel's version as (major, minor).
fn kernel_version() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut parts = release.trim().split(['.', '-']);
    let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (next(), next())
}

#[test]
fn demo_runs_its_pod_in_a_user_namespace() {
    let out = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(["demo", "--user-namespaces"])
        .output()
        .expect("run nestguard demo --user-namespaces");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !nix::unistd::geteuid().is_root() {
        assert!(stderr.contains("--user-namespaces needs root"), "{stderr}");
        return;
    }
    // tmpfs has idmapped mounts from Linux 6.3: before, a demo directory on
    // tmpfs (the v2 guest's) is refused, clearly, and nothing is left.
    if !out.status.success() && kernel_version() < (6, 3) {
        assert!(
            stdout.contains("is on a file system without idmapped mounts")
                || stderr.contains("is on a file system without idmapped mounts"),
            "{stdout}\n{stderr}"
        );
        return;
    }
    assert!(out.status.success(), "demo failed:\n{stdout}\n{stderr}");
    for expected in [
        "the pod in a user namespace: root inside is host uid 1900000000",
        "TASK_FINISHED    backup",
        "TASK_KILLED      app",
        "app.log (written by root inside the pod) is owned on the host by uid 1900000000",
        "cleaned up: pod destroyed, agent stopped, work directory removed",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}
