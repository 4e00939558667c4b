//! ContainerID helpers: the dotted form and Mesos' validation, over
//! serialized `mesos.ContainerID` bytes.

use super::bytes::nestguard_bytes;
use super::error::text_out;
use super::ffi::write_out;
use super::result::nestguard_result;
use crate::container_id;
use crate::proto::mesos::ContainerId;

/// Parses a dotted container id (`root.child.grandchild`, UTF-8, not
/// NUL-terminated), validates every level as the Mesos agent does, and
/// returns the serialized `mesos.ContainerID` in `*out` (free it with
/// `nestguard_bytes_free`).
///
/// Errors: `NESTGUARD_RESULT_INVALID_CONTAINER_ID` with Mesos' message (e.g.
/// "'ContainerID.value' 'a b' contains invalid characters").
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_container_id_parse(
    text: *const std::ffi::c_char,
    text_len: usize,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let text = try_str!(text, text_len, "text");
        let id = try_abi!(container_id::parse_dotted(text));
        write_out(out, nestguard_bytes::into_raw(prost::Message::encode_to_vec(&id)));
        nestguard_result::Ok
    }
}

/// Validates a serialized `mesos.ContainerID` and writes its dotted form,
/// NUL-terminated, into `buf`. `*out_n` receives the size needed including
/// the NUL; when `buf_len` is smaller, nothing is written and
/// `NESTGUARD_RESULT_BUFFER_TOO_SMALL` is returned.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_container_id_render(
    id: *const u8,
    id_len: usize,
    buf: *mut std::ffi::c_char,
    buf_len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out_n, "out_n");
        let id = try_decode!(ContainerId, id, id_len, "id");
        try_abi!(container_id::validate(&id));
        text_out(&container_id::to_dotted(&id), buf, buf_len, out_n, "the buffer is too small for the container id")
    }
}
