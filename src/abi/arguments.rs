//! Argument checks for every exported function: turn C arguments into Rust
//! values or return `NESTGUARD_RESULT_NULL_PARAMETER` / a decode error early,
//! recording the reason as the thread's last error. Macros, so that the early
//! `return` leaves the exported function itself.

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
