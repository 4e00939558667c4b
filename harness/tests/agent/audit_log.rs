//! `--audit_log`: the agent writes the authorizer's decisions as JSON lines
//! (an allowed and a denied pod launch, each with its deciding entry), and
//! rotates the file by size, each subject's denials within its budget.

use crate::agent_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use agent_support::{
    INTRUDER, OPS, agent_command, expect_address, library, pod, spawn_logged, stop_child, task,
    wait_until,
};

const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [
    {"principals": {"values": ["ops"]}, "users": {"type": "ANY"}},
    {"principals": {"values": ["intruder"]}, "users": {"type": "NONE"}}
  ]
}"#;

/// Principals without rights, beside ops and the intruder: enough for
/// their denials, each subject's within its sixteenth of a file, to rotate
/// the log twice.
const SUBJECTS: usize = 40;

/// The name and secret of the `i`th of [`SUBJECTS`].
fn subject(i: usize) -> (String, String) {
    (format!("tenant-{i}"), format!("tenant-secret-{i}"))
}

/// A posix agent with the audit log on; stops it, removes its pods and
/// its directory on drop, also when the test failed.
struct Audited {
    dir: tempfile::TempDir,
    address: String,
    child: Option<Child>,
}

impl Audited {
    fn start(flags: &[&str]) -> Audited {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-audit-log-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        std::fs::write(d.join("acls.json"), ACLS).unwrap();
        let mut creds = vec![
            serde_json::json!({"principal": OPS.0, "secret": OPS.1}),
            serde_json::json!({"principal": INTRUDER.0, "secret": INTRUDER.1}),
        ];
        creds.extend((0..SUBJECTS).map(|i| {
            let (p, s) = subject(i);
            serde_json::json!({"principal": p, "secret": s})
        }));
        let creds = serde_json::json!({ "credentials": creds });
        std::fs::write(d.join("credentials.json"), creds.to_string()).unwrap();
        std::fs::set_permissions(
            d.join("credentials.json"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        let manifest = serde_json::json!({"libraries": [{"file": library(), "modules": [
            {"name": "io_nestguard_Authorizer", "parameters": [{"key": "acls", "value": d.join("acls.json")}]}]}]});
        std::fs::write(d.join("modules.json"), manifest.to_string()).unwrap();
        let mut cmd = agent_command();
        cmd.arg(format!("--work_dir={}", d.join("work").display()))
            .arg(format!("--modules={}", d.join("modules.json").display()))
            .arg("--authorizer=io_nestguard_Authorizer")
            .arg(format!(
                "--http_credentials={}",
                d.join("credentials.json").display()
            ))
            .arg("--authenticate_http_readwrite")
            // No executor here, and no JWT key for its realm.
            .arg("--authenticate_http_executors=false")
            .arg("--launcher=posix")
            .arg("--port=0")
            .arg(format!("--audit_log={}", d.join("audit.log").display()))
            .args(flags);
        let (child, line) = spawn_logged(&mut cmd, d);
        let mut agent = Audited {
            dir,
            address: String::new(),
            child: Some(child),
        };
        agent.address = expect_address(&line, || agent.agent_log());
        agent
    }

    fn agent_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.log")
    }

    /// curl; returns (status, body).
    fn curl(&self, who: (&str, &str), args: &[&str], path: &str) -> (u16, String) {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}"])
            .args(["-u", &format!("{}:{}", who.0, who.1)])
            .args(args)
            .arg(format!("{}{path}", self.address))
            .output()
            .expect("run curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }

    fn launch_pod(&self, who: (&str, &str)) -> (u16, String) {
        let mut spec = pod(serde_json::json!([task("t", "true")]));
        // The framework is the launching principal's (the agent refuses a
        // mismatch before it asks the authorizer).
        spec["framework"]["principal"] = who.0.into();
        self.curl(
            who,
            &[
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                &spec.to_string(),
            ],
            "/nestguard/v1/pods",
        )
    }
}

impl Drop for Audited {
    fn drop(&mut self) {
        let meta = self.dir.path().join("work/meta/executors");
        if let Ok(entries) = std::fs::read_dir(&meta) {
            for e in entries.flatten() {
                let _ = self.curl(
                    OPS,
                    &["-X", "DELETE"],
                    &format!("/nestguard/v1/pods/{}", e.file_name().to_string_lossy()),
                );
            }
        }
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c);
        }
    }
}

fn records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn launches_are_logged_with_their_deciding_entries() {
    let agent = Audited::start(&[]);
    let (status, body) = agent.launch_pod(INTRUDER);
    assert_eq!(status, 403, "{body}");
    let (status, body) = agent.launch_pod(OPS);
    assert_eq!(status, 200, "{body}\n{}", agent.agent_log());

    let path = agent.audit_path();
    let find = |principal: &str| {
        records(&path)
            .into_iter()
            .find(|r| r["subject"] == principal && r["action"] == "RUN_TASK")
    };
    wait_until(
        "the allowed launch's record",
        Duration::from_secs(10),
        || find(OPS.0).is_some(),
    );
    let denied = find(INTRUDER.0).unwrap_or_else(|| {
        panic!(
            "no record for the denied launch in\n{}",
            std::fs::read_to_string(&path).unwrap_or_default()
        )
    });
    assert_eq!(denied["allowed"], false, "{denied}");
    assert_eq!(denied["decision"]["list"], "run_tasks", "{denied}");
    assert_eq!(denied["decision"]["index"], 1, "{denied}");
    let allowed = find(OPS.0).unwrap();
    assert_eq!(allowed["allowed"], true, "{allowed}");
    assert_eq!(allowed["decision"]["list"], "run_tasks", "{allowed}");
    assert_eq!(allowed["decision"]["index"], 0, "{allowed}");
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in [OPS.1, INTRUDER.1] {
        assert!(!text.contains(secret), "the audit log holds a secret");
    }
}

#[test]
fn denials_only_and_rotation_by_size() {
    const MAX: u64 = 64 * 1024;
    let agent = Audited::start(&[
        "--audit_denials_only",
        &format!("--audit_log_max_size={MAX}"),
    ]);
    // About 300 bytes a record, 4 KiB of denials a subject and file: 40
    // subjects' denials fill more than two files.
    for i in 0..SUBJECTS {
        let (p, s) = subject(i);
        for _ in 0..16 {
            assert_eq!(agent.launch_pod((&p, &s)).0, 403);
        }
    }
    let path = agent.audit_path();
    let mut old = path.clone().into_os_string();
    old.push(".1");
    let old = PathBuf::from(old);
    assert!(old.exists(), "rotated to {}", old.display());
    for file in [&path, &old] {
        let size = std::fs::metadata(file).unwrap().len();
        assert!(size <= MAX, "{}: {size} bytes", file.display());
        let recs = records(file);
        assert!(!recs.is_empty(), "{} is empty", file.display());
        assert!(
            recs.iter()
                .all(|r| r["allowed"] == false || r.get("summary").is_some()),
            "{}",
            file.display()
        );
    }
    let full = |file: &Path| {
        records(file)
            .iter()
            .filter(|r| r.get("summary").is_none())
            .count()
    };
    let total = full(&path) + full(&old);
    assert!(
        total < SUBJECTS * 16,
        "one old file kept, older records dropped: {total}"
    );
    // An allowed launch is not logged with --audit_denials_only.
    let before = records(&path).len();
    assert_eq!(agent.launch_pod(OPS).0, 200);
    assert!(
        records(&path).len() <= before
            && records(&path)
                .iter()
                .all(|r| r["allowed"] == false || r.get("summary").is_some())
    );
}

#[test]
fn a_log_smaller_than_the_budgets_need_is_refused() {
    let mut cmd = agent_command();
    cmd.args([
        "--work_dir=/nonexistent",
        "--audit_log=/nonexistent/a",
        "--audit_log_max_size=1500",
    ]);
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("audit_log_max_size"), "{err}");
}
