//! The authenticator (server) side of CRAM-MD5.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::digest::hex_digest;
use super::message::Message;
use super::{CramMd5Error, DEFAULT_TIMEOUT, MAX_INPUT, MECHANISM};
use crate::credentials::secret::Secret;
use crate::credentials::store::CredentialStore;
use crate::proto::mesos::internal::AuthenticationMechanismsMessage;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// How long a session may take from creation to the response.
    pub timeout: Duration,
    /// The host name in challenges (default: this host's name).
    pub hostname: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            timeout: DEFAULT_TIMEOUT,
            hostname: None,
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerOutcome {
    /// The client proved it holds this principal's secret.
    Authenticated(String),
    /// Unknown principal or wrong secret (Mesos: `None`).
    Refused,
    /// Protocol error, timeout (Mesos: a failed future).
    Error(String),
}

/// What one received message produced.
#[derive(Debug, Default)]
pub struct ServerStep {
    /// The message to send back, if any.
    pub reply: Option<Message>,
    /// Set when this message ended the session.
    pub outcome: Option<ServerOutcome>,
}

enum State {
    AwaitingStart,
    AwaitingResponse { challenge: Zeroizing<Vec<u8>> },
    Done,
}

/// One server session, for one authenticating client.
///
/// Single use: the challenge answers exactly one response, after which every
/// message gets Mesos' "Unexpected authentication ..." error. Not `Sync`
/// across concurrent calls (take `&mut`); sessions are independent, and the
/// shared store is read-only.
pub struct Authenticator {
    store: Arc<CredentialStore>,
    config: ServerConfig,
    started: Instant,
    state: State,
    outcome: Option<ServerOutcome>,
}

/// Secret used to compute a digest for an unknown principal, so that
/// unknown and known principals take the same time.
static DECOY: std::sync::LazyLock<Secret> =
    std::sync::LazyLock::new(|| Secret::from("nestguard-decoy-secret-for-unknown-principals"));

impl Authenticator {
    /// Starts a session (the server's answer to `AuthenticateMessage`);
    /// returns it with the `AuthenticationMechanismsMessage` to send.
    pub fn new(store: Arc<CredentialStore>, config: ServerConfig, now: Instant) -> (Self, Message) {
        if store.is_empty() {
            tracing::warn!(
                "no credentials loaded: CRAM-MD5 authentication requests will be refused"
            );
        }
        let session = Authenticator {
            store,
            config,
            started: now,
            state: State::AwaitingStart,
            outcome: None,
        };
        let offer = Message::Mechanisms(AuthenticationMechanismsMessage {
            mechanisms: vec![MECHANISM.to_owned()],
        });
        (session, offer)
    }

    /// The session's result once it has ended.
    pub fn outcome(&self) -> Option<&ServerOutcome> {
        self.outcome.as_ref()
    }

    /// Ends the session if it has run past its timeout (call it from a timer).
    pub fn poll_timeout(&mut self, now: Instant) -> Option<ServerStep> {
        if matches!(self.state, State::Done) {
            return None;
        }
        if now.saturating_duration_since(self.started) <= self.config.timeout {
            return None;
        }
        let err = CramMd5Error::TimedOut(self.config.timeout);
        tracing::warn!(error = %err, "CRAM-MD5 session timed out");
        Some(self.finish_error(err))
    }

    /// Handles one message from the client.
    pub fn receive(&mut self, message: Message, now: Instant) -> ServerStep {
        if let Some(step) = self.poll_timeout(now) {
            return step;
        }
        match (message, &self.state) {
            (Message::Start(start), State::AwaitingStart) => {
                tracing::debug!("received CRAM-MD5 start");
                if start.mechanism != MECHANISM {
                    return self.finish_error(CramMd5Error::Mechanism(start.mechanism));
                }
                let initial = start.data.as_deref().unwrap_or_default();
                if !initial.is_empty() {
                    return self.finish_error(CramMd5Error::InitialResponse(initial.len()));
                }
                let challenge = match make_challenge(self.config.hostname.as_deref()) {
                    Ok(c) => c,
                    Err(e) => return self.finish_error(e),
                };
                let reply = Message::step(challenge.to_vec());
                self.state = State::AwaitingResponse { challenge };
                ServerStep {
                    reply: Some(reply),
                    outcome: None,
                }
            }
            (Message::Step(step), State::AwaitingResponse { challenge }) => {
                tracing::debug!("received CRAM-MD5 response");
                let verdict = verify(&self.store, challenge, &step.data);
                // Single use: the challenge is gone whatever the verdict.
                self.state = State::Done;
                match verdict {
                    Ok(principal) => {
                        tracing::info!(principal = %principal, "CRAM-MD5 authentication succeeded");
                        self.outcome = Some(ServerOutcome::Authenticated(principal));
                        ServerStep {
                            reply: Some(Message::Completed),
                            outcome: self.outcome.clone(),
                        }
                    }
                    Err(Verdict::Refused(principal)) => {
                        tracing::warn!(principal = %principal, "CRAM-MD5 authentication failed");
                        self.outcome = Some(ServerOutcome::Refused);
                        ServerStep {
                            reply: Some(Message::Failed),
                            outcome: self.outcome.clone(),
                        }
                    }
                    Err(Verdict::Invalid(e)) => self.finish_error(e),
                }
            }
            (Message::Start(_), _) => self.unexpected("start"),
            (Message::Step(_), _) => self.unexpected("step"),
            (other, _) => {
                let name = match other {
                    Message::Authenticate(_) => "authenticate",
                    Message::Mechanisms(_) => "mechanisms",
                    Message::Completed => "completed",
                    Message::Failed => "failed",
                    _ => "error",
                };
                self.unexpected(name)
            }
        }
    }

    /// Mesos' answer to an out-of-order message: an error message to the
    /// client. A session that already ended keeps its outcome.
    fn unexpected(&mut self, what: &'static str) -> ServerStep {
        let err = CramMd5Error::Unexpected(what);
        tracing::warn!(error = %err, "out-of-order CRAM-MD5 message");
        if matches!(self.state, State::Done) {
            return ServerStep {
                reply: Some(Message::error(err.to_string())),
                outcome: None,
            };
        }
        self.finish_error(err)
    }

    fn finish_error(&mut self, err: CramMd5Error) -> ServerStep {
        self.state = State::Done;
        let text = err.to_string();
        self.outcome = Some(ServerOutcome::Error(text.clone()));
        ServerStep {
            reply: Some(Message::error(text)),
            outcome: self.outcome.clone(),
        }
    }
}

enum Verdict {
    Refused(String),
    Invalid(CramMd5Error),
}

/// Checks `<principal> <hex digest>` against the store in constant time.
fn verify(store: &CredentialStore, challenge: &[u8], response: &[u8]) -> Result<String, Verdict> {
    if response.len() > MAX_INPUT {
        return Err(Verdict::Invalid(CramMd5Error::TooLong {
            what: "response",
            len: response.len(),
        }));
    }
    // Like Cyrus, the digest follows the last space, so principals may contain spaces.
    let Some(space) = response.iter().rposition(|&b| b == b' ') else {
        return Err(Verdict::Invalid(CramMd5Error::Malformed(
            "no space before the digest",
        )));
    };
    let (user, digest) = (&response[..space], &response[space + 1..]);
    let Ok(principal) = std::str::from_utf8(user) else {
        return Err(Verdict::Invalid(CramMd5Error::Malformed(
            "principal is not UTF-8",
        )));
    };
    if principal.is_empty() {
        return Err(Verdict::Invalid(CramMd5Error::Malformed("empty principal")));
    }
    if digest.len() != 32 {
        return Err(Verdict::Invalid(CramMd5Error::Malformed(
            "digest is not 32 hex digits",
        )));
    }
    // An empty stored secret is treated as no credential at all.
    let (secret, known) = match store.secret(principal) {
        Some(s) if !s.is_empty() => (s, true),
        _ => (&*DECOY, false),
    };
    let expected = hex_digest(secret, challenge);
    let equal: bool = expected[..].ct_eq(digest).into();
    if equal && known {
        Ok(principal.to_owned())
    } else {
        Err(Verdict::Refused(principal.to_owned()))
    }
}

/// A fresh challenge `<random.timestamp@hostname>` (the form Cyrus uses),
/// with 64 bits from the OS CSPRNG.
pub fn make_challenge(hostname: Option<&str>) -> Result<Zeroizing<Vec<u8>>, CramMd5Error> {
    let random = getrandom::u64().map_err(|e| CramMd5Error::Random(e.to_string()))?;
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let host = match hostname {
        Some(h) => h.to_owned(),
        None => gethostname::gethostname().to_string_lossy().into_owned(),
    };
    Ok(Zeroizing::new(
        format!("<{random}.{secs}@{host}>").into_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::store::Credential;

    #[test]
    fn challenges_are_unique_and_well_formed() {
        let a = make_challenge(Some("h")).unwrap();
        let b = make_challenge(Some("h")).unwrap();
        assert_ne!(a, b);
        let s = std::str::from_utf8(&a).unwrap();
        assert!(s.starts_with('<') && s.ends_with("@h>") && s.contains('.'));
    }

    #[test]
    fn unknown_principal_is_refused() {
        let store =
            CredentialStore::from_credentials([Credential::new("a", Secret::from("x"))]).unwrap();
        assert!(matches!(
            verify(&store, b"<1.2@h>", b"b 0123456789abcdef0123456789abcdef"),
            Err(Verdict::Refused(_))
        ));
    }
}
