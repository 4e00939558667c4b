//! What the C ABI tests share: reading the thread's last error and taking
//! the bytes a call handed out, as a C caller does.

use nestguard::abi::bytes::nestguard_bytes;
use nestguard::abi::error::nestguard_error_message;
use nestguard::abi::result::nestguard_result;

/// The last error message of this thread.
pub fn last_error() -> String {
    let mut buf = vec![0u8; 4096];
    let mut n = 0usize;
    assert_eq!(
        nestguard_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut n),
        nestguard_result::Ok
    );
    String::from_utf8_lossy(&buf[..n - 1]).into_owned()
}

/// Copies out and frees bytes an ABI call returned (must be non-null).
pub fn take(bytes: *mut nestguard_bytes) -> Vec<u8> {
    assert!(!bytes.is_null());
    let data = nestguard_bytes::nestguard_bytes_data(bytes);
    let len = nestguard_bytes::nestguard_bytes_len(bytes);
    // SAFETY: the handle is live and holds `len` bytes.
    let v = unsafe { std::slice::from_raw_parts(data, len) }.to_vec();
    nestguard_bytes::nestguard_bytes_free(bytes);
    v
}
