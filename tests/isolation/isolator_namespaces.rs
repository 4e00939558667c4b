//! Namespaces, hardening and credential injection end to end (root): a
//! nested container shares its executor's network namespace and gets its
//! own pid (unless `share_pid_namespace`), UTS and mount namespaces; hardening
//! sets no_new_privs, reduces the bounding set and masks `/proc/kcore`; a
//! nested container receives its executor's token through prepare().

use crate::isolator_support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use isolator_support::*;
use nestguard::proto::mesos::linux_info::IpcMode;
use nestguard::proto::mesos::{
    CapabilityInfo, ContainerInfo, ExecutorId, ExecutorInfo, FrameworkId, LinuxInfo,
};

const NS_SCRIPT: &str = "for n in net pid ipc uts mnt; do echo $n $(readlink /proc/self/ns/$n); done > ns; hostname > host";

fn namespaces_of(path: &std::path::Path) -> std::collections::HashMap<String, String> {
    read(path)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

fn host_ns(pid: i32, name: &str) -> String {
    std::fs::read_link(format!("/proc/{pid}/ns/{name}"))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn nested_containers_enter_the_executors_network_and_get_their_own_pid_and_mount_namespaces() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("ns", &[]);
    let (exec, exec_pid) = agent.launch("exec", config("exec sleep 120"));
    let (own, _) = agent.launch("exec.own", config(NS_SCRIPT));
    let mut shared = config(NS_SCRIPT);
    shared.container_info = Some(ContainerInfo {
        linux_info: Some(LinuxInfo {
            share_pid_namespace: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    });
    let (shared, _) = agent.launch("exec.shared", shared);
    let mut named = config(NS_SCRIPT);
    named.container_info = Some(ContainerInfo {
        hostname: Some("nestguard-sub".into()),
        ..Default::default()
    });
    let (named, _) = agent.launch("exec.named", named);
    let mut private = config(&format!(
        "{NS_SCRIPT}; stat -f -c %T /dev/shm > shm-type; touch /dev/shm/nestguard-private-shm"
    ));
    private.container_info = Some(ContainerInfo {
        linux_info: Some(LinuxInfo {
            ipc_mode: Some(IpcMode::Private as i32),
            shm_size: Some(16),
            ..Default::default()
        }),
        ..Default::default()
    });
    let (private, _) = agent.launch("exec.private", private);
    for c in [&own, &shared, &named, &private] {
        assert_eq!(agent.wait(c, Duration::from_secs(20)), Some(0), "{c:?}");
    }
    let own_ns = namespaces_of(&agent.sandbox(&own).join("ns"));
    let shared_ns = namespaces_of(&agent.sandbox(&shared).join("ns"));
    let named_ns = namespaces_of(&agent.sandbox(&named).join("ns"));
    let exec_ns = |n: &str| host_ns(exec_pid, n);
    for ns in [&own_ns, &shared_ns, &named_ns] {
        assert_eq!(ns["net"], exec_ns("net"), "{ns:?}");
        assert_eq!(ns["ipc"], exec_ns("ipc"), "{ns:?}");
        assert_ne!(ns["mnt"], exec_ns("mnt"), "{ns:?}");
    }
    assert_ne!(own_ns["pid"], exec_ns("pid"));
    assert_eq!(shared_ns["pid"], exec_ns("pid"));
    // Every container has its own UTS namespace (a copy of its parent's).
    assert_ne!(own_ns["uts"], exec_ns("uts"));
    assert_ne!(shared_ns["uts"], exec_ns("uts"));
    assert_ne!(named_ns["uts"], exec_ns("uts"));
    assert_eq!(
        read(agent.sandbox(&named).join("host")).trim(),
        "nestguard-sub"
    );
    agent.destroy(&exec, None);
}

#[test]
fn hardening_sets_no_new_privs_reduces_capabilities_and_masks_paths() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new(
        "hardening",
        &[("hardening_capabilities", "CHOWN,KILL,SETUID,SETGID")],
    );
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let (task, _) = agent.launch(
        "exec.task",
        config(
            "grep -E '^(CapBnd|NoNewPrivs)' /proc/self/status > status; \
             for p in /proc/keys /proc/timer_list /proc/kcore; do \
               if [ -e $p ]; then echo $p $(wc -c < $p); fi; done > masked; \
             ls -A /sys/firmware | wc -l > firmware",
        ),
    );
    assert_eq!(agent.wait(&task, Duration::from_secs(20)), Some(0));
    let status = read(agent.sandbox(&task).join("status"));
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    // CHOWN 0, KILL 5, SETGID 6, SETUID 7.
    let expected = format!(
        "CapBnd:\t{:016x}",
        (1u64 << 0) | (1 << 5) | (1 << 6) | (1 << 7)
    );
    assert!(status.contains(&expected), "{status} vs {expected}");
    let masked = read(agent.sandbox(&task).join("masked"));
    let lines: Vec<&str> = masked.lines().collect();
    assert!(lines.len() >= 2, "{masked}");
    assert!(lines.iter().all(|l| l.ends_with(" 0")), "{masked}");
    assert_eq!(read(agent.sandbox(&task).join("firmware")).trim(), "0");
    // The host's own entries are untouched.
    assert!(!read("/proc/keys").is_empty());

    // Asking for more than the allow-list is refused, naming the capability.
    let mut greedy = config("true");
    greedy.container_info = Some(ContainerInfo {
        linux_info: Some(LinuxInfo {
            bounding_capabilities: Some(CapabilityInfo {
                capabilities: vec![
                    nestguard::proto::mesos::capability_info::Capability::SysAdmin as i32,
                ],
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    let err = agent.try_launch(&id("exec.greedy"), greedy).unwrap_err();
    assert!(
        err.contains("SYS_ADMIN") && err.contains("hardening"),
        "{err}"
    );
    agent.destroy(&exec, None);
}

#[test]
fn nested_containers_get_their_executors_token_through_prepare() {
    if !root_or_skip() {
        return;
    }
    let keydir = tempfile::Builder::new()
        .prefix("nestguard-isolator-test-")
        .tempdir()
        .unwrap();
    let key = keydir.path().join("jwt.key");
    std::fs::write(&key, "nestguard-isolator-test-signing-key").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let agent = Agent::new(
        "credentials",
        &[("credentials_jwt_key", key.to_str().unwrap())],
    );
    assert!(agent.iso().names().contains(&"environment/credentials"));
    let executor = ExecutorInfo {
        executor_id: ExecutorId {
            value: "default-executor".into(),
        },
        framework_id: Some(FrameworkId {
            value: "fw-1".into(),
        }),
        ..Default::default()
    };
    // An executor's container (not standalone), as the agent prepares it;
    // Mesos copies the root's executor_info into nested configs.
    let mut exec_config = config("exec sleep 120");
    exec_config.executor_info = Some(executor.clone());
    let (exec, _) = agent.launch("exec", exec_config);
    let mut task = config("printf %s \"$MESOS_EXECUTOR_AUTHENTICATION_TOKEN\" > token");
    task.executor_info = Some(executor);
    let task_id = id("exec.task");
    let (info, _) = agent.try_launch(&task_id, task.clone()).unwrap();
    let names: Vec<&str> = info
        .environment
        .as_ref()
        .map(|e| e.variables.iter().map(|v| v.name.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["MESOS_EXECUTOR_AUTHENTICATION_TOKEN"]);
    assert_eq!(agent.wait(&task_id, Duration::from_secs(20)), Some(0));
    let token = read(agent.sandbox(&task_id).join("token"));
    assert!(
        !token.is_empty(),
        "stderr: {}",
        read(agent.sandbox(&task_id).join("stderr"))
    );
    let claims = nestguard::credentials::jwt::verify(
        &token,
        &nestguard::credentials::secret::Secret::from("nestguard-isolator-test-signing-key"),
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["cid"], "exec");
    assert_eq!(claims["eid"], "default-executor");
    assert_eq!(claims["fid"], "fw-1");

    // Without the executor's info the launch fails instead of running a
    // container that cannot reach the agent.
    task.executor_info = None;
    let err = agent.try_launch(&id("exec.lost"), task).unwrap_err();
    assert!(err.contains("executor_info is missing"), "{err}");
    agent.destroy(&exec, None);
}
