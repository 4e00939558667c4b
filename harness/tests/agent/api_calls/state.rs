//! GET_CONTAINERS, GET_STATE/FRAMEWORKS/EXECUTORS/TASKS and `/state`, filtered per principal.

use nestguard::proto::mesos::v1::agent::call;

use super::{ACLS, Wire, api, ok, request, typed};
use crate::agent_support::{INTRUDER, OPS, TestAgent, pod, require_root, task};

#[test]
fn state_calls_filter_per_principal() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let mut once = task("once", "true");
    once["transient"] = serde_json::json!(true);
    let spec = pod(serde_json::json!([task("sleeper", "sleep 600"), once]));
    let (root, sandbox) = agent.launch_pod(&spec);
    agent.wait_task(&sandbox, "sleeper", "TASK_RUNNING");
    agent.wait_task(&sandbox, "once", "TASK_FINISHED");
    let executor_id = spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    for wire in [Wire::Json, Wire::Protobuf] {
        // GET_CONTAINERS carries the isolator's status and usage.
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetContainers));
        let containers = r.get_containers.unwrap().containers;
        let pod = containers
            .iter()
            .find(|c| c.container_id.value == root)
            .unwrap_or_else(|| panic!("{containers:?}"));
        let status = pod.container_status.as_ref().expect("container_status");
        assert_eq!(status.container_id.as_ref().unwrap().value, root);
        let stats = pod
            .resource_statistics
            .as_ref()
            .expect("resource_statistics");
        assert!(stats.timestamp > 0.0);
        assert!(stats.processes.unwrap_or(0) >= 1, "{stats:?}");
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetFrameworks));
        let frameworks = r.get_frameworks.unwrap().frameworks;
        assert_eq!(frameworks.len(), 1, "{frameworks:?}");
        assert_eq!(frameworks[0].framework_info.name, "e2e");
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetExecutors));
        let executors = r.get_executors.unwrap().executors;
        assert_eq!(executors.len(), 1);
        assert_eq!(executors[0].executor_info.executor_id.value, executor_id);
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetState));
        let state = r.get_state.unwrap();
        assert_eq!(state.get_frameworks.unwrap().frameworks.len(), 1);
        assert_eq!(state.get_executors.unwrap().executors.len(), 1);
        let tasks = ok(&agent, OPS, wire, &typed(call::Type::GetTasks))
            .get_tasks
            .unwrap();
        let names = |list: &[nestguard::proto::mesos::v1::Task]| -> Vec<(String, i32)> {
            list.iter().map(|t| (t.name.clone(), t.state)).collect()
        };
        use nestguard::proto::mesos::v1::TaskState;
        assert_eq!(
            names(&tasks.launched_tasks),
            [("sleeper".to_owned(), TaskState::TaskRunning as i32)]
        );
        assert_eq!(
            names(&tasks.terminated_tasks),
            [("once".to_owned(), TaskState::TaskFinished as i32)]
        );
        assert_eq!(
            tasks.launched_tasks[0].executor_id.as_ref().unwrap().value,
            executor_id
        );
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetTasks));
        assert_eq!(r.get_tasks.unwrap(), Default::default());
        if wire == Wire::Json {
            v1_json_says_agent_id(&agent);
        }

        // Filtered, not refused: 200 with nothing in it.
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetFrameworks));
        assert!(r.get_frameworks.unwrap().frameworks.is_empty());
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetExecutors));
        assert!(r.get_executors.unwrap().executors.is_empty());
        let r = ok(&agent, INTRUDER, wire, &typed(call::Type::GetState));
        let state = r.get_state.unwrap();
        assert!(state.get_frameworks.unwrap().frameworks.is_empty());
        assert!(state.get_executors.unwrap().executors.is_empty());
    }
    // /state filters the same way, and shows flags only to VIEW_FLAGS.
    let (status, _, body) = request(&agent, "GET", "/state", Some(OPS), &[], b"");
    assert_eq!(status, 200);
    let state: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        state["frameworks"][0]["executors"][0]["id"],
        executor_id.as_str()
    );
    assert_eq!(
        state["frameworks"][0]["executors"][0]["tasks"],
        serde_json::json!([{"id": "sleeper", "name": "sleeper", "state": "TASK_RUNNING"}])
    );
    assert_eq!(
        state["frameworks"][0]["executors"][0]["completed_tasks"][0]["state"],
        "TASK_FINISHED"
    );
    assert!(state["flags"]["work_dir"].is_string());
    let (status, _, body) = request(&agent, "GET", "/state", Some(INTRUDER), &[], b"");
    assert_eq!(status, 200);
    let state: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(state["frameworks"], serde_json::json!([]));
    assert!(state.get("flags").is_none());
    // A FIFO planted for the executor's stdout does not hang the agent, nor
    // change what it reports: task states come from the executor API's
    // status updates, never from the tenant's sandbox.
    std::fs::remove_file(sandbox.join("stdout")).unwrap();
    nix::unistd::mkfifo(
        &sandbox.join("stdout"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let tasks = ok(&agent, OPS, Wire::Json, &typed(call::Type::GetTasks))
        .get_tasks
        .unwrap();
    assert_eq!(tasks.launched_tasks.len(), 1, "{tasks:?}");
    assert_eq!(
        tasks.launched_tasks[0].state,
        nestguard::proto::mesos::v1::TaskState::TaskRunning as i32
    );
    assert_eq!(tasks.terminated_tasks.len(), 1, "{tasks:?}");
}

/// The JSON itself carries Mesos' v1 names: a task's agent is `agent_id`
/// (the agent's own ID), never the unversioned `slave_id`.
fn v1_json_says_agent_id(agent: &TestAgent) {
    let id = ok(agent, OPS, Wire::Protobuf, &typed(call::Type::GetAgent))
        .get_agent
        .and_then(|a| a.agent_info)
        .and_then(|i| i.id)
        .expect("GET_AGENT has the agent's ID")
        .value;
    for (kind, tasks) in [
        (call::Type::GetTasks, "/get_tasks"),
        (call::Type::GetState, "/get_state/get_tasks"),
    ] {
        let (status, body) = api(agent, OPS, Wire::Json, &typed(kind));
        let text = String::from_utf8(body).unwrap();
        assert_eq!(status, 200, "{text}");
        assert!(!text.contains("slave_id"), "{kind:?}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let launched = &v.pointer(tasks).unwrap()["launched_tasks"][0];
        assert_eq!(
            launched["agent_id"]["value"],
            id.as_str(),
            "{kind:?}: {text}"
        );
    }
}
