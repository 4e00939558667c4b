//! The library's metrics over the C ABI: one call that copies a snapshot,
//! as JSON (Mesos' `/metrics/snapshot` shape) or Prometheus text, into a
//! caller buffer.

use std::ffi::c_char;

use super::error::fail;
use super::error::text_out;
use super::result::nestguard_result;
use crate::metrics;

/// The text `nestguard_metrics_snapshot` writes. Inputs take the number as
/// a `uint32_t` (an unknown number is an error).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum nestguard_metrics_format {
    /// One flat JSON object of name → number, as Mesos'
    /// `/metrics/snapshot` (`{"nestguard/authz/allowed": 3, ...}`).
    Json = 0,
    /// The Prometheus text format 0.0.4: for each metric a `# TYPE` line
    /// (`counter` or `gauge`) and a value line, the name's `/` turned to `_`
    /// (`nestguard_authz_allowed 3`).
    Prometheus = 1,
}

const FORMAT_JSON: u32 = nestguard_metrics_format::Json as u32;
const FORMAT_PROMETHEUS: u32 = nestguard_metrics_format::Prometheus as u32;

/// Copies a snapshot of the library's metrics (process-wide: every
/// authorizer, approver, launcher and isolator of this process) into
/// `buf`, NUL-terminated, in `format` (a `nestguard_metrics_format`).
///
/// The metrics, in Mesos' naming style: `nestguard/authz/allowed`,
/// `nestguard/authz/denied` (a request that could not be decided counts as
/// denied, and also in `nestguard/authz/errors`), the same per action
/// (`nestguard/authz/kill_nested_container/allowed`, ...), decision latency
/// as a Mesos timer (`nestguard/authz/decision_latency_ms/count`, `/min`,
/// `/max`, `/p50`, `/p90`, `/p95`, `/p99`, `/p999`, `/p9999`; one decision
/// in 64 is timed), and `nestguard/isolation/launches`, `launch_errors`,
/// `launch_latency_ms/...`, `containers_tracked`, `oom_kills`,
/// `recoveries`, `orphans_destroyed`, `unmanaged_containers`. Counters
/// count since the library was loaded.
///
/// `*out_n` (may be NULL) receives the size needed, NUL included. When
/// `len` is smaller (or `buf` is NULL with `len == 0`, to ask for the size)
/// nothing is copied and the result is `NESTGUARD_RESULT_BUFFER_TOO_SMALL`;
/// the snapshot may grow between two calls, so leave room or retry.
///
/// Thread safety: any thread, any time; the values are read without locks
/// (each one is exact, the set is not one instant).
///
/// Errors: `NESTGUARD_RESULT_INVALID_ARGUMENT` for an unknown `format`,
/// `NESTGUARD_RESULT_NULL_PARAMETER` for a NULL `buf` with `len > 0`,
/// `NESTGUARD_RESULT_BUFFER_TOO_SMALL`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_metrics_snapshot(
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        let samples = metrics::snapshot();
        let text = match format {
            FORMAT_JSON => metrics::to_json(&samples),
            FORMAT_PROMETHEUS => metrics::to_prometheus(&samples),
            other => {
                return fail(
                    nestguard_result::InvalidArgument,
                    format!("unknown nestguard_metrics_format {other}"),
                );
            }
        };
        if buf.is_null() && len > 0 {
            return fail(nestguard_result::NullParameter, "argument `buf` is NULL with a non-zero length");
        }
        text_out(&text, buf, len, out_n, "the metrics snapshot does not fit the buffer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(format: u32) -> (nestguard_result, String, usize) {
        let mut needed = 0;
        let rc = nestguard_metrics_snapshot(format, std::ptr::null_mut(), 0, &mut needed);
        if rc != nestguard_result::BufferTooSmall {
            return (rc, String::new(), needed);
        }
        let mut buf = vec![0 as c_char; needed + 4096];
        let rc = nestguard_metrics_snapshot(format, buf.as_mut_ptr(), buf.len(), &mut needed);
        let bytes: Vec<u8> = buf[..needed - 1].iter().map(|&c| c as u8).collect();
        (rc, String::from_utf8(bytes).unwrap(), needed)
    }

    #[test]
    fn json_snapshot_is_a_flat_object_with_the_totals() {
        let (rc, text, _) = snapshot(FORMAT_JSON);
        assert_eq!(rc, nestguard_result::Ok);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for name in [
            "nestguard/authz/allowed",
            "nestguard/authz/denied",
            "nestguard/authz/kill_nested_container/allowed",
            "nestguard/authz/decision_latency_ms/count",
            "nestguard/isolation/launches",
            "nestguard/isolation/containers_tracked",
            "nestguard/isolation/unmanaged_containers",
        ] {
            assert!(v[name].is_number(), "{name} in {text}");
        }
    }

    #[test]
    fn a_small_buffer_gets_buffer_too_small_and_the_size() {
        let mut needed = 0;
        let mut buf = [1 as c_char; 8];
        let rc = nestguard_metrics_snapshot(FORMAT_PROMETHEUS, buf.as_mut_ptr(), 8, &mut needed);
        assert_eq!(rc, nestguard_result::BufferTooSmall);
        assert!(needed > 8);
        assert_eq!(buf, [1; 8], "nothing copied");
        let rc = nestguard_metrics_snapshot(7, std::ptr::null_mut(), 0, &mut needed);
        assert_eq!(rc, nestguard_result::InvalidArgument);
        let rc = nestguard_metrics_snapshot(FORMAT_JSON, std::ptr::null_mut(), 4, &mut needed);
        assert_eq!(rc, nestguard_result::NullParameter);
    }
}
