//! What root inside a pod's user namespace can no longer do: write host
//! root's files through a host-path volume, load a module, mount a host
//! device, undo the read-only paths. System calls are made through perl
//! (Debian's perl-base is always installed), by their x86-64 numbers.

use std::os::unix::fs::MetadataExt;

use crate::launcher_support::*;
use crate::support::*;

/// The host's root file system device, from `/proc/self/mountinfo`.
fn root_device() -> String {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (left.split_whitespace().nth(4)? == "/")
                .then(|| right.split_whitespace().nth(1).map(str::to_owned))?
        })
        .unwrap()
}

#[test]
fn root_inside_cannot_touch_the_host() {
    if !root_or_skip() {
        return;
    }
    let f = fixture(POOL);
    // Host root's directory and file, reachable through a host-path volume.
    let host = f.dir.path().join("host-data");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("owned-by-root"), "host\n").unwrap();
    let target = f.dir.path().join("volume");
    std::fs::create_dir(&target).unwrap();
    let (exec, _) = f
        .try_launch("ng-userns-def", executor("sleep 100"))
        .unwrap();

    let device = root_device();
    let script = format!(
        "cd {target}; id -u; \
         (echo changed >> owned-by-root) 2>/dev/null && echo WROTE-HOST-FILE; \
         (echo new > new-file) 2>/dev/null && echo CREATED-IN-HOST-DIR; \
         stat -c '%u' owned-by-root; \
         perl -e 'open F, \"</dev/null\"; my $a = \"\"; syscall(313, fileno(F), $a, 0) == -1 or print \"LOADED\\n\"; print \"module: $!\\n\"'; \
         mkdir -p /tmp/ng-mnt-$$; \
         perl -e 'my ($d, $t, $y) = (\"{device}\", \"/tmp/ng-mnt-'$$'\", \"ext4\"); syscall(165, $d, $t, $y, 0, 0) == -1 or print \"MOUNTED\\n\"; print \"mount: $!\\n\"'; \
         rmdir /tmp/ng-mnt-$$; \
         perl -e 'my $p = \"/proc/sys\"; syscall(166, $p, 2) == -1 or print \"UNMOUNTED\\n\"; print \"umount: $!\\n\"'; \
         (echo 1 > /proc/sys/kernel/ns_last_pid) 2>/dev/null && echo WROTE-SYSCTL; true",
        target = target.display(),
    );
    let mut info = shell(&script);
    info.mounts = vec![bind(&host, &target)];
    let (probe, out) = f.run_ok("ng-userns-def.probe", info);
    let stderr = read(f.sandbox(&probe).join("stderr"));
    // A kernel built without modules answers ENOSYS to everyone.
    let module = if std::path::Path::new("/proc/modules").exists() {
        "Operation not permitted"
    } else {
        "Function not implemented"
    };
    assert_eq!(
        out,
        format!(
            "0\n65534\nmodule: {module}\nmount: Operation not permitted\n\
             umount: Invalid argument\n"
        ),
        "root inside, host root's file unmapped and untouched, no module, no mount, \
         the read-only /proc/sys locked; stderr: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(host.join("owned-by-root")).unwrap(),
        "host\n"
    );
    assert!(!host.join("new-file").exists());
    assert_eq!(
        std::fs::metadata(host.join("owned-by-root")).unwrap().uid(),
        0
    );
    f.l().destroy(&exec).unwrap();
}

#[test]
fn root_inside_cannot_redirect_a_nested_containers_host_volume() {
    if !root_or_skip() {
        return;
    }
    let f = fixture(POOL);
    let host = f.dir.path().join("volume-source");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("which"), "the host's\n").unwrap();
    let decoy = f.dir.path().join("decoy");
    std::fs::create_dir(&decoy).unwrap();
    std::fs::write(decoy.join("which"), "the decoy\n").unwrap();
    // Root of the pod mounts a decoy over the volume's source in its own
    // mount namespace, which a nested container's launch enters.
    let (exec, _) = f
        .try_launch(
            "ng-userns-redirect",
            executor(&format!(
                "mount --bind {} {} && echo covered > covered; sleep 100",
                decoy.display(),
                host.display()
            )),
        )
        .unwrap();
    let covered = f.sandbox(&exec).join("covered");
    wait_until(
        "the decoy mounted",
        std::time::Duration::from_secs(10),
        || covered.exists(),
    );
    let target = f.dir.path().join("volume-target");
    std::fs::create_dir(&target).unwrap();
    let mut info = shell(&format!("cat {}/which", target.display()));
    info.mounts = vec![bind(&host, &target)];
    let (_, out) = f.run_ok("ng-userns-redirect.child", info);
    assert_eq!(
        out, "the host's\n",
        "resolved in the host's view, before the pod's"
    );
    f.l().destroy(&exec).unwrap();
}
