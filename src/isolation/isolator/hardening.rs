//! The `hardening` isolator, for tenants that need more than plain
//! containers: `no_new_privileges`, a bounding capability set reduced to a
//! configured allow-list, and masked paths.
//!
//! * Masked paths (files covered by `/dev/null`, directories by an empty
//!   read-only tmpfs, done by the launcher) are only kept by the composite
//!   when the container has its own mount namespace: masking in a shared
//!   one would hide the host's (or the parent's) entries.
//!
//! * A container may ask for other capabilities through Mesos' fields
//!   (`LinuxInfo.effective_capabilities`, and `bounding_capabilities` for
//!   the bounding set): every one must be in `hardening_allowed_capabilities`
//!   (by default the same set), else the launch is refused naming the field
//!   and the capability. The effective set asked for is granted as Mesos
//!   grants it (effective, permitted, inheritable and ambient, so a non-root
//!   command keeps it); the bounding set is the one asked for, else the
//!   effective set, else the default set.
//!
//! Under a real Mesos 1.11 agent these fields never reach Mesos' helper
//! (it aborts on them when `cap_last_cap` > 37): nestguard's exec stage
//! applies them ([`super::exec_stage`]).

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
    /// The bounding set every container gets (`None`: untouched).
    pub capabilities: Option<BTreeSet<i32>>,
    /// What a container may ask for (`None`: anything).
    pub allowed: Option<BTreeSet<i32>>,
    /// Paths to mask.
    pub masked_paths: Vec<String>,
}

impl Default for HardeningIsolator {
    fn default() -> Self {
        let docker: BTreeSet<i32> = DEFAULT_CAPABILITIES.iter().map(|c| *c as i32).collect();
        Self {
            no_new_privileges: true,
            capabilities: Some(docker.clone()),
            allowed: Some(docker),
            masked_paths: DEFAULT_MASKED_PATHS
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
        }
    }
}

/// The kernel's last capability (`/proc/sys/kernel/cap_last_cap`).
pub fn kernel_last_cap() -> Result<i32> {
    let path = "/proc/sys/kernel/cap_last_cap";
    let text = std::fs::read_to_string(path).map_err(IsolatorError::io("read", path))?;
    text.trim().parse().map_err(|_| {
        IsolatorError::Invalid(format!("{path} holds '{}', not a number", text.trim()))
    })
}

/// A capability's Mesos name (`SYS_PTRACE`), or its number.
pub fn cap_name(value: i32) -> String {
    Capability::try_from(value).map_or_else(|_| value.to_string(), |c| c.as_str_name().to_owned())
}

impl HardeningIsolator {
    /// `asked` (a field of `LinuxInfo`) within the allowed set, or the
    /// refusal naming the field and the capability.
    fn check_asked(
        &self,
        id: &ContainerId,
        field: &str,
        asked: Option<&CapabilityInfo>,
    ) -> Result<Option<BTreeSet<i32>>> {
        let Some(asked) = asked else { return Ok(None) };
        let set: BTreeSet<i32> = asked.capabilities.iter().copied().collect();
        if let Some(allowed) = &self.allowed
            && let Some(bad) = set.difference(allowed).next()
        {
            return Err(IsolatorError::Invalid(format!(
                "container '{}': LinuxInfo.{field} asks for capability {}, which the operator \
                 does not allow (isolator parameter hardening_allowed_capabilities)",
                to_dotted(id),
                cap_name(*bad)
            )));
        }
        Ok(Some(set))
    }
}

impl Isolator for HardeningIsolator {
    serves_all_containers!("hardening");

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
        let linux = linux_info(config);
        // `capability_info` is Mesos' deprecated spelling of the effective set.
        #[allow(deprecated)]
        let effective = self.check_asked(
            id,
            "effective_capabilities",
            linux.and_then(|l| {
                l.effective_capabilities
                    .as_ref()
                    .or(l.capability_info.as_ref())
            }),
        )?;
        let bounding = self.check_asked(
            id,
            "bounding_capabilities",
            linux.and_then(|l| l.bounding_capabilities.as_ref()),
        )?;
        let bounding = bounding
            .or_else(|| effective.clone())
            .or_else(|| self.capabilities.clone());
        info.bounding_capabilities = bounding.map(|set| CapabilityInfo {
            capabilities: set.into_iter().collect(),
        });
        info.effective_capabilities = effective.map(|set| CapabilityInfo {
            capabilities: set.into_iter().collect(),
        });
        Ok(Some(info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::slave::ContainerConfig;
    use crate::proto::mesos::{ContainerInfo, LinuxInfo};

    fn id() -> ContainerId {
        ContainerId {
            value: "c".into(),
            parent: None,
        }
    }

    fn asking(effective: &[Capability]) -> ContainerConfig {
        ContainerConfig {
            container_info: Some(ContainerInfo {
                linux_info: Some(LinuxInfo {
                    effective_capabilities: Some(CapabilityInfo {
                        capabilities: effective.iter().map(|c| *c as i32).collect(),
                    }),
                    ..LinuxInfo::default()
                }),
                ..ContainerInfo::default()
            }),
            ..ContainerConfig::default()
        }
    }

    #[test]
    fn default_set_for_a_container_that_asks_nothing() {
        let info = HardeningIsolator::default()
            .prepare(&id(), &ContainerConfig::default())
            .unwrap()
            .unwrap();
        let want: Vec<i32> = DEFAULT_CAPABILITIES.iter().map(|c| *c as i32).collect();
        let mut got = info.bounding_capabilities.unwrap().capabilities;
        got.sort();
        let mut want = want;
        want.sort();
        assert_eq!(got, want);
        assert!(info.effective_capabilities.is_none());
        assert_eq!(info.no_new_privileges, Some(true));
        assert_eq!(info.masked_paths.len(), DEFAULT_MASKED_PATHS.len());
    }

    #[test]
    fn a_capability_beyond_the_allowed_set_is_refused_naming_it() {
        let h = HardeningIsolator::default();
        let e = h
            .prepare(&id(), &asking(&[Capability::SysPtrace]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("effective_capabilities")
                && e.contains("SYS_PTRACE")
                && e.contains("hardening_allowed_capabilities"),
            "{e}"
        );
        // Allowed by the operator: granted as effective and bounding.
        let mut allowed = h.allowed.clone().unwrap();
        allowed.insert(Capability::SysPtrace as i32);
        let h = HardeningIsolator {
            allowed: Some(allowed),
            ..h
        };
        let info = h
            .prepare(&id(), &asking(&[Capability::SysPtrace, Capability::Kill]))
            .unwrap()
            .unwrap();
        let want = vec![Capability::Kill as i32, Capability::SysPtrace as i32];
        assert_eq!(info.effective_capabilities.unwrap().capabilities, want);
        assert_eq!(info.bounding_capabilities.unwrap().capabilities, want);
    }

    #[test]
    fn untouched_capabilities_emit_no_field() {
        let h = HardeningIsolator {
            capabilities: None,
            allowed: None,
            ..HardeningIsolator::default()
        };
        let info = h
            .prepare(&id(), &ContainerConfig::default())
            .unwrap()
            .unwrap();
        assert!(info.bounding_capabilities.is_none() && info.effective_capabilities.is_none());
    }
}
