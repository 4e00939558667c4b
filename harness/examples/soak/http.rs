//! The HTTP client the campaign drives the agent with, and container IDs in
//! both shapes.

use super::*;

#[derive(Clone)]
pub(super) struct Client {
    pub(super) base: String,
    pub(super) auth: String,
    pub(super) http: ureq::Agent,
}

/// An answer, or why there was none.
pub(super) type Answer = std::result::Result<(u16, String), String>;

impl Client {
    pub(super) fn new(address: &str) -> Client {
        use base64::Engine;
        // No pooled connections: an idle one would hold an fd in the agent
        // between requests and blur its fd count.
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .max_idle_connections(0)
            .build()
            .into();
        Client {
            base: address.trim_end_matches('/').to_owned(),
            auth: format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", OPS.0, OPS.1))
            ),
            http,
        }
    }

    pub(super) fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let url = format!("{}{path}", self.base);
        let sent = match (method, body) {
            ("POST", Some(b)) => self
                .http
                .post(&url)
                .header("Authorization", &self.auth)
                .header("Content-Type", "application/json")
                .send(b.to_string()),
            ("DELETE", _) => self
                .http
                .delete(&url)
                .header("Authorization", &self.auth)
                .call(),
            _ => self
                .http
                .get(&url)
                .header("Authorization", &self.auth)
                .call(),
        };
        let mut response = sent.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("reading the answer: {e}"))?;
        Ok((status, text))
    }

    pub(super) fn api(&self, call: &Value) -> Answer {
        self.send("POST", "/api/v1", Some(call))
    }

    /// Running containers (dotted ID → executor ID, if it is a pod's).
    pub(super) fn running(&self) -> Result<BTreeMap<String, Option<String>>> {
        let (status, body) = self.api(&json!({"type": "GET_CONTAINERS",
            "get_containers": {"show_nested": true, "show_standalone": true}}))?;
        if status != 200 {
            return Err(format!("GET_CONTAINERS: {status} {body}"));
        }
        let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let mut out = BTreeMap::new();
        for c in v["get_containers"]["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            out.insert(
                dotted(&c["container_id"]),
                c["executor_id"]["value"].as_str().map(str::to_owned),
            );
        }
        Ok(out)
    }

    /// WAIT on `id` (dotted): the termination object, or None if unknown.
    pub(super) fn wait(&self, id: &str) -> Result<Option<Value>> {
        let nested = id.contains('.');
        let (kind, field) = if nested {
            ("WAIT_NESTED_CONTAINER", "wait_nested_container")
        } else {
            ("WAIT_CONTAINER", "wait_container")
        };
        let (status, body) =
            self.api(&json!({"type": kind, field: {"container_id": container_id(id)}}))?;
        match status {
            200 => {
                let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
                Ok(Some(v[field].clone()))
            }
            404 => Ok(None),
            _ => Err(format!("{kind} {id}: {status} {body}")),
        }
    }

    pub(super) fn kill_and_remove_standalone(&self, id: &str) {
        let id = container_id(id);
        let _ = self.api(&json!({"type": "KILL_CONTAINER",
            "kill_container": {"container_id": id}}));
        let _ = self.api(&json!({"type": "WAIT_CONTAINER",
            "wait_container": {"container_id": id}}));
        let _ = self.api(&json!({"type": "REMOVE_CONTAINER",
            "remove_container": {"container_id": id}}));
    }
}

/// `a.b.c` → `{"value": "c", "parent": {"value": "b", "parent": {"value": "a"}}}`.
pub(super) fn container_id(dotted: &str) -> Value {
    let mut id: Option<Value> = None;
    for part in dotted.split('.') {
        id = Some(match id {
            None => json!({"value": part}),
            Some(parent) => json!({"value": part, "parent": parent}),
        });
    }
    id.unwrap_or(Value::Null)
}

pub(super) fn dotted(id: &Value) -> String {
    let value = id["value"].as_str().unwrap_or("").to_owned();
    if id["parent"].is_object() {
        format!("{}.{value}", dotted(&id["parent"]))
    } else {
        value
    }
}
