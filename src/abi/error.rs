//! The thread's last error text, retrievable into a caller buffer.

use std::cell::RefCell;

use super::ffi::copy_text;
use super::result::{AbiError, nestguard_result};

thread_local! {
    static LAST_ERROR: RefCell<Option<(nestguard_result, String)>> = const { RefCell::new(None) };
}

/// Records `message` as the calling thread's last error.
pub(crate) fn set_last_error(message: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = Some((nestguard_result::Panic, message)));
}

/// Records a failure and returns its code (for `return fail(...)`).
pub(crate) fn fail<R: From<nestguard_result>>(
    code: nestguard_result,
    message: impl Into<String>,
) -> R {
    let message = message.into();
    tracing::debug!(code = code as u32, error = %message, "nestguard ABI call failed");
    LAST_ERROR.with(|e| *e.borrow_mut() = Some((code, message)));
    R::from(code)
}

/// Records an error and returns its code.
pub(crate) fn fail_with<R: From<nestguard_result>, E: AbiError>(err: &E) -> R {
    fail(err.code(), err.to_string())
}

/// Fills a caller buffer with `text` (see [`copy_text`]) and returns the
/// result code: `Ok`, or `BufferTooSmall` with `what` as the error text.
pub(crate) fn text_out(
    text: &str,
    buf: *mut std::ffi::c_char,
    len: usize,
    out_n: *mut usize,
    what: &str,
) -> nestguard_result {
    if copy_text(text, buf, len, out_n) {
        nestguard_result::Ok
    } else {
        fail(nestguard_result::BufferTooSmall, what)
    }
}

/// Lets `fail` be returned from functions that return a pointer: NULL.
impl<T> From<nestguard_result> for *mut T {
    fn from(_: nestguard_result) -> Self {
        std::ptr::null_mut()
    }
}

/// Copies the calling thread's last error message into `buf`.
///
/// The text describes the most recent failed nestguard call on this thread
/// (a success does not clear it). If no call has failed, it is empty. `*out_n`
/// receives the size needed including the terminating NUL; if `len` is
/// smaller, nothing is copied and `NESTGUARD_RESULT_BUFFER_TOO_SMALL` is
/// returned. `out_n` may be NULL.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_error_message(
    buf: *mut std::ffi::c_char,
    len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        let text = LAST_ERROR.with(|e| e.borrow().as_ref().map(|(_, m)| m.clone())).unwrap_or_default();
        if copy_text(&text, buf, len, out_n) {
            nestguard_result::Ok
        } else if buf.is_null() && len > 0 {
            nestguard_result::NullParameter
        } else {
            nestguard_result::BufferTooSmall
        }
    }
}

/// A fixed, static description of a result code (never NULL; unknown codes
/// give "unknown result code"). The string lives as long as the library.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_result_describe(code: u32) -> *const std::ffi::c_char {
    ffi_panic_boundary! {
        describe(code).as_ptr().cast()
    }
}

fn describe(code: u32) -> &'static str {
    nestguard_result::try_from(code).map_or("unknown result code\0", |r| r.description_nul())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_gives_every_code_its_description_and_unknown_codes_a_fixed_text() {
        for &code in nestguard_result::ALL {
            let text = describe(code.into());
            assert_eq!(text.strip_suffix('\0'), Some(code.description()));
        }
        assert_eq!(describe(99_999), "unknown result code\0");
        assert_eq!(describe(8), "unknown result code\0");
    }
}
