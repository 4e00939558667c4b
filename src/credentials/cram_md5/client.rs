//! The authenticatee (client) side of CRAM-MD5.

use std::time::{Duration, Instant};

use super::digest::response;
use super::message::Message;
use super::{CramMd5Error, DEFAULT_TIMEOUT, MAX_INPUT, MECHANISM};
use crate::credentials::store::Credential;
use crate::proto::mesos::internal::{AuthenticateMessage, AuthenticationStartMessage};

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// How long the whole exchange may take.
    pub timeout: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// How the exchange ended for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOutcome {
    /// The server accepted the credential (Mesos: `true`).
    Authenticated,
    /// The server refused it, or there was no secret (Mesos: `false`).
    Refused,
    /// Protocol error, server error or timeout (Mesos: a failed future).
    Error(String),
}

/// What one received message produced.
#[derive(Debug, Default)]
pub struct ClientStep {
    /// The message to send to the server, if any.
    pub reply: Option<Message>,
    /// Set when this message ended the exchange.
    pub outcome: Option<ClientOutcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Starting,
    AwaitingChallenge,
    ResponseSent,
    Done,
}

/// One client exchange. Use from one thread at a time (`&mut`).
pub struct Authenticatee {
    credential: Credential,
    config: ClientConfig,
    started: Instant,
    state: State,
    outcome: Option<ClientOutcome>,
}

impl Authenticatee {
    /// Starts an exchange for the client process `pid` (its libprocess UPID).
    /// Returns the `AuthenticateMessage` to send, or — when the credential
    /// has no secret, as Mesos does — an immediate [`ClientOutcome::Refused`].
    pub fn new(
        credential: Credential,
        pid: &str,
        config: ClientConfig,
        now: Instant,
    ) -> (Self, ClientStep) {
        let mut client = Authenticatee {
            credential,
            config,
            started: now,
            state: State::Starting,
            outcome: None,
        };
        if client.credential.secret.is_empty() {
            tracing::warn!(
                principal = %client.credential.principal,
                "authentication failed: CRAM-MD5 needs a secret"
            );
            client.state = State::Done;
            client.outcome = Some(ClientOutcome::Refused);
            let step = ClientStep {
                reply: None,
                outcome: client.outcome.clone(),
            };
            return (client, step);
        }
        let step = ClientStep {
            reply: Some(Message::Authenticate(AuthenticateMessage {
                pid: pid.to_owned(),
            })),
            outcome: None,
        };
        (client, step)
    }

    /// The exchange's result once it has ended.
    pub fn outcome(&self) -> Option<&ClientOutcome> {
        self.outcome.as_ref()
    }

    /// Ends the exchange if it has run past its timeout.
    pub fn poll_timeout(&mut self, now: Instant) -> Option<ClientStep> {
        if self.state == State::Done
            || now.saturating_duration_since(self.started) <= self.config.timeout
        {
            return None;
        }
        Some(self.fail(CramMd5Error::TimedOut(self.config.timeout)))
    }

    /// Handles one message from the server.
    pub fn receive(&mut self, message: Message, now: Instant) -> ClientStep {
        if let Some(step) = self.poll_timeout(now) {
            return step;
        }
        if self.state == State::Done {
            // The future is already settled; Mesos ignores late messages too.
            return ClientStep::default();
        }
        match message {
            Message::Mechanisms(m) => {
                if self.state != State::Starting {
                    return self.fail(CramMd5Error::Unexpected("mechanisms"));
                }
                tracing::debug!(mechanisms = ?m.mechanisms, "received authentication mechanisms");
                if !m.mechanisms.iter().any(|x| x == MECHANISM) {
                    return self.fail(CramMd5Error::Mechanism(m.mechanisms.join(",")));
                }
                self.state = State::AwaitingChallenge;
                ClientStep {
                    reply: Some(Message::Start(AuthenticationStartMessage {
                        mechanism: MECHANISM.to_owned(),
                        data: Some(Vec::new()),
                    })),
                    outcome: None,
                }
            }
            Message::Step(step) => {
                if self.state != State::AwaitingChallenge {
                    return self.fail(CramMd5Error::Unexpected("step"));
                }
                if step.data.len() > MAX_INPUT {
                    return self.fail(CramMd5Error::TooLong {
                        what: "challenge",
                        len: step.data.len(),
                    });
                }
                tracing::debug!("received CRAM-MD5 challenge");
                let answer = response(
                    &self.credential.principal,
                    &self.credential.secret,
                    &step.data,
                );
                self.state = State::ResponseSent;
                ClientStep {
                    reply: Some(Message::step(answer.to_vec())),
                    outcome: None,
                }
            }
            Message::Completed => {
                if self.state != State::ResponseSent {
                    return self.fail(CramMd5Error::Unexpected("completed"));
                }
                tracing::info!(principal = %self.credential.principal, "authentication succeeded");
                self.settle(ClientOutcome::Authenticated)
            }
            Message::Failed => {
                tracing::warn!(principal = %self.credential.principal, "authentication refused");
                self.settle(ClientOutcome::Refused)
            }
            Message::Error(e) => self.fail(CramMd5Error::Peer(e.error.unwrap_or_default())),
            Message::Authenticate(_) => self.fail(CramMd5Error::Unexpected("authenticate")),
            Message::Start(_) => self.fail(CramMd5Error::Unexpected("start")),
        }
    }

    fn settle(&mut self, outcome: ClientOutcome) -> ClientStep {
        self.state = State::Done;
        self.outcome = Some(outcome);
        ClientStep {
            reply: None,
            outcome: self.outcome.clone(),
        }
    }

    fn fail(&mut self, err: CramMd5Error) -> ClientStep {
        tracing::warn!(error = %err, "CRAM-MD5 authentication error");
        self.settle(ClientOutcome::Error(err.to_string()))
    }
}
