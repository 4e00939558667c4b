//! The launcher: the pod's map inside, ranges allocated, kept across a
//! restart, reclaimed, exhausted.

use crate::launcher_support::*;
use crate::support::*;

#[test]
fn pod_runs_as_root_of_its_own_range() {
    if !root_or_skip() {
        return;
    }
    let f = fixture(POOL);
    let (exec, pid) = f.try_launch("ng-userns-a", executor("sleep 100")).unwrap();
    assert_eq!(uid_map(pid), [[0, 3000000000, 65536]]);
    // The supervisor, and the command, are the range's root on the host.
    wait_until(
        "the command started",
        std::time::Duration::from_secs(10),
        || !children(pid).is_empty(),
    );
    assert_eq!(uids(pid), [3000000000; 4]);
    assert_eq!(gids(pid), [3000000000; 4]);
    let command = children(pid)[0];
    assert_eq!(uids(command), [3000000000; 4]);

    // Inside: root, the pod's map; a nested container shares it.
    let (_, out) = f.run_ok(
        "ng-userns-a.child",
        shell("id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map"),
    );
    let words: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(
        words,
        [
            "0",
            "0",
            "0",
            "3000000000",
            "65536",
            "0",
            "3000000000",
            "65536"
        ]
    );
    f.l().destroy(&exec).unwrap();
}

#[test]
fn ranges_are_never_shared_kept_across_a_restart_and_reclaimed() {
    if !root_or_skip() {
        return;
    }
    let mut f = fixture("3000200000-3000396608/65536");
    let (a, a_pid) = f.try_launch("ng-userns-ra", executor("sleep 100")).unwrap();
    let (_, b_pid) = f.try_launch("ng-userns-rb", executor("sleep 100")).unwrap();
    assert_eq!(uid_map(a_pid), [[0, 3000200000, 65536]]);
    assert_eq!(uid_map(b_pid), [[0, 3000265536, 65536]]);
    let b_sandbox_range = std::fs::read_to_string(
        nestguard::isolation::paths::runtime_path(
            &f.runtime_dir(),
            &nestguard::container_id::parse_dotted("ng-userns-rb").unwrap(),
        )
        .join(nestguard::isolation::launcher::USER_NAMESPACE_FILE),
    )
    .unwrap();
    assert_eq!(b_sandbox_range, "3000265536 65536\n", "checkpointed");

    // The agent restarts (its launcher is gone, the pods keep running):
    // the recovered pods keep their ranges, a new pod gets the free one,
    // and a container nested in a recovered pod enters that pod's.
    f.launcher = None;
    f.reopen();
    let known: Vec<_> = ["ng-userns-ra", "ng-userns-rb"]
        .iter()
        .map(|d| nestguard::container_id::parse_dotted(d).unwrap())
        .collect();
    assert!(f.l().recover(&known).unwrap().is_empty());
    let (c, c_pid) = f.try_launch("ng-userns-rc", executor("sleep 100")).unwrap();
    assert_eq!(uid_map(c_pid), [[0, 3000331072, 65536]]);
    let (_, out) = f.run_ok("ng-userns-rb.child", shell("cat /proc/self/uid_map"));
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["0", "3000265536", "65536"]
    );

    // Exhausted: a clear error, and nothing of the launch is left.
    let err = f
        .try_launch("ng-userns-rd", executor("sleep 100"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("user namespace pool 3000200000-3000396608/65536 is exhausted"),
        "{err}"
    );
    let d = nestguard::container_id::parse_dotted("ng-userns-rd").unwrap();
    assert!(!nestguard::isolation::paths::runtime_path(&f.runtime_dir(), &d).exists());
    assert!(!f.sandbox(&d).exists());
    assert!(!f.l().containers().contains(&d));

    // Reclaimed once the pod is destroyed (its processes are gone), and
    // not before.
    f.l().destroy(&a).unwrap();
    assert!(
        nestguard::isolation::process::stat(a_pid)
            .unwrap()
            .is_none_or(|s| s.exited())
    );
    let (_, e_pid) = f.try_launch("ng-userns-re", executor("sleep 100")).unwrap();
    assert_eq!(uid_map(e_pid), [[0, 3000200000, 65536]]);

    // The operator turns the option off and restarts the agent: the pods
    // run on in their user namespaces, and a container launched into one
    // still enters it (never the host's).
    f.user_namespaces = None;
    f.launcher = None;
    f.reopen();
    let known: Vec<_> = ["ng-userns-rb", "ng-userns-rc", "ng-userns-re"]
        .iter()
        .map(|d| nestguard::container_id::parse_dotted(d).unwrap())
        .collect();
    assert!(f.l().recover(&known).unwrap().is_empty());
    let (_, out) = f.run_ok("ng-userns-rc.child", shell("cat /proc/self/uid_map"));
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["0", "3000331072", "65536"]
    );
    f.l().destroy(&c).unwrap();
}

#[test]
fn pod_defaults_still_hold_in_a_user_namespace() {
    if !root_or_skip() {
        return;
    }
    let f = fixture(POOL);
    // The hostname is set by the supervisor (host root); root inside
    // cannot rename a UTS namespace the host's user namespace owns.
    let exec = nestguard::container_id::parse_dotted("ng-userns-pod").unwrap();
    let named = nestguard::proto::mesos::ContainerInfo {
        hostname: Some("pod-exec".into()),
        ..Default::default()
    };
    let exec_pid = f
        .l()
        .launch(
            &exec,
            &executor("sleep 100"),
            Some(&named),
            &f.sandbox(&exec),
        )
        .unwrap();
    let net = |pid: i32| {
        std::fs::metadata(format!("/proc/{pid}/ns/net")).map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.ino()
        })
    };
    // The nested container: the executor's network, its own UTS (a copy
    // of the executor's), pid and mount namespaces; a debug-like one that
    // shares the executor's pid namespace sees the executor's processes.
    let (child, out) = f.run_ok(
        "ng-userns-pod.child",
        shell("readlink /proc/self/ns/net; hostname; echo $$; hostname inner 2>/dev/null || echo refused; hostname"),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("net:[{}]", net(exec_pid).unwrap()),
        "the pod's network"
    );
    assert_eq!(
        &lines[1..],
        ["pod-exec", "2", "refused", "pod-exec"],
        "{out}"
    );
    let _ = child;
    let mut shared_pid = shell("ps -o comm= -p 1 2>/dev/null || cat /proc/1/comm");
    shared_pid.clone_namespaces = vec![libc::CLONE_NEWNS];
    shared_pid.enter_namespaces = vec![
        libc::CLONE_NEWNET,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNS,
    ];
    shared_pid.user = Some("daemon".into());
    let (debug, out) = f.run_ok("ng-userns-pod.debug", shared_pid);
    assert_eq!(
        out, "nestguard-launc\n",
        "the executor's pid 1, its supervisor"
    );
    // Its idmapped sandbox (another user's map) was mounted in a mount
    // namespace of its own, never in the executor's, which the pod's root
    // owns.
    let mounts = std::fs::read_to_string(format!("/proc/{exec_pid}/mountinfo")).unwrap();
    let debug_sandbox = f.sandbox(&debug).to_string_lossy().into_owned();
    assert!(!mounts.contains(&debug_sandbox), "{mounts}");

    // Recursive destroy: the pod and everything nested are gone.
    let (_, nested_pid) = f.launch("ng-userns-pod.long", "sleep 100");
    f.l().destroy(&exec).unwrap();
    for pid in [exec_pid, nested_pid] {
        assert!(
            nestguard::isolation::process::stat(pid)
                .unwrap()
                .is_none_or(|s| s.exited())
        );
    }
}
