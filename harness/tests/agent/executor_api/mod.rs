//! The v1 executor API end to end: a raw RecordIO client in the role of
//! the executor (a CUSTOM executor that only sleeps holds the container and
//! its token), nestguard's default executor re-subscribing after agent
//! restarts, a non-root executor, and the front door keeping a SUBSCRIBE
//! stream alive and counted.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine;
use nestguard::proto::mesos::v1::executor::Event;
use prost::Message;

use crate::agent_support::{OPS, TestAgent, http_client, pod, poll, require_root, task};
use crate::recordio;

pub(crate) const FRAMEWORK: &str = "e2e-framework";

pub(crate) fn token(agent: &TestAgent, fid: &str, eid: &str, cid: &str) -> String {
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

/// A custom pod with two tasks (`app`, `side`): its executor's ID, the
/// pod's ID and the executor's token.
pub(crate) fn two_task_pod(agent: &TestAgent) -> (String, String, String) {
    let spec = custom_pod(serde_json::json!([
        task("app", "sleep 60"),
        task("side", "sleep 60")
    ]));
    let eid = executor_id(&spec);
    let (pod_id, _) = agent.launch_pod(&spec);
    let token = token(agent, FRAMEWORK, &eid, &pod_id);
    (eid, pod_id, token)
}

/// A pod whose executor is `sleep`: the test plays the executor.
pub(crate) fn custom_pod(tasks: serde_json::Value) -> serde_json::Value {
    let mut spec = pod(tasks);
    spec["executor"]["type"] = serde_json::json!("CUSTOM");
    spec["executor"]["command"] = serde_json::json!({"value": "sleep 600"});
    spec
}

pub(crate) fn executor_id(spec: &serde_json::Value) -> String {
    spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The records of one SUBSCRIBE stream, read by a thread.
pub(crate) struct EventStream {
    records: mpsc::Receiver<Result<Vec<u8>, String>>,
    protobuf: bool,
}

impl EventStream {
    /// The next event as JSON (protobuf streams are decoded and converted);
    /// None when the stream ended.
    pub(crate) fn next(&self, agent: &TestAgent) -> Option<serde_json::Value> {
        match self.records.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(record)) if self.protobuf => {
                let event = Event::decode(record.as_slice()).expect("a protobuf Event");
                Some(serde_json::from_str(&nestguard::json::to_json(&event)).unwrap())
            }
            Ok(Ok(record)) => Some(serde_json::from_slice(&record).expect("a JSON event")),
            Ok(Err(_)) | Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no event within 20 s\n{}", agent.log())
            }
        }
    }

    /// The next event that is not a HEARTBEAT.
    pub(crate) fn next_non_heartbeat(&self, agent: &TestAgent) -> Option<serde_json::Value> {
        loop {
            let e = self.next(agent)?;
            if e["type"] != "HEARTBEAT" {
                return Some(e);
            }
        }
    }
}

/// SUBSCRIBE as the executor `eid`, with a bearer token; the status and,
/// on 200, the event stream (or the body).
pub(crate) fn subscribe(
    agent: &TestAgent,
    token: Option<&str>,
    eid: &str,
    protobuf: bool,
    unacknowledged: &[serde_json::Value],
) -> (u16, Result<EventStream, String>) {
    subscribe_with_tasks(agent, token, eid, protobuf, unacknowledged, &[])
}

/// [`subscribe`] listing `tasks` (TaskInfo JSON) as `unacknowledged_tasks`.
pub(crate) fn subscribe_with_tasks(
    agent: &TestAgent,
    token: Option<&str>,
    eid: &str,
    protobuf: bool,
    unacknowledged: &[serde_json::Value],
    tasks: &[serde_json::Value],
) -> (u16, Result<EventStream, String>) {
    let http = http_client(Duration::from_secs(120));
    let call = serde_json::json!({"type": "SUBSCRIBE", "framework_id": {"value": FRAMEWORK},
        "executor_id": {"value": eid}, "subscribe": {"unacknowledged_updates":
            unacknowledged.iter().map(|s| serde_json::json!({"status": s})).collect::<Vec<_>>(),
            "unacknowledged_tasks": tasks}});
    let mut request = http
        .post(format!("{}/api/v1/executor", agent.address))
        .header(
            "Accept",
            if protobuf {
                "application/x-protobuf"
            } else {
                "application/json"
            },
        );
    if let Some(t) = token {
        request = request.header("Authorization", &format!("Bearer {t}"));
    }
    let response = if protobuf {
        let call: nestguard::proto::mesos::v1::executor::Call =
            nestguard::json::from_json(&call.to_string()).unwrap();
        request
            .header("Content-Type", "application/x-protobuf")
            .send(&call.encode_to_vec()[..])
    } else {
        request
            .header("Content-Type", "application/json")
            .send(call.to_string())
    }
    .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let mut body = response.into_body();
    if status != 200 {
        return (status, Err(body.read_to_string().unwrap_or_default()));
    }
    let expected = if protobuf {
        "application/x-protobuf"
    } else {
        "application/json"
    };
    assert_eq!(content_type.as_deref(), Some(expected));
    let mut reader = body.into_reader();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut decoder = recordio::Decoder::new(1 << 20);
        let mut chunk = [0u8; 4096];
        let mut ready = VecDeque::new();
        loop {
            while let Some(r) = ready.pop_front() {
                if tx.send(Ok(r)).is_err() {
                    return;
                }
            }
            match reader.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(Err("end".to_owned()));
                    return;
                }
                Ok(n) => ready.extend(decoder.feed(&chunk[..n]).unwrap()),
            }
        }
    });
    (
        status,
        Ok(EventStream {
            records: rx,
            protobuf,
        }),
    )
}

pub(crate) fn update_call(eid: &str, task: &str, state: &str, uuid: &[u8]) -> String {
    serde_json::json!({"type": "UPDATE", "framework_id": {"value": FRAMEWORK},
        "executor_id": {"value": eid}, "update": {"status": {"task_id": {"value": task},
        "state": state, "source": "SOURCE_EXECUTOR",
        "uuid": base64::engine::general_purpose::STANDARD.encode(uuid)}}})
    .to_string()
}

pub(crate) fn pending_updates(agent: &TestAgent, pod: &str) -> Vec<serde_json::Value> {
    let (status, body) = agent.get(&format!("/nestguard/v1/pods/{pod}/updates"));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["updates"].as_array().unwrap().clone()
}

pub(crate) fn acknowledge(agent: &TestAgent, pod: &str, update: &serde_json::Value) -> u16 {
    let body = serde_json::json!({"task_id": update["task_id"]["value"], "uuid": update["uuid"]});
    agent
        .curl(
            Some(OPS),
            &format!("/nestguard/v1/pods/{pod}/acknowledge"),
            &body.to_string(),
        )
        .0
}

#[test]
fn raw_client_subscribes_updates_and_is_acknowledged() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let (eid, pod_id, token) = two_task_pod(&agent);
    let agent_id = std::fs::read_to_string(agent.dir.path().join("work/meta/agent_id")).unwrap();
    let agent_id = agent_id.trim();

    // A task killed while still queued never reaches the executor; the
    // agent itself reports it killed.
    let early = serde_json::json!({"name": "early", "task_id": {"value": "early"},
        "agent_id": {"value": "e2e"}, "command": {"value": "sleep 60"}});
    let (status, body) = agent.curl(
        Some(OPS),
        &format!("/nestguard/v1/pods/{pod_id}/tasks"),
        &early.to_string(),
    );
    assert_eq!(status, 202, "{body}");
    let (status, _) = agent.curl(
        Some(OPS),
        &format!("/nestguard/v1/pods/{pod_id}/kill"),
        r#"{"task_id":"early"}"#,
    );
    assert_eq!(status, 202);
    let pending = pending_updates(&agent, &pod_id);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["task_id"]["value"], "early");
    assert_eq!(pending[0]["state"], "TASK_KILLED");
    assert_eq!(pending[0]["source"], "SOURCE_AGENT");
    assert_eq!(pending[0]["reason"], "REASON_TASK_KILLED_DURING_LAUNCH");
    assert_eq!(pending[0]["executor_id"]["value"], eid.as_str());
    assert_eq!(acknowledge(&agent, &pod_id, &pending[0]), 200);

    // Claims that do not match the call: Mesos' 403 and text.
    let other = self::token(&agent, FRAMEWORK, "someone-else", &pod_id);
    let (status, body) = subscribe(&agent, Some(&other), &eid, false, &[]);
    assert_eq!(status, 403);
    let body = body.err().unwrap();
    assert!(
        body.contains("does not contain an 'eid' claim with the executor ID"),
        "{body}"
    );
    // An unknown executor of a known framework, and an unknown framework.
    let (status, body) = subscribe(&agent, Some(&token), "no-such-executor", false, &[]);
    assert_eq!(
        (status, body.err().unwrap().as_str()),
        (400, "Executor cannot be found")
    );
    // HEARTBEAT is accepted before anything is looked up (Mesos allows
    // dummy IDs in it).
    let heartbeat =
        r#"{"type":"HEARTBEAT","framework_id":{"value":"x"},"executor_id":{"value":"y"}}"#;
    assert_eq!(
        agent.curl_bearer(&token, "/api/v1/executor", heartbeat).0,
        202
    );
    // Content-Type is matched exactly, as Mesos does; only POST.
    let http = http_client(Duration::from_secs(120));
    let url = format!("{}/api/v1/executor", agent.address);
    let bearer = format!("Bearer {token}");
    let mut reply = http
        .post(&url)
        .header("Authorization", &bearer)
        .header("Content-Type", "application/json; charset=utf-8")
        .send(heartbeat)
        .unwrap();
    assert_eq!(reply.status().as_u16(), 415);
    assert_eq!(
        reply.body_mut().read_to_string().unwrap(),
        "Expecting 'Content-Type' of application/json or application/x-protobuf"
    );
    let reply = http
        .get(&url)
        .header("Authorization", &bearer)
        .call()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 405);
    // UPDATE before SUBSCRIBE: not subscribed.
    let uuid = *uuid_bytes();
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1/executor",
        &update_call(&eid, "app", "TASK_RUNNING", &uuid),
    );
    assert_eq!((status, body.as_str()), (403, "Executor is not subscribed"));
    // Validation, with Mesos' prefix.
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1/executor",
        &update_call(&eid, "app", "TASK_STAGING", &uuid),
    );
    assert_eq!(status, 400);
    assert!(
        body.starts_with("Failed to validate Executor::Call: Received TASK_STAGING"),
        "{body}"
    );

    // SUBSCRIBE: SUBSCRIBED (with the executor's container), then LAUNCH_GROUP.
    let (status, stream) = subscribe(&agent, Some(&token), &eid, false, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    let subscribed = stream.next(&agent).unwrap();
    assert_eq!(subscribed["type"], "SUBSCRIBED", "{subscribed}");
    assert_eq!(
        subscribed["subscribed"]["container_id"]["value"],
        pod_id.as_str()
    );
    assert_eq!(
        subscribed["subscribed"]["executor_info"]["executor_id"]["value"],
        eid.as_str()
    );
    assert_eq!(
        subscribed["subscribed"]["framework_info"]["id"]["value"],
        FRAMEWORK
    );
    // v1's AgentInfo (agent_info.id is the agent's AgentID), as Mesos sends it.
    assert_eq!(
        subscribed["subscribed"]["agent_info"]["id"]["value"], agent_id,
        "{subscribed}"
    );
    let launch = stream.next(&agent).unwrap();
    assert_eq!(launch["type"], "LAUNCH_GROUP", "{launch}");
    // v1 names in the tasks too: `agent_id`, never `slave_id`.
    assert!(!launch.to_string().contains("slave_id"), "{launch}");
    // The agent's own ID, as the master assigns it (a Mesos agent ignores
    // a task for another agent ID), whatever the framework wrote.
    for task in launch["launch_group"]["task_group"]["tasks"]
        .as_array()
        .unwrap()
    {
        assert_eq!(task["agent_id"]["value"], agent_id, "{launch}");
    }
    let names: Vec<&str> = launch["launch_group"]["task_group"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task_id"]["value"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "side"]);

    // UPDATE → pending for the framework; its acknowledgement → ACKNOWLEDGED.
    let (status, body) = agent.curl_bearer(
        &token,
        "/api/v1/executor",
        &update_call(&eid, "app", "TASK_RUNNING", &uuid),
    );
    assert_eq!((status, body.as_str()), (202, ""));
    let pending = pending_updates(&agent, &pod_id);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["state"], "TASK_RUNNING");
    // Re-sent: still one.
    agent.curl_bearer(
        &token,
        "/api/v1/executor",
        &update_call(&eid, "app", "TASK_RUNNING", &uuid),
    );
    assert_eq!(pending_updates(&agent, &pod_id).len(), 1);
    // The executor cannot acknowledge its own updates (nor kill tasks):
    // those are the framework's.
    let ack = serde_json::json!({"task_id": "app", "uuid": pending[0]["uuid"]}).to_string();
    let own = format!("/nestguard/v1/pods/{pod_id}/acknowledge");
    assert_eq!(agent.curl_bearer(&token, &own, &ack).0, 403);
    let own_kill = format!("/nestguard/v1/pods/{pod_id}/kill");
    assert_eq!(
        agent
            .curl_bearer(&token, &own_kill, r#"{"task_id":"app"}"#)
            .0,
        403
    );
    assert_eq!(acknowledge(&agent, &pod_id, &pending[0]), 200);
    let acked = stream.next_non_heartbeat(&agent).unwrap();
    assert_eq!(acked["type"], "ACKNOWLEDGED", "{acked}");
    assert_eq!(acked["acknowledged"]["task_id"]["value"], "app");
    assert_eq!(
        acked["acknowledged"]["uuid"],
        base64::engine::general_purpose::STANDARD.encode(uuid)
    );
    assert!(pending_updates(&agent, &pod_id).is_empty());
    // Acknowledging it twice: nothing pending any more.
    assert_eq!(acknowledge(&agent, &pod_id, &pending[0]), 404);

    // The framework kills a task: KILL.
    let (status, _) = agent.curl(
        Some(OPS),
        &format!("/nestguard/v1/pods/{pod_id}/kill"),
        r#"{"task_id":"side"}"#,
    );
    assert_eq!(status, 202);
    let kill = stream.next_non_heartbeat(&agent).unwrap();
    assert_eq!(kill["type"], "KILL", "{kill}");
    assert_eq!(kill["kill"]["task_id"]["value"], "side");

    // MESSAGE reaches the framework.
    let message = serde_json::json!({"type": "MESSAGE", "framework_id": {"value": FRAMEWORK},
        "executor_id": {"value": eid}, "message": {"data": "aGVsbG8="}});
    assert_eq!(
        agent
            .curl_bearer(&token, "/api/v1/executor", &message.to_string())
            .0,
        202
    );
    let (_, body) = agent.get(&format!("/nestguard/v1/pods/{pod_id}/updates"));
    assert!(body.contains("aGVsbG8="), "{body}");

    // A re-subscription in protobuf ends the first stream; the update the
    // framework already acknowledged is acknowledged again at once. The
    // executor lists "side", which it has with no acknowledged update
    // (else the agent would report it lost, as Mesos does).
    let side = launch["launch_group"]["task_group"]["tasks"][1].clone();
    let (status, second) = subscribe_with_tasks(
        &agent,
        Some(&token),
        &eid,
        true,
        &[pending[0].clone()],
        &[side],
    );
    assert_eq!(status, 200);
    let second = second.unwrap();
    assert_eq!(second.next(&agent).unwrap()["type"], "SUBSCRIBED");
    let again = second.next_non_heartbeat(&agent).unwrap();
    assert_eq!(again["type"], "ACKNOWLEDGED", "{again}");
    assert_eq!(again["acknowledged"]["uuid"], pending[0]["uuid"]);
    assert!(pending_updates(&agent, &pod_id).is_empty());
    assert_eq!(
        stream.next_non_heartbeat(&agent),
        None,
        "the first stream ended"
    );

    // The teardown: SHUTDOWN on the live stream, then the pod is gone.
    assert_eq!(agent.delete(&format!("/nestguard/v1/pods/{pod_id}")).0, 200);
    let shutdown = second.next_non_heartbeat(&agent).unwrap();
    assert_eq!(shutdown["type"], "SHUTDOWN", "{shutdown}");
    let (status, _) = subscribe(&agent, Some(&token), &eid, false, &[]);
    assert_eq!(status, 401, "the dead pod's token is refused");

    // An executor whose every task was killed before delivery is shut down
    // when it subscribes.
    let spec = custom_pod(serde_json::json!([task("only", "sleep 60")]));
    let eid = executor_id(&spec);
    let (pod_id, _) = agent.launch_pod(&spec);
    let token = self::token(&agent, FRAMEWORK, &eid, &pod_id);
    let kill = format!("/nestguard/v1/pods/{pod_id}/kill");
    assert_eq!(agent.curl(Some(OPS), &kill, r#"{"task_id":"only"}"#).0, 202);
    let (status, stream) = subscribe(&agent, Some(&token), &eid, false, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_eq!(stream.next(&agent).unwrap()["type"], "SUBSCRIBED");
    assert_eq!(
        stream.next_non_heartbeat(&agent).unwrap()["type"],
        "SHUTDOWN"
    );
    assert_eq!(agent.delete(&format!("/nestguard/v1/pods/{pod_id}")).0, 200);
}

pub(crate) fn uuid_bytes() -> Box<[u8; 16]> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).unwrap();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Box::new(b)
}

/// Waits until the agent's log shows `n` subscriptions of executors.
fn wait_subscriptions(agent: &TestAgent, n: usize) {
    poll(
        Duration::from_secs(30),
        || (agent.log().matches("executor subscribed").count() >= n).then_some(()),
        || format!("fewer than {n} subscriptions\n{}", agent.log()),
    );
}

#[test]
fn default_executor_resubscribes_after_agent_restarts_with_unacknowledged_updates() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start();
    let (pod_id, sandbox) = agent.launch_pod(&pod(serde_json::json!([task("app", "sleep 60")])));
    agent.wait_task(&sandbox, "app", "TASK_RUNNING");
    let pending = poll(
        Duration::from_secs(10),
        || {
            let p = pending_updates(&agent, &pod_id);
            (p.len() == 2).then_some(p)
        },
        || {
            format!(
                "expected TASK_STARTING and TASK_RUNNING pending\n{}",
                agent.log()
            )
        },
    );
    assert_eq!(pending[0]["state"], "TASK_STARTING");
    assert_eq!(pending[1]["state"], "TASK_RUNNING");
    assert_eq!(pending[1]["source"], "SOURCE_EXECUTOR");
    // The framework acknowledges TASK_STARTING only.
    assert_eq!(acknowledge(&agent, &pod_id, &pending[0]), 200);
    let running_uuid = pending[1]["uuid"].clone();
    // Subject of the test, not a wait for a state: the ACKNOWLEDGED must
    // reach the executor before the agent dies.
    std::thread::sleep(Duration::from_millis(500));

    // Restart 1: the agent loses its checkpoint of the updates; only the
    // executor's re-subscription can bring TASK_RUNNING back.
    agent.sigkill();
    std::fs::remove_file(
        agent
            .dir
            .path()
            .join(format!("work/meta/executors/{pod_id}/updates")),
    )
    .unwrap();
    agent.spawn();
    wait_subscriptions(&agent, 2);
    let after = pending_updates(&agent, &pod_id);
    assert_eq!(after.len(), 1, "{after:?}\n{}", agent.log());
    assert_eq!(after[0]["state"], "TASK_RUNNING");
    assert_eq!(after[0]["uuid"], running_uuid);

    // Restart 2: the checkpoint has it, before the executor is back.
    agent.sigkill();
    agent.spawn();
    let recovered = pending_updates(&agent, &pod_id);
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["uuid"], running_uuid);
    assert_eq!(
        agent
            .log()
            .matches("recovered checkpointed status updates")
            .count(),
        1,
        "read back from the checkpoint once, after the second restart\n{}",
        agent.log()
    );
    wait_subscriptions(&agent, 3);
    assert_eq!(pending_updates(&agent, &pod_id).len(), 1, "not duplicated");

    // The framework kills the task through the new stream; once every
    // update is acknowledged the executor exits on its own.
    let (status, _) = agent.curl(
        Some(OPS),
        &format!("/nestguard/v1/pods/{pod_id}/kill"),
        r#"{"task_id":"app"}"#,
    );
    assert_eq!(status, 202);
    agent.wait_task(&sandbox, "app", "TASK_KILLED");
    poll(
        Duration::from_secs(30),
        || {
            for u in pending_updates(&agent, &pod_id) {
                acknowledge(&agent, &pod_id, &u);
            }
            let (_, body) = agent.get(&format!("/nestguard/v1/pods/{pod_id}"));
            body.contains("TERMINATED").then_some(())
        },
        || format!("the executor did not exit\n{}", agent.log()),
    );
}

/// A launched custom pod with one task (`app`) whose executor the test plays.
pub(crate) struct CustomPod {
    pub(crate) spec: serde_json::Value,
    pub(crate) eid: String,
    pub(crate) id: String,
    pub(crate) token: String,
}

impl CustomPod {
    pub(crate) fn launch(agent: &TestAgent) -> CustomPod {
        let spec = custom_pod(serde_json::json!([task("app", "sleep 60")]));
        let eid = executor_id(&spec);
        let (id, _) = agent.launch_pod(&spec);
        let token = token(agent, FRAMEWORK, &eid, &id);
        CustomPod {
            spec,
            eid,
            id,
            token,
        }
    }

    /// SUBSCRIBE in JSON: the stream after SUBSCRIBED, and the LAUNCH_GROUP.
    pub(crate) fn subscribe(&self, agent: &TestAgent) -> (EventStream, serde_json::Value) {
        let (status, stream) = subscribe(agent, Some(&self.token), &self.eid, false, &[]);
        assert_eq!(status, 200);
        let stream = stream.unwrap();
        assert_eq!(stream.next(agent).unwrap()["type"], "SUBSCRIBED");
        let launch = stream.next_non_heartbeat(agent).unwrap();
        assert_eq!(launch["type"], "LAUNCH_GROUP", "{launch}");
        (stream, launch)
    }
}

/// As Mesos' `Slave::subscribe`: a delivered task still STAGING that the
/// re-subscribing executor does not list in `unacknowledged_tasks` never
/// reached it: TASK_LOST (the framework is not PARTITION_AWARE), from the
/// agent, "Task launched during agent restart". A listed one is kept.
#[test]
fn resubscription_drops_staging_tasks_the_executor_does_not_list() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let pod = CustomPod::launch(&agent);
    let (eid, pod_id, token) = (&pod.eid, &pod.id, &pod.token);
    let launch = pod.subscribe(&agent).1;
    let app = launch["launch_group"]["task_group"]["tasks"][0].clone();
    assert_eq!(app["task_id"]["value"], "app");

    // Listed: the executor has it; nothing is reported.
    let (status, _) = subscribe_with_tasks(&agent, Some(token), eid, false, &[], &[app]);
    assert_eq!(status, 200);
    assert!(pending_updates(&agent, pod_id).is_empty());

    // Not listed, still STAGING: lost.
    let (status, stream) = subscribe(&agent, Some(token), eid, true, &[]);
    assert_eq!(status, 200);
    assert_eq!(stream.unwrap().next(&agent).unwrap()["type"], "SUBSCRIBED");
    let pending = pending_updates(&agent, pod_id);
    assert_eq!(pending.len(), 1, "{pending:?}");
    let lost = &pending[0];
    assert_eq!(lost["task_id"]["value"], "app");
    assert_eq!(lost["state"], "TASK_LOST");
    assert_eq!(lost["source"], "SOURCE_AGENT");
    assert!(
        lost["reason"].as_str().unwrap().ends_with("_RESTARTED"),
        "{lost}"
    );
    assert_eq!(lost["message"], "Task launched during agent restart");
}

/// A single task for an executor reaches it as LAUNCH (Mesos'
/// `RunTaskMessage`), at once or, before it subscribed, when it does;
/// authorized as RUN_TASK by the framework's principal; a task ID is used
/// once.
#[test]
fn a_single_task_reaches_the_executor_as_launch() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start();
    let pod = CustomPod::launch(&agent);
    let token = &pod.token;
    let route = format!("/nestguard/v1/pods/{}/tasks", pod.id);
    let single = serde_json::json!({"name": "one", "task_id": {"value": "one"},
        "agent_id": {"value": "e2e"}, "executor": pod.spec["executor"]})
    .to_string();
    // Not subscribed yet: queued, and delivered after the pod's group.
    let early = serde_json::json!({"name": "early", "task_id": {"value": "early"},
        "agent_id": {"value": "e2e"}})
    .to_string();
    let (status, body) = agent.curl(Some(OPS), &route, &early);
    assert_eq!(status, 202, "{body}");
    let stream = pod.subscribe(&agent).0;
    let launch = stream.next_non_heartbeat(&agent).unwrap();
    assert_eq!(launch["type"], "LAUNCH", "{launch}");
    assert_eq!(launch["launch"]["task"]["task_id"]["value"], "early");
    // Neither another principal nor the executor itself may launch.
    let (status, _) = agent.curl(Some(crate::agent_support::INTRUDER), &route, &single);
    assert_eq!(status, 403);
    let (status, _) = agent.curl_bearer(token, &route, &single);
    assert_eq!(status, 403);
    // A task whose executor names another user is refused: the ACL
    // checks the pod's executor, never one the caller wrote.
    let mut executor = pod.spec["executor"].clone();
    executor["command"]["user"] = serde_json::json!("nobody");
    let other = serde_json::json!({"name": "other", "task_id": {"value": "other"},
        "agent_id": {"value": "e2e"}, "executor": executor})
    .to_string();
    let (status, body) = agent.curl(Some(OPS), &route, &other);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("The `ExecutorInfo` of task 'other' is different from executor"),
        "{body}"
    );
    let (status, body) = agent.curl(Some(OPS), &route, &single);
    assert_eq!(status, 202, "{body}");
    let launch = stream.next_non_heartbeat(&agent).unwrap();
    assert_eq!(launch["type"], "LAUNCH", "{launch}");
    assert_eq!(launch["launch"]["task"]["task_id"]["value"], "one");
    // No executor: the recorded one is filled in.
    let bare = serde_json::json!({"name": "two", "task_id": {"value": "two"},
        "agent_id": {"value": "e2e"}})
    .to_string();
    let (status, body) = agent.curl(Some(OPS), &route, &bare);
    assert_eq!(status, 202, "{body}");
    let launch = stream.next_non_heartbeat(&agent).unwrap();
    assert_eq!(
        launch["launch"]["task"]["task_id"]["value"], "two",
        "{launch}"
    );
    assert_eq!(
        launch["launch"]["task"]["executor"]["executor_id"], pod.spec["executor"]["executor_id"],
        "{launch}"
    );
    let (status, body) = agent.curl(Some(OPS), &route, &single);
    assert_eq!(status, 409, "{body}");
}

/// POSTs a JSON executor call with a bearer token (bodies too large for a
/// command-line argument).
pub(crate) fn post_executor_call(agent: &TestAgent, token: &str, body: &str) -> (u16, String) {
    agent.post_json("/api/v1/executor", &format!("Bearer {token}"), body)
}

mod identity_and_limits;
