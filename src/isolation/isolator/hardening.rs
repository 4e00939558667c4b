//! The `hardening` isolator, for tenants that need more than plain
//! containers: `no_new_privileges`, a bounding capability set reduced to a
//! configured allow-list, and masked paths.
//!
//! * A container may ask for fewer capabilities
//!   (`LinuxInfo.bounding_capabilities`, else `effective_capabilities`); one
//!   outside the allow-list is refused, never silently dropped.
//! * Masked paths (files covered by `/dev/null`, directories by an empty
//!   read-only tmpfs, done by the launcher) are only kept by the composite
//!   when the container has its own mount namespace: masking in a shared
//!   one would hide the host's (or the parent's) entries.

use std::collections::BTreeSet;

use super::error::{IsolatorError, Result};
use super::{Isolator, linux_info};
use crate::container_id::to_dotted;
use crate::proto::mesos::capability_info::Capability;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo};
use crate::proto::mesos::{CapabilityInfo, ContainerId};

/// Paths masked by default (Mesos' and Docker's list for containers).
pub const DEFAULT_MASKED_PATHS: [&str; 9] = [
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/sys/firmware",
];

/// Docker's default capability set: what a plain container process gets.
pub const DEFAULT_CAPABILITIES: [Capability; 14] = [
    Capability::Chown,
    Capability::DacOverride,
    Capability::Fsetid,
    Capability::Fowner,
    Capability::Mknod,
    Capability::NetRaw,
    Capability::Setgid,
    Capability::Setuid,
    Capability::Setfcap,
    Capability::Setpcap,
    Capability::NetBindService,
    Capability::SysChroot,
    Capability::Kill,
    Capability::AuditWrite,
];

/// The `hardening` isolator's settings.
#[derive(Debug, Clone)]
pub struct HardeningIsolator {
    /// Set `no_new_privileges`.
    pub no_new_privileges: bool,
    /// The bounding set allowed (`None`: capabilities untouched).
    pub capabilities: Option<BTreeSet<i32>>,
    /// Paths to mask.
    pub masked_paths: Vec<String>,
}

impl Default for HardeningIsolator {
    fn default() -> Self {
        Self {
            no_new_privileges: true,
            capabilities: Some(DEFAULT_CAPABILITIES.iter().map(|c| *c as i32).collect()),
            masked_paths: DEFAULT_MASKED_PATHS
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
        }
    }
}

fn cap_name(value: i32) -> String {
    Capability::try_from(value).map_or_else(|_| value.to_string(), |c| c.as_str_name().to_owned())
}

impl Isolator for HardeningIsolator {
    fn name(&self) -> &'static str {
        "hardening"
    }

    fn supports_nesting(&self) -> bool {
        true
    }

    fn supports_standalone(&self) -> bool {
        true
    }

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        let mut info = ContainerLaunchInfo {
            no_new_privileges: self.no_new_privileges.then_some(true),
            masked_paths: self.masked_paths.clone(),
            ..ContainerLaunchInfo::default()
        };
        if let Some(allowed) = &self.capabilities {
            let linux = linux_info(config);
            let requested = linux.and_then(|l| {
                l.bounding_capabilities
                    .as_ref()
                    .or(l.effective_capabilities.as_ref())
            });
            let set: BTreeSet<i32> = match requested {
                Some(r) => {
                    let asked: BTreeSet<i32> = r.capabilities.iter().copied().collect();
                    if let Some(bad) = asked.difference(allowed).next() {
                        return Err(IsolatorError::Invalid(format!(
                            "container '{}' asks for capability {} which the hardening \
                             isolator does not allow",
                            to_dotted(id),
                            cap_name(*bad)
                        )));
                    }
                    asked
                }
                None => allowed.clone(),
            };
            info.bounding_capabilities = Some(CapabilityInfo {
                capabilities: set.into_iter().collect(),
            });
        }
        Ok(Some(info))
    }
}
