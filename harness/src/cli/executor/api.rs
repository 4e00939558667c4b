//! The executor's side of the v1 executor API, using only what a Mesos
//! agent gives an executor (the environment Mesos' executor library reads,
//! src/executor/executor.cpp): where the agent is (`MESOS_SLAVE_PID`, else
//! `MESOS_AGENT_ENDPOINT`), who the executor is (`MESOS_FRAMEWORK_ID`,
//! `MESOS_EXECUTOR_ID`), its token (`MESOS_EXECUTOR_AUTHENTICATION_TOKEN`,
//! sent as `Bearer`), and how long to keep reconnecting
//! (`MESOS_RECOVERY_TIMEOUT`, `MESOS_SUBSCRIPTION_BACKOFF_MAX`). So the same
//! binary runs under nestguard's agent and under a real Mesos agent.
//!
//! Calls and events are protobuf, as Mesos' executor library sends them:
//! a newer agent's messages carry fields this build does not know, which
//! protobuf decoding skips (JSON decoding would refuse them).

use std::collections::VecDeque;
use std::io::Read;
use std::time::Duration;

use anyhow::{Context, bail};
use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::executor::{Call, Event, call};
use prost::Message;

use crate::cli::agent::flags::parse_duration;
use crate::cli::client::Credential;
use crate::cli::recordio;

/// The largest event accepted on the SUBSCRIBE stream (a LAUNCH_GROUP of
/// many tasks fits many times over).
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Where the agent is and who this executor is, from the environment.
#[derive(Debug, Clone)]
pub struct ExecutorEnv {
    /// `http://ip:port/slave(1)` (or without the id): the operator API is
    /// `<base>/api/v1`, the executor API `<base>/api/v1/executor`.
    pub base: String,
    /// `MESOS_FRAMEWORK_ID`.
    pub framework_id: String,
    /// `MESOS_EXECUTOR_ID`.
    pub executor_id: String,
    /// The credential the agent handed out (token, or principal/secret).
    pub credential: Credential,
    /// How long the agent may be unreachable before the executor gives up.
    pub recovery_timeout: Duration,
    /// The longest wait between two subscription attempts.
    pub backoff_max: Duration,
    /// How long a killed task gets between SIGTERM and SIGKILL by default.
    pub shutdown_grace: Duration,
}

impl ExecutorEnv {
    /// Reads the environment as Mesos' executor library does.
    pub fn from_env() -> anyhow::Result<ExecutorEnv> {
        ExecutorEnv::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads the variables `get` returns (an empty value counts as unset).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> anyhow::Result<ExecutorEnv> {
        let var = |name: &str| get(name).filter(|v| !v.is_empty());
        let duration = |name: &str, default: Duration| -> anyhow::Result<Duration> {
            match var(name) {
                Some(v) => parse_duration(&v).map_err(|e| anyhow::anyhow!("{name}={v}: {e}")),
                None => Ok(default),
            }
        };
        let base = match (var("MESOS_SLAVE_PID"), var("MESOS_AGENT_ENDPOINT")) {
            // `slave(1)@10.0.0.1:5051`: the routes live under the process id.
            (Some(pid), _) => {
                let (id, address) = pid
                    .split_once('@')
                    .filter(|(id, address)| !id.is_empty() && !address.is_empty())
                    .with_context(|| format!("MESOS_SLAVE_PID={pid}: expected ID@IP:PORT"))?;
                format!("http://{address}/{id}")
            }
            (None, Some(endpoint)) => format!("http://{endpoint}"),
            (None, None) => bail!("neither MESOS_SLAVE_PID nor MESOS_AGENT_ENDPOINT is set"),
        };
        let credential = match (
            var("MESOS_EXECUTOR_AUTHENTICATION_TOKEN"),
            var("MESOS_PRINCIPAL"),
            var("MESOS_SECRET"),
        ) {
            (Some(token), _, _) => Credential::Bearer(token),
            (None, Some(principal), Some(secret)) => Credential::Basic { principal, secret },
            _ => Credential::None,
        };
        Ok(ExecutorEnv {
            base,
            framework_id: var("MESOS_FRAMEWORK_ID").context("MESOS_FRAMEWORK_ID is not set")?,
            executor_id: var("MESOS_EXECUTOR_ID").context("MESOS_EXECUTOR_ID is not set")?,
            credential,
            // Mesos' defaults (slave/constants.hpp).
            recovery_timeout: duration("MESOS_RECOVERY_TIMEOUT", Duration::from_secs(900))?,
            backoff_max: duration("MESOS_SUBSCRIPTION_BACKOFF_MAX", Duration::from_secs(2))?,
            shutdown_grace: duration(
                "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD",
                Duration::from_secs(5),
            )?,
        })
    }
}

/// A client of the agent's executor API.
pub struct ExecutorApi {
    env: ExecutorEnv,
    /// Short calls.
    calls: ureq::Agent,
    /// The SUBSCRIBE stream: no overall timeout, it lives as long as the
    /// executor.
    stream: ureq::Agent,
}

impl ExecutorApi {
    /// A client for the agent `env` names.
    pub fn new(env: ExecutorEnv) -> ExecutorApi {
        let calls = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let stream = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .build()
            .into();
        ExecutorApi { env, calls, stream }
    }

    /// The environment it was built from.
    pub fn env(&self) -> &ExecutorEnv {
        &self.env
    }

    fn url(&self) -> String {
        format!("{}/api/v1/executor", self.env.base)
    }

    fn call(&self, kind: call::Type) -> Call {
        Call {
            executor_id: v1::ExecutorId {
                value: self.env.executor_id.clone(),
            },
            framework_id: v1::FrameworkId {
                value: self.env.framework_id.clone(),
            },
            r#type: Some(kind as i32),
            ..Default::default()
        }
    }

    fn request(&self, agent: &ureq::Agent) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        let mut request = agent
            .post(self.url())
            .header("Content-Type", "application/x-protobuf")
            .header("Accept", "application/x-protobuf");
        if let Some(h) = self.env.credential.header() {
            request = request.header("Authorization", &h);
        }
        request
    }

    /// SUBSCRIBE, listing the updates the framework has not acknowledged
    /// yet and the tasks none of whose updates it acknowledged; returns the
    /// event stream.
    pub fn subscribe(
        &self,
        unacknowledged: &[v1::TaskStatus],
        unacknowledged_tasks: &[v1::TaskInfo],
    ) -> anyhow::Result<EventReader> {
        let mut call = self.call(call::Type::Subscribe);
        call.subscribe = Some(call::Subscribe {
            unacknowledged_tasks: unacknowledged_tasks.to_vec(),
            unacknowledged_updates: unacknowledged
                .iter()
                .map(|s| call::Update { status: s.clone() })
                .collect(),
        });
        let response = self
            .request(&self.stream)
            .send(&call.encode_to_vec()[..])
            .with_context(|| format!("SUBSCRIBE to {}", self.url()))?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        if status != 200 {
            let text = body.read_to_string().unwrap_or_default();
            bail!("SUBSCRIBE refused: {status} {text}");
        }
        Ok(EventReader {
            body: Box::new(body.into_reader()),
            decoder: recordio::Decoder::new(MAX_EVENT_BYTES),
            ready: VecDeque::new(),
        })
    }

    /// A status update of this executor's: a fresh uuid, now, source
    /// SOURCE_EXECUTOR.
    pub fn status(
        &self,
        task: &str,
        state: v1::TaskState,
        message: Option<String>,
        container: Option<v1::ContainerId>,
    ) -> v1::TaskStatus {
        v1::TaskStatus {
            task_id: v1::TaskId {
                value: task.to_owned(),
            },
            state: state as i32,
            message,
            timestamp: Some(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64()),
            ),
            executor_id: Some(v1::ExecutorId {
                value: self.env.executor_id.clone(),
            }),
            source: Some(v1::task_status::Source::Executor as i32),
            uuid: Some(uuid::Uuid::new_v4().as_bytes().to_vec()),
            container_status: container.map(|c| v1::ContainerStatus {
                container_id: Some(c),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// UPDATE; Ok once the agent accepted it (202).
    pub fn update(&self, status: &v1::TaskStatus) -> anyhow::Result<()> {
        let mut call = self.call(call::Type::Update);
        call.update = Some(call::Update {
            status: status.clone(),
        });
        self.send(&call)
    }

    fn send(&self, call: &Call) -> anyhow::Result<()> {
        let mut response = self
            .request(&self.calls)
            .send(&call.encode_to_vec()[..])
            .with_context(|| format!("POST {}", self.url()))?;
        let status = response.status().as_u16();
        if status != 202 {
            let text = response.body_mut().read_to_string().unwrap_or_default();
            bail!("{status} {text}");
        }
        Ok(())
    }
}

/// The events of one SUBSCRIBE stream.
pub struct EventReader {
    body: Box<dyn Read + Send>,
    decoder: recordio::Decoder,
    ready: VecDeque<Vec<u8>>,
}

impl EventReader {
    /// The next event; `None` when the agent closed the stream.
    pub fn next_event(&mut self) -> anyhow::Result<Option<Event>> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(record) = self.ready.pop_front() {
                let event = Event::decode(record.as_slice())
                    .context("decoding an event of the SUBSCRIBE stream")?;
                return Ok(Some(event));
            }
            let n = self
                .body
                .read(&mut chunk)
                .context("reading the event stream")?;
            if n == 0 {
                self.decoder.finish()?;
                return Ok(None);
            }
            self.ready.extend(self.decoder.feed(&chunk[..n])?);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> anyhow::Result<ExecutorEnv> {
        let vars: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ExecutorEnv::from_vars(|name| vars.get(name).cloned())
    }

    const IDS: [(&str, &str); 2] = [("MESOS_FRAMEWORK_ID", "fw"), ("MESOS_EXECUTOR_ID", "ex")];

    #[test]
    fn a_mesos_agents_environment() {
        let mut vars = IDS.to_vec();
        vars.extend([
            ("MESOS_SLAVE_PID", "slave(1)@10.0.0.7:5051"),
            ("MESOS_AGENT_ENDPOINT", "10.0.0.7:5051"),
            ("MESOS_EXECUTOR_AUTHENTICATION_TOKEN", "t0ken"),
            ("MESOS_RECOVERY_TIMEOUT", "15mins"),
            ("MESOS_SUBSCRIPTION_BACKOFF_MAX", "2secs"),
            ("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", "5secs"),
        ]);
        let e = env(&vars).unwrap();
        assert_eq!(e.base, "http://10.0.0.7:5051/slave(1)");
        assert_eq!(
            ExecutorApi::new(e.clone()).url(),
            "http://10.0.0.7:5051/slave(1)/api/v1/executor"
        );
        assert_eq!(
            (e.framework_id.as_str(), e.executor_id.as_str()),
            ("fw", "ex")
        );
        assert!(matches!(e.credential, Credential::Bearer(ref t) if t == "t0ken"));
        assert_eq!(e.recovery_timeout, Duration::from_secs(900));
        assert_eq!(e.backoff_max, Duration::from_secs(2));
        assert_eq!(e.shutdown_grace, Duration::from_secs(5));
    }

    #[test]
    fn endpoint_only_and_defaults() {
        let mut vars = IDS.to_vec();
        vars.push(("MESOS_AGENT_ENDPOINT", "127.0.0.1:5051"));
        let e = env(&vars).unwrap();
        assert_eq!(e.base, "http://127.0.0.1:5051");
        assert!(matches!(e.credential, Credential::None));
        assert_eq!(e.recovery_timeout, Duration::from_secs(900));
    }

    #[test]
    fn missing_or_bad_variables_are_named() {
        let err = env(&IDS).unwrap_err().to_string();
        assert!(err.contains("MESOS_SLAVE_PID"), "{err}");
        let err = env(&[("MESOS_SLAVE_PID", "nohost")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected ID@IP:PORT"), "{err}");
        let err = env(&[("MESOS_AGENT_ENDPOINT", "h:1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("MESOS_FRAMEWORK_ID"), "{err}");
        let mut vars = IDS.to_vec();
        vars.extend([
            ("MESOS_AGENT_ENDPOINT", "h:1"),
            ("MESOS_RECOVERY_TIMEOUT", "soon"),
        ]);
        let err = env(&vars).unwrap_err().to_string();
        assert!(err.contains("MESOS_RECOVERY_TIMEOUT=soon"), "{err}");
    }
}
