//! Standing adversarial suite, pods and executor tokens (issue 11, holes 1, 6
//! and 11, plus the token matrix): a real `nestguard agent` with the real
//! libnestguard.so, attacked over HTTP. Every refused request is checked for
//! its exact status, for leaving nothing in the work directory and for
//! running nothing (each refused command would create a marker file).
//! Needs root (the Linux launcher); with CI=true skipping is a failure.

use crate::agent_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_support::{INTRUDER, OPS, TestAgent, alive, nested, pod, require_root, task};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use nestguard::credentials::{Secret, jwt};

const KEY: &str = "e2e-test-signing-key-0123456789abcdef";

/// ACLs for these tests: `ops` may run tasks and launch nested containers
/// only as `root`; `intruder` may run tasks as anyone but nothing else.
const STRICT_ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [
    {"principals": {"values": ["ops"]}, "users": {"values": ["root"]}},
    {"principals": {"values": ["intruder"]}, "users": {"type": "ANY"}}
  ],
  "manage_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"values": ["root"]}}]
}"#;

/// An agent whose modules manifest and ACLs are rewritten by `edit` before
/// it starts again (the first start only lays out the directory).
fn agent_with(acls: &str, edit: impl FnOnce(&mut serde_json::Value)) -> TestAgent {
    let mut agent = TestAgent::start();
    agent.sigkill();
    let d = agent.dir.path().to_path_buf();
    std::fs::write(d.join("acls.json"), acls).unwrap();
    let path = d.join("modules.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut manifest);
    std::fs::write(&path, manifest.to_string()).unwrap();
    agent.spawn();
    agent
}

/// Appends a parameter to module `name` of the manifest.
fn add_param(manifest: &mut serde_json::Value, name: &str, key: &str, value: &str) {
    let modules = manifest["libraries"][0]["modules"].as_array_mut().unwrap();
    let module = modules.iter_mut().find(|m| m["name"] == name).unwrap();
    if module.get("parameters").is_none() {
        module["parameters"] = serde_json::json!([]);
    }
    module["parameters"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"key": key, "value": value}));
}

/// A marker path outside the work directory; a command that ran creates it.
fn marker(agent: &TestAgent, name: &str) -> PathBuf {
    agent.dir.path().join(format!("ran-{name}"))
}

/// Nothing ran and nothing was made: the marker never appears, the agent
/// checkpointed no executor or standalone container and made no sandbox.
fn assert_nothing_happened(agent: &TestAgent, marker: &Path) {
    // Absence cannot be polled for: give a refused request time to do harm.
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        !marker.exists(),
        "a refused command ran: {}",
        marker.display()
    );
    let work = agent.dir.path().join("work");
    for sub in ["meta/executors", "meta/standalone", "containers"] {
        let entries: Vec<_> = std::fs::read_dir(work.join(sub))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(entries.is_empty(), "{sub} holds {entries:?}");
    }
    let slaves: Vec<_> = std::fs::read_dir(work.join("slaves"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(slaves.is_empty(), "sandboxes were created: {slaves:?}");
    // Nothing outside the work directory either: only the fixture's files.
    let mut top: Vec<String> = std::fs::read_dir(agent.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(
        top,
        [
            "acls.json",
            "agent.log",
            "credentials.json",
            "jwt.key",
            "modules.json",
            "work"
        ]
    );
}

/// A pod whose CUSTOM executor would create `marker`.
fn custom_pod(
    principal: &str,
    user: &str,
    marker: &Path,
    tasks: serde_json::Value,
) -> serde_json::Value {
    let mut spec = pod(tasks);
    spec["framework"]["principal"] = principal.into();
    spec["framework"]["user"] = user.into();
    spec["executor"]["type"] = "CUSTOM".into();
    spec["executor"]["command"] =
        serde_json::json!({"value": format!("touch {}; sleep 30", marker.display())});
    spec
}

fn post_pod(
    agent: &TestAgent,
    who: Option<(&str, &str)>,
    spec: &serde_json::Value,
) -> (u16, String) {
    agent.curl(who, "/nestguard/v1/pods", &spec.to_string())
}

fn launch_nested(parent: &str, child: &str, command: &str, user: Option<&str>) -> String {
    let mut command = serde_json::json!({"value": command});
    if let Some(u) = user {
        command["user"] = u.into();
    }
    serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER", "launch_nested_container": {
        "container_id": nested(parent, child), "command": command}})
    .to_string()
}

fn token_for(cid: &str) -> String {
    token_with(&[("cid", cid), ("eid", "e"), ("fid", "e2e-framework")])
}

fn token_with(claims: &[(&str, &str)]) -> String {
    let claims: BTreeMap<String, String> = claims
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    jwt::issue(&claims, &Secret::from(KEY))
}

/// A JWT with any header, signed HS512 with `key` (or not at all).
fn forged(header: &str, claims: &str, hs512_key: Option<&str>) -> String {
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let signature = match hs512_key {
        Some(k) => {
            let mut mac = Hmac::<sha2::Sha512>::new_from_slice(k.as_bytes()).unwrap();
            mac.update(signing_input.as_bytes());
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        }
        None => String::new(),
    };
    format!("{signing_input}.{signature}")
}

/// Launches a legitimate pod as ops with one long task; returns its root id.
fn running_pod(agent: &TestAgent) -> String {
    let (id, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("main", "sleep 60")])));
    agent.wait_task(&sandbox, "main", "TASK_RUNNING");
    id
}

fn wait_for(path: &Path) -> String {
    agent_support::poll(
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(path)
                .ok()
                .filter(|t| t.ends_with('\n'))
        },
        || format!("{} never written", path.display()),
    )
}

// ----- hole 1: pod launch without authorization ------------------------------

#[test]
fn hole1_pod_launch_needs_run_task_for_tasks_and_executor() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let ran = marker(&agent, "pod");

    // No allowing ACL: a CUSTOM executor (with or without tasks) runs nothing.
    let spec = custom_pod(
        "intruder",
        "root",
        &ran,
        serde_json::json!([task("t", "true")]),
    );
    let (status, body) = post_pod(&agent, Some(INTRUDER), &spec);
    assert_eq!(status, 403, "{body}");
    let spec = custom_pod("intruder", "root", &ran, serde_json::json!([]));
    let (status, body) = post_pod(&agent, Some(INTRUDER), &spec);
    assert!(status == 400 || status == 403, "{status} {body}");
    // Even for an allowed principal an empty task group is refused.
    let spec = custom_pod("ops", "root", &ran, serde_json::json!([]));
    let (status, body) = post_pod(&agent, Some(OPS), &spec);
    assert_eq!(
        (status, body.as_str()),
        (400, "Task group must not be empty")
    );
    assert_nothing_happened(&agent, &ran);
}

#[test]
fn hole1_the_authenticated_principal_must_be_the_frameworks() {
    if !require_root() {
        return;
    }
    // intruder may run tasks as anyone, but only as its own framework.
    let agent = agent_with(STRICT_ACLS, |_| {});
    let ran = marker(&agent, "principal");
    // intruder claims to be the ops framework.
    let spec = custom_pod("ops", "root", &ran, serde_json::json!([task("t", "true")]));
    let (status, body) = post_pod(&agent, Some(INTRUDER), &spec);
    assert_eq!(status, 403, "{body}");
    assert_nothing_happened(&agent, &ran);
}

#[test]
fn hole1_token_only_subjects_never_launch_pods() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let live = running_pod(&agent);
    let ran = marker(&agent, "token-pod");
    let spec = custom_pod("ops", "root", &ran, serde_json::json!([task("t", "true")]));
    let before = std::fs::read_dir(agent.dir.path().join("work/meta/executors"))
        .unwrap()
        .count();
    let (status, body) =
        agent.curl_bearer(&token_for(&live), "/nestguard/v1/pods", &spec.to_string());
    assert_eq!(status, 403, "{body}");
    // Without tasks there is no RUN_TASK to refuse it: still 403.
    let spec = custom_pod("ops", "root", &ran, serde_json::json!([]));
    let (status, body) =
        agent.curl_bearer(&token_for(&live), "/nestguard/v1/pods", &spec.to_string());
    assert_eq!(status, 403, "{body}");
    // Nor does a dead pod's token (401: its container is gone).
    let (status, body) = agent.curl_bearer(
        &token_for("no-such-pod"),
        "/nestguard/v1/pods",
        &spec.to_string(),
    );
    assert_eq!(status, 401, "{body}");
    // Absence cannot be polled for: give a refused request time to do harm.
    std::thread::sleep(Duration::from_millis(700));
    assert!(!ran.exists());
    let after = std::fs::read_dir(agent.dir.path().join("work/meta/executors"))
        .unwrap()
        .count();
    assert_eq!(before, after, "a token created an executor");
}

#[test]
fn hole1_executor_user_and_task_users_are_authorized() {
    if !require_root() {
        return;
    }
    let agent = agent_with(STRICT_ACLS, |_| {});
    let ran = marker(&agent, "users");
    // ops may run as root only: a task as nobody is refused ...
    let mut t = task("t", "true");
    t["task"]["command"]["user"] = "nobody".into();
    let spec = custom_pod("ops", "root", &ran, serde_json::json!([t]));
    assert_eq!(post_pod(&agent, Some(OPS), &spec).0, 403);
    // ... and so is an executor running as nobody whose tasks run as root.
    let mut t = task("t", "true");
    t["task"]["command"]["user"] = "root".into();
    let mut spec = custom_pod("ops", "root", &ran, serde_json::json!([t]));
    spec["executor"]["command"]["user"] = "nobody".into();
    assert_eq!(post_pod(&agent, Some(OPS), &spec).0, 403);
    // Tasks that disagree with the executor are invalid.
    let mut t = task("t", "true");
    t["task"]["executor"] =
        serde_json::json!({"executor_id": {"value": "other"}, "type": "DEFAULT"});
    let spec = custom_pod("ops", "root", &ran, serde_json::json!([t]));
    let (status, body) = post_pod(&agent, Some(OPS), &spec);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("is different from executor"), "{body}");
    // Duplicate task ids are invalid.
    let spec = custom_pod(
        "ops",
        "root",
        &ran,
        serde_json::json!([task("d", "true"), task("d", "true")]),
    );
    let (status, body) = post_pod(&agent, Some(OPS), &spec);
    assert_eq!(
        (status, body.as_str()),
        (400, "Task 'd' is invalid: Task has duplicate ID: d")
    );
    // A mismatching executor framework id is invalid.
    let mut spec = custom_pod("ops", "root", &ran, serde_json::json!([task("t", "true")]));
    spec["executor"]["framework_id"]["value"] = "someone-else".into();
    let (status, body) = post_pod(&agent, Some(OPS), &spec);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.starts_with("ExecutorInfo has an invalid FrameworkID"),
        "{body}"
    );
    assert_nothing_happened(&agent, &ran);
}

// ----- hole 6: executor tokens --------------------------------------------------

#[test]
fn hole6_a_dead_pods_token_is_rejected() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let live = running_pod(&agent);
    let token = token_for(&live);
    let ok = marker(&agent, "alive");
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1",
        &launch_nested(&live, "alive", &format!("touch {}", ok.display()), None),
    );
    assert_eq!(status, 200, "{body}");
    wait_for_file(&ok);
    assert_eq!(agent.delete(&format!("/nestguard/v1/pods/{live}")).0, 200);
    let ran = marker(&agent, "dead");
    for body in [
        launch_nested(&live, "dead", &format!("touch {}", ran.display()), None),
        serde_json::json!({"type": "WAIT_NESTED_CONTAINER", "wait_nested_container": {"container_id": nested(&live, "alive")}}).to_string(),
    ] {
        let (status, text) = agent.curl_bearer(&token, "/api/v1", &body);
        assert_eq!(status, 401, "{text}");
    }
    // Absence cannot be polled for: give a refused request time to do harm.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!ran.exists());
}

/// The HTTP status of a curl request with `args` before the URL.
fn raw_status(agent: &TestAgent, args: &[&str], path: &str) -> u16 {
    let out = std::process::Command::new("curl")
        .args(["-s", "--max-time", "120"])
        .args(["-o", "/dev/null", "-w", "%{http_code}"])
        .args(args)
        .arg(format!("{}{path}", agent.address))
        .output()
        .expect("run curl");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn hole6_a_token_launches_only_as_its_executors_user_by_default() {
    if !require_root() {
        return;
    }
    // ops' framework principal may not launch nested containers as nobody.
    let agent = agent_with(STRICT_ACLS, |_| {});
    let live = running_pod(&agent);
    let token = token_for(&live);
    let ran = marker(&agent, "as-nobody");
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1",
        &launch_nested(
            &live,
            "x",
            &format!("touch {}", ran.display()),
            Some("nobody"),
        ),
    );
    assert_eq!(status, 403, "{body}");
    // The executor's own user (root, explicitly or by default) is fine.
    let own = marker(&agent, "as-root");
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1",
        &launch_nested(
            &live,
            "y",
            &format!("touch {}", own.display()),
            Some("root"),
        ),
    );
    assert_eq!(status, 200, "{body}");
    wait_for_file(&own);
    // Absence cannot be polled for: give a refused request time to do harm.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!ran.exists());
    assert!(!live.is_empty());
}

#[test]
fn hole6_executor_tokens_any_user_restores_mesos() {
    if !require_root() {
        return;
    }
    let agent = agent_with(STRICT_ACLS, |m| {
        add_param(
            m,
            "io_nestguard_Authorizer",
            "executor_tokens_any_user",
            "true",
        );
    });
    let live = running_pod(&agent);
    let token = token_for(&live);
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1",
        &launch_nested(&live, "x", "test \"$(id -un)\" = nobody", Some("nobody")),
    );
    assert_eq!(status, 200, "{body}");
    let wait = serde_json::json!({"type": "WAIT_NESTED_CONTAINER", "wait_nested_container": {
        "container_id": nested(&live, "x")}})
    .to_string();
    let (status, body) = agent.curl_bearer(&token, "/api/v1", &wait);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["wait_nested_container"]["exit_status"], 0, "{body}");
}

#[test]
fn hole6_an_empty_cid_prefix_grants_nothing() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let ran = marker(&agent, "prefix");
    let token = token_with(&[("cid_prefix", "")]);
    let body = serde_json::json!({"type": "LAUNCH_CONTAINER", "launch_container": {
        "container_id": {"value": "by-empty-prefix"},
        "command": {"value": format!("touch {}", ran.display())}}})
    .to_string();
    let (status, text) = agent.curl_bearer(&token, "/api/v1", &body);
    assert_eq!(status, 403, "{text}");
    assert_nothing_happened(&agent, &ran);
}

// ----- hole 11: secret mode hands out other principals' secrets ----------------

/// An agent whose hook injects in secret mode, with an extra hook parameter.
fn secret_mode_agent(mapping: Option<&str>) -> TestAgent {
    agent_with(STRICT_ACLS, |m| {
        add_param(m, "io_nestguard_CredentialHook", "mode", "secret");
        if let Some(v) = mapping {
            add_param(m, "io_nestguard_CredentialHook", "executor_principals", v);
        }
    })
}

fn principal_pod(agent: &TestAgent, out: &Path, label: Option<&str>) -> serde_json::Value {
    let mut spec = custom_pod(
        "intruder",
        "root",
        out,
        serde_json::json!([task("t", "true")]),
    );
    spec["executor"]["command"]["value"] =
        format!("echo \"$MESOS_PRINCIPAL\" > {}; sleep 30", out.display()).into();
    if let Some(l) = label {
        spec["executor"]["labels"] =
            serde_json::json!({"labels": [{"key": "principal", "value": l}]});
    }
    let _ = agent;
    spec
}

#[test]
fn hole11_a_label_cannot_claim_another_principals_secret() {
    if !require_root() {
        return;
    }
    let agent = secret_mode_agent(None);
    let stolen = marker(&agent, "stolen");
    let (status, body) = post_pod(
        &agent,
        Some(INTRUDER),
        &principal_pod(&agent, &stolen, Some("ops")),
    );
    assert_eq!(status, 403, "{body}");
    assert_nothing_happened(&agent, &stolen);
    // Without a label the framework gets its own principal.
    let own = agent.dir.path().join("work/own-principal");
    let (status, body) = post_pod(&agent, Some(INTRUDER), &principal_pod(&agent, &own, None));
    assert_eq!(status, 200, "{body}");
    assert_eq!(wait_for(&own), "intruder\n");
}

#[test]
fn hole11_an_operator_mapping_allows_a_label() {
    if !require_root() {
        return;
    }
    let agent = secret_mode_agent(Some(r#"{"intruder": ["ops"]}"#));
    let out = agent.dir.path().join("work/mapped-principal");
    let (status, body) = post_pod(
        &agent,
        Some(INTRUDER),
        &principal_pod(&agent, &out, Some("ops")),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(wait_for(&out), "ops\n");
}

// ----- the token matrix ------------------------------------------------------------

#[test]
fn token_matrix() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let pod_a = running_pod(&agent);
    let pod_b = running_pod(&agent);
    let ran = marker(&agent, "matrix");
    let touch = format!("touch {}", ran.display());
    let claims = format!(r#"{{"cid":"{pod_a}","eid":"e","fid":"e2e-framework"}}"#);
    let launch_a = launch_nested(&pod_a, "m", &touch, None);

    // Bad or missing credentials: 401 on the API and on the pod endpoint.
    let bad_tokens = [
        forged(r#"{"alg":"none","typ":"JWT"}"#, &claims, None),
        forged(r#"{"alg":"HS512","typ":"JWT"}"#, &claims, Some(KEY)),
        forged(r#"{"alg":"RS256","typ":"JWT"}"#, &claims, Some(KEY)),
        jwt::issue(
            &[("cid".to_owned(), pod_a.clone())].into_iter().collect(),
            &Secret::from("not-the-agent-key-0123456789abcdef"),
        ),
        "not.a.jwt".to_owned(),
        String::new(),
    ];
    for token in &bad_tokens {
        let (status, body) = agent.curl_bearer(token, "/api/v1", &launch_a);
        assert_eq!(status, 401, "token {token:?}: {body}");
    }
    let (status, _) = agent.curl(None, "/api/v1", &launch_a);
    assert_eq!(status, 401);
    let (status, _) = agent.curl(Some(("ops", "wrong-secret")), "/api/v1", &launch_a);
    assert_eq!(status, 401);
    let (status, _) = agent.curl(None, "/nestguard/v1/pods", "{}");
    assert_eq!(status, 401);

    // A valid token on another pod, or on its own executor container: 403.
    let token_a = token_for(&pod_a);
    let (status, body) = agent.curl_bearer(
        &token_a,
        "/api/v1",
        &launch_nested(&pod_b, "m", &touch, None),
    );
    assert_eq!(status, 403, "{body}");
    let kill_parent = serde_json::json!({"type": "KILL_CONTAINER", "kill_container": {
        "container_id": {"value": pod_a}}})
    .to_string();
    let (status, body) = agent.curl_bearer(&token_a, "/api/v1", &kill_parent);
    assert_eq!(status, 403, "{body}");
    // A sibling's sub-container (of pod B) cannot be waited on either.
    let wait_b = serde_json::json!({"type": "WAIT_NESTED_CONTAINER", "wait_nested_container": {
        "container_id": nested(&pod_b, "anything")}})
    .to_string();
    assert_eq!(agent.curl_bearer(&token_a, "/api/v1", &wait_b).0, 403);
    // Pods themselves: another pod's token and a stranger can neither
    // see nor delete them.
    let path_b = format!("/nestguard/v1/pods/{pod_b}");
    let bearer = format!("Authorization: Bearer {token_a}");
    let stranger = format!("{}:{}", INTRUDER.0, INTRUDER.1);
    for args in [
        vec!["-X", "DELETE", "-H", bearer.as_str()],
        vec!["-H", bearer.as_str()],
        vec!["-X", "DELETE", "-u", stranger.as_str()],
        vec!["-u", stranger.as_str()],
    ] {
        assert_eq!(raw_status(&agent, &args, &path_b), 403, "{args:?}");
    }
    // Absence cannot be polled for: give a refused request time to do harm.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!ran.exists(), "a refused launch ran");
    // Both pods still run: nothing refused killed them.
    for id in [&pod_a, &pod_b] {
        let (_, status) = agent.get(&format!("/nestguard/v1/pods/{id}"));
        assert!(status.contains("RUNNING"), "{status}");
    }
}

// ----- pods without an executor record ---------------------------------------------

/// A pod whose executor checkpoint is damaged has no framework to match:
/// only a caller the ACLs allow to kill it as a standalone container
/// (ops) may; a stranger and another pod's token get 403, and so they do
/// for a pod that does not exist (no existence oracle). Only an
/// authorized caller learns that a pod is missing (404).
#[test]
fn damaged_pods_are_killed_only_by_authorized_callers() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start();
    let pod_a = running_pod(&agent);
    let pod_b = running_pod(&agent);
    let pid_file = agent
        .dir
        .path()
        .join("work/run/containers")
        .join(&pod_b)
        .join("pid");
    let text = std::fs::read_to_string(pid_file).unwrap();
    let executor_pid: i32 = text.lines().next().unwrap().trim().parse().unwrap();
    agent.sigkill();
    let info = agent
        .dir
        .path()
        .join("work/meta/executors")
        .join(&pod_b)
        .join("executor.info");
    let bytes = std::fs::read(&info).unwrap();
    std::fs::write(&info, &bytes[..bytes.len() / 2]).unwrap();
    agent.spawn();

    let bearer = format!("Authorization: Bearer {}", token_for(&pod_a));
    let stranger = format!("{}:{}", INTRUDER.0, INTRUDER.1);
    let damaged = format!("/nestguard/v1/pods/{pod_b}");
    let missing = "/nestguard/v1/pods/no-such-pod";
    for path in [damaged.as_str(), missing] {
        for args in [
            vec!["-X", "DELETE", "-H", bearer.as_str()],
            vec!["-H", bearer.as_str()],
            vec!["-X", "DELETE", "-u", stranger.as_str()],
            vec!["-u", stranger.as_str()],
        ] {
            assert_eq!(raw_status(&agent, &args, path), 403, "{path} {args:?}");
        }
    }
    // Nothing refused killed it (absence cannot be polled for: give a
    // refused DELETE time to do harm).
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive(executor_pid),
        "a refused DELETE killed the damaged pod"
    );

    // Ops (kill_standalone_containers) learns what is missing and may kill
    // the damaged pod.
    let (status, body) = agent.delete(missing);
    assert_eq!(status, 404, "{body}");
    assert_eq!(body, "Container no-such-pod cannot be found");
    let (status, body) = agent.delete(&damaged);
    assert_eq!(status, 200, "{body}\n{}", agent.log());
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(executor_pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(executor_pid), "the damaged pod survived its DELETE");
    // The intact pod still runs.
    let (_, body) = agent.get(&format!("/nestguard/v1/pods/{pod_a}"));
    assert!(body.contains("RUNNING"), "{body}");
}
