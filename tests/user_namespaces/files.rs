//! Files and their owners: what a pod writes in its sandbox and shared
//! volumes belongs on the host to the user it ran as (or to the pod's
//! mapped root); a file system without idmapped mounts is refused.

use std::os::unix::fs::MetadataExt;

use crate::launcher_support::*;
use crate::support::*;

#[test]
fn sandbox_files_have_the_promised_owners() {
    if !root_or_skip() {
        return;
    }
    let f = fixture(POOL);
    let (exec, _) = f
        .try_launch(
            "ng-userns-files",
            executor("echo from-root > by-root; sleep 100"),
        )
        .unwrap();
    let exec_sandbox = f.sandbox(&exec);
    wait_until(
        "the executor wrote",
        std::time::Duration::from_secs(10),
        || exec_sandbox.join("by-root").exists(),
    );
    // Root inside writes as the pod's mapped root; the sandbox is its own.
    let meta = std::fs::metadata(exec_sandbox.join("by-root")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (3000000000, 3000000000));
    assert_eq!(std::fs::metadata(&exec_sandbox).unwrap().uid(), 3000000000);

    // A task running as a user (daemon, uid 1) writes files that user owns
    // on the host; root of the pod taking another id (1000) writes nothing
    // through the sandbox's bind (only root and the container's user pass).
    let mut as_user = shell("id -u; echo from-user > by-user");
    as_user.user = Some("daemon".into());
    let (task, out) = f.run_ok("ng-userns-files.task", as_user);
    assert_eq!(out, "1\n");
    let meta = std::fs::metadata(f.sandbox(&task).join("by-user")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (1, 1));
    let (_, out) = f.run_ok(
        "ng-userns-files.other-id",
        shell(
            "chmod 711 .; mkdir open; chmod 777 open; \
             perl -e '$) = \"6 6\"; $> = 1000; open(F, \">open/as-1000\") or print \"refused: $!\\n\"'; \
             test -e open/as-1000 || echo none",
        ),
    );
    assert_eq!(
        out,
        "refused: Value too large for defined data type\nnone\n"
    );
    f.l().destroy(&exec).unwrap();

    // A pod of daemon's: a volume its executor shares with a task of the
    // same user carries daemon's files both ways.
    let pod = nestguard::container_id::parse_dotted("ng-userns-files2").unwrap();
    let mut executor_info =
        executor("mkdir shared; echo from-executor > shared/by-executor; sleep 100");
    executor_info.user = Some("daemon".into());
    f.l()
        .launch(&pod, &executor_info, None, &f.sandbox(&pod))
        .unwrap();
    let shared = f.sandbox(&pod).join("shared");
    wait_until(
        "the executor shared",
        std::time::Duration::from_secs(10),
        || shared.join("by-executor").exists(),
    );
    let task_id = nestguard::container_id::parse_dotted("ng-userns-files2.task").unwrap();
    let task_sandbox = f.sandbox(&task_id);
    std::fs::create_dir_all(task_sandbox.join("shared")).unwrap();
    let mut as_user = shell("cat shared/by-executor; echo shared > shared/by-user");
    as_user.user = Some("daemon".into());
    as_user.mounts = vec![bind(&shared, &task_sandbox.join("shared"))];
    let (_, out) = f.run_ok("ng-userns-files2.task", as_user);
    assert_eq!(out, "from-executor\n");
    for file in [shared.join("by-executor"), shared.join("by-user")] {
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (1, 1), "{}", file.display());
    }
    f.l().destroy(&pod).unwrap();
    // The agent still reads what the pods wrote, and removes it.
    assert_eq!(read(exec_sandbox.join("by-root")), "from-root\n");
    std::fs::remove_dir_all(&exec_sandbox).unwrap();
}

/// Unmounts a test's mount on every path out.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

#[test]
fn a_file_system_without_idmapped_mounts_is_refused() {
    if !root_or_skip() {
        return;
    }
    let f = fixture(POOL);
    // ramfs has no idmapped mounts (FS_ALLOW_IDMAP) on any kernel.
    let host = f.dir.path().join("ramfs");
    std::fs::create_dir(&host).unwrap();
    nix::mount::mount(
        Some("none"),
        &host,
        Some("ramfs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .unwrap();
    let _mounted = Mounted(host.clone());
    let target = f.dir.path().join("volume");
    std::fs::create_dir(&target).unwrap();
    let mut info = executor("true");
    info.mounts = vec![bind(&host, &target)];
    let err = f
        .try_launch("ng-userns-ramfs", info)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "{} is on a file system without idmapped mounts",
            host.display()
        )) && err.contains("it is never bound unmapped"),
        "{err}"
    );
    // Nothing of the launch is left; its range is free again.
    let id = nestguard::container_id::parse_dotted("ng-userns-ramfs").unwrap();
    assert!(!f.l().containers().contains(&id));
    let (ok, pid) = f
        .try_launch("ng-userns-after", executor("sleep 100"))
        .unwrap();
    assert_eq!(uid_map(pid), [[0, 3000000000, 65536]]);
    f.l().destroy(&ok).unwrap();
}

#[test]
fn a_container_with_its_own_image_in_the_pod() {
    if !root_or_skip() {
        return;
    }
    let f = fixture(POOL);
    let rootfs = f.dir.path().join("rootfs");
    for dir in ["bin", "etc", "tmp"] {
        std::fs::create_dir_all(rootfs.join(dir)).unwrap();
    }
    std::fs::copy("/bin/busybox", rootfs.join("bin/busybox"))
        .expect("busybox-static is installed (scripts/test-packages.txt)");
    for applet in ["sh", "cat", "echo", "id", "stat"] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).unwrap();
    }
    std::fs::write(rootfs.join("etc/marker"), "image\n").unwrap();
    // A host directory bound into the image: the image is idmapped first,
    // the volume (idmapped with the container's map) after.
    let host = f.dir.path().join("host-data");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("note"), "from-host\n").unwrap();
    std::fs::create_dir(rootfs.join("data")).unwrap();
    let (exec, _) = f
        .try_launch("ng-userns-img", executor("sleep 100"))
        .unwrap();
    let mut info = shell(
        "id -u; cat /etc/marker; stat -c %u /etc/marker; echo x > /tmp/in-image && echo image-writable; \
         cat /proc/self/uid_map; pwd; echo from-image > by-image; cat /data/note",
    );
    info.rootfs = Some(rootfs.to_string_lossy().into_owned());
    info.mounts = vec![bind(&host, &rootfs.join("data"))];
    let (task, out) = f.run_ok("ng-userns-img.task", info);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        [
            "0",
            "image",
            "0",
            "image-writable",
            "0",
            "3000000000",
            "65536",
            "/mnt/mesos/sandbox",
            "from-host"
        ],
        "the image is the pod's own: its root files are root's inside"
    );
    // On the host the image's new file is the image's root's; the
    // sandbox's the pod's mapped root's.
    assert_eq!(
        std::fs::metadata(rootfs.join("tmp/in-image"))
            .unwrap()
            .uid(),
        0
    );
    let meta = std::fs::metadata(f.sandbox(&task).join("by-image")).unwrap();
    assert_eq!(meta.uid(), 3000000000);

    // A user only the image knows, whose passwd line names a privileged
    // host group (disk, 6): its files get the pod's mapped ids, never a
    // host account's or group's.
    std::fs::write(
        rootfs.join("etc/passwd"),
        "root:x:0:0::/:/bin/sh\nimg:x:1000:6::/:/bin/sh\n",
    )
    .unwrap();
    let mut as_image_user = shell("id -u; id -g; echo x > by-image-user");
    as_image_user.rootfs = Some(rootfs.to_string_lossy().into_owned());
    as_image_user.user = Some("img".into());
    let (task, out) = f.run_ok("ng-userns-img.user", as_image_user);
    assert_eq!(out, "1000\n6\n");
    let meta = std::fs::metadata(f.sandbox(&task).join("by-image-user")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (3000001000, 3000000006));
    f.l().destroy(&exec).unwrap();
}
