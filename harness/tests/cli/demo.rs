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
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    // The executor went through the executor API: its updates were
    // acknowledged (it exits only then).
    assert!(
        !stdout.contains("executor API: 0 status updates"),
        "no update was acknowledged:\n{stdout}"
    );
    // Nothing of the demo's is left: its cgroups root and temp directory.
    let leftovers: Vec<_> = std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|c| std::fs::read_dir(c.path()).ok())
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy() == root)
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
