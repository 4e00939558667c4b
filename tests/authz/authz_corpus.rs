//! The ACL decision corpus in `tests/fixtures/authz/`: every case is decided
//! three ways and must agree with the expected decision and deciding entry:
//! the Rust API (`Authorizer::explain_json`), the built `libnestguard.so`'s
//! protobuf entry points (`nestguard_authorizer_explain` / `_authorize`), and
//! the `.so`'s fast path (`nestguard_approver_new` + `nestguard_approver_approved`
//! over string views).

use std::path::{Path, PathBuf};

use libloading::Library;
use nestguard::abi::authorizer::{nestguard_object_view, nestguard_str_view};
use nestguard::authz::Authorizer;
use nestguard::proto::mesos::authorization::{Object, Request};
use prost::Message;
use serde_json::Value;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/authz");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "fixtures missing in {}", dir.display());
    files
}

struct Case {
    file: String,
    name: String,
    request_json: Value,
    request: Request,
    expected: Value,
}

fn load_cases(path: &Path) -> (String, bool, Vec<Case>) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let acls = doc["acls"].to_string();
    let strict = doc["strict"].as_bool().unwrap_or(true);
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let cases = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            file: file.clone(),
            name: c["name"].as_str().unwrap().to_owned(),
            request_json: c["request"].clone(),
            request: nestguard::json::from_json(&c["request"].to_string())
                .unwrap_or_else(|e| panic!("{file}: {}: {e}", c["name"])),
            expected: c.clone(),
        })
        .collect();
    (acls, strict, cases)
}

/// Compares an explanation with the case's expectations.
fn check(case: &Case, got: &Value, via: &str) {
    let ctx = format!("{} / {} via {via}: got {got}", case.file, case.name);
    assert_eq!(got["allowed"], case.expected["allowed"], "allowed: {ctx}");
    for key in ["list", "index", "decided_by"] {
        if let Some(want) = case.expected.get(key) {
            assert_eq!(&got[key], want, "{key}: {ctx}");
        }
    }
    for half in ["parent", "child"] {
        match case.expected.get(half) {
            None => {}
            Some(Value::Null) => assert!(got[half].is_null(), "{half}: {ctx}"),
            Some(want) => {
                for key in ["list", "index", "allowed"] {
                    assert_eq!(got[half][key], want[key], "{half}.{key}: {ctx}");
                }
            }
        }
    }
}

#[test]
fn corpus_through_the_rust_api() {
    let mut n = 0;
    for path in fixtures() {
        let (acls, strict, cases) = load_cases(&path);
        let auth = Authorizer::from_json(&acls, strict).unwrap();
        for case in &cases {
            let got = auth
                .explain_json(&case.request)
                .unwrap_or_else(|e| panic!("{} / {}: {e}", case.file, case.name));
            check(case, &got, "rust");
            assert_eq!(
                auth.authorized(&case.request).unwrap(),
                case.expected["allowed"].as_bool().unwrap()
            );
            n += 1;
        }
    }
    assert!(n >= 60, "only {n} cases");
}

fn library_path() -> PathBuf {
    // `cargo test` builds libnestguard.so next to the test binary
    // (target/<profile>/deps/); only `cargo build` copies it one level up.
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().join("libnestguard.so")
}

type New = unsafe extern "C" fn(*const u8, usize, bool, *mut *mut u8) -> u32;
type Explain = unsafe extern "C" fn(*const u8, *const u8, usize, *mut u8, usize, *mut usize) -> u32;
type Authorize = unsafe extern "C" fn(*const u8, *const u8, usize, *mut bool) -> u32;
type Free = unsafe extern "C" fn(*mut u8);
type ApproverNew = unsafe extern "C" fn(*const u8, *const u8, usize, u32, *mut *mut u8) -> u32;
type Approved = unsafe extern "C" fn(*const u8, *const nestguard_object_view, *mut bool) -> u32;
type ApprovedObject = unsafe extern "C" fn(*const u8, *const u8, usize, *mut bool) -> u32;
/// `NESTGUARD_RESULT_AUTHORIZATION_FAILED`: the fast path cannot serve the action.
const NEEDS_PROTOBUF: u32 = 201;

fn sv(s: Option<&str>) -> nestguard_str_view {
    nestguard_str_view::of(s)
}

fn root_value(o: &Object) -> Option<&str> {
    let mut id = o.container_id.as_ref()?;
    while let Some(p) = id.parent.as_deref() {
        id = p;
    }
    Some(&id.value)
}

fn view_of(o: &Object) -> nestguard_object_view {
    nestguard_object_view {
        value: sv(o.value.as_deref()),
        executor_user: sv(o
            .executor_info
            .as_ref()
            .and_then(|e| e.command.as_ref())
            .and_then(|c| c.user.as_deref())),
        framework_user: sv(o
            .framework_info
            .as_ref()
            .map(|f| f.user.as_str())
            .filter(|u| !u.is_empty())),
        framework_principal: sv(o
            .framework_info
            .as_ref()
            .and_then(|f| f.principal.as_deref())),
        command_user: sv(o.command_info.as_ref().and_then(|c| c.user.as_deref())),
        container_id: sv(o.container_id.as_ref().map(|c| c.value.as_str())),
        root_container_id: sv(root_value(o)),
        has_executor_info: o.executor_info.is_some(),
        has_framework_info: o.framework_info.is_some(),
        has_command: o.command_info.is_some(),
    }
}

#[test]
fn corpus_through_the_shared_library() {
    let path = library_path();
    // SAFETY: loading libnestguard.so runs no initializers beyond Rust's.
    let lib = unsafe { Library::new(&path) }.unwrap_or_else(|e| {
        panic!(
            "loading {}: {e} (build it with `cargo build`)",
            path.display()
        )
    });
    // SAFETY: the signatures match src/abi/authorizer.rs.
    let (new, explain, authorize, free, approver_new, approved, approved_object, approver_free) = unsafe {
        (
            lib.get::<New>(b"nestguard_authorizer_new").unwrap(),
            lib.get::<Explain>(b"nestguard_authorizer_explain").unwrap(),
            lib.get::<Authorize>(b"nestguard_authorizer_authorize")
                .unwrap(),
            lib.get::<Free>(b"nestguard_authorizer_free").unwrap(),
            lib.get::<ApproverNew>(b"nestguard_approver_new").unwrap(),
            lib.get::<Approved>(b"nestguard_approver_approved").unwrap(),
            lib.get::<ApprovedObject>(b"nestguard_approver_approved_object")
                .unwrap(),
            lib.get::<Free>(b"nestguard_approver_free").unwrap(),
        )
    };
    let mut n = 0;
    for file in fixtures() {
        let (acls, strict, cases) = load_cases(&file);
        let mut auth = std::ptr::null_mut();
        // SAFETY: valid buffers and out pointer.
        assert_eq!(
            unsafe { new(acls.as_ptr().cast(), acls.len(), strict, &mut auth) },
            0
        );
        for case in &cases {
            let bytes = case.request.encode_to_vec();
            let mut buf = vec![0u8; 4096];
            let mut needed = 0usize;
            // SAFETY: valid handle and buffers.
            let rc = unsafe {
                explain(
                    auth,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut needed,
                )
            };
            assert_eq!(rc, 0, "{} / {}", case.file, case.name);
            let got: Value = serde_json::from_slice(&buf[..needed - 1]).unwrap();
            check(case, &got, ".so explain");
            let mut allowed = false;
            // SAFETY: valid handle and buffers.
            assert_eq!(
                unsafe { authorize(auth, bytes.as_ptr().cast(), bytes.len(), &mut allowed) },
                0
            );
            assert_eq!(
                allowed,
                case.expected["allowed"].as_bool().unwrap(),
                "{} / {}",
                case.file,
                case.name
            );

            // The fast path over string views.
            let subject = case.request.subject.as_ref().map(Message::encode_to_vec);
            let (sp, sl) = subject
                .as_ref()
                .map_or((std::ptr::null(), 0), |s| (s.as_ptr().cast(), s.len()));
            let mut approver = std::ptr::null_mut();
            let action = u32::try_from(case.request.action.unwrap()).unwrap();
            // SAFETY: valid handle, subject bytes and out pointer.
            assert_eq!(
                unsafe { approver_new(auth, sp, sl, action, &mut approver) },
                0
            );
            let view = case.request.object.as_ref().map(view_of);
            let vp = view.as_ref().map_or(std::ptr::null(), |v| v as *const _);
            let mut fast = false;
            // SAFETY: valid approver, view (borrowing `case`) and out pointer.
            let mut rc = unsafe { approved(approver, vp, &mut fast) };
            if rc == NEEDS_PROTOBUF {
                // RUN_TASK, role actions, ...: the object needs protobuf fields.
                let object = case.request.object.as_ref().map(Message::encode_to_vec);
                let (op, ol) = object
                    .as_ref()
                    .map_or((std::ptr::null(), 0), |o| (o.as_ptr(), o.len()));
                // SAFETY: valid approver, object bytes and out pointer.
                rc = unsafe { approved_object(approver, op, ol, &mut fast) };
            }
            assert_eq!(
                rc, 0,
                "{} / {}: {}",
                case.file, case.name, case.request_json
            );
            assert_eq!(fast, allowed, "fast path: {} / {}", case.file, case.name);
            // SAFETY: freed once.
            unsafe { approver_free(approver) };
            n += 1;
        }
        // SAFETY: freed once.
        unsafe { free(auth) };
    }
    assert!(n >= 60);
}
