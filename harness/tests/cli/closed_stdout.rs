//! Issue 17 item 4: every command treats a closed stdout (`nestguard … |
//! head -1`) as a quiet end of its output, never a panic, and keeps its own
//! exit status (a failing check or policy test still fails). Each command
//! runs with stdout the write end of a pipe whose read end is already
//! closed, so its first write fails with EPIPE; the agent's own commands
//! (`agent`, `pod run`, `exec`) are in `harness/tests/agent/closed_stdout.rs`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a run with a closed stdout left: exit code and stderr.
pub struct ClosedRun {
    pub code: Option<i32>,
    pub stderr: String,
}

/// Runs `nestguard args` with stdout a pipe nobody reads (its read end is
/// closed before the command starts).
pub fn run_into_closed_pipe(args: &[&str]) -> ClosedRun {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    ClosedRun {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts a quiet end with `code`: no panic, nothing on stderr but what
/// `stderr_has` says must be there.
pub fn assert_quiet(args: &[&str], code: i32, stderr_has: Option<&str>) {
    let run = run_into_closed_pipe(args);
    assert!(
        !run.stderr.contains("panicked"),
        "{args:?} panicked: {}",
        run.stderr
    );
    assert_eq!(run.code, Some(code), "{args:?}: {}", run.stderr);
    match stderr_has {
        Some(text) => assert!(run.stderr.contains(text), "{args:?}: {}", run.stderr),
        None => assert_eq!(run.stderr, "", "{args:?} was not quiet"),
    }
}

fn example(name: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../acls")
        .join(name);
    p.to_str().unwrap().to_owned()
}

#[test]
fn version_and_smoke_end_quietly() {
    assert_quiet(&["version"], 0, None);
    assert_quiet(&["smoke"], 0, None);
    // clap's help and its usage errors.
    assert_quiet(&["--help"], 0, None);
    assert_quiet(&["acls", "--help"], 0, None);
}

#[test]
fn acls_commands_end_quietly_with_their_verdicts() {
    let acls = example("nested-containers.json");
    let next = example("nested-containers.next.json");
    let cases = example("nested-containers.cases.json");
    assert_quiet(&["acls", "check", &acls], 0, None);
    assert_quiet(
        &[
            "acls",
            "explain",
            &acls,
            "--action",
            "KILL_NESTED_CONTAINER",
            "--principal",
            "ops",
        ],
        0,
        None,
    );
    // Denied: the verdict (2) survives the closed pipe.
    assert_quiet(
        &[
            "acls",
            "explain",
            &acls,
            "--action",
            "WAIT_NESTED_CONTAINER",
            "--principal",
            "eve",
            "--json",
        ],
        2,
        None,
    );
    assert_quiet(
        &["acls", "who-can", &acls, "KILL_NESTED_CONTAINER"],
        0,
        None,
    );
    assert_quiet(&["acls", "can", &acls, "ci"], 0, None);
    assert_quiet(&["acls", "diff", &acls, &acls], 0, None);
    assert_quiet(&["acls", "diff", &acls, &next], 1, None);
    assert_quiet(&["acls", "test", &acls, &cases], 0, None);
    // A failing policy test still fails when nobody reads its report.
    assert_quiet(&["acls", "test", &next, &cases], 1, None);
}

#[test]
fn credentials_and_token_commands_end_quietly_with_their_verdicts() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-closed-stdout-")
        .tempdir()
        .unwrap();
    let private = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let creds = private(
        "creds.json",
        r#"{"credentials":[{"principal":"a","secret":"closed-s1"}]}"#,
    );
    let key = private("jwt.key", "closed-stdout-signing-key-0123456789");
    assert_quiet(&["credentials", "check", &creds], 0, None);
    assert_quiet(
        &[
            "token", "issue", "--key", &key, "--fid", "f", "--eid", "e", "--cid", "c",
        ],
        0,
        None,
    );
    let token = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args([
            "token", "issue", "--key", &key, "--fid", "f", "--eid", "e", "--cid", "c",
        ])
        .output()
        .unwrap();
    let token = String::from_utf8(token.stdout).unwrap();
    assert_quiet(&["token", "verify", "--key", &key, token.trim()], 0, None);
    // Invalid: still 1, with its message on stderr.
    assert_quiet(
        &["token", "verify", "--key", &key, "not.a.token"],
        1,
        Some("invalid token"),
    );
}

/// `2>&1 | head`: stdout and stderr are both the closed pipe. A command
/// with something to say on stderr loses it but must not panic (a panic's
/// message cannot be seen either: exit 101 is the sign).
#[test]
fn closed_stdout_and_stderr_do_not_panic() {
    for (args, code) in [
        (&["acls", "check", "/nonexistent/acls.json"][..], 1),
        (
            &["acls", "test", "/nonexistent/a.json", "/nonexistent/b.json"][..],
            2,
        ),
        (&["version"][..], 0),
        (&["no-such-command"][..], 2),
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let status = Command::new(env!("CARGO_BIN_EXE_nestguard"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer.try_clone().unwrap())
            .stderr(writer)
            .env("RUST_LOG", "debug")
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(code), "{args:?}");
    }
}
