//! The `environment/credentials` isolator: a nested container gets its
//! executor's injected credentials (an executor JWT, or principal and
//! secret) in `ContainerLaunchInfo.environment`, computed by
//! [`Injector::nested_container_environment`] — the agent launches nested
//! containers with no environment of its own, and the executor's came from
//! the hook. Top-level containers get theirs from the hook, not here.
//!
//! The executor is `ContainerConfig.executor_info`, which Mesos copies from
//! the root container into nested configs; without it (after an agent
//! restart that lost the root's config) prepare fails rather than launch a
//! container that cannot reach the agent API. DEBUG containers are left
//! alone: Mesos starts them from their parent's environment already.
//!
//! Secret mode cannot work here: it injects the framework's authenticated
//! principal (`FrameworkInfo.principal`), which `ContainerConfig` does not
//! carry; the ExecutorInfo label `principal` is written by the framework and
//! is not trusted on its own. Such a prepare fails (the container does not
//! start) instead of handing out a principal the framework chose.

use super::error::{IsolatorError, Result};
use super::{Isolator, is_debug};
use crate::container_id::to_dotted;
use crate::credentials::injection::Injector;
use crate::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo};
use crate::proto::mesos::{ContainerId, FrameworkInfo};

/// The `environment/credentials` isolator.
#[derive(Debug, Clone)]
pub struct CredentialsIsolator {
    injector: Injector,
}

impl CredentialsIsolator {
    /// Injects with `injector`.
    pub fn new(injector: Injector) -> Self {
        Self { injector }
    }
}

impl Isolator for CredentialsIsolator {
    fn name(&self) -> &'static str {
        "environment/credentials"
    }

    fn supports_nesting(&self) -> bool {
        true
    }

    /// The environment holds a credential: never log the returned info.
    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        if id.parent.is_none() || is_debug(config) {
            return Ok(None);
        }
        let Some(executor) = &config.executor_info else {
            return Err(IsolatorError::Invalid(format!(
                "nested container '{}': ContainerConfig.executor_info is missing, so its \
                 executor's credentials cannot be injected",
                to_dotted(id)
            )));
        };
        // ContainerConfig carries no FrameworkInfo: the framework id comes
        // from ExecutorInfo.framework_id. Its principal is unknown here, so
        // secret mode fails closed (NoPrincipal) rather than trust the
        // framework-written `principal` label; token mode needs no principal.
        let framework = FrameworkInfo {
            id: executor.framework_id.clone(),
            ..FrameworkInfo::default()
        };
        let environment = self
            .injector
            .nested_container_environment(executor, &framework, id)?;
        Ok(Some(ContainerLaunchInfo {
            environment: Some(environment),
            ..ContainerLaunchInfo::default()
        }))
    }
}
