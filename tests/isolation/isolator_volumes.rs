//! SANDBOX_PATH volumes end to end (root): a file one sub-container writes
//! into a PARENT volume is read by its sibling; a read-only volume refuses
//! writes; escapes (`..`, symlinks) and Mesos' invalid volumes are refused
//! at prepare with clear errors, and nothing is created outside a sandbox.

use crate::isolator_support;

use std::time::Duration;

use isolator_support::*;
use nestguard::isolation::isolator::{Composite, Isolator, IsolatorParams};
use nestguard::proto::mesos::slave::ContainerConfig;
use nestguard::proto::mesos::volume::Mode as VolumeMode;
use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;

#[test]
fn a_parent_volume_shares_files_between_siblings_and_ro_refuses_writes() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("volumes", &[]);
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let rw = sandbox_volume(SandboxPathType::Parent, "shared", "shared", VolumeMode::Rw);
    let ro = sandbox_volume(SandboxPathType::Parent, "shared", "shared", VolumeMode::Ro);

    let (writer, _) = agent.launch(
        "exec.writer",
        with_volumes(
            config(
                "head -c 2097152 /dev/urandom > shared/blob; echo hello-from-writer > shared/msg",
            ),
            vec![rw],
        ),
    );
    assert_eq!(agent.wait(&writer, Duration::from_secs(20)), Some(0));
    // disk/du: the shared data is its owner's disk, not the sharer's.
    let exec_disk = agent.iso().usage(&exec).unwrap().disk_used_bytes.unwrap();
    let writer_disk = agent.iso().usage(&writer).unwrap().disk_used_bytes.unwrap();
    assert!(exec_disk >= 2 << 20, "executor: {exec_disk}");
    assert!(writer_disk < 1 << 20, "writer: {writer_disk}");
    let source = agent.sandbox(&exec).join("shared");
    assert_eq!(read(source.join("msg")), "hello-from-writer\n");
    // The writer's own sandbox only holds the (empty) mount point.
    assert!(!agent.sandbox(&writer).join("shared/msg").exists());

    let (reader, _) = agent.launch(
        "exec.reader",
        with_volumes(
            config(
                "cat shared/msg > seen; if { echo x > shared/nope; } 2> write-error; then exit 3; fi; exit 0",
            ),
            vec![ro],
        ),
    );
    assert_eq!(agent.wait(&reader, Duration::from_secs(20)), Some(0));
    assert_eq!(
        read(agent.sandbox(&reader).join("seen")),
        "hello-from-writer\n"
    );
    let error = read(agent.sandbox(&reader).join("write-error"));
    assert!(error.contains("Read-only file system"), "{error}");
    assert!(!source.join("nope").exists());

    agent.destroy(&exec, None);
}

/// Volume checks need no cgroups: a composite of the file-system isolators.
fn fs_only() -> Composite {
    let params =
        IsolatorParams::parse([("isolation", "filesystem/linux,volume/sandbox_path")]).unwrap();
    Composite::from_parameters(&params).unwrap()
}

fn prepare_err(
    iso: &Composite,
    dotted: &str,
    sandbox: &std::path::Path,
    c: ContainerConfig,
) -> String {
    std::fs::create_dir_all(sandbox).unwrap();
    let mut c = c;
    c.directory = sandbox.to_string_lossy().into_owned();
    let err = iso.prepare(&id(dotted), &c).unwrap_err();
    let _ = iso.cleanup(&id(dotted));
    err.to_string()
}

#[test]
fn escapes_and_invalid_volumes_are_refused_with_clear_errors() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-isolator-test-")
        .tempdir()
        .unwrap();
    let iso = fs_only();
    let exec_sandbox = dir.path().join("runs/exec");
    std::fs::create_dir_all(&exec_sandbox).unwrap();
    let mut exec_config = config("true");
    exec_config.directory = exec_sandbox.to_string_lossy().into_owned();
    iso.prepare(&id("exec"), &exec_config).unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, exec_sandbox.join("link")).unwrap();
    std::os::unix::fs::symlink("real", exec_sandbox.join("inner-link")).unwrap();
    std::fs::create_dir_all(exec_sandbox.join("real")).unwrap();
    let task_sandbox = exec_sandbox.join("containers/task");

    let vol = |kind, path: &str, cp: &str| {
        with_volumes(
            config("true"),
            vec![sandbox_volume(kind, path, cp, VolumeMode::Rw)],
        )
    };
    const ESCAPES: &str = "escapes the sandbox";
    const DOTDOT: &str = "'..' is not allowed";
    const LINK: &str = "is a symbolic link";
    // (type, host path, container path, and two parts of the error)
    let cases = [
        (SandboxPathType::Parent, "../outside", "v", ESCAPES, DOTDOT),
        (
            SandboxPathType::Parent,
            "a/../../outside",
            "v",
            ESCAPES,
            DOTDOT,
        ),
        (SandboxPathType::Parent, "link", "v", ESCAPES, LINK),
        (SandboxPathType::Parent, "link/sub", "v", ESCAPES, LINK),
        // Even a link that stays inside is refused: the mount is by path.
        (SandboxPathType::Parent, "inner-link", "v", ESCAPES, LINK),
        (
            SandboxPathType::Parent,
            "ok",
            "../../escape",
            ESCAPES,
            DOTDOT,
        ),
        (
            SandboxPathType::Parent,
            "/etc",
            "v",
            "Path '/etc' in SANDBOX_PATH volume is absolute",
            "",
        ),
        (
            SandboxPathType::Self_,
            "data",
            "rel",
            "'container_path' is relative for SANDBOX_PATH volume SELF type",
            "",
        ),
        (
            SandboxPathType::Unknown,
            "data",
            "/tmp",
            "Unknown SANDBOX_PATH volume type",
            "",
        ),
    ];
    for (kind, path, cp, first, second) in cases {
        let text = prepare_err(&iso, "exec.task", &task_sandbox, vol(kind, path, cp));
        assert!(text.contains(first) && text.contains(second), "{text}");
    }
    // PARENT on a top-level container, and volumes of DEBUG containers.
    let text = prepare_err(
        &iso,
        "solo",
        &dir.path().join("runs/solo"),
        vol(SandboxPathType::Parent, "x", "x"),
    );
    assert!(
        text.contains("SANDBOX_PATH volume PARENT type only works for nested container"),
        "{text}"
    );
    let mut debug = vol(SandboxPathType::Parent, "x", "x");
    debug.container_class = Some(nestguard::proto::mesos::slave::ContainerClass::Debug as i32);
    let text = prepare_err(
        &iso,
        "exec.debug",
        &exec_sandbox.join("containers/debug"),
        debug,
    );
    assert!(
        text.contains("SANDBOX_PATH volume is not supported for DEBUG containers"),
        "{text}"
    );
    // A nested sandbox outside its parent's is refused.
    let text = prepare_err(
        &iso,
        "exec.elsewhere",
        &dir.path().join("elsewhere"),
        config("true"),
    );
    assert!(
        text.contains("nested sandboxes live in their parent's"),
        "{text}"
    );

    // Nothing was created outside the sandbox, nor through the links.
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!dir.path().join("runs/escape").exists());
    assert!(!exec_sandbox.join("real/sub").exists());

    // A valid one: the source is created inside the parent's sandbox and
    // the mount is a bind plus a read-only remount for RO.
    std::fs::create_dir_all(&task_sandbox).unwrap();
    let mut ok = with_volumes(
        config("true"),
        vec![sandbox_volume(
            SandboxPathType::Parent,
            "data/set",
            "mnt",
            VolumeMode::Ro,
        )],
    );
    ok.directory = task_sandbox.to_string_lossy().into_owned();
    let info = iso.prepare(&id("exec.task"), &ok).unwrap().unwrap();
    assert!(exec_sandbox.join("data/set").is_dir());
    assert!(task_sandbox.join("mnt").is_dir());
    assert_eq!(info.mounts.len(), 2, "{:?}", info.mounts);
    assert_eq!(
        info.mounts[0].source.as_deref(),
        Some(exec_sandbox.join("data/set").to_str().unwrap())
    );
    assert_eq!(
        info.mounts[1].flags.unwrap() & libc::MS_RDONLY as u32,
        libc::MS_RDONLY as u32
    );
    assert_eq!(info.clone_namespaces, vec![libc::CLONE_NEWNS]);
    iso.cleanup(&id("exec.task")).unwrap();
    iso.cleanup(&id("exec")).unwrap();
}

/// After an agent restart, recovered sandboxes serve PARENT volumes of new
/// nested containers (and a parent never recovered is reported as Mesos does).
#[test]
fn recovered_sandboxes_serve_parent_volumes() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-isolator-test-")
        .tempdir()
        .unwrap();
    let exec_sandbox = dir.path().join("runs/exec");
    std::fs::create_dir_all(exec_sandbox.join("containers/task")).unwrap();
    let volume = || {
        let mut c = with_volumes(
            config("true"),
            vec![sandbox_volume(
                SandboxPathType::Parent,
                "shared",
                "shared",
                VolumeMode::Rw,
            )],
        );
        c.directory = exec_sandbox
            .join("containers/task")
            .to_string_lossy()
            .into_owned();
        c
    };
    let fresh = fs_only();
    let err = fresh.prepare(&id("exec.task"), &volume()).unwrap_err();
    assert!(
        err.to_string()
            .contains("Failed to locate the sandbox for the parent container"),
        "{err}"
    );
    fresh.cleanup(&id("exec.task")).unwrap();

    let iso = fs_only();
    let state = nestguard::proto::mesos::slave::ContainerState {
        container_id: id("exec"),
        pid: 1,
        directory: exec_sandbox.to_string_lossy().into_owned(),
        ..Default::default()
    };
    iso.recover(&[state], &[]).unwrap();
    let info = iso.prepare(&id("exec.task"), &volume()).unwrap().unwrap();
    assert_eq!(info.mounts.len(), 1);
    assert!(exec_sandbox.join("shared").is_dir());
    iso.cleanup(&id("exec.task")).unwrap();
}
