//! Mesos' executor tokens: JWT with HS256 (RFC 7519), byte-compatible with
//! libprocess' `JWT::create`/`JWT::parse`.
//!
//! Hand-rolled on `hmac` + `sha2` + `base64` rather than `jsonwebtoken`:
//! that crate serializes the header as `{"typ":"JWT","alg":"HS256"}`, while
//! Mesos writes `{"alg":"HS256","typ":"JWT"}` (keys sorted, rapidjson
//! escaping), so its tokens would not be byte-identical to the agent's. The
//! verifier also reproduces Mesos' checks and error texts exactly.
//!
//! Issued tokens carry exactly the given string claims (sorted keys, no
//! `exp`/`iat`), like Mesos' `JWTSecretGenerator`.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::file::{FileError, LoadOptions, read_secret_file};
use super::secret::Secret;

type HmacSha256 = Hmac<Sha256>;

/// The header Mesos writes, byte for byte.
pub const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

/// base64url without padding on output; padding optional on input.
const URL_SAFE_LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a token was refused or could not be made. Texts are Mesos' (they go
/// into the `error_description` of a 401); none contains the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Not three dot-separated parts.
    #[error("Expected 3 components in token, got {0}")]
    Components(usize),
    /// Header not base64url JSON.
    #[error("Failed to decode token header: {0}")]
    Header(String),
    /// `typ` is not a string.
    #[error("Token 'typ' is not a string")]
    TypNotString,
    /// No `alg`.
    #[error("Failed to locate 'alg' in token JSON header")]
    AlgMissing,
    /// `alg` not a string.
    #[error("Token 'alg' field is not a string")]
    AlgNotString,
    /// An algorithm Mesos does not know.
    #[error("Unsupported token algorithm: {0}")]
    UnsupportedAlg(String),
    /// A known algorithm other than HS256 (`none`, `RS256`).
    #[error("Token 'alg' value \"{0}\" does not match, expected \"HS256\"")]
    AlgMismatch(String),
    /// The header has `crit`.
    #[error("Token 'crit' field is unsupported")]
    Crit,
    /// Payload not base64url JSON.
    #[error("Failed to decode token payload: {0}")]
    Payload(String),
    /// `exp` is not a number.
    #[error("JSON payload 'exp' field is not a number")]
    ExpNotNumber,
    /// `exp` in the past.
    #[error("Token has expired: exp({exp}) < now({now})")]
    Expired {
        /// The token's expiry (seconds since the epoch).
        exp: i64,
        /// Now (seconds since the epoch).
        now: i64,
    },
    /// Signature not base64url.
    #[error("Failed to base64url-decode token signature: {0}")]
    SignatureEncoding(String),
    /// Wrong signature.
    #[error("Token signature does not match")]
    Signature,
    /// The signing key could not be loaded.
    #[error("JWT signing key: {0}")]
    Key(String),
}

/// The signing key: the whole content of Mesos' `--jwt_secret_key` file.
pub fn load_key(path: &Path, options: &LoadOptions) -> Result<Secret, JwtError> {
    let bytes =
        read_secret_file(path, options).map_err(|e: FileError| JwtError::Key(e.to_string()))?;
    if bytes.is_empty() {
        return Err(JwtError::Key(format!(
            "key file '{}' is empty",
            path.display()
        )));
    }
    Ok(Secret::new(bytes.to_vec()))
}

#[expect(
    clippy::expect_used,
    reason = "HMAC takes keys of any length (longer ones are hashed, RFC 2104): \
              `new_from_slice` cannot fail, and a made-up MAC must never be signed or compared"
)]
fn sign(key: &Secret, message: &[u8]) -> [u8; 32] {
    let mut mac =
        HmacSha256::new_from_slice(key.expose()).expect("HMAC-SHA256 accepts keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// Writes `s` as a JSON string the way rapidjson (Mesos' writer) does:
/// escapes `"`, `\` and control characters (`\b \f \n \r \t`, else `\u00XX`
/// with uppercase hex), everything else verbatim.
fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The payload JSON for string claims, keys sorted, compact.
pub fn claims_json(claims: &BTreeMap<String, String>) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in claims.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json_string(&mut out, k);
        out.push(':');
        write_json_string(&mut out, v);
    }
    out.push('}');
    out
}

/// Issues an HS256 token with exactly these claims (Mesos' format).
pub fn issue(claims: &BTreeMap<String, String>, key: &Secret) -> String {
    let mut token = URL_SAFE_LENIENT.encode(HEADER);
    token.push('.');
    token.push_str(&URL_SAFE_LENIENT.encode(claims_json(claims)));
    let signature = sign(key, token.as_bytes());
    token.push('.');
    token.push_str(&URL_SAFE_LENIENT.encode(signature));
    token
}

/// Seconds since the epoch now, for [`verify`]. A clock set before the
/// epoch reads as the far future, so that every token with an `exp` is
/// refused as expired (fail closed) rather than every one accepted.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(i64::MAX, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn decode_object(part: &str) -> Result<serde_json::Map<String, Value>, String> {
    let bytes = URL_SAFE_LENIENT
        .decode(part)
        .map_err(|e| format!("Failed to base64url-decode: {e}"))?;
    // Only syntax errors can come out of parsing into a Value, and their
    // texts do not quote the input.
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("Failed to parse into JSON: not a JSON object".into()),
        Err(e) => Err(format!("Failed to parse into JSON: {e}")),
    }
}

/// base64url of [`HEADER`].
const ENCODED_HEADER: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

/// libprocess' header checks, in its order: typ, alg present and a string,
/// alg known, no crit, alg is HS256.
fn check_header(header: &str) -> Result<(), JwtError> {
    let header_json = decode_object(header).map_err(JwtError::Header)?;
    if header_json.get("typ").is_some_and(|t| !t.is_string()) {
        return Err(JwtError::TypNotString);
    }
    let alg = match header_json.get("alg") {
        None => return Err(JwtError::AlgMissing),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(JwtError::AlgNotString),
    };
    if !matches!(alg, "none" | "HS256" | "RS256") {
        return Err(JwtError::UnsupportedAlg(alg.to_owned()));
    }
    if header_json.contains_key("crit") {
        return Err(JwtError::Crit);
    }
    if alg != "HS256" {
        return Err(JwtError::AlgMismatch(alg.to_owned()));
    }

    Ok(())
}

/// Verifies an HS256 token as libprocess' `JWT::parse(token, secret)` does
/// and returns its claims (string values as they are, others as compact JSON).
pub fn verify(token: &str, key: &Secret, now: i64) -> Result<BTreeMap<String, String>, JwtError> {
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return Err(JwtError::Components(parts.len()));
    };

    // Fast path: the exact header Mesos (and we) write needs no parsing.
    if header != ENCODED_HEADER {
        check_header(header)?;
    }

    let claims = decode_object(payload).map_err(JwtError::Payload)?;
    if let Some(exp) = claims.get("exp") {
        let Value::Number(n) = exp else {
            return Err(JwtError::ExpNotNumber);
        };
        let exp = n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(i64::MAX);
        if exp < now {
            return Err(JwtError::Expired { exp, now });
        }
    }

    let given = URL_SAFE_LENIENT
        .decode(signature)
        .map_err(|e| JwtError::SignatureEncoding(e.to_string()))?;
    let expected = sign(key, &token.as_bytes()[..header.len() + 1 + payload.len()]);
    if given.len() != expected.len() || !bool::from(expected.ct_eq(&given[..])) {
        return Err(JwtError::Signature);
    }

    Ok(claims
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, v)
        })
        .collect())
}

/// Standard base64 (with padding), as HTTP Basic uses.
pub(crate) fn decode_standard(text: &str) -> Option<Vec<u8>> {
    general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> BTreeMap<String, String> {
        [("fid", "f"), ("eid", "e"), ("cid", "c")]
            .into_iter()
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .collect()
    }

    #[test]
    fn format_is_mesos() {
        let key = Secret::from("k");
        let t = issue(&claims(), &key);
        let parts: Vec<&str> = t.split('.').collect();
        assert_eq!(parts[0], "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9");
        assert_eq!(
            URL_SAFE_LENIENT.decode(parts[1]).unwrap(),
            br#"{"cid":"c","eid":"e","fid":"f"}"#
        );
        assert!(!t.contains('='));
        assert_eq!(verify(&t, &key, 0).unwrap(), claims());
        assert_eq!(verify(&t, &Secret::from("x"), 0), Err(JwtError::Signature));
    }

    #[test]
    fn encoded_header_constant() {
        assert_eq!(URL_SAFE_LENIENT.encode(HEADER), ENCODED_HEADER);
    }

    #[test]
    fn rapidjson_escaping() {
        let mut s = String::new();
        write_json_string(&mut s, "a\"b\\c/\u{1}\n");
        assert_eq!(s, r#""a\"b\\c/\u0001\n""#);
    }
}
