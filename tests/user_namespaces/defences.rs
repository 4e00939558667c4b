//! What root inside a pod's user namespace can no longer do: write host
//! root's files through a host-path volume, load a module, mount a host
//! device, undo the read-only paths. System calls are made through perl
//! (Debian's perl-base is always installed), by their x86-64 numbers.

use std::os::unix::fs::MetadataExt;

use crate::launcher_support::*;
use crate::support::*;
use nestguard::proto::mesos::slave::ContainerMountInfo;

/// A bind of the host directory `source` onto `target`, as a host-path
/// volume comes to the launcher.
fn host_path_volume(source: &std::path::Path, target: &std::path::Path) -> ContainerMountInfo {
    ContainerMountInfo {
        source: Some(source.to_string_lossy().into_owned()),
        target: target.to_string_lossy().into_owned(),
        flags: Some((libc::MS_BIND | libc::MS_REC) as _),
        ..Default::default()
    }
}

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
    info.mounts = vec![host_path_volume(&host, &target)];
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
