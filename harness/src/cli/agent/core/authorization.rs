//! The agent's one authorization gate: [`Agent::require`] for one object
//! (403 with the deciding ACL in the decision log), [`Agent::filter`] for
//! listings, the object Mesos builds for a container call, and the agent's
//! own rules beside the authorizer's: who may manage a pod, whether an
//! executor token's container still lives and whether its claims name the
//! executor calling. No handler decides a policy question itself.

use nestguard::container_id;
use nestguard::credentials::claims::{self, Claims};
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{CommandInfo, ContainerId};

use super::records::{ApiError, lock};
use super::registry::Agent;
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
        self.require(subject, Action::GetEndpointWithPath, Some(object))
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

    /// [`Agent::require`] on a container, with the object Mesos builds for
    /// a container call.
    pub fn require_container(
        &self,
        subject: Option<&Subject>,
        action: Action,
        id: &ContainerId,
        command: Option<&CommandInfo>,
    ) -> Result<(), ApiError> {
        let nested = id.parent.is_some();
        let object = self.object(id, command, nested);
        self.require(subject, action, Some(object))
    }

    /// The gate for one object: authorizes `action` on `object` (None:
    /// Mesos' object-less approvers, e.g. VIEW_FLAGS); a refusal is 403,
    /// with the deciding ACL in the decision log (never in the body). The
    /// request is decided once: the explanation comes with the decision.
    /// Without an authorizer everything is allowed; an authorizer error is
    /// logged and treated as a denial, as Mesos does.
    pub fn require(
        &self,
        subject: Option<&Subject>,
        action: Action,
        object: Option<Object>,
    ) -> Result<(), ApiError> {
        let Some(authorizer) = self.modules.authorizer.as_ref() else {
            return Ok(());
        };
        let request = request(subject, action, object);
        let (allowed, acl) = match authorizer.decide(&request) {
            Ok((true, _)) => (true, String::new()),
            Ok((false, explanation)) => (false, deciding_acl(Some(&explanation))),
            Err(e) => {
                tracing::warn!(error = %e, "authorizer failed; denying");
                (false, deciding_acl(None))
            }
        };
        log_decision(&request, allowed, &acl);
        if allowed {
            Ok(())
        } else {
            Err(ApiError::Forbidden(acl))
        }
    }

    /// The gate for listings: whether `subject` may see `object` under
    /// `action`. A refusal filters the entry out (no 403, no explanation
    /// computed); the decision log gets it at debug level.
    pub fn filter(&self, subject: Option<&Subject>, action: Action, object: Object) -> bool {
        let Some(authorizer) = self.modules.authorizer.as_ref() else {
            return true;
        };
        let request = request(subject, action, Some(object));
        let allowed = authorizer.authorize(&request).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "authorizer failed; denying");
            false
        });
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

    /// Who may see or kill a pod: its framework's principal, or its own
    /// executor's token; anyone when authentication is off.
    ///
    /// Without an executor record (no such pod, or a damaged checkpoint) there
    /// is no framework to match, so the root container is authorized as a
    /// standalone one (`view_standalone_containers` /
    /// `kill_standalone_containers`), as Mesos' `killContainer` does for a
    /// container without an executor. Authorization always comes first and a
    /// refusal is the same 403 whether the pod exists or not, so IDs cannot be
    /// probed; only an authorized caller learns that a pod is missing (404).
    pub fn require_pod(
        &self,
        subject: Option<&Subject>,
        id: &str,
        action: Action,
    ) -> Result<(), ApiError> {
        let Some(subject) = subject else {
            return Ok(());
        };
        let Some(exec) = self.executor(id) else {
            let root = ContainerId {
                value: id.to_owned(),
                parent: None,
            };
            return self.require_container(Some(subject), action, &root, None);
        };
        let allowed = match subject.value.as_deref() {
            Some(principal) => exec.framework.principal.as_deref() == Some(principal),
            None => Claims::of(subject).and_then(|c| c.container_id()) == Some(id),
        };
        if allowed {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "pod {id}: only its framework's principal or its executor may manage it"
            )))
        }
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

/// The request Mesos' `authorized()` gets for a subject, action and object.
fn request(subject: Option<&Subject>, action: Action, object: Option<Object>) -> Request {
    Request {
        subject: subject.cloned(),
        action: Some(action as i32),
        object,
    }
}

/// Mesos' `verifyExecutorClaims` (src/slave/http.cpp:698-728): the caller's
/// `fid`, `eid` and `cid` claims must name the call's framework (`fid`)
/// and executor (`eid`) and the executor's container.
pub fn verify_executor_claims(
    subject: &Subject,
    fid: &str,
    eid: &str,
    container: &str,
) -> Result<(), String> {
    let claims = Claims::of(subject);
    let claim = |key: &str| claims.and_then(|c| c.first(key));
    let who = subject_text(Some(subject));
    if claim(claims::FRAMEWORK_ID) != Some(fid) {
        return Err(format!(
            "Authenticated principal '{who}' does not contain an 'fid' claim with the framework ID {fid}, which is set in the call"
        ));
    }
    if claim(claims::EXECUTOR_ID) != Some(eid) {
        return Err(format!(
            "Authenticated principal '{who}' does not contain an 'eid' claim with the executor ID {eid}, which is set in the call"
        ));
    }
    if claim(claims::CONTAINER_ID) != Some(container) {
        return Err(format!(
            "Authenticated principal '{who}' does not contain a 'cid' claim with the correct active ContainerID"
        ));
    }
    Ok(())
}
