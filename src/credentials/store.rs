//! The in-memory credential store: principal → secret.

use std::collections::BTreeMap;
use std::fmt;

use super::secret::Secret;

/// One principal and its secret (Mesos' `Credential`).
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The principal (not secret: it appears in logs and errors).
    pub principal: String,
    /// The secret (zeroized on drop, never printed).
    pub secret: Secret,
}

impl Credential {
    /// A credential from a principal and a secret.
    pub fn new(principal: impl Into<String>, secret: Secret) -> Self {
        Credential {
            principal: principal.into(),
            secret,
        }
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("principal", &self.principal)
            .field("secret", &self.secret)
            .finish()
    }
}

/// A principal appeared twice in one store.
#[derive(Debug, thiserror::Error)]
#[error("duplicate principal '{principal}'")]
pub struct DuplicatePrincipal {
    /// The repeated principal.
    pub principal: String,
}

/// Principals and their secrets (Mesos' `Credentials`, keyed for lookup).
///
/// Immutable after construction, so it can be shared between threads.
#[derive(Clone, Default)]
pub struct CredentialStore {
    by_principal: BTreeMap<String, Secret>,
}

impl CredentialStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a store; a repeated principal is an error.
    pub fn from_credentials(
        credentials: impl IntoIterator<Item = Credential>,
    ) -> Result<Self, DuplicatePrincipal> {
        let mut store = Self::new();
        for c in credentials {
            store.insert(c)?;
        }
        Ok(store)
    }

    /// Adds a credential; a principal already present is an error.
    pub fn insert(&mut self, credential: Credential) -> Result<(), DuplicatePrincipal> {
        use std::collections::btree_map::Entry;
        match self.by_principal.entry(credential.principal) {
            Entry::Occupied(e) => Err(DuplicatePrincipal {
                principal: e.key().clone(),
            }),
            Entry::Vacant(e) => {
                e.insert(credential.secret);
                Ok(())
            }
        }
    }

    /// The secret of `principal`.
    pub fn secret(&self, principal: &str) -> Option<&Secret> {
        self.by_principal.get(principal)
    }

    /// The principals, sorted.
    pub fn principals(&self) -> impl Iterator<Item = &str> {
        self.by_principal.keys().map(String::as_str)
    }

    /// Number of credentials.
    pub fn len(&self) -> usize {
        self.by_principal.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.by_principal.is_empty()
    }
}

impl fmt::Debug for CredentialStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CredentialStore")
            .field("principals", &self.by_principal.keys().collect::<Vec<_>>())
            .finish()
    }
}
