//! The RFC 2195 digest: lowercase hex of HMAC-MD5(secret, challenge).

use hmac::{Hmac, Mac};
use md5::Md5;
use zeroize::Zeroizing;

use crate::credentials::secret::Secret;

type HmacMd5 = Hmac<Md5>;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex HMAC-MD5 of `challenge` keyed by `secret` (32 ASCII bytes).
#[expect(
    clippy::expect_used,
    reason = "HMAC accepts keys of any length (longer ones are hashed, as RFC 2104 \
              and Cyrus do): `new_from_slice` cannot fail"
)]
pub fn hex_digest(secret: &Secret, challenge: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut mac =
        HmacMd5::new_from_slice(secret.expose()).expect("HMAC-MD5 accepts keys of any length");
    mac.update(challenge);
    let tag: Zeroizing<[u8; 16]> = Zeroizing::new(mac.finalize().into_bytes().into());
    let mut out = Zeroizing::new([0u8; 32]);
    for (i, b) in tag.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 0xf)];
    }
    out
}

/// The client's response: `"<principal> <hex digest>"`.
pub fn response(principal: &str, secret: &Secret, challenge: &[u8]) -> Zeroizing<Vec<u8>> {
    let digest = hex_digest(secret, challenge);
    let mut out = Zeroizing::new(Vec::with_capacity(principal.len() + 33));
    out.extend_from_slice(principal.as_bytes());
    out.push(b' ');
    out.extend_from_slice(&digest[..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2195 section 2 example.
    #[test]
    fn rfc2195_vector() {
        let challenge = b"<1896.697170952@postoffice.reston.mci.net>";
        let secret = Secret::from("tanstaaftanstaaf");
        assert_eq!(
            &hex_digest(&secret, challenge)[..],
            b"b913a602c7eda7a495b4e6e7334d3890"
        );
        assert_eq!(
            &response("tim", &secret, challenge)[..],
            b"tim b913a602c7eda7a495b4e6e7334d3890"
        );
    }
}
