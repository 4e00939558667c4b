//! Containers with their own image under Mesos' launcher: the wrapper takes
//! the rootfs from Mesos' helper, and the stage, run on the host, makes the
//! sandbox's mounts into the image through descriptors, enters the image
//! itself and only then applies the defences (`exec_stage::rootfs`). Here
//! Mesos' helper is played by a shell in a mount namespace of its own,
//! making the mounts Mesos' `filesystem/linux` leaves it (the rootfs bound
//! onto itself, `/proc`), as the real agent does in
//! `ffi/mesos/real-mesos/checks-images.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::security_exec_stage::{
    DEFAULT_CAPS, Dir, Mesos, STAGE, helper_environment, mesos_composite, mount_targets,
};
use crate::isolator_support::{config, root_or_skip, sandbox_volume};
use nestguard::isolation::exec_stage::{WRAPPED_STAGE, containerizer, docker_command};
use nestguard::isolation::isolator::Isolator;
use nestguard::proto::mesos::slave::{
    ContainerClass, ContainerConfig, DockerImageManifest, container_config, docker_image_manifest,
};
use nestguard::proto::mesos::volume::Mode as VolumeMode;
use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;
use nestguard::proto::mesos::{ContainerId, ContainerInfo};

const BIND_REC: u64 = libc::MS_BIND | libc::MS_REC;

/// A provisioned image (busybox-static and a marker, nothing of the host)
/// and a container sandbox, in one directory removed with it.
struct Image {
    _dir: Dir,
    rootfs: PathBuf,
    parent: PathBuf,
    sandbox: PathBuf,
}

/// Under `/run`, not the temporary directory: Mesos' helper mounts onto
/// the rootfs by path, and the wrapper refuses a target below a directory
/// others may write (`/tmp`), as it would on an agent.
fn image(tag: &str) -> Image {
    let base = Path::new("/run").join(format!("ng-image-{tag}-{}", std::process::id()));
    let rootfs = base.join("provisioner").join("rootfs");
    let parent = base.join("runs").join("p");
    let sandbox = parent.join("containers").join("img");
    for d in ["bin", "proc", "mnt/mesos/sandbox"] {
        std::fs::create_dir_all(rootfs.join(d)).unwrap();
    }
    std::fs::create_dir_all(&sandbox).unwrap();
    for d in [&parent, &sandbox] {
        nix::unistd::chown(d, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    }
    std::fs::copy("/bin/busybox", rootfs.join("bin/busybox")).unwrap();
    for applet in ["sh", "grep", "cat", "echo", "touch", "pwd", "mkdir"] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).unwrap();
    }
    std::fs::write(rootfs.join("image-marker"), "inside-the-image\n").unwrap();
    Image {
        _dir: Dir(base),
        rootfs,
        parent,
        sandbox,
    }
}

fn with_image(mut c: ContainerConfig, img: &Image) -> ContainerConfig {
    c.directory = img.sandbox.display().to_string();
    c.rootfs = Some(img.rootfs.display().to_string());
    c.user = Some("nobody".into());
    c
}

/// The launch info the wrapper gets from Mesos' agent: docker/runtime's
/// command arguments first (MergeFrom appends ours), Mesos'
/// `filesystem/linux` mounts before ours (built-in isolators first).
/// The container is `p.img`, nested under a plain `p`.
fn launch(mesos: &Mesos, img: &Image, c: &ContainerConfig) -> String {
    let parent = ContainerId {
        value: "p".into(),
        parent: None,
    };
    let mut plain = config("true");
    plain.directory = img.parent.display().to_string();
    mesos.composite.prepare(&parent, &plain).unwrap();
    let id = ContainerId {
        value: "img".into(),
        parent: Some(Box::new(parent)),
    };
    let info = mesos.composite.prepare(&id, c).unwrap().unwrap();
    let mut json = nestguard::json::to_json_value(&info);
    let mut arguments: Vec<String> = docker_command::of(c)
        .map(|d| d.arguments)
        .unwrap_or_default();
    arguments.extend(info.command.unwrap().arguments);
    json["command"]["arguments"] = arguments.into();
    assert_eq!(json["command"]["value"], WRAPPED_STAGE);
    let rootfs = img.rootfs.display().to_string();
    let mut mounts = vec![
        serde_json::json!({"source": rootfs, "target": rootfs, "flags": BIND_REC}),
        serde_json::json!({"source": "proc", "target": format!("{rootfs}/proc"), "type": "proc",
                           "flags": libc::MS_NOSUID | libc::MS_NOEXEC | libc::MS_NODEV}),
        serde_json::json!({"source": img.sandbox.display().to_string(),
                           "target": format!("{rootfs}/mnt/mesos/sandbox"), "flags": BIND_REC}),
    ];
    if let Some(ours) = json["mounts"].as_array() {
        mounts.extend(ours.iter().cloned());
    }
    json["mounts"] = mounts.into();
    json["rootfs"] = rootfs.into();
    json["working_directory"] = "/mnt/mesos/sandbox".into();
    json["user"] = "nobody".into();
    json["environment"] = serde_json::json!({"variables": [{"name": "PATH", "value": "/bin"}]});
    json.to_string()
}

/// Runs the rewritten launch as Mesos' helper would: in a mount namespace
/// of its own, after the two mounts of `filesystem/linux` it keeps (the
/// rootfs onto itself, `/proc`), with its default `PATH` alone.
fn run_as_mesos(rewritten: &str, img: &Image) -> Output {
    let v: serde_json::Value = serde_json::from_str(rewritten).unwrap();
    assert!(
        v.get("rootfs").is_none() && v.get("working_directory").is_none(),
        "{v}"
    );
    assert_eq!(v["command"]["value"], STAGE);
    let left = mount_targets(&v["mounts"]);
    let rootfs = img.rootfs.display().to_string();
    assert_eq!(left[..2], [rootfs.clone(), format!("{rootfs}/proc")]);
    // The rest: the isolator's masked paths, on the host's tree (the image
    // gets Mesos' own list, inside it).
    assert!(
        left[2..]
            .iter()
            .all(|t| t.starts_with("/proc/") || t.starts_with("/sys/")),
        "{left:?}"
    );
    let args: Vec<String> = serde_json::from_value(v["command"]["arguments"].clone()).unwrap();
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --rbind "$1" "$1" && mount -t proc proc "$1/proc" && shift && exec "$@""#)
        .arg("sh")
        .arg(&img.rootfs)
        .arg(STAGE)
        .args(&args[1..])
        .env_clear()
        .envs(helper_environment(&v))
        .current_dir("/")
        .output()
        .unwrap()
}

const PROBE: &str = "grep -E '^(Seccomp|NoNewPrivs|Cap(Bnd|Eff|Amb)):' /proc/self/status > status; \
    cat /image-marker >> status; pwd >> status; \
    [ -e /etc/passwd ] && echo host-visible >> status; \
    cat vol/f >> status; (touch vol/w) 2>/dev/null || echo vol-read-only >> status; exit 3";

#[test]
fn an_image_container_runs_inside_its_image_with_every_defence() {
    if !root_or_skip() {
        return;
    }
    let img = image("defences");
    std::fs::create_dir_all(img.parent.join("data")).unwrap();
    std::fs::write(img.parent.join("data/f"), "volume-content\n").unwrap();
    let mesos = mesos_composite(&[(
        "isolation",
        "filesystem/linux,volume/sandbox_path,hardening,seccomp",
    )]);
    let mut c = with_image(config(PROBE), &img);
    c.container_info = Some(ContainerInfo {
        volumes: vec![sandbox_volume(
            SandboxPathType::Parent,
            "data",
            "vol",
            VolumeMode::Ro,
        )],
        ..Default::default()
    });
    let rewritten = containerizer::rewrite(&launch(&mesos, &img, &c), &mesos.keys.0)
        .unwrap()
        .unwrap();
    let out = run_as_mesos(&rewritten, &img);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let s = std::fs::read_to_string(img.sandbox.join("status")).unwrap();
    for want in [
        "Seccomp:\t2".to_owned(),
        "NoNewPrivs:\t1".to_owned(),
        format!("CapBnd:\t{DEFAULT_CAPS}"),
        "CapEff:\t0000000000000000".to_owned(),
        "inside-the-image".to_owned(),
        "/mnt/mesos/sandbox".to_owned(),
        "volume-content".to_owned(),
        "vol-read-only".to_owned(),
    ] {
        assert!(s.contains(&want), "{want:?} not in {s}");
    }
    assert!(!s.contains("host-visible"), "{s}");
    // Every mount was the container's own: none on the host.
    let host = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!host.contains(&img.rootfs.display().to_string()), "{host}");
}

#[test]
fn an_images_own_command_runs_as_docker_runtime_makes_it() {
    if !root_or_skip() {
        return;
    }
    let img = image("entrypoint");
    let mesos = mesos_composite(&[]);
    let mut c = with_image(ContainerConfig::default(), &img);
    c.command_info.shell = Some(false);
    c.docker = Some(container_config::Docker {
        manifest: Some(DockerImageManifest {
            config: Some(docker_image_manifest::Config {
                entrypoint: vec!["/bin/sh".into(), "-c".into()],
                cmd: vec![
                    "cat /image-marker > status; grep Seccomp: /proc/self/status >> status; exit 4"
                        .into(),
                ],
            }),
        }),
    });
    let text = launch(&mesos, &img, &c);
    let rewritten = containerizer::rewrite(&text, &mesos.keys.0)
        .unwrap()
        .unwrap();
    let out = run_as_mesos(&rewritten, &img);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let s = std::fs::read_to_string(img.sandbox.join("status")).unwrap();
    assert_eq!(s, "inside-the-image\nSeccomp:\t2\n");
    // The image's command replaced by the tenant's, the isolator's
    // arguments kept: the seal no longer covers it, nothing runs it.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["command"]["arguments"][2] = "echo pwned > status".into();
    assert!(
        containerizer::rewrite(&v.to_string(), &mesos.keys.0)
            .unwrap_err()
            .contains("not sealed")
    );
}

#[test]
fn a_link_in_the_image_never_carries_a_mount_out_of_it() {
    if !root_or_skip() {
        return;
    }
    let img = image("link");
    // The image's /mnt leads to a directory of the host's.
    let outside = img.rootfs.parent().unwrap().join("outside");
    std::fs::create_dir_all(outside.join("mesos/sandbox")).unwrap();
    std::fs::remove_dir_all(img.rootfs.join("mnt")).unwrap();
    std::os::unix::fs::symlink(&outside, img.rootfs.join("mnt")).unwrap();
    let mesos = mesos_composite(&[]);
    let c = with_image(config("touch /ran; exit 0"), &img);
    let rewritten = containerizer::rewrite(&launch(&mesos, &img, &c), &mesos.keys.0)
        .unwrap()
        .unwrap();
    let out = run_as_mesos(&rewritten, &img);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mnt/mesos/sandbox"), "{err}");
    assert!(!img.rootfs.join("ran").exists() && !Path::new("/ran").exists());
    assert_eq!(
        std::fs::read_dir(outside.join("mesos/sandbox"))
            .unwrap()
            .count(),
        0
    );
}

/// The image's working directory (docker/runtime's `WorkingDir`, the
/// tenant's) is made and entered inside the image only: a new one is
/// created there, and a path through `/proc/<pid>/root` (a process outside
/// the image) is refused rather than followed to the host.
#[test]
fn the_working_directory_is_made_inside_the_image_only() {
    if !root_or_skip() {
        return;
    }
    let img = image("workdir");
    let mesos = mesos_composite(&[]);
    let c = with_image(config("pwd > /mnt/mesos/sandbox/wd; exit 0"), &img);
    let with_workdir = |dir: &str| {
        let mut v: serde_json::Value = serde_json::from_str(&launch(&mesos, &img, &c)).unwrap();
        v["working_directory"] = dir.into();
        containerizer::rewrite(&v.to_string(), &mesos.keys.0)
            .unwrap()
            .unwrap()
    };
    let out = run_as_mesos(&with_workdir("/srv/app/data"), &img);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(img.sandbox.join("wd")).unwrap(),
        "/srv/app/data\n"
    );
    assert!(img.rootfs.join("srv/app/data").is_dir());
    let host = img.rootfs.parent().unwrap().join("host-side");
    let escape = format!("/proc/1/root{}", host.display());
    let out = run_as_mesos(&with_workdir(&escape), &img);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    assert!(!host.exists(), "the working directory was made on the host");
}

/// A debug session into a container with its own image is refused when it
/// is prepared, so the agent's answer says why (the stage is not in the
/// image); once that container is gone, the same id may debug another.
#[test]
fn a_debug_session_into_an_image_container_is_refused_at_prepare() {
    if !root_or_skip() {
        return;
    }
    let img = image("debug");
    let mesos = mesos_composite(&[]);
    let c = with_image(config("exec sleep 60"), &img);
    launch(&mesos, &img, &c);
    let parent = ContainerId {
        value: "p".into(),
        parent: None,
    };
    let image_container = ContainerId {
        value: "img".into(),
        parent: Some(Box::new(parent)),
    };
    let debug = ContainerId {
        value: "dbg".into(),
        parent: Some(Box::new(image_container.clone())),
    };
    let mut session = config("true");
    session.container_class = Some(ContainerClass::Debug as i32);
    session.directory = img.sandbox.join("containers/dbg").display().to_string();
    let e = mesos
        .composite
        .prepare(&debug, &session)
        .unwrap_err()
        .to_string();
    assert!(e.contains("image") && e.contains("p.img"), "{e}");
    mesos.composite.cleanup(&image_container).unwrap();
    mesos.composite.prepare(&debug, &session).unwrap();
}
