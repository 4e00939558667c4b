//! Mesos ACL authorization over the C ABI: an authorizer handle (Mesos'
//! `LocalAuthorizer`), approvers (`getApprover` → `approved`), explanations
//! and hot reload.
//!
//! Thread safety: `nestguard_authorizer` and `nestguard_approver` handles are
//! immutable from the caller's point of view and may be used from any number
//! of threads at once (including `nestguard_authorizer_reload` concurrently
//! with decisions: a decision sees the old or the new policy, never a mix).
//! Only `_free` must not race with other uses of the same handle. An approver
//! keeps the policy alive on its own: it stays valid after its authorizer is
//! freed, and follows reloads while the authorizer lives.

use super::bytes::nestguard_bytes;
use super::error::fail;
use super::error::text_out;
use super::ffi::{free_handle, handle_ref, into_handle, slice_from, write_out};
use super::result::nestguard_result;
use crate::authz::{Approver, Authorizer, Lowered, ObjectView, ParseMode, Source};
use crate::input::DEFAULT_MAX_FILE_SIZE;
use crate::proto::mesos::authorization::{Action, Object, Request, Subject};

/// A loaded ACL policy. Create with `nestguard_authorizer_new` or
/// `nestguard_authorizer_new_from_file`, release with
/// `nestguard_authorizer_free`. Thread-safe (see the module notes).
pub struct nestguard_authorizer {
    pub(super) inner: Authorizer,
}

/// An approver for one (subject, action), Mesos' `ObjectApprover`. Create
/// with `nestguard_approver_new`, release with `nestguard_approver_free`.
/// Thread-safe; `nestguard_approver_approved` never blocks or allocates.
pub struct nestguard_approver {
    inner: Approver,
}

/// A borrowed UTF-8 string: `ptr` + `len` (not NUL-terminated), and whether
/// the field is set at all. When `present` is false, `ptr` and `len` are
/// ignored; when true, `ptr` may be NULL only with `len == 0`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nestguard_str_view {
    /// First byte.
    pub ptr: *const std::ffi::c_char,
    /// Length in bytes.
    pub len: usize,
    /// Whether the field is set (`has_...()` in protobuf terms).
    pub present: bool,
}

/// An authorization object as borrowed fields (no protobuf encoding), for
/// `nestguard_approver_approved`. All strings are borrowed for the call only.
///
/// Map from `ObjectApprover::Object`:
/// * `value` ← `*object.value`
/// * `has_executor_info` ← `executor_info != nullptr`; `executor_user` ←
///   `executor_info->command().user()` when `has_user()`
/// * `has_framework_info` ← `framework_info != nullptr`; `framework_user` ←
///   `framework_info->user()` when `has_user()`; `framework_principal` ←
///   `framework_info->principal()` when `has_principal()` (it decides an
///   executor token's launch as a user other than its executor's)
/// * `has_command` ← `command_info != nullptr`; `command_user` ←
///   `command_info->user()` when `has_user()`
/// * `container_id` ← `container_id->value()` (the leaf);
///   `root_container_id` ← the value of its root (`getRootContainerId`); when
///   not present, the container id is taken to be its own root.
///
/// An empty `framework_user` counts as not set, as in the protobuf entry
/// points. Actions whose object needs other fields (`RUN_TASK`, `VIEW_TASK`,
/// `TEARDOWN_FRAMEWORK`, `DESTROY_VOLUME`, `UNRESERVE_RESOURCES` and the role
/// actions) fail with `NESTGUARD_RESULT_AUTHORIZATION_FAILED` here, naming
/// the field, when given an object; use `nestguard_approver_approved_object`
/// for them. With no object (NULL) they are decided as Mesos decides
/// `approved(None)`, the same as on the protobuf path.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nestguard_object_view {
    /// `Object.value`.
    pub value: nestguard_str_view,
    /// `executor_info.command.user`.
    pub executor_user: nestguard_str_view,
    /// `framework_info.user`.
    pub framework_user: nestguard_str_view,
    /// `framework_info.principal` (ABI 1.0).
    pub framework_principal: nestguard_str_view,
    /// `command_info.user`.
    pub command_user: nestguard_str_view,
    /// `container_id.value`.
    pub container_id: nestguard_str_view,
    /// The root container's `value`.
    pub root_container_id: nestguard_str_view,
    /// Whether `executor_info` is set.
    pub has_executor_info: bool,
    /// Whether `framework_info` is set.
    pub has_framework_info: bool,
    /// Whether `command_info` is set.
    pub has_command: bool,
}

impl nestguard_str_view {
    /// A view of `s` (`None`: not present), for Rust callers of the ABI.
    pub fn of(s: Option<&str>) -> nestguard_str_view {
        match s {
            Some(s) => nestguard_str_view {
                ptr: s.as_ptr().cast(),
                len: s.len(),
                present: true,
            },
            None => nestguard_str_view {
                ptr: std::ptr::null(),
                len: 0,
                present: false,
            },
        }
    }
}

/// `Some(bytes)` for a present view; `Err(())` for NULL with a length.
#[inline(always)]
fn view(v: &nestguard_str_view) -> Result<Option<&[u8]>, ()> {
    if !v.present {
        return Ok(None);
    }
    slice_from(v.ptr.cast(), v.len).map(Some).ok_or(())
}

#[inline(always)]
fn object_view(o: &nestguard_object_view) -> Result<ObjectView<'_>, ()> {
    Ok(ObjectView {
        value: view(&o.value)?,
        has_executor_info: o.has_executor_info || o.executor_user.present,
        executor_user: view(&o.executor_user)?,
        has_framework_info: o.has_framework_info || o.framework_user.present,
        // Empty is absent, as the lowering of a protobuf object reads it
        // (prost cannot tell them apart), so both paths decide alike.
        framework_user: view(&o.framework_user)?.filter(|u| !u.is_empty()),
        framework_principal: view(&o.framework_principal)?.filter(|p| !p.is_empty()),
        has_command: o.has_command || o.command_user.present,
        command_user: view(&o.command_user)?,
        container_id: view(&o.container_id)?,
        root_container_id: view(&o.root_container_id)?,
        lowered: Lowered::Fields,
    })
}

/// The optional object of an `approved` call as an [`ObjectView`] (NULL =
/// no object), or an early `NullParameter` when a present string view in it
/// is NULL with a non-zero length.
macro_rules! try_object_view {
    ($ptr:expr, $storage:ident) => {
        match handle_ref($ptr) {
            None => None,
            Some(o) => match object_view(o) {
                // Built once where it stays: the view is larger than what
                // Rust moves without a copy loop.
                Ok(v) => {
                    $storage = v;
                    Some(&$storage)
                }
                Err(()) => {
                    return fail(
                        nestguard_result::NullParameter,
                        "a present string view in `object` is NULL with a non-zero length",
                    );
                }
            },
        }
    };
}

fn create(
    source: Source,
    strict: bool,
    max_file_size: u64,
    out: *mut *mut nestguard_authorizer,
) -> nestguard_result {
    let inner = try_abi!(Authorizer::with_max_file_size(
        source,
        ParseMode { strict },
        max_file_size
    ));
    write_out(out, into_handle(nestguard_authorizer { inner }));
    nestguard_result::Ok
}

/// Creates an authorizer from ACL JSON text (Mesos' `ACLs` JSON, plus
/// `manage_nested_containers`). `strict` rejects unknown keys, unknown entity
/// types, nulls and SOME entities without values (Mesos ignores them);
/// `false` loads exactly as Mesos would.
///
/// Errors: `NESTGUARD_RESULT_ACLS_INVALID` with a message naming
/// `<inline>:line:column` and the JSON path, or Mesos' validation text. No
/// authorizer is created on error (fail closed). Free `*out` with
/// `nestguard_authorizer_free`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_new(
    json: *const std::ffi::c_char,
    json_len: usize,
    strict: bool,
    out: *mut *mut nestguard_authorizer,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let text = try_str!(json, json_len, "json");
        create(Source::Inline(text.to_owned()), strict, DEFAULT_MAX_FILE_SIZE, out)
    }
}

/// Creates an authorizer from an ACL file: a path or a `file://` URL (as
/// Mesos' `--acls`). `nestguard_authorizer_reload` re-reads this file.
/// Only a regular file of at most 16 MiB is read (see
/// `nestguard_authorizer_new_from_file_limited`).
///
/// Errors: `NESTGUARD_RESULT_IO` when the file cannot be read (missing, a
/// FIFO or device, too large), `NESTGUARD_RESULT_ACLS_INVALID` as for
/// `nestguard_authorizer_new`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_new_from_file(
    path: *const std::ffi::c_char,
    path_len: usize,
    strict: bool,
    out: *mut *mut nestguard_authorizer,
) -> nestguard_result {
    nestguard_authorizer_new_from_file_limited(path, path_len, strict, DEFAULT_MAX_FILE_SIZE, out)
}

/// `nestguard_authorizer_new_from_file` reading at most `max_file_size`
/// bytes (the module parameter `max_file_size`; 0 means the default,
/// 16 MiB), now and on every reload. A FIFO, a device or a larger file is
/// refused at once with `NESTGUARD_RESULT_IO`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_new_from_file_limited(
    path: *const std::ffi::c_char,
    path_len: usize,
    strict: bool,
    max_file_size: u64,
    out: *mut *mut nestguard_authorizer,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let path = try_str!(path, path_len, "path");
        let source = Source::File(crate::input::flag_path(path).to_path_buf());
        let limit = if max_file_size == 0 { DEFAULT_MAX_FILE_SIZE } else { max_file_size };
        create(source, strict, limit, out)
    }
}

/// Re-reads the authorizer's file and swaps the new policy in atomically.
/// On error the previous policy stays in force and the error says why.
/// Authorizers made from JSON text re-parse the same text. Safe to call
/// while other threads decide.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_reload(
    auth: *const nestguard_authorizer,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(auth, "auth");
        let Some(auth) = handle_ref(auth) else { return nestguard_result::NullParameter };
        try_abi!(auth.inner.reload());
        nestguard_result::Ok
    }
}

/// Sets the authorizer module parameter `executor_tokens_any_user`. With
/// `true`, an executor token may launch nested containers as any user, root
/// included, as in Mesos. With `false` (the default), a token launches only
/// as its executor's own user, or as a user that
/// `launch_nested_containers_as_user` allows the framework's principal. Safe
/// to call while other threads decide (it is one atomic flag).
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_set_executor_tokens_any_user(
    auth: *const nestguard_authorizer,
    any_user: bool,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(auth, "auth");
        let Some(auth) = handle_ref(auth) else { return nestguard_result::NullParameter };
        auth.inner.set_executor_tokens_any_user(any_user);
        nestguard_result::Ok
    }
}

/// Decodes a request into `request` (a default one) in place: a
/// `mesos.authorization.Request` holds every optional field of `Object`
/// inline, kilobytes that a decode returning the message by value would
/// copy on each move.
fn merge_request(bytes: &[u8], request: &mut Request) -> Result<(), nestguard_result> {
    prost::Message::merge(request, bytes).map_err(|e| {
        fail(
            nestguard_result::ProtobufDecode,
            format!("argument `request` does not decode as mesos.authorization.Request: {e}"),
        )
    })
}

/// Binds `$auth` to the authorizer of a call taking a serialized
/// `mesos.authorization.Request` and `$request` to the request, decoded in
/// place (see [`merge_request`]), or returns early with the failure's code.
/// Statements, not an expression: the request lives in the caller's scope.
macro_rules! try_request {
    ($auth:ident, $request:ident, $len:expr) => {
        let $auth = match handle_ref($auth) {
            Some(auth) => auth,
            None => {
                return fail(
                    nestguard_result::NullParameter,
                    "argument `auth` must not be NULL",
                );
            }
        };
        let bytes = try_slice!($request, $len, "request");
        let mut decoded = Request::default();
        if let Err(code) = merge_request(bytes, &mut decoded) {
            return code;
        }
        let $request = &decoded;
    };
}

/// Mesos' `authorized(request)`: decides a serialized
/// `mesos.authorization.Request` and writes the decision to `*out_allowed`.
/// The fields a decision reads are read in place, without decoding the
/// message; a request that reader does not serve (see `authz::wire`) is
/// decoded in full, with the same decision and the same errors.
///
/// Errors: `NESTGUARD_RESULT_PROTOBUF_DECODE`,
/// `NESTGUARD_RESULT_INVALID_AUTHORIZATION_REQUEST` (no action, a subject
/// with neither value nor claims, an empty object),
/// `NESTGUARD_RESULT_AUTHORIZATION_FAILED` (Mesos' `Error`: e.g. a required
/// object field is missing). On any error treat the request as denied.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_authorize(
    auth: *const nestguard_authorizer,
    request: *const u8,
    request_len: usize,
    out_allowed: *mut bool,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out_allowed, "out_allowed");
        if let Some(a) = handle_ref(auth)
            && let Some(bytes) = slice_from(request, request_len)
            && let Some(decided) = a.inner.authorized_wire(bytes)
        {
            let allowed = try_abi!(decided);
            write_out(out_allowed, allowed);
            return nestguard_result::Ok;
        }
        try_request!(auth, request, request_len);
        let allowed = try_abi!(auth.inner.authorized(request));
        write_out(out_allowed, allowed);
        nestguard_result::Ok
    }
}

/// Explains the decision for a serialized `mesos.authorization.Request` as
/// JSON, NUL-terminated, into `buf`: at least `{"allowed": bool, "list":
/// string|null, "index": number|null, "decided_by": ...}`, with `parent` and
/// `child` for launches (`index` null means no entry matched and
/// `permissive` decided). `*out_n` receives the size needed including the
/// NUL; when `buf_len` is smaller nothing is written and
/// `NESTGUARD_RESULT_BUFFER_TOO_SMALL` is returned. Errors as
/// `nestguard_authorizer_authorize`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_explain(
    auth: *const nestguard_authorizer,
    request: *const u8,
    request_len: usize,
    buf: *mut std::ffi::c_char,
    buf_len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out_n, "out_n");
        try_request!(auth, request, request_len);
        let json = try_abi!(auth.inner.explain_json(request)).to_string();
        text_out(&json, buf, buf_len, out_n, "the buffer is too small for the explanation")
    }
}

/// Mesos' `authorized(request)` decided once, with its explanation: writes
/// the decision to `*out_allowed` and, when `out_explanation` is not NULL,
/// the explanation JSON (as `nestguard_authorizer_explain` writes it) to a
/// new `nestguard_bytes` in `*out_explanation` (free it with
/// `nestguard_bytes_free`). The explanation is rendered from the same
/// decision against the same policy snapshot, so it always names what
/// decided (a reload in between cannot make them disagree), and the decision
/// is counted and audited once. Errors as `nestguard_authorizer_authorize`;
/// on an error nothing is written to `*out_explanation`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_decide(
    auth: *const nestguard_authorizer,
    request: *const u8,
    request_len: usize,
    out_allowed: *mut bool,
    out_explanation: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out_allowed, "out_allowed");
        try_request!(auth, request, request_len);
        let explained = try_abi!(auth.inner.decide(request));
        // Rendered before anything is written: outputs only on success.
        let json = (!out_explanation.is_null())
            .then(|| explained.to_json().to_string().into_bytes());
        write_out(out_allowed, explained.decision.allowed);
        if let Some(json) = json {
            write_out(out_explanation, nestguard_bytes::into_raw(json));
        }
        nestguard_result::Ok
    }
}

/// Releases an authorizer. NULL is a no-op; must not be called twice or
/// while another thread uses the handle. Approvers made from it stay valid.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_authorizer_free(auth: *mut nestguard_authorizer) {
    ffi_panic_boundary! { free_handle(auth) }
}

/// Mesos' `getApprover(subject, action)`. `subject` is a serialized
/// `mesos.authorization.Subject`, or NULL (with `subject_len == 0`) for an
/// unauthenticated request. `action` is the `mesos.authorization.Action`
/// number. Free `*out` with `nestguard_approver_free`.
///
/// Errors: `NESTGUARD_RESULT_PROTOBUF_DECODE`,
/// `NESTGUARD_RESULT_INVALID_ARGUMENT` for an unknown action number.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_approver_new(
    auth: *const nestguard_authorizer,
    subject: *const u8,
    subject_len: usize,
    action: u32,
    out: *mut *mut nestguard_approver,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let Some(auth) = handle_ref(auth) else {
            return fail(nestguard_result::NullParameter, "argument `auth` must not be NULL");
        };
        let subject = try_decode_opt!(Subject, subject, subject_len, "subject");
        let Some(action) = i32::try_from(action).ok().and_then(|a| Action::try_from(a).ok()) else {
            return fail(nestguard_result::InvalidArgument, format!("action {action} is not a mesos.authorization.Action number"));
        };
        let inner = auth.inner.approver(subject.as_ref(), action);
        write_out(out, into_handle(nestguard_approver { inner }));
        nestguard_result::Ok
    }
}

/// The fast path of Mesos' `approved(object)`: the object as borrowed string
/// views, NULL for no object (`Option<Object>` = None). Writes the decision
/// to `*out_allowed`. Never blocks, never allocates (except to record an
/// error message), decodes no protobuf.
///
/// Errors: `NESTGUARD_RESULT_AUTHORIZATION_FAILED` (Mesos' `Error`, or an
/// action this path cannot serve: see `nestguard_object_view`); treat as
/// denied.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_approver_approved(
    approver: *const nestguard_approver,
    object: *const nestguard_object_view,
    out_allowed: *mut bool,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out_allowed, "out_allowed");
        let Some(approver) = handle_ref(approver) else {
            return fail(nestguard_result::NullParameter, "argument `approver` must not be NULL");
        };
        let storage;
        let view = try_object_view!(object, storage);
        let allowed = try_abi!(approver.inner.approved(view));
        write_out(out_allowed, allowed);
        nestguard_result::Ok
    }
}

/// `approved(object)` for a serialized `mesos.authorization.Object`, or for
/// no object when `object` is NULL (with `object_len == 0`). Serves every
/// action. Errors as `nestguard_approver_approved` plus
/// `NESTGUARD_RESULT_PROTOBUF_DECODE`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_approver_approved_object(
    approver: *const nestguard_approver,
    object: *const u8,
    object_len: usize,
    out_allowed: *mut bool,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out_allowed, "out_allowed");
        let Some(approver) = handle_ref(approver) else {
            return fail(nestguard_result::NullParameter, "argument `approver` must not be NULL");
        };
        let object = try_decode_opt!(Object, object, object_len, "object");
        let decision = try_abi!(approver.inner.decide_proto(object.as_ref()));
        write_out(out_allowed, decision.allowed);
        nestguard_result::Ok
    }
}

/// Explains `approved(object)` for string views (NULL `object` = no object)
/// as JSON into `buf`, like `nestguard_authorizer_explain`: which list and
/// entry decided, or that `permissive` did, with both halves for launches.
/// Meant for logging denials; it allocates, unlike
/// `nestguard_approver_approved`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_approver_explain(
    approver: *const nestguard_approver,
    object: *const nestguard_object_view,
    buf: *mut std::ffi::c_char,
    buf_len: usize,
    out_n: *mut usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out_n, "out_n");
        let Some(approver) = handle_ref(approver) else {
            return fail(nestguard_result::NullParameter, "argument `approver` must not be NULL");
        };
        let storage;
        let view = try_object_view!(object, storage);
        let policy = approver.inner.policy();
        let decision = try_abi!(approver.inner.decide_in(&policy, view));
        let json = crate::authz::explain::to_json(&policy, &decision).to_string();
        text_out(&json, buf, buf_len, out_n, "the buffer is too small for the explanation")
    }
}

/// Releases an approver. NULL is a no-op; must not be called twice or while
/// another thread uses the handle.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_approver_free(approver: *mut nestguard_approver) {
    ffi_panic_boundary! { free_handle(approver) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sv(s: Option<&str>) -> nestguard_str_view {
        nestguard_str_view::of(s)
    }

    #[test]
    fn fast_path_launch_and_errors() {
        let json = r#"{"permissive": false,
          "launch_nested_containers_under_parent_with_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
          "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"values": ["bar"]}}]}"#;
        let mut auth = std::ptr::null_mut();
        assert_eq!(
            nestguard_authorizer_new(json.as_ptr().cast(), json.len(), true, &mut auth),
            nestguard_result::Ok
        );
        let subject = prost::Message::encode_to_vec(&Subject {
            value: Some("ops".into()),
            claims: None,
        });
        let mut approver = std::ptr::null_mut();
        assert_eq!(
            nestguard_approver_new(
                auth,
                subject.as_ptr().cast(),
                subject.len(),
                Action::LaunchNestedContainer as u32,
                &mut approver
            ),
            nestguard_result::Ok
        );
        nestguard_authorizer_free(auth);
        let mut object = nestguard_object_view {
            value: sv(None),
            executor_user: sv(Some("root")),
            framework_user: sv(None),
            framework_principal: sv(None),
            command_user: sv(Some("bar")),
            container_id: sv(Some("c2")),
            root_container_id: sv(Some("c1")),
            has_executor_info: true,
            has_framework_info: false,
            has_command: true,
        };
        let mut allowed = false;
        assert_eq!(
            nestguard_approver_approved(approver, &object, &mut allowed),
            nestguard_result::Ok
        );
        assert!(allowed);
        object.command_user = sv(Some("root"));
        assert_eq!(
            nestguard_approver_approved(approver, &object, &mut allowed),
            nestguard_result::Ok
        );
        assert!(!allowed);
        nestguard_approver_free(approver);

        let bad = r#"{"kill_nested_containers": [{"principals": {"type": "any"}, "users": {"type": "ANY"}}]}"#;
        let mut auth = std::ptr::null_mut();
        assert_eq!(
            nestguard_authorizer_new(bad.as_ptr().cast(), bad.len(), true, &mut auth),
            nestguard_result::AclsInvalid
        );
        assert!(auth.is_null());
    }

    #[test]
    fn explain_buffer_and_reload_from_file() {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-abi-authz")
            .tempdir()
            .unwrap();
        let path = dir.path().join("acls.json");
        std::fs::write(&path, r#"{"permissive": false, "wait_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]}"#).unwrap();
        let url = format!("file://{}", path.display());
        let mut auth = std::ptr::null_mut();
        assert_eq!(
            nestguard_authorizer_new_from_file(url.as_ptr().cast(), url.len(), true, &mut auth),
            nestguard_result::Ok
        );
        let request = prost::Message::encode_to_vec(&Request {
            subject: Some(Subject {
                value: Some("ops".into()),
                claims: None,
            }),
            action: Some(Action::WaitNestedContainer as i32),
            object: None,
        });
        let mut needed = 0usize;
        let mut small = [0u8; 4];
        assert_eq!(
            nestguard_authorizer_explain(
                auth,
                request.as_ptr().cast(),
                request.len(),
                small.as_mut_ptr().cast(),
                small.len(),
                &mut needed
            ),
            nestguard_result::BufferTooSmall
        );
        let mut buf = vec![0u8; needed];
        assert_eq!(
            nestguard_authorizer_explain(
                auth,
                request.as_ptr().cast(),
                request.len(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut needed
            ),
            nestguard_result::Ok
        );
        let v: serde_json::Value = serde_json::from_slice(&buf[..needed - 1]).unwrap();
        assert_eq!(v["list"], "wait_nested_containers");
        assert_eq!(v["index"], 0);

        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(
            nestguard_authorizer_reload(auth),
            nestguard_result::AclsInvalid
        );
        let mut allowed = false;
        assert_eq!(
            nestguard_authorizer_authorize(
                auth,
                request.as_ptr().cast(),
                request.len(),
                &mut allowed
            ),
            nestguard_result::Ok
        );
        assert!(allowed, "old policy kept");
        std::fs::write(&path, r#"{"permissive": false}"#).unwrap();
        assert_eq!(nestguard_authorizer_reload(auth), nestguard_result::Ok);
        assert_eq!(
            nestguard_authorizer_authorize(
                auth,
                request.as_ptr().cast(),
                request.len(),
                &mut allowed
            ),
            nestguard_result::Ok
        );
        assert!(!allowed, "new policy in force");
        assert_eq!(
            nestguard_authorizer_reload(std::ptr::null()),
            nestguard_result::NullParameter
        );
        assert_eq!(
            nestguard_authorizer_authorize(auth, [0xffu8].as_ptr().cast(), 1, &mut allowed),
            nestguard_result::ProtobufDecode
        );
        nestguard_authorizer_free(auth);
        nestguard_authorizer_free(std::ptr::null_mut());
    }
}
