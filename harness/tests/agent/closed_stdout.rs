//! Issue 17 item 4 for the commands that talk to an agent: a closed stdout
//! (and stderr) is never a panic. The agent keeps serving and stops cleanly;
//! `pod run` still follows its pod to the end, removes it and exits with
//! its verdict; `exec` still exits with the command's code. The other
//! commands are in `harness/tests/cli/closed_stdout.rs`.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::agent_support::{OPS, TestAgent, agent_command, pod, require_root, task, wait_until};
use crate::debug_sessions::ACLS as SESSION_ACLS;

/// A pipe nobody reads: (write end, its clone) for stdout and stderr.
fn closed_pipe() -> (std::io::PipeWriter, std::io::PipeWriter) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let clone = writer.try_clone().unwrap();
    (writer, clone)
}

/// Runs `nestguard <command> --agent … --principal ops --secret-file …
/// <rest>` with stdout a closed pipe; its output.
fn as_ops_into_closed_stdout(
    agent: &TestAgent,
    command: &[&str],
    rest: &[&str],
) -> std::process::Output {
    let secret = agent.dir.path().join("ops.secret");
    std::fs::write(&secret, OPS.1).unwrap();
    let (stdout, _) = closed_pipe();
    Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(command)
        .args(["--agent", agent.address.trim_end_matches('/')])
        .args(["--principal", OPS.0])
        .arg("--secret-file")
        .arg(&secret)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http_code(args: &[&str], url: &str) -> u16 {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
        ])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// The agent logs at debug level and prints its address into a closed
/// stdout and stderr: it serves, and SIGTERM stops it with 0 (a panic on
/// a failed write, or tracing's own `eprintln!` report of one, would be
/// 101 or a dead agent).
#[test]
fn agent_serves_and_stops_cleanly_with_closed_stdout_and_stderr() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-closed-agent-")
        .tempdir()
        .unwrap();
    let port = free_port();
    let (stdout, stderr) = closed_pipe();
    let child = agent_command()
        .arg(format!("--work_dir={}", dir.path().join("work").display()))
        .arg("--launcher=posix")
        .arg(format!("--port={port}"))
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut agent = Reaped(child);
    let base = format!("http://127.0.0.1:{port}");
    wait_until("the agent to serve", Duration::from_secs(30), || {
        let status = agent.0.try_wait().unwrap();
        assert!(status.is_none(), "the agent ended: {status:?}");
        http_code(&[], &format!("{base}/health")) == 200
    });
    for _ in 0..3 {
        assert_eq!(http_code(&[], &format!("{base}/state")), 200);
        assert_eq!(http_code(&["-X", "POST"], &format!("{base}/api/v1")), 400);
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let mut status = None;
    wait_until("the agent to stop", Duration::from_secs(20), || {
        status = agent.0.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{status:?}");
}

/// A child killed and reaped when the test ends, however it ends.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `pod run` into a closed stdout follows the pod to its end, removes it
/// and exits with the pod's verdict, twice: a pod that succeeds (0) and one
/// whose task fails (1).
#[test]
fn pod_run_finishes_removes_its_pod_and_keeps_its_verdict() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    for (command, code) in [("echo one; echo two", 0), ("exit 3", 1)] {
        let spec = agent.dir.path().join("pod.json");
        std::fs::write(
            &spec,
            pod(serde_json::json!([task("t", command)])).to_string(),
        )
        .unwrap();
        let out = as_ops_into_closed_stdout(&agent, &["pod", "run", spec.to_str().unwrap()], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(out.status.code(), Some(code), "{command}: {stderr}");
        let executors = agent.dir.path().join("work/meta/executors");
        let left = std::fs::read_dir(&executors).map_or(0, |d| d.count());
        assert_eq!(left, 0, "the pod was not removed: {stderr}");
    }
}

/// `nestguard exec` into a closed stdout: the output is dropped, the
/// command runs to its end and its exit code is exec's.
#[test]
fn exec_keeps_the_commands_exit_code() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls_and(SESSION_ACLS, &["--debug_sessions"]);
    let (root, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("main", "sleep 1000")])));
    agent.wait_task(&sandbox, "main", "TASK_RUNNING");
    let out = as_ops_into_closed_stdout(
        &agent,
        &["exec"],
        &[&root, "--", "sh", "-c", "seq 1 2000; echo done >&2; exit 5"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("done"), "{stderr}");
}
