//! Launch, wait, kill, nesting and destroy with real processes (root).

use crate::launcher_support;

use std::time::Duration;

use launcher_support::*;
use nestguard::isolation::Mode;
use nestguard::isolation::process;

#[test]
fn exit_codes_and_signals() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Linux);
    let (ok, _) = f.launch("nestguard-ok", "exit 0");
    let (one, _) = f.launch("nestguard-one", "exit 1");
    let (killed, _) = f.launch("nestguard-killed", "kill -9 $$");
    let (termed, _) = f
        .try_launch("nestguard-termed", executor("sleep 100"))
        .unwrap();
    assert_eq!(f.wait(&ok), 0);
    assert_eq!(f.wait(&one), 256);
    assert_eq!(f.wait(&killed), 9);
    // A forwarded signal reaches the command, even when the supervisor is
    // the init of a pid namespace.
    assert_eq!(
        f.l()
            .wait(&termed, Some(Duration::from_millis(50)))
            .unwrap(),
        None
    );
    // The wait fd is an ordinary pollable fd: not readable while running.
    let fd = f.l().wait_fd(&termed).unwrap().expect("running");
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 0);
    assert!(f.l().kill(&termed, libc::SIGTERM).unwrap());
    assert_eq!(
        unsafe { libc::poll(&mut pfd, 1, 10_000) },
        1,
        "readable once exited"
    );
    assert_eq!(f.wait(&termed), libc::SIGTERM);
    assert_eq!(f.l().wait_fd(&termed).unwrap(), None);
    // Checkpointed status is the raw status as decimal text.
    let rt = nestguard::isolation::paths::runtime_path(&f.runtime_dir(), &one);
    assert_eq!(read(rt.join("status")), "256");
    for id in [ok, one, killed, termed] {
        f.l().destroy(&id).unwrap();
        assert!(!nestguard::isolation::paths::runtime_path(&f.runtime_dir(), &id).exists());
    }
}

#[test]
fn sandbox_stdout_env_and_helper_failure() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Linux);
    let mut info = shell("echo out; echo err >&2; env | sort");
    info.environment = Some(nestguard::proto::mesos::Environment {
        variables: vec![nestguard::proto::mesos::environment::Variable {
            name: "NESTGUARD_VAR".into(),
            value: Some("v".into()),
            ..Default::default()
        }],
    });
    let (id, _) = f.try_launch("nestguard-env", info).unwrap();
    assert_eq!(f.wait(&id), 0);
    let sb = f.sandbox(&id);
    let out = read(sb.join("stdout"));
    assert!(out.starts_with("out\n"), "{out}");
    assert!(out.contains("NESTGUARD_VAR=v"));
    assert!(out.contains("PATH=/usr/local/sbin"));
    assert!(
        !out.contains("HOME="),
        "the host's environment must not leak: {out}"
    );
    assert!(read(sb.join("stderr")).contains("err"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&sb).unwrap().permissions().mode() & 0o777,
        0o750
    );

    // An executable that does not exist: the supervisor writes 1 << 8.
    let mut info = shell("");
    info.command.as_mut().unwrap().shell = Some(false);
    info.command.as_mut().unwrap().value = Some("/nonexistent/nestguard".into());
    let (bad, _) = f.try_launch("nestguard-bad", info).unwrap();
    assert_eq!(f.wait(&bad), 256);
    f.l().destroy(&id).unwrap();
    f.l().destroy(&bad).unwrap();
}

#[test]
fn command_starts_with_default_signal_dispositions() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Linux);
    // Ignored dispositions survive execve: a host that ignores SIGHUP (and
    // the Rust runtime's SIGPIPE) must not hand that to its containers.
    // SAFETY: SIG_IGN/SIG_DFL for SIGHUP; no handler involved.
    let previous = unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    let launched = f.try_launch(
        "nestguard-signals",
        shell("exec grep -E '^Sig(Ign|Blk):' /proc/self/status"),
    );
    // SAFETY: restores what was there.
    unsafe { libc::signal(libc::SIGHUP, previous) };
    let (id, _) = launched.unwrap();
    assert_eq!(f.wait(&id), 0);
    let out = read(f.sandbox(&id).join("stdout"));
    assert_eq!(
        out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n",
        "the command must start with no signal ignored or blocked"
    );
    f.l().destroy(&id).unwrap();
}

/// A busybox image's root: the applets the test uses, and a marker file.
fn busybox_rootfs(dir: &std::path::Path) -> std::path::PathBuf {
    let rootfs = dir.join("rootfs");
    std::fs::create_dir_all(rootfs.join("bin")).unwrap();
    std::fs::create_dir_all(rootfs.join("etc")).unwrap();
    std::fs::copy("/bin/busybox", rootfs.join("bin/busybox"))
        .expect("busybox-static is installed (scripts/test-packages.txt)");
    for applet in ["sh", "cat", "echo", "pwd", "test", "ls", "id"] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).unwrap();
    }
    std::fs::write(rootfs.join("etc/marker"), "image\n").unwrap();
    // A user only the image knows: looked up in its passwd, never by NSS.
    std::fs::write(
        rootfs.join("etc/passwd"),
        "root:x:0:0::/:/bin/sh\nimageuser:x:4321:4322::/:/bin/sh\n",
    )
    .unwrap();
    rootfs
}

#[test]
fn nested_container_with_its_own_rootfs() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Linux);
    let rootfs = busybox_rootfs(f.dir.path());
    let (exec, _) = f
        .try_launch("nestguard-img", executor("sleep 100"))
        .unwrap();
    let mut info = shell(
        "cat /etc/marker; test -e /etc/debian_version && echo host-visible; \
         test -c /dev/null && echo > /dev/null && echo dev-null; pwd; cat /proc/1/comm; \
         ls /mnt; echo written > from-image; \
         for f in /proc/1/fd/*; do if test -d $f; then echo host-directory-reachable; fi; done",
    );
    info.rootfs = Some(rootfs.to_string_lossy().into_owned());
    let (task, out) = f.run_ok("nestguard-img.task", info);
    assert_eq!(
        out, "image\ndev-null\n/mnt/mesos/sandbox\nnestguard-launc\nmesos\n",
        "the image's files, its own /dev and /proc, the sandbox as working directory"
    );
    assert_eq!(read(f.sandbox(&task).join("from-image")), "written\n");
    // Nothing of it is mounted in the host.
    let mounts = read("/proc/self/mountinfo");
    assert!(!mounts.contains(&*rootfs.to_string_lossy()), "{mounts}");

    // The image's user, from the image's /etc/passwd.
    let mut as_user = shell("id -u; id -g");
    as_user.rootfs = Some(rootfs.to_string_lossy().into_owned());
    as_user.user = Some("imageuser".into());
    let (_, out) = f.run_ok("nestguard-img.user", as_user);
    assert_eq!(out, "4321\n4322\n");
    f.l().destroy(&exec).unwrap();

    // A rootfs needs a mount namespace of its own.
    let mut top = shell("true");
    top.rootfs = Some(rootfs.to_string_lossy().into_owned());
    let err = f.try_launch("nestguard-img-top", top).unwrap_err();
    assert!(
        err.to_string()
            .contains("a rootfs needs a new mount namespace"),
        "{err}"
    );
}

#[test]
fn refuses_bad_launches() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Linux);
    // Nested under an unknown parent.
    let err = f
        .try_launch("nestguard-nope.child", shell("true"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "parent container 'nestguard-nope' is not running"
    );
    // Nested under an exited parent.
    let (p, _) = f.launch("nestguard-exited", "true");
    f.wait(&p);
    assert!(
        f.try_launch("nestguard-exited.child", shell("true"))
            .is_err()
    );
    // Duplicate id.
    let (d, _) = f.launch("nestguard-dup", "sleep 100");
    assert!(f.try_launch("nestguard-dup", shell("true")).is_err());
    // Unsupported field refused, nothing left behind.
    let mut info = shell("true");
    info.rootfs = Some("/x".into());
    assert!(f.try_launch("nestguard-rootfs", info).is_err());
    assert!(!f.runtime_dir().join("containers/nestguard-rootfs").exists());
    f.l().destroy(&p).unwrap();
    f.l().destroy(&d).unwrap();
    assert_eq!(f.l().destroy(&d).unwrap(), None, "destroy is idempotent");
}

#[test]
fn three_levels_shared_network_own_pid_namespace() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Linux);
    // The executor listens on loopback in its own network namespace.
    let (exec, _) = f
        .try_launch(
            "nestguard-pod",
            executor("python3 -c 'import socket,sys\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"127.0.0.1\",7777)); s.listen(); c,_=s.accept(); sys.stdout.write(c.recv(100).decode()); sys.stdout.flush()'; sleep 100"),
        )
        .unwrap();
    let (task, task_pid) = f.launch("nestguard-pod.task", "echo $$ > pidns; sleep 100");
    // The task is pid 2 of its own pid namespace (the supervisor is 1).
    assert!(process::is_pid_namespace_init(task_pid).unwrap());
    let pidns = f.sandbox(&task).join("pidns");
    wait_until("the task to write its pid", Duration::from_secs(10), || {
        !read(&pidns).is_empty()
    });
    assert_eq!(read(&pidns).trim(), "2");
    let (sub, _) = f.launch(
        "nestguard-pod.task.sub",
        "for i in $(seq 50); do python3 -c 'import socket; s=socket.create_connection((\"127.0.0.1\",7777)); s.sendall(b\"hello-from-sub\")' 2>/dev/null && exit 0; sleep 0.1; done; exit 3",
    );
    assert_eq!(
        f.wait(&sub),
        0,
        "sub-container reached the executor's loopback"
    );
    assert!(read(f.sandbox(&exec).join("stdout")).contains("hello-from-sub"));
    // Host loopback does not have the listener: the namespace is the pod's.
    assert!(std::net::TcpStream::connect("127.0.0.1:7777").is_err());
    // Sandboxes nest in Mesos' layout.
    assert!(
        f.sandbox(&sub)
            .ends_with("nestguard-pod/containers/task/containers/sub")
    );
    assert!(f.sandbox(&sub).join("stdout").exists());
    let rt = f
        .runtime_dir()
        .join("containers/nestguard-pod/containers/task/containers/sub");
    assert!(
        rt.join("pid").exists() && rt.join("launch_info").exists() && rt.join("config").exists()
    );

    // Destroying the executor destroys the sub-containers, children first.
    assert_eq!(f.l().destroy(&exec).unwrap(), Some(9));
    assert!(!process::is_running(task_pid, 0).unwrap());
    assert!(process::stat(task_pid).unwrap().is_none_or(|s| s.exited()));
    assert!(!f.runtime_dir().join("containers/nestguard-pod").exists());
    assert!(f.l().containers().is_empty());
}

#[test]
fn shared_pid_namespace_and_hostname() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Linux);
    let (exec, exec_pid) = f
        .try_launch("nestguard-share", executor("sleep 100"))
        .unwrap();
    let shared = nestguard::proto::mesos::ContainerInfo {
        hostname: Some("nestguard-child".into()),
        linux_info: Some(nestguard::proto::mesos::LinuxInfo {
            share_pid_namespace: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = nestguard::container_id::parse_dotted("nestguard-share.c").unwrap();
    let sb = f.sandbox(&id);
    let pid = f
        .l()
        .launch(
            &id,
            &shell("hostname; echo $$; sleep 100 & sleep 100"),
            Some(&shared),
            &sb,
        )
        .unwrap();
    wait_until(
        "the container to print its hostname and pid and start both sleeps",
        Duration::from_secs(10),
        || {
            read(sb.join("stdout")).lines().count() >= 2
                && process::session_members(pid).is_ok_and(|m| m.len() >= 3)
        },
    );
    let out = read(sb.join("stdout"));
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("nestguard-child"));
    let inner: i32 = lines.next().unwrap().parse().unwrap();
    assert!(
        inner > 2,
        "shares the executor's pid namespace: pid {inner}"
    );
    assert!(!process::is_pid_namespace_init(pid).unwrap());
    // Destroy kills the whole session (both sleeps), not only the supervisor.
    let members = process::session_members(pid).unwrap();
    assert!(members.len() >= 3, "{members:?}");
    assert_eq!(f.l().destroy(&id).unwrap(), Some(9));
    wait_until(
        "every member of the destroyed session to die",
        Duration::from_secs(10),
        || {
            members.iter().all(|m| {
                process::stat(*m)
                    .unwrap()
                    .is_none_or(|s| s.exited() || s.session != pid)
            })
        },
    );
    let t = nestguard::checkpoint::read_message::<
        nestguard::proto::mesos::slave::ContainerTermination,
    >(
        &nestguard::isolation::paths::runtime_path(&f.runtime_dir(), &id).join("termination")
    )
    .unwrap();
    assert_eq!(t.status, Some(9));
    // wait on a destroyed nested container reads its termination checkpoint.
    assert_eq!(f.l().wait(&id, None).unwrap(), Some(9));
    assert!(
        process::is_running(
            exec_pid,
            process::stat(exec_pid).unwrap().unwrap().start_time
        )
        .unwrap()
    );
    f.l().destroy(&exec).unwrap();
}

#[test]
fn posix_launcher() {
    if !root_or_skip() {
        return;
    }
    let f = Fixture::new(Mode::Posix);
    assert!(f.try_launch("nestguard-px-ns", executor("true")).is_err());
    let (id, pid) = f.launch("nestguard-px", "sleep 100 & sleep 100 & wait");
    wait_until(
        "the command to start both sleeps",
        Duration::from_secs(10),
        || process::session_members(pid).is_ok_and(|m| m.len() >= 4),
    );
    let members = process::session_members(pid).unwrap();
    assert!(members.len() >= 4, "{members:?}");
    assert_eq!(f.l().destroy(&id).unwrap(), Some(9));
    // The posix destroy kills the session's members until none is left
    // before it returns: no wait here.
    let members = process::session_members(pid).unwrap();
    assert!(members.is_empty(), "{members:?}");
    // The command exits but leaves a process in its session: destroy of the
    // exited container still kills it.
    let (left, left_pid) = f.launch("nestguard-px-left", "sleep 100 & exit 0");
    assert_eq!(f.wait(&left), 0);
    let leftovers = process::session_members(left_pid).unwrap();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    assert_eq!(f.l().destroy(&left).unwrap(), Some(0));
    assert!(
        process::stat(leftovers[0])
            .unwrap()
            .is_none_or(|s| s.exited()),
        "destroy returned with {} of the session still alive",
        leftovers[0]
    );
    let (one, _) = f.launch("nestguard-px-one", "exit 1");
    assert_eq!(f.wait(&one), 256);
    f.l().destroy(&one).unwrap();
}

#[test]
fn user_rlimits_no_new_privs_and_mounts() {
    if !root_or_skip() {
        return;
    }
    use nestguard::proto::mesos::RLimitInfo;
    use nestguard::proto::mesos::r_limit_info::RLimit;
    use nestguard::proto::mesos::r_limit_info::r_limit::Type;
    use nestguard::proto::mesos::slave::ContainerMountInfo;
    let f = Fixture::new(Mode::Linux);
    let (exec, _) = f.try_launch("nestguard-id", executor("sleep 100")).unwrap();
    let mut info = shell(
        "id -u; ulimit -n; grep NoNewPrivs /proc/self/status; grep -c nestguard-tmpfs /proc/self/mountinfo",
    );
    info.user = Some("nobody".into());
    info.no_new_privileges = Some(true);
    info.rlimits = Some(RLimitInfo {
        rlimits: vec![RLimit {
            r#type: Some(Type::RlmtNofile as i32),
            soft: Some(77),
            hard: Some(88),
        }],
    });
    let target = f.dir.path().join("nestguard-mnt");
    std::fs::create_dir_all(&target).unwrap();
    info.mounts = vec![ContainerMountInfo {
        target: target.to_string_lossy().into_owned(),
        source: Some("nestguard-tmpfs".into()),
        r#type: Some("tmpfs".into()),
        flags: Some(0),
        options: None,
    }];
    let (id, out) = f.run_ok("nestguard-id.task", info);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "65534");
    assert_eq!(lines[1], "77");
    assert_eq!(lines[2].split_whitespace().last(), Some("1"));
    assert_eq!(lines[3], "1", "the mount is in the container's namespace");
    // Not visible on the host, and the sandbox belongs to the user.
    assert!(!read("/proc/self/mountinfo").contains("nestguard-tmpfs"));
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(f.sandbox(&id)).unwrap().uid(), 65534);
    f.l().destroy(&exec).unwrap();
}

#[test]
fn capabilities_bounding_and_effective() {
    if !root_or_skip() {
        return;
    }
    use nestguard::proto::mesos::CapabilityInfo;
    let f = Fixture::new(Mode::Linux);
    let script = "grep -E '^Cap(Eff|Bnd|Amb)' /proc/self/status";
    // Root command, effective CHOWN only: the bounding set follows.
    let mut root = shell(script);
    root.effective_capabilities = Some(CapabilityInfo {
        capabilities: vec![1000],
    });
    let (r, _) = f.try_launch("nestguard-cap-root", root).unwrap();
    // Non-root command keeps NET_BIND_SERVICE (ambient) across the user switch.
    let mut user = shell(script);
    user.user = Some("nobody".into());
    user.effective_capabilities = Some(CapabilityInfo {
        capabilities: vec![1010],
    });
    let (u, _) = f.try_launch("nestguard-cap-user", user).unwrap();
    assert_eq!(f.wait(&r), 0, "{}", read(f.sandbox(&r).join("stderr")));
    assert_eq!(f.wait(&u), 0, "{}", read(f.sandbox(&u).join("stderr")));
    let field = |id, name: &str| -> u64 {
        let out = read(f.sandbox(id).join("stdout"));
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap()
            .to_owned();
        u64::from_str_radix(line.split_whitespace().last().unwrap(), 16).unwrap()
    };
    assert_eq!(field(&r, "CapBnd"), 1);
    assert_eq!(field(&r, "CapEff"), 1);
    assert_eq!(field(&u, "CapBnd"), 1 << 10);
    assert_eq!(field(&u, "CapEff"), 1 << 10);
    assert_eq!(field(&u, "CapAmb"), 1 << 10);
    // An unknown capability is refused before anything runs.
    let mut bad = shell("true");
    bad.bounding_capabilities = Some(CapabilityInfo {
        capabilities: vec![5],
    });
    let err = f
        .try_launch("nestguard-cap-bad", bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown capability 5"), "{err}");
    f.l().destroy(&r).unwrap();
    f.l().destroy(&u).unwrap();
}
