//! HTTP authentication of agent API requests: Basic against the
//! `--http_credentials` store and Bearer executor tokens (JWT), combined in
//! Mesos' order with Mesos' `WWW-Authenticate` texts.

use std::collections::BTreeMap;
use std::sync::Arc;

use zeroize::Zeroizing;

use super::jwt;
use super::secret::Secret;
use super::store::CredentialStore;
use crate::proto::mesos::authorization::Subject;
use crate::proto::mesos::{Label, Labels};

/// Realm of the agent's read-only endpoints.
pub const REALM_READONLY: &str = "mesos-agent-readonly";
/// Realm of the agent's read-write endpoints (the operator API).
pub const REALM_READWRITE: &str = "mesos-agent-readwrite";
/// Realm of the executor API.
pub const REALM_EXECUTOR: &str = "mesos-agent-executor";

/// Configuration errors of the HTTP authenticator.
#[derive(Debug, thiserror::Error)]
pub enum HttpAuthError {
    /// Basic requested without credentials (Mesos' text).
    #[error("No credentials provided for the default 'basic' HTTP authenticator for realm '{0}'")]
    NoCredentials(String),
    /// Neither Basic nor JWT configured.
    #[error("no HTTP authenticator configured for realm '{0}'")]
    NoAuthenticator(String),
    /// A realm with characters that would break the header.
    #[error("invalid realm {0:?}: must be non-empty without '\"' or '\\\\'")]
    Realm(String),
}

/// An authenticated principal (libprocess' `Principal`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Principal {
    /// The principal name (Basic); `None` for tokens.
    pub value: Option<String>,
    /// The claims (tokens).
    pub claims: BTreeMap<String, String>,
}

impl Principal {
    /// As the authorizer's `mesos.authorization.Subject` (claims become labels).
    pub fn to_subject(&self) -> Subject {
        Subject {
            value: self.value.clone(),
            claims: (!self.claims.is_empty()).then(|| Labels {
                labels: self
                    .claims
                    .iter()
                    .map(|(k, v)| Label {
                        key: k.clone(),
                        value: Some(v.clone()),
                    })
                    .collect(),
            }),
        }
    }
}

/// The result of authenticating one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthOutcome {
    /// Authenticated.
    Principal(Principal),
    /// 401 with this `WWW-Authenticate` header value.
    Unauthorized {
        /// The header value, e.g. `Basic realm="mesos-agent-readwrite"`.
        www_authenticate: String,
    },
}

/// The authenticators of one realm, tried in order (Basic first, then
/// Bearer, as `--http_authenticators=basic,jwt`). Immutable: share it freely
/// between threads.
pub struct HttpAuthenticator {
    realm: String,
    basic: Option<Arc<CredentialStore>>,
    jwt_key: Option<Secret>,
}

impl std::fmt::Debug for HttpAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAuthenticator")
            .field("realm", &self.realm)
            .field("basic", &self.basic)
            .field("jwt", &self.jwt_key.is_some())
            .finish()
    }
}

impl HttpAuthenticator {
    /// An authenticator for `realm` with Basic (if `basic` is given) and
    /// Bearer JWT (if `jwt_key` is given).
    pub fn new(
        realm: &str,
        basic: Option<Arc<CredentialStore>>,
        jwt_key: Option<Secret>,
    ) -> Result<Self, HttpAuthError> {
        if realm.is_empty() || realm.contains(['"', '\\']) {
            return Err(HttpAuthError::Realm(realm.to_owned()));
        }
        if basic.as_ref().is_some_and(|s| s.is_empty()) {
            return Err(HttpAuthError::NoCredentials(realm.to_owned()));
        }
        if basic.is_none() && jwt_key.is_none() {
            return Err(HttpAuthError::NoAuthenticator(realm.to_owned()));
        }
        Ok(HttpAuthenticator {
            realm: realm.to_owned(),
            basic,
            jwt_key,
        })
    }

    /// The realm.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// Authenticates a request by its `Authorization` header value (`None`
    /// when absent). `now` is seconds since the epoch, for `exp`.
    pub fn authenticate(&self, authorization: Option<&str>, now: i64) -> AuthOutcome {
        let mut challenges = Vec::new();
        if let Some(store) = &self.basic {
            match basic(store, authorization) {
                Ok(p) => return AuthOutcome::Principal(p),
                Err(()) => challenges.push(format!("Basic realm=\"{}\"", self.realm)),
            }
        }
        if let Some(key) = &self.jwt_key {
            match self.bearer(key, authorization, now) {
                Ok(p) => return AuthOutcome::Principal(p),
                Err(header) => challenges.push(header),
            }
        }
        tracing::debug!(realm = %self.realm, "HTTP request not authenticated");
        // Mesos' combined authenticator joins the challenges with ",".
        AuthOutcome::Unauthorized {
            www_authenticate: challenges.join(","),
        }
    }

    fn bearer(
        &self,
        key: &Secret,
        authorization: Option<&str>,
        now: i64,
    ) -> Result<Principal, String> {
        let realm = &self.realm;
        let Some(header) = authorization else {
            return Err(format!("Bearer realm=\"{realm}\""));
        };
        let invalid = |description: &str| {
            format!(
                "Bearer realm=\"{realm}\", error=\"invalid_token\", error_description=\"{description}\""
            )
        };
        let parts: Vec<&str> = header.split(' ').collect();
        let [scheme, token] = parts[..] else {
            return Err(invalid("Malformed 'Authorization' header"));
        };
        if scheme != "Bearer" {
            return Err(invalid(&format!(
                "Scheme '{}' unsupported",
                reflected_scheme(scheme)
            )));
        }
        let claims = jwt::verify(token, key, now).map_err(|e| {
            tracing::info!(realm = %realm, error = %e, "invalid JWT");
            invalid(&format!("Invalid JWT: {}", sanitize(&e.to_string())))
        })?;
        if claims.is_empty() {
            return Err(invalid("JWT claims missing"));
        }
        Ok(Principal {
            value: None,
            claims,
        })
    }
}

/// HTTP authentication scheme names that are echoed back in a 401.
const KNOWN_SCHEMES: [&str; 12] = [
    "Basic",
    "Bearer",
    "Digest",
    "HOBA",
    "Mutual",
    "Negotiate",
    "NTLM",
    "OAuth",
    "SCRAM-SHA-1",
    "SCRAM-SHA-256",
    "Token",
    "vapid",
];

/// Mesos echoes the first word of the header as the unsupported scheme; when
/// a client puts a password first, that would echo it (into logs, proxies).
/// Only well-known scheme names are echoed; anything else becomes `<unknown>`.
fn reflected_scheme(scheme: &str) -> &str {
    KNOWN_SCHEMES
        .iter()
        .find(|k| k.eq_ignore_ascii_case(scheme))
        .map_or("<unknown>", |_| scheme)
}

/// Keeps a header value well-formed: no quotes, backslashes or control
/// characters from the request end up inside the quoted string.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '?'
            } else {
                c
            }
        })
        .collect()
}

/// libprocess' Basic authenticator: exactly `Basic <base64>`, decoding to
/// exactly `principal:secret` (a `:` in the secret is not supported, as in
/// Mesos), secret compared in constant time.
fn basic(store: &CredentialStore, authorization: Option<&str>) -> Result<Principal, ()> {
    let header = authorization.ok_or(())?;
    let parts: Vec<&str> = header.split(' ').collect();
    let [scheme, encoded] = parts[..] else {
        return Err(());
    };
    if scheme != "Basic" {
        return Err(());
    }
    let decoded = Zeroizing::new(jwt::decode_standard(encoded).ok_or(())?);
    let fields: Vec<&[u8]> = decoded.split(|&b| b == b':').collect();
    let [user, pass] = fields[..] else {
        return Err(());
    };
    let user = std::str::from_utf8(user).map_err(|_| ())?;
    let secret = store.secret(user).ok_or(())?;
    // An empty stored secret never authenticates.
    if !secret.is_empty() && secret.len() == pass.len() && secret.ct_eq(pass) {
        Ok(Principal {
            value: Some(user.to_owned()),
            claims: BTreeMap::new(),
        })
    } else {
        tracing::info!(principal = %user, "HTTP Basic authentication failed");
        Err(())
    }
}
