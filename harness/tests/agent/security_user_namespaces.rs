//! Pods in user namespaces (`namespaces/user`) through a real `nestguard
//! agent` that loads libnestguard.so: the pod's mapping survives the
//! agent's SIGKILL, a container launched into the recovered pod enters it,
//! and a new pod gets another range. Needs root.

use crate::agent_support::require_root;
use crate::security_recovery::{Agent, CgroupRoot};

const ISOLATION: &str = "cgroups,namespaces,filesystem/linux,volume/sandbox_path,hardening,\
                         seccomp,disk/du,namespaces/user";

fn uid_map(pid: i32) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/uid_map"))
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_pods_mapping_survives_the_agents_sigkill() {
    if !require_root() {
        return;
    }
    let root = CgroupRoot::new("userns");
    let mut agent = Agent::new(
        &root,
        &[
            ("isolation", ISOLATION),
            ("user_namespace_range", "3000600000-3000731072/65536"),
        ],
    );
    // The pod's ids search (never list) the directories above its sandbox.
    std::fs::set_permissions(
        agent.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .unwrap();
    agent.spawn();
    agent.launch_standalone("ng-userns-pod", "sleep 1000");
    agent.launch_nested("ng-userns-pod", "a", "sleep 1000");
    let pod = agent.supervisor_pid(&["ng-userns-pod"]);
    let nested = agent.supervisor_pid(&["ng-userns-pod", "a"]);
    assert_eq!(uid_map(pod), ["0", "3000600000", "65536"]);
    assert_eq!(uid_map(nested), uid_map(pod));

    agent.sigkill();
    agent.spawn();
    // Recovered: the pod runs on in its range, a container launched into
    // it enters the same user namespace, a new pod gets the other range.
    agent.launch_nested("ng-userns-pod", "b", "sleep 1000");
    let after = agent.supervisor_pid(&["ng-userns-pod", "b"]);
    assert_eq!(uid_map(after), ["0", "3000600000", "65536"]);
    assert_eq!(
        std::fs::metadata(format!("/proc/{after}/ns/user"))
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
            .unwrap(),
        std::fs::metadata(format!("/proc/{pod}/ns/user"))
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
            .unwrap(),
        "the very user namespace of the pod"
    );
    agent.launch_standalone("ng-userns-other", "sleep 1000");
    let other = agent.supervisor_pid(&["ng-userns-other"]);
    assert_eq!(uid_map(other), ["0", "3000665536", "65536"]);
    let _ = agent.work();
}

/// A pod run by nestguard's default executor in its user namespace; a
/// debug session into it enters the same namespace.
#[test]
fn a_debug_session_enters_the_pods_user_namespace() {
    use crate::agent_support::{OPS, TestAgent};
    use crate::debug_sessions::{
        ACLS, Wire, open, output, running_pod, session_call, streaming_headers,
    };
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start_public_with_acls(ACLS);
    let manifest_path = agent.dir.path().join("modules.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    for module in manifest["libraries"][0]["modules"].as_array_mut().unwrap() {
        if module["name"] == "io_nestguard_Isolator" {
            let parameters = module["parameters"].as_array_mut().unwrap();
            parameters.push(serde_json::json!({"key": "isolation",
                "value": format!("{ISOLATION},environment/credentials")}));
            parameters.push(serde_json::json!({"key": "user_namespace_range",
                "value": "3000800000-3000865536/65536"}));
        }
    }
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    std::fs::set_permissions(
        agent.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .unwrap();
    agent.sigkill();
    agent.spawn();
    let root = running_pod(&agent);
    let call = session_call(&root, "dbg-userns", "cat /proc/self/uid_map; id -u", None);
    let (status, head, stream, rest) = open(
        &agent,
        OPS,
        &streaming_headers(Wire::Json),
        &Wire::Json.encode(&call),
    );
    assert_eq!(status, 200, "{head}\n{}", agent.log());
    let (out, err) = output(Wire::Json, &head, stream, rest);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["0", "3000800000", "65536", "0"],
        "{err}"
    );
}
