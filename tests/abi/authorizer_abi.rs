//! The authorizer's one decision path through the C ABI: a request decided
//! once with its explanation (`nestguard_authorizer_decide`), an executor
//! token's launch as another user decided alike on the borrowed view (which
//! carries `framework_principal` since ABI 1.0) and on the protobuf object,
//! and a view that cannot carry an action's fields refused with the field
//! named.

use std::ptr::null_mut;

use prost::Message as _;
use serde_json::Value;

use crate::abi_support::{last_error, take};

use nestguard::abi::authorizer::*;
use nestguard::abi::result::nestguard_result;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{
    CommandInfo, ContainerId, ExecutorId, ExecutorInfo, FrameworkInfo, Label, Labels,
};

/// `op` may kill alice's containers only; the framework principal `fw` may
/// let its executors' tokens launch as `bob` (and nobody else as anyone).
const ACLS: &str = r#"{"permissive": false,
  "kill_nested_containers": [{"principals": {"values": ["op"]}, "users": {"values": ["alice"]}}],
  "launch_nested_containers_as_user": [{"principals": {"values": ["fw"]}, "users": {"values": ["bob"]}}]}"#;

struct Auth(*mut nestguard_authorizer);

impl Auth {
    fn new() -> Auth {
        let mut auth = null_mut();
        assert_eq!(
            nestguard_authorizer_new(ACLS.as_ptr().cast(), ACLS.len(), true, &mut auth),
            nestguard_result::Ok
        );
        Auth(auth)
    }

    fn approver(&self, subject: &Subject, action: Action) -> Approver {
        let bytes = subject.encode_to_vec();
        let mut approver = null_mut();
        assert_eq!(
            nestguard_approver_new(
                self.0,
                bytes.as_ptr(),
                bytes.len(),
                action as u32,
                &mut approver
            ),
            nestguard_result::Ok
        );
        Approver(approver)
    }
}

impl Drop for Auth {
    fn drop(&mut self) {
        nestguard_authorizer_free(self.0);
    }
}

struct Approver(*mut nestguard_approver);

impl Drop for Approver {
    fn drop(&mut self) {
        nestguard_approver_free(self.0);
    }
}

fn principal(p: &str) -> Subject {
    Subject {
        value: Some(p.into()),
        claims: None,
    }
}

/// An executor token's subject: claims only, `cid` naming the pod's root.
fn token(cid: &str) -> Subject {
    Subject {
        value: None,
        claims: Some(Labels {
            labels: vec![Label {
                key: "cid".into(),
                value: Some(cid.into()),
            }],
        }),
    }
}

fn kill_request(user: &str) -> Vec<u8> {
    Request {
        subject: Some(principal("op")),
        action: Some(Action::KillNestedContainer as i32),
        object: Some(Object {
            executor_info: Some(executor("alice-executor", user)),
            container_id: Some(nested("child", "root")),
            ..Object::default()
        }),
    }
    .encode_to_vec()
}

fn executor(id: &str, user: &str) -> ExecutorInfo {
    ExecutorInfo {
        executor_id: ExecutorId { value: id.into() },
        command: Some(CommandInfo {
            user: Some(user.into()),
            ..CommandInfo::default()
        }),
        ..ExecutorInfo::default()
    }
}

fn nested(leaf: &str, root: &str) -> ContainerId {
    ContainerId {
        value: leaf.into(),
        parent: Some(Box::new(ContainerId {
            value: root.into(),
            parent: None,
        })),
    }
}

/// `nestguard_authorizer_decide` with an explanation out pointer.
fn decide(auth: &Auth, request: &[u8]) -> (nestguard_result, bool, Option<Value>) {
    let (mut allowed, mut out) = (false, null_mut());
    let rc = nestguard_authorizer_decide(
        auth.0,
        request.as_ptr(),
        request.len(),
        &mut allowed,
        &mut out,
    );
    let explanation = (!out.is_null()).then(|| serde_json::from_slice(&take(out)).unwrap());
    (rc, allowed, explanation)
}

#[test]
fn a_request_is_decided_once_with_the_explanation_of_that_decision() {
    let auth = Auth::new();

    let (rc, allowed, explanation) = decide(&auth, &kill_request("mallory"));
    assert_eq!(rc, nestguard_result::Ok);
    assert!(!allowed);
    let e = explanation.expect("an explanation");
    assert_eq!(e["allowed"], false);
    assert_eq!(e["list"], "kill_nested_containers");
    // No entry matched mallory: the non-permissive default decided.
    assert_eq!(e["index"], Value::Null);
    assert_eq!(e["permissive"], false);

    let (rc, allowed, explanation) = decide(&auth, &kill_request("alice"));
    assert_eq!(rc, nestguard_result::Ok);
    assert!(allowed);
    let e = explanation.expect("an explanation");
    assert_eq!(
        (e["allowed"].clone(), e["index"].clone()),
        (true.into(), 0.into())
    );

    // No explanation asked for: the decision alone.
    let request = kill_request("alice");
    let mut allowed = false;
    assert_eq!(
        nestguard_authorizer_decide(
            auth.0,
            request.as_ptr(),
            request.len(),
            &mut allowed,
            std::ptr::null_mut()
        ),
        nestguard_result::Ok
    );
    assert!(allowed);
}

#[test]
fn a_request_that_cannot_be_decided_writes_no_explanation() {
    let auth = Auth::new();
    // No action: Mesos would CHECK-fail; nestguard refuses it.
    let request = Request {
        subject: Some(principal("op")),
        action: None,
        object: None,
    }
    .encode_to_vec();
    let (rc, allowed, explanation) = decide(&auth, &request);
    assert_eq!(rc, nestguard_result::InvalidAuthorizationRequest);
    assert!(!allowed);
    assert!(explanation.is_none());

    let garbage = [0xff_u8, 0xff, 0xff];
    let (rc, _, explanation) = decide(&auth, &garbage);
    assert_eq!(rc, nestguard_result::ProtobufDecode);
    assert!(explanation.is_none());

    let mut out = null_mut();
    assert_eq!(
        nestguard_authorizer_decide(
            auth.0,
            garbage.as_ptr(),
            garbage.len(),
            std::ptr::null_mut(),
            &mut out
        ),
        nestguard_result::NullParameter
    );
    assert!(out.is_null());
}

fn sv(s: Option<&str>) -> nestguard_str_view {
    nestguard_str_view::of(s)
}

/// A token's launch of `child` under `root` as `user`, for a framework whose
/// principal is `fw` and user is `own`, and whose executor names no user.
fn token_launch_as(fw: &str, user: &str, own: &str) -> Object {
    Object {
        executor_info: Some(ExecutorInfo {
            executor_id: ExecutorId { value: "e".into() },
            ..ExecutorInfo::default()
        }),
        framework_info: Some(FrameworkInfo {
            user: own.into(),
            name: "f".into(),
            principal: Some(fw.into()),
            ..FrameworkInfo::default()
        }),
        command_info: Some(CommandInfo {
            user: Some(user.into()),
            ..CommandInfo::default()
        }),
        container_id: Some(nested("child", "root")),
        ..Object::default()
    }
}

fn view_approved(approver: &Approver, fw: &str, user: &str) -> bool {
    view_approved_as(approver, fw, user, "alice")
}

/// [`view_approved`] for a framework and executor of user `own` (the shim
/// sends a set-but-empty user as present).
fn view_approved_as(approver: &Approver, fw: &str, user: &str, own: &str) -> bool {
    let view = nestguard_object_view {
        value: sv(None),
        executor_user: sv(None),
        framework_user: sv(Some(own)),
        framework_principal: sv(Some(fw)),
        command_user: sv(Some(user)),
        container_id: sv(Some("child")),
        root_container_id: sv(Some("root")),
        has_executor_info: true,
        has_framework_info: true,
        has_command: true,
    };
    let mut allowed = false;
    assert_eq!(
        nestguard_approver_approved(approver.0, &view, &mut allowed),
        nestguard_result::Ok,
        "{}",
        last_error()
    );
    allowed
}

fn object_approved(approver: &Approver, fw: &str, user: &str) -> bool {
    object_approved_as(approver, fw, user, "alice")
}

fn object_approved_as(approver: &Approver, fw: &str, user: &str, own: &str) -> bool {
    let bytes = token_launch_as(fw, user, own).encode_to_vec();
    let mut allowed = false;
    assert_eq!(
        nestguard_approver_approved_object(approver.0, bytes.as_ptr(), bytes.len(), &mut allowed),
        nestguard_result::Ok
    );
    allowed
}

#[test]
fn a_token_launch_as_another_user_is_decided_alike_on_the_view_and_the_object() {
    let auth = Auth::new();
    let approver = auth.approver(&token("root"), Action::LaunchNestedContainer);
    // (framework principal, user) → allowed: its own user always; another
    // only where launch_nested_containers_as_user allows the principal.
    let cases = [
        ("fw", "alice", true),
        ("fw", "bob", true),
        ("fw", "root", false),
        ("other", "bob", false),
    ];
    for (fw, user, want) in cases {
        assert_eq!(view_approved(&approver, fw, user), want, "view {fw} {user}");
        assert_eq!(
            object_approved(&approver, fw, user),
            want,
            "object {fw} {user}"
        );
    }
    // Another pod's token owns nothing here, whatever the user.
    let stranger = auth.approver(&token("other-root"), Action::LaunchNestedContainer);
    assert!(!view_approved(&stranger, "fw", "alice"));
    assert!(!object_approved(&stranger, "fw", "alice"));
}

#[test]
fn an_empty_framework_user_is_decided_alike_on_the_view_and_the_object() {
    let auth = Auth::new();
    let approver = auth.approver(&token("root"), Action::LaunchNestedContainer);
    // Set-but-empty on the view (as the shim sends it), empty on the wire
    // (where prost cannot tell it from absent): "" is no user of its own,
    // so a launch as "" is another user's, which no ACL allows here.
    for (fw, user) in [("fw", ""), ("other", ""), ("fw", "bob")] {
        assert_eq!(
            view_approved_as(&approver, fw, user, ""),
            object_approved_as(&approver, fw, user, ""),
            "{fw} {user}"
        );
    }
    assert!(!view_approved_as(&approver, "fw", "", ""));
    assert!(view_approved_as(&approver, "fw", "bob", ""));
}

#[test]
fn a_view_cannot_decide_a_task_action_and_names_the_field_it_lacks() {
    let auth = Auth::new();
    let approver = auth.approver(&principal("op"), Action::RunTask);
    let view = nestguard_object_view {
        value: sv(None),
        executor_user: sv(None),
        framework_user: sv(Some("alice")),
        framework_principal: sv(None),
        command_user: sv(None),
        container_id: sv(None),
        root_container_id: sv(None),
        has_executor_info: false,
        has_framework_info: true,
        has_command: false,
    };
    let mut allowed = true;
    assert_eq!(
        nestguard_approver_approved(approver.0, &view, &mut allowed),
        nestguard_result::AuthorizationFailed
    );
    assert!(last_error().contains("`task_info`"), "{}", last_error());
}
