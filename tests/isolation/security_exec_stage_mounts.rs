//! Issue #24: under Mesos' launcher, a `SANDBOX_PATH` volume's bind is no
//! longer Mesos' helper's to make by path. The wrapper takes it from the
//! launch info and the stage makes it through descriptors, so a target (or
//! source) swapped for a symbolic link after prepare fails the launch
//! instead of binding the tenant's choice, and nothing is ever mounted in
//! the agent's mount namespace.
//!
//! Every mount here is made in a mount namespace of its own with `/`
//! private (a forked child that unshared, or `unshare -m --propagation
//! private`): nothing can reach the host's, which each test checks.

use crate::isolator_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::security_exec_stage::mount_targets;
use isolator_support::{config, id, root_or_skip, sandbox_volume, with_volumes};
use nestguard::isolation::exec_stage::launch_mounts::{self, own_mnt_ns, perform};
use nestguard::isolation::exec_stage::left_to_mesos;
use nestguard::isolation::exec_stage::{ExecPlan, StageIdentity, containerizer};
use nestguard::isolation::isolator::{Composite, Isolator, IsolatorParams};
use nestguard::proto::mesos::slave::{ContainerConfig, ContainerMountInfo};
use nestguard::proto::mesos::volume::Mode as VolumeMode;
use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;

const STAGE: &str = env!("CARGO_BIN_EXE_nestguard-exec");
const BIND: u32 = (libc::MS_BIND | libc::MS_REC) as u32;
const RO: u32 = (libc::MS_BIND | libc::MS_REC | libc::MS_REMOUNT | libc::MS_RDONLY) as u32;

/// A temporary tree; on drop, any mount below it that leaked into this
/// namespace is detached first (none should), then the tree is removed.
struct Tree(PathBuf);
impl Tree {
    fn new(tag: &str) -> Tree {
        let dir =
            std::env::temp_dir().join(format!("ng-launch-mounts-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tree(dir)
    }
}
impl Drop for Tree {
    fn drop(&mut self) {
        for target in mounts_below(&self.0).into_iter().rev() {
            let _ = nix::mount::umount2(&target, nix::mount::MntFlags::MNT_DETACH);
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Mount points at or below `dir` in the caller's mount namespace.
fn mounts_below(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(PathBuf::from)
        .filter(|p| p.starts_with(dir))
        .collect()
}

/// Runs `f` in a forked child that has a mount namespace of its own with
/// `/` private; returns what `f` returned (its `Err` as the child's
/// failure). The child never returns into the test harness.
fn in_own_mount_ns(f: impl FnOnce() -> Result<String, String>) -> Result<String, String> {
    let (read, write) = nix::unistd::pipe().unwrap();
    // SAFETY: the child only unshares, mounts, runs `f` (file and mount
    // calls) and `_exit`s; glibc's malloc is fork-safe.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            drop(read);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
                    .map_err(|e| format!("unshare: {e}"))?;
                nix::mount::mount(
                    None::<&str>,
                    "/",
                    None::<&str>,
                    nix::mount::MsFlags::MS_PRIVATE | nix::mount::MsFlags::MS_REC,
                    None::<&str>,
                )
                .map_err(|e| format!("make / private: {e}"))?;
                f()
            }))
            .unwrap_or_else(|_| Err("the child panicked".into()));
            let (code, text) = match result {
                Ok(t) => (0, t),
                Err(t) => (1, t),
            };
            let mut file = std::fs::File::from(write);
            let _ = std::io::Write::write_all(&mut file, text.as_bytes());
            drop(file);
            // SAFETY: ends the child without running the harness' exit.
            unsafe { libc::_exit(code) }
        }
        nix::unistd::ForkResult::Parent { child } => {
            drop(write);
            let mut text = String::new();
            let mut file = std::fs::File::from(read);
            std::io::Read::read_to_string(&mut file, &mut text).unwrap();
            let status = nix::sys::wait::waitpid(child, None).unwrap();
            match status {
                nix::sys::wait::WaitStatus::Exited(_, 0) => Ok(text),
                _ => Err(text),
            }
        }
    }
}

/// A parent's sandbox with `shared/secret`, a nested container's sandbox
/// with the mount point `vol`, and a directory outside both.
struct Layout {
    tree: Tree,
    sandboxes: Vec<PathBuf>,
    shared: PathBuf,
    vol: PathBuf,
    outside: PathBuf,
}

fn layout(tag: &str) -> Layout {
    let tree = Tree::new(tag);
    let parent = tree.0.join("runs/p");
    let own = parent.join("containers/c");
    let shared = parent.join("shared");
    let vol = own.join("vol");
    let outside = tree.0.join("outside");
    for d in [&shared, &vol, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(shared.join("secret"), "hello").unwrap();
    std::fs::write(outside.join("host-file"), "host").unwrap();
    Layout {
        sandboxes: vec![parent, own],
        shared,
        vol,
        outside,
        tree,
    }
}

fn volume_mounts(l: &Layout) -> Vec<ContainerMountInfo> {
    vec![
        ContainerMountInfo {
            source: Some(l.shared.display().to_string()),
            target: l.vol.display().to_string(),
            flags: Some(BIND),
            ..Default::default()
        },
        ContainerMountInfo {
            target: l.vol.display().to_string(),
            flags: Some(RO),
            ..Default::default()
        },
    ]
}

/// Swaps `path` (a directory) for a symbolic link to `to`.
fn swap_for_link(path: &Path, to: &Path) {
    std::fs::remove_dir_all(path).unwrap();
    std::os::unix::fs::symlink(to, path).unwrap();
}

#[test]
fn a_swapped_sandbox_path_is_refused_and_an_honest_one_is_bound_read_only() {
    if !root_or_skip() {
        return;
    }
    let agent = own_mnt_ns().unwrap();
    let l = layout("inproc");
    let mounts = volume_mounts(&l);

    // Honest: the bind lands on the target, read-only.
    let vol = l.vol.clone();
    let (m, s) = (mounts.clone(), l.sandboxes.clone());
    let out = in_own_mount_ns(move || {
        perform(&m, &s, agent)?;
        let seen = std::fs::read_to_string(vol.join("secret")).map_err(|e| e.to_string())?;
        let write = std::fs::write(vol.join("new"), "x");
        Ok(format!("{seen} {}", write.is_err()))
    });
    assert_eq!(out, Ok("hello true".to_owned()));

    // The target swapped for a link out of the sandbox: refused, nothing
    // mounted on what the link points to.
    swap_for_link(&l.vol, &l.outside);
    let (m, s, outside) = (mounts.clone(), l.sandboxes.clone(), l.outside.clone());
    let out = in_own_mount_ns(move || {
        let e = perform(&m, &s, agent).unwrap_err();
        if !mounts_below(&outside).is_empty() {
            return Err(format!("mounted outside: {:?}", mounts_below(&outside)));
        }
        Ok(e)
    })
    .unwrap();
    assert!(out.contains("does not resolve below"), "{out}");
    assert!(!l.outside.join("secret").exists());
    std::fs::remove_file(&l.vol).unwrap();
    std::fs::create_dir(&l.vol).unwrap();

    // The source swapped for a link to the host's /etc: refused too.
    swap_for_link(&l.shared, Path::new("/etc"));
    let (m, s, vol) = (mounts.clone(), l.sandboxes.clone(), l.vol.clone());
    let out = in_own_mount_ns(move || {
        let e = perform(&m, &s, agent).unwrap_err();
        if !mounts_below(&vol).is_empty() {
            return Err("mounted the link's target".into());
        }
        Ok(e)
    })
    .unwrap();
    assert!(out.contains("does not resolve below"), "{out}");
    std::fs::remove_file(&l.shared).unwrap();
    std::fs::create_dir(&l.shared).unwrap();

    // The process in the "agent's" namespace (its own, as the plan names
    // it): refused before any mount.
    let (m, s, root) = (mounts.clone(), l.sandboxes.clone(), l.tree.0.clone());
    let out = in_own_mount_ns(move || {
        let e = perform(&m, &s, own_mnt_ns()?).unwrap_err();
        if !mounts_below(&root).is_empty() {
            return Err("mounted in the agent's namespace".into());
        }
        Ok(e)
    })
    .unwrap();
    assert!(out.contains("agent's mount namespace"), "{out}");

    // A file system onto a sandbox path (as Mesos' secrets' ramfs): onto
    // the resolved descriptor; a swapped target is refused.
    let tmpfs = vec![ContainerMountInfo {
        source: Some("tmpfs".into()),
        target: l.vol.display().to_string(),
        r#type: Some("tmpfs".into()),
        flags: Some(libc::MS_NOSUID as u32),
        options: Some("size=64k".into()),
    }];
    let (m, s, vol) = (tmpfs.clone(), l.sandboxes.clone(), l.vol.clone());
    let out = in_own_mount_ns(move || {
        perform(&m, &s, agent)?;
        let info = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let line = info
            .lines()
            .find(|l| l.split(' ').nth(4) == Some(vol.to_str().unwrap_or("")))
            .ok_or("no mount at the target")?;
        Ok(line.to_owned())
    })
    .unwrap();
    assert!(out.contains(" - tmpfs "), "{out}");
    swap_for_link(&l.vol, &l.outside);
    let (m, s, outside) = (tmpfs, l.sandboxes.clone(), l.outside.clone());
    let out = in_own_mount_ns(move || {
        let e = perform(&m, &s, agent).unwrap_err();
        if !mounts_below(&outside).is_empty() {
            return Err("mounted the link's target".into());
        }
        Ok(e)
    })
    .unwrap();
    assert!(out.contains("does not resolve below"), "{out}");
    assert!(l.outside.join("host-file").exists());

    // Nothing reached this (the host's) namespace.
    assert!(mounts_below(&l.tree.0).is_empty());
}

/// The whole path: the isolator prepares a nested container with a PARENT
/// volume, the wrapper rewrites its launch info, and the stage runs as
/// Mesos' helper would run it, in a mount namespace of its own.
struct Launch {
    layout: Layout,
    keys: Tree,
    composite: Composite,
}

fn launch_info(tag: &str, script: &str) -> (Launch, serde_json::Value) {
    let l = layout(tag);
    let keys = Tree::new(&format!("{tag}-keys"));
    let keys_arg = keys.0.display().to_string();
    let params = IsolatorParams::parse([
        (
            "isolation",
            "filesystem/linux,volume/sandbox_path,hardening",
        ),
        ("launcher", "mesos"),
        ("exec_stage", STAGE),
        ("exec_stage_keys", keys_arg.as_str()),
    ])
    .unwrap();
    let composite = Composite::from_parameters(&params).unwrap();
    let mut parent = config("true");
    parent.directory = l.sandboxes[0].display().to_string();
    parent.user = Some("root".into());
    composite.prepare(&id("p"), &parent).unwrap();
    std::fs::remove_dir(&l.vol).unwrap(); // the isolator makes it
    let volume = sandbox_volume(SandboxPathType::Parent, "shared", "vol", VolumeMode::Ro);
    let mut nested = with_volumes(config(script), vec![volume]);
    nested.directory = l.sandboxes[1].display().to_string();
    nested.user = Some("root".into());
    let info = composite.prepare(&id("p.c"), &nested).unwrap().unwrap();
    let mut json = nestguard::json::to_json_value(&info);
    json["user"] = "root".into();
    // One mount of Mesos' own, which must stay with Mesos' helper.
    json["mounts"].as_array_mut().unwrap().insert(
        0,
        serde_json::json!({"source": "tmpfs", "target": "/dev/shm", "type": "tmpfs", "flags": 0}),
    );
    (
        Launch {
            layout: l,
            keys,
            composite,
        },
        json,
    )
}

fn run_stage(args: &[String], dir: &Path) -> Output {
    Command::new("unshare")
        .args(["-m", "--propagation", "private", STAGE])
        .args(&args[1..])
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn the_wrapper_hands_sandbox_mounts_to_the_stage_which_refuses_a_swapped_target() {
    if !root_or_skip() {
        return;
    }
    let script = "cat vol/secret > seen; (echo x > vol/new) 2>/dev/null || echo ro >> seen";
    let (launch, info) = launch_info("e2e", script);
    let l = &launch.layout;
    let rewritten = containerizer::rewrite(&info.to_string(), &launch.keys.0)
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&rewritten).unwrap();
    // Mesos' helper keeps its own mounts (ours here, the masked paths),
    // in order, and none in a sandbox.
    let left = mount_targets(&v["mounts"]);
    let before: Vec<&str> = info["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .filter(|t| !Path::new(t).starts_with(&l.tree.0))
        .collect();
    assert_eq!(left, before);
    assert_eq!(left[0], "/dev/shm");
    let args: Vec<String> = serde_json::from_value(v["command"]["arguments"].clone()).unwrap();
    let mounts = args[3].strip_prefix(launch_mounts::MOUNTS_ARG).unwrap();
    assert_eq!(launch_mounts::from_arg(mounts.as_bytes()).unwrap().len(), 2);

    let own = &l.sandboxes[1];
    let out = run_stage(&args, own);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(own.join("seen")).unwrap(),
        "helloro\n"
    );
    std::fs::remove_file(own.join("seen")).unwrap();

    // The tenant swaps the mount point for a link after prepare.
    swap_for_link(&l.vol, &l.outside);
    let out = run_stage(&args, own);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not resolve below"), "{err}");
    assert!(!own.join("seen").exists(), "the command ran");
    assert!(!l.outside.join("secret").exists());
    assert!(mounts_below(&l.tree.0).is_empty());
    launch.composite.cleanup(&id("p.c")).unwrap();
    launch.composite.cleanup(&id("p")).unwrap();
}

/// A plan for the stage run by hand: no capability change asked beyond
/// root's, no filters, the given stage identity.
fn plan_with_stage(stage: StageIdentity) -> String {
    ExecPlan {
        container: "identity".into(),
        bounding: u64::MAX >> 23,
        effective: None,
        no_new_privs: true,
        filters: Vec::new(),
        read_only_paths: false,
        agent_mnt_ns: 0,
        sandboxes: vec![std::env::temp_dir()],
        stage,
        rootfs: None,
        posix: Default::default(),
    }
    .to_arg()
}

#[test]
fn the_stage_refuses_to_run_when_its_path_is_no_longer_the_sealed_file() {
    if !root_or_skip() {
        return;
    }
    let honest = StageIdentity::of(Path::new(STAGE)).unwrap();
    let run = |stage: StageIdentity| {
        Command::new("unshare")
            .args(["-m", "--propagation", "private", STAGE])
            .arg(plan_with_stage(stage))
            .args(["--", "/bin/true"])
            .output()
            .unwrap()
    };
    let out = run(honest.clone());
    assert!(out.status.success(), "{out:?}");
    // Another file at the stage's path (as a mount covering it in the
    // container's namespace would make it): the stage stops before any
    // defence or command.
    let covered = StageIdentity {
        ino: honest.ino + 1,
        ..honest.clone()
    };
    let out = run(covered);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no longer the exec stage"), "{err}");

    // And the check sees a real covering mount (in a namespace of its own).
    let tree = Tree::new("identity");
    let other = tree.0.join("other");
    std::fs::write(&other, b"not the stage").unwrap();
    let stage = Path::new(STAGE).to_path_buf();
    let seen = in_own_mount_ns(move || {
        honest.verify()?;
        nix::mount::mount(
            Some(&other),
            &stage,
            None::<&str>,
            nix::mount::MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(|e| format!("bind: {e}"))?;
        Ok(honest.verify().unwrap_err())
    })
    .unwrap();
    assert!(seen.contains("no longer the exec stage"), "{seen}");
    assert!(mounts_below(&tree.0).is_empty());
}

#[test]
fn a_bind_target_outside_the_sandboxes_reached_through_a_link_is_refused() {
    if !root_or_skip() {
        return;
    }
    let l = layout("outside-link");
    // The tenant's link in its sandbox, named by an absolute target.
    let link = l.sandboxes[0].join("alias");
    std::os::unix::fs::symlink(&l.outside, &link).unwrap();
    let target = link.join("x");
    std::fs::create_dir_all(l.outside.join("x")).unwrap();
    let mounts = [ContainerMountInfo {
        source: Some(l.vol.display().to_string()),
        target: target.display().to_string(),
        flags: Some((libc::MS_BIND | libc::MS_REC) as u32),
        ..Default::default()
    }];
    // Outside every sandbox by name (the plan names only the nested one).
    let sandboxes = vec![l.sandboxes[1].clone()];
    let out = in_own_mount_ns(move || {
        let e = nestguard::isolation::helper::mounts::apply(&mounts, &sandboxes, None).unwrap_err();
        Ok(e.to_string())
    })
    .unwrap();
    assert!(out.contains("no symbolic links"), "{out}");
    assert!(mounts_below(&l.tree.0).is_empty());
}

#[test]
fn an_absolute_mount_point_with_a_link_on_its_way_is_refused_at_prepare() {
    if !root_or_skip() {
        return;
    }
    let l = layout("prepare-link");
    let link = l.sandboxes[0].join("alias");
    std::os::unix::fs::symlink(&l.outside, &link).unwrap();
    let params =
        IsolatorParams::parse([("isolation", "filesystem/linux,volume/sandbox_path")]).unwrap();
    let composite = Composite::from_parameters(&params).unwrap();
    let mut parent = config("true");
    parent.directory = l.sandboxes[0].display().to_string();
    parent.user = Some("root".into());
    composite.prepare(&id("p"), &parent).unwrap();
    let through_link = link.display().to_string();
    let volume = sandbox_volume(
        SandboxPathType::Parent,
        "shared",
        &through_link,
        VolumeMode::Ro,
    );
    let mut nested = with_volumes(config("true"), vec![volume]);
    nested.directory = l.sandboxes[1].display().to_string();
    nested.user = Some("root".into());
    let e = composite.prepare(&id("p.c"), &nested).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    // The real path is accepted.
    let real = l.outside.display().to_string();
    let volume = sandbox_volume(SandboxPathType::Parent, "shared", &real, VolumeMode::Ro);
    let nested = ContainerConfig {
        directory: l.sandboxes[1].display().to_string(),
        user: Some("root".into()),
        ..with_volumes(config("true"), vec![volume])
    };
    composite.prepare(&id("p.c"), &nested).unwrap();
    composite.cleanup(&id("p.c")).unwrap();
    composite.cleanup(&id("p")).unwrap();
}

#[test]
fn a_target_left_to_mesos_must_not_be_steerable_by_a_tenant() {
    if !root_or_skip() {
        return;
    }
    // Root's own directories, or a target not there yet below them: fine.
    left_to_mesos::target_is_fixed(Path::new("/dev/shm")).unwrap();
    left_to_mesos::target_is_fixed(Path::new("/proc/sys")).unwrap();
    left_to_mesos::target_is_fixed(Path::new("/nestguard-no-such-dir/x")).unwrap();
    let l = layout("left-target");
    // A link on the way (the tenant's, in its sandbox).
    let link = l.sandboxes[0].join("alias");
    std::os::unix::fs::symlink(&l.outside, &link).unwrap();
    let e = left_to_mesos::target_is_fixed(&link.join("x")).unwrap_err();
    assert!(
        e.contains("symbolic link") || e.contains("not root's"),
        "{e}"
    );
    // A directory others may write (where a link could be swapped in).
    let open = l.tree.0.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let e = left_to_mesos::target_is_fixed(&open.join("x")).unwrap_err();
    assert!(e.contains("not root's"), "{e}");
    // Through the wrapper: such a mount fails the launch, whatever else.
    let mut info = serde_json::json!({"mounts": [
        {"source": "/srv", "target": open.join("x").display().to_string(), "flags": libc::MS_BIND as u32}
    ]})
    .as_object()
    .unwrap()
    .clone();
    let e = launch_mounts::take(&mut info, &l.sandboxes, None, false).unwrap_err();
    assert!(e.contains("left to Mesos' helper"), "{e}");
}
