//! The agent's only way into nestguard's modules: the C ABI of the loaded
//! `libnestguard.so`, called through the function table that bindgen
//! generated from `include/nestguard.h` (`bindings.rs`). Each wrapper owns
//! one handle and frees it on drop.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust; with `cli/library.rs` (and the generated `bindings.rs`) this
// is the harness's only unsafe code, each call with its SAFETY comment.
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

use anyhow::Context;
use prost::Message;

use super::bindings::{
    self as ffi, NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE, NESTGUARD_LAUNCHER_POSIX,
    NESTGUARD_RESULT_BUFFER_TOO_SMALL, NESTGUARD_RESULT_OK, NESTGUARD_RESULT_PANIC,
    NESTGUARD_RESULT_PROTOBUF_DECODE, nestguard_bytes, nestguard_result,
};
use crate::cli::library::NestguardLibrary;
use nestguard::proto::mesos::{self, authorization, slave};

/// A failed ABI call: the stable result code and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbiFailure {
    /// `nestguard_result` code (one of the `NESTGUARD_RESULT_*` constants).
    pub code: nestguard_result,
    /// `nestguard_error_message` text.
    pub message: String,
}

impl AbiFailure {
    /// A failure found on the agent's side of the call: a reply that did not
    /// decode as the message the header promises.
    fn undecodable(what: &str, e: prost::DecodeError) -> Self {
        AbiFailure {
            code: NESTGUARD_RESULT_PROTOBUF_DECODE,
            message: format!("{what}: {e}"),
        }
    }
}

impl std::fmt::Display for AbiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (nestguard result {})", self.message, self.code)
    }
}

impl std::error::Error for AbiFailure {}

/// Result codes the agent reacts to: the header's constants.
pub mod codes {
    pub use super::ffi::{
        NESTGUARD_RESULT_CHECKPOINT as CHECKPOINT,
        NESTGUARD_RESULT_CREDENTIAL_INJECTION as CREDENTIAL_INJECTION,
        NESTGUARD_RESULT_LAUNCHER_CONTAINER_EXISTS as LAUNCHER_CONTAINER_EXISTS,
        NESTGUARD_RESULT_LAUNCHER_PARENT_NOT_RUNNING as LAUNCHER_PARENT_NOT_RUNNING,
        NESTGUARD_RESULT_LAUNCHER_TIMEOUT as LAUNCHER_TIMEOUT,
        NESTGUARD_RESULT_LAUNCHER_UNKNOWN_CONTAINER as LAUNCHER_UNKNOWN_CONTAINER,
    };
}

/// The credential hook's modes (`nestguard_injection_mode`): the header's
/// constants.
pub mod injection_mode {
    pub use super::ffi::{
        NESTGUARD_INJECTION_MODE_AUTO as AUTO, NESTGUARD_INJECTION_MODE_SECRET as SECRET,
        NESTGUARD_INJECTION_MODE_TOKEN as TOKEN,
    };
}

/// The loaded library and its function table.
pub struct Abi {
    lib: NestguardLibrary,
}

impl Abi {
    /// Loads libnestguard.so from `path`.
    pub fn load(path: &Path) -> anyhow::Result<Arc<Abi>> {
        let lib = NestguardLibrary::load(path)?;
        Ok(Arc::new(Abi { lib }))
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &Path {
        self.lib.path()
    }

    /// The generated function table.
    fn f(&self) -> &ffi::Nestguard {
        self.lib.functions()
    }

    fn check(&self, code: nestguard_result) -> Result<(), AbiFailure> {
        if code == NESTGUARD_RESULT_OK {
            Ok(())
        } else {
            Err(AbiFailure {
                code,
                message: self.lib.last_error(),
            })
        }
    }

    fn take(&self, bytes: *mut nestguard_bytes) -> Result<Vec<u8>, AbiFailure> {
        self.lib.take_bytes(bytes).map_err(|e| AbiFailure {
            code: NESTGUARD_RESULT_PANIC,
            message: format!("{e:#}"),
        })
    }
}

impl super::metrics::LibraryMetrics for Arc<Abi> {
    fn json(&self) -> Result<String, String> {
        self.metrics(ffi::NESTGUARD_METRICS_FORMAT_JSON)
            .map_err(|e| e.to_string())
    }

    fn prometheus(&self) -> Result<String, String> {
        self.metrics(ffi::NESTGUARD_METRICS_FORMAT_PROMETHEUS)
            .map_err(|e| e.to_string())
    }
}

impl Abi {
    /// `nestguard_metrics_snapshot` in `format` (a
    /// `NESTGUARD_METRICS_FORMAT_*`): the library's process-wide metrics.
    pub fn metrics(&self, format: ffi::nestguard_metrics_format) -> Result<String, AbiFailure> {
        self.text_out("the metrics snapshot", |buf, len, needed| {
            // SAFETY: valid buffer and out pointer for the call.
            unsafe {
                self.f()
                    .nestguard_metrics_snapshot(format, buf, len, needed)
            }
        })
    }

    /// Text from a function that fills a caller buffer (`buf`, `len`,
    /// `out_n`): retried with the size the library asks for, a few times
    /// since the text may grow between calls.
    fn text_out(
        &self,
        what: &str,
        call: impl Fn(*mut c_char, usize, &mut usize) -> nestguard_result,
    ) -> Result<String, AbiFailure> {
        let mut buf = vec![0 as c_char; 16 * 1024];
        let mut needed = 0usize;
        for _ in 0..3 {
            let code = call(buf.as_mut_ptr(), buf.len(), &mut needed);
            if code == NESTGUARD_RESULT_BUFFER_TOO_SMALL {
                buf.resize(needed + 1024, 0);
                continue;
            }
            self.check(code)?;
            let raw: Vec<u8> = buf[..needed.saturating_sub(1)]
                .iter()
                .map(|c| *c as u8)
                .collect();
            return Ok(String::from_utf8_lossy(&raw).into_owned());
        }
        Err(AbiFailure {
            code: NESTGUARD_RESULT_BUFFER_TOO_SMALL,
            message: format!("{what} kept growing"),
        })
    }
}

fn text(s: &str) -> (*const c_char, usize) {
    (s.as_ptr().cast(), s.len())
}

/// A handle pointer the library documents as thread-safe.
struct Handle<T>(*mut T);
// SAFETY: every handle wrapped here is documented in include/nestguard.h as
// safe to use from several threads at once.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Handle<T> {}

/// `nestguard_authorizer`: Mesos ACLs.
pub struct Authorizer {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_authorizer>,
    file: Option<std::path::PathBuf>,
    /// The registered audit callback's closure (the callback's userdata).
    audit: std::sync::Mutex<Option<Box<Box<AuditFn>>>>,
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

    /// Why the request is decided as it is (JSON).
    pub fn explain(&self, request: &authorization::Request) -> Result<String, AbiFailure> {
        let bytes = request.encode_to_vec();
        self.abi.text_out("the explanation", |buf, len, needed| {
            // SAFETY: live handle, valid buffers and out pointer.
            unsafe {
                self.abi.f().nestguard_authorizer_explain(
                    self.handle.0,
                    bytes.as_ptr(),
                    bytes.len(),
                    buf,
                    len,
                    needed,
                )
            }
        })
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

/// What receives the authorizer's audit records (JSON bytes).
pub type AuditFn = dyn Fn(&[u8]) + Send + Sync;

/// The C callback: hands the record to the closure behind `userdata`.
unsafe extern "C" fn audit_trampoline(
    userdata: *mut std::ffi::c_void,
    json: *const u8,
    len: usize,
) {
    // SAFETY: `userdata` is the `Box<AuditFn>` that `set_audit` registered
    // and `clear_audit` frees only after unregistering returned; the library
    // passes `len` valid bytes for the call.
    let (f, bytes) = unsafe {
        (
            &*userdata.cast::<Box<AuditFn>>(),
            std::slice::from_raw_parts(json, len),
        )
    };
    // No panic may unwind into the library.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(bytes)));
}

impl Authorizer {
    /// Sends every decision (one in `sample_every`; only denials if
    /// `denials_only`) to `sink` as JSON, replacing an earlier sink.
    pub fn set_audit(
        &self,
        sink: Box<AuditFn>,
        sample_every: u32,
        denials_only: bool,
    ) -> Result<(), AbiFailure> {
        let mut slot = self.audit.lock().unwrap_or_else(|p| p.into_inner());
        let boxed = Box::new(sink);
        let userdata = std::ptr::from_ref::<Box<AuditFn>>(&boxed).cast_mut().cast();
        let options = ffi::nestguard_audit_options {
            sample_every,
            denials_only,
        };
        // SAFETY: live handle; `boxed` stays alive in `slot` until
        // `clear_audit` has unregistered it.
        let code = unsafe {
            self.abi.f().nestguard_authorizer_set_audit_callback(
                self.handle.0,
                Some(audit_trampoline),
                userdata,
                &options,
            )
        };
        self.abi.check(code)?;
        // The replaced closure is no longer called once registration returned.
        *slot = Some(boxed);
        Ok(())
    }

    /// Stops the audit callback; when this returns it is not running.
    pub fn clear_audit(&self) {
        let mut slot = self.audit.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            // SAFETY: live handle.
            let code = unsafe {
                self.abi
                    .f()
                    .nestguard_authorizer_clear_audit_callback(self.handle.0)
            };
            if let Err(e) = self.abi.check(code) {
                tracing::error!(error = %e, "unregistering the audit callback failed; leaking its closure");
                std::mem::forget(slot.take());
                return;
            }
            *slot = None;
        }
    }
}

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
    /// The mode in effect (an [`injection_mode`] constant).
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

/// A launched command's stdin, stdout and stderr (`nestguard_container_io`).
#[derive(Clone, Copy)]
pub struct LaunchIo<'a> {
    /// Becomes the command's fd 0.
    pub stdin: BorrowedFd<'a>,
    /// Becomes the command's fd 1.
    pub stdout: BorrowedFd<'a>,
    /// Becomes the command's fd 2.
    pub stderr: BorrowedFd<'a>,
    /// The three are a pty's slave: the command's controlling terminal.
    pub tty: bool,
    /// The container is a debug session's (checkpointed as class DEBUG).
    pub debug: bool,
}

/// `nestguard_launcher`.
pub struct Launcher {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_launcher>,
}

impl Launcher {
    /// Creates a launcher on `runtime_dir`; `posix` selects the posix
    /// launcher; `allow_sharing_pid` lets top-level containers share the
    /// agent's pid namespace.
    pub fn create(
        abi: &Arc<Abi>,
        runtime_dir: &Path,
        helper: Option<&Path>,
        posix: bool,
        allow_sharing_pid: bool,
        isolator: Option<&Isolator>,
    ) -> anyhow::Result<Launcher> {
        let rd = runtime_dir.to_str().context("runtime dir is not UTF-8")?;
        let helper = helper
            .map(|p| p.to_str().context("helper path is not UTF-8"))
            .transpose()?
            .unwrap_or("");
        let (rp, rn) = text(rd);
        let (hp, hn) = text(helper);
        let mut out = std::ptr::null_mut();
        let iso = isolator.map_or(std::ptr::null(), |i| i.handle.0.cast_const());
        let mut flags = 0;
        if posix {
            flags |= NESTGUARD_LAUNCHER_POSIX;
        }
        if allow_sharing_pid {
            flags |= NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE;
        }
        // SAFETY: valid texts, live isolator handle (or NULL), out pointer.
        let code = unsafe {
            abi.f()
                .nestguard_launcher_new_with_isolator(rp, rn, hp, hn, flags, iso, &mut out)
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("creating the launcher")?;
        Ok(Launcher {
            abi: abi.clone(),
            handle: Handle(out),
        })
    }

    /// Recovers after a restart; returns the launcher's answer (orphans).
    pub fn recover(
        &self,
        known: &[mesos::ContainerId],
    ) -> Result<slave::ContainerRecoverInfo, AbiFailure> {
        let info = slave::ContainerRecoverInfo {
            known_container_ids: known.to_vec(),
            ..Default::default()
        }
        .encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_launcher_recover(
                self.handle.0,
                info.as_ptr(),
                info.len(),
                &mut out,
            )
        };
        self.abi.check(code)?;
        let bytes = self.abi.take(out)?;
        slave::ContainerRecoverInfo::decode(bytes.as_slice())
            .map_err(|e| AbiFailure::undecodable("recover reply", e))
    }

    /// Launches a container; returns its supervisor's pid. With `io`, the
    /// command's stdio is those descriptors (borrowed for the call).
    pub fn launch(
        &self,
        id: &mesos::ContainerId,
        info: &slave::ContainerLaunchInfo,
        container: Option<&mesos::ContainerInfo>,
        sandbox: &Path,
        io: Option<LaunchIo<'_>>,
    ) -> Result<i32, AbiFailure> {
        let (i, l) = (id.encode_to_vec(), info.encode_to_vec());
        let c = container.map(Message::encode_to_vec).unwrap_or_default();
        let s = sandbox.to_string_lossy();
        let (sp, sn) = text(&s);
        let io = io.map(|io| ffi::nestguard_container_io {
            stdin_fd: io.stdin.as_raw_fd(),
            stdout_fd: io.stdout.as_raw_fd(),
            stderr_fd: io.stderr.as_raw_fd(),
            flags: if io.tty {
                ffi::NESTGUARD_CONTAINER_IO_TTY
            } else {
                0
            } | if io.debug {
                ffi::NESTGUARD_CONTAINER_IO_DEBUG
            } else {
                0
            },
        });
        let io_ptr = io.as_ref().map_or(std::ptr::null(), |io| {
            io as *const ffi::nestguard_container_io
        });
        let mut pid = 0;
        // SAFETY: live handle, valid buffers, out pointer; `io`'s
        // descriptors are borrowed for the call.
        let code = unsafe {
            self.abi.f().nestguard_launcher_launch_with_io(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                l.as_ptr(),
                l.len(),
                c.as_ptr(),
                c.len(),
                sp,
                sn,
                io_ptr,
                &mut pid,
            )
        };
        self.abi.check(code)?;
        Ok(pid)
    }

    /// Waits up to `timeout_ms` (negative: forever) for the raw wait status.
    pub fn wait(
        &self,
        id: &mesos::ContainerId,
        timeout_ms: i64,
    ) -> Result<Option<i32>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut status = 0;
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_launcher_wait(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                timeout_ms,
                &mut status,
            )
        };
        if code == codes::LAUNCHER_TIMEOUT {
            return Ok(None);
        }
        self.abi.check(code)?;
        Ok(Some(status))
    }

    /// Sends a signal; false if the container had already exited.
    pub fn kill(&self, id: &mesos::ContainerId, signal: i32) -> Result<bool, AbiFailure> {
        let i = id.encode_to_vec();
        let mut sent = false;
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_launcher_kill(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                signal,
                &mut sent,
            )
        };
        self.abi.check(code)?;
        Ok(sent)
    }

    /// Destroys the container and its subtree; returns its raw status if known.
    pub fn destroy(&self, id: &mesos::ContainerId) -> Result<Option<i32>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut status = -1;
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_launcher_destroy(self.handle.0, i.as_ptr(), i.len(), &mut status)
        };
        self.abi.check(code)?;
        Ok((status >= 0).then_some(status))
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_launcher_free(self.handle.0) }
    }
}

/// `nestguard_isolator`: the io_nestguard_Isolator module.
pub struct Isolator {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_isolator>,
}

impl Isolator {
    /// Creates the isolators from the module's manifest parameters.
    pub fn create(abi: &Arc<Abi>, parameters: &[mesos::Parameter]) -> anyhow::Result<Isolator> {
        let bytes = mesos::Parameters {
            parameter: parameters.to_vec(),
        }
        .encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: valid buffer and out pointer.
        let code = unsafe {
            abi.f()
                .nestguard_isolator_new(bytes.as_ptr(), bytes.len(), &mut out)
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("creating io_nestguard_Isolator")?;
        Ok(Isolator {
            abi: abi.clone(),
            handle: Handle(out),
        })
    }

    /// `recover(states, orphans)`.
    pub fn recover(&self, info: &slave::ContainerRecoverInfo) -> Result<(), AbiFailure> {
        let bytes = info.encode_to_vec();
        // SAFETY: live handle, valid buffer.
        self.abi.check(unsafe {
            self.abi
                .f()
                .nestguard_isolator_recover(self.handle.0, bytes.as_ptr(), bytes.len())
        })
    }

    /// `prepare(id, config)`.
    pub fn prepare(
        &self,
        id: &mesos::ContainerId,
        config: &slave::ContainerConfig,
    ) -> Result<Option<slave::ContainerLaunchInfo>, AbiFailure> {
        let (i, c) = (id.encode_to_vec(), config.encode_to_vec());
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffers, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_isolator_prepare(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                c.as_ptr(),
                c.len(),
                &mut out,
            )
        };
        self.abi.check(code)?;
        if out.is_null() {
            return Ok(None);
        }
        let bytes = self.abi.take(out)?;
        slave::ContainerLaunchInfo::decode(bytes.as_slice())
            .map(Some)
            .map_err(|e| AbiFailure::undecodable("launch info", e))
    }

    /// `isolate(id, pid)`.
    pub fn isolate(&self, id: &mesos::ContainerId, pid: u32) -> Result<(), AbiFailure> {
        let i = id.encode_to_vec();
        // SAFETY: live handle, valid buffer.
        self.abi.check(unsafe {
            self.abi
                .f()
                .nestguard_isolator_isolate(self.handle.0, i.as_ptr(), i.len(), pid)
        })
    }

    /// `watch(id)`.
    pub fn watch(&self, id: &mesos::ContainerId) -> Result<Watch, AbiFailure> {
        let i = id.encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_watch_new(self.handle.0, i.as_ptr(), i.len(), &mut out)
        };
        self.abi.check(code)?;
        Ok(Watch {
            abi: self.abi.clone(),
            handle: Handle(out),
        })
    }

    /// `usage(id)`: the container's resource statistics (None: the
    /// isolators report nothing).
    pub fn usage(
        &self,
        id: &mesos::ContainerId,
    ) -> Result<Option<mesos::ResourceStatistics>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_usage(self.handle.0, i.as_ptr(), i.len(), &mut out)
        };
        self.abi.check(code)?;
        self.decode_out(out, "resource statistics")
    }

    /// `status(id)`: the container's status (None: the isolators report
    /// nothing).
    pub fn status(
        &self,
        id: &mesos::ContainerId,
    ) -> Result<Option<mesos::ContainerStatus>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_status(self.handle.0, i.as_ptr(), i.len(), &mut out)
        };
        self.abi.check(code)?;
        self.decode_out(out, "container status")
    }

    fn decode_out<M: Message + Default>(
        &self,
        out: *mut nestguard_bytes,
        what: &str,
    ) -> Result<Option<M>, AbiFailure> {
        if out.is_null() {
            return Ok(None);
        }
        let bytes = self.abi.take(out)?;
        M::decode(bytes.as_slice())
            .map(Some)
            .map_err(|e| AbiFailure::undecodable(what, e))
    }

    /// `cleanup(id)`.
    pub fn cleanup(&self, id: &mesos::ContainerId) -> Result<(), AbiFailure> {
        let i = id.encode_to_vec();
        // SAFETY: live handle, valid buffer.
        self.abi.check(unsafe {
            self.abi
                .f()
                .nestguard_isolator_cleanup(self.handle.0, i.as_ptr(), i.len())
        })
    }
}

impl Drop for Isolator {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_isolator_free(self.handle.0) }
    }
}

/// A container's limitation watch (one thread at a time).
pub struct Watch {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_isolator_watch>,
}

impl Watch {
    /// Waits up to `timeout_ms` for the watch's fd, then checks for a limitation.
    pub fn poll(
        &mut self,
        timeout_ms: i32,
    ) -> Result<Option<slave::ContainerLimitation>, AbiFailure> {
        // SAFETY: live handle.
        let fd = unsafe { self.abi.f().nestguard_isolator_watch_fd(self.handle.0) };
        if fd >= 0 {
            // SAFETY: the watch owns `fd` and keeps it open while the handle
            // lives; it is borrowed for this poll only.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            // Negative: wait until the fd is ready.
            let timeout = u64::try_from(timeout_ms)
                .ok()
                .and_then(|ms| Timespec::try_from(Duration::from_millis(ms)).ok());
            // A failed or interrupted poll only means the check below runs
            // sooner: it reads the watch's state, not the fd.
            let _ = rustix::event::poll(&mut fds, timeout.as_ref());
        }
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_watch_check(self.handle.0, &mut out)
        };
        self.abi.check(code)?;
        if out.is_null() {
            return Ok(None);
        }
        let bytes = self.abi.take(out)?;
        slave::ContainerLimitation::decode(bytes.as_slice())
            .map(Some)
            .map_err(|e| AbiFailure::undecodable("limitation", e))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_isolator_watch_free(self.handle.0) }
    }
}
