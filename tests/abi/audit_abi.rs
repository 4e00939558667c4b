//! The decision audit log through the C ABI: records for allows and denials
//! with the deciding entry, sampling, denials only, no secret or token text,
//! and unregistering.

use std::ffi::c_void;
use std::os::unix::fs::PermissionsExt;
use std::ptr::null_mut;
use std::sync::Mutex;

use prost::Message as _;
use serde_json::Value;

use crate::abi_support::take;

use nestguard::abi::audit::*;
use nestguard::abi::authorizer::*;
use nestguard::abi::credentials::*;
use nestguard::abi::result::nestguard_result;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{CommandInfo, ContainerId, ExecutorId, ExecutorInfo};

const ACLS: &str = r#"{"permissive": false,
  "kill_nested_containers": [{"principals": {"values": ["op"]}, "users": {"values": ["alice"]}}]}"#;
const CREDS: &str = r#"{"credentials":[{"principal":"op","secret":"audit-secret-op"}]}"#;
const JWT_KEY: &str = "audit-jwt-signing-key";

/// The callback: appends each record to the `Mutex<Vec<String>>` behind
/// `userdata`.
unsafe extern "C" fn collect(userdata: *mut c_void, json: *const u8, len: usize) {
    // SAFETY: the tests register a live `Mutex<Vec<String>>` and unregister
    // before dropping it; the library passes `len` valid bytes.
    let (sink, bytes) = unsafe {
        (
            &*userdata.cast::<Mutex<Vec<String>>>(),
            std::slice::from_raw_parts(json, len),
        )
    };
    if let Ok(mut v) = sink.lock() {
        v.push(String::from_utf8_lossy(bytes).into_owned());
    }
}

struct Audited {
    auth: *mut nestguard_authorizer,
    records: Box<Mutex<Vec<String>>>,
}

impl Audited {
    fn new() -> Audited {
        let mut auth = null_mut();
        assert_eq!(
            nestguard_authorizer_new(ACLS.as_ptr().cast(), ACLS.len(), true, &mut auth),
            nestguard_result::Ok
        );
        Audited {
            auth,
            records: Box::new(Mutex::new(Vec::new())),
        }
    }

    fn register(&self, sample_every: u32, denials_only: bool) {
        let options = nestguard_audit_options {
            sample_every,
            denials_only,
        };
        let userdata = std::ptr::from_ref::<Mutex<Vec<String>>>(&self.records).cast_mut();
        assert_eq!(
            nestguard_authorizer_set_audit_callback(
                self.auth,
                Some(collect),
                userdata.cast(),
                &options
            ),
            nestguard_result::Ok
        );
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.records.lock().unwrap())
    }

    /// `authorized` for `op` killing a container of executor user `user`.
    fn kill(&self, user: &str) -> bool {
        self.kill_via(user, false)
    }

    /// [`Audited::kill`], through `nestguard_authorizer_decide` (the
    /// decision with its explanation) when `explained`.
    fn kill_via(&self, user: &str, explained: bool) -> bool {
        let request = Request {
            subject: Some(Subject {
                value: Some("op".into()),
                claims: None,
            }),
            action: Some(Action::KillNestedContainer as i32),
            object: Some(Object {
                executor_info: Some(ExecutorInfo {
                    executor_id: ExecutorId { value: "e".into() },
                    command: Some(CommandInfo {
                        user: Some(user.into()),
                        ..CommandInfo::default()
                    }),
                    ..ExecutorInfo::default()
                }),
                container_id: Some(ContainerId {
                    value: "child".into(),
                    parent: Some(Box::new(ContainerId {
                        value: "root".into(),
                        parent: None,
                    })),
                }),
                ..Object::default()
            }),
        }
        .encode_to_vec();
        let mut allowed = false;
        if explained {
            let mut explanation = null_mut();
            assert_eq!(
                nestguard_authorizer_decide(
                    self.auth,
                    request.as_ptr(),
                    request.len(),
                    &mut allowed,
                    &mut explanation
                ),
                nestguard_result::Ok
            );
            let explanation: Value = serde_json::from_slice(&take(explanation)).unwrap();
            assert_eq!(explanation["allowed"], allowed);
            return allowed;
        }
        assert_eq!(
            nestguard_authorizer_authorize(
                self.auth,
                request.as_ptr(),
                request.len(),
                &mut allowed
            ),
            nestguard_result::Ok
        );
        allowed
    }
}

impl Drop for Audited {
    fn drop(&mut self) {
        assert_eq!(
            nestguard_authorizer_clear_audit_callback(self.auth),
            nestguard_result::Ok
        );
        nestguard_authorizer_free(self.auth);
    }
}

fn sv(s: &str) -> nestguard_str_view {
    nestguard_str_view {
        ptr: s.as_ptr().cast(),
        len: s.len(),
        present: true,
    }
}

const ABSENT: nestguard_str_view = nestguard_str_view {
    ptr: std::ptr::null(),
    len: 0,
    present: false,
};

/// Authenticates `header` through the ABI's HTTP authenticator.
fn subject_for(header: &str, dir: &tempfile::TempDir) -> Subject {
    let key = dir.path().join("jwt.key");
    std::fs::write(&key, JWT_KEY).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key = key.to_str().unwrap();
    let mut creds = null_mut();
    let origin = "audit-test";
    assert_eq!(
        nestguard_credentials_parse(
            CREDS.as_ptr().cast(),
            CREDS.len(),
            origin.as_ptr().cast(),
            origin.len(),
            &mut creds
        ),
        nestguard_result::Ok
    );
    let realm = "mesos-agent-readwrite";
    let mut authn = null_mut();
    assert_eq!(
        nestguard_http_authenticator_new(
            realm.as_ptr().cast(),
            realm.len(),
            creds,
            key.as_ptr().cast(),
            key.len(),
            false,
            &mut authn
        ),
        nestguard_result::Ok
    );
    nestguard_credentials_free(creds);
    let (mut ok, mut out) = (false, null_mut());
    assert_eq!(
        nestguard_http_authenticator_authenticate(
            authn,
            header.as_ptr().cast(),
            header.len(),
            true,
            &mut ok,
            &mut out
        ),
        nestguard_result::Ok
    );
    assert!(ok, "{header} authenticates");
    nestguard_http_authenticator_free(authn);
    Subject::decode(take(out).as_slice()).unwrap()
}

/// The fast path for an authenticated subject and a kill object.
fn approve(
    auth: *const nestguard_authorizer,
    subject: &Subject,
    executor_user: &str,
    root: &str,
) -> bool {
    let subject = subject.encode_to_vec();
    let mut approver = null_mut();
    assert_eq!(
        nestguard_approver_new(
            auth,
            subject.as_ptr(),
            subject.len(),
            Action::KillNestedContainer as u32,
            &mut approver
        ),
        nestguard_result::Ok
    );
    let view = nestguard_object_view {
        value: ABSENT,
        executor_user: sv(executor_user),
        framework_user: ABSENT,
        framework_principal: ABSENT,
        command_user: ABSENT,
        container_id: sv("child"),
        root_container_id: sv(root),
        has_executor_info: true,
        has_framework_info: false,
        has_command: false,
    };
    let mut allowed = false;
    assert_eq!(
        nestguard_approver_approved(approver, &view, &mut allowed),
        nestguard_result::Ok
    );
    nestguard_approver_free(approver);
    allowed
}

fn json(record: &str) -> Value {
    serde_json::from_str(record).unwrap_or_else(|e| panic!("{record}: {e}"))
}

#[test]
fn records_for_allow_and_deny_without_secrets() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-abi-audit-")
        .tempdir()
        .unwrap();
    use base64::Engine as _;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("op:audit-secret-op")
    );
    let op = subject_for(&basic, &dir);
    let claims = std::collections::BTreeMap::from([
        ("cid".to_owned(), "exec-c1".to_owned()),
        ("eid".to_owned(), "e".to_owned()),
        ("fid".to_owned(), "f".to_owned()),
    ]);
    let token =
        nestguard::credentials::jwt::issue(&claims, &nestguard::credentials::Secret::from(JWT_KEY));
    let executor = subject_for(&format!("Bearer {token}"), &dir);

    let a = Audited::new();
    assert!(a.kill("alice"), "no callback: decisions as usual");
    assert!(a.take().is_empty(), "off by default");
    a.register(0, false);

    assert!(a.kill("alice"));
    assert!(!approve(a.auth, &op, "bob", "root"));
    assert!(approve(a.auth, &executor, "bob", "exec-c1"));
    assert!(!approve(a.auth, &executor, "bob", "other-root"));
    let records = a.take();
    assert_eq!(records.len(), 4, "{records:#?}");
    let forbidden = [
        "audit-secret-op",
        JWT_KEY,
        basic.as_str(),
        token.as_str(),
        token.split('.').nth(1).unwrap(),
        token.split('.').nth(2).unwrap(),
    ];
    for r in &records {
        for secret in forbidden {
            assert!(!r.contains(secret), "record leaks {secret:?}: {r}");
        }
    }
    let allow = json(&records[0]);
    assert_eq!(allow["subject"], "op");
    assert_eq!(allow["action"], "KILL_NESTED_CONTAINER");
    assert_eq!(allow["allowed"], true);
    assert_eq!(allow["object"]["executor_user"], "alice");
    assert_eq!(allow["object"]["container_id"], "child");
    assert_eq!(allow["object"]["root_container_id"], "root");
    assert_eq!(allow["decision"]["list"], "kill_nested_containers");
    assert_eq!(allow["decision"]["index"], 0);
    assert_eq!(allow["decision"]["decided_by"], "entry");
    assert!(allow["latency_ns"].as_u64().is_some());
    assert!(
        allow["time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{allow}"
    );

    let deny = json(&records[1]);
    assert_eq!(deny["subject"], "op");
    assert_eq!(deny["allowed"], false);
    assert_eq!(deny["object"]["executor_user"], "bob");
    assert_eq!(deny["decision"]["list"], "kill_nested_containers");
    assert_eq!(deny["decision"]["index"], Value::Null);
    assert_eq!(deny["decision"]["decided_by"], "permissive");

    let token_allow = json(&records[2]);
    assert_eq!(token_allow["subject"], "token for exec-c1");
    assert_eq!(token_allow["allowed"], true);
    assert_eq!(token_allow["decision"]["decided_by"], "implicit_executor");
    let token_deny = json(&records[3]);
    assert_eq!(token_deny["subject"], "token for exec-c1");
    assert_eq!(token_deny["allowed"], false);
    assert_eq!(token_deny["object"]["root_container_id"], "other-root");

    assert_eq!(
        nestguard_authorizer_clear_audit_callback(a.auth),
        nestguard_result::Ok
    );
    assert!(a.kill("alice"));
    assert!(!a.kill("bob"));
    assert!(a.take().is_empty(), "no record after unregistering");
}

#[test]
fn denials_only_and_sampling() {
    let a = Audited::new();
    a.register(0, true);
    for _ in 0..3 {
        assert!(a.kill("alice"));
        assert!(!a.kill("bob"));
    }
    let records = a.take();
    assert_eq!(records.len(), 3, "denials only: {records:#?}");
    assert!(records.iter().all(|r| json(r)["allowed"] == false));

    a.register(3, false);
    for _ in 0..4 {
        assert!(a.kill("alice"));
        assert!(!a.kill("bob"));
    }
    // Decisions 1, 4 and 7 of 8 (allow, deny, allow).
    let records: Vec<Value> = a.take().iter().map(|r| json(r)).collect();
    assert_eq!(records.len(), 3, "{records:#?}");
    let verdicts: Vec<&Value> = records.iter().map(|r| &r["allowed"]).collect();
    assert_eq!(
        verdicts,
        [&Value::Bool(true), &Value::Bool(false), &Value::Bool(true)]
    );

    a.register(2, true);
    for _ in 0..4 {
        assert!(!a.kill("bob"));
    }
    assert_eq!(a.take().len(), 2, "one denial in two");
}

#[test]
fn a_decision_with_its_explanation_is_audited_once() {
    let a = Audited::new();
    a.register(0, false);
    assert!(a.kill_via("alice", true));
    assert!(!a.kill_via("bob", true));
    let records: Vec<Value> = a.take().iter().map(|r| json(r)).collect();
    assert_eq!(records.len(), 2, "one record per decision: {records:#?}");
    assert_eq!(records[0]["allowed"], true);
    assert_eq!(records[1]["allowed"], false);
}

#[test]
fn null_arguments() {
    let a = Audited::new();
    assert_eq!(
        nestguard_authorizer_set_audit_callback(a.auth, None, null_mut(), std::ptr::null()),
        nestguard_result::NullParameter
    );
    assert_eq!(
        nestguard_authorizer_set_audit_callback(
            std::ptr::null(),
            Some(collect),
            null_mut(),
            std::ptr::null()
        ),
        nestguard_result::NullParameter
    );
    assert_eq!(
        nestguard_authorizer_clear_audit_callback(std::ptr::null()),
        nestguard_result::NullParameter
    );
    // NULL options: every decision.
    let userdata = std::ptr::from_ref::<Mutex<Vec<String>>>(&a.records).cast_mut();
    assert_eq!(
        nestguard_authorizer_set_audit_callback(
            a.auth,
            Some(collect),
            userdata.cast(),
            std::ptr::null()
        ),
        nestguard_result::Ok
    );
    assert!(!a.kill("bob"));
    assert_eq!(a.take().len(), 1);
}

/// Issue 25: a tenant's field is copied into a record only up to
/// `AUDIT_FIELD_MAX_BYTES`; the record keeps the original length and a
/// SHA-256 of the whole value, so one decision cannot fill the log.
#[test]
fn oversized_fields_are_truncated_with_their_length_and_hash() {
    use sha2::Digest as _;
    let audited = Audited::new();
    audited.register(1, false);
    // The bound falls inside the 'é': the cut backs off to a character.
    let max = nestguard::authz::AUDIT_FIELD_MAX_BYTES;
    let huge = format!("{}é{}", "u".repeat(max - 1), "u".repeat(15 << 20));
    assert!(!audited.kill(&huge));
    let records = audited.take();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert!(
        record.len() < 4096,
        "a record of {} bytes for one field",
        record.len()
    );
    let r = json(record);
    let user = r["object"]["executor_user"].as_str().unwrap();
    assert_eq!(user.len(), max - 1, "{user}");
    assert!(
        huge.starts_with(user),
        "a prefix of the value, cut on a character"
    );
    let cut = &r["truncated"]["executor_user"];
    assert_eq!(cut["len"], huge.len(), "{r}");
    let hash: String = sha2::Sha256::digest(huge.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(cut["sha256"], hash.as_str(), "{r}");
    // A field within the bound is whole, and nothing is marked truncated.
    assert!(audited.kill("alice"));
    let r = json(&audited.take()[0]);
    assert_eq!(r["object"]["executor_user"], "alice");
    assert!(r.get("truncated").is_none(), "{r}");
}
