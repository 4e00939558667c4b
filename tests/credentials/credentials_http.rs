//! HTTP authentication: Basic, Bearer JWT in Mesos' exact format, and the
//! 401 `WWW-Authenticate` texts.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use nestguard::credentials::http::{
    AuthOutcome, HttpAuthError, HttpAuthenticator, Principal, REALM_EXECUTOR, REALM_READWRITE,
};
use nestguard::credentials::jwt::{self, JwtError};
use nestguard::credentials::{Credential, CredentialStore, Secret};

const KEY: &str = "nestguard-jwt-key";
const NOW: i64 = 1_700_000_000;

/// Computed independently (Python hmac/hashlib/base64/json with sorted keys).
const REFERENCE_TOKEN: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJjaWQiOiI1ZTRhYzdkNS04ZjJhLTRiM2YtOWMxZC0xMjM0NTY3ODkwYWIiLCJlaWQiOiJkZWZhdWx0LWV4ZWN1dG9yIiwiZmlkIjoiZi0xIn0.hvLvEOvbzv8H8KBo5BqxNkJuUPjX75ltsjEP2PpgxwA";

fn claims() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("fid".to_owned(), "f-1".to_owned()),
        ("eid".to_owned(), "default-executor".to_owned()),
        (
            "cid".to_owned(),
            "5e4ac7d5-8f2a-4b3f-9c1d-1234567890ab".to_owned(),
        ),
    ])
}

fn store() -> Arc<CredentialStore> {
    Arc::new(
        CredentialStore::from_credentials([
            Credential::new("operator", Secret::from("http-basic-secret-9")),
            Credential::new("ops2", Secret::from("other-http-secret")),
        ])
        .unwrap(),
    )
}

fn basic_header(user: &str, pass: &str) -> String {
    format!("Basic {}", STANDARD.encode(format!("{user}:{pass}")))
}

#[test]
fn issued_token_is_byte_identical_to_reference() {
    assert_eq!(jwt::issue(&claims(), &Secret::from(KEY)), REFERENCE_TOKEN);
    assert_eq!(
        jwt::verify(REFERENCE_TOKEN, &Secret::from(KEY), NOW).unwrap(),
        claims()
    );
}

fn verify(token: &str) -> Result<BTreeMap<String, String>, JwtError> {
    jwt::verify(token, &Secret::from(KEY), NOW)
}

fn b64(s: &str) -> String {
    URL_SAFE_NO_PAD.encode(s)
}

#[test]
fn verification_rejects_what_mesos_rejects() {
    // Wrong algorithms.
    let none = format!(
        "{}.{}.",
        b64(r#"{"alg":"none","typ":"JWT"}"#),
        b64(r#"{"fid":"f"}"#)
    );
    assert_eq!(verify(&none), Err(JwtError::AlgMismatch("none".into())));
    assert_eq!(
        verify(&none).unwrap_err().to_string(),
        "Token 'alg' value \"none\" does not match, expected \"HS256\""
    );
    let rs = format!(
        "{}.{}.c2ln",
        b64(r#"{"alg":"RS256"}"#),
        b64(r#"{"fid":"f"}"#)
    );
    assert_eq!(verify(&rs), Err(JwtError::AlgMismatch("RS256".into())));
    let hs512 = format!(
        "{}.{}.c2ln",
        b64(r#"{"alg":"HS512"}"#),
        b64(r#"{"fid":"f"}"#)
    );
    assert_eq!(
        verify(&hs512).unwrap_err().to_string(),
        "Unsupported token algorithm: HS512"
    );
    let no_alg = format!("{}.{}.c2ln", b64(r#"{"typ":"JWT"}"#), b64(r#"{"fid":"f"}"#));
    assert_eq!(verify(&no_alg), Err(JwtError::AlgMissing));
    // crit (validly signed).
    let crit = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImNyaXQiOlsieCJdfQ.eyJmaWQiOiJmIn0.3r-ww77xMTWghG10PB2jTJ37qTMx9thC6V9I9aHgH3k";
    assert_eq!(
        verify(crit).unwrap_err().to_string(),
        "Token 'crit' field is unsupported"
    );
    // typ not a string.
    let typ = "eyJhbGciOiJIUzI1NiIsInR5cCI6NX0.eyJmaWQiOiJmIn0.WGO_KLqr5h1-yGkSeh57K5VgkgtveAGWjQuycrlaQYQ";
    assert_eq!(verify(typ), Err(JwtError::TypNotString));
    // Expired (validly signed, exp 1000).
    let expired = "eyJhbGciOiJIUzI1NiJ9.eyJmaWQiOiJmIiwiZXhwIjoxMDAwLCJuIjo1LCJiIjp0cnVlfQ.9qCw-UhIZOvTaKpAeKtia-AsiNNQK8lrHuAh2ddqY6g";
    assert_eq!(
        verify(expired).unwrap_err().to_string(),
        format!("Token has expired: exp(1000) < now({NOW})")
    );
    // exp not a number.
    let exp_str = "eyJhbGciOiJIUzI1NiJ9.eyJmaWQiOiJmIiwiZXhwIjoic29vbiJ9.umSR5HxnyQuZ45B0zldFmzUsp8luj26N1SR4PpBWPjE";
    assert_eq!(verify(exp_str), Err(JwtError::ExpNotNumber));
    // Components and signatures.
    assert_eq!(verify("a.b"), Err(JwtError::Components(2)));
    assert_eq!(verify("a.b.c.d"), Err(JwtError::Components(4)));
    let mut tampered = REFERENCE_TOKEN.to_owned();
    tampered.replace_range(40..41, "X");
    assert!(verify(&tampered).is_err());
    let wrong_key = jwt::verify(REFERENCE_TOKEN, &Secret::from("other-key"), NOW);
    assert_eq!(wrong_key, Err(JwtError::Signature));
    let bad_sig = format!("{}!!", &REFERENCE_TOKEN[..REFERENCE_TOKEN.len() - 2]);
    assert!(matches!(
        verify(&bad_sig),
        Err(JwtError::SignatureEncoding(_))
    ));
    let garbage = format!("{}.{}.x", b64("not json"), b64("{}"));
    assert!(
        verify(&garbage)
            .unwrap_err()
            .to_string()
            .starts_with("Failed to decode token header: Failed to parse into JSON")
    );
}

#[test]
fn future_exp_passes_and_non_string_claims_are_stringified() {
    let ok = "eyJhbGciOiJIUzI1NiJ9.eyJmaWQiOiJmIiwiZXhwIjo5OTk5OTk5OTk5OX0.UfACWoAqViwfbRk6YA9Bzi4oUBv227LrJL0SRwXHUk8";
    let c = verify(ok).unwrap();
    assert_eq!(c["exp"], "99999999999");
    assert_eq!(c["fid"], "f");
}

#[test]
fn basic_authenticates_against_the_store() {
    let auth = HttpAuthenticator::new(REALM_READWRITE, Some(store()), None).unwrap();
    let ok = auth.authenticate(Some(&basic_header("operator", "http-basic-secret-9")), NOW);
    assert_eq!(
        ok,
        AuthOutcome::Principal(Principal {
            value: Some("operator".into()),
            claims: BTreeMap::new()
        })
    );
    let expected = AuthOutcome::Unauthorized {
        www_authenticate: "Basic realm=\"mesos-agent-readwrite\"".into(),
    };
    for header in [
        Some(basic_header("operator", "wrong")),
        Some(basic_header("operator", "other-http-secret")),
        Some(basic_header("nobody", "http-basic-secret-9")),
        Some(basic_header("operator", "http-basic-secret-9:extra")),
        Some(format!(
            "basic {}",
            STANDARD.encode("operator:http-basic-secret-9")
        )),
        Some(format!(
            "Basic  {}",
            STANDARD.encode("operator:http-basic-secret-9")
        )),
        Some("Basic !!!".into()),
        None,
    ] {
        assert_eq!(
            auth.authenticate(header.as_deref(), NOW),
            expected,
            "{header:?}"
        );
    }
}

#[test]
fn bearer_results_and_401_texts() {
    let auth = HttpAuthenticator::new(REALM_EXECUTOR, None, Some(Secret::from(KEY))).unwrap();
    match auth.authenticate(Some(&format!("Bearer {REFERENCE_TOKEN}")), NOW) {
        AuthOutcome::Principal(p) => {
            assert_eq!(p.value, None);
            assert_eq!(p.claims, claims());
            let subject = p.to_subject();
            assert_eq!(subject.value, None);
            let labels = subject.claims.unwrap().labels;
            assert_eq!(labels.len(), 3);
            assert_eq!(labels[0].key, "cid");
        }
        other => panic!("{other:?}"),
    }
    let r = "Bearer realm=\"mesos-agent-executor\"";
    let cases: [(Option<String>, String); 6] = [
        // Not a known scheme name: not echoed (it could be a password).
        (
            Some("hunter2 x".into()),
            format!(
                "{r}, error=\"invalid_token\", error_description=\"Scheme '<unknown>' unsupported\""
            ),
        ),
        (None, r.to_owned()),
        (
            Some("Bearer".into()),
            format!(
                "{r}, error=\"invalid_token\", error_description=\"Malformed 'Authorization' header\""
            ),
        ),
        (
            Some(format!("Token {REFERENCE_TOKEN}")),
            format!(
                "{r}, error=\"invalid_token\", error_description=\"Scheme 'Token' unsupported\""
            ),
        ),
        (
            Some("Bearer a.b".into()),
            format!(
                "{r}, error=\"invalid_token\", error_description=\"Invalid JWT: Expected 3 components in token, got 2\""
            ),
        ),
        (
            Some(
                "Bearer eyJhbGciOiJIUzI1NiJ9.e30.BRGNDr01nHBIuSMQgvKT8G6US7PuObgt2e3avbdfLv0"
                    .into(),
            ),
            format!("{r}, error=\"invalid_token\", error_description=\"JWT claims missing\""),
        ),
    ];
    for (header, expected) in cases {
        assert_eq!(
            auth.authenticate(header.as_deref(), NOW),
            AuthOutcome::Unauthorized {
                www_authenticate: expected
            },
            "{header:?}"
        );
    }
}

#[test]
fn combined_basic_then_jwt() {
    let auth =
        HttpAuthenticator::new(REALM_READWRITE, Some(store()), Some(Secret::from(KEY))).unwrap();
    assert!(matches!(
        auth.authenticate(Some(&basic_header("ops2", "other-http-secret")), NOW),
        AuthOutcome::Principal(_)
    ));
    assert!(matches!(
        auth.authenticate(Some(&format!("Bearer {REFERENCE_TOKEN}")), NOW),
        AuthOutcome::Principal(_)
    ));
    assert_eq!(
        auth.authenticate(None, NOW),
        AuthOutcome::Unauthorized {
            www_authenticate:
                "Basic realm=\"mesos-agent-readwrite\",Bearer realm=\"mesos-agent-readwrite\""
                    .into()
        }
    );
}

#[test]
fn configuration_errors() {
    let empty = Arc::new(CredentialStore::new());
    let err = HttpAuthenticator::new(REALM_READWRITE, Some(empty), None).unwrap_err();
    assert!(matches!(err, HttpAuthError::NoCredentials(_)));
    assert_eq!(
        err.to_string(),
        "No credentials provided for the default 'basic' HTTP authenticator for realm 'mesos-agent-readwrite'"
    );
    assert!(HttpAuthenticator::new(REALM_READWRITE, None, None).is_err());
    assert!(HttpAuthenticator::new("bad\"realm", Some(store()), None).is_err());
}
