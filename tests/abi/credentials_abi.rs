//! The credentials C ABI, called as C would call it.

use std::os::unix::fs::PermissionsExt;
use std::ptr::{null, null_mut};

use prost::Message as _;

use crate::abi_support::{last_error, take};

use nestguard::abi::bytes::nestguard_bytes;
use nestguard::abi::cram_md5::*;
use nestguard::abi::credentials::*;
use nestguard::abi::result::nestguard_result;
use nestguard::proto::mesos::authorization::Subject;
use nestguard::proto::mesos::{
    ContainerId, Environment, ExecutorId, ExecutorInfo, FrameworkId, FrameworkInfo,
};

const CREDS: &str = r#"{"credentials":[{"principal":"agent","secret":"abi-secret-agent"},{"principal":"op","secret":"abi-secret-op"}]}"#;

fn parse(text: &str) -> Result<*mut nestguard_credentials, nestguard_result> {
    let mut out = null_mut();
    let origin = "inline-test";
    match nestguard_credentials_parse(
        text.as_ptr().cast(),
        text.len(),
        origin.as_ptr().cast(),
        origin.len(),
        &mut out,
    ) {
        nestguard_result::Ok => Ok(out),
        e => Err(e),
    }
}

#[test]
fn credentials_parse_load_and_errors() {
    let creds = parse(CREDS).unwrap();
    assert_eq!(nestguard_credentials_count(creds), 2);
    nestguard_credentials_free(creds);
    nestguard_credentials_free(null_mut());

    let dup = r#"{"credentials":[{"principal":"a","secret":"abi-dup-1"},{"principal":"a","secret":"abi-dup-2"}]}"#;
    assert_eq!(parse(dup).unwrap_err(), nestguard_result::CredentialsFile);
    let msg = last_error();
    assert!(
        msg.contains("duplicate principal 'a'") && msg.contains("inline-test"),
        "{msg}"
    );
    assert!(!msg.contains("abi-dup"));

    let dir = tempfile::Builder::new()
        .prefix("nestguard-abi-")
        .tempdir()
        .unwrap();
    let path = dir.path().join("creds.json");
    std::fs::write(&path, CREDS).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let p = path.to_str().unwrap();
    let mut out = null_mut();
    assert_eq!(
        nestguard_credentials_load(p.as_ptr().cast(), p.len(), false, &mut out),
        nestguard_result::CredentialsFile
    );
    assert!(out.is_null(), "out-parameters are written only on success");
    assert!(last_error().contains("too open"));
    assert_eq!(
        nestguard_credentials_load(p.as_ptr().cast(), p.len(), true, &mut out),
        nestguard_result::Ok
    );
    nestguard_credentials_free(out);

    assert_eq!(
        nestguard_credentials_load(null(), 3, false, &mut out),
        nestguard_result::NullParameter
    );
    assert_eq!(
        nestguard_credentials_load(p.as_ptr().cast(), p.len(), false, null_mut()),
        nestguard_result::NullParameter
    );
}

struct Msg {
    kind: u32,
    bytes: Vec<u8>,
}

fn reply(kind: nestguard_cram_md5_message_kind, bytes: *mut nestguard_bytes) -> Option<Msg> {
    if kind == nestguard_cram_md5_message_kind::None {
        assert!(bytes.is_null());
        None
    } else {
        Some(Msg {
            kind: kind as u32,
            bytes: take(bytes),
        })
    }
}

/// A full exchange through the ABI; returns (server status, client status, server text).
fn cram_exchange(secret: &str) -> (nestguard_auth_status, nestguard_auth_status, String) {
    let creds = parse(CREDS).unwrap();
    let principal = "agent";
    let pid = "slave(1)@127.0.0.1:5051";
    let (mut client, mut kind, mut bytes, mut cstatus) = (
        null_mut(),
        nestguard_cram_md5_message_kind::None,
        null_mut(),
        nestguard_auth_status::Continue,
    );
    assert_eq!(
        nestguard_cram_md5_client_new(
            principal.as_ptr().cast(),
            principal.len(),
            secret.as_ptr().cast(),
            secret.len(),
            pid.as_ptr().cast(),
            pid.len(),
            0,
            &mut client,
            &mut kind,
            &mut bytes,
            &mut cstatus,
        ),
        nestguard_result::Ok
    );
    let first = reply(kind, bytes).unwrap();
    assert_eq!(first.kind, 1, "AuthenticateMessage");

    let mut server = null_mut();
    assert_eq!(
        nestguard_cram_md5_server_new(creds, 2000, &mut server, &mut kind, &mut bytes),
        nestguard_result::Ok
    );
    nestguard_credentials_free(creds); // the session keeps its own reference
    let mut to_client = reply(kind, bytes);
    let mut sstatus = nestguard_auth_status::Continue;
    while let Some(m) = to_client.take() {
        assert_eq!(
            nestguard_cram_md5_client_step(
                client,
                m.kind,
                m.bytes.as_ptr().cast(),
                m.bytes.len(),
                &mut kind,
                &mut bytes,
                &mut cstatus
            ),
            nestguard_result::Ok
        );
        if let Some(r) = reply(kind, bytes) {
            assert_eq!(
                nestguard_cram_md5_server_step(
                    server,
                    r.kind,
                    r.bytes.as_ptr().cast(),
                    r.bytes.len(),
                    &mut kind,
                    &mut bytes,
                    &mut sstatus
                ),
                nestguard_result::Ok
            );
            to_client = reply(kind, bytes);
        }
    }
    let mut buf = [0u8; 256];
    let mut n = 0;
    assert_eq!(
        nestguard_cram_md5_server_outcome_text(server, buf.as_mut_ptr().cast(), buf.len(), &mut n),
        nestguard_result::Ok
    );
    let text = String::from_utf8_lossy(&buf[..n - 1]).into_owned();
    nestguard_cram_md5_server_free(server);
    nestguard_cram_md5_client_free(client);
    (sstatus, cstatus, text)
}

#[test]
fn cram_md5_through_the_abi() {
    let ok = nestguard_auth_status::Authenticated;
    let refused = nestguard_auth_status::Refused;
    assert_eq!(
        cram_exchange("abi-secret-agent"),
        (ok, ok, "agent".to_owned())
    );
    assert_eq!(
        cram_exchange("abi-wrong"),
        (refused, refused, String::new())
    );
}

#[test]
fn cram_md5_bad_input() {
    let creds = parse(CREDS).unwrap();
    let (mut server, mut kind, mut bytes, mut status) = (
        null_mut(),
        nestguard_cram_md5_message_kind::None,
        null_mut(),
        nestguard_auth_status::Continue,
    );
    assert_eq!(
        nestguard_cram_md5_server_new(creds, 0, &mut server, &mut kind, &mut bytes),
        nestguard_result::Ok
    );
    let _ = take(bytes);
    assert_eq!(
        nestguard_cram_md5_server_step(server, 99, null(), 0, &mut kind, &mut bytes, &mut status),
        nestguard_result::CramMd5
    );
    assert!(last_error().contains("unknown CRAM-MD5 message kind 99"));
    let junk = [0xffu8, 0xff, 0xff];
    assert_eq!(
        nestguard_cram_md5_server_step(
            server,
            4,
            junk.as_ptr().cast(),
            junk.len(),
            &mut kind,
            &mut bytes,
            &mut status
        ),
        nestguard_result::CramMd5
    );
    // Out of order: a step before start is answered with Mesos' error message.
    let step = nestguard::proto::mesos::internal::AuthenticationStepMessage {
        data: b"x".to_vec(),
    }
    .encode_to_vec();
    assert_eq!(
        nestguard_cram_md5_server_step(
            server,
            4,
            step.as_ptr().cast(),
            step.len(),
            &mut kind,
            &mut bytes,
            &mut status
        ),
        nestguard_result::Ok
    );
    assert_eq!(
        (kind, status),
        (
            nestguard_cram_md5_message_kind::Error,
            nestguard_auth_status::Error
        )
    );
    let err = nestguard::proto::mesos::internal::AuthenticationErrorMessage::decode(
        take(bytes).as_slice(),
    )
    .unwrap();
    assert_eq!(
        err.error.as_deref(),
        Some("Unexpected authentication 'step' received")
    );
    assert_eq!(
        nestguard_cram_md5_server_poll_timeout(server, &mut kind, &mut bytes, &mut status),
        nestguard_result::Ok
    );
    assert_eq!(kind, nestguard_cram_md5_message_kind::None);
    assert_eq!(
        nestguard_cram_md5_server_step(null(), 4, null(), 0, &mut kind, &mut bytes, &mut status),
        nestguard_result::NullParameter
    );
    nestguard_cram_md5_server_free(server);
    nestguard_credentials_free(creds);
}

fn key_file(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("jwt.key");
    std::fs::write(&path, "abi-jwt-signing-key").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Authenticates a present `header` through the ABI, asserts it succeeded and
/// returns the subject; `ok` and `out` are the caller's out-parameters, left
/// as the call set them.
fn authenticate(
    auth: *const nestguard_http_authenticator,
    header: &str,
    ok: &mut bool,
    out: &mut *mut nestguard_bytes,
) -> Subject {
    assert_eq!(
        nestguard_http_authenticator_authenticate(
            auth,
            header.as_ptr().cast(),
            header.len(),
            true,
            ok,
            out
        ),
        nestguard_result::Ok
    );
    assert!(*ok);
    Subject::decode(take(*out).as_slice()).unwrap()
}

#[test]
fn http_authenticate_through_the_abi() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-abi-")
        .tempdir()
        .unwrap();
    let key = key_file(&dir);
    let creds = parse(CREDS).unwrap();
    let realm = "mesos-agent-readwrite";
    let mut auth = null_mut();
    assert_eq!(
        nestguard_http_authenticator_new(
            realm.as_ptr().cast(),
            realm.len(),
            creds,
            key.as_ptr().cast(),
            key.len(),
            false,
            &mut auth
        ),
        nestguard_result::Ok
    );
    nestguard_credentials_free(creds);
    let (mut ok, mut out) = (false, null_mut());

    use base64::Engine as _;
    let header = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("op:abi-secret-op")
    );
    let subject = authenticate(auth, &header, &mut ok, &mut out);
    assert_eq!(subject.value.as_deref(), Some("op"));

    let claims = std::collections::BTreeMap::from([
        ("cid".to_owned(), "c".to_owned()),
        ("eid".to_owned(), "e".to_owned()),
        ("fid".to_owned(), "f".to_owned()),
    ]);
    let token = nestguard::credentials::jwt::issue(
        &claims,
        &nestguard::credentials::Secret::from("abi-jwt-signing-key"),
    );
    let header = format!("Bearer {token}");
    let subject = authenticate(auth, &header, &mut ok, &mut out);
    assert_eq!(subject.value, None);
    assert_eq!(subject.claims.unwrap().labels.len(), 3);

    assert_eq!(
        nestguard_http_authenticator_authenticate(auth, null(), 0, false, &mut ok, &mut out),
        nestguard_result::Ok
    );
    assert!(!ok);
    assert_eq!(
        String::from_utf8(take(out)).unwrap(),
        "Basic realm=\"mesos-agent-readwrite\",Bearer realm=\"mesos-agent-readwrite\""
    );
    nestguard_http_authenticator_free(auth);

    let mut none = null_mut();
    assert_eq!(
        nestguard_http_authenticator_new(
            realm.as_ptr().cast(),
            realm.len(),
            null(),
            null(),
            0,
            false,
            &mut none
        ),
        nestguard_result::HttpAuthenticator
    );
}

/// The signature of the injector's two environment entry points.
type EnvironmentFn = extern "C" fn(
    *const nestguard_credential_injector,
    *const u8,
    usize,
    *const u8,
    usize,
    *const u8,
    usize,
    *mut *mut nestguard_bytes,
) -> nestguard_result;

/// Calls `f` with encoded executor, framework and container ID, as C does.
fn environment(
    f: EnvironmentFn,
    inj: *const nestguard_credential_injector,
    executor: &[u8],
    framework: &[u8],
    container: &[u8],
    out: &mut *mut nestguard_bytes,
) -> nestguard_result {
    f(
        inj,
        executor.as_ptr(),
        executor.len(),
        framework.as_ptr(),
        framework.len(),
        container.as_ptr(),
        container.len(),
        out,
    )
}

#[test]
fn injection_through_the_abi() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-abi-")
        .tempdir()
        .unwrap();
    let key = key_file(&dir);
    let executor = ExecutorInfo {
        executor_id: ExecutorId { value: "e1".into() },
        ..Default::default()
    }
    .encode_to_vec();
    let framework = FrameworkInfo {
        user: "u".into(),
        name: "n".into(),
        id: Some(FrameworkId { value: "f1".into() }),
        ..Default::default()
    }
    .encode_to_vec();
    let nested = nestguard::container_id::parse_dotted("root.child")
        .unwrap()
        .encode_to_vec();

    let mut inj = null_mut();
    let mut mode = nestguard_injection_mode::Auto;
    assert_eq!(
        nestguard_credential_injector_new(
            nestguard_injection_mode::Auto as u32,
            key.as_ptr().cast(),
            key.len(),
            false,
            null(),
            &mut inj,
            &mut mode
        ),
        nestguard_result::Ok
    );
    assert_eq!(mode, nestguard_injection_mode::Token);
    let mut out = null_mut();
    assert_eq!(
        environment(
            nestguard_credential_injector_nested_environment,
            inj,
            &executor,
            &framework,
            &nested,
            &mut out
        ),
        nestguard_result::Ok
    );
    let env = Environment::decode(take(out).as_slice()).unwrap();
    assert_eq!(env.variables.len(), 1);
    assert_eq!(env.variables[0].name, "MESOS_EXECUTOR_AUTHENTICATION_TOKEN");
    assert_eq!(
        environment(
            nestguard_credential_injector_decorate_executor_environment,
            inj,
            &executor,
            &framework,
            &nested,
            &mut out
        ),
        nestguard_result::Ok
    );
    let _ = take(out);
    let bad = ContainerId {
        value: "".into(),
        parent: None,
    }
    .encode_to_vec();
    assert_eq!(
        environment(
            nestguard_credential_injector_nested_environment,
            inj,
            &executor,
            &framework,
            &bad,
            &mut out
        ),
        nestguard_result::CredentialInjection
    );
    nestguard_credential_injector_free(inj);

    let creds = parse(CREDS).unwrap();
    assert_eq!(
        nestguard_credential_injector_new(
            nestguard_injection_mode::Secret as u32,
            null(),
            0,
            false,
            creds,
            &mut inj,
            &mut mode
        ),
        nestguard_result::Ok
    );
    nestguard_credentials_free(creds);
    assert_eq!(
        environment(
            nestguard_credential_injector_nested_environment,
            inj,
            &executor,
            &framework,
            &nested,
            &mut out
        ),
        nestguard_result::CredentialInjection
    );
    assert!(last_error().contains("no principal"));
    nestguard_credential_injector_free(inj);
    assert_eq!(
        nestguard_credential_injector_new(
            nestguard_injection_mode::Token as u32,
            null(),
            0,
            false,
            null(),
            &mut inj,
            &mut mode
        ),
        nestguard_result::InvalidArgument
    );
    assert_eq!(
        nestguard_credential_injector_new(9, null(), 0, false, null(), &mut inj, &mut mode),
        nestguard_result::InvalidArgument
    );
}
