//! The `filesystem/linux` isolator (the part nestguard needs): every
//! container gets its own mount namespace, so the mounts other isolators
//! ask for (volumes, `/dev/shm`, masked paths) never reach the host; a
//! DEBUG container enters its parent's instead, as in Mesos.
//!
//! Nested sandboxes live at `<parent sandbox>/containers/<child>` (Mesos'
//! layout); prepare refuses a nested container whose sandbox is elsewhere,
//! since volume sharing and disk accounting rely on it. Container images
//! (`rootfs`) are refused rather than ignored under nestguard's launcher;
//! under Mesos' launcher, Mesos' provisioner and its own `filesystem/linux`
//! make the image's tree and mounts, and nestguard's exec stage enters it
//! (`exec_stage::rootfs`), so a rootfs is accepted there.

use std::path::Path;
use std::sync::Arc;

use super::error::{IsolatorError, Result};
use super::volume::SandboxRegistry;
use super::{Isolator, is_debug};
use crate::container_id::to_dotted;
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerState};

/// The `filesystem/linux` isolator.
#[derive(Debug)]
pub struct FilesystemIsolator {
    sandboxes: Arc<SandboxRegistry>,
    images: bool,
}

impl FilesystemIsolator {
    /// Records sandboxes in `sandboxes` (shared with the volume and disk
    /// isolators).
    pub fn new(sandboxes: Arc<SandboxRegistry>) -> Self {
        Self {
            sandboxes,
            images: false,
        }
    }

    /// Accepts containers with their own image (`rootfs`): under Mesos'
    /// launcher only (see the module doc).
    pub fn with_images(mut self, images: bool) -> Self {
        self.images = images;
        self
    }
}

impl Isolator for FilesystemIsolator {
    serves_all_containers!("filesystem/linux", recover_sandboxes);

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        if config.rootfs.is_some() && !self.images {
            return Err(IsolatorError::Invalid(format!(
                "container '{}': container images (rootfs) are not supported by filesystem/linux",
                to_dotted(id)
            )));
        }
        let sandbox = Path::new(&config.directory);
        if !sandbox.is_absolute() {
            return Err(IsolatorError::Invalid(format!(
                "container '{}': sandbox directory '{}' is not absolute",
                to_dotted(id),
                config.directory
            )));
        }
        if let Some(parent) = id.parent.as_deref()
            && let Some(parent_sandbox) = self.sandboxes.get(parent)
        {
            let expected = parent_sandbox.join("containers").join(&id.value);
            if expected != sandbox {
                return Err(IsolatorError::Invalid(format!(
                    "container '{}': sandbox '{}' is not '{}' (nested sandboxes live in their parent's)",
                    to_dotted(id),
                    sandbox.display(),
                    expected.display()
                )));
            }
        }
        self.sandboxes.insert(id, sandbox);
        let mut info = ContainerLaunchInfo::default();
        if id.parent.is_some() && is_debug(config) {
            info.enter_namespaces.push(libc::CLONE_NEWNS);
        } else {
            info.clone_namespaces.push(libc::CLONE_NEWNS);
        }
        Ok(Some(info))
    }

    fn cleanup(&self, id: &ContainerId) -> Result<()> {
        self.sandboxes.remove(id);
        Ok(())
    }
}
