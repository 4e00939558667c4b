//! The decision audit log over the C ABI: a callback that receives every
//! decision of an authorizer (and of its approvers) as one JSON record.
//!
//! A record is one JSON object (UTF-8, no trailing newline, not
//! NUL-terminated): `time` (RFC 3339 UTC), `subject` (the principal,
//! `token for <container id>` for an executor token, or `unauthenticated`),
//! `action` (the `mesos.authorization.Action` name), `object` (the users and
//! container ids the decision read), `allowed`, `decision` (as
//! `nestguard_authorizer_explain`: `list`, `index` (null when `permissive`
//! decided), `decided_by`, `parent`/`child` for launches; or `error`) and
//! `latency_ns`. Records never hold a secret or token text. Each string a
//! caller controls (`subject`, every `object` field, an `error` text) holds
//! at most 256 bytes (`AUDIT_FIELD_MAX_BYTES`); a cut one is named in
//! `truncated` with its whole length and a SHA-256 of its whole value.
//!
//! Thread safety: the callback is called on whichever thread decides, often
//! several at once, while that decision's caller waits; it must be
//! thread-safe and quick, must not unwind (no C++ exception may leave it),
//! and must not call back into the authorizer or its approvers (registering
//! from it deadlocks). `nestguard_authorizer_clear_audit_callback` waits for
//! callbacks in flight: once it returns, `userdata` may be freed.
//! Explanation calls (`nestguard_authorizer_explain`,
//! `nestguard_approver_explain`) are not decisions and are not reported.

use std::ffi::c_void;
use std::sync::Arc;

use super::authorizer::nestguard_authorizer;
use super::error::fail;
use super::ffi::handle_ref;
use super::result::nestguard_result;
use crate::authz::{AuditOptions, AuditRecord, AuditSink};

/// Receives one audit record: `json`/`len` are the record's bytes, valid for
/// the call only; `userdata` is the pointer given at registration.
pub type nestguard_audit_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, json: *const u8, len: usize)>;

/// Which decisions reach the callback.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct nestguard_audit_options {
    /// Report one decision in `sample_every` (counted after the
    /// `denials_only` filter, deterministically); 0 and 1 report every one.
    pub sample_every: u32,
    /// Report only denials (a decision that failed counts as a denial).
    pub denials_only: bool,
}

/// The registered callback.
struct CallbackSink {
    callback: unsafe extern "C" fn(*mut c_void, *const u8, usize),
    userdata: *mut c_void,
}

// SAFETY: the registration contract (module notes, header) requires the
// callback and its userdata to be usable from any thread at once; the
// library only passes the pointer back, never dereferences it.
unsafe impl Send for CallbackSink {}
// SAFETY: as for `Send`.
unsafe impl Sync for CallbackSink {}

impl AuditSink for CallbackSink {
    fn record(&self, record: &AuditRecord) {
        let json = record.to_json();
        // SAFETY: the caller registered a function of this signature and
        // keeps `userdata` valid until unregistering returns; the bytes
        // live for the call.
        unsafe { (self.callback)(self.userdata, json.as_ptr(), json.len()) }
    }
}

/// Registers `callback` (with `userdata`, passed back unchanged) to receive
/// an audit record of every later decision of `auth` and of every approver
/// made from it, filtered by `options` (NULL = every decision). Replaces a
/// callback registered before. Auditing is off until this is called; while
/// it is off a decision pays one atomic load.
///
/// A record is one JSON object (UTF-8, not NUL-terminated, no newline):
/// `time` (RFC 3339 UTC), `subject` (the principal, `token for <container
/// id>` for an executor token, or `unauthenticated`), `action` (the
/// `mesos.authorization.Action` name), `object` (the users and container ids
/// the decision read), `allowed`, `decision` (as
/// `nestguard_authorizer_explain`: `list`, `index` (null when `permissive`
/// decided), `decided_by`, `parent`/`child` for launches; or `error`) and
/// `latency_ns`. It never holds a secret or token text. Each string a
/// caller controls (`subject`, every `object` field, an `error` text) holds
/// at most 256 bytes, cut on a character; a cut one is named in `truncated`
/// (`{"<field>": {"len": N, "sha256": "<hex>"}}`, absent when nothing was
/// cut). Explanation calls are not decisions and are not reported.
///
/// Thread safety: the callback is called on whichever thread decides, from
/// several threads at once, while that decision's caller waits. It must be
/// thread-safe and quick, must not unwind (no C++ exception may leave it),
/// and must not call back into this authorizer or its approvers
/// (registering or unregistering from it deadlocks).
///
/// Errors: `NESTGUARD_RESULT_NULL_PARAMETER` for a NULL `auth` or `callback`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_set_audit_callback(
    auth: *const nestguard_authorizer,
    callback: nestguard_audit_callback,
    userdata: *mut c_void,
    options: *const nestguard_audit_options,
) -> nestguard_result {
    ffi_panic_boundary! {
        let Some(auth) = handle_ref(auth) else {
            return fail(nestguard_result::NullParameter, "argument `auth` must not be NULL");
        };
        let Some(callback) = callback else {
            return fail(nestguard_result::NullParameter, "argument `callback` must not be NULL");
        };
        let options = handle_ref(options).copied().unwrap_or_default();
        auth.inner.set_audit_sink(
            Arc::new(CallbackSink { callback, userdata }),
            AuditOptions {
                sample_every: u64::from(options.sample_every),
                denials_only: options.denials_only,
            },
        );
        nestguard_result::Ok
    }
}

/// Unregisters the audit callback of `auth` (a no-op when none is). Waits
/// for callbacks in flight: when it returns, the callback is not running and
/// will not be called again, and its userdata may be freed. Must not be
/// called from the callback.
///
/// Errors: `NESTGUARD_RESULT_NULL_PARAMETER` for a NULL `auth`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_clear_audit_callback(
    auth: *const nestguard_authorizer,
) -> nestguard_result {
    ffi_panic_boundary! {
        let Some(auth) = handle_ref(auth) else {
            return fail(nestguard_result::NullParameter, "argument `auth` must not be NULL");
        };
        auth.inner.clear_audit_sink();
        nestguard_result::Ok
    }
}
