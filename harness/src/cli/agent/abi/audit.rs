//! The authorizer's decision audit callback
//! (`nestguard_authorizer_set_audit_callback`): the C trampoline and the
//! closure it hands each JSON record to.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust (see `mod.rs`); each call has its SAFETY comment.
#![allow(unsafe_code)]

use super::{AbiFailure, Authorizer};
use crate::cli::agent::bindings as ffi;

/// What receives the authorizer's audit records (JSON bytes).
pub type AuditFn = dyn Fn(&[u8]) + Send + Sync;

/// The C callback: hands the record to the closure behind `userdata`.
unsafe extern "C" fn audit_trampoline(
    userdata: *mut std::ffi::c_void,
    json: *const u8,
    len: usize,
) {
    // SAFETY: `userdata` is the `Box<AuditFn>` that `set_audit` registered
    // and `clear_audit` frees only after unregistering returned; the library
    // passes `len` valid bytes for the call.
    let (f, bytes) = unsafe {
        (
            &*userdata.cast::<Box<AuditFn>>(),
            std::slice::from_raw_parts(json, len),
        )
    };
    // No panic may unwind into the library.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(bytes)));
}

impl Authorizer {
    /// Sends every decision (one in `sample_every`; only denials if
    /// `denials_only`) to `sink` as JSON, replacing an earlier sink.
    pub fn set_audit(
        &self,
        sink: Box<AuditFn>,
        sample_every: u32,
        denials_only: bool,
    ) -> Result<(), AbiFailure> {
        let mut slot = self.audit.lock().unwrap_or_else(|p| p.into_inner());
        let boxed = Box::new(sink);
        let userdata = std::ptr::from_ref::<Box<AuditFn>>(&boxed).cast_mut().cast();
        let options = ffi::nestguard_audit_options {
            sample_every,
            denials_only,
        };
        // SAFETY: live handle; `boxed` stays alive in `slot` until
        // `clear_audit` has unregistered it.
        let code = unsafe {
            self.abi.f().nestguard_authorizer_set_audit_callback(
                self.handle.0,
                Some(audit_trampoline),
                userdata,
                &options,
            )
        };
        self.abi.check(code)?;
        // The replaced closure is no longer called once registration returned.
        *slot = Some(boxed);
        Ok(())
    }

    /// Stops the audit callback; when this returns it is not running.
    pub fn clear_audit(&self) {
        let mut slot = self.audit.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            // SAFETY: live handle.
            let code = unsafe {
                self.abi
                    .f()
                    .nestguard_authorizer_clear_audit_callback(self.handle.0)
            };
            if let Err(e) = self.abi.check(code) {
                tracing::error!(error = %e, "unregistering the audit callback failed; leaking its closure");
                std::mem::forget(slot.take());
                return;
            }
            *slot = None;
        }
    }
}
