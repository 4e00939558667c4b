//! Shared fixture of the launcher tests: a temporary runtime dir and work
//! dir, and a Drop guard that destroys every container left behind.

#![allow(dead_code, reason = "each test binary uses a subset")]

use crate::common;
#[allow(unused_imports, reason = "not every test binary waits")]
pub use crate::common::wait_until;

use std::path::PathBuf;
use std::time::Duration;

use nestguard::container_id;
use nestguard::isolation::{Launcher, LauncherOptions, Mode};
use nestguard::proto::mesos::slave::ContainerLaunchInfo;
use nestguard::proto::mesos::{CommandInfo, ContainerId};

/// True if we may run; see `common::root_or_skip`.
pub fn root_or_skip() -> bool {
    common::root_or_skip("launcher tests")
}

pub const HELPER: &str = env!("CARGO_BIN_EXE_nestguard-launch");

pub struct Fixture {
    pub dir: tempfile::TempDir,
    /// Runtime dir on tmpfs (as Mesos' default `/var/run/mesos`), if chosen.
    pub tmpfs: Option<tempfile::TempDir>,
    pub launcher: Option<Launcher>,
    pub mode: Mode,
    /// `namespaces/user`'s pool, when the test runs pods in user namespaces.
    pub user_namespaces: Option<nestguard::isolation::id_map::RangePool>,
}

impl Fixture {
    pub fn new(mode: Mode) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-launcher-test-")
            .tempdir()
            .unwrap();
        let mut f = Fixture {
            dir,
            tmpfs: None,
            launcher: None,
            mode,
            user_namespaces: None,
        };
        f.reopen();
        f
    }

    /// Like [`Fixture::new`] with the runtime dir on tmpfs (`/dev/shm`), where
    /// Mesos keeps it (`/var/run`): fsync is nearly free there.
    pub fn new_tmpfs(mode: Mode) -> Fixture {
        let mut f = Fixture::new(mode);
        f.launcher = None;
        f.tmpfs = Some(
            tempfile::Builder::new()
                .prefix("nestguard-launcher-test-")
                .tempdir_in("/dev/shm")
                .unwrap(),
        );
        f.reopen();
        f
    }

    pub fn options(&self) -> LauncherOptions {
        LauncherOptions {
            runtime_dir: self.runtime_dir(),
            helper: PathBuf::from(HELPER),
            mode: self.mode,
            allow_sharing_agent_pid_namespace: false,
            defences: Default::default(),
            user_namespaces: self.user_namespaces,
        }
    }

    /// Drops the launcher (a host restart) and makes a new one.
    pub fn reopen(&mut self) {
        self.launcher = None;
        self.launcher = Some(Launcher::new(self.options()).unwrap());
    }

    pub fn l(&self) -> &Launcher {
        self.launcher.as_ref().unwrap()
    }

    pub fn runtime_dir(&self) -> PathBuf {
        match &self.tmpfs {
            Some(t) => t.path().join("runtime"),
            None => self.dir.path().join("runtime"),
        }
    }

    /// Sandbox for `id`: `<work>/runs/<root>/containers/<child>...`.
    pub fn sandbox(&self, id: &ContainerId) -> PathBuf {
        let chain = container_id::chain(id);
        let mut p = self.dir.path().join("runs").join(chain[0]);
        for v in &chain[1..] {
            p = p.join("containers").join(v);
        }
        p
    }

    pub fn launch(&self, dotted: &str, script: &str) -> (ContainerId, i32) {
        self.try_launch(dotted, shell(script)).unwrap()
    }

    pub fn try_launch(
        &self,
        dotted: &str,
        info: ContainerLaunchInfo,
    ) -> Result<(ContainerId, i32), nestguard::isolation::LauncherError> {
        let id = container_id::parse_dotted(dotted).unwrap();
        let pid = self.l().launch(&id, &info, None, &self.sandbox(&id))?;
        Ok((id, pid))
    }

    /// Launches `info`, expects exit 0 (showing stderr otherwise) and
    /// returns the id and what the container wrote to stdout.
    pub fn run_ok(&self, dotted: &str, info: ContainerLaunchInfo) -> (ContainerId, String) {
        let (id, _) = self.try_launch(dotted, info).unwrap();
        let status = self.wait(&id);
        let sandbox = self.sandbox(&id);
        assert_eq!(status, 0, "stderr: {}", read(sandbox.join("stderr")));
        (id, read(sandbox.join("stdout")))
    }

    pub fn wait(&self, id: &ContainerId) -> i32 {
        self.l()
            .wait(id, Some(Duration::from_secs(30)))
            .unwrap()
            .expect("container did not exit in 30s")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(l) = self.launcher.take() {
            let _ = l.recover(&[]);
            for id in l.containers() {
                if id.parent.is_none() {
                    let _ = l.destroy(&id);
                }
            }
        } else if let Ok(l) = Launcher::new(self.options()) {
            let _ = l.recover(&[]);
            for id in l.containers() {
                if id.parent.is_none() {
                    let _ = l.destroy(&id);
                }
            }
        }
    }
}

pub fn shell(script: &str) -> ContainerLaunchInfo {
    ContainerLaunchInfo {
        command: Some(CommandInfo {
            shell: Some(true),
            value: Some(script.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Namespaces of an executor (top-level) container in a pod: its own network
/// (so sharing with sub-containers is observable), pid, mount, UTS and IPC.
pub fn executor(script: &str) -> ContainerLaunchInfo {
    let mut info = shell(script);
    info.clone_namespaces = vec![
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
    ];
    info
}

/// Children of this process that are zombies.
pub fn zombie_children() -> usize {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| nestguard::isolation::process::stat(p).ok().flatten())
        .filter(|s| s.ppid == me && s.exited())
        .count()
}

pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

pub fn read(path: impl AsRef<std::path::Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
