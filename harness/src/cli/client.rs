//! A small client of the agent API (JSON over HTTP), used by the default
//! executor, `nestguard pod run` and the demo. Any HTTP client works against
//! the agent; this one is ureq.

use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use nestguard::proto::mesos::v1::{self, agent::Call, agent::call};

/// How a client proves who it is.
#[derive(Clone)]
pub enum Credential {
    /// No `Authorization` header.
    None,
    /// HTTP Basic.
    Basic {
        /// Principal.
        principal: String,
        /// Secret (never logged).
        secret: String,
    },
    /// `Authorization: Bearer <token>` (an executor token).
    Bearer(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::None => f.write_str("None"),
            Credential::Basic { principal, .. } => write!(f, "Basic({principal})"),
            Credential::Bearer(_) => f.write_str("Bearer(<token>)"),
        }
    }
}

impl Credential {
    pub(crate) fn header(&self) -> Option<String> {
        match self {
            Credential::None => None,
            Credential::Basic { principal, secret } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{principal}:{secret}"))
            )),
            Credential::Bearer(token) => Some(format!("Bearer {token}")),
        }
    }
}

/// An HTTP reply: status and body text.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Body.
    pub body: String,
}

/// A client of one agent.
pub struct AgentClient {
    base: String,
    credential: Credential,
    http: ureq::Agent,
}

fn container_id(dotted: &str) -> v1::ContainerId {
    let mut id: Option<v1::ContainerId> = None;
    for part in dotted.split('.') {
        id = Some(v1::ContainerId {
            value: part.to_owned(),
            parent: id.map(Box::new),
        });
    }
    id.unwrap_or_default()
}

impl AgentClient {
    /// A client of `base` (e.g. `http://127.0.0.1:5051`).
    pub fn new(base: &str, credential: Credential) -> AgentClient {
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(3600)))
            .build()
            .into();
        AgentClient {
            base: base.trim_end_matches('/').to_owned(),
            credential,
            http,
        }
    }

    /// POSTs a JSON body to `path`.
    pub fn post(&self, path: &str, body: &str) -> anyhow::Result<Reply> {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json");
        if let Some(h) = self.credential.header() {
            request = request.header("Authorization", &h);
        }
        let mut response = request
            .send(body)
            .with_context(|| format!("POST {}{path}", self.base))?;
        let status = response.status().as_u16();
        let body = response.body_mut().read_to_string().unwrap_or_default();
        Ok(Reply { status, body })
    }

    /// GETs or DELETEs `path`.
    pub fn request(&self, method: &str, path: &str) -> anyhow::Result<Reply> {
        let url = format!("{}{path}", self.base);
        let auth = self.credential.header();
        let mut response = match method {
            "DELETE" => {
                let mut r = self.http.delete(&url);
                if let Some(h) = &auth {
                    r = r.header("Authorization", h);
                }
                r.call()
            }
            _ => {
                let mut r = self.http.get(&url);
                if let Some(h) = &auth {
                    r = r.header("Authorization", h);
                }
                r.call()
            }
        }
        .with_context(|| format!("{method} {url}"))?;
        let status = response.status().as_u16();
        let body = response.body_mut().read_to_string().unwrap_or_default();
        Ok(Reply { status, body })
    }

    /// Sends an agent API call as JSON.
    pub fn call(&self, call: &Call) -> anyhow::Result<Reply> {
        self.post("/api/v1", &nestguard::json::to_json(call))
    }

    /// LAUNCH_CONTAINER of a nested container (what Mesos' default executor sends).
    pub fn launch_nested(
        &self,
        dotted: &str,
        command: Option<v1::CommandInfo>,
        container: Option<v1::ContainerInfo>,
    ) -> anyhow::Result<Reply> {
        self.call(&Call {
            r#type: Some(call::Type::LaunchContainer as i32),
            launch_container: Some(call::LaunchContainer {
                container_id: container_id(dotted),
                command,
                container,
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// WAIT_NESTED_CONTAINER.
    pub fn wait_nested(&self, dotted: &str) -> anyhow::Result<Reply> {
        self.call(&Call {
            r#type: Some(call::Type::WaitNestedContainer as i32),
            wait_nested_container: Some(call::WaitNestedContainer {
                container_id: container_id(dotted),
            }),
            ..Default::default()
        })
    }

    /// KILL_NESTED_CONTAINER with a signal.
    pub fn kill_nested(&self, dotted: &str, signal: i32) -> anyhow::Result<Reply> {
        self.call(&Call {
            r#type: Some(call::Type::KillNestedContainer as i32),
            kill_nested_container: Some(call::KillNestedContainer {
                container_id: container_id(dotted),
                signal: Some(signal),
            }),
            ..Default::default()
        })
    }
}

/// The `exit_status` of a WAIT reply body.
pub fn exit_status(body: &str) -> Option<i32> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let wait = v
        .get("wait_nested_container")
        .or_else(|| v.get("wait_container"))?;
    wait.get("exit_status")?
        .as_i64()
        .and_then(|s| i32::try_from(s).ok())
}
