//! Shared harness of the isolator tests: an "agent" that drives the
//! composite isolator and the launcher the way Mesos' containerizer does
//! (sandbox → prepare → launch → watch → isolate → wait → destroy →
//! cleanup), under a unique `cgroups_root`, and removes every container,
//! cgroup and directory it made on drop, even when a test fails.

#![allow(dead_code, reason = "each test binary uses a subset")]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use nestguard::container_id::{self, parse_dotted};
use nestguard::isolation::cgroups::Cgroups;
use nestguard::isolation::isolator::{Composite, Isolator, IsolatorParams, Watch};
use nestguard::isolation::{Launcher, LauncherOptions, Mode};
use nestguard::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerTermination};
use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;
use nestguard::proto::mesos::volume::source::{SandboxPath, Type as SourceType};
use nestguard::proto::mesos::volume::{Mode as VolumeMode, Source};
use nestguard::proto::mesos::{
    CommandInfo, ContainerId, ContainerInfo, LinuxInfo, Resource, Volume, value,
};

static COUNTER: AtomicU32 = AtomicU32::new(0);

pub const HELPER: &str = env!("CARGO_BIN_EXE_nestguard-launch");

/// True if we may run; see `common::root_or_skip`.
pub fn root_or_skip() -> bool {
    common::root_or_skip("isolator tests")
}

pub fn id(dotted: &str) -> ContainerId {
    parse_dotted(dotted).unwrap()
}

/// A unique cgroups_root for one test.
pub fn unique_root(tag: &str) -> String {
    format!(
        "nestguard-isolator-test-{}-{}-{}",
        std::process::id(),
        tag,
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

/// The agent side of one test.
pub struct Agent {
    pub dir: tempfile::TempDir,
    pub params: IsolatorParams,
    pub iso: Option<Composite>,
    pub launcher: Option<Launcher>,
    pub cg: Option<Arc<Cgroups>>,
}

impl Agent {
    /// Isolators from `extra` parameters (plus a unique cgroups_root).
    pub fn new(tag: &str, extra: &[(&str, &str)]) -> Agent {
        let root = unique_root(tag);
        let mut pairs: Vec<(&str, &str)> = vec![
            ("cgroups_root", root.as_str()),
            ("cgroups_destroy_timeout_secs", "20"),
        ];
        pairs.extend_from_slice(extra);
        let params = IsolatorParams::parse(pairs).unwrap();
        let dir = tempfile::Builder::new()
            .prefix("nestguard-isolator-test-")
            .tempdir()
            .unwrap();
        let mut agent = Agent {
            dir,
            params,
            iso: None,
            launcher: None,
            cg: None,
        };
        agent.restart();
        agent
    }

    /// A fresh composite and launcher (an agent restart: nothing cleaned).
    pub fn restart(&mut self) {
        self.launcher = None;
        self.iso = None;
        let iso = Composite::from_parameters(&self.params).unwrap();
        let options = LauncherOptions {
            runtime_dir: self.dir.path().join("runtime"),
            helper: PathBuf::from(HELPER),
            mode: Mode::Linux,
            allow_sharing_agent_pid_namespace: !self.params.disallow_sharing_agent_pid_namespace,
            defences: Default::default(),
            user_namespaces: iso.user_namespaces(),
        };
        let launcher = match iso.cgroups() {
            Some(cg) => {
                self.cg = Some(cg.clone());
                Launcher::with_cgroups(options, cg).unwrap()
            }
            None => Launcher::new(options).unwrap(),
        };
        self.iso = Some(iso);
        self.launcher = Some(launcher);
    }

    pub fn iso(&self) -> &Composite {
        self.iso.as_ref().unwrap()
    }

    pub fn l(&self) -> &Launcher {
        self.launcher.as_ref().unwrap()
    }

    pub fn cg(&self) -> &Cgroups {
        self.cg.as_ref().unwrap()
    }

    /// `<work>/runs/<root>/containers/<child>...`, Mesos' sandbox layout.
    pub fn sandbox(&self, id: &ContainerId) -> PathBuf {
        let chain = container_id::chain(id);
        let mut p = self.dir.path().join("runs").join(chain[0]);
        for v in &chain[1..] {
            p = p.join("containers").join(v);
        }
        p
    }

    /// The containerizer's launch: sandbox, prepare, launch, isolate.
    /// Returns the merged launch info and the container's pid.
    pub fn try_launch(
        &self,
        id: &ContainerId,
        mut config: ContainerConfig,
    ) -> Result<(ContainerLaunchInfo, i32), String> {
        let sandbox = self.sandbox(id);
        nestguard::isolation::sandbox::create(&sandbox, None).map_err(|e| e.to_string())?;
        config.directory = sandbox.to_string_lossy().into_owned();
        let prepared = self.iso().prepare(id, &config);
        let mut info = match prepared {
            Ok(info) => info.unwrap_or_default(),
            Err(e) => {
                let _ = self.iso().cleanup(id);
                return Err(e.to_string());
            }
        };
        info.command = Some(config.command_info.clone());
        let pid = match self
            .l()
            .launch(id, &info, config.container_info.as_ref(), &sandbox)
        {
            Ok(pid) => pid,
            Err(e) => {
                let _ = self.iso().cleanup(id);
                return Err(e.to_string());
            }
        };
        self.iso()
            .isolate(id, u32::try_from(pid).unwrap())
            .map_err(|e| e.to_string())?;
        Ok((info, pid))
    }

    pub fn launch(&self, dotted: &str, config: ContainerConfig) -> (ContainerId, i32) {
        let id = id(dotted);
        let (_, pid) = self.try_launch(&id, config).unwrap();
        (id, pid)
    }

    pub fn watch(&self, id: &ContainerId) -> Watch {
        self.iso().watch_all(id).unwrap()
    }

    /// Raw wait status within `timeout`, or None.
    pub fn wait(&self, id: &ContainerId, timeout: Duration) -> Option<i32> {
        self.l().wait(id, Some(timeout)).unwrap()
    }

    /// Destroy (children first) then cleanup, as the containerizer does;
    /// the termination carries the limitation, if any.
    pub fn destroy(
        &self,
        id: &ContainerId,
        limitation: Option<nestguard::proto::mesos::slave::ContainerLimitation>,
    ) -> ContainerTermination {
        let children: Vec<ContainerId> = self
            .l()
            .containers()
            .into_iter()
            .filter(|c| c.parent.as_deref() == Some(id))
            .collect();
        for child in children {
            self.destroy(&child, None);
        }
        let status = self.l().destroy(id).unwrap();
        self.iso().cleanup(id).unwrap();
        let mut termination = ContainerTermination {
            status,
            ..Default::default()
        };
        if let Some(l) = limitation {
            termination.message = l.message;
            termination.reason = l.reason;
            termination.limited_resources = l.resources;
        }
        termination
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(l) = self.launcher.take() {
            let _ = l.recover(&[]);
            for c in l.containers() {
                if c.parent.is_none() {
                    let _ = l.destroy(&c);
                }
            }
        }
        if let Some(cg) = self.cg.take()
            && let Err(e) = cg.destroy_all()
        {
            eprintln!("cgroup cleanup failed: {e}");
        }
    }
}

pub fn shell(script: &str) -> CommandInfo {
    CommandInfo {
        shell: Some(true),
        value: Some(script.to_owned()),
        ..Default::default()
    }
}

pub fn config(script: &str) -> ContainerConfig {
    ContainerConfig {
        command_info: shell(script),
        ..Default::default()
    }
}

pub fn scalar(name: &str, value: f64) -> Resource {
    Resource {
        name: name.to_owned(),
        r#type: value::Type::Scalar as i32,
        scalar: Some(value::Scalar { value }),
        ..Default::default()
    }
}

pub fn limit(value: f64) -> value::Scalar {
    value::Scalar { value }
}

/// A nested container with its own cgroups (`share_cgroups = false`).
pub fn own_cgroups(mut c: ContainerConfig) -> ContainerConfig {
    let info = c.container_info.get_or_insert_with(ContainerInfo::default);
    info.linux_info
        .get_or_insert_with(LinuxInfo::default)
        .share_cgroups = Some(false);
    c
}

pub fn sandbox_volume(
    kind: SandboxPathType,
    path: &str,
    container_path: &str,
    mode: VolumeMode,
) -> Volume {
    Volume {
        container_path: container_path.to_owned(),
        mode: mode as i32,
        source: Some(Source {
            r#type: Some(SourceType::SandboxPath as i32),
            sandbox_path: Some(SandboxPath {
                r#type: Some(kind as i32),
                path: path.to_owned(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn with_volumes(mut c: ContainerConfig, volumes: Vec<Volume>) -> ContainerConfig {
    c.container_info
        .get_or_insert_with(ContainerInfo::default)
        .volumes
        .extend(volumes);
    c
}

pub fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `path` exists (up to `timeout`).
pub fn wait_for_file(path: &Path, timeout: Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
