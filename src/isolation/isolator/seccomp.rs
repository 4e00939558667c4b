//! The `seccomp` isolator (Mesos' `linux/seccomp`): every container's
//! command runs under a seccomp filter.
//!
//! * Default policy: Docker's default profile
//!   ([`crate::isolation::seccomp::default_profile`]), or the operator's
//!   `seccomp_profile_name` from `seccomp_config_dir`.
//! * A container picks another profile with `LinuxInfo.seccomp.profile_name`,
//!   a file name in `seccomp_config_dir` (Docker's JSON format, as Mesos).
//! * `LinuxInfo.seccomp.unconfined` runs it without a filter — only when
//!   the operator sets `seccomp_allow_unconfined` (Mesos always allows it).
//! * Nested containers get their own filter (the kernel stacks it on the
//!   parent's, so a child is never less confined than its parent).
//!
//! Stricter than Mesos: a profile name is a plain file name (no `/`, no
//! `..`: Mesos joins it to the directory as given); profiles are parsed once
//! and re-read only when the file changes; the filter is compiled by the
//! launcher once per profile and capability set.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::error::{IsolatorError, Result};
use super::{Isolator, linux_info};
use crate::container_id::to_dotted;
use crate::isolation::seccomp::{self, docker_json};
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::seccomp::ContainerSeccompProfile;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo};

/// A parsed profile file and the file identity it was read from.
#[derive(Debug)]
struct Cached {
    stamp: (u64, u64, i64, i64, u64),
    profile: Arc<ContainerSeccompProfile>,
}

/// The `seccomp` isolator.
#[derive(Debug)]
pub struct SeccompIsolator {
    config_dir: Option<PathBuf>,
    default: Arc<ContainerSeccompProfile>,
    default_name: String,
    allow_unconfined: bool,
    profiles: Mutex<HashMap<String, Cached>>,
}

/// Mesos' message for `unconfined` with a profile name.
const BOTH: &str = "Invalid Seccomp configuration: 'profile_name' given even though 'unconfined' Seccomp setting is enabled";

fn param(key: &str, expected: &'static str, found: String) -> IsolatorError {
    IsolatorError::Parameter {
        key: key.to_owned(),
        expected,
        found,
    }
}

impl SeccompIsolator {
    /// Builds the isolator; a default profile that cannot be read or
    /// compiled stops the module from loading.
    pub fn new(
        config_dir: Option<PathBuf>,
        profile_name: Option<String>,
        allow_unconfined: bool,
    ) -> Result<Self> {
        let mut isolator = Self {
            config_dir,
            default: Arc::new(seccomp::default_profile::profile()),
            default_name: "nestguard default (Docker's)".to_owned(),
            allow_unconfined,
            profiles: Mutex::new(HashMap::new()),
        };
        if let Some(name) = profile_name {
            isolator.default = isolator
                .load(&name)
                .map_err(|e| param("seccomp_profile_name", "a loadable profile", e.to_string()))?;
            isolator.default_name = name;
        }
        // Compiling now proves the default works on this machine.
        seccomp::compile(&isolator.default, u64::MAX).map_err(|e| {
            param(
                "seccomp_profile_name",
                "a profile that compiles",
                e.to_string(),
            )
        })?;
        tracing::info!(profile = %isolator.default_name, allow_unconfined, "seccomp isolator ready");
        Ok(isolator)
    }

    /// Reads `name` from the configuration directory (cached while the file
    /// is unchanged).
    fn load(&self, name: &str) -> Result<Arc<ContainerSeccompProfile>> {
        let dir = self.config_dir.as_ref().ok_or_else(|| {
            IsolatorError::Invalid(format!(
                "seccomp profile '{name}' asked for, but no seccomp_config_dir is configured"
            ))
        })?;
        if name.is_empty()
            || name.contains('/')
            || name == "."
            || name == ".."
            || name.contains('\0')
        {
            return Err(IsolatorError::Invalid(format!(
                "seccomp profile name '{}' must be a file name in seccomp_config_dir",
                name.escape_debug()
            )));
        }
        let path = dir.join(name);
        let meta = std::fs::metadata(&path).map_err(|e| {
            IsolatorError::Invalid(format!(
                "seccomp profile '{name}' ({}): {e}",
                path.display()
            ))
        })?;
        if !meta.is_file() || meta.len() > docker_json::MAX_PROFILE_BYTES {
            return Err(IsolatorError::Invalid(format!(
                "seccomp profile '{name}' ({}) is not a regular file of at most {} bytes",
                path.display(),
                docker_json::MAX_PROFILE_BYTES
            )));
        }
        let stamp = (
            meta.dev(),
            meta.ino(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.len(),
        );
        let mut profiles = self.profiles.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = profiles.get(name).filter(|c| c.stamp == stamp) {
            return Ok(c.profile.clone());
        }
        let text = std::fs::read_to_string(&path).map_err(IsolatorError::io("read", &path))?;
        let profile = docker_json::parse(&text, &path.display().to_string())
            .map_err(|e| IsolatorError::Invalid(e.to_string()))?;
        // Refused here, at prepare, rather than by the launcher.
        seccomp::compile(&profile, u64::MAX).map_err(|e| IsolatorError::Invalid(e.to_string()))?;
        let profile = Arc::new(profile);
        profiles.insert(
            name.to_owned(),
            Cached {
                stamp,
                profile: profile.clone(),
            },
        );
        Ok(profile)
    }
}

impl Isolator for SeccompIsolator {
    serves_all_containers!("seccomp");

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        let (profile, name) = match linux_info(config).and_then(|l| l.seccomp.as_ref()) {
            None => (self.default.clone(), self.default_name.as_str()),
            Some(s) => match (s.unconfined.unwrap_or(false), s.profile_name.as_deref()) {
                (true, Some(_)) => return Err(IsolatorError::Invalid(BOTH.to_owned())),
                (true, None) if self.allow_unconfined => {
                    tracing::info!(container = %to_dotted(id), "seccomp not applied (unconfined)");
                    return Ok(None);
                }
                (true, None) => {
                    return Err(IsolatorError::Invalid(format!(
                        "container '{}' asks to run without seccomp (LinuxInfo.seccomp.unconfined), which the \
                         operator does not allow (isolator parameter seccomp_allow_unconfined)",
                        to_dotted(id)
                    )));
                }
                (false, Some(name)) => (self.load(name)?, name),
                (false, None) => {
                    return Err(IsolatorError::Invalid(
                        "Missing Seccomp profile name".to_owned(),
                    ));
                }
            },
        };
        tracing::debug!(container = %to_dotted(id), profile = %name, "seccomp profile");
        Ok(Some(ContainerLaunchInfo {
            seccomp_profile: Some((*profile).clone()),
            ..ContainerLaunchInfo::default()
        }))
    }
}
