//! `nestguard acls who-can|can|diff|test` on the example files: outputs and
//! exit codes (diff: 0 same, 1 different, 2 error; test: 0 passed, 1 failed,
//! 2 error).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn nestguard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(args)
        .output()
        .expect("running nestguard")
}

fn example(name: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../acls")
        .join(name);
    p.to_str().expect("UTF-8 path").to_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn who_can_lists_allowed_principals_per_user() {
    let file = example("nested-containers.json");
    let out = nestguard(&["acls", "who-can", &file, "KILL_NESTED_CONTAINER"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let expected = "user ci:
  allowed  ci      manage_nested_containers[1] (5:5)
  allowed  oncall  kill_nested_containers[0] (13:5)
  allowed  ops     manage_nested_containers[0] (4:5)
  denied   any other principal, unauthenticated
user any other user:
  allowed  oncall  kill_nested_containers[0] (13:5)
  allowed  ops     manage_nested_containers[0] (4:5)
  denied   any other principal, unauthenticated
";
    assert!(stdout.ends_with(expected), "{stdout}");

    let out = nestguard(&[
        "acls",
        "who-can",
        &file,
        "LAUNCH_NESTED_CONTAINER",
        "--user",
        "ci",
        "--parent-user",
        "ci",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = &v["objects"][0];
    assert_eq!(row["parent_user"], "ci");
    assert_eq!(row["user"], "ci");
    let allowed: Vec<&Value> = row["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["principal"])
        .collect();
    assert_eq!(allowed, ["ci", "ops"]);
    let ci = &row["allowed"][0];
    assert_eq!(ci["parent"]["list"], "manage_nested_containers");
    assert_eq!(ci["parent"]["index"], 1);
    assert_eq!(ci["child"]["list"], "launch_nested_containers_as_user");
    assert_eq!(ci["child"]["index"], 1);
    // By class: `oncall`, named in no launch list, is "any other principal".
    assert_eq!(row["denied"][0]["principal"]["other"], true);
    assert_eq!(row["denied"][0]["decided_by"]["permissive"], false);
    assert_eq!(row["denied"][1]["principal"]["unauthenticated"], true);

    let out = nestguard(&["acls", "who-can", &file, "KILL"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("unknown action \"KILL\""));
}

/// Past its budget of answers who-can exits 1 with an error saying what to
/// ask instead, before deciding anything; one user is answered.
#[test]
fn who_can_past_its_budget_is_an_error_naming_the_way_out() {
    // Every one of 1000 principals is named for every user, and 1000 users
    // are named: 1001 users × 1002 principal answers > 1,000,000.
    let n = 1000;
    let everyone = (0..n).map(|i| serde_json::json!({"principals": {"values": [format!("p{i}")]}, "users": {"type": "ANY"}}));
    let users = (0..n).map(|i| serde_json::json!({"principals": {"type": "ANY"}, "users": {"values": [format!("u{i}")]}}));
    let doc = serde_json::json!({"permissive": false, "kill_nested_containers": everyone.chain(users).collect::<Vec<_>>()});
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("acls.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let file = file.to_str().unwrap();
    let out = nestguard(&["acls", "who-can", file, "KILL_NESTED_CONTAINER"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains("who-can KILL_NESTED_CONTAINER needs more than 1000000 answers over 1001 objects (its budget): ask about one object with --user"),
        "{err}"
    );
    let out = nestguard(&[
        "acls",
        "who-can",
        file,
        "KILL_NESTED_CONTAINER",
        "--user",
        "u1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let p999 = stdout.lines().find(|l| l.starts_with("  allowed  p999 "));
    assert!(
        p999.is_some_and(|l| l.contains("kill_nested_containers[999]")),
        "{stdout}"
    );
}

#[test]
fn can_lists_what_one_principal_may_do() {
    let file = example("nested-containers.json");
    let out = nestguard(&["acls", "can", &file, "ci"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("KILL_NESTED_CONTAINER (allowed for 1 of 2 objects):\n  user ci  manage_nested_containers[1] (5:5)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("executor user ci, command user ci  parent: manage_nested_containers[1] (5:5); child: launch_nested_containers_as_user[1] (9:5)"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("denied for every object: 49 other actions (--json lists them)\n"),
        "{stdout}"
    );
    let out = nestguard(&["acls", "can", &file, "--unauthenticated", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["principal"]["unauthenticated"], true);
    assert!(
        v["actions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["allowed"].as_array().unwrap().is_empty())
    );
}

#[test]
fn diff_exit_codes_and_changes() {
    let old = example("nested-containers.json");
    let new = example("nested-containers.next.json");
    let out = nestguard(&["acls", "diff", &old, &old]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("decide alike"));

    let out = nestguard(&["acls", "diff", &old, &new]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "KILL_NESTED_CONTAINER, principal oncall, user any other user: allowed -> denied
  old: kill_nested_containers[0] (13:5)
  new: no entry matched, permissive=false
VIEW_CONTAINER, principal ci, user ci: denied -> allowed
  old: no entry matched, permissive=false
  new: view_containers[0] (19:5)
2 of 315 requests decide differently
"
    );
    let out = nestguard(&["acls", "diff", "--json", &old, &new]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["identical"], false);
    assert_eq!(v["changes"][0]["action"], "KILL_NESTED_CONTAINER");
    assert_eq!(v["changes"][0]["object"]["other"], true);
    assert_eq!(v["changes"][0]["old"]["decided_by"]["line"], 13);

    let out = nestguard(&["acls", "diff", &old, "/nonexistent/acls.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/acls.json"));
}

/// The example cases pass against `nested-containers.json`; against the
/// next version one fails, reported at `line:3` of the cases file.
fn example_cases_pass_then_one_fails(name: &str, line: u32) {
    let cases = example(name);
    let out = nestguard(&["acls", "test", &example("nested-containers.json"), &cases]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "9 passed, 0 failed\n");

    let out = nestguard(&[
        "acls",
        "test",
        &example("nested-containers.next.json"),
        &cases,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with(&format!(
            "{cases}:{line}:3: oncall kills under any executor: expected allow, got deny"
        )),
        "{stdout}"
    );
    assert_eq!(lines[1], "8 passed, 1 failed");
}

#[test]
fn test_runs_cases_with_located_failures() {
    example_cases_pass_then_one_fails("nested-containers.cases.json", 4);

    let err = bad_cases(
        "bad.json",
        "[\n  {\"action\": \"KILL_NESTED_CONTAINER\"}\n]\n",
    );
    assert!(
        err.contains("bad.json:2:3: case 0: missing field `expect`"),
        "{err}"
    );
}

/// `acls test` on a cases file named `name` holding `content`: it must
/// fail to load (exit 2); its error text.
fn bad_cases(name: &str, content: &str) -> String {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-acls-test")
        .tempdir()
        .unwrap();
    let bad = dir.path().join(name);
    std::fs::write(&bad, content).unwrap();
    let out = nestguard(&[
        "acls",
        "test",
        &example("nested-containers.json"),
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    text(&out.stderr)
}

#[test]
fn test_reads_yaml_cases_with_located_failures() {
    // The same failure as the JSON cases', at the YAML case's line.
    example_cases_pass_then_one_fails("nested-containers.cases.yaml", 13);

    // Picked by content when the name says nothing; errors name file and line.
    let err = bad_cases(
        "cases",
        "- action: KILL_NESTED_CONTAINER\n  expect: allow\n- action: KILL_NESTED_CONTAINER\n",
    );
    assert!(
        err.contains("cases:3:3: case 1: missing field `expect`"),
        "{err}"
    );
    let err = bad_cases("broken.yml", "- name: x\n  expect: [allow\n");
    assert!(err.contains("broken.yml:3:"), "{err}");
    assert!(err.contains("not valid YAML"), "{err}");
}
