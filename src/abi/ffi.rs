//! Pointer helpers: the only place that turns a C pointer into a Rust slice,
//! reference or handle. They know nothing of result codes or the last error,
//! so the error module can use them without a circle; the checks that record
//! a failure are the macros of `arguments.rs`.

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
