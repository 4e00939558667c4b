//! Read-only views of the agent's state for the operator calls
//! (GET_FRAMEWORKS, GET_CONTAINERS, ...): the API layer asks through these
//! and never locks the registry itself. Their authorization is the gate's
//! (`authorization.rs`).

use nestguard::container_id::to_dotted;
use nestguard::proto::mesos::{ContainerId, ContainerStatus, ResourceStatistics};

use super::records::{ExecutorRecord, lock};
use super::registry::Agent;

impl Agent {
    /// The executors whose containers run, in container-ID order.
    pub fn running_executors(&self) -> Vec<ExecutorRecord> {
        let state = lock(&self.state);
        state
            .executors
            .values()
            .filter(|e| {
                state
                    .containers
                    .get(&e.container_id.value)
                    .is_some_and(|c| c.termination.borrow().is_none())
            })
            .cloned()
            .collect()
    }

    /// The number of containers (executors', nested and standalone) that run.
    pub fn running_containers(&self) -> usize {
        lock(&self.state)
            .containers
            .values()
            .filter(|c| c.termination.borrow().is_none())
            .count()
    }

    /// The container's status as the containerizer reports it: the
    /// isolator's, with the container's ID (None: the isolator failed;
    /// Mesos then leaves the entry's status out).
    pub fn container_status(&self, id: &ContainerId) -> Option<ContainerStatus> {
        let from_isolator = match &self.modules.isolator {
            Some(isolator) => match isolator.status(id) {
                Ok(status) => status.unwrap_or_default(),
                Err(e) => {
                    tracing::warn!(container_id = %to_dotted(id), error = %e, "Failed to get container status");
                    return None;
                }
            },
            None => ContainerStatus::default(),
        };
        Some(ContainerStatus {
            container_id: Some(id.clone()),
            ..from_isolator
        })
    }

    /// The container's resource statistics: the isolator's, stamped with
    /// the time of the reading (None: the isolator failed).
    pub fn container_usage(&self, id: &ContainerId) -> Option<ResourceStatistics> {
        let from_isolator = match &self.modules.isolator {
            Some(isolator) => match isolator.usage(id) {
                Ok(usage) => usage.unwrap_or_default(),
                Err(e) => {
                    tracing::warn!(container_id = %to_dotted(id), error = %e, "Failed to get resource statistics");
                    return None;
                }
            },
            None => ResourceStatistics::default(),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        Some(ResourceStatistics {
            timestamp: now,
            ..from_isolator
        })
    }

    /// Whether the container runs (known and not terminated).
    pub fn is_running(&self, id: &ContainerId) -> bool {
        self.terminated(&to_dotted(id)) == Some(false)
    }

    /// The agent's ID (the work directory's, stable across restarts).
    pub fn agent_id(&self) -> &str {
        &self.layout.agent_id
    }
}
