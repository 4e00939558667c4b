//! The library's metrics snapshot (`nestguard_metrics_snapshot`), as the
//! agent's `/metrics` endpoints read it.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust (see `mod.rs`); each call has its SAFETY comment.
#![allow(unsafe_code)]

use std::sync::Arc;

use super::{Abi, AbiFailure};
use crate::cli::agent::bindings as ffi;
use crate::cli::agent::metrics::LibraryMetrics;

impl LibraryMetrics for Arc<Abi> {
    fn json(&self) -> Result<String, String> {
        self.metrics(ffi::NESTGUARD_METRICS_FORMAT_JSON)
            .map_err(|e| e.to_string())
    }

    fn prometheus(&self) -> Result<String, String> {
        self.metrics(ffi::NESTGUARD_METRICS_FORMAT_PROMETHEUS)
            .map_err(|e| e.to_string())
    }
}

impl Abi {
    /// `nestguard_metrics_snapshot` in `format` (a
    /// `NESTGUARD_METRICS_FORMAT_*`): the library's process-wide metrics.
    pub fn metrics(&self, format: ffi::nestguard_metrics_format) -> Result<String, AbiFailure> {
        self.text_out("the metrics snapshot", |buf, len, needed| {
            // SAFETY: valid buffer and out pointer for the call.
            unsafe {
                self.f()
                    .nestguard_metrics_snapshot(format, buf, len, needed)
            }
        })
    }
}
