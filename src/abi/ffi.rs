//! Pointer helpers: turn C arguments into Rust values or return
//! `NESTGUARD_RESULT_NULL_PARAMETER` / a decode error early, recording the
//! reason as the thread's last error.

/// Returns early with `NullParameter` if the pointer is NULL.
macro_rules! try_not_null {
    ($ptr:expr, $name:literal) => {
        if $ptr.is_null() {
            return $crate::abi::error::fail(
                $crate::abi::result::nestguard_result::NullParameter,
                concat!("argument `", $name, "` must not be NULL"),
            );
        }
    };
}

/// Borrows `(ptr, len)` as a byte slice; NULL is allowed only with `len == 0`.
macro_rules! try_slice {
    ($ptr:expr, $len:expr, $name:literal) => {
        match $crate::abi::ffi::slice_from($ptr, $len) {
            Some(slice) => slice,
            None => {
                return $crate::abi::error::fail(
                    $crate::abi::result::nestguard_result::NullParameter,
                    concat!("argument `", $name, "` is NULL with a non-zero length"),
                );
            }
        }
    };
}

/// Borrows `(ptr, len)` as UTF-8 text.
macro_rules! try_str {
    ($ptr:expr, $len:expr, $name:literal) => {{
        let bytes = try_slice!($ptr.cast::<u8>(), $len, $name);
        match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) => {
                return $crate::abi::error::fail(
                    $crate::abi::result::nestguard_result::InvalidUtf8,
                    concat!("argument `", $name, "` is not valid UTF-8"),
                );
            }
        }
    }};
}

/// Decodes `(ptr, len)` as the protobuf message `$t`.
macro_rules! try_decode {
    ($t:ty, $ptr:expr, $len:expr, $name:literal) => {{
        let bytes = try_slice!($ptr, $len, $name);
        match <$t as prost::Message>::decode(bytes) {
            Ok(m) => m,
            Err(e) => {
                return $crate::abi::error::fail(
                    $crate::abi::result::nestguard_result::ProtobufDecode,
                    format!(
                        concat!("argument `", $name, "` does not decode as {}: {}"),
                        std::any::type_name::<$t>(),
                        e
                    ),
                );
            }
        }
    }};
}

/// Decodes `(ptr, len)` as `Some` protobuf message `$t`, or `None` for NULL
/// (allowed only with `len == 0`): for arguments that may be absent.
macro_rules! try_decode_opt {
    ($t:ty, $ptr:expr, $len:expr, $name:literal) => {
        if $ptr.is_null() {
            if $len != 0 {
                return $crate::abi::error::fail(
                    $crate::abi::result::nestguard_result::NullParameter,
                    concat!("argument `", $name, "` is NULL with a non-zero length"),
                );
            }
            None
        } else {
            Some(try_decode!($t, $ptr, $len, $name))
        }
    };
}

/// Unwraps a `Result<T, E: AbiError>`, recording the error and returning its code.
macro_rules! try_abi {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => return $crate::abi::error::fail_with(&err),
        }
    };
}

/// `(ptr, len)` as a slice, or None for NULL with a non-zero length.
pub(crate) fn slice_from<'a>(ptr: *const u8, len: usize) -> Option<&'a [u8]> {
    if ptr.is_null() {
        return (len == 0).then_some(&[][..]);
    }
    // SAFETY: the caller promises `ptr` points to `len` readable bytes that
    // outlive the call (the ABI's buffer convention).
    Some(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Writes `value` through a non-NULL out-pointer.
pub(crate) fn write_out<T>(out: *mut T, value: T) {
    // SAFETY: callers check `out` for NULL first (try_not_null!) and the C
    // caller promises it points to writable storage for a `T`.
    unsafe { out.write(value) }
}

/// Copies `text` plus a NUL into `(buf, len)` if it fits, and reports the size
/// needed (including the NUL) in `out_n`. Returns false if it did not fit.
pub(crate) fn copy_text(
    text: &str,
    buf: *mut std::ffi::c_char,
    len: usize,
    out_n: *mut usize,
) -> bool {
    let buf = buf.cast::<u8>();
    let needed = text.len() + 1;
    if !out_n.is_null() {
        write_out(out_n, needed);
    }
    if buf.is_null() || len < needed {
        return false;
    }
    // SAFETY: `buf` is non-NULL with room for `len >= needed` bytes (caller's promise).
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf, text.len());
        buf.add(text.len()).write(0);
    }
    true
}

/// Fills a caller buffer with `text` (see [`copy_text`]) and returns the
/// result code: `Ok`, or `BufferTooSmall` with `what` as the error text.
pub(crate) fn text_out(
    text: &str,
    buf: *mut std::ffi::c_char,
    len: usize,
    out_n: *mut usize,
    what: &str,
) -> super::result::nestguard_result {
    if copy_text(text, buf, len, out_n) {
        super::result::nestguard_result::Ok
    } else {
        super::error::fail(super::result::nestguard_result::BufferTooSmall, what)
    }
}

/// Moves a value into a heap handle for C.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Frees a handle made by [`into_handle`]; NULL is a no-op.
pub(crate) fn free_handle<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: `ptr` came from `into_handle::<T>` and is freed once (the
        // ABI's `_free` contract).
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// Borrows a handle made by [`into_handle`].
pub(crate) fn handle_ref<'a, T>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: non-NULL handles were made by `into_handle` and are live until
    // `_free` (the caller's promise).
    unsafe { ptr.as_ref() }
}
