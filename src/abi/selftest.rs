//! Self-tests of the ABI machinery that hosts can run at load time.

use super::result::nestguard_result;

/// Panics inside the library on purpose and returns what the panic boundary
/// turned it into: `NESTGUARD_RESULT_PANIC`, with the thread's last error set.
///
/// Hosts and tests call it to prove that a panic never unwinds into C or C++
/// and never aborts the process.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_abi_selftest_panic() -> nestguard_result {
    ffi_panic_boundary! {
        let reason = std::hint::black_box("self-test: deliberate panic");
        if !reason.is_empty() {
            #[expect(clippy::panic, reason = "the point of this function")]
            {
                panic!("{reason}");
            }
        }
        nestguard_result::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::error::nestguard_error_message;

    #[test]
    fn panic_is_caught_and_reported() {
        assert_eq!(nestguard_abi_selftest_panic(), nestguard_result::Panic);
        let mut buf = [0 as std::ffi::c_char; 256];
        let mut n = 0usize;
        assert_eq!(
            nestguard_error_message(buf.as_mut_ptr(), buf.len(), &mut n),
            nestguard_result::Ok
        );
        let text = std::str::from_utf8(unsafe {
            std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n - 1)
        })
        .unwrap();
        assert!(text.contains("deliberate panic"), "{text}");
    }
}
