//! `nestguard_authorizer`: the io_nestguard_Authorizer module (Mesos ACLs),
//! created from its manifest parameters. Its audit callback is in `audit.rs`.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust (see `mod.rs`); each call has its SAFETY comment.
#![allow(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use prost::Message;

use super::{Abi, AbiFailure, AuditFn, Handle, text};
use crate::cli::agent::bindings as ffi;
use nestguard::proto::mesos::{self, authorization};

/// `nestguard_authorizer`: Mesos ACLs.
pub struct Authorizer {
    pub(super) abi: Arc<Abi>,
    pub(super) handle: Handle<ffi::nestguard_authorizer>,
    file: Option<std::path::PathBuf>,
    /// The registered audit callback's closure (the callback's userdata).
    pub(super) audit: std::sync::Mutex<Option<Box<Box<AuditFn>>>>,
}

impl Authorizer {
    /// Creates the authorizer module from its manifest parameters: `acls`
    /// (inline JSON, a path, or a file:// URL, as Mesos' `--acls`),
    /// `strict` (default true), `executor_tokens_any_user` (default
    /// false; true restores Mesos' any-user rule for executor tokens) and
    /// `max_file_size` (bytes; default 16 MiB).
    pub fn create(abi: &Arc<Abi>, parameters: &[mesos::Parameter]) -> anyhow::Result<Authorizer> {
        // Mesos: the last occurrence of a key wins.
        let get = |key: &str| {
            parameters
                .iter()
                .rev()
                .find(|p| p.key == key)
                .map(|p| p.value.as_str())
        };
        let acls = get("acls").context("No ACLs for default authorizer provided")?;
        let strict = match get("strict") {
            None | Some("true") => true,
            Some("false") => false,
            Some(other) => anyhow::bail!("parameter 'strict' must be true or false, not '{other}'"),
        };
        // 0: the library's default (16 MiB).
        let max_file_size = match get("max_file_size") {
            None => 0,
            Some(v) => nestguard::input::parse_limit(v)?,
        };
        let mut out = std::ptr::null_mut();
        let mut file = None;
        let code = match nestguard::input::FlagValue::parse(acls) {
            nestguard::input::FlagValue::Inline(inline) => {
                let (p, n) = text(inline);
                // SAFETY: valid text and out pointer.
                unsafe { abi.f().nestguard_authorizer_new(p, n, strict, &mut out) }
            }
            nestguard::input::FlagValue::File(path) => {
                let path_text = path
                    .to_str()
                    .context("the acls parameter names a path that is not UTF-8")?
                    .to_owned();
                file = Some(path);
                let (p, n) = text(&path_text);
                // SAFETY: valid text and out pointer.
                unsafe {
                    abi.f().nestguard_authorizer_new_from_file_limited(
                        p,
                        n,
                        strict,
                        max_file_size,
                        &mut out,
                    )
                }
            }
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("creating io_nestguard_Authorizer")?;
        let authorizer = Authorizer {
            abi: abi.clone(),
            handle: Handle(out),
            file,
            audit: std::sync::Mutex::new(None),
        };
        let any_user = match get("executor_tokens_any_user") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => anyhow::bail!(
                "parameter 'executor_tokens_any_user' must be true or false, not '{other}'"
            ),
        };
        // SAFETY: live handle.
        let code = unsafe {
            abi.f()
                .nestguard_authorizer_set_executor_tokens_any_user(authorizer.handle.0, any_user)
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("setting executor_tokens_any_user")?;
        Ok(authorizer)
    }

    /// The ACL file the policy was read from (None: inline JSON).
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Re-reads the ACL file and swaps the new policy in; on error the
    /// previous policy stays in force (the library guarantees it) and the
    /// error says why.
    pub fn reload(&self) -> Result<(), AbiFailure> {
        // SAFETY: live handle.
        let code = unsafe { self.abi.f().nestguard_authorizer_reload(self.handle.0) };
        self.abi.check(code)
    }

    /// `authorized(request)`.
    pub fn authorize(&self, request: &authorization::Request) -> Result<bool, AbiFailure> {
        let bytes = request.encode_to_vec();
        let mut allowed = false;
        // SAFETY: live handle, valid buffer and out pointer.
        let code = unsafe {
            self.abi.f().nestguard_authorizer_authorize(
                self.handle.0,
                bytes.as_ptr(),
                bytes.len(),
                &mut allowed,
            )
        };
        self.abi.check(code)?;
        Ok(allowed)
    }

    /// `authorized(request)` decided once, with the explanation (JSON) of
    /// that very decision: a denial is explained without deciding again, and
    /// against the policy that decided it.
    pub fn decide(&self, request: &authorization::Request) -> Result<(bool, String), AbiFailure> {
        let bytes = request.encode_to_vec();
        let mut allowed = false;
        let mut explanation = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer and out pointers.
        let code = unsafe {
            self.abi.f().nestguard_authorizer_decide(
                self.handle.0,
                bytes.as_ptr(),
                bytes.len(),
                &mut allowed,
                &mut explanation,
            )
        };
        self.abi.check(code)?;
        let json = self.abi.take(explanation)?;
        Ok((allowed, String::from_utf8_lossy(&json).into_owned()))
    }
}

impl Drop for Authorizer {
    fn drop(&mut self) {
        // The library's state can outlive the handle: stop the callback
        // before its closure goes.
        self.clear_audit();
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_authorizer_free(self.handle.0) }
    }
}
