//! The `namespaces` isolator: which namespaces a container enters (its
//! parent's) and which it clones, as Mesos' `namespaces/pid`,
//! `namespaces/ipc` and the network isolator set them for containers
//! without their own network:
//!
//! | | top-level | nested | nested DEBUG |
//! |---|---|---|---|
//! | pid | clone, unless `share_pid_namespace` | enter + clone, unless `share_pid_namespace` | enter |
//! | ipc (unset) | clone | enter | enter |
//! | ipc PRIVATE | clone + own `/dev/shm` | clone + own `/dev/shm` | refused |
//! | ipc SHARE_PARENT | — (agent's) | enter | enter |
//! | net | — (host's; network isolators) | enter (the executor's) | enter |
//! | uts | clone | enter + clone | enter |
//!
//! UTS is stricter than Mesos: there a container on the host network (and
//! every nested container, through the network isolator) shares the host's
//! UTS namespace unless it names a hostname, so a root container could set
//! the host's hostname or `kernel.domainname`. Here every container but a
//! DEBUG one gets its own; a nested one enters its parent's first, so its
//! own starts as a copy of the parent's hostname and domainname.
//!
//! Sharing the agent's pid namespace (a top-level container with
//! `share_pid_namespace`) is refused unless the operator allows it
//! (`disallow_sharing_agent_pid_namespace=false`); Mesos' flag defaults to
//! allowing it. Such a container would see every process of the host and
//! read other tenants' environments through `/proc`.
//!
//! The mount namespace is the `filesystem/linux` isolator's. A PRIVATE
//! `/dev/shm` is a tmpfs mounted inside the container's own mount namespace
//! (Mesos mounts it on the host under the runtime directory and binds it;
//! ours needs no host-side cleanup). Limitation: with SHARE_PARENT a nested
//! container shares the parent's IPC namespace (System V IPC, POSIX message
//! queues) but not a PRIVATE parent's `/dev/shm` tmpfs.

use super::error::{IsolatorError, Result};
use super::{Isolator, is_debug, linux_info};
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::linux_info::IpcMode;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerMountInfo};

/// The `namespaces` isolator. Stateless.
#[derive(Debug, Clone)]
pub struct NamespacesIsolator {
    /// Refuse `share_pid_namespace` for top-level containers (Mesos'
    /// `--disallow_sharing_agent_pid_namespace`); on by default.
    pub disallow_sharing_agent_pid_namespace: bool,
}

impl Default for NamespacesIsolator {
    fn default() -> Self {
        Self {
            disallow_sharing_agent_pid_namespace: true,
        }
    }
}

fn shm_mount(size_mb: Option<u32>) -> ContainerMountInfo {
    let options = match size_mb {
        Some(mb) => format!("mode=1777,size={}", u64::from(mb) * 1024 * 1024),
        None => "mode=1777".to_owned(),
    };
    ContainerMountInfo {
        source: Some("tmpfs".into()),
        target: "/dev/shm".into(),
        r#type: Some("tmpfs".into()),
        flags: Some(
            u32::try_from(libc::MS_NOSUID | libc::MS_NODEV | libc::MS_STRICTATIME).unwrap_or(0),
        ),
        options: Some(options),
    }
}

impl Isolator for NamespacesIsolator {
    serves_all_containers!("namespaces");

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        let mut info = ContainerLaunchInfo::default();
        let linux = linux_info(config);
        let nested = id.parent.is_some();
        let debug = nested && is_debug(config);
        let share_pid = linux.and_then(|l| l.share_pid_namespace).unwrap_or(false);

        // pid
        if nested {
            info.enter_namespaces.push(libc::CLONE_NEWPID);
            if !debug && !share_pid {
                info.clone_namespaces.push(libc::CLONE_NEWPID);
            }
        } else if share_pid {
            if self.disallow_sharing_agent_pid_namespace {
                return Err(IsolatorError::Invalid(
                    "Sharing agent pid namespace with top-level container is not allowed".into(),
                ));
            }
        } else {
            info.clone_namespaces.push(libc::CLONE_NEWPID);
        }

        // ipc
        let ipc_mode = linux
            .and_then(|l| l.ipc_mode)
            .map(|m| IpcMode::try_from(m).unwrap_or(IpcMode::Unknown));
        let shm_size = linux.and_then(|l| l.shm_size);
        if shm_size.is_some() && ipc_mode != Some(IpcMode::Private) {
            return Err(IsolatorError::Invalid(
                "Only support specifying the size of /dev/shm when the IPC mode is `PRIVATE`"
                    .into(),
            ));
        }
        match (ipc_mode, nested, debug) {
            (Some(IpcMode::Unknown), _, _) => {
                return Err(IsolatorError::Invalid("Unknown IPC mode".into()));
            }
            (Some(IpcMode::Private), _, true) => {
                return Err(IsolatorError::Invalid(
                    "Private IPC mode is not supported for DEBUG containers".into(),
                ));
            }
            (Some(IpcMode::Private), _, false) => {
                info.clone_namespaces.push(libc::CLONE_NEWIPC);
                info.mounts.push(shm_mount(shm_size));
            }
            (None, false, _) => info.clone_namespaces.push(libc::CLONE_NEWIPC),
            (None | Some(IpcMode::ShareParent), true, _) => {
                info.enter_namespaces.push(libc::CLONE_NEWIPC);
            }
            (Some(IpcMode::ShareParent), false, _) => {}
        }

        // net and uts
        if nested {
            info.enter_namespaces.push(libc::CLONE_NEWNET);
            info.enter_namespaces.push(libc::CLONE_NEWUTS);
        }
        if !debug {
            info.clone_namespaces.push(libc::CLONE_NEWUTS);
        }
        Ok(Some(info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_id::parse_dotted;
    use crate::proto::mesos::{ContainerInfo, LinuxInfo};

    fn config(linux: LinuxInfo) -> ContainerConfig {
        ContainerConfig {
            container_info: Some(ContainerInfo {
                linux_info: Some(linux),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn nested_containers_enter_the_executors_network_and_clone_pid() {
        let iso = NamespacesIsolator::default();
        let id = parse_dotted("e.t").unwrap();
        let info = iso
            .prepare(&id, &ContainerConfig::default())
            .unwrap()
            .unwrap();
        for ns in [
            libc::CLONE_NEWPID,
            libc::CLONE_NEWNET,
            libc::CLONE_NEWIPC,
            libc::CLONE_NEWUTS,
        ] {
            assert!(info.enter_namespaces.contains(&ns), "{ns:#x}");
        }
        assert_eq!(
            info.clone_namespaces,
            vec![libc::CLONE_NEWPID, libc::CLONE_NEWUTS]
        );

        let shared = config(LinuxInfo {
            share_pid_namespace: Some(true),
            ipc_mode: Some(IpcMode::Private as i32),
            shm_size: Some(8),
            ..Default::default()
        });
        let info = iso.prepare(&id, &shared).unwrap().unwrap();
        assert_eq!(
            info.clone_namespaces,
            vec![libc::CLONE_NEWIPC, libc::CLONE_NEWUTS]
        );
        assert_eq!(info.mounts[0].target, "/dev/shm");
        assert_eq!(
            info.mounts[0].options.as_deref(),
            Some("mode=1777,size=8388608")
        );
    }

    #[test]
    fn mesos_ipc_errors() {
        let iso = NamespacesIsolator::default();
        let id = parse_dotted("e.t").unwrap();
        let bad = config(LinuxInfo {
            shm_size: Some(8),
            ..Default::default()
        });
        assert_eq!(
            iso.prepare(&id, &bad).unwrap_err().to_string(),
            "Only support specifying the size of /dev/shm when the IPC mode is `PRIVATE`"
        );
        let mut debug = config(LinuxInfo {
            ipc_mode: Some(IpcMode::Private as i32),
            ..Default::default()
        });
        debug.container_class = Some(crate::proto::mesos::slave::ContainerClass::Debug as i32);
        assert_eq!(
            iso.prepare(&id, &debug).unwrap_err().to_string(),
            "Private IPC mode is not supported for DEBUG containers"
        );
    }

    #[test]
    fn top_level_clones_pid_and_ipc() {
        let iso = NamespacesIsolator::default();
        let id = parse_dotted("e").unwrap();
        let info = iso
            .prepare(&id, &ContainerConfig::default())
            .unwrap()
            .unwrap();
        assert!(info.enter_namespaces.is_empty());
        assert_eq!(
            info.clone_namespaces,
            vec![libc::CLONE_NEWPID, libc::CLONE_NEWIPC, libc::CLONE_NEWUTS]
        );
        let shared = config(LinuxInfo {
            share_pid_namespace: Some(true),
            ..Default::default()
        });
        assert_eq!(
            iso.prepare(&id, &shared).unwrap_err().to_string(),
            "Sharing agent pid namespace with top-level container is not allowed"
        );
        let allowing = NamespacesIsolator {
            disallow_sharing_agent_pid_namespace: false,
        };
        let info = allowing.prepare(&id, &shared).unwrap().unwrap();
        assert!(!info.clone_namespaces.contains(&libc::CLONE_NEWPID));
    }
}
