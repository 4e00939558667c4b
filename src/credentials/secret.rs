//! Secrets that are wiped from memory when dropped and never printed.
//!
//! [`Secret`] owns its bytes in a [`zeroize::Zeroizing`] buffer, so the heap
//! allocation is overwritten with zeros on drop. `Debug` and `Display` print a
//! fixed placeholder: a secret can be passed to `tracing` or formatted into an
//! error by mistake and still not leak.

use std::fmt;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// What `Debug`/`Display` print instead of a secret.
pub const REDACTED: &str = "<redacted>";

/// A secret (password, shared key): zeroized on drop, redacted when printed.
#[derive(Clone, Default)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Takes ownership of `bytes` (moved, not copied, so no unwiped copy stays behind).
    pub fn new(bytes: Vec<u8>) -> Self {
        Secret(Zeroizing::new(bytes))
    }

    /// Takes ownership of a string's buffer.
    pub fn from_string(text: String) -> Self {
        Secret::new(text.into_bytes())
    }

    /// The secret bytes; callers must not log or copy them into long-lived,
    /// unwiped storage.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The secret as UTF-8, if it is.
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for an empty secret.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Constant-time equality (for equal lengths; the length itself is not
    /// hidden, as with every practical comparison).
    pub fn ct_eq(&self, other: &[u8]) -> bool {
        self.0.as_slice().ct_eq(other).into()
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret::new(s.as_bytes().to_vec())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other.expose())
    }
}

impl Eq for Secret {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let s = Secret::from("hunter2");
        assert_eq!(format!("{s}"), REDACTED);
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(s.ct_eq(b"hunter2"));
        assert!(!s.ct_eq(b"hunter3"));
        assert!(!s.ct_eq(b"hunter"));
    }
}
