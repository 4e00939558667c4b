//! `nestguard_bytes`: bytes the library returns (usually a serialized
//! protobuf message).

use super::ffi::{free_handle, handle_ref, into_handle};

/// Bytes owned by the library. Read them with `nestguard_bytes_data` and
/// `nestguard_bytes_len`, release them with `nestguard_bytes_free`.
///
/// Immutable once returned, so safe to read from several threads. Under the
/// hood it is a `Box<Vec<u8>>`.
pub struct nestguard_bytes {
    data: Vec<u8>,
}

impl nestguard_bytes {
    /// Wraps bytes into a handle for C.
    pub(crate) fn into_raw(data: Vec<u8>) -> *mut nestguard_bytes {
        into_handle(nestguard_bytes { data })
    }

    /// Pointer to the first byte (never NULL for a non-NULL handle, even when
    /// the length is 0). Valid until the handle is freed. NULL handle: NULL.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_bytes_data(bytes: *const nestguard_bytes) -> *const u8 {
        ffi_panic_boundary! {
            match handle_ref(bytes) {
                Some(b) if b.data.is_empty() => std::ptr::NonNull::<u8>::dangling().as_ptr(),
                Some(b) => b.data.as_ptr(),
                None => std::ptr::null(),
            }
        }
    }

    /// Number of bytes (0 for a NULL handle).
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_bytes_len(bytes: *const nestguard_bytes) -> usize {
        ffi_panic_boundary! {
            handle_ref(bytes).map_or(0, |b| b.data.len())
        }
    }

    /// Releases the bytes. NULL is a no-op; must not be called twice.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_bytes_free(bytes: *mut nestguard_bytes) {
        ffi_panic_boundary! {
            free_handle(bytes)
        }
    }
}
