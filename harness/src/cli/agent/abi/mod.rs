//! The agent's only way into nestguard's modules: the C ABI of the loaded
//! `libnestguard.so`, called through the function table that bindgen
//! generated from `include/nestguard.h` (`bindings.rs`). Each wrapper owns
//! one handle and frees it on drop.
//!
//! One file per handle family, as the library's `src/abi/`: `authorizer`
//! and its `audit` callback, `credentials` (credential sets, HTTP
//! authentication, the credential hook), `launcher`, `isolator` and
//! `metrics`. This file holds what they share: the loaded library
//! ([`Abi`]), its failure type, result-code constants and the handle
//! wrapper; the wrappers are re-exported here.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust; with `cli/library.rs` (and the generated `bindings.rs`) this
// module and its files are the harness's only unsafe code, each call with
// its SAFETY comment.
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::path::Path;
use std::sync::Arc;

use super::bindings::{
    self as ffi, NESTGUARD_RESULT_BUFFER_TOO_SMALL, NESTGUARD_RESULT_OK, NESTGUARD_RESULT_PANIC,
    NESTGUARD_RESULT_PROTOBUF_DECODE, nestguard_bytes, nestguard_result,
};
use crate::cli::library::NestguardLibrary;

mod audit;
mod authorizer;
mod credentials;
mod isolator;
mod launcher;
mod metrics;

pub use self::audit::AuditFn;
pub use self::authorizer::Authorizer;
pub use self::credentials::{Authentication, CredentialInjector, Credentials, HttpAuthenticator};
pub use self::isolator::{Isolator, Watch};
pub use self::launcher::{LaunchIo, Launcher};

/// A failed ABI call: the stable result code and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbiFailure {
    /// `nestguard_result` code (one of the `NESTGUARD_RESULT_*` constants).
    pub code: nestguard_result,
    /// `nestguard_error_message` text.
    pub message: String,
}

impl AbiFailure {
    /// A failure found on the agent's side of the call: a reply that did not
    /// decode as the message the header promises.
    fn undecodable(what: &str, e: prost::DecodeError) -> Self {
        AbiFailure {
            code: NESTGUARD_RESULT_PROTOBUF_DECODE,
            message: format!("{what}: {e}"),
        }
    }
}

impl std::fmt::Display for AbiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (nestguard result {})", self.message, self.code)
    }
}

impl std::error::Error for AbiFailure {}

/// Result codes the agent reacts to: the header's constants.
pub mod codes {
    pub use super::ffi::{
        NESTGUARD_RESULT_CHECKPOINT as CHECKPOINT,
        NESTGUARD_RESULT_CREDENTIAL_INJECTION as CREDENTIAL_INJECTION,
        NESTGUARD_RESULT_LAUNCHER_CONTAINER_EXISTS as LAUNCHER_CONTAINER_EXISTS,
        NESTGUARD_RESULT_LAUNCHER_PARENT_NOT_RUNNING as LAUNCHER_PARENT_NOT_RUNNING,
        NESTGUARD_RESULT_LAUNCHER_TIMEOUT as LAUNCHER_TIMEOUT,
        NESTGUARD_RESULT_LAUNCHER_UNKNOWN_CONTAINER as LAUNCHER_UNKNOWN_CONTAINER,
    };
}

/// The credential hook's modes (`nestguard_injection_mode`): the header's
/// constants.
pub mod injection_mode {
    pub use super::ffi::{
        NESTGUARD_INJECTION_MODE_AUTO as AUTO, NESTGUARD_INJECTION_MODE_SECRET as SECRET,
        NESTGUARD_INJECTION_MODE_TOKEN as TOKEN,
    };
}

/// The loaded library and its function table.
pub struct Abi {
    lib: NestguardLibrary,
}

impl Abi {
    /// Loads libnestguard.so from `path`.
    pub fn load(path: &Path) -> anyhow::Result<Arc<Abi>> {
        let lib = NestguardLibrary::load(path)?;
        Ok(Arc::new(Abi { lib }))
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &Path {
        self.lib.path()
    }

    /// The generated function table.
    fn f(&self) -> &ffi::Nestguard {
        self.lib.functions()
    }

    fn check(&self, code: nestguard_result) -> Result<(), AbiFailure> {
        if code == NESTGUARD_RESULT_OK {
            Ok(())
        } else {
            Err(AbiFailure {
                code,
                message: self.lib.last_error(),
            })
        }
    }

    fn take(&self, bytes: *mut nestguard_bytes) -> Result<Vec<u8>, AbiFailure> {
        self.lib.take_bytes(bytes).map_err(|e| AbiFailure {
            code: NESTGUARD_RESULT_PANIC,
            message: format!("{e:#}"),
        })
    }

    /// Text from a function that fills a caller buffer (`buf`, `len`,
    /// `out_n`): retried with the size the library asks for, a few times
    /// since the text may grow between calls.
    fn text_out(
        &self,
        what: &str,
        call: impl Fn(*mut c_char, usize, &mut usize) -> nestguard_result,
    ) -> Result<String, AbiFailure> {
        let mut buf = vec![0 as c_char; 16 * 1024];
        let mut needed = 0usize;
        for _ in 0..3 {
            let code = call(buf.as_mut_ptr(), buf.len(), &mut needed);
            if code == NESTGUARD_RESULT_BUFFER_TOO_SMALL {
                buf.resize(needed + 1024, 0);
                continue;
            }
            self.check(code)?;
            let raw: Vec<u8> = buf[..needed.saturating_sub(1)]
                .iter()
                .map(|c| *c as u8)
                .collect();
            return Ok(String::from_utf8_lossy(&raw).into_owned());
        }
        Err(AbiFailure {
            code: NESTGUARD_RESULT_BUFFER_TOO_SMALL,
            message: format!("{what} kept growing"),
        })
    }
}

fn text(s: &str) -> (*const c_char, usize) {
    (s.as_ptr().cast(), s.len())
}

/// A handle pointer the library documents as thread-safe.
struct Handle<T>(*mut T);
// SAFETY: every handle wrapped here is documented in include/nestguard.h as
// safe to use from several threads at once.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Handle<T> {}
