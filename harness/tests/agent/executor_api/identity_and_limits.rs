//! The executor as a tenant: it runs as the framework's user in its own
//! sandbox, its SUBSCRIBE stream outlives the timeouts and holds its slot, a
//! hostile executor is bounded, and its authentication follows its own flag.

use super::*;

#[test]
fn executor_runs_as_the_framework_user_in_its_own_sandbox() {
    if !require_root() {
        return;
    }
    // The operator's part: the executor's binary and the work directory's
    // parents are reachable by the framework's user.
    let agent = TestAgent::start_with_public_binaries();
    std::fs::set_permissions(agent.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let mut spec = pod(serde_json::json!([task(
        "app",
        "id -u > \"$MESOS_SANDBOX/uid\""
    )]));
    spec["framework"]["user"] = serde_json::json!("nobody");
    let (pod_id, sandbox) = agent.launch_pod(&spec);
    agent.wait_task(&sandbox, "app", "TASK_FINISHED");
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    // The executor (printing to its sandbox's stdout) and its sandbox are nobody's.
    assert_eq!(
        std::fs::metadata(&sandbox).unwrap().uid(),
        nobody.uid.as_raw()
    );
    let ps = Command::new("ps")
        .args(["-o", "uid=,args=", "-u", "nobody"])
        .output()
        .unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout).into_owned();
    assert!(
        ps.contains("nestguard executor"),
        "no executor runs as nobody:\n{ps}"
    );
    // The task ran as nobody too, in its own sandbox.
    let task_sandbox = std::fs::read_dir(sandbox.join("containers"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let uid = std::fs::read_to_string(task_sandbox.join("uid")).unwrap();
    assert_eq!(uid.trim(), nobody.uid.as_raw().to_string());
    // The agent's levels above are traversable, not listable.
    let mut dir = sandbox.parent().unwrap().to_path_buf();
    while dir != agent.dir.path().join("work") {
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o711, "{}", dir.display());
        dir = dir.parent().unwrap().to_path_buf();
    }
    let _ = pod_id;
}

#[test]
fn subscribe_stream_outlives_the_timeouts_and_holds_its_slot() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with(&[
        "--http_idle_timeout=1secs",
        "--http_body_read_timeout=1secs",
        "--max_requests_per_principal=1",
    ]);
    let spec = custom_pod(serde_json::json!([task("app", "sleep 60")]));
    let eid = executor_id(&spec);
    let (pod_id, _) = agent.launch_pod(&spec);
    let token = token(&agent, FRAMEWORK, &eid, &pod_id);
    let (status, stream) = subscribe(&agent, Some(&token), &eid, false, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_eq!(stream.next(&agent).unwrap()["type"], "SUBSCRIBED");
    assert_eq!(stream.next(&agent).unwrap()["type"], "LAUNCH_GROUP");
    // The stream holds the token's one request slot.
    let uuid = *uuid_bytes();
    let (status, _) = agent.curl_bearer(
        &token,
        "/api/v1/executor",
        &update_call(&eid, "app", "TASK_RUNNING", &uuid),
    );
    assert_eq!(status, 429);
    // Well past the idle and body timeouts, the stream still delivers.
    std::thread::sleep(Duration::from_secs(3));
    let (status, _) = agent.curl(
        Some(OPS),
        &format!("/nestguard/v1/pods/{pod_id}/kill"),
        r#"{"task_id":"app"}"#,
    );
    assert_eq!(status, 202);
    assert_eq!(stream.next_non_heartbeat(&agent).unwrap()["type"], "KILL");
    // The teardown ends the stream (SHUTDOWN, then the end).
    assert_eq!(agent.delete(&format!("/nestguard/v1/pods/{pod_id}")).0, 200);
    assert_eq!(
        stream.next_non_heartbeat(&agent).unwrap()["type"],
        "SHUTDOWN"
    );
    assert_eq!(stream.next_non_heartbeat(&agent), None);
}

#[test]
fn hostile_executor_is_bounded_and_executor_ids_are_unique() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let spec = custom_pod(serde_json::json!([task("app", "sleep 60")]));
    let eid = executor_id(&spec);
    let (pod_id, _) = agent.launch_pod(&spec);
    // A second pod may not take the executor's IDs: its calls and its
    // sandbox's virtual paths would capture or block the first one's.
    let (status, body) = agent.curl(Some(OPS), "/nestguard/v1/pods", &spec.to_string());
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("already exists"), "{body}");
    let token = token(&agent, FRAMEWORK, &eid, &pod_id);

    // Updates carried by SUBSCRIBE get the checks of an UPDATE: an executor
    // cannot pass its own update off as the agent's.
    let forged = serde_json::json!({"task_id": {"value": "app"}, "state": "TASK_FAILED",
        "source": "SOURCE_AGENT",
        "uuid": base64::engine::general_purpose::STANDARD.encode(*uuid_bytes())});
    let (status, body) = subscribe(&agent, Some(&token), &eid, false, &[forged]);
    assert_eq!(status, 400);
    assert!(
        body.err().unwrap().contains("expecting 'SOURCE_EXECUTOR'"),
        "forged source accepted"
    );
    assert!(pending_updates(&agent, &pod_id).is_empty());

    let (status, stream) = subscribe(&agent, Some(&token), &eid, false, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_eq!(stream.next(&agent).unwrap()["type"], "SUBSCRIBED");
    // An update or a message over the size limit is refused, not kept.
    let big = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; 300 * 1024]);
    let mut update: serde_json::Value =
        serde_json::from_str(&update_call(&eid, "app", "TASK_RUNNING", &*uuid_bytes())).unwrap();
    update["update"]["status"]["data"] = serde_json::json!(big);
    let (status, body) = post_executor_call(&agent, &token, &update.to_string());
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("over the limit"), "{body}");
    assert!(pending_updates(&agent, &pod_id).is_empty());
    let message = serde_json::json!({"type": "MESSAGE", "framework_id": {"value": FRAMEWORK},
        "executor_id": {"value": eid}, "message": {"data": big}});
    let (status, body) = post_executor_call(&agent, &token, &message.to_string());
    assert_eq!(status, 400, "{body}");
    // Small ones still go through.
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1/executor",
        &update_call(&eid, "app", "TASK_RUNNING", &*uuid_bytes()),
    );
    assert_eq!((status, body.as_str()), (202, ""));
    assert_eq!(pending_updates(&agent, &pod_id).len(), 1);
    drop(stream);
    // The agent's drop destroys the pod.
}

/// `--authenticate_http_executors` is the executor API's own switch, as in
/// Mesos: given `=false`, an executor calls it without credentials (even on
/// an agent whose operator API needs them; the agent warns); not given, it
/// follows `--authenticate_http_readwrite` (unlike Mesos' false), so a call
/// without its token gets 401 in the realm `mesos-agent-executor`; and the
/// flag needs a JWT key.
#[test]
fn executor_authentication_follows_its_own_flag() {
    if !require_root() {
        return;
    }
    let open = TestAgent::start_with(&["--authenticate_http_executors=false"]);
    assert!(
        open.log().contains(
            "--authenticate_http_executors=false: the executor API (/api/v1/executor) is not authenticated"
        ),
        "{}",
        open.log()
    );
    let spec = custom_pod(serde_json::json!([task("app", "sleep 60")]));
    let eid = executor_id(&spec);
    open.launch_pod(&spec);
    let (status, stream) = subscribe(&open, None, &eid, false, &[]);
    assert_eq!(status, 200, "{:?}", stream.err());
    assert_eq!(stream.unwrap().next(&open).unwrap()["type"], "SUBSCRIBED");
    // The operator API still needs credentials.
    let (status, _) = open.curl(None, "/api/v1", r#"{"type": "GET_HEALTH"}"#);
    assert_eq!(status, 401);

    // `TestAgent::start` gives `--authenticate_http_readwrite` only.
    let closed = TestAgent::start();
    assert!(
        !closed.log().contains("is not authenticated"),
        "{}",
        closed.log()
    );
    let spec = custom_pod(serde_json::json!([task("app", "sleep 60")]));
    let eid = executor_id(&spec);
    closed.launch_pod(&spec);
    let http = http_client(Duration::from_secs(120));
    let call = serde_json::json!({"type": "SUBSCRIBE", "framework_id": {"value": FRAMEWORK},
        "executor_id": {"value": eid}, "subscribe": {}});
    let reply = http
        .post(format!("{}/api/v1/executor", closed.address))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .send(call.to_string())
        .unwrap();
    assert_eq!(reply.status().as_u16(), 401);
    let challenge = reply
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    assert!(challenge.contains("mesos-agent-executor"), "{challenge}");

    // Without a JWT key, an agent whose executor realm is on does not start.
    let refused = |flag: &str| {
        crate::agent_support::refused_start(
            crate::agent_support::agent_command()
                .arg(format!(
                    "--work_dir={}",
                    closed.dir.path().join("other").display()
                ))
                .arg("--port=0")
                .arg(flag),
            Duration::from_secs(30),
            &format!("an agent with {flag} and no key started"),
        )
    };
    let text = refused("--authenticate_http_executors");
    assert!(
        text.contains(
            "--jwt_secret_key must be specified when --authenticate_http_executors is set to true"
        ),
        "{text}"
    );
    // Following --authenticate_http_readwrite, it needs the key too, and
    // the refusal says where the flag came from.
    let text = refused("--authenticate_http_readwrite");
    assert!(
        text.contains("(not given, it follows --authenticate_http_readwrite;"),
        "{text}"
    );
}
