//! Fuzz bodies for the library's inputs (`libnestguard`): one `pub fn
//! NAME(data: &[u8])` per target in `fuzz/fuzz_targets/NAME.rs`.
//!
//! Each body checks invariants, not only the absence of a panic: a failed
//! `assert!` is a finding, as a crash is. This file is also compiled into
//! the library's test suite (`tests/fuzz_seeds.rs`, by path), which runs
//! every body over its seeds in `fuzz/seeds/NAME/` so that the targets keep
//! compiling and passing without cargo-fuzz.

use std::collections::BTreeMap;
use std::path::Path;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;

use nestguard::abi::authorizer::{
    nestguard_approver, nestguard_approver_approved_object, nestguard_approver_free,
    nestguard_approver_new, nestguard_authorizer, nestguard_authorizer_authorize,
    nestguard_authorizer_explain, nestguard_authorizer_free, nestguard_authorizer_new,
};
use nestguard::abi::bytes::nestguard_bytes;
use nestguard::abi::container_id::{nestguard_container_id_parse, nestguard_container_id_render};
use nestguard::abi::cram_md5::{
    nestguard_auth_status, nestguard_cram_md5_client, nestguard_cram_md5_client_free,
    nestguard_cram_md5_client_new, nestguard_cram_md5_client_step, nestguard_cram_md5_message_kind,
    nestguard_cram_md5_server, nestguard_cram_md5_server_free, nestguard_cram_md5_server_new,
    nestguard_cram_md5_server_step,
};
use nestguard::abi::credentials::{
    nestguard_credentials, nestguard_credentials_free, nestguard_credentials_parse,
    nestguard_http_authenticator, nestguard_http_authenticator_authenticate,
    nestguard_http_authenticator_free, nestguard_http_authenticator_new,
};
use nestguard::abi::nestguard_result;
use nestguard::authz::Authorizer;
use nestguard::checkpoint;
use nestguard::container_id;
use nestguard::credentials::cram_md5::{
    Authenticatee, Authenticator, ClientConfig, ClientOutcome, Message, MessageKind, ServerConfig,
    ServerOutcome, response,
};
use nestguard::credentials::delegation::ExecutorPrincipals;
use nestguard::credentials::file::{Format, parse_credential, parse_credentials, parse_store};
use nestguard::credentials::http::{AuthOutcome, HttpAuthenticator};
use nestguard::credentials::{Credential, CredentialStore, Secret, jwt};
use nestguard::input::{self, FlagValue};
use nestguard::isolation::channel::{parse_pid_file, pid_file_text};
use nestguard::isolation::isolator::params::IsolatorParams;
use nestguard::isolation::paths;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerTermination};
use nestguard::proto::mesos::{ContainerId, Parameters};

/// A target's body.
pub type Body = fn(&[u8]);

/// Every target of this file, by name, for the seed test.
pub const TARGETS: &[(&str, Body)] = &[
    ("acl_json", acl_json),
    ("credentials_file", credentials_file),
    ("cram_md5_server", cram_md5_server),
    ("cram_md5_client", cram_md5_client),
    ("http_auth", http_auth),
    ("jwt", jwt_token),
    ("container_id", container_id_text),
    ("container_id_proto", container_id_proto),
    ("checkpoint", checkpoint_files),
    ("module_parameters", module_parameters),
    ("abi", abi),
];

const PRINCIPAL: &str = "fuzz-principal";
const SECRET: &[u8] = b"fuzz-secret";

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Splits `data` at the first NUL: the fuzzer learns the separator quickly,
/// and a seed is then two readable parts.
fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

fn store() -> CredentialStore {
    let credential = Credential::new(PRINCIPAL, Secret::new(SECRET.to_vec()));
    CredentialStore::from_credentials(vec![credential]).expect("one credential")
}

/// The strings of a JSON document (at most `max`), as request values: an
/// ACL's own principals and objects are what reach its interesting rules.
fn strings_of(value: &serde_json::Value, out: &mut Vec<String>, max: usize) {
    if out.len() >= max {
        return;
    }
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings_of(v, out, max)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings_of(v, out, max)),
        _ => {}
    }
}

/// Requests built from `values` over a few actions: with and without a
/// subject, with and without an object value.
fn requests(values: &[String], seed: &[u8]) -> Vec<Request> {
    let mut actions: Vec<i32> = vec![
        Action::LaunchNestedContainer as i32,
        Action::ViewContainer as i32,
        Action::RegisterFramework as i32,
    ];
    actions.extend(seed.iter().take(3).map(|b| i32::from(*b % 80)));
    let mut subjects: Vec<Option<String>> = vec![None];
    subjects.extend(values.iter().take(3).cloned().map(Some));
    let mut objects: Vec<Option<String>> = vec![None];
    objects.extend(values.iter().rev().take(3).cloned().map(Some));
    let mut out = Vec::new();
    for action in &actions {
        for subject in &subjects {
            for object in &objects {
                out.push(Request {
                    subject: subject.clone().map(|value| Subject {
                        value: Some(value),
                        claims: None,
                    }),
                    action: Some(*action),
                    object: object.clone().map(|value| Object {
                        value: Some(value),
                        ..Object::default()
                    }),
                });
            }
        }
    }
    out
}

/// ACL JSON. Invariant: what loads strictly loads leniently too (lenient
/// mode only accepts more) and decides every request the same.
pub fn acl_json(data: &[u8]) {
    let Some(json) = text(data) else { return };
    let strict = Authorizer::from_json(json, true);
    let lenient = Authorizer::from_json(json, false);
    let Ok(strict) = strict else { return };
    let lenient = match lenient {
        Ok(a) => a,
        Err(e) => panic!("loads strictly but not leniently: {e}"),
    };
    let mut values = Vec::new();
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(json) {
        strings_of(&value, &mut values, 6);
    }
    for request in requests(&values, data) {
        let a = strict.authorized(&request).map_err(|e| e.to_string());
        let b = lenient.authorized(&request).map_err(|e| e.to_string());
        assert_eq!(a, b, "strict and lenient decide differently: {request:?}");
    }
}

/// The JSON text of a credentials list, as Mesos writes it.
fn render_json(list: &[Credential]) -> Option<String> {
    let items: Option<Vec<serde_json::Value>> = list
        .iter()
        .map(|c| {
            Some(serde_json::json!({
                "principal": c.principal,
                "secret": c.secret.expose_str()?,
            }))
        })
        .collect();
    Some(serde_json::json!({ "credentials": items? }).to_string())
}

/// The legacy text of a credentials list (`principal secret` lines), when
/// every field is one non-blank word.
fn render_text(list: &[Credential]) -> Option<String> {
    let word = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace);
    let mut out = String::new();
    for c in list {
        let secret = c.secret.expose_str()?;
        if !word(&c.principal) || !word(secret) {
            return None;
        }
        out.push_str(&format!("{} {}\n", c.principal, secret));
    }
    Some(out)
}

/// Credential files (JSON and legacy text, list and single). Invariants: a
/// list that parses renders (as JSON, and as text when it can be) to text
/// that parses back to the same credentials; the store holds exactly the
/// listed principals; a single-credential file agrees with the list parser.
pub fn credentials_file(data: &[u8]) {
    let Some(file) = text(data) else { return };
    if let Ok((list, _format)) = parse_credentials(file, "fuzz") {
        let store = parse_store(file, "fuzz").expect("a list that parses makes a store");
        assert_eq!(store.len(), list.len());
        for c in &list {
            assert!(store.secret(&c.principal) == Some(&c.secret));
        }
        if let Some(json) = render_json(&list) {
            let (again, format) = parse_credentials(&json, "fuzz").expect("rendered JSON parses");
            assert_eq!(format, Format::Json);
            assert!(again == list, "JSON render/reparse changed the credentials");
        }
        if let Some(lines) = render_text(&list) {
            let (again, format) = parse_credentials(&lines, "fuzz").expect("rendered text parses");
            assert_eq!(format, Format::LegacyText);
            assert!(again == list, "text render/reparse changed the credentials");
        }
    } else {
        assert!(parse_store(file, "fuzz").is_err());
    }
    if let Ok((one, _)) = parse_credential(file, "fuzz") {
        assert!(!one.principal.is_empty());
    }
}

/// Reads `[kind byte][len byte][bytes]` frames as CRAM-MD5 messages.
fn frames(mut data: &[u8]) -> Vec<(u32, &[u8])> {
    let mut out = Vec::new();
    while data.len() >= 2 && out.len() < 8 {
        let kind = u32::from(data[0] % 9);
        let len = usize::from(data[1]).min(data.len() - 2);
        out.push((kind, &data[2..2 + len]));
        data = &data[2 + len..];
    }
    out
}

/// The server side of CRAM-MD5 fed arbitrary messages. Invariants: a
/// message that decodes re-encodes to a message that decodes the same; the
/// server authenticates only a response equal to the digest of its own
/// challenge with the principal's secret.
pub fn cram_md5_server(data: &[u8]) {
    let now = Instant::now();
    let config = ServerConfig {
        timeout: Duration::from_secs(60),
        hostname: Some("fuzz.example".into()),
    };
    let (mut server, _mechanisms) = Authenticator::new(Arc::new(store()), config, now);
    let mut challenge: Option<Vec<u8>> = None;
    for (kind, bytes) in frames(data) {
        let Ok(kind) = MessageKind::from_u32(kind) else {
            continue;
        };
        let Ok(message) = Message::decode(kind, bytes) else {
            continue;
        };
        let again = Message::decode(kind, &message.encode()).expect("re-encoded message decodes");
        assert!(again == message, "CRAM-MD5 message changed on re-encoding");
        let sent = match &message {
            Message::Step(step) => Some(step.data.clone()),
            _ => None,
        };
        let step = server.receive(message, now);
        if let Some(Message::Step(s)) = &step.reply {
            challenge = Some(s.data.clone());
        }
        if let Some(ServerOutcome::Authenticated(principal)) = &step.outcome {
            let challenge = challenge
                .as_deref()
                .expect("authenticated without a challenge");
            let expected = response(principal, &Secret::new(SECRET.to_vec()), challenge);
            assert_eq!(principal, PRINCIPAL);
            assert_eq!(
                sent.as_deref(),
                Some(&expected[..]),
                "authenticated a wrong response"
            );
        }
    }
}

/// The client side of CRAM-MD5 fed arbitrary server messages. Invariants:
/// the client sends the digest only after a challenge, and only in answer
/// to it; it reports success only when the server said COMPLETED.
pub fn cram_md5_client(data: &[u8]) {
    let now = Instant::now();
    let credential = Credential::new(PRINCIPAL, Secret::new(SECRET.to_vec()));
    let config = ClientConfig {
        timeout: Duration::from_secs(60),
    };
    let (mut client, _) = Authenticatee::new(credential, "scheduler@127.0.0.1:1", config, now);
    for (kind, bytes) in frames(data) {
        let Ok(kind) = MessageKind::from_u32(kind) else {
            continue;
        };
        let Ok(message) = Message::decode(kind, bytes) else {
            continue;
        };
        let challenge = match &message {
            Message::Step(step) => Some(step.data.clone()),
            _ => None,
        };
        let completed = matches!(message, Message::Completed);
        let step = client.receive(message, now);
        if let Some(Message::Step(reply)) = &step.reply {
            let challenge = challenge.as_deref().expect("a response to no challenge");
            let expected = response(PRINCIPAL, &Secret::new(SECRET.to_vec()), challenge);
            assert_eq!(&reply.data[..], &expected[..]);
        }
        if step.outcome == Some(ClientOutcome::Authenticated) {
            assert!(completed, "authenticated without COMPLETED");
        }
    }
}

fn jwt_key() -> Secret {
    Secret::new(b"fuzz-jwt-signing-key-of-32-bytes".to_vec())
}

/// HTTP `Authorization` headers (Basic and Bearer) against an authenticator
/// with one credential and a JWT key. Invariant: a Basic header
/// authenticates only as the known principal, a Bearer one only with
/// claims of a token that verifies.
pub fn http_auth(data: &[u8]) {
    let Some(header) = text(data) else { return };
    let auth = HttpAuthenticator::new("fuzz-realm", Some(Arc::new(store())), Some(jwt_key()))
        .expect("authenticator");
    let now = 1_700_000_000;
    match auth.authenticate(Some(header), now) {
        AuthOutcome::Principal(p) => match &p.value {
            Some(principal) => assert_eq!(principal, PRINCIPAL),
            None => {
                let token = header.trim_start().get(7..).unwrap_or("").trim();
                let claims = jwt::verify(token, &jwt_key(), now)
                    .expect("authenticated a Bearer token that does not verify");
                assert_eq!(claims, p.claims);
            }
        },
        AuthOutcome::Unauthorized { www_authenticate } => {
            assert!(www_authenticate.contains("fuzz-realm"));
        }
    }
    let _ = auth.authenticate(None, now);
}

/// JWTs. The input is tried as a token; it also gives claims for a token
/// that is issued, must verify to the same claims, and must fail to verify
/// after any one-bit change of its signature or payload.
pub fn jwt_token(data: &[u8]) {
    let key = jwt_key();
    let now = 1_700_000_000;
    if let Some(token) = text(data) {
        let _ = jwt::verify(token, &key, now);
    }
    let (keys, values) = split(data);
    let mut claims = BTreeMap::new();
    let keys = String::from_utf8_lossy(keys);
    let values = String::from_utf8_lossy(values);
    for (k, v) in keys.split(',').zip(values.split(',')).take(4) {
        // `exp` is a number claim: a string one would refuse the token.
        if k != "exp" {
            claims.insert(k.to_owned(), v.to_owned());
        }
    }
    let token = jwt::issue(&claims, &key);
    let verified = jwt::verify(&token, &key, now).expect("an issued token verifies");
    assert_eq!(verified, claims);
    let bytes = token.as_bytes();
    let position = data.iter().map(|b| usize::from(*b)).sum::<usize>() % bytes.len();
    for bit in 0..8 {
        let mut changed = bytes.to_vec();
        changed[position] ^= 1 << bit;
        let Ok(changed) = String::from_utf8(changed) else {
            continue;
        };
        if let Ok(got) = jwt::verify(&changed, &key, now) {
            // Base64 without padding has spare low bits in its last
            // character: a change there may decode to the same bytes.
            let same = |a: &str, b: &str| {
                a.split('.')
                    .zip(b.split('.'))
                    .all(|(x, y)| jwt_segment(x).is_some() && jwt_segment(x) == jwt_segment(y))
            };
            assert!(
                same(&changed, &token) && got == claims,
                "a changed token verified: bit {bit} of byte {position}"
            );
        }
    }
}

fn jwt_segment(segment: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
    .decode(segment)
    .ok()
}

/// Checks the paths derived from a valid ID: under the base, one
/// `containers/<value>` pair per level, no `..` anywhere.
fn check_paths(id: &ContainerId) {
    let base = Path::new("/fuzz/runtime");
    let path = paths::runtime_path(base, id);
    assert!(path.starts_with(base));
    let below = path.strip_prefix(base).expect("below the base");
    assert_eq!(
        below.components().count(),
        2 * (container_id::depth(id) + 1)
    );
    assert!(
        below
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_))),
        "{path:?} leaves its base"
    );
    let sandbox = paths::nested_sandbox(base, id);
    assert_eq!(sandbox.parent().and_then(Path::parent), Some(base));
}

/// Dotted container IDs. Invariant: a parsed ID renders back to the same
/// text, validates, and its protobuf decodes to the same ID.
pub fn container_id_text(data: &[u8]) {
    let Some(dotted) = text(data) else { return };
    let Ok(id) = container_id::parse_dotted(dotted) else {
        return;
    };
    assert_eq!(container_id::to_dotted(&id), dotted);
    container_id::validate(&id).expect("a parsed ID validates");
    let decoded = ContainerId::decode(&id.encode_to_vec()[..]).expect("own encoding decodes");
    assert_eq!(decoded, id);
    check_paths(&id);
}

/// Protobuf container IDs. Invariant: a valid one renders to dotted text
/// that parses back to it (no value holds a dot).
pub fn container_id_proto(data: &[u8]) {
    let Ok(id) = ContainerId::decode(data) else {
        return;
    };
    if container_id::validate(&id).is_err() {
        return;
    }
    let dotted = container_id::to_dotted(&id);
    let parsed = container_id::parse_dotted(&dotted).expect("a valid ID's dotted form parses");
    assert_eq!(parsed, id);
    check_paths(&id);
}

/// Checkpoint files: framed `ContainerConfig`, `ContainerLaunchInfo` and
/// `ContainerTermination` records and the `pid` text. Invariants: a record
/// that decodes re-frames to bytes that decode the same; a pid file that
/// parses renders to text that parses the same.
pub fn checkpoint_files(data: &[u8]) {
    let path = Path::new("fuzz/checkpoint");
    fn again<M: prost::Message + Default + PartialEq + std::fmt::Debug>(m: &M, path: &Path) {
        let framed = checkpoint::frame(m, path).expect("frames");
        let decoded: M = checkpoint::decode_record(&framed, path).expect("own frame decodes");
        assert_eq!(&decoded, m);
    }
    if let Ok(m) = checkpoint::decode_record::<ContainerConfig>(data, path) {
        again(&m, path);
    }
    if let Ok(m) = checkpoint::decode_record::<ContainerLaunchInfo>(data, path) {
        again(&m, path);
    }
    if let Ok(m) = checkpoint::decode_record::<ContainerTermination>(data, path) {
        again(&m, path);
    }
    if let Some(pid_text) = text(data)
        && let Ok(record) = parse_pid_file(pid_text, path.to_path_buf())
    {
        let rendered = pid_file_text(&record);
        let back = parse_pid_file(&rendered, path.to_path_buf()).expect("rendered pid parses");
        assert_eq!(back, record);
    }
}

/// Module parameters: the isolator's (a `mesos.Parameters` message, or
/// `key=value` lines), the authorizer's (inline ACLs only: a path would
/// read files), the executor-principal delegation and size limits.
/// Invariant: the protobuf and the key/value forms agree.
pub fn module_parameters(data: &[u8]) {
    if let Ok(parameters) = Parameters::decode(data) {
        let from_proto = IsolatorParams::from_proto(&parameters).map(|_| ());
        let pairs = parameters
            .parameter
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str()));
        let from_pairs = IsolatorParams::parse(pairs).map(|_| ());
        assert_eq!(from_proto.is_ok(), from_pairs.is_ok());
    }
    let Some(lines) = text(data) else { return };
    let pairs: Vec<(&str, &str)> = lines.lines().filter_map(|l| l.split_once('=')).collect();
    let _ = IsolatorParams::parse(pairs.iter().copied());
    let inline = pairs
        .iter()
        .rfind(|(k, _)| *k == "acls")
        .is_none_or(|(_, v)| matches!(FlagValue::parse(v), FlagValue::Inline(_)));
    if inline {
        let _ = Authorizer::from_parameters(pairs.iter().copied(), true);
    }
    if let Ok(delegation) = ExecutorPrincipals::parse(lines, "fuzz") {
        let _ = delegation.allows(PRINCIPAL, PRINCIPAL);
    }
    if let Ok(limit) = input::parse_limit(lines) {
        assert!(limit > 0 || lines.trim().starts_with('0'));
    }
}

fn result_ok(result: nestguard_result) -> bool {
    assert_ne!(
        result,
        nestguard_result::Panic,
        "a panic reached the ABI boundary"
    );
    result == nestguard_result::Ok
}

/// Copies and frees a `nestguard_bytes`.
fn take_bytes(bytes: *mut nestguard_bytes) -> Vec<u8> {
    if bytes.is_null() {
        return Vec::new();
    }
    let len = nestguard_bytes::nestguard_bytes_len(bytes);
    let mut buf = vec![0u8; len + 1];
    let mut n = 0usize;
    let data = nestguard_bytes::nestguard_bytes_data(bytes);
    copy_out(data, len, &mut buf, &mut n);
    nestguard_bytes::nestguard_bytes_free(bytes);
    buf.truncate(n);
    buf
}

/// `data` is valid for `len` bytes (the library's own buffer, alive until
/// freed); reading it is the one unsafe step of this file.
#[allow(unsafe_code)]
fn copy_out(data: *const u8, len: usize, buf: &mut [u8], n: &mut usize) {
    // SAFETY: `nestguard_bytes_data` returns a pointer valid for
    // `nestguard_bytes_len` bytes until `nestguard_bytes_free`.
    let slice = unsafe { std::slice::from_raw_parts(data, len) };
    buf[..len].copy_from_slice(slice);
    *n = len;
}

fn c(text: &[u8]) -> *const std::ffi::c_char {
    text.as_ptr().cast()
}

/// The C ABI's byte-taking entry points, called as a host calls them. The
/// first byte picks the entry point; the rest is its input. Invariants: no
/// call reports a caught panic; a container ID the ABI parses renders back
/// to the same text.
pub fn abi(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 8 {
        0 => abi_authorizer_new(rest),
        1 => abi_authorize(rest),
        2 => abi_approver(rest),
        3 => abi_container_id(rest),
        4 => abi_credentials(rest),
        5 => abi_http(rest),
        6 => abi_cram_server(rest),
        _ => abi_cram_client(rest),
    }
}

const ABI_ACLS: &str = r#"{"launch_nested_containers_as_user":[{"principals":{"values":["ops"]},"users":{"type":"ANY"}}],"view_containers":[{"principals":{"type":"ANY"},"users":{"values":["alice"]}}]}"#;

fn abi_authorizer(json: &[u8], strict: bool) -> Option<*mut nestguard_authorizer> {
    let mut out: *mut nestguard_authorizer = ptr::null_mut();
    result_ok(nestguard_authorizer_new(
        c(json),
        json.len(),
        strict,
        &mut out,
    ))
    .then_some(out)
}

fn abi_authorizer_new(json: &[u8]) {
    let strict = abi_authorizer(json, true);
    let lenient = abi_authorizer(json, false);
    if strict.is_some() {
        assert!(lenient.is_some(), "loads strictly but not leniently");
    }
    let request = Request {
        subject: Some(Subject {
            value: Some("ops".into()),
            claims: None,
        }),
        action: Some(Action::LaunchNestedContainer as i32),
        object: None,
    }
    .encode_to_vec();
    let mut decisions = Vec::new();
    for auth in [strict, lenient].into_iter().flatten() {
        let mut allowed = false;
        let r = nestguard_authorizer_authorize(auth, request.as_ptr(), request.len(), &mut allowed);
        decisions.push((result_ok(r), allowed));
        nestguard_authorizer_free(auth);
    }
    if let [a, b] = decisions[..] {
        assert_eq!(a, b, "strict and lenient decide differently");
    }
}

fn abi_authorize(request: &[u8]) {
    let auth = abi_authorizer(ABI_ACLS.as_bytes(), true).expect("fixed ACLs load");
    let mut allowed = false;
    result_ok(nestguard_authorizer_authorize(
        auth,
        request.as_ptr(),
        request.len(),
        &mut allowed,
    ));
    let mut buf = vec![0 as std::ffi::c_char; 256];
    let mut n = 0usize;
    result_ok(nestguard_authorizer_explain(
        auth,
        request.as_ptr(),
        request.len(),
        buf.as_mut_ptr(),
        buf.len(),
        &mut n,
    ));
    nestguard_authorizer_free(auth);
}

fn abi_approver(data: &[u8]) {
    let (subject, object) = split(data);
    let auth = abi_authorizer(ABI_ACLS.as_bytes(), true).expect("fixed ACLs load");
    let action = subject.first().map_or(0, |b| u32::from(*b % 80));
    let mut approver: *mut nestguard_approver = ptr::null_mut();
    if result_ok(nestguard_approver_new(
        auth,
        subject.as_ptr(),
        subject.len(),
        action,
        &mut approver,
    )) {
        let mut allowed = false;
        result_ok(nestguard_approver_approved_object(
            approver,
            object.as_ptr(),
            object.len(),
            &mut allowed,
        ));
        nestguard_approver_free(approver);
    }
    nestguard_authorizer_free(auth);
}

fn abi_container_id(text: &[u8]) {
    let mut bytes: *mut nestguard_bytes = ptr::null_mut();
    if result_ok(nestguard_container_id_parse(
        c(text),
        text.len(),
        &mut bytes,
    )) {
        let encoded = take_bytes(bytes);
        let mut buf = vec![0 as std::ffi::c_char; text.len() + 1];
        let mut n = 0usize;
        let r = nestguard_container_id_render(
            encoded.as_ptr(),
            encoded.len(),
            buf.as_mut_ptr(),
            buf.len(),
            &mut n,
        );
        assert!(result_ok(r), "a parsed ID does not render");
        let rendered: Vec<u8> = buf[..n - 1].iter().map(|b| *b as u8).collect();
        assert_eq!(rendered, text, "render(parse(text)) != text");
    }
    // The same bytes as a serialized ContainerID.
    let mut buf = vec![0 as std::ffi::c_char; 64];
    let mut n = 0usize;
    result_ok(nestguard_container_id_render(
        text.as_ptr(),
        text.len(),
        buf.as_mut_ptr(),
        buf.len(),
        &mut n,
    ));
}

fn abi_credentials_of(text: &[u8]) -> Option<*mut nestguard_credentials> {
    let mut out: *mut nestguard_credentials = ptr::null_mut();
    let origin = b"fuzz";
    result_ok(nestguard_credentials_parse(
        c(text),
        text.len(),
        c(origin),
        origin.len(),
        &mut out,
    ))
    .then_some(out)
}

fn abi_fixed_credentials() -> *mut nestguard_credentials {
    let text = format!(
        "{PRINCIPAL} {}\n",
        std::str::from_utf8(SECRET).unwrap_or("")
    );
    abi_credentials_of(text.as_bytes()).expect("fixed credentials parse")
}

fn abi_credentials(text: &[u8]) {
    if let Some(credentials) = abi_credentials_of(text) {
        nestguard_credentials_free(credentials);
    }
}

fn abi_http(header: &[u8]) {
    let credentials = abi_fixed_credentials();
    let realm = b"fuzz-realm";
    let mut auth: *mut nestguard_http_authenticator = ptr::null_mut();
    let r = nestguard_http_authenticator_new(
        c(realm),
        realm.len(),
        credentials,
        c(b""),
        0,
        false,
        &mut auth,
    );
    assert!(result_ok(r), "fixed authenticator");
    let mut authenticated = false;
    let mut out: *mut nestguard_bytes = ptr::null_mut();
    if result_ok(nestguard_http_authenticator_authenticate(
        auth,
        c(header),
        header.len(),
        true,
        &mut authenticated,
        &mut out,
    )) {
        let bytes = take_bytes(out);
        if authenticated {
            let subject = Subject::decode(&bytes[..]).expect("a subject");
            assert_eq!(subject.value.as_deref(), Some(PRINCIPAL));
        }
    }
    nestguard_http_authenticator_free(auth);
    nestguard_credentials_free(credentials);
}

/// The signature of `nestguard_cram_md5_{server,client}_step`.
type StepFn<H> = extern "C" fn(
    *const H,
    u32,
    *const u8,
    usize,
    *mut nestguard_cram_md5_message_kind,
    *mut *mut nestguard_bytes,
    *mut nestguard_auth_status,
) -> nestguard_result;

/// Feeds the framed messages of `data` to a CRAM-MD5 session through `step`.
fn feed_steps<H>(session: *mut H, data: &[u8], step: StepFn<H>) {
    for (message_kind, bytes) in frames(data) {
        let mut kind = nestguard_cram_md5_message_kind::None;
        let mut reply: *mut nestguard_bytes = ptr::null_mut();
        let mut status = nestguard_auth_status::Continue;
        result_ok(step(
            session,
            message_kind,
            bytes.as_ptr(),
            bytes.len(),
            &mut kind,
            &mut reply,
            &mut status,
        ));
        take_bytes(reply);
    }
}

fn abi_cram_server(data: &[u8]) {
    let credentials = abi_fixed_credentials();
    let mut server: *mut nestguard_cram_md5_server = ptr::null_mut();
    let mut kind = nestguard_cram_md5_message_kind::None;
    let mut reply: *mut nestguard_bytes = ptr::null_mut();
    let r = nestguard_cram_md5_server_new(credentials, 60_000, &mut server, &mut kind, &mut reply);
    assert!(result_ok(r), "server session");
    take_bytes(reply);
    feed_steps(server, data, nestguard_cram_md5_server_step);
    nestguard_cram_md5_server_free(server);
    nestguard_credentials_free(credentials);
}

fn abi_cram_client(data: &[u8]) {
    let (pid, messages) = split(data);
    let mut client: *mut nestguard_cram_md5_client = ptr::null_mut();
    let mut kind = nestguard_cram_md5_message_kind::None;
    let mut reply: *mut nestguard_bytes = ptr::null_mut();
    let mut status = nestguard_auth_status::Continue;
    if !result_ok(nestguard_cram_md5_client_new(
        c(PRINCIPAL.as_bytes()),
        PRINCIPAL.len(),
        SECRET.as_ptr(),
        SECRET.len(),
        c(pid),
        pid.len(),
        60_000,
        &mut client,
        &mut kind,
        &mut reply,
        &mut status,
    )) {
        return;
    }
    take_bytes(reply);
    feed_steps(client, messages, nestguard_cram_md5_client_step);
    nestguard_cram_md5_client_free(client);
}
