//! CRAM-MD5 (RFC 2195) as Mesos runs it over libprocess messages
//! (`mesos.internal.Authentication*Message`), without any transport.
//!
//! [`Authenticator`] is the server side (the master's
//! `CRAMMD5AuthenticatorSession`), [`Authenticatee`] the client side (the
//! agent's or scheduler's `CRAMMD5Authenticatee`). Both are plain state
//! machines: the host feeds each received [`Message`] to `receive` and sends
//! back the returned reply, so they run the same under a libprocess actor,
//! the C ABI or a test.
//!
//! Mesos delegates the mechanism to Cyrus SASL; this module implements the
//! mechanism itself, byte-compatible with Cyrus (see the interop tests), and
//! tightens it: the challenge comes from the OS CSPRNG, a session answers one
//! response only, digests are compared in constant time, inputs longer than
//! [`MAX_INPUT`] bytes are rejected and the session timeout is configurable.

mod client;
mod digest;
mod message;
mod server;

pub use client::{Authenticatee, ClientConfig, ClientOutcome, ClientStep};
pub use digest::{hex_digest, response};
pub use message::{Message, MessageKind};
pub use server::{Authenticator, ServerConfig, ServerOutcome, ServerStep, make_challenge};

/// The only mechanism offered and accepted.
pub const MECHANISM: &str = "CRAM-MD5";

/// Largest challenge, response or start data accepted, in bytes.
pub const MAX_INPUT: usize = 1024;

/// Mesos' hard-coded session timeout; ours is configurable with this default.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Errors of the CRAM-MD5 layer. Texts that Mesos also produces are the same
/// words; none contains a secret or a digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CramMd5Error {
    /// A message arrived in a state that does not expect it.
    #[error("Unexpected authentication '{0}' received")]
    Unexpected(&'static str),
    /// The peer offered or chose a mechanism other than CRAM-MD5.
    #[error("unsupported authentication mechanism '{0}' (only CRAM-MD5 is supported)")]
    Mechanism(String),
    /// CRAM-MD5 has no client initial response.
    #[error("CRAM-MD5 takes no initial client response, got {0} bytes")]
    InitialResponse(usize),
    /// Input over [`MAX_INPUT`].
    #[error("authentication {what} of {len} bytes exceeds the limit of {MAX_INPUT} bytes")]
    TooLong {
        /// "challenge", "response", ...
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// A response that is not `<user> <32 lowercase hex digits>`.
    #[error("malformed CRAM-MD5 response: {0}")]
    Malformed(&'static str),
    /// The session ran past its timeout.
    #[error("Authentication timed out after {0:?}")]
    TimedOut(std::time::Duration),
    /// The OS random generator failed.
    #[error("failed to generate a challenge: {0}")]
    Random(String),
    /// The peer reported an error.
    #[error("Authentication error: {0}")]
    Peer(String),
    /// Serialized bytes did not decode as the stated message.
    #[error("invalid {kind} bytes: {reason}")]
    Decode {
        /// Message type name.
        kind: &'static str,
        /// The decoder's error.
        reason: String,
    },
    /// An unknown message kind number.
    #[error("unknown CRAM-MD5 message kind {0}")]
    UnknownKind(u32),
}
