//! CRAM-MD5 over the C ABI: the server (authenticator) and client
//! (authenticatee) state machines, fed and answered with serialized
//! `mesos.internal.Authentication*Message` bytes.
//!
//! Message kinds (`kind` arguments and `*out_reply_kind`) are
//! [`nestguard_cram_md5_message_kind`] values (libprocess sends the messages
//! under their full type name, e.g. `mesos.internal.AuthenticationStepMessage`).
//! The session status (`*out_status`) is a [`nestguard_auth_status`].
//!
//! Session handles lock internally, so a handle may be used from several
//! threads, but the messages of one session must be fed in arrival order.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::bytes::nestguard_bytes;
use super::credentials::nestguard_credentials;
use super::error::fail;
use super::error::text_out;
use super::ffi::{free_handle, handle_ref, into_handle, write_out};
use super::result::{AbiError, nestguard_result};
use crate::credentials::cram_md5::{
    Authenticatee, Authenticator, ClientConfig, ClientOutcome, CramMd5Error, Message, MessageKind,
    ServerConfig, ServerOutcome,
};
use crate::credentials::{Credential, Secret};

impl AbiError for CramMd5Error {
    fn code(&self) -> nestguard_result {
        nestguard_result::CramMd5
    }
}

/// The NULL checks of the three out-pointers every step and poll writes
/// (the reply's kind, the reply and the status), in that order.
macro_rules! try_reply_outs {
    ($out_reply_kind:ident, $out_reply:ident, $out_status:ident) => {
        try_not_null!($out_reply_kind, "out_reply_kind");
        try_not_null!($out_reply, "out_reply");
        try_not_null!($out_status, "out_status");
    };
}

/// Where an authentication session stands after a call.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum nestguard_auth_status {
    /// More messages are expected.
    Continue = 0,
    /// Authenticated (server: the principal is available).
    Authenticated = 1,
    /// Refused: unknown principal or wrong secret (Mesos: `None` / `false`).
    Refused = 2,
    /// Protocol error or timeout (Mesos: a failed future); the text is
    /// available from the `_outcome_text` function.
    Error = 3,
}

/// Which `mesos.internal` message a byte buffer holds. Inputs take the
/// number as a `uint32_t` (an unknown number is an error, not undefined
/// behaviour); outputs are written as this type.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum nestguard_cram_md5_message_kind {
    /// No message (nothing to send).
    None = 0,
    /// `mesos.internal.AuthenticateMessage`.
    Authenticate = 1,
    /// `mesos.internal.AuthenticationMechanismsMessage`.
    Mechanisms = 2,
    /// `mesos.internal.AuthenticationStartMessage`.
    Start = 3,
    /// `mesos.internal.AuthenticationStepMessage`.
    Step = 4,
    /// `mesos.internal.AuthenticationCompletedMessage`.
    Completed = 5,
    /// `mesos.internal.AuthenticationFailedMessage`.
    Failed = 6,
    /// `mesos.internal.AuthenticationErrorMessage`.
    Error = 7,
}

impl From<MessageKind> for nestguard_cram_md5_message_kind {
    fn from(k: MessageKind) -> Self {
        match k {
            MessageKind::Authenticate => Self::Authenticate,
            MessageKind::Mechanisms => Self::Mechanisms,
            MessageKind::Start => Self::Start,
            MessageKind::Step => Self::Step,
            MessageKind::Completed => Self::Completed,
            MessageKind::Failed => Self::Failed,
            MessageKind::Error => Self::Error,
        }
    }
}

/// A CRAM-MD5 server session for one authenticating client.
pub struct nestguard_cram_md5_server {
    inner: Mutex<Authenticator>,
}

/// A CRAM-MD5 client exchange.
pub struct nestguard_cram_md5_client {
    inner: Mutex<Authenticatee>,
}

fn timeout(ms: u64) -> Duration {
    if ms == 0 {
        crate::credentials::cram_md5::DEFAULT_TIMEOUT
    } else {
        Duration::from_millis(ms)
    }
}

/// Writes an optional reply to the two out-parameters.
fn write_reply(
    reply: Option<Message>,
    out_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
) {
    match reply {
        Some(m) => {
            write_out(out_kind, m.kind().into());
            write_out(out_reply, nestguard_bytes::into_raw(m.encode()));
        }
        None => {
            write_out(out_kind, nestguard_cram_md5_message_kind::None);
            write_out(out_reply, std::ptr::null_mut());
        }
    }
}

fn server_status(outcome: Option<&ServerOutcome>) -> nestguard_auth_status {
    match outcome {
        None => nestguard_auth_status::Continue,
        Some(ServerOutcome::Authenticated(_)) => nestguard_auth_status::Authenticated,
        Some(ServerOutcome::Refused) => nestguard_auth_status::Refused,
        Some(ServerOutcome::Error(_)) => nestguard_auth_status::Error,
    }
}

fn client_status(outcome: Option<&ClientOutcome>) -> nestguard_auth_status {
    match outcome {
        None => nestguard_auth_status::Continue,
        Some(ClientOutcome::Authenticated) => nestguard_auth_status::Authenticated,
        Some(ClientOutcome::Refused) => nestguard_auth_status::Refused,
        Some(ClientOutcome::Error(_)) => nestguard_auth_status::Error,
    }
}

fn decode(kind: u32, bytes: &[u8]) -> Result<Message, CramMd5Error> {
    Message::decode(MessageKind::from_u32(kind)?, bytes)
}

/// Starts a server session (the answer to an `AuthenticateMessage`) against
/// `credentials`. `timeout_ms` bounds the session (0: Mesos' 5 s). Writes
/// the session to `*out` (free with `nestguard_cram_md5_server_free`) and
/// the `AuthenticationMechanismsMessage` to send in `*out_reply_kind` /
/// `*out_reply` (free with `nestguard_bytes_free`).
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_server_new(
    credentials: *const nestguard_credentials,
    timeout_ms: u64,
    out: *mut *mut nestguard_cram_md5_server,
    out_reply_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(credentials, "credentials");
        try_not_null!(out, "out");
        try_not_null!(out_reply_kind, "out_reply_kind");
        try_not_null!(out_reply, "out_reply");
        let Some(creds) = handle_ref(credentials) else {
            return fail(nestguard_result::NullParameter, "argument `credentials` must not be NULL");
        };
        let config = ServerConfig { timeout: timeout(timeout_ms), hostname: None };
        let (server, offer) = Authenticator::new(creds.store.clone(), config, Instant::now());
        write_out(out, into_handle(nestguard_cram_md5_server { inner: Mutex::new(server) }));
        write_reply(Some(offer), out_reply_kind, out_reply);
        nestguard_result::Ok
    }
}

/// What the ABI needs of either end of an exchange, so that feeding a
/// message and polling the timeout are written once for both.
trait Side {
    /// Feeds `message`; returns the reply to send, if any.
    fn receive_reply(&mut self, message: Message, now: Instant) -> Option<Message>;
    /// Ends the exchange if its timeout has passed; returns the reply to
    /// send, if any.
    fn poll_reply(&mut self, now: Instant) -> Option<Message>;
    /// Where the exchange stands.
    fn status(&self) -> nestguard_auth_status;
    /// The text the `_outcome_text` functions hand out.
    fn outcome_text(&self) -> String;
}

impl Side for Authenticator {
    fn receive_reply(&mut self, message: Message, now: Instant) -> Option<Message> {
        self.receive(message, now).reply
    }

    fn poll_reply(&mut self, now: Instant) -> Option<Message> {
        self.poll_timeout(now).unwrap_or_default().reply
    }

    fn status(&self) -> nestguard_auth_status {
        server_status(self.outcome())
    }

    fn outcome_text(&self) -> String {
        match self.outcome() {
            Some(ServerOutcome::Authenticated(p)) => p.clone(),
            Some(ServerOutcome::Error(e)) => e.clone(),
            _ => String::new(),
        }
    }
}

/// Shared body of the `_step` and `_poll_timeout` functions of both ends
/// (inside their panic boundaries, after the NULL checks of the handle):
/// feeds `message` (None = poll the timeout) and writes the reply and the
/// status. `name` is the handle's argument name, for the error text.
fn advance<S: Side>(
    side: Option<&Mutex<S>>,
    name: &str,
    message: Option<Message>,
    out_reply_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
    out_status: *mut nestguard_auth_status,
) -> nestguard_result {
    let Some(side) = side else {
        return fail(
            nestguard_result::NullParameter,
            format!("argument `{name}` must not be NULL"),
        );
    };
    let mut side = side
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = Instant::now();
    let reply = match message {
        Some(message) => side.receive_reply(message, now),
        None => side.poll_reply(now),
    };
    write_reply(reply, out_reply_kind, out_reply);
    write_out(out_status, side.status());
    nestguard_result::Ok
}

/// Shared body of the `_outcome_text` functions of both ends (inside their
/// panic boundaries, after the NULL checks).
fn outcome_text<S: Side>(
    side: Option<&Mutex<S>>,
    name: &str,
    buf: *mut std::ffi::c_char,
    buf_len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    let Some(side) = side else {
        return fail(
            nestguard_result::NullParameter,
            format!("argument `{name}` must not be NULL"),
        );
    };
    let text = side
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .outcome_text();
    text_out(
        &text,
        buf,
        buf_len,
        out_n,
        "the buffer is too small for the outcome text",
    )
}

/// Feeds one message from the client (`kind` + serialized bytes). Writes
/// the reply to send (kind 0 and NULL when none) and the session status.
/// Out-of-order messages give a reply `AuthenticationErrorMessage` with
/// Mesos' text ("Unexpected authentication 'step' received"); bytes that do
/// not decode give `NESTGUARD_RESULT_CRAM_MD5` and leave the session as it was.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_server_step(
    server: *const nestguard_cram_md5_server,
    kind: u32,
    message: *const u8,
    message_len: usize,
    out_reply_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
    out_status: *mut nestguard_auth_status,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(server, "server");
        try_reply_outs!(out_reply_kind, out_reply, out_status);
        let bytes = try_slice!(message, message_len, "message");
        let message = try_abi!(decode(kind, bytes));
        let handle = handle_ref(server).map(|h| &h.inner);
        advance(handle, "server", Some(message), out_reply_kind, out_reply, out_status)
    }
}

/// Ends the session with an error if its timeout has passed (call from a
/// timer). Writes the reply to send, if any, and the status.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_server_poll_timeout(
    server: *const nestguard_cram_md5_server,
    out_reply_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
    out_status: *mut nestguard_auth_status,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(server, "server");
        try_reply_outs!(out_reply_kind, out_reply, out_status);
        let handle = handle_ref(server).map(|h| &h.inner);
        advance(handle, "server", None, out_reply_kind, out_reply, out_status)
    }
}

/// Copies the session's outcome text, NUL-terminated, into `buf`: the
/// authenticated principal, or the error text; empty while continuing or
/// when refused. `*out_n` receives the size needed including the NUL.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_server_outcome_text(
    server: *const nestguard_cram_md5_server,
    buf: *mut std::ffi::c_char,
    buf_len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(server, "server");
        try_not_null!(out_n, "out_n");
        outcome_text(handle_ref(server).map(|h| &h.inner), "server", buf, buf_len, out_n)
    }
}

/// Releases a server session. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_server_free(server: *mut nestguard_cram_md5_server) {
    ffi_panic_boundary! {
        free_handle(server)
    }
}

/// Starts a client exchange for `principal` with `secret` (bytes; copied
/// into wiped memory, the caller may clear its copy) on behalf of the
/// libprocess `pid`. `timeout_ms` 0 means 5 s. Writes the exchange to `*out`
/// and the first message (`AuthenticateMessage`) to `*out_reply_kind` /
/// `*out_reply`; with an empty secret there is no message and `*out_status`
/// is `REFUSED` (Mesos' authenticatee does the same).
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_client_new(
    principal: *const std::ffi::c_char,
    principal_len: usize,
    secret: *const u8,
    secret_len: usize,
    pid: *const std::ffi::c_char,
    pid_len: usize,
    timeout_ms: u64,
    out: *mut *mut nestguard_cram_md5_client,
    out_reply_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
    out_status: *mut nestguard_auth_status,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        try_reply_outs!(out_reply_kind, out_reply, out_status);
        let principal = try_str!(principal, principal_len, "principal");
        let secret = try_slice!(secret, secret_len, "secret");
        let pid = try_str!(pid, pid_len, "pid");
        let credential = Credential::new(principal, Secret::new(secret.to_vec()));
        let config = ClientConfig { timeout: timeout(timeout_ms) };
        let (client, step) = Authenticatee::new(credential, pid, config, Instant::now());
        let status = client_status(client.outcome());
        write_out(out, into_handle(nestguard_cram_md5_client { inner: Mutex::new(client) }));
        write_reply(step.reply, out_reply_kind, out_reply);
        write_out(out_status, status);
        nestguard_result::Ok
    }
}

impl Side for Authenticatee {
    fn receive_reply(&mut self, message: Message, now: Instant) -> Option<Message> {
        self.receive(message, now).reply
    }

    fn poll_reply(&mut self, now: Instant) -> Option<Message> {
        self.poll_timeout(now).unwrap_or_default().reply
    }

    fn status(&self) -> nestguard_auth_status {
        client_status(self.outcome())
    }

    fn outcome_text(&self) -> String {
        match self.outcome() {
            Some(ClientOutcome::Error(e)) => e.clone(),
            _ => String::new(),
        }
    }
}

/// Feeds one message from the server; writes the reply to send (kind 0 and
/// NULL when none) and the status. Bytes that do not decode give
/// `NESTGUARD_RESULT_CRAM_MD5`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_client_step(
    client: *const nestguard_cram_md5_client,
    kind: u32,
    message: *const u8,
    message_len: usize,
    out_reply_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
    out_status: *mut nestguard_auth_status,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(client, "client");
        try_reply_outs!(out_reply_kind, out_reply, out_status);
        let bytes = try_slice!(message, message_len, "message");
        let message = try_abi!(decode(kind, bytes));
        let handle = handle_ref(client).map(|h| &h.inner);
        advance(handle, "client", Some(message), out_reply_kind, out_reply, out_status)
    }
}

/// Ends the exchange with an error if its timeout has passed.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_client_poll_timeout(
    client: *const nestguard_cram_md5_client,
    out_reply_kind: *mut nestguard_cram_md5_message_kind,
    out_reply: *mut *mut nestguard_bytes,
    out_status: *mut nestguard_auth_status,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(client, "client");
        try_reply_outs!(out_reply_kind, out_reply, out_status);
        let handle = handle_ref(client).map(|h| &h.inner);
        advance(handle, "client", None, out_reply_kind, out_reply, out_status)
    }
}

/// Copies the exchange's error text (e.g. "Authentication error: ..."),
/// NUL-terminated, into `buf`; empty unless the status is `ERROR`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_client_outcome_text(
    client: *const nestguard_cram_md5_client,
    buf: *mut std::ffi::c_char,
    buf_len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(client, "client");
        try_not_null!(out_n, "out_n");
        outcome_text(handle_ref(client).map(|h| &h.inner), "client", buf, buf_len, out_n)
    }
}

/// Releases a client exchange (its secret is wiped). NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_cram_md5_client_free(client: *mut nestguard_cram_md5_client) {
    ffi_panic_boundary! {
        free_handle(client)
    }
}
