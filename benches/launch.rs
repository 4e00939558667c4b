//! Launcher benchmarks (root; real processes), all in one run:
//!
//! * `launch_exit/*`: `/bin/true` launched until it has exited —
//!   nestguard as a nested container (own pid/mnt/uts/ipc namespaces, the
//!   executor's network namespace, checkpointed, then destroyed) vs
//!   `unshare --pid --fork --mount --uts --ipc /bin/true` vs `runc run` of a
//!   busybox-static bundle. The nestguard runtime dir is on tmpfs, where
//!   Mesos keeps it (`/var/run/mesos`); `nestguard_nested_disk` is the same
//!   on an fsync-ing disk, and `checkpoint_write/*` isolates one atomic
//!   checkpoint write, so the durability cost is reported separately.
//! * `recover/1000_checkpointed`: a new launcher recovering 1,000 containers.
//! * `destroy/pod_100`: destroying a pod of 100 nested containers.
//!
//! Run: `cargo bench --bench launch` (as root; needs `runc`, `busybox-static`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use nestguard::container_id::parse_dotted;
use nestguard::isolation::{Launcher, LauncherOptions, Mode};
use nestguard::proto::mesos::CommandInfo;
use nestguard::proto::mesos::slave::ContainerLaunchInfo;

const HELPER: &str = env!("CARGO_BIN_EXE_nestguard-launch");

fn true_info() -> ContainerLaunchInfo {
    ContainerLaunchInfo {
        command: Some(CommandInfo {
            shell: Some(false),
            value: Some("/bin/true".into()),
            arguments: vec!["true".into()],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn executor() -> ContainerLaunchInfo {
    ContainerLaunchInfo {
        command: Some(CommandInfo {
            shell: Some(true),
            value: Some("sleep 1000".into()),
            ..Default::default()
        }),
        clone_namespaces: vec![
            libc::CLONE_NEWNET,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWNS,
            libc::CLONE_NEWUTS,
            libc::CLONE_NEWIPC,
        ],
        ..Default::default()
    }
}

struct Pod {
    launcher: Launcher,
    root: nestguard::proto::mesos::ContainerId,
    sandbox: PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

impl Pod {
    fn new(runtime_parent: &str, name: &str) -> Pod {
        let rt = tempfile::Builder::new()
            .prefix("nestguard-bench-")
            .tempdir_in(runtime_parent)
            .unwrap();
        let work = tempfile::Builder::new()
            .prefix("nestguard-bench-")
            .tempdir_in("/dev/shm")
            .unwrap();
        let launcher = Launcher::new(LauncherOptions {
            runtime_dir: rt.path().to_path_buf(),
            helper: HELPER.into(),
            mode: Mode::Linux,
        })
        .unwrap();
        let root = parse_dotted(name).unwrap();
        let sandbox = work.path().join(name);
        launcher.launch(&root, &executor(), None, &sandbox).unwrap();
        Pod {
            launcher,
            root,
            sandbox,
            _dirs: vec![rt, work],
        }
    }

    fn launch_nested(
        &self,
        value: &str,
        info: &ContainerLaunchInfo,
    ) -> nestguard::proto::mesos::ContainerId {
        let id = nestguard::proto::mesos::ContainerId {
            value: value.into(),
            parent: Some(Box::new(self.root.clone())),
        };
        let sb = self.sandbox.join("containers").join(value);
        self.launcher.launch(&id, info, None, &sb).unwrap();
        id
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.launcher.destroy(&self.root);
    }
}

fn runc_bundle(dir: &Path) {
    let rootfs = dir.join("rootfs");
    std::fs::create_dir_all(rootfs.join("bin")).unwrap();
    std::fs::copy("/bin/busybox", rootfs.join("bin/busybox")).unwrap();
    std::os::unix::fs::symlink("busybox", rootfs.join("bin/true")).unwrap();
    let ok = Command::new("runc")
        .args(["spec", "--bundle"])
        .arg(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "runc spec");
    let path = dir.join("config.json");
    let mut spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    spec["process"]["args"] = serde_json::json!(["/bin/true"]);
    spec["process"]["terminal"] = serde_json::json!(false);
    std::fs::write(&path, serde_json::to_vec(&spec).unwrap()).unwrap();
}

fn launch_exit(c: &mut Criterion) {
    let mut g = c.benchmark_group("launch_exit");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));

    for (name, parent) in [
        ("nestguard_nested_tmpfs", "/dev/shm"),
        ("nestguard_nested_disk", "/tmp"),
    ] {
        let pod = Pod::new(parent, "nestguard-bench-pod");
        let mut n = 0u64;
        let info = true_info();
        g.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                let id = pod.launch_nested(&format!("t{n}"), &info);
                let status = pod
                    .launcher
                    .wait(&id, Some(Duration::from_secs(10)))
                    .unwrap();
                assert_eq!(status, Some(0));
                pod.launcher.destroy(&id).unwrap();
            })
        });
    }

    g.bench_function("unshare", |b| {
        b.iter(|| {
            let ok = Command::new("unshare")
                .args(["--pid", "--fork", "--mount", "--uts", "--ipc", "/bin/true"])
                .status()
                .unwrap()
                .success();
            assert!(ok);
        })
    });

    let bundle = tempfile::Builder::new()
        .prefix("nestguard-bench-runc-")
        .tempdir_in("/dev/shm")
        .unwrap();
    runc_bundle(bundle.path());
    let state = bundle.path().join("state");
    let mut n = 0u64;
    g.bench_function("runc_run", |b| {
        b.iter(|| {
            n += 1;
            let ok = Command::new("runc")
                .arg("--root")
                .arg(&state)
                .args(["run", "--bundle"])
                .arg(bundle.path())
                .arg(format!("nestguard-bench-{n}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok);
        })
    });
    g.finish();

    let mut g = c.benchmark_group("checkpoint_write");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    for (name, parent) in [("tmpfs", "/dev/shm"), ("disk", "/tmp")] {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-bench-")
            .tempdir_in(parent)
            .unwrap();
        let path = dir.path().join("status");
        g.bench_function(name, |b| {
            b.iter(|| nestguard::checkpoint::write_text(&path, "256").unwrap())
        });
    }
    g.finish();
}

fn recover(c: &mut Criterion) {
    let rt = tempfile::Builder::new()
        .prefix("nestguard-bench-")
        .tempdir_in("/dev/shm")
        .unwrap();
    // 10 pods of 99 nested containers + the 10 roots ≈ 1,000 checkpointed
    // containers that exited while the agent was down.
    let mut known = Vec::new();
    for p in 0..10 {
        let root = parse_dotted(&format!("nestguard-pod{p}")).unwrap();
        let dir = rt.path().join("containers").join(&root.value);
        for i in 0..=99 {
            let d = if i == 0 {
                dir.clone()
            } else {
                dir.join("containers").join(format!("c{i}"))
            };
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("pid"), "4194000\n1\n").unwrap();
            std::fs::write(d.join("status"), "256").unwrap();
        }
        known.push(root);
    }
    let mut g = c.benchmark_group("recover");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    g.bench_function("1000_checkpointed", |b| {
        b.iter_batched(
            || {
                Launcher::new(LauncherOptions {
                    runtime_dir: rt.path().to_path_buf(),
                    helper: HELPER.into(),
                    mode: Mode::Linux,
                })
                .unwrap()
            },
            |l| {
                let orphans = l.recover(&known).unwrap();
                assert!(orphans.is_empty());
                assert_eq!(l.containers().len(), 1000);
                l
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn destroy(c: &mut Criterion) {
    let mut g = c.benchmark_group("destroy");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(100));
    let sleep = ContainerLaunchInfo {
        command: Some(CommandInfo {
            shell: Some(false),
            value: Some("/bin/sleep".into()),
            arguments: vec!["sleep".into(), "1000".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut n = 0;
    g.bench_function("pod_100", |b| {
        b.iter_batched(
            || {
                n += 1;
                let pod = Pod::new("/dev/shm", &format!("nestguard-bench-destroy{n}"));
                for i in 0..100 {
                    pod.launch_nested(&format!("c{i}"), &sleep);
                }
                pod
            },
            |pod| {
                assert_eq!(pod.launcher.destroy(&pod.root).unwrap(), Some(9));
                pod
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn root() -> bool {
    let ok = nix::unistd::geteuid().is_root();
    if !ok {
        eprintln!("launch benchmarks need root; skipped");
    }
    ok
}

fn all(c: &mut Criterion) {
    if root() {
        launch_exit(c);
        recover(c);
        destroy(c);
    }
}

criterion_group!(benches, all);
criterion_main!(benches);
