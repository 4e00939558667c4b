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
//!
//! # Under a real Mesos 1.11 agent (`launcher=mesos`, set by the C++ shim)
//!
//! Mesos' launch helper (`mesos-containerizer launch`) builds its
//! capabilities manager whenever a launch carries `effective_capabilities`,
//! `bounding_capabilities` or a seccomp profile, and that manager gives up
//! when `/proc/sys/kernel/cap_last_cap` is at or above the 38 capabilities
//! 1.11 knows (`CAP_AUDIT_READ` = 37 is its last; kernels ≥ 5.8 add
//! `CAP_PERFMON`, `CAP_BPF`, `CAP_CHECKPOINT_RESTORE`): every such launch
//! dies ("Reached unreachable statement at capabilities.cpp"). Emitting only
//! the capabilities 1.11 knows does not help — the check is on the kernel,
//! not on the set — and there is no other channel through which Mesos'
//! launcher drops capabilities.
//!
//! So, fail closed: on such a kernel the module refuses to load while
//! `hardening_capabilities` restricts the set, and says why; the operator
//! either runs nestguard's launcher (which drops any capability the kernel
//! has, see [`crate::isolation::helper::command::Capabilities`]) or sets
//! `hardening_capabilities=*` to accept containers that keep their
//! capabilities (no_new_privileges and the masked paths still apply: Mesos
//! applies them without its capabilities manager). Silently launching
//! containers with every capability would be the permissive fallback the
//! project rules forbid; wrapping the command in a pre-exec step of ours
//! would need our binary inside every container's root file system. On
//! kernels up to `cap_last_cap` 37 the set is emitted, minus capabilities
//! above 37 (Mesos' conversion aborts on them; such a kernel has none).

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

/// The last capability Mesos 1.11 knows (`CAP_AUDIT_READ`).
pub const MESOS_1_11_LAST_CAP: i32 = 37;

/// The `hardening` isolator's settings.
#[derive(Debug, Clone)]
pub struct HardeningIsolator {
    /// Set `no_new_privileges`.
    pub no_new_privileges: bool,
    /// The bounding set allowed (`None`: capabilities untouched).
    pub capabilities: Option<BTreeSet<i32>>,
    /// Paths to mask.
    pub masked_paths: Vec<String>,
    /// The last capability number the launcher that runs the containers
    /// understands: `None` for nestguard's launcher (any),
    /// [`MESOS_1_11_LAST_CAP`] under Mesos' (see the module doc).
    pub launcher_last_cap: Option<i32>,
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
            launcher_last_cap: None,
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

impl HardeningIsolator {
    /// At module load: refuses a capability allow-list the launcher cannot
    /// apply on a kernel whose last capability is `cap_last_cap` (see the
    /// module doc), and logs what hardening does.
    pub fn check_launcher(&self, cap_last_cap: i32) -> Result<()> {
        match (self.launcher_last_cap, &self.capabilities) {
            (Some(last), Some(_)) if cap_last_cap > last => Err(IsolatorError::Parameter {
                key: "hardening_capabilities".into(),
                expected: "'*' under Mesos 1.11's launcher on this kernel: its launcher aborts \
                           on any capability field when cap_last_cap exceeds 37 (use nestguard's \
                           launcher to keep the allow-list)",
                found: format!("an allow-list, with cap_last_cap {cap_last_cap}"),
            }),
            (Some(_), None) => {
                tracing::warn!(
                    cap_last_cap,
                    no_new_privileges = self.no_new_privileges,
                    masked_paths = self.masked_paths.len(),
                    "hardening under Mesos' launcher: capabilities are left untouched \
                     (hardening_capabilities=*)"
                );
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The bounding set to emit: the allowed set, or the container's
    /// narrower request, without what the launcher does not understand.
    fn bounding_set(&self, allowed: &BTreeSet<i32>, asked: Option<BTreeSet<i32>>) -> BTreeSet<i32> {
        let mut set = asked.unwrap_or_else(|| allowed.clone());
        if let Some(last) = self.launcher_last_cap {
            set.retain(|c| c - 1000 <= last);
        }
        set
    }
}

fn cap_name(value: i32) -> String {
    Capability::try_from(value).map_or_else(|_| value.to_string(), |c| c.as_str_name().to_owned())
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
        if let Some(allowed) = &self.capabilities {
            let linux = linux_info(config);
            let requested = linux.and_then(|l| {
                l.bounding_capabilities
                    .as_ref()
                    .or(l.effective_capabilities.as_ref())
            });
            let asked = match requested {
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
                    Some(asked)
                }
                None => None,
            };
            let set = self.bounding_set(allowed, asked);
            info.bounding_capabilities = Some(CapabilityInfo {
                capabilities: set.into_iter().collect(),
            });
        }
        Ok(Some(info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::slave::ContainerConfig;

    fn emitted(h: &HardeningIsolator) -> Option<Vec<i32>> {
        let id = ContainerId {
            value: "c".into(),
            parent: None,
        };
        h.prepare(&id, &ContainerConfig::default())
            .unwrap()
            .unwrap()
            .bounding_capabilities
            .map(|c| c.capabilities)
    }

    fn with(caps: &[Capability], launcher_last_cap: Option<i32>) -> HardeningIsolator {
        HardeningIsolator {
            capabilities: Some(caps.iter().map(|c| *c as i32).collect()),
            launcher_last_cap,
            ..HardeningIsolator::default()
        }
    }

    #[test]
    fn mesos_launcher_on_a_kernel_with_cap_last_cap_40() {
        let allowed = [Capability::Chown, Capability::Kill, Capability::Bpf];
        // Mesos' launcher: an allow-list is refused at load, naming why.
        let mesos = with(&allowed, Some(MESOS_1_11_LAST_CAP));
        let e = mesos.check_launcher(40).unwrap_err().to_string();
        assert!(
            e.contains("hardening_capabilities")
                && e.contains("cap_last_cap 40")
                && e.contains("'*'"),
            "{e}"
        );
        // Capabilities untouched: loads, and emits no capability field.
        let untouched = HardeningIsolator {
            capabilities: None,
            launcher_last_cap: Some(MESOS_1_11_LAST_CAP),
            ..HardeningIsolator::default()
        };
        untouched.check_launcher(40).unwrap();
        assert_eq!(emitted(&untouched), None);
        let id = ContainerId {
            value: "c".into(),
            parent: None,
        };
        let info = untouched
            .prepare(&id, &ContainerConfig::default())
            .unwrap()
            .unwrap();
        assert!(info.effective_capabilities.is_none());
        assert_eq!(info.no_new_privileges, Some(true));
        // An older kernel: the set, without what 1.11 cannot convert.
        mesos.check_launcher(37).unwrap();
        assert_eq!(
            emitted(&mesos),
            Some(vec![Capability::Chown as i32, Capability::Kill as i32])
        );
        // nestguard's launcher: everything, whatever the kernel.
        let ours = with(&allowed, None);
        ours.check_launcher(40).unwrap();
        assert_eq!(
            emitted(&ours),
            Some(vec![
                Capability::Chown as i32,
                Capability::Kill as i32,
                Capability::Bpf as i32
            ])
        );
    }
}
