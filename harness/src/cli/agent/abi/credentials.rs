//! `nestguard_credentials`, `nestguard_http_authenticator` and
//! `nestguard_credential_injector`: credential sets, HTTP authentication
//! (Basic and Bearer JWT) and the io_nestguard_CredentialHook module, as the
//! library's `src/abi/credentials.rs` groups them.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust (see `mod.rs`); each call has its SAFETY comment.
#![allow(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use prost::Message;

use super::{Abi, AbiFailure, Handle, text};
use crate::cli::agent::bindings as ffi;
use nestguard::proto::mesos::{self, authorization};

/// A credential set (`--http_credentials`).
pub struct Credentials {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_credentials>,
}

impl Credentials {
    /// Loads a credentials file.
    pub fn load(abi: &Arc<Abi>, path: &Path) -> anyhow::Result<Credentials> {
        let path = path.to_str().context("credentials path is not UTF-8")?;
        let (p, n) = text(path);
        let mut out = std::ptr::null_mut();
        // SAFETY: valid text and out pointer.
        let code = unsafe { abi.f().nestguard_credentials_load(p, n, false, &mut out) };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("loading --http_credentials")?;
        Ok(Credentials {
            abi: abi.clone(),
            handle: Handle(out),
        })
    }
}

impl Drop for Credentials {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_credentials_free(self.handle.0) }
    }
}

/// What HTTP authentication concluded.
#[derive(Debug, Clone)]
pub enum Authentication {
    /// The request's principal.
    Principal(authorization::Subject),
    /// A 401 with this `WWW-Authenticate` value.
    Unauthorized(String),
}

/// `nestguard_http_authenticator`: Basic and Bearer (JWT) for one realm.
pub struct HttpAuthenticator {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_http_authenticator>,
}

impl HttpAuthenticator {
    /// Creates an authenticator for `realm` from credentials and/or a JWT key file.
    pub fn create(
        abi: &Arc<Abi>,
        realm: &str,
        credentials: Option<&Credentials>,
        jwt_key: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let key = jwt_key
            .map(|p| p.to_str().context("JWT key path is not UTF-8"))
            .transpose()?
            .unwrap_or("");
        let (rp, rn) = text(realm);
        let (kp, kn) = text(key);
        let creds = credentials.map_or(std::ptr::null(), |c| c.handle.0.cast_const());
        let mut out = std::ptr::null_mut();
        // SAFETY: valid texts, live credentials handle (or NULL), out pointer.
        let code = unsafe {
            abi.f()
                .nestguard_http_authenticator_new(rp, rn, creds, kp, kn, false, &mut out)
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("creating the HTTP authenticator")?;
        Ok(HttpAuthenticator {
            abi: abi.clone(),
            handle: Handle(out),
        })
    }

    /// Authenticates by the `Authorization` header value.
    pub fn authenticate(&self, header: Option<&str>) -> Result<Authentication, AbiFailure> {
        let (p, n) = text(header.unwrap_or(""));
        let mut authenticated = false;
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid text, out pointers.
        let code = unsafe {
            self.abi.f().nestguard_http_authenticator_authenticate(
                self.handle.0,
                p,
                n,
                header.is_some(),
                &mut authenticated,
                &mut out,
            )
        };
        self.abi.check(code)?;
        let bytes = self.abi.take(out)?;
        if authenticated {
            let subject = authorization::Subject::decode(bytes.as_slice())
                .map_err(|e| AbiFailure::undecodable("authenticated subject", e))?;
            Ok(Authentication::Principal(subject))
        } else {
            Ok(Authentication::Unauthorized(
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        }
    }
}

impl Drop for HttpAuthenticator {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe {
            self.abi
                .f()
                .nestguard_http_authenticator_free(self.handle.0)
        }
    }
}

/// Which environment an injector call computes.
#[derive(Debug, Clone, Copy)]
enum EnvironmentFor {
    /// `..._decorate_executor_environment`.
    Executor,
    /// `..._nested_environment`.
    Nested,
}

/// `nestguard_credential_injector`: the CredentialHook module.
pub struct CredentialInjector {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_credential_injector>,
    /// The mode in effect (an [`injection_mode`](super::injection_mode) constant).
    pub mode: ffi::nestguard_injection_mode,
}

impl CredentialInjector {
    /// Creates the hook: token mode with a JWT key, else secret mode with
    /// credentials; `executor_principals` is the hook's parameter of that
    /// name (secret mode: which principals a framework may hand out).
    pub fn create(
        abi: &Arc<Abi>,
        mode: ffi::nestguard_injection_mode,
        jwt_key: Option<&Path>,
        credentials: Option<&Credentials>,
        executor_principals: Option<&str>,
    ) -> anyhow::Result<Self> {
        let key = jwt_key
            .map(|p| p.to_str().context("JWT key path is not UTF-8"))
            .transpose()?
            .unwrap_or("");
        let (kp, kn) = text(key);
        let creds = credentials.map_or(std::ptr::null(), |c| c.handle.0.cast_const());
        let mut out = std::ptr::null_mut();
        let mut effective = 0u32;
        // SAFETY: valid text, live credentials handle (or NULL), out pointers.
        let code = unsafe {
            abi.f().nestguard_credential_injector_new(
                mode,
                kp,
                kn,
                false,
                creds,
                &mut out,
                &mut effective,
            )
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("creating io_nestguard_CredentialHook")?;
        let injector = CredentialInjector {
            abi: abi.clone(),
            handle: Handle(out),
            mode: effective,
        };
        if let Some(value) = executor_principals {
            let (p, n) = text(value);
            // SAFETY: live handle not yet shared, valid text.
            let code = unsafe {
                abi.f()
                    .nestguard_credential_injector_set_executor_principals(injector.handle.0, p, n)
            };
            abi.check(code)
                .map_err(anyhow::Error::new)
                .context("io_nestguard_CredentialHook: parameter 'executor_principals'")?;
        }
        Ok(injector)
    }

    fn call(
        &self,
        which: EnvironmentFor,
        executor: &mesos::ExecutorInfo,
        framework: &mesos::FrameworkInfo,
        id: &mesos::ContainerId,
    ) -> Result<mesos::Environment, AbiFailure> {
        let (e, fw, c) = (
            executor.encode_to_vec(),
            framework.encode_to_vec(),
            id.encode_to_vec(),
        );
        let mut out = std::ptr::null_mut();
        let f = self.abi.f();
        // SAFETY: live handle, valid buffers, out pointer.
        let code = unsafe {
            match which {
                EnvironmentFor::Executor => f
                    .nestguard_credential_injector_decorate_executor_environment(
                        self.handle.0,
                        e.as_ptr(),
                        e.len(),
                        fw.as_ptr(),
                        fw.len(),
                        c.as_ptr(),
                        c.len(),
                        &mut out,
                    ),
                EnvironmentFor::Nested => f.nestguard_credential_injector_nested_environment(
                    self.handle.0,
                    e.as_ptr(),
                    e.len(),
                    fw.as_ptr(),
                    fw.len(),
                    c.as_ptr(),
                    c.len(),
                    &mut out,
                ),
            }
        };
        self.abi.check(code)?;
        let bytes = self.abi.take(out)?;
        mesos::Environment::decode(bytes.as_slice())
            .map_err(|e| AbiFailure::undecodable("environment", e))
    }

    /// `slaveExecutorEnvironmentDecorator`: the executor's environment with
    /// its credentials added.
    pub fn decorate_executor(
        &self,
        executor: &mesos::ExecutorInfo,
        framework: &mesos::FrameworkInfo,
        id: &mesos::ContainerId,
    ) -> Result<mesos::Environment, AbiFailure> {
        self.call(EnvironmentFor::Executor, executor, framework, id)
    }

    /// The credentials a nested container of that executor gets.
    pub fn nested(
        &self,
        executor: &mesos::ExecutorInfo,
        framework: &mesos::FrameworkInfo,
        id: &mesos::ContainerId,
    ) -> Result<mesos::Environment, AbiFailure> {
        self.call(EnvironmentFor::Nested, executor, framework, id)
    }
}

impl Drop for CredentialInjector {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe {
            self.abi
                .f()
                .nestguard_credential_injector_free(self.handle.0)
        }
    }
}
