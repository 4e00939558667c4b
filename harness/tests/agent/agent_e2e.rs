//! End to end over real HTTP (curl) against a running `nestguard agent` that
//! loaded libnestguard.so from a modules manifest: the launch/wait/kill
//! authorization matrix, executor tokens confined to their own pod (also from
//! inside a sub-container), pods with restart policies, and an agent SIGKILL
//! followed by recovery. Needs root (the Linux launcher).

use crate::agent_support;

use std::process::Command;
use std::time::Duration;

use agent_support::{INTRUDER, OPS, TestAgent, nested, pod, require_root, task};
use nestguard::proto::mesos::v1::agent::{Call, Response, call};
use prost::Message;

fn launch(parent: &str, child: &str, command: &str) -> String {
    serde_json::json!({"type": "LAUNCH_NESTED_CONTAINER", "launch_nested_container": {
        "container_id": nested(parent, child), "command": {"value": command}}})
    .to_string()
}

fn by_id(kind: &str, field: &str, parent: &str, child: &str) -> String {
    serde_json::json!({"type": kind, field: {"container_id": nested(parent, child)}}).to_string()
}

/// WAIT_NESTED_CONTAINER on `parent`'s `child`, as ops; (status, body).
fn wait_nested(agent: &TestAgent, parent: &str, child: &str) -> (u16, String) {
    agent.curl(
        Some(OPS),
        "/api/v1",
        &by_id(
            "WAIT_NESTED_CONTAINER",
            "wait_nested_container",
            parent,
            child,
        ),
    )
}

fn token(agent: &TestAgent, fid: &str, eid: &str, cid: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .args(["token", "issue", "--key"])
        .arg(agent.dir.path().join("jwt.key"))
        .args(["--fid", fid, "--eid", eid, "--cid", cid])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn executor_id(spec: &serde_json::Value) -> String {
    spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn authorization_matrix_over_http() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let spec_a = pod(serde_json::json!([task("app", "sleep 60")]));
    let (pod_a, sandbox_a) = agent.launch_pod(&spec_a);
    let app = agent.wait_task(&sandbox_a, "app", "TASK_RUNNING")["container_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let app_child = app.rsplit('.').next().unwrap().to_owned();

    // Unauthenticated and wrong secrets: 401 with Mesos' challenge.
    let get = r#"{"type":"GET_CONTAINERS"}"#;
    assert_eq!(agent.curl(None, "/api/v1", get).0, 401);
    assert_eq!(agent.curl(Some((OPS.0, "wrong")), "/api/v1", get).0, 401);
    let headers = Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "120",
            "-i",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            get,
        ])
        .arg(format!("{}/api/v1", agent.address))
        .output()
        .unwrap();
    let headers = String::from_utf8_lossy(&headers.stdout).to_lowercase();
    assert!(
        headers.contains("www-authenticate: basic realm=\"mesos-agent-readwrite\""),
        "{headers}"
    );

    // Mesos' request validation before anything else.
    let (status, body) = agent.curl(Some(OPS), "/api/v1", r#"{"type":"WAIT_NESTED_CONTAINER","wait_nested_container":{"container_id":{"value":"x"}}}"#);
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            "Failed to validate agent::Call: Expecting 'wait_nested_container.container_id.parent' to be present"
        )
    );

    // The ACLs: the intruder is denied by the explicit entry, ops is allowed.
    let kill_app = by_id(
        "KILL_NESTED_CONTAINER",
        "kill_nested_container",
        &pod_a,
        &app_child,
    );
    let (status, body) = agent.curl(Some(INTRUDER), "/api/v1", &kill_app);
    // Mesos' neutral body; the deciding entry goes to the decision log.
    assert_eq!((status, body.as_str()), (403, "403 Forbidden."));
    let log = agent.log();
    assert!(
        log.lines().any(|l| l.contains("nestguard::decision")
            && l.contains("principal=intruder")
            && l.contains("decision=\"deny\"")
            && l.contains("kill_nested_containers[1]")),
        "{log}"
    );

    // ops launches, relaunches (202) and waits with the exact raw status.
    assert_eq!(
        agent
            .curl(Some(OPS), "/api/v1", &launch(&pod_a, "ops-job", "exit 3"))
            .0,
        200
    );
    assert_eq!(
        agent
            .curl(Some(OPS), "/api/v1", &launch(&pod_a, "ops-job", "exit 3"))
            .0,
        202
    );
    let (status, body) = wait_nested(&agent, &pod_a, "ops-job");
    assert_eq!(status, 200);
    assert_eq!(
        body,
        r#"{"type":"WAIT_NESTED_CONTAINER","wait_nested_container":{"exit_status":768}}"#
    );

    // The same wait in protobuf.
    let call = Call {
        r#type: Some(call::Type::WaitContainer as i32),
        wait_container: Some(call::WaitContainer {
            container_id: nestguard::proto::convert(
                &nestguard::container_id::parse_dotted(&format!("{pod_a}.ops-job")).unwrap(),
            )
            .unwrap(),
        }),
        ..Default::default()
    };
    let request = agent.dir.path().join("wait.pb");
    std::fs::write(&request, call.encode_to_vec()).unwrap();
    let out = Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "120",
            "-u",
            &format!("{}:{}", OPS.0, OPS.1),
            "-H",
            "Content-Type: application/x-protobuf",
            "-H",
            "Accept: application/x-protobuf",
        ])
        .arg("--data-binary")
        .arg(format!("@{}", request.display()))
        .arg(format!("{}/api/v1", agent.address))
        .output()
        .unwrap();
    let response = Response::decode(out.stdout.as_slice()).expect("a protobuf Response");
    assert_eq!(response.wait_container.unwrap().exit_status, Some(768));

    // Unknown containers: 404 with Mesos' texts.
    let (status, body) = agent.curl(
        Some(OPS),
        "/api/v1",
        &by_id(
            "KILL_NESTED_CONTAINER",
            "kill_nested_container",
            &pod_a,
            "nope",
        ),
    );
    assert_eq!(
        (status, body),
        (
            404,
            format!("Container '{pod_a}.nope' cannot be found (or is already killed)")
        )
    );

    // Executor tokens: valid for their own pod only (the implicit executor approver).
    let spec_b = pod(serde_json::json!([task("idle", "sleep 60")]));
    let (pod_b, sandbox_b) = agent.launch_pod(&spec_b);
    agent.wait_task(&sandbox_b, "idle", "TASK_RUNNING");
    let token_a = token(&agent, "e2e-framework", &executor_id(&spec_a), &pod_a);
    assert_eq!(
        agent
            .curl_bearer(&token_a, "/api/v1", &launch(&pod_a, "by-token", "exit 0"))
            .0,
        200
    );
    assert_eq!(
        agent
            .curl_bearer(&token_a, "/api/v1", &launch(&pod_b, "by-token", "exit 0"))
            .0,
        403
    );
    assert_eq!(
        agent
            .curl_bearer(
                &token_a,
                "/api/v1",
                &by_id(
                    "WAIT_NESTED_CONTAINER",
                    "wait_nested_container",
                    &pod_b,
                    "x"
                )
            )
            .0,
        403
    );

    // A sub-container of pod C holds only its injected token; it can manage
    // its own pod but is refused on pod A's app.
    let url = format!("{}/api/v1", agent.address);
    let probe = format!(
        "code() {{ curl -s -o /dev/null -w '%{{http_code}}' -H 'Content-Type: application/json' \
           -H \"Authorization: Bearer $MESOS_EXECUTOR_AUTHENTICATION_TOKEN\" --data-binary \"$1\" {url}; }}; \
         echo other=$(code '{kill}') > probe.out; sleep 60",
        kill = kill_app
    );
    let spec_c = pod(serde_json::json!([task("prober", &probe)]));
    let (_pod_c, sandbox_c) = agent.launch_pod(&spec_c);
    let prober = agent.wait_task(&sandbox_c, "prober", "TASK_RUNNING")["container_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let probe_out = sandbox_c
        .join("containers")
        .join(prober.rsplit('.').next().unwrap())
        .join("probe.out");
    agent_support::wait_until("the prober's output", Duration::from_secs(10), || {
        std::fs::metadata(&probe_out).is_ok_and(|m| m.len() > 0)
    });
    let seen = std::fs::read_to_string(&probe_out).unwrap();
    assert_eq!(
        seen.trim(),
        "other=403",
        "a sub-container managed another pod's container"
    );
    // The app is still running.
    assert!(agent.curl(Some(OPS), "/api/v1", &kill_app).0 == 200);
    agent.wait_task(&sandbox_a, "app", "TASK_KILLED");
}

#[test]
fn pods_restart_policies_and_transient_tasks() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    // A task that always fails, restarted twice, then fails for good and ends the pod.
    let mut failing = task("failing", "exit 2");
    failing["restart_policy"] = serde_json::json!({"type": "ON_FAILURE", "max_restarts": 2});
    let (id, sandbox) = agent.launch_pod(&pod(serde_json::json!([
        failing,
        task("steady", "sleep 60")
    ])));
    let failed = agent.wait_task(&sandbox, "failing", "TASK_FAILED");
    assert_eq!(failed["exit_status"], 512, "{failed}");
    assert_eq!(failed["restarts"], 2);
    agent.wait_task(&sandbox, "steady", "TASK_KILLED");
    let log = std::fs::read_to_string(sandbox.join("stdout")).unwrap();
    assert_eq!(log.matches("TASK_RESTARTING").count(), 2, "{log}");
    let _ = agent.delete(&format!("/nestguard/v1/pods/{id}"));

    // A transient task's failure does not end the pod.
    let mut backup = task("backup", "exit 1");
    backup["transient"] = serde_json::json!(true);
    let (_, sandbox) = agent.launch_pod(&pod(serde_json::json!([backup, task("app", "sleep 1")])));
    agent.wait_task(&sandbox, "backup", "TASK_FAILED");
    agent.wait_task(&sandbox, "app", "TASK_FINISHED");
}

#[test]
fn agent_sigkill_then_recovery() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start();
    let (pod_id, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("app", "sleep 60")])));
    agent.wait_task(&sandbox, "app", "TASK_RUNNING");
    assert_eq!(
        agent
            .curl(Some(OPS), "/api/v1", &launch(&pod_id, "runner", "sleep 60"))
            .0,
        200
    );
    assert_eq!(
        agent
            .curl(
                Some(OPS),
                "/api/v1",
                &launch(&pod_id, "quitter", "sleep 1; exit 7")
            )
            .0,
        200
    );
    let standalone = |id: &str, seconds: u32| {
        format!(
            r#"{{"type":"LAUNCH_CONTAINER","launch_container":{{"container_id":{{"value":"{id}"}},"command":{{"value":"sleep {seconds}"}}}}}}"#
        )
    };
    assert_eq!(
        agent
            .curl(Some(OPS), "/api/v1", &standalone("lonely", 61))
            .0,
        200
    );
    assert_eq!(
        agent
            .curl(Some(OPS), "/api/v1", &standalone("forgotten", 62))
            .0,
        200
    );
    // The agent loses what it knew of one of them: that one is an orphan.
    std::fs::remove_dir_all(agent.dir.path().join("work/meta/standalone/forgotten")).unwrap();

    agent.sigkill();
    // Subject of the test, not a wait for a state: "quitter" must exit while
    // no agent is running.
    std::thread::sleep(Duration::from_millis(1500));
    agent.spawn();

    // Exited meanwhile: its exact status.
    let (status, body) = wait_nested(&agent, &pod_id, "quitter");
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"type":"WAIT_NESTED_CONTAINER","wait_nested_container":{"exit_status":1792}}"#
        )
    );
    // Still running and still manageable.
    assert_eq!(
        agent
            .curl(
                Some(OPS),
                "/api/v1",
                &by_id(
                    "KILL_NESTED_CONTAINER",
                    "kill_nested_container",
                    &pod_id,
                    "runner"
                )
            )
            .0,
        200
    );
    let (_, body) = wait_nested(&agent, &pod_id, "runner");
    assert!(body.contains(r#""exit_status":9"#), "{body}");
    // The standalone container was recovered: still running, still
    // manageable, removable.
    let lonely = r#"{"container_id":{"value":"lonely"}}"#;
    let call = |kind: &str, field: &str| format!(r#"{{"type":"{kind}","{field}":{lonely}}}"#);
    assert_eq!(
        agent
            .curl(
                Some(OPS),
                "/api/v1",
                &call("KILL_CONTAINER", "kill_container")
            )
            .0,
        200
    );
    let (_, body) = agent.curl(
        Some(OPS),
        "/api/v1",
        &call("WAIT_CONTAINER", "wait_container"),
    );
    assert!(body.contains(r#""exit_status":9"#), "{body}");
    assert_eq!(
        agent
            .curl(
                Some(OPS),
                "/api/v1",
                &call("REMOVE_CONTAINER", "remove_container")
            )
            .0,
        200
    );
    assert!(
        !agent
            .dir
            .path()
            .join("work/meta/standalone/lonely")
            .exists()
    );
    // One recovery, which destroyed one orphan (the forgotten one).
    let metrics = agent.metrics();
    assert_eq!(metrics["nestguard/isolation/recoveries"], 1.0, "{metrics}");
    assert_eq!(
        metrics["nestguard/isolation/orphans_destroyed"], 1.0,
        "{metrics}"
    );
    // The forgotten one was an orphan: destroyed.
    let pgrep = Command::new("pgrep")
        .args(["-f", "sleep 62"])
        .output()
        .unwrap();
    assert!(
        pgrep.stdout.is_empty(),
        "the orphan still runs: {}",
        String::from_utf8_lossy(&pgrep.stdout)
    );
    // The pod's executor kept running through the restart and still manages its task.
    let (status, body) = agent.get(&format!("/nestguard/v1/pods/{pod_id}"));
    assert_eq!(status, 200);
    assert!(body.contains("RUNNING"), "{body}");
}

#[test]
fn memory_limit_kills_only_that_sub_container() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let (pod_id, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("app", "sleep 60")])));
    agent.wait_task(&sandbox, "app", "TASK_RUNNING");
    let hog = serde_json::json!({"type": "LAUNCH_CONTAINER", "launch_container": {
        "container_id": nested(&pod_id, "hog"),
        "command": {"value": "head -c 64m /dev/zero | tail"},
        "resources": [{"name": "mem", "type": "SCALAR", "scalar": {"value": 32}}, {"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.5}}],
        "container": {"type": "MESOS", "linux_info": {"share_cgroups": false}}}});
    let (status, body) = agent.curl(Some(OPS), "/api/v1", &hog.to_string());
    assert_eq!(status, 200, "{body}\n{}", agent.log());
    let (status, body) = wait_nested(&agent, &pod_id, "hog");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let wait = &v["wait_nested_container"];
    assert_eq!(
        wait["reason"], "REASON_CONTAINER_LIMITATION_MEMORY",
        "{body}"
    );
    assert_eq!(wait["state"], "TASK_FAILED", "{body}");
    assert!(
        wait["message"]
            .as_str()
            .unwrap_or("")
            .contains("Memory limit exceeded"),
        "{body}"
    );
    // The executor and its app live on.
    let (_, body) = agent.get(&format!("/nestguard/v1/pods/{pod_id}"));
    assert!(body.contains("RUNNING"), "{body}");
    // The library counted the OOM kill and the launches (the executor, its
    // task and the hog), each timed.
    let metrics = agent.metrics();
    assert_eq!(metrics["nestguard/isolation/oom_kills"], 1.0, "{metrics}");
    let launches = metrics["nestguard/isolation/launches"].as_f64().unwrap();
    assert!(launches >= 3.0, "{metrics}");
    assert_eq!(
        metrics["nestguard/isolation/launch_latency_ms/count"].as_f64(),
        Some(launches)
    );
    assert!(
        metrics["nestguard/isolation/launch_latency_ms/p50"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        metrics["nestguard/isolation/containers_tracked"]
            .as_f64()
            .unwrap()
            >= 2.0
    );
}
