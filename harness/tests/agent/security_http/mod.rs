//! The agent's front door, tried as a hostile client would (issue 11, holes
//! 3, 4, 5, 8, 9 and the credentials matrix): a real `nestguard agent`
//! process that loaded the built libnestguard.so, driven over real HTTP.
//!
//! Each test starts its own agent on a free port with its own directories
//! (and, for the root test, its own cgroup root); [`Door`] stops it and
//! removes everything on drop, also when the test failed.

use crate::agent_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use agent_support::{
    INTRUDER, OPS, agent_command, expect_address, library, pod, require_root, spawn_logged,
    stop_child, task, wait_task_in,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

const VIEWER: (&str, &str) = ("viewer", "viewer-secret-1");
const ALICE_VIEWER: (&str, &str) = ("alice-viewer", "alice-viewer-secret-1");
const JWT_KEY: &str = "security-http-signing-key-0123456789abcdef";

/// What the agent under test runs with.
struct Setup {
    /// ACL JSON written to `acls.json` (the authorizer reads that file).
    acls: String,
    /// The Linux launcher with the isolator and credential hook (root), or
    /// the posix launcher alone.
    linux: bool,
    /// Pass `--http_credentials` (false: executor tokens only).
    basic: bool,
    /// More agent flags.
    flags: Vec<String>,
}

impl Setup {
    fn posix(acls: &str) -> Setup {
        Setup {
            acls: acls.to_owned(),
            linux: false,
            basic: true,
            flags: Vec::new(),
        }
    }

    fn flag(mut self, flag: &str) -> Setup {
        self.flags.push(flag.to_owned());
        self
    }
}

/// A running agent and its directory.
struct Door {
    dir: tempfile::TempDir,
    address: String,
    child: Option<Child>,
    cgroups_root: Option<String>,
    standalone: Vec<String>,
}

fn random_hex() -> String {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

impl Door {
    fn start(setup: Setup) -> Door {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-sec-http-")
            .tempdir()
            .unwrap();
        let d = dir.path().to_path_buf();
        std::fs::write(d.join("acls.json"), &setup.acls).unwrap();
        let creds: Vec<_> = [OPS, INTRUDER, VIEWER, ALICE_VIEWER]
            .iter()
            .map(|(p, s)| serde_json::json!({"principal": p, "secret": s}))
            .collect();
        write_private(
            &d.join("credentials.json"),
            &serde_json::json!({ "credentials": creds }).to_string(),
        );
        write_private(&d.join("jwt.key"), JWT_KEY);
        let cgroups_root = setup
            .linux
            .then(|| format!("nestguard-e2e-sec-{}-{}", std::process::id(), random_hex()));
        let mut modules = vec![serde_json::json!({"name": "io_nestguard_Authorizer",
            "parameters": [{"key": "acls", "value": d.join("acls.json")}]})];
        if let Some(root) = &cgroups_root {
            modules.push(
                serde_json::json!({"name": "io_nestguard_Isolator", "parameters": [
                {"key": "cgroups_root", "value": root},
                {"key": "credentials_jwt_key", "value": d.join("jwt.key")}]}),
            );
            modules.push(serde_json::json!({"name": "io_nestguard_CredentialHook"}));
        }
        let manifest = serde_json::json!({"libraries": [{"file": library(), "modules": modules}]});
        std::fs::write(d.join("modules.json"), manifest.to_string()).unwrap();

        let mut cmd = agent_command();
        cmd.arg(format!("--work_dir={}", d.join("work").display()))
            .arg(format!("--modules={}", d.join("modules.json").display()))
            .arg("--authorizer=io_nestguard_Authorizer")
            .arg(format!("--jwt_secret_key={}", d.join("jwt.key").display()))
            .arg("--authenticate_http_readwrite")
            .arg("--port=0");
        if setup.basic {
            cmd.arg(format!(
                "--http_credentials={}",
                d.join("credentials.json").display()
            ));
        }
        if setup.linux {
            cmd.args([
                "--launcher=linux",
                "--hooks=io_nestguard_CredentialHook",
                "--isolation=io_nestguard_Isolator",
            ]);
        } else {
            cmd.arg("--launcher=posix");
        }
        cmd.args(&setup.flags);
        let (child, line) = spawn_logged(&mut cmd, &d);
        let mut door = Door {
            dir,
            address: String::new(),
            child: None,
            cgroups_root,
            standalone: Vec::new(),
        };
        door.child = Some(child);
        door.address = expect_address(&line, || door.log());
        door
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    fn host_port(&self) -> String {
        self.address.trim_start_matches("http://").to_owned()
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// Whether the agent process is still running.
    fn alive(&mut self) -> bool {
        matches!(self.child.as_mut().unwrap().try_wait(), Ok(None))
    }

    /// curl with `args` before the URL; returns (status, headers, body).
    fn curl(&self, args: &[&str], path: &str) -> (u16, String, String) {
        let out = Command::new("curl")
            .args(["-s", "-S", "--max-time", "20", "-D", "-", "-o", "-"])
            .args(args)
            .arg(format!("{}{path}", self.address))
            .output()
            .expect("run curl");
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        // Interim `100 Continue` heads come first in curl's dump.
        while text.starts_with("HTTP/1.1 100") {
            text = text
                .split_once("\r\n\r\n")
                .map(|(_, rest)| rest.to_owned())
                .unwrap_or_default();
        }
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, head.to_lowercase(), body.to_owned())
    }

    /// POST of a JSON body with the given extra headers.
    fn post(&self, headers: &[String], path: &str, body: &str) -> (u16, String, String) {
        let mut args: Vec<&str> = vec!["-X", "POST", "-H", "Content-Type: application/json"];
        for h in headers {
            args.extend(["-H", h.as_str()]);
        }
        args.extend(["--data-binary", body]);
        self.curl(&args, path)
    }

    /// A JSON POST to /api/v1 as `who`.
    fn api(&self, who: (&str, &str), call: &serde_json::Value) -> (u16, String) {
        let (status, _, body) = self.post(&[basic(who.0, who.1)], "/api/v1", &call.to_string());
        (status, body)
    }

    /// Every path under the work directory (what a request may have created).
    fn work_tree(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.dir.path().join("work")];
        while let Some(p) = stack.pop() {
            if let Ok(entries) = std::fs::read_dir(&p) {
                for e in entries.flatten() {
                    let path = e.path();
                    if path.is_dir() && !path.is_symlink() {
                        stack.push(path.clone());
                    }
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// Launches a standalone container as ops (removed on drop).
    fn launch_standalone(&mut self, id: &str, command: &str) {
        let call = serde_json::json!({"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": {"value": id}, "command": {"value": command}}});
        let (status, body) = self.api(OPS, &call);
        assert_eq!(status, 200, "{body}\n{}", self.log());
        self.standalone.push(id.to_owned());
    }

    /// Launches a pod as ops; returns its executor container ID and sandbox.
    fn launch_pod(&self, spec: &serde_json::Value) -> (String, PathBuf) {
        let (status, _, body) = self.post(
            &[basic(OPS.0, OPS.1)],
            "/nestguard/v1/pods",
            &spec.to_string(),
        );
        assert_eq!(status, 200, "pod launch: {body}\n{}", self.log());
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let id = v["container_id"].as_str().unwrap().to_owned();
        let (_, _, status) = self.curl(
            &["-u", &format!("{}:{}", OPS.0, OPS.1)],
            &format!("/nestguard/v1/pods/{id}"),
        );
        let v: serde_json::Value = serde_json::from_str(&status).unwrap();
        (id, PathBuf::from(v["sandbox"].as_str().unwrap()))
    }

    /// Waits until the default executor reports `state` for `task`.
    fn wait_task(&self, sandbox: &Path, task: &str, state: &str) -> serde_json::Value {
        wait_task_in(sandbox, task, state, || self.log())
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        if self.child.is_some() {
            let meta = self.dir.path().join("work/meta/executors");
            if let Ok(entries) = std::fs::read_dir(&meta) {
                for e in entries.flatten() {
                    let _ = self.curl(
                        &["-X", "DELETE", "-u", &format!("{}:{}", OPS.0, OPS.1)],
                        &format!("/nestguard/v1/pods/{}", e.file_name().to_string_lossy()),
                    );
                }
            }
            for id in std::mem::take(&mut self.standalone) {
                for kind in ["kill_container", "remove_container"] {
                    let call = serde_json::json!({"type": kind.to_uppercase(),
                        kind: {"container_id": {"value": id}}});
                    let _ = self.api(OPS, &call);
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c);
        }
        if let Some(root) = &self.cgroups_root {
            kill_and_remove_cgroups(root);
        }
    }
}

/// Kills whatever is left in the test's own cgroup tree, then removes it,
/// deepest first. Only ever called with this file's own root names.
fn kill_and_remove_cgroups(root: &str) {
    assert!(root.starts_with("nestguard-e2e-sec-"));
    for top in agent_support::cgroup_tops(root) {
        let mut dirs = vec![top];
        let mut i = 0;
        while i < dirs.len() {
            if let Ok(children) = std::fs::read_dir(&dirs[i]) {
                dirs.extend(children.flatten().map(|c| c.path()).filter(|p| p.is_dir()));
            }
            i += 1;
        }
        for dir in dirs.iter().rev() {
            for _ in 0..50 {
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn basic(principal: &str, secret: &str) -> String {
    format!(
        "Authorization: Basic {}",
        B64.encode(format!("{principal}:{secret}"))
    )
}

/// Polls `f` until it returns true or `timeout` passes.
fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

const ALLOW_OPS_WAIT: &str = r#"{
  "permissive": false,
  "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
}"#;

const DENY_OPS_WAIT: &str = r#"{
  "permissive": false,
  "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "NONE"}}]
}"#;

fn wait_missing() -> serde_json::Value {
    serde_json::json!({"type": "WAIT_CONTAINER", "wait_container": {"container_id": {"value": "no-such-container"}}})
}

// ----- hole 3: GET_CONTAINERS -------------------------------------------------

fn get_containers(door: &Door, who: (&str, &str), nested: bool, standalone: bool) -> Vec<String> {
    let call = serde_json::json!({"type": "GET_CONTAINERS",
        "get_containers": {"show_nested": nested, "show_standalone": standalone}});
    let (status, body) = door.api(who, &call);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut out: Vec<String> = v["get_containers"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let id = &c["container_id"];
            let leaf = id["value"].as_str().unwrap_or("");
            let full = match id["parent"]["value"].as_str() {
                Some(p) => format!("{p}.{leaf}"),
                None => leaf.to_owned(),
            };
            match c["executor_id"]["value"].as_str() {
                Some(e) => format!(
                    "{full} executor={e} framework={}",
                    c["framework_id"]["value"].as_str().unwrap_or("")
                ),
                None => full,
            }
        })
        .collect();
    out.sort();
    out
}

#[test]
fn get_containers_is_filtered_by_view_acls() {
    if !require_root() {
        return;
    }
    let acls = r#"{
      "permissive": false,
      "run_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "kill_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
      "view_containers": [
        {"principals": {"values": ["viewer"]}, "users": {"values": ["root"]}},
        {"principals": {"values": ["alice-viewer"]}, "users": {"values": ["alice"]}}
      ],
      "view_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
    }"#;
    let mut door = Door::start(Setup {
        linux: true,
        ..Setup::posix(acls)
    });
    let spec = pod(serde_json::json!([task("app", "sleep 60")]));
    let executor = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let (pod_id, sandbox) = door.launch_pod(&spec);
    let app = door.wait_task(&sandbox, "app", "TASK_RUNNING")["container_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let standalone = format!("sa-{}", random_hex());
    door.launch_standalone(&standalone, "sleep 60");

    let executor_entry = format!("{pod_id} executor={executor} framework=e2e-framework");
    // viewer may view root's executors: the executor container always, its
    // nested containers with show_nested, never the standalone one.
    assert_eq!(
        get_containers(&door, VIEWER, false, false),
        vec![executor_entry.clone()]
    );
    let mut both = vec![executor_entry, app];
    both.sort();
    assert_eq!(get_containers(&door, VIEWER, true, true), both);
    // ops may view standalone containers only, and only with show_standalone.
    assert_eq!(
        get_containers(&door, OPS, true, false),
        Vec::<String>::new()
    );
    assert_eq!(get_containers(&door, OPS, true, true), vec![standalone]);
    // An executor token (claims, no principal) views nothing, as in Mesos,
    // not even its own pod.
    let out = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(["token", "issue", "--key"])
        .arg(door.dir.path().join("jwt.key"))
        .args([
            "--fid",
            "e2e-framework",
            "--eid",
            &executor,
            "--cid",
            &pod_id,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let call = serde_json::json!({"type": "GET_CONTAINERS",
        "get_containers": {"show_nested": true, "show_standalone": true}});
    let (status, _, body) = door.post(
        &[format!("Authorization: Bearer {token}")],
        "/api/v1",
        &call.to_string(),
    );
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"type":"GET_CONTAINERS","get_containers":{}}"#)
    );
    // No matching entry, or an entry for another user: nothing at all.
    for who in [INTRUDER, ALICE_VIEWER] {
        assert_eq!(
            get_containers(&door, who, true, true),
            Vec::<String>::new(),
            "{}",
            who.0
        );
    }
}

// ----- hole 4: authenticate before anything else -----------------------------

#[test]
fn unauthenticated_requests_get_401_before_the_body_is_looked_at() {
    let door = Door::start(Setup::posix(ALLOW_OPS_WAIT).flag("--max_body_bytes=65536"));
    let before = door.work_tree();
    let big = "x".repeat(3 << 20);
    let cases: Vec<(&str, &str, String, &str)> = vec![
        // (method, path, body, content type)
        ("POST", "/api/v1", "{not json".into(), "application/json"),
        ("POST", "/api/v1", "{}".into(), "text/plain"),
        ("POST", "/api/v1", big.clone(), "application/json"),
        ("GET", "/api/v1", String::new(), "application/json"),
        (
            "POST",
            "/nestguard/v1/pods",
            "{not json".into(),
            "application/json",
        ),
        (
            "POST",
            "/nestguard/v1/pods",
            big.clone(),
            "application/json",
        ),
        (
            "GET",
            "/nestguard/v1/pods/x",
            String::new(),
            "application/json",
        ),
        (
            "DELETE",
            "/nestguard/v1/pods/x",
            String::new(),
            "application/json",
        ),
        (
            "POST",
            "/slave(1)/api/v1",
            "\u{1}\u{2}".into(),
            "application/x-protobuf",
        ),
    ];
    let body_file = door.dir.path().join("body");
    for (method, path, body, content_type) in &cases {
        std::fs::write(&body_file, body).unwrap();
        let data = format!("@{}", body_file.display());
        let ct = format!("Content-Type: {content_type}");
        let mut args = vec!["-X", method, "-H", &ct];
        if !body.is_empty() {
            args.extend(["--data-binary", &data]);
        }
        let (status, head, text) = door.curl(&args, path);
        assert_eq!(
            (status, text.as_str()),
            (401, "401 Unauthorized."),
            "{method} {path} ({} bytes): {head}",
            body.len()
        );
        assert!(
            head.contains("www-authenticate: basic realm=\"mesos-agent-readwrite\""),
            "{head}"
        );
        // More than the pre-authentication cap is never read: the
        // connection is closed instead.
        if body.len() > 4096 {
            assert!(head.contains("connection: close"), "{head}");
        }
    }
    // Authenticated, the body cap (a flag) answers 413 (from the announced
    // length, before the body is sent); below it Mesos' texts.
    let (status, _, _) = door.post(
        &[basic(OPS.0, OPS.1), "Expect: 100-continue".into()],
        "/api/v1",
        &"x".repeat(100_000),
    );
    assert_eq!(status, 413);
    let (status, _, text) = door.post(&[basic(OPS.0, OPS.1)], "/api/v1", "{not json");
    assert_eq!(status, 400, "{text}");
    assert_eq!(door.work_tree(), before);
}

// ----- hole 5: 403 bodies ------------------------------------------------------

#[test]
fn forbidden_bodies_carry_no_acl_internals() {
    let door = Door::start(Setup::posix(DENY_OPS_WAIT));
    let (status, body) = door.api(OPS, &wait_missing());
    assert_eq!((status, body.as_str()), (403, "403 Forbidden."));
    // A pod launch the ACLs deny (no run_tasks entry): the same neutral body.
    let spec = pod(serde_json::json!([task("t", "true")]));
    let (status, _, body) = door.post(
        &[basic(INTRUDER.0, INTRUDER.1)],
        "/nestguard/v1/pods",
        &spec.to_string(),
    );
    assert_eq!((status, body.as_str()), (403, "403 Forbidden."));

    // The operator finds the reason in the decision log ...
    let log = door.log();
    let line = log
        .lines()
        .find(|l| {
            l.contains("nestguard::decision")
                && l.contains("principal=ops")
                && l.contains("action=\"WAIT_STANDALONE_CONTAINER\"")
        })
        .unwrap_or_else(|| panic!("no decision logged:\n{log}"));
    assert!(line.contains("decision=\"deny\""), "{line}");
    assert!(line.contains("wait_standalone_containers[0]"), "{line}");
    assert!(line.contains("container_id=no-such-container"), "{line}");
    // ... and from `nestguard acls explain`.
    let out = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(["acls", "explain"])
        .arg(door.dir.path().join("acls.json"))
        .args([
            "--action=WAIT_STANDALONE_CONTAINER",
            "--principal=ops",
            "--container-id=no-such-container",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let why: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (why["list"].as_str(), why["index"].as_u64()),
        (Some("wait_standalone_containers"), Some(0))
    );
}

#[test]
fn bad_credentials_get_401_and_create_nothing() {
    let mut door = Door::start(Setup::posix(
        r#"{"permissive": true}"#, // everything allowed once authenticated
    ));
    let marker = door.dir.path().join("ran");
    let command = format!("touch {}", marker.display());
    let standalone = serde_json::json!({"type": "LAUNCH_CONTAINER", "launch_container": {
        "container_id": {"value": "matrix"}, "command": {"value": command}}});
    let mut spec = pod(serde_json::json!([task("t", &command)]));
    spec["executor"]["type"] = "CUSTOM".into();
    spec["executor"]["command"] = serde_json::json!({"value": command});
    let huge = format!(
        "Authorization: Basic {}",
        B64.encode(format!("ops:{}", "a".repeat(16 << 10)))
    );
    let cases: Vec<(&str, String)> = vec![
        ("none", String::new()),
        ("bad base64", "Authorization: Basic !!!not-base64!!!".into()),
        (
            "no colon",
            format!("Authorization: Basic {}", B64.encode("opsops-secret-1")),
        ),
        ("empty credentials", "Authorization: Basic ".into()),
        ("empty header", "Authorization;".into()),
        ("scheme only", "Authorization: Basic".into()),
        (
            "unknown scheme",
            format!("Authorization: Digest {}", B64.encode("ops:ops-secret-1")),
        ),
        ("two colons", basic(OPS.0, &format!("{}:x", OPS.1))),
        ("huge", huge),
        ("wrong secret", basic(OPS.0, "ops-secret-2")),
        ("empty secret", basic(OPS.0, "")),
        ("unknown principal", basic("ghost", OPS.1)),
        ("principal case", basic("OPS", OPS.1)),
        ("garbage bearer", "Authorization: Bearer not.a.jwt".into()),
        (
            "secret as bearer",
            format!("Authorization: Bearer {}", OPS.1),
        ),
    ];
    let before = door.work_tree();
    for (name, header) in &cases {
        let headers: Vec<String> = if header.is_empty() {
            Vec::new()
        } else {
            vec![header.clone()]
        };
        for (path, body) in [
            ("/api/v1", standalone.to_string()),
            ("/nestguard/v1/pods", spec.to_string()),
        ] {
            let (status, head, text) = door.post(&headers, path, &body);
            assert_eq!(
                (status, text.as_str()),
                (401, "401 Unauthorized."),
                "{name} on {path}: {head}"
            );
            assert!(
                head.contains("www-authenticate: basic realm="),
                "{name}: {head}"
            );
        }
    }
    // A header past hyper's buffer (about 400 KiB) never reaches the
    // authenticator: the connection is refused (431) or just closed.
    let header_file = door.dir.path().join("huge-header");
    std::fs::write(
        &header_file,
        format!("Authorization: Basic {}\n", "A".repeat(1 << 20)),
    )
    .unwrap();
    let at_file = format!("@{}", header_file.display());
    let (status, head, _) = door.curl(
        &["-X", "POST", "-H", &at_file, "--data-binary", "{}"],
        "/api/v1",
    );
    assert!(status == 0 || status == 431, "{status} {head}");
    // Absence cannot be polled for: give the agent time to act wrongly.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(door.work_tree(), before, "a rejected request created files");
    assert!(!marker.exists(), "a rejected request ran a process");
    assert!(door.alive());

    // The same calls with good credentials do run (the matrix can fail).
    door.launch_standalone("matrix", &command);
    assert!(
        eventually(Duration::from_secs(10), || marker.exists()),
        "{}",
        door.log()
    );
}

#[test]
fn basic_on_a_token_only_agent_gets_401() {
    // No --http_credentials: only executor tokens authenticate.
    let door = Door::start(Setup {
        basic: false,
        ..Setup::posix(r#"{"permissive": true}"#)
    });
    let before = door.work_tree();
    let launch = serde_json::json!({"type": "LAUNCH_CONTAINER", "launch_container": {
        "container_id": {"value": "basic"}, "command": {"value": "true"}}});
    let (status, head, body) = door.post(&[basic(OPS.0, OPS.1)], "/api/v1", &launch.to_string());
    assert_eq!(
        (status, body.as_str()),
        (401, "401 Unauthorized."),
        "{head}"
    );
    assert_eq!(door.work_tree(), before);
}

mod connections;
mod reload;
