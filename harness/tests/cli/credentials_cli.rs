//! `nestguard credentials check` and `nestguard token issue|verify`, run as
//! the real binary.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(args)
        .output()
        .unwrap()
}

fn file(dir: &tempfile::TempDir, name: &str, text: &str, mode: u32) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn check_reports_principals_or_located_errors() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-cli-")
        .tempdir()
        .unwrap();
    let good = file(
        &dir,
        "good.json",
        r#"{"credentials":[{"principal":"a","secret":"cli-s1"},{"principal":"b","secret":"cli-s2"}]}"#,
        0o600,
    );
    let out = run(&["credentials", "check", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("2 credential(s): a, b"));
    assert!(!text(&out.stdout).contains("cli-s1"));

    let bad = file(&dir, "bad.txt", "a cli-s1\nb\n", 0o600);
    let out = run(&["credentials", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("line 2") && err.contains("bad.txt"), "{err}");

    let open = file(
        &dir,
        "open.json",
        r#"{"principal":"a","secret":"cli-s1"}"#,
        0o640,
    );
    let out = run(&["credentials", "check", "--single", open.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("too open"));
    let out = run(&[
        "credentials",
        "check",
        "--single",
        "--allow-open-permissions",
        open.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn token_issue_then_verify() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-cli-")
        .tempdir()
        .unwrap();
    let key = file(&dir, "key", "cli-signing-key", 0o600);
    let key = key.to_str().unwrap();
    let out = run(&[
        "token", "issue", "--key", key, "--fid", "F", "--eid", "E", "--cid", "C",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_owned();
    assert!(token.starts_with("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."));
    let out = run(&["token", "verify", "--key", key, &token]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        r#"{"cid":"C","eid":"E","fid":"F"}"#
    );

    let other = file(&dir, "other", "another-key", 0o600);
    let out = run(&["token", "verify", "--key", other.to_str().unwrap(), &token]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Token signature does not match"));
}
