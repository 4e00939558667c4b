//! Authorization of the container calls: the object Mesos builds for a
//! call, the decision (403 with the deciding ACL), the filter of listings,
//! and whether an executor token's container still lives.

use nestguard::container_id;
use nestguard::credentials::claims::Claims;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{CommandInfo, ContainerId};

use super::records::{ApiError, lock};
use super::registry::Agent;
use crate::cli::agent::abi::Authorizer;
use crate::cli::agent::decision::{deciding_acl, log_decision, object_text, subject_text};

/// The path Mesos authorizes its metrics as: libprocess' `/metrics/snapshot`
/// is one of `AUTHORIZABLE_ENDPOINTS` (src/common/authorization.cpp:47-53).
pub const METRICS_ENDPOINT: &str = "/metrics/snapshot";

impl Agent {
    /// Whether `subject` may read the agent's metrics: GET_ENDPOINT_WITH_PATH
    /// on [`METRICS_ENDPOINT`], as Mesos' authorization callback for
    /// `/metrics/snapshot` asks (src/common/authorization.cpp:114-144; libprocess
    /// answers `Forbidden()` on a refusal, process.cpp:3844-3882). An executor
    /// token (claims, no principal) is refused by the authorizer, as Mesos'
    /// local authorizer refuses it outside the implicit executor actions.
    /// `/metrics` and GET_METRICS carry the same values under the same guard.
    pub fn authorize_metrics(&self, subject: Option<&Subject>) -> Result<(), ApiError> {
        let object = Object {
            value: Some(METRICS_ENDPOINT.to_owned()),
            ..Default::default()
        };
        self.authorize_action(subject, Action::GetEndpointWithPath, Some(object))
    }

    /// The object Mesos builds for a container call (§3.7).
    fn object(&self, id: &ContainerId, command: Option<&CommandInfo>, nested: bool) -> Object {
        if nested {
            let root = container_id::root(id).value.clone();
            if let Some(exec) = lock(&self.state).executors.get(&root) {
                return Object {
                    executor_info: Some(exec.executor.clone()),
                    framework_info: Some(exec.framework.clone()),
                    command_info: command.cloned(),
                    container_id: Some(id.clone()),
                    ..Default::default()
                };
            }
        }
        Object {
            container_id: Some(id.clone()),
            ..Default::default()
        }
    }

    /// Authorizes `action` on a container; 403 carries the explanation.
    pub fn authorize(
        &self,
        subject: Option<&Subject>,
        action: Action,
        id: &ContainerId,
        command: Option<&CommandInfo>,
    ) -> Result<(), ApiError> {
        let nested = id.parent.is_some();
        let object = self.object(id, command, nested);
        self.authorize_object(subject, action, object)
    }

    /// The authorizer's decision on a request, with the authorizer and the
    /// request (for an explanation and the log); None without an
    /// authorizer, which allows everything. An authorizer error is logged
    /// and treated as a denial, as Mesos does.
    pub(super) fn decide(
        &self,
        subject: Option<&Subject>,
        action: Action,
        object: Option<Object>,
    ) -> Option<(&Authorizer, Request, bool)> {
        let authorizer = self.modules.authorizer.as_ref()?;
        let request = Request {
            subject: subject.cloned(),
            action: Some(action as i32),
            object,
        };
        let allowed = authorizer.authorize(&request).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "authorizer failed; denying");
            false
        });
        Some((authorizer, request, allowed))
    }

    pub(super) fn authorize_object(
        &self,
        subject: Option<&Subject>,
        action: Action,
        object: Object,
    ) -> Result<(), ApiError> {
        let Some((authorizer, request, allowed)) = self.decide(subject, action, Some(object))
        else {
            return Ok(());
        };
        let acl = if allowed {
            String::new()
        } else {
            deciding_acl(authorizer.explain(&request).ok().as_deref())
        };
        log_decision(&request, allowed, &acl);
        if allowed {
            Ok(())
        } else {
            Err(ApiError::Forbidden(acl))
        }
    }

    /// A decision that filters a listing rather than answering 403: no
    /// explanation is computed, the decision log gets it at debug level.
    pub(super) fn allowed_to_view(
        &self,
        subject: Option<&Subject>,
        action: Action,
        object: Object,
    ) -> bool {
        let Some((_, request, allowed)) = self.decide(subject, action, Some(object)) else {
            return true;
        };
        tracing::debug!(
            target: "nestguard::decision",
            principal = %subject_text(request.subject.as_ref()),
            action = action.as_str_name(),
            object = %object_text(request.object.as_ref()),
            decision = if allowed { "allow" } else { "deny" },
            "view filter"
        );
        allowed
    }

    /// Whether a subject may still act: a principal always; an executor
    /// token (claims naming a `cid`) only while that root container runs.
    /// Mesos accepts a token for as long as its signature is valid; the
    /// agent knows which containers live, so a dead pod's token is refused.
    pub fn token_is_live(&self, subject: &Subject) -> bool {
        if subject.value.is_some() {
            return true;
        }
        // The container the authorizer reads from the claims.
        let Some(cid) = Claims::of(subject).and_then(|c| c.container_id()) else {
            return true;
        };
        lock(&self.state)
            .containers
            .get(cid)
            .is_some_and(|c| c.id.parent.is_none() && c.termination.borrow().is_none())
    }
}
