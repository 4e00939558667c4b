//! The C ABI of `libnestguard.so`, declared in `include/nestguard.h`.
//!
//! Conventions (repeated at the top of the header and in docs/abi.md):
//!
//! * Every exported symbol is named `nestguard_<type>_<verb>`.
//! * Fallible functions return a [`nestguard_result`]: `NESTGUARD_RESULT_OK`
//!   (0) or a code from a range owned by one module. Codes are stable and are
//!   never reused.
//! * After a failure, `nestguard_error_message` copies a human-readable text
//!   of the last error *on the calling thread* into a caller buffer; the text
//!   names the file, line or JSON path where one applies, and never contains
//!   a secret.
//! * Out-parameters come last and are written only on success. The one
//!   exception is the `size_t *out_n` of functions that fill a caller buffer:
//!   on `NESTGUARD_RESULT_BUFFER_TOO_SMALL` it receives the size needed.
//! * Handles are opaque, made by `_new` (or a named constructor) and released
//!   by `_free`; `_free(NULL)` is a no-op. A handle's docs say whether it may
//!   be used from several threads at once.
//! * Byte buffers are `const uint8_t *ptr, size_t len`; NULL is allowed only
//!   with `len == 0`. Strings are UTF-8 pointer + length, not NUL-terminated.
//! * Mesos messages cross the ABI as serialized protobuf bytes
//!   (`SerializePartialToString` on the C++ side: required fields may be absent).
//! * Bytes returned by the library are a `nestguard_bytes` handle, freed with
//!   `nestguard_bytes_free`.
//! * No panic crosses the ABI: every function runs inside a panic boundary and
//!   returns `NESTGUARD_RESULT_PANIC` (or NULL/0/false) instead.
//! * A NULL argument where a value is required gives
//!   `NESTGUARD_RESULT_NULL_PARAMETER`, never a crash.

#![allow(non_camel_case_types, reason = "C type names")]
#![allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "pointers are checked by the ffi helpers"
)]

#[macro_use]
mod panic;
#[macro_use]
mod arguments;
mod ffi;

pub mod audit;
pub mod authorizer;
pub mod bytes;
pub mod container_id;
pub mod cram_md5;
pub mod credentials;
pub mod error;
mod error_codes;
pub mod isolator;
pub mod launcher;
pub mod metrics;
pub mod result;
pub mod selftest;
pub mod version;

pub use result::nestguard_result;
