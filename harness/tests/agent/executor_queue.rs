//! Tasks for an executor that has no live stream (not subscribed yet, or
//! the agent restarted since): queued as Mesos queues them, checkpointed,
//! bounded, killed before delivery, and delivered when it (re-)subscribes;
//! and the 503 an executor gets while the agent recovers.

use std::time::Duration;

#[cfg(debug_assertions)]
use crate::agent_support::poll;
use crate::agent_support::{INTRUDER, OPS, TestAgent, http_client, require_root, task};
use crate::executor_api::{
    CustomPod, EventStream, FRAMEWORK, acknowledge, custom_pod, executor_id, pending_updates,
    post_executor_call, subscribe, subscribe_with_tasks, token, update_call, uuid_bytes,
};

/// A started agent with a custom pod whose executor the test plays;
/// `None` when the tests do not run as root.
fn agent_with_pod() -> Option<(TestAgent, CustomPod)> {
    if !require_root() {
        return None;
    }
    let agent = TestAgent::start();
    let pod = CustomPod::launch(&agent);
    Some((agent, pod))
}

/// A pod's executor ID, pod ID and executor token.
fn ids(pod: CustomPod) -> (String, String, String) {
    (pod.eid, pod.id, pod.token)
}

/// The executor (`eid`, `pod`, `token`) (re-)subscribes listing `listed`
/// in `unacknowledged_tasks`; after SUBSCRIBED nothing is delivered, no
/// task and no SHUTDOWN: the next event is the KILL of `app` sent now.
fn subscribes_to_nothing(
    agent: &TestAgent,
    (eid, pod, token): (&str, &str, &str),
    listed: &[serde_json::Value],
) {
    let (status, stream) = subscribe_with_tasks(agent, Some(token), eid, false, &[], listed);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_subscribed(&stream, agent, eid, pod);
    assert_eq!(kill(agent, OPS, pod, "app"), 202);
    assert_next_kill(&stream, agent, "app");
}

/// The pending updates of the pod: exactly one for each of `tasks`, each
/// in `state` from the agent.
fn agent_updates(
    agent: &TestAgent,
    pod: &str,
    tasks: &[&str],
    state: &str,
) -> Vec<serde_json::Value> {
    let pending = pending_updates(agent, pod);
    let mut ids: Vec<&str> = pending
        .iter()
        .map(|u| u["task_id"]["value"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, tasks, "{pending:?}");
    for update in &pending {
        assert_eq!(update["state"], state, "{update}");
        assert_eq!(update["source"], "SOURCE_AGENT", "{update}");
    }
    pending
}

/// The agent's ID, as it checkpointed it.
fn agent_id(agent: &TestAgent) -> String {
    std::fs::read_to_string(agent.dir.path().join("work/meta/agent_id"))
        .unwrap()
        .trim()
        .to_owned()
}

/// The framework launches one more task on the pod (Mesos' LAUNCH).
fn launch_single(agent: &TestAgent, pod: &str, name: &str) -> (u16, String) {
    let task = serde_json::json!({"name": name, "task_id": {"value": name},
        "agent_id": {"value": "e2e"}, "command": {"value": "sleep 60"}});
    agent.curl(
        Some(OPS),
        &format!("/nestguard/v1/pods/{pod}/tasks"),
        &task.to_string(),
    )
}

fn kill(agent: &TestAgent, who: (&str, &str), pod: &str, name: &str) -> u16 {
    let body = serde_json::json!({"task_id": name}).to_string();
    agent
        .curl(Some(who), &format!("/nestguard/v1/pods/{pod}/kill"), &body)
        .0
}

/// The checkpoint of the tasks queued for the executor of `pod`.
fn queue_file(agent: &TestAgent, pod: &str) -> std::path::PathBuf {
    agent
        .dir
        .path()
        .join(format!("work/meta/executors/{pod}/queued"))
}

/// SUBSCRIBED names the executor, its framework, this agent and the
/// executor's container, as Mesos' `Slave::subscribe` fills it.
fn assert_subscribed(
    stream: &EventStream,
    agent: &TestAgent,
    eid: &str,
    pod: &str,
) -> serde_json::Value {
    let event = stream.next(agent).unwrap();
    assert_eq!(event["type"], "SUBSCRIBED", "{event}");
    let s = &event["subscribed"];
    assert_eq!(s["executor_info"]["executor_id"]["value"], eid, "{event}");
    assert_eq!(
        s["executor_info"]["framework_id"]["value"], FRAMEWORK,
        "{event}"
    );
    assert_eq!(s["framework_info"]["id"]["value"], FRAMEWORK, "{event}");
    assert_eq!(s["framework_info"]["user"], "root", "{event}");
    assert_eq!(
        s["agent_info"]["id"]["value"],
        agent_id(agent).as_str(),
        "{event}"
    );
    assert!(
        !s["agent_info"]["hostname"].as_str().unwrap().is_empty(),
        "{event}"
    );
    assert_eq!(s["container_id"]["value"], pod, "{event}");
    event
}

/// A LAUNCH of `name`, assigned to this agent, for this executor.
fn assert_launch(stream: &EventStream, agent: &TestAgent, eid: &str, name: &str) {
    let launch = stream.next_non_heartbeat(agent).unwrap();
    assert_eq!(launch["type"], "LAUNCH", "{launch}");
    let task = &launch["launch"]["task"];
    assert_eq!(task["task_id"]["value"], name, "{launch}");
    assert_eq!(
        task["agent_id"]["value"],
        agent_id(agent).as_str(),
        "{launch}"
    );
    assert_eq!(task["executor"]["executor_id"]["value"], eid, "{launch}");
}

/// The next event is the KILL of `name` the test just sent: nothing else
/// was delivered before it.
fn assert_next_kill(stream: &EventStream, agent: &TestAgent, name: &str) {
    let event = stream.next_non_heartbeat(agent).unwrap();
    assert_eq!(event["type"], "KILL", "{event}");
    assert_eq!(event["kill"]["task_id"]["value"], name, "{event}");
}

#[test]
fn tasks_for_an_executor_without_a_stream_are_queued_checkpointed_and_delivered() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start();
    let (eid, pod_id, token) = crate::executor_api::two_task_pod(&agent);

    // Not subscribed: queued (202), and its ID is taken.
    let (status, body) = launch_single(&agent, &pod_id, "one");
    assert_eq!(status, 202, "{body}");
    let (status, body) = launch_single(&agent, &pod_id, "one");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("already exists"), "{body}");
    // Another principal can neither kill a queued task nor add one.
    assert_eq!(kill(&agent, INTRUDER, &pod_id, "one"), 403);
    let intruder = agent.curl(
        Some(INTRUDER),
        &format!("/nestguard/v1/pods/{pod_id}/tasks"),
        r#"{"name": "x", "task_id": {"value": "x"}, "agent_id": {"value": "e2e"}}"#,
    );
    assert_eq!(intruder.0, 403, "{}", intruder.1);

    // Killing a queued task of a group kills its whole group before
    // delivery (Mesos' `Slave::killTask`): TASK_KILLED from the agent.
    assert_eq!(kill(&agent, OPS, &pod_id, "side"), 202);
    let pending = agent_updates(&agent, &pod_id, &["app", "side"], "TASK_KILLED");
    for update in &pending {
        assert_eq!(
            update["reason"], "REASON_TASK_KILLED_DURING_LAUNCH",
            "{update}"
        );
        // Mesos' texts (slave.cpp, `Slave::killTask`): the killed task,
        // and the others of its group.
        let message = if update["task_id"]["value"] == "side" {
            "Killed before delivery to the executor"
        } else {
            "A task within the task group was killed before delivery to the executor"
        };
        assert_eq!(update["message"], message, "{update}");
        assert_eq!(update["executor_id"]["value"], eid.as_str(), "{update}");
        assert_eq!(acknowledge(&agent, &pod_id, update), 200);
    }
    assert!(queue_file(&agent, &pod_id).exists());

    // The agent restarts before the executor subscribes: the queue is
    // read back from its checkpoint.
    agent.sigkill();
    agent.spawn();
    // An executor of another framework cannot subscribe as this one.
    let mut other = custom_pod(serde_json::json!([task("o", "sleep 60")]));
    other["framework"]["id"]["value"] = serde_json::json!("other-framework");
    other["executor"]["framework_id"]["value"] = serde_json::json!("other-framework");
    let (other_pod, _) = agent.launch_pod(&other);
    let other_token = self::token(&agent, "other-framework", &executor_id(&other), &other_pod);
    let (status, body) = subscribe(&agent, Some(&other_token), &eid, false, &[]);
    assert_eq!(status, 403, "{:?}", body.err());

    // SUBSCRIBE in protobuf: SUBSCRIBED, then the queued LAUNCH, nothing
    // of the killed group, and the queue's checkpoint is gone.
    let (status, stream) = subscribe(&agent, Some(&token), &eid, true, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_subscribed(&stream, &agent, &eid, &pod_id);
    assert_launch(&stream, &agent, &eid, "one");
    assert_eq!(kill(&agent, OPS, &pod_id, "one"), 202);
    assert_next_kill(&stream, &agent, "one");
    assert!(!queue_file(&agent, &pod_id).exists());
    assert!(pending_updates(&agent, &pod_id).is_empty());

    // Another restart: the executor is not subscribed until it
    // re-subscribes, so new tasks are queued again.
    agent.sigkill();
    agent.spawn();
    assert_eq!(launch_single(&agent, &pod_id, "two").0, 202);
    assert_eq!(launch_single(&agent, &pod_id, "three").0, 202);
    // The executor lists what it has: "one", and "three" (as if the agent
    // had stopped after sending it, before checkpointing the queue): only
    // "two" is sent; "one", listed, is not reported lost.
    let listed = |name: &str| {
        serde_json::json!({"name": name, "task_id": {"value": name},
            "agent_id": {"value": agent_id(&agent)}})
    };
    let (status, stream) = subscribe_with_tasks(
        &agent,
        Some(&token),
        &eid,
        false,
        &[],
        &[listed("one"), listed("three")],
    );
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_subscribed(&stream, &agent, &eid, &pod_id);
    assert_launch(&stream, &agent, &eid, "two");
    assert_eq!(kill(&agent, OPS, &pod_id, "two"), 202);
    assert_next_kill(&stream, &agent, "two");
    assert!(
        pending_updates(&agent, &pod_id).is_empty(),
        "{:?}",
        pending_updates(&agent, &pod_id)
    );
    assert!(!queue_file(&agent, &pod_id).exists());
}

/// The framework's (ops') Basic authorization header.
fn ops_basic() -> String {
    format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{}:{}", OPS.0, OPS.1)
        )
    )
}

/// POSTs a task for the pod as the framework (bodies too large for a
/// command-line argument).
fn post_task(agent: &TestAgent, pod: &str, body: &str) -> (u16, String) {
    let http = http_client(Duration::from_secs(120));
    let mut reply = http
        .post(format!("{}/nestguard/v1/pods/{pod}/tasks", agent.address))
        .header("Authorization", &ops_basic())
        .header("Content-Type", "application/json")
        .send(body)
        .unwrap();
    (
        reply.status().as_u16(),
        reply.body_mut().read_to_string().unwrap_or_default(),
    )
}

/// A task of about `size` bytes (a label carries the bulk).
fn big_task(name: &str, size: usize) -> String {
    serde_json::json!({"name": name, "task_id": {"value": name},
        "agent_id": {"value": "e2e"},
        "labels": {"labels": [{"key": "bulk", "value": "x".repeat(size)}]}})
    .to_string()
}

/// The queue is bounded in bytes too, counted as its checkpoint is
/// written, so a full queue is read back after a restart; one task is
/// bounded (256 KiB) whether queued or sent at once.
#[test]
fn the_queue_and_a_task_are_bounded_in_bytes() {
    let Some((mut agent, pod)) = agent_with_pod() else {
        return;
    };
    let (eid, pod_id, token) = ids(pod);
    let (status, body) = post_task(&agent, &pod_id, &big_task("huge", 300 * 1024));
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("Task huge is") && body.contains("over the limit of 262144 bytes"),
        "{body}"
    );
    // 200 KiB each: the 21st goes over 4 MiB.
    let mut accepted = 0;
    let refused = loop {
        let (status, body) = post_task(
            &agent,
            &pod_id,
            &big_task(&format!("b{accepted}"), 200 * 1024),
        );
        if status != 202 {
            break (status, body);
        }
        accepted += 1;
        assert!(accepted <= 21, "no byte bound");
    };
    assert_eq!(refused.0, 409, "{}", refused.1);
    assert!(refused.1.contains("Too many tasks queued"), "{}", refused.1);
    assert_eq!(accepted, 20);
    // A full queue survives a restart and is delivered in full.
    agent.sigkill();
    agent.spawn();
    assert!(
        !agent.log().contains("unreadable checkpoint"),
        "{}",
        agent.log()
    );
    let (status, stream) = subscribe(&agent, Some(&token), &eid, true, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_subscribed(&stream, &agent, &eid, &pod_id);
    assert_eq!(
        stream.next_non_heartbeat(&agent).unwrap()["type"],
        "LAUNCH_GROUP"
    );
    for i in 0..accepted {
        assert_launch(&stream, &agent, &eid, &format!("b{i}"));
    }
    // Sent at once, the same bound on one task.
    let (status, body) = post_task(&agent, &pod_id, &big_task("huge", 300 * 1024));
    assert_eq!(status, 400, "{body}");
}

/// As Mesos' `Executor::everSentTask`: an executor that was sent a task
/// is never shut down for having nothing queued. Here the agent restarts
/// while the executor runs its task; before the executor re-subscribes
/// the framework launches a task (queued) and kills it (killed before
/// delivery): on re-subscription the executor gets no SHUTDOWN and its
/// task keeps running.
#[test]
fn an_executor_that_was_sent_a_task_is_not_shut_down_when_its_queue_empties() {
    let Some((mut agent, pod)) = agent_with_pod() else {
        return;
    };
    let (eid, pod_id, token) = (pod.eid.clone(), pod.id.clone(), pod.token.clone());
    let stream = pod.subscribe(&agent).0;
    let uuid = uuid_bytes();
    let (status, body) = post_executor_call(
        &agent,
        &token,
        &update_call(&eid, "app", "TASK_RUNNING", &uuid[..]),
    );
    assert_eq!(status, 202, "{body}");
    for update in pending_updates(&agent, &pod_id) {
        assert_eq!(acknowledge(&agent, &pod_id, &update), 200);
    }
    drop(stream);
    agent.sigkill();
    agent.spawn();
    assert_eq!(launch_single(&agent, &pod_id, "late").0, 202);
    assert_eq!(kill(&agent, OPS, &pod_id, "late"), 202);
    // Its only update acknowledged, the executor lists no task; no
    // SHUTDOWN comes.
    subscribes_to_nothing(&agent, (&eid, &pod_id, &token), &[]);
    let pending = pending_updates(&agent, &pod_id);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["task_id"]["value"], "late");
    assert_eq!(pending[0]["state"], "TASK_KILLED");
}

/// Two launches of one task ID at once onto a subscribed executor: the
/// ID is checked under the lock that sends, so exactly one is accepted
/// and the executor gets one LAUNCH.
#[test]
fn concurrent_launches_of_one_task_id_are_accepted_once() {
    let Some((agent, pod)) = agent_with_pod() else {
        return;
    };
    let stream = pod.subscribe(&agent).0;
    let task = serde_json::json!({"name": "dup", "task_id": {"value": "dup"},
        "agent_id": {"value": "e2e"}})
    .to_string();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let launches: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| post_task(&agent, &pod.id, &task).0))
            .collect();
        launches.into_iter().map(|l| l.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 202).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        7,
        "{statuses:?}"
    );
    assert_launch(&stream, &agent, &pod.eid, "dup");
    assert_eq!(kill(&agent, OPS, &pod.id, "dup"), 202);
    assert_next_kill(&stream, &agent, "dup");
}

/// A framework cannot grow the agent's memory (or disk) without limit by
/// launching onto an executor that never subscribes: at most 256 tasks
/// are queued; the next launch is refused until it subscribes.
#[test]
fn the_queue_of_an_executor_is_bounded() {
    let Some((agent, pod)) = agent_with_pod() else {
        return;
    };
    let (eid, pod_id, token) = ids(pod);
    let launch = |name: &str| {
        let task = serde_json::json!({"name": name, "task_id": {"value": name},
            "agent_id": {"value": "e2e"}});
        post_task(&agent, &pod_id, &task.to_string())
    };
    // The pod's group holds one; 255 more fit.
    for i in 0..255 {
        let (status, body) = launch(&format!("t{i}"));
        assert_eq!(status, 202, "t{i}: {body}");
    }
    let (status, body) = launch("over");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("Too many tasks queued"), "{body}");
    // Subscribed (protobuf), it gets them all, in order, each task
    // assigned to this agent; then a launch goes at once.
    let (status, stream) = subscribe(&agent, Some(&token), &eid, true, &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_subscribed(&stream, &agent, &eid, &pod_id);
    let group = stream.next_non_heartbeat(&agent).unwrap();
    assert_eq!(group["type"], "LAUNCH_GROUP", "{group}");
    assert_eq!(
        group["launch_group"]["task_group"]["tasks"][0]["agent_id"]["value"],
        agent_id(&agent).as_str(),
        "{group}"
    );
    for i in 0..255 {
        assert_launch(&stream, &agent, &eid, &format!("t{i}"));
    }
    let (status, body) = launch("over");
    assert_eq!(status, 202, "{body}");
    assert_launch(&stream, &agent, &eid, "over");
}

/// A pod with one more task, "one", queued; the agent is killed, `change`
/// done to the queue's checkpoint, and the agent started again. The
/// executor's IDs (executor, pod, token) and the checkpoint's path.
fn queued_one_then_restarted(
    change: impl FnOnce(&std::path::Path),
) -> Option<(TestAgent, (String, String, String), std::path::PathBuf)> {
    let (mut agent, pod) = agent_with_pod()?;
    let (eid, pod_id, token) = ids(pod);
    assert_eq!(launch_single(&agent, &pod_id, "one").0, 202);
    agent.sigkill();
    let queue = queue_file(&agent, &pod_id);
    change(&queue);
    agent.spawn();
    Some((agent, (eid, pod_id, token), queue))
}

/// A torn checkpoint of the queue does not stop recovery: it is logged,
/// moved aside for the operator (an earlier one kept), and the framework
/// hears that the undelivered tasks, the pod's and single ones, are lost.
#[test]
fn a_torn_queue_checkpoint_is_reported_and_recovery_goes_on() {
    let Some((mut agent, (eid, pod_id, token), queue)) = queued_one_then_restarted(|queue| {
        std::fs::write(queue, r#"{"queued": [{"type": "LAUNCH_GR"#).unwrap();
    }) else {
        return;
    };
    assert!(
        agent
            .log()
            .contains("unreadable checkpoint of queued tasks"),
        "{}",
        agent.log()
    );
    assert!(!queue.exists());
    assert!(queue.with_file_name("queued.damaged").exists());
    // The pod's group and the single task: both lost, from the agent.
    for update in agent_updates(&agent, &pod_id, &["app", "one"], "TASK_LOST") {
        assert_eq!(update["reason"], "REASON_AGENT_RESTARTED", "{update}");
    }
    // Damaged again: the earlier file is kept, the new one beside it.
    assert_eq!(launch_single(&agent, &pod_id, "two").0, 202);
    agent.sigkill();
    std::fs::write(&queue, "{").unwrap();
    agent.spawn();
    assert!(queue.with_file_name("queued.damaged").exists());
    assert_eq!(
        std::fs::read_to_string(queue.with_file_name("queued.damaged.1")).unwrap(),
        "{"
    );
    assert!(
        pending_updates(&agent, &pod_id)
            .iter()
            .any(|u| u["task_id"]["value"] == "two" && u["state"] == "TASK_LOST")
    );
    // The executor subscribes; nothing is delivered.
    subscribes_to_nothing(&agent, (&eid, &pod_id, &token), &[]);
}

/// A queue checkpoint that is gone, not damaged (so nothing is moved
/// aside): its tasks, whose IDs are checkpointed as queued with the status
/// updates, are reported lost at recovery, and the executor is sent none.
#[test]
fn a_queue_checkpoint_that_is_gone_has_its_tasks_reported_lost() {
    let Some((mut agent, (eid, pod_id, token), queue)) =
        queued_one_then_restarted(|queue| std::fs::remove_file(queue).unwrap())
    else {
        return;
    };
    assert!(!queue.with_file_name("queued.damaged").exists());
    for update in agent_updates(&agent, &pod_id, &["app", "one"], "TASK_LOST") {
        assert_eq!(update["reason"], "REASON_AGENT_RESTARTED", "{update}");
    }
    // Reported once: a second recovery finds them with a state.
    agent.sigkill();
    agent.spawn();
    agent_updates(&agent, &pod_id, &["app", "one"], "TASK_LOST");
    subscribes_to_nothing(&agent, (&eid, &pod_id, &token), &[]);
}

/// The IDs checkpointed as queued with the status updates are those of
/// the queue, rewritten with it: a task killed before delivery leaves
/// them (with its TASK_KILLED), a SUBSCRIBE that delivers empties them.
#[test]
fn the_queued_ids_checkpointed_with_the_updates_follow_the_queue() {
    let Some((agent, pod)) = agent_with_pod() else {
        return;
    };
    let (eid, pod_id, token) = ids(pod);
    let queued_ids = || {
        let path = queue_file(&agent, &pod_id).with_file_name("updates");
        let updates: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        updates["queued"].clone()
    };
    assert_eq!(launch_single(&agent, &pod_id, "one").0, 202);
    assert_eq!(launch_single(&agent, &pod_id, "two").0, 202);
    assert_eq!(queued_ids(), serde_json::json!(["app", "one", "two"]));
    assert_eq!(kill(&agent, OPS, &pod_id, "one"), 202);
    assert_eq!(queued_ids(), serde_json::json!(["app", "two"]));
    agent_updates(&agent, &pod_id, &["one"], "TASK_KILLED");
    let (status, stream) = subscribe_with_tasks(&agent, Some(&token), &eid, false, &[], &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_subscribed(&stream, &agent, &eid, &pod_id);
    assert_eq!(queued_ids(), serde_json::json!([]));
    assert!(!queue_file(&agent, &pod_id).exists());
}

/// An update whose checkpoint cannot be written is not kept in memory
/// either: the framework never sees one a restart would lose. The kill of
/// a queued task whose TASK_KILLED cannot be recorded fails (500) and
/// leaves the task queued: it is still delivered, not silently dropped.
/// (The checkpoint is made unwritable by a directory in its place.)
#[test]
fn an_update_whose_checkpoint_fails_is_not_kept() {
    let Some((agent, pod)) = agent_with_pod() else {
        return;
    };
    let (eid, pod_id, token) = ids(pod);
    assert_eq!(launch_single(&agent, &pod_id, "one").0, 202);
    let updates = queue_file(&agent, &pod_id).with_file_name("updates");
    let saved = std::fs::read(&updates).unwrap();
    std::fs::remove_file(&updates).unwrap();
    std::fs::create_dir(&updates).unwrap();
    std::fs::write(updates.join("in-the-way"), "").unwrap();
    let killed = kill(&agent, OPS, &pod_id, "one");
    let pending = pending_updates(&agent, &pod_id);
    std::fs::remove_dir_all(&updates).unwrap();
    std::fs::write(&updates, saved).unwrap();
    assert_eq!(killed, 500, "{}", agent.log());
    assert_eq!(pending, Vec::<serde_json::Value>::new());
    let (status, stream) = subscribe_with_tasks(&agent, Some(&token), &eid, false, &[], &[]);
    assert_eq!(status, 200);
    let stream = stream.unwrap();
    assert_subscribed(&stream, &agent, &eid, &pod_id);
    let group = stream.next_non_heartbeat(&agent).unwrap();
    assert_eq!(group["type"], "LAUNCH_GROUP", "{group}");
    assert_launch(&stream, &agent, &eid, "one");
}

/// Removes a file when dropped (a panic included).
#[cfg(debug_assertions)]
struct RemoveOnDrop<'a>(&'a std::path::Path);

#[cfg(debug_assertions)]
impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

/// SUBSCRIBE while the agent recovers: Mesos' 503
/// "Agent has not finished recovery" (src/slave/http.cpp:735) with the
/// executor's own token, which names a container the agent has not
/// recovered yet, and on the operator's `/state`; no token or a bad one is
/// still 401 while it recovers, and a token of a container that is not
/// running is 401 once it recovered; the same SUBSCRIBE succeeds once
/// recovery is done. Recovery is held by a file the test removes (no
/// timing). Debug builds only: the hold is a debug-build hook
/// (`NESTGUARD_TEST_HOLD_RECOVERY`, none in a release agent, which recovers
/// at once), so the test is not compiled in release.
#[cfg(debug_assertions)]
#[test]
fn subscribe_during_recovery_gets_503_then_succeeds() {
    let Some((mut agent, pod)) = agent_with_pod() else {
        return;
    };
    let (eid, pod_id, token) = ids(pod);
    agent.sigkill();
    let hold = agent.dir.path().join("hold-recovery");
    std::fs::write(&hold, "").unwrap();
    agent.extra_env.push((
        "NESTGUARD_TEST_HOLD_RECOVERY".into(),
        hold.display().to_string(),
    ));
    let address = agent.address.clone();
    let http = http_client(Duration::from_secs(120));
    let call = serde_json::json!({"type": "SUBSCRIBE", "framework_id": {"value": FRAMEWORK},
        "executor_id": {"value": eid}, "subscribe": {}})
    .to_string();
    let subscribe_as = |authorization: Option<&str>| {
        let mut request = http
            .post(format!("{address}/api/v1/executor"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(authorization) = authorization {
            request = request.header("Authorization", authorization);
        }
        let mut reply = request.send(call.as_str()).ok()?;
        let status = reply.status().as_u16();
        Some((
            status,
            reply.body_mut().read_to_string().unwrap_or_default(),
        ))
    };
    let bearer = format!("Bearer {token}");
    let subscribe_raw = || subscribe_as(Some(&bearer));
    let log = agent.dir.path().join("agent.log");
    std::thread::scope(|scope| {
        let restarted = scope.spawn(|| agent.spawn());
        // A failed assertion below still ends the hold, so that the
        // restart finishes and the agent is cleaned up.
        let _release = RemoveOnDrop(&hold);
        // Served from before recovery: poll until it answers at all.
        let (status, body) = poll(Duration::from_secs(30), subscribe_raw, || {
            format!(
                "the agent did not answer\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        assert_eq!(
            (status, body.as_str()),
            (503, "Agent has not finished recovery")
        );
        // Still held: still 503, and the operator API too.
        assert_eq!(subscribe_raw().map(|r| r.0), Some(503));
        let mut state = http
            .get(format!("{address}/state"))
            .header("Authorization", &ops_basic())
            .call()
            .unwrap();
        assert_eq!(state.status().as_u16(), 503);
        assert_eq!(
            state.body_mut().read_to_string().unwrap(),
            "Agent has not finished recovery"
        );
        // Authentication is not held: no token, or a bad one, is 401.
        assert_eq!(subscribe_as(None).map(|r| r.0), Some(401));
        assert_eq!(
            subscribe_as(Some("Bearer not-a-token")).map(|r| r.0),
            Some(401)
        );
        assert!(
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("NESTGUARD_TEST_HOLD_RECOVERY: recovery waits")
        );
        std::fs::remove_file(&hold).unwrap();
        restarted.join().unwrap();
    });
    // Recovered: a token of a container that is not running is 401.
    let dead = self::token(&agent, FRAMEWORK, &eid, "no-such-container");
    let (status, _) = subscribe(&agent, Some(&dead), &eid, false, &[]);
    assert_eq!(status, 401);
    let (status, stream) = subscribe(&agent, Some(&token), &eid, false, &[]);
    assert_eq!(status, 200, "{:?}", stream.err());
    let stream = stream.unwrap();
    assert_subscribed(&stream, &agent, &eid, &pod_id);
    // The pod's group was queued, never delivered: it comes now.
    assert_eq!(
        stream.next_non_heartbeat(&agent).unwrap()["type"],
        "LAUNCH_GROUP"
    );
}

/// A queue checkpoint that still holds a task the agent already delivered
/// (a crash between sending and rewriting the checkpoint, or a stale
/// file) never sends it again: a queued task with a recorded state is
/// dropped; not listed by the executor and still STAGING, it is lost.
#[test]
fn a_stale_queue_checkpoint_never_sends_a_delivered_task_again() {
    let Some((mut agent, pod)) = agent_with_pod() else {
        return;
    };
    let (eid, pod_id, token) = (pod.eid.clone(), pod.id.clone(), pod.token.clone());
    assert_eq!(launch_single(&agent, &pod_id, "one").0, 202);
    let stale = std::fs::read(queue_file(&agent, &pod_id)).unwrap();
    let stream = pod.subscribe(&agent).0;
    assert_launch(&stream, &agent, &eid, "one");
    drop(stream);
    agent.sigkill();
    std::fs::write(queue_file(&agent, &pod_id), &stale).unwrap();
    agent.spawn();
    // The executor lists "app" (it runs it), not "one".
    let app = serde_json::json!({"name": "app", "task_id": {"value": "app"},
        "agent_id": {"value": agent_id(&agent)}});
    subscribes_to_nothing(&agent, (&eid, &pod_id, &token), &[app]);
    assert!(!queue_file(&agent, &pod_id).exists());
    let pending = pending_updates(&agent, &pod_id);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["task_id"]["value"], "one");
    assert_eq!(pending[0]["state"], "TASK_LOST");
    assert_eq!(pending[0]["message"], "Task launched during agent restart");
}
