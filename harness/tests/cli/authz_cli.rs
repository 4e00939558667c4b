//! `nestguard acls check|explain`: exit codes, located errors, lint warnings,
//! JSON output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn nestguard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(args)
        .output()
        .expect("running nestguard")
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../acls/nested-containers.json")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn check_valid_invalid_and_warnings() {
    let ok = nestguard(&["acls", "check", example().to_str().unwrap()]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert!(text(&ok.stdout).contains("valid"));

    let dir = tempfile::Builder::new()
        .prefix("nestguard-authz-cli")
        .tempdir()
        .unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\n \"kill_nested_containers\": [\n  {\"principals\": {\"type\": \"any\"}, \"users\": {\"type\": \"ANY\"}}\n ]\n}\n").unwrap();
    let out = nestguard(&["acls", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.json:3:27: kill_nested_containers[0].principals.type"),
        "{err}"
    );
    // Mesos' leniency on request: loads, with a warning about the dead entry.
    let out = nestguard(&["acls", "check", "--lenient", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("matches nothing"),
        "{}",
        text(&out.stderr)
    );

    let shadow = dir.path().join("shadow.json");
    std::fs::write(
        &shadow,
        r#"{"kill_nested_containers": [
            {"principals": {"type": "NONE"}, "users": {"type": "ANY"}},
            {"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]}"#,
    )
    .unwrap();
    let out = nestguard(&["acls", "check", &format!("file://{}", shadow.display())]);
    assert_eq!(out.status.code(), Some(0));
    let warn = text(&out.stderr);
    assert!(
        warn.contains("kill_nested_containers[1]: unreachable"),
        "{warn}"
    );
    assert!(warn.contains("permissive is true"), "{warn}");
}

#[test]
fn explain_exit_codes_and_json() {
    let file = example();
    let file = file.to_str().unwrap();
    let out = nestguard(&[
        "acls",
        "explain",
        file,
        "--action",
        "LAUNCH_NESTED_CONTAINER",
        "--principal",
        "ci",
        "--executor-user",
        "ci",
        "--command-user",
        "ci",
        "--container-id",
        "r.c",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["allowed"], true);
    assert_eq!(v["list"], "launch_nested_containers_as_user");
    assert_eq!(v["index"], 1);
    assert_eq!(v["parent"]["list"], "manage_nested_containers");

    let out = nestguard(&[
        "acls",
        "explain",
        file,
        "--request",
        r#"{"subject":{"value":"ci"},"action":"LAUNCH_NESTED_CONTAINER","object":{"executor_info":{"executor_id":{"value":"e"},"command":{"user":"ci"}},"command_info":{"user":"root"}}}"#,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let t = text(&out.stdout);
    assert!(t.starts_with("DENIED"), "{t}");
    assert!(t.contains("launch_nested_containers_as_user[2]"), "{t}");

    let out = nestguard(&[
        "acls",
        "explain",
        file,
        "--action",
        "WAIT_NESTED_CONTAINER",
        "--principal",
        "eve",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["index"], Value::Null);
    assert_eq!(v["permissive"], false);

    let out = nestguard(&[
        "acls",
        "explain",
        file,
        "--action",
        "KILL_NESTED_CONTAINER",
        "--claim",
        "cid=r",
        "--container-id",
        "r.c",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    let out = nestguard(&["acls", "explain", file, "--action", "NOT_AN_ACTION"]);
    assert_eq!(out.status.code(), Some(1));
    let out = nestguard(&[
        "acls",
        "explain",
        "/nonexistent/nestguard.json",
        "--action",
        "KILL_NESTED_CONTAINER",
    ]);
    assert_eq!(out.status.code(), Some(1));
}
