//! Credentials over the C ABI: credential stores, HTTP authentication
//! (Basic and Bearer JWT) and the injection of an executor's credentials
//! into its containers' environment.
//!
//! Secrets never appear in `nestguard_error_message` texts.

use std::path::Path;
use std::sync::Arc;

use prost::Message as _;

use super::bytes::nestguard_bytes;
use super::error::fail;
use super::ffi::{free_handle, handle_ref, into_handle, write_out};
use super::result::{AbiError, nestguard_result};
use crate::credentials::delegation::{DelegationError, ExecutorPrincipals};
use crate::credentials::file::{self, FileError, LoadOptions};
use crate::credentials::http::{AuthOutcome, HttpAuthError, HttpAuthenticator};
use crate::credentials::injection::{InjectionError, Injector, Mode};
use crate::credentials::jwt::{self, JwtError};
use crate::credentials::{CredentialStore, Secret};
use crate::proto::mesos::{ContainerId, ExecutorInfo, FrameworkInfo};

impl AbiError for FileError {
    fn code(&self) -> nestguard_result {
        nestguard_result::CredentialsFile
    }
}

impl AbiError for JwtError {
    fn code(&self) -> nestguard_result {
        nestguard_result::Jwt
    }
}

impl AbiError for HttpAuthError {
    fn code(&self) -> nestguard_result {
        nestguard_result::HttpAuthenticator
    }
}

impl AbiError for InjectionError {
    fn code(&self) -> nestguard_result {
        nestguard_result::CredentialInjection
    }
}

impl AbiError for DelegationError {
    fn code(&self) -> nestguard_result {
        nestguard_result::InvalidArgument
    }
}

/// A loaded set of credentials (principal → secret), as from Mesos'
/// `--credentials` or `--http_credentials`.
///
/// Immutable once made: may be used from several threads at once, and by
/// the handles made from it (they keep their own reference, so it may be
/// freed while they live). Secrets are wiped from memory when the last user
/// releases them.
pub struct nestguard_credentials {
    pub(crate) store: Arc<CredentialStore>,
}

/// Loads a credentials file (`path`, UTF-8, not NUL-terminated): Mesos JSON
/// `{"credentials":[{"principal":..,"secret":..}]}` or the legacy
/// `principal secret` lines. Duplicate principals, an empty file and a file
/// readable or writable by group or others (unless
/// `allow_open_permissions`) are refused with
/// `NESTGUARD_RESULT_CREDENTIALS_FILE`; the message names the file and the
/// line or JSON path. Free the handle with `nestguard_credentials_free`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credentials_load(
    path: *const std::ffi::c_char,
    path_len: usize,
    allow_open_permissions: bool,
    out: *mut *mut nestguard_credentials,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let path = try_str!(path, path_len, "path");
        let options = LoadOptions { allow_open_permissions, ..LoadOptions::default() };
        let store = try_abi!(file::load_credentials(Path::new(path), &options));
        write_out(out, into_handle(nestguard_credentials { store: Arc::new(store) }));
        nestguard_result::Ok
    }
}

/// Parses credentials from memory (the same formats as
/// `nestguard_credentials_load`, e.g. a flag given inline); `origin` (may be
/// empty) names the input in error messages.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credentials_parse(
    text: *const std::ffi::c_char,
    text_len: usize,
    origin: *const std::ffi::c_char,
    origin_len: usize,
    out: *mut *mut nestguard_credentials,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let text = try_str!(text, text_len, "text");
        let origin = try_str!(origin, origin_len, "origin");
        let origin = if origin.is_empty() { "<inline>" } else { origin };
        let store = try_abi!(file::parse_store(text, origin));
        write_out(out, into_handle(nestguard_credentials { store: Arc::new(store) }));
        nestguard_result::Ok
    }
}

/// Number of credentials in the set (0 for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credentials_count(credentials: *const nestguard_credentials) -> usize {
    ffi_panic_boundary! {
        handle_ref(credentials).map_or(0, |c| c.store.len())
    }
}

/// Releases a credential set. NULL is a no-op; must not be called twice.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credentials_free(credentials: *mut nestguard_credentials) {
    ffi_panic_boundary! {
        free_handle(credentials)
    }
}

fn optional_key(path: &str, allow_open_permissions: bool) -> Result<Option<Secret>, JwtError> {
    if path.is_empty() {
        return Ok(None);
    }
    jwt::load_key(
        Path::new(path),
        &LoadOptions {
            allow_open_permissions,
            ..LoadOptions::default()
        },
    )
    .map(Some)
}

/// The HTTP authenticators of one realm (e.g. `mesos-agent-readwrite`,
/// `mesos-agent-executor`): Basic against a credential set and/or Bearer
/// executor tokens (JWT HS256), tried in that order like Mesos'
/// `--http_authenticators=basic,jwt`.
///
/// Immutable: may be used from several threads at once.
pub struct nestguard_http_authenticator {
    inner: HttpAuthenticator,
}

/// Makes an HTTP authenticator for `realm`. `credentials` (may be NULL)
/// enables Basic; `jwt_key_path` (may be empty: no JWT) names the signing
/// key file (its whole content is the key, as Mesos' `--jwt_secret_key`);
/// a key file readable or writable by group or others is refused unless
/// `allow_open_permissions`. At least one of the two is required.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_http_authenticator_new(
    realm: *const std::ffi::c_char,
    realm_len: usize,
    credentials: *const nestguard_credentials,
    jwt_key_path: *const std::ffi::c_char,
    jwt_key_path_len: usize,
    allow_open_permissions: bool,
    out: *mut *mut nestguard_http_authenticator,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let realm = try_str!(realm, realm_len, "realm");
        let key_path = try_str!(jwt_key_path, jwt_key_path_len, "jwt_key_path");
        let key = try_abi!(optional_key(key_path, allow_open_permissions));
        let basic = handle_ref(credentials).map(|c| c.store.clone());
        let inner = try_abi!(HttpAuthenticator::new(realm, basic, key));
        write_out(out, into_handle(nestguard_http_authenticator { inner }));
        nestguard_result::Ok
    }
}

/// Authenticates a request by its `Authorization` header value
/// (`has_header` false when the request has none; then `header` is
/// ignored).
///
/// On `NESTGUARD_RESULT_OK`, `*out_authenticated` says the outcome and
/// `*out` holds:
/// * if authenticated: a serialized `mesos.authorization.Subject` (`value` =
///   the Basic principal; `claims` = the token's claims as labels);
/// * if not: the text of the `WWW-Authenticate` header of the 401 to send
///   (UTF-8, not NUL-terminated), e.g.
///   `Basic realm="mesos-agent-readwrite",Bearer realm="mesos-agent-readwrite"`.
///
/// Free `*out` with `nestguard_bytes_free`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_http_authenticator_authenticate(
    authenticator: *const nestguard_http_authenticator,
    header: *const std::ffi::c_char,
    header_len: usize,
    has_header: bool,
    out_authenticated: *mut bool,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(authenticator, "authenticator");
        try_not_null!(out_authenticated, "out_authenticated");
        try_not_null!(out, "out");
        let header = if has_header {
            Some(try_str!(header, header_len, "header"))
        } else {
            None
        };
        let Some(auth) = handle_ref(authenticator) else {
            return fail(nestguard_result::NullParameter, "argument `authenticator` must not be NULL");
        };
        let (ok, bytes) = match auth.inner.authenticate(header, jwt::now_secs()) {
            AuthOutcome::Principal(p) => (true, p.to_subject().encode_to_vec()),
            AuthOutcome::Unauthorized { www_authenticate } => (false, www_authenticate.into_bytes()),
        };
        write_out(out_authenticated, ok);
        write_out(out, nestguard_bytes::into_raw(bytes));
        nestguard_result::Ok
    }
}

/// Releases an HTTP authenticator. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_http_authenticator_free(
    authenticator: *mut nestguard_http_authenticator,
) {
    ffi_panic_boundary! {
        free_handle(authenticator)
    }
}

/// Computes the credential environment of an executor's containers.
///
/// Immutable: may be used from several threads at once.
pub struct nestguard_credential_injector {
    inner: Injector,
}

/// How an injector passes credentials. Inputs take the number as a
/// `uint32_t` (an unknown number is an error); outputs are this type.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum nestguard_injection_mode {
    /// Input only: token mode when a key is given, else secret mode.
    Auto = 0,
    /// An executor JWT in `MESOS_EXECUTOR_AUTHENTICATION_TOKEN`.
    Token = 1,
    /// `MESOS_PRINCIPAL` + `MESOS_SECRET` from the credentials.
    Secret = 2,
}

const MODE_AUTO: u32 = nestguard_injection_mode::Auto as u32;
const MODE_TOKEN: u32 = nestguard_injection_mode::Token as u32;
const MODE_SECRET: u32 = nestguard_injection_mode::Secret as u32;

/// Makes an injector. `mode` is a `nestguard_injection_mode` number; token
/// mode needs `jwt_key_path` (non-empty), secret mode needs `credentials`
/// (the agent's `--http_credentials`; may be NULL otherwise). `AUTO` picks
/// token mode when a key is given, else secret mode; `*out_mode` (may be
/// NULL) receives the mode in effect.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credential_injector_new(
    mode: u32,
    jwt_key_path: *const std::ffi::c_char,
    jwt_key_path_len: usize,
    allow_open_permissions: bool,
    credentials: *const nestguard_credentials,
    out: *mut *mut nestguard_credential_injector,
    out_mode: *mut nestguard_injection_mode,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let key_path = try_str!(jwt_key_path, jwt_key_path_len, "jwt_key_path");
        let key = try_abi!(optional_key(key_path, allow_open_permissions));
        let store = handle_ref(credentials).map(|c| c.store.clone());
        let inner = match (mode, key, store) {
            (MODE_AUTO, key, store) => try_abi!(Injector::from_config(key, store)),
            (MODE_TOKEN, Some(key), _) => Injector::new(Mode::Token(key)),
            (MODE_SECRET, _, Some(store)) => Injector::new(Mode::Secret(store)),
            (MODE_TOKEN, None, _) => {
                return fail(nestguard_result::InvalidArgument, "token injection mode needs `jwt_key_path`");
            }
            (MODE_SECRET, _, None) => {
                return fail(nestguard_result::InvalidArgument, "secret injection mode needs `credentials`");
            }
            (other, _, _) => {
                return fail(nestguard_result::InvalidArgument, format!("unknown injection mode {other}"));
            }
        };
        if !out_mode.is_null() {
            let mode = match inner.mode() {
                Mode::Token(_) => nestguard_injection_mode::Token,
                Mode::Secret(_) => nestguard_injection_mode::Secret,
            };
            write_out(out_mode, mode);
        }
        write_out(out, into_handle(nestguard_credential_injector { inner }));
        nestguard_result::Ok
    }
}

/// Sets the secret-mode mapping `executor_principals` (module parameter):
/// which principals each framework principal may hand to its executors
/// through the ExecutorInfo label `principal`. `value` is the JSON text
/// (`{"framework-principal": ["principal", ...]}`) or a path / `file://`
/// URL of a regular file holding it. Without a mapping an executor gets
/// only its framework's own principal. Call it right after
/// `nestguard_credential_injector_new`, before the injector is shared.
///
/// Errors: `NESTGUARD_RESULT_INVALID_ARGUMENT` naming what is wrong; the
/// injector keeps its previous mapping.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credential_injector_set_executor_principals(
    injector: *mut nestguard_credential_injector,
    value: *const std::ffi::c_char,
    value_len: usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(injector, "injector");
        let value = try_str!(value, value_len, "value");
        let mapping = try_abi!(ExecutorPrincipals::from_parameter(value));
        // SAFETY: non-NULL, a live handle from `_new`; the caller does not
        // share it yet (documented above).
        let injector = unsafe { &mut *injector };
        injector.inner = injector.inner.clone().with_executor_principals(mapping);
        nestguard_result::Ok
    }
}

/// Which environment to compute.
#[derive(Clone, Copy)]
enum Shape {
    Hook,
    Nested,
}

#[expect(
    clippy::too_many_arguments,
    reason = "mirrors the C signature: three (pointer, length) buffers"
)]
fn environment(
    injector: *const nestguard_credential_injector,
    executor_info: *const u8,
    executor_info_len: usize,
    framework_info: *const u8,
    framework_info_len: usize,
    container_id: *const u8,
    container_id_len: usize,
    out: *mut *mut nestguard_bytes,
    shape: Shape,
) -> nestguard_result {
    try_not_null!(injector, "injector");
    try_not_null!(out, "out");
    let executor = try_decode!(
        ExecutorInfo,
        executor_info,
        executor_info_len,
        "executor_info"
    );
    let framework = try_decode!(
        FrameworkInfo,
        framework_info,
        framework_info_len,
        "framework_info"
    );
    let container = try_decode!(ContainerId, container_id, container_id_len, "container_id");
    let Some(injector) = handle_ref(injector) else {
        return fail(
            nestguard_result::NullParameter,
            "argument `injector` must not be NULL",
        );
    };
    let env = match shape {
        Shape::Hook => injector
            .inner
            .decorate_executor_environment(&executor, &framework, &container),
        Shape::Nested => injector
            .inner
            .nested_container_environment(&executor, &framework, &container),
    };
    let env = try_abi!(env);
    write_out(out, nestguard_bytes::into_raw(env.encode_to_vec()));
    nestguard_result::Ok
}

/// Hook shape (`Hook::slaveExecutorEnvironmentDecorator`): from serialized
/// `mesos.ExecutorInfo`, `mesos.FrameworkInfo` and the executor's
/// `mesos.ContainerID`, returns in `*out` a serialized `mesos.Environment`:
/// the executor's `command.environment` copied, with the credential
/// variables replacing same-named ones and appended. The bytes contain the
/// credential in clear: do not log them.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credential_injector_decorate_executor_environment(
    injector: *const nestguard_credential_injector,
    executor_info: *const u8,
    executor_info_len: usize,
    framework_info: *const u8,
    framework_info_len: usize,
    container_id: *const u8,
    container_id_len: usize,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        environment(injector, executor_info, executor_info_len, framework_info, framework_info_len,
            container_id, container_id_len, out, Shape::Hook)
    }
}

/// Isolator shape (`Isolator::prepare` of a nested container): a serialized
/// `mesos.Environment` with only the credential variables, identical to its
/// executor's (claims name the root container of `container_id`). Put it in
/// `ContainerLaunchInfo.environment`. Do not log the bytes.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credential_injector_nested_environment(
    injector: *const nestguard_credential_injector,
    executor_info: *const u8,
    executor_info_len: usize,
    framework_info: *const u8,
    framework_info_len: usize,
    container_id: *const u8,
    container_id_len: usize,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        environment(injector, executor_info, executor_info_len, framework_info, framework_info_len,
            container_id, container_id_len, out, Shape::Nested)
    }
}

/// Releases an injector. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_credential_injector_free(injector: *mut nestguard_credential_injector) {
    ffi_panic_boundary! {
        free_handle(injector)
    }
}
