//! The environment that carries an executor's credentials into its
//! containers (design §6.3.4.2), so that code inside them can call the
//! agent's nested-container API as the executor.
//!
//! Two modes:
//! * **token** (default when a signing key is configured): a Mesos executor
//!   JWT in `MESOS_EXECUTOR_AUTHENTICATION_TOKEN` with claims
//!   `fid`/`eid`/`cid` = the executor's *root* container — the same token the
//!   agent gives the executor, so a nested container holding it can act only
//!   on its own executor's containers, and never learns a reusable password;
//! * **secret** (the design as written): the framework's authenticated
//!   principal (`FrameworkInfo.principal`) and its secret from the HTTP
//!   credentials, as `MESOS_PRINCIPAL` and `MESOS_SECRET`. An ExecutorInfo
//!   label `principal` is written by the framework itself, so it may name
//!   another principal only where the operator's [`ExecutorPrincipals`]
//!   mapping allows that framework principal to hand it out; without a
//!   `FrameworkInfo.principal` nothing is injected (fail closed).
//!
//! Two shapes, matching where a Mesos agent lets a module add environment:
//! [`Injector::decorate_executor_environment`] for the Hook's
//! `slaveExecutorEnvironmentDecorator` (incoming variables kept, ours
//! replace same-named ones), and [`Injector::nested_container_environment`]
//! for an isolator's `prepare()` of nested containers, which the agent
//! launches with no environment of their own.
//!
//! The returned `Environment` holds the credential in clear (it must: it
//! becomes an environment variable); callers must not log it.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::delegation::ExecutorPrincipals;
use super::jwt;
use super::secret::Secret;
use super::store::CredentialStore;
use crate::container_id;
use crate::proto::mesos::environment::Variable;
use crate::proto::mesos::environment::variable::Type as VariableType;
use crate::proto::mesos::{ContainerId, Environment, ExecutorInfo, FrameworkInfo};

/// The executor token variable (Mesos' name).
pub const TOKEN_VAR: &str = "MESOS_EXECUTOR_AUTHENTICATION_TOKEN";
/// The principal variable (secret mode).
pub const PRINCIPAL_VAR: &str = "MESOS_PRINCIPAL";
/// The secret variable (secret mode).
pub const SECRET_VAR: &str = "MESOS_SECRET";
/// The ExecutorInfo label naming the executor's principal.
pub const PRINCIPAL_LABEL: &str = "principal";

/// Why no environment could be computed. Never contains a secret.
#[derive(Debug, thiserror::Error)]
pub enum InjectionError {
    /// Neither a framework id in FrameworkInfo nor in ExecutorInfo.
    #[error(
        "executor '{executor}': no framework id in FrameworkInfo.id or ExecutorInfo.framework_id"
    )]
    NoFrameworkId {
        /// Executor id.
        executor: String,
    },
    /// Empty executor id.
    #[error("ExecutorInfo.executor_id.value is empty")]
    NoExecutorId,
    /// The container id is invalid.
    #[error("invalid container id: {0}")]
    ContainerId(#[from] crate::container_id::ContainerIdError),
    /// Secret mode without the framework's principal.
    #[error(
        "executor '{executor}': no principal: FrameworkInfo.principal is not set, and secret mode injects only the framework's own principal"
    )]
    NoPrincipal {
        /// Executor id.
        executor: String,
    },
    /// Secret mode: the label names a principal the framework may not hand out.
    #[error(
        "executor '{executor}': framework principal '{framework}' may not hand principal '{label}' to its executors (no executor_principals mapping allows it)"
    )]
    PrincipalNotAllowed {
        /// Executor id.
        executor: String,
        /// `FrameworkInfo.principal`.
        framework: String,
        /// The ExecutorInfo label's principal.
        label: String,
    },
    /// Secret mode: the principal has no HTTP credential.
    #[error("executor '{executor}': principal '{principal}' has no entry in the HTTP credentials")]
    NoSecret {
        /// Executor id.
        executor: String,
        /// The principal.
        principal: String,
    },
    /// Secret mode: the secret cannot be an environment value.
    #[error(
        "principal '{0}': the secret is not valid UTF-8 and cannot be passed in the environment"
    )]
    SecretNotUtf8(String),
    /// The label `principal` appears twice with different values.
    #[error("executor '{0}': the label 'principal' appears more than once")]
    AmbiguousPrincipal(String),
    /// No mode can be used.
    #[error(
        "credential injection needs a JWT signing key (token mode) or HTTP credentials (secret mode)"
    )]
    NotConfigured,
}

/// How credentials are injected.
#[derive(Clone)]
pub enum Mode {
    /// Executor JWT signed with this key.
    Token(Secret),
    /// Principal + secret from these HTTP credentials.
    Secret(Arc<CredentialStore>),
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Token(_) => f.write_str("Token"),
            Mode::Secret(s) => write!(f, "Secret({s:?})"),
        }
    }
}

/// Computes credential environments. Immutable: share between threads.
#[derive(Debug, Clone)]
pub struct Injector {
    mode: Mode,
    delegation: ExecutorPrincipals,
}

impl Injector {
    /// An injector in an explicit mode.
    pub fn new(mode: Mode) -> Self {
        Injector {
            mode,
            delegation: ExecutorPrincipals::default(),
        }
    }

    /// Sets which principals each framework principal may hand to its
    /// executors through the `principal` label (secret mode).
    pub fn with_executor_principals(mut self, delegation: ExecutorPrincipals) -> Self {
        self.delegation = delegation;
        self
    }

    /// Token mode when a signing key is configured, else secret mode when
    /// HTTP credentials are, else an error.
    pub fn from_config(
        signing_key: Option<Secret>,
        http_credentials: Option<Arc<CredentialStore>>,
    ) -> Result<Self, InjectionError> {
        match (signing_key, http_credentials) {
            (Some(key), _) => Ok(Self::new(Mode::Token(key))),
            (None, Some(store)) => Ok(Self::new(Mode::Secret(store))),
            (None, None) => Err(InjectionError::NotConfigured),
        }
    }

    /// The mode in use.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// Our variables (name, value) for the executor owning `container`
    /// (any container of its tree: the root is used).
    fn variables(
        &self,
        executor: &ExecutorInfo,
        framework: &FrameworkInfo,
        container: &ContainerId,
    ) -> Result<Vec<Variable>, InjectionError> {
        container_id::validate(container)?;
        let executor_id = executor.executor_id.value.as_str();
        if executor_id.is_empty() {
            return Err(InjectionError::NoExecutorId);
        }
        let var = |name: &str, value: String| Variable {
            name: name.to_owned(),
            value: Some(value),
            r#type: Some(VariableType::Value as i32),
            secret: None,
        };
        match &self.mode {
            Mode::Token(key) => {
                let framework_id = framework
                    .id
                    .as_ref()
                    .or(executor.framework_id.as_ref())
                    .map(|f| f.value.clone())
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| InjectionError::NoFrameworkId {
                        executor: executor_id.to_owned(),
                    })?;
                let root = container_id::root(container).value.clone();
                let claims = BTreeMap::from([
                    ("cid".to_owned(), root.clone()),
                    ("eid".to_owned(), executor_id.to_owned()),
                    ("fid".to_owned(), framework_id.clone()),
                ]);
                tracing::debug!(
                    framework = %framework_id,
                    executor = %executor_id,
                    container = %root,
                    "issuing executor token for injection"
                );
                Ok(vec![var(TOKEN_VAR, jwt::issue(&claims, key))])
            }
            Mode::Secret(store) => {
                let principal = principal_of(executor, framework, &self.delegation)?;
                let secret = store
                    .secret(&principal)
                    .ok_or_else(|| InjectionError::NoSecret {
                        executor: executor_id.to_owned(),
                        principal: principal.clone(),
                    })?;
                let secret = secret
                    .expose_str()
                    .ok_or_else(|| InjectionError::SecretNotUtf8(principal.clone()))?
                    .to_owned();
                tracing::debug!(executor = %executor_id, principal = %principal, "injecting principal credentials");
                Ok(vec![var(PRINCIPAL_VAR, principal), var(SECRET_VAR, secret)])
            }
        }
    }

    /// Hook shape (`slaveExecutorEnvironmentDecorator`): the executor's
    /// `command.environment` copied, with our variables replacing any of the
    /// same name and appended at the end.
    pub fn decorate_executor_environment(
        &self,
        executor: &ExecutorInfo,
        framework: &FrameworkInfo,
        container: &ContainerId,
    ) -> Result<Environment, InjectionError> {
        let ours = self.variables(executor, framework, container)?;
        let mut variables: Vec<Variable> = executor
            .command
            .as_ref()
            .and_then(|c| c.environment.as_ref())
            .map(|e| e.variables.clone())
            .unwrap_or_default();
        variables.retain(|v| !ours.iter().any(|o| o.name == v.name));
        variables.extend(ours);
        Ok(Environment { variables })
    }

    /// Isolator shape (`prepare()` of a nested container): only our
    /// variables, the same as the executor's own (claims name the root).
    pub fn nested_container_environment(
        &self,
        executor: &ExecutorInfo,
        framework: &FrameworkInfo,
        container: &ContainerId,
    ) -> Result<Environment, InjectionError> {
        Ok(Environment {
            variables: self.variables(executor, framework, container)?,
        })
    }
}

/// The executor's principal in secret mode: the framework's own
/// (`FrameworkInfo.principal`), or the ExecutorInfo label `principal` when
/// `delegation` allows the framework's principal to hand that one out.
pub fn principal_of(
    executor: &ExecutorInfo,
    framework: &FrameworkInfo,
    delegation: &ExecutorPrincipals,
) -> Result<String, InjectionError> {
    let executor_id = &executor.executor_id.value;
    let mut from_label = executor
        .labels
        .iter()
        .flat_map(|l| l.labels.iter())
        .filter(|l| l.key == PRINCIPAL_LABEL)
        .map(|l| l.value.clone().unwrap_or_default());
    let first = from_label.next();
    if let Some(first) = &first
        && from_label.any(|other| &other != first)
    {
        return Err(InjectionError::AmbiguousPrincipal(executor_id.clone()));
    }
    let own = framework
        .principal
        .clone()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| InjectionError::NoPrincipal {
            executor: executor_id.clone(),
        })?;
    match first.filter(|p| !p.is_empty()) {
        None => Ok(own),
        Some(label) if delegation.allows(&own, &label) => Ok(label),
        Some(label) => Err(InjectionError::PrincipalNotAllowed {
            executor: executor_id.clone(),
            framework: own,
            label,
        }),
    }
}
