//! Nesting-aware isolators with Mesos' `mesos::slave::Isolator` lifecycle
//! (include/mesos/slave/isolator.hpp), and a [`Composite`] that drives a list
//! of them the way Mesos' containerizer does.
//!
//! # Lifecycle (per container)
//!
//! ```text
//! recover(states, orphans)        once, at agent start
//! prepare(id, config)             in isolator order → merged ContainerLaunchInfo
//!   launcher forks the helper (blocked)
//! watch(id)                       pollable limitation (OOM …)
//! isolate(id, pid)                in parallel, one thread per isolator
//!   command runs … exits or is destroyed
//! cleanup(id)                     reverse order; no-op for unknown ids
//! ```
//!
//! Mesos' futures become blocking calls: the C++ shim wraps each call in a
//! `process::Future` (e.g. with `process::async`), and a limitation is
//! observed by polling [`Watch::fd`] and calling [`Watch::check`].
//!
//! # Isolators
//!
//! | name | file | nesting |
//! |---|---|---|
//! | `cgroups` | [`cgroups`] | own cgroup nested under the parent's, or shares it |
//! | `namespaces` | [`namespace_policy`] | pid, ipc, uts, net entered/cloned as Mesos' isolators do |
//! | `filesystem/linux` | [`filesystem`] | own mount namespace for nested containers |
//! | `volume/sandbox_path` | [`volume`] | PARENT/SELF bind mounts, escapes refused |
//! | `environment/credentials` | [`environment`] | executor credentials for nested containers |
//! | `hardening` | [`hardening`] | no_new_privs, bounding caps, masked paths |
//! | `disk/du` | [`disk`] | sandbox usage without shared volumes |
//! | `seccomp` | [`seccomp`] | own filter, stacked on the parent's |
//!
//! Build the composite from module parameters with [`Composite::from_parameters`]
//! (see [`params`] for the keys).
//!
//! # How an agent drives it
//!
//! ```no_run
//! use nestguard::isolation::isolator::{Composite, Isolator, IsolatorParams};
//! use nestguard::isolation::{Launcher, LauncherOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let (id, config): (nestguard::proto::mesos::ContainerId, nestguard::proto::mesos::slave::ContainerConfig) = Default::default();
//! let params = IsolatorParams::parse([("cgroups_pids_max", "512")])?;
//! let isolators = Composite::from_parameters(&params)?;
//! // Processes join their cgroups before they run, and die through them.
//! let launcher = match isolators.cgroups() {
//!     Some(cg) => Launcher::with_cgroups(LauncherOptions::new("/var/run/nestguard"), cg)?,
//!     None => Launcher::new(LauncherOptions::new("/var/run/nestguard"))?,
//! };
//! isolators.recover(&[], &[])?; // at start: states and orphans
//! // Per container, its sandbox (config.directory) already created:
//! let mut info = isolators.prepare(&id, &config)?.unwrap_or_default();
//! info.command = Some(config.command_info.clone());
//! let sandbox = std::path::Path::new(&config.directory);
//! let pid = launcher.launch(&id, &info, config.container_info.as_ref(), sandbox)?;
//! let mut watch = isolators.watch_all(&id)?; // poll watch.fd(), then watch.check()
//! isolators.isolate(&id, u32::try_from(pid)?)?;
//! // … on exit or a limitation (destroy with its reason):
//! if let Some(limitation) = watch.check()? { /* ContainerTermination.reason */ }
//! launcher.destroy(&id)?;
//! isolators.cleanup(&id)?;
//! # Ok(()) }
//! ```

/// The head of an [`Isolator`] impl for an isolator that serves every
/// container, nested and standalone alike: its name, and `true` for both
/// `supports_*`. With `recover_sandboxes`, `recover` registers the surviving
/// containers' sandboxes again in `self.sandboxes` (the isolators that find
/// a container's files by its sandbox).
macro_rules! serves_all_containers {
    ($name:literal) => {
        fn name(&self) -> &'static str {
            $name
        }

        fn supports_nesting(&self) -> bool {
            true
        }

        fn supports_standalone(&self) -> bool {
            true
        }
    };
    ($name:literal, recover_sandboxes) => {
        serves_all_containers!($name);

        fn recover(&self, states: &[ContainerState], _orphans: &[ContainerId]) -> Result<()> {
            self.sandboxes.insert_recovered(states);
            Ok(())
        }
    };
}

pub mod cgroups;
pub mod composite;
pub mod disk;
pub mod environment;
mod error;
pub mod exec_stage;
mod exec_stage_posix;
pub mod filesystem;
pub mod hardening;
pub mod namespace_policy;
pub mod params;
pub mod seccomp;
pub mod user_namespace;
pub mod volume;
mod watch;

use std::collections::BTreeMap;

pub use composite::{Composite, merge_launch_info};
pub use error::{IsolatorError, Result};
pub use params::IsolatorParams;
pub use watch::{LimitationSource, Watch};

use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerState};
use crate::proto::mesos::{ContainerId, ContainerStatus, Resource, ResourceStatistics, value};

/// Resource limits as Mesos passes them to `update` and in
/// `ContainerConfig.limits` (`"cpus"`, `"mem"` → scalar; `inf` = no limit).
pub type ResourceLimits = BTreeMap<String, value::Scalar>;

/// One isolator: Mesos' `mesos::slave::Isolator` with blocking calls. Every
/// default matches Mesos' default implementation. Implementations are
/// shared between threads (`isolate` runs in parallel).
pub trait Isolator: Send + Sync {
    /// The name used in the `isolation` parameter.
    fn name(&self) -> &'static str;

    /// Whether nested containers get this isolator (Mesos: skipped entirely
    /// for them otherwise).
    fn supports_nesting(&self) -> bool {
        false
    }

    /// Whether standalone containers (and containers nested under one) get
    /// this isolator.
    fn supports_standalone(&self) -> bool {
        false
    }

    /// At agent start: `states` are the containers that survived, `orphans`
    /// the ones the agent will destroy (after which `cleanup` is called).
    fn recover(&self, _states: &[ContainerState], _orphans: &[ContainerId]) -> Result<()> {
        Ok(())
    }

    /// Before the container's processes exist: resources to set up and what
    /// the launcher must do (namespaces, mounts, environment …).
    fn prepare(
        &self,
        _id: &ContainerId,
        _config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        Ok(None)
    }

    /// The container's first process exists (`pid` in the host's pid
    /// namespace) and waits for the go-ahead.
    fn isolate(&self, _id: &ContainerId, _pid: u32) -> Result<()> {
        Ok(())
    }

    /// A source of limitations (OOM …) for the container, or `None` when
    /// this isolator never reports one (Mesos: a future never set).
    fn watch(&self, _id: &ContainerId) -> Result<Option<Box<dyn LimitationSource>>> {
        Ok(None)
    }

    /// New requests and limits (Mesos calls this for top-level containers).
    fn update(
        &self,
        _id: &ContainerId,
        _requests: &[Resource],
        _limits: &ResourceLimits,
    ) -> Result<()> {
        Ok(())
    }

    /// Statistics; the composite merges the fields each isolator sets.
    fn usage(&self, _id: &ContainerId) -> Result<ResourceStatistics> {
        Ok(ResourceStatistics::default())
    }

    /// Status; the composite merges the fields each isolator sets.
    fn status(&self, _id: &ContainerId) -> Result<ContainerStatus> {
        Ok(ContainerStatus::default())
    }

    /// Releases everything made for the container. Called once all its
    /// processes are gone; must be a no-op for an unknown container.
    fn cleanup(&self, _id: &ContainerId) -> Result<()> {
        Ok(())
    }
}

/// `containerConfig.container_info().linux_info()` helpers shared by the
/// isolators.
pub(crate) fn linux_info(config: &ContainerConfig) -> Option<&crate::proto::mesos::LinuxInfo> {
    config
        .container_info
        .as_ref()
        .and_then(|c| c.linux_info.as_ref())
}

/// True for a DEBUG-class container (`ContainerClass::DEBUG`).
pub(crate) fn is_debug(config: &ContainerConfig) -> bool {
    config.container_class == Some(crate::proto::mesos::slave::ContainerClass::Debug as i32)
}
