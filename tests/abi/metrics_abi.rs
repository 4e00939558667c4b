//! The library's metrics through the C ABI: decisions move the per-action
//! allowed and denied counters (fast path and protobuf path alike), the
//! decision latency is sampled, and the snapshot is read as a C caller
//! does. The counters are process-wide and the tests of this binary run
//! in parallel, so these use an action no other test here decides
//! (PRUNE_IMAGES) and compare before and after.

use std::ptr::null_mut;

use prost::Message as _;
use serde_json::Value;

use nestguard::abi::authorizer::*;
use nestguard::abi::metrics::{nestguard_metrics_format, nestguard_metrics_snapshot};
use nestguard::abi::result::nestguard_result;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};

const ACLS: &str = r#"{"permissive": false,
  "prune_images": [{"principals": {"values": ["op"]}, "images": {"type": "ANY"}}]}"#;

fn snapshot() -> Value {
    let format = nestguard_metrics_format::Json as u32;
    let mut needed = 0;
    assert_eq!(
        nestguard_metrics_snapshot(format, null_mut(), 0, &mut needed),
        nestguard_result::BufferTooSmall
    );
    let mut buf = vec![0u8; needed + 4096];
    assert_eq!(
        nestguard_metrics_snapshot(format, buf.as_mut_ptr().cast(), buf.len(), &mut needed),
        nestguard_result::Ok
    );
    serde_json::from_slice(&buf[..needed - 1]).unwrap()
}

fn count(v: &Value, name: &str) -> f64 {
    v[name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name} missing: {v}"))
}

fn request(principal: &str) -> Vec<u8> {
    Request {
        subject: Some(Subject {
            value: Some(principal.into()),
            claims: None,
        }),
        action: Some(Action::PruneImages as i32),
        object: Some(Object {
            value: Some("busybox".into()),
            ..Default::default()
        }),
    }
    .encode_to_vec()
}

#[test]
fn decisions_move_the_per_action_counters_and_the_sampled_latency() {
    let mut auth = null_mut();
    assert_eq!(
        nestguard_authorizer_new(ACLS.as_ptr().cast(), ACLS.len(), true, &mut auth),
        nestguard_result::Ok
    );
    let before = snapshot();

    // The protobuf path: one allow, two denials.
    for (principal, expected) in [("op", true), ("eve", false), ("eve", false)] {
        let bytes = request(principal);
        let mut allowed = !expected;
        assert_eq!(
            nestguard_authorizer_authorize(auth, bytes.as_ptr(), bytes.len(), &mut allowed),
            nestguard_result::Ok
        );
        assert_eq!(allowed, expected);
    }
    // The fast path: 200 allows, enough to arm the latency sample.
    let subject = Subject {
        value: Some("op".into()),
        claims: None,
    }
    .encode_to_vec();
    let mut approver = null_mut();
    assert_eq!(
        nestguard_approver_new(
            auth,
            subject.as_ptr(),
            subject.len(),
            Action::PruneImages as u32,
            &mut approver
        ),
        nestguard_result::Ok
    );
    let image = "busybox";
    let absent = nestguard_str_view {
        ptr: std::ptr::null(),
        len: 0,
        present: false,
    };
    let view = nestguard_object_view {
        value: nestguard_str_view {
            ptr: image.as_ptr().cast(),
            len: image.len(),
            present: true,
        },
        executor_user: absent,
        framework_user: absent,
        framework_principal: absent,
        command_user: absent,
        container_id: absent,
        root_container_id: absent,
        has_executor_info: false,
        has_framework_info: false,
        has_command: false,
    };
    for _ in 0..200 {
        let mut allowed = false;
        assert_eq!(
            nestguard_approver_approved(approver, &view, &mut allowed),
            nestguard_result::Ok
        );
        assert!(allowed);
    }
    // An undecidable request: an error, which counts as a denial.
    let bad = Request {
        action: Some(Action::PruneImages as i32),
        subject: Some(Subject::default()),
        object: None,
    }
    .encode_to_vec();
    let mut allowed = true;
    assert_ne!(
        nestguard_authorizer_authorize(auth, bad.as_ptr(), bad.len(), &mut allowed),
        nestguard_result::Ok
    );
    let after = snapshot();

    let delta = |name: &str| count(&after, name) - count(&before, name);
    assert_eq!(delta("nestguard/authz/prune_images/allowed"), 201.0);
    assert_eq!(delta("nestguard/authz/prune_images/denied"), 3.0);
    assert!(delta("nestguard/authz/allowed") >= 201.0);
    assert!(delta("nestguard/authz/denied") >= 3.0);
    assert!(delta("nestguard/authz/errors") >= 1.0);
    assert!(
        delta("nestguard/authz/decision_latency_ms/count") >= 1.0,
        "200 decisions of one kind arm at least one latency sample"
    );
    for key in ["p50", "p90", "p99", "p999", "min", "max"] {
        let name = format!("nestguard/authz/decision_latency_ms/{key}");
        assert!(count(&after, &name) >= 0.0, "{name}");
    }
    nestguard_approver_free(approver);
    nestguard_authorizer_free(auth);
}
