//! The approver's `approved`, the C ABI fast path and the protobuf path of
//! `nestguard_authorizer_authorize` allocate nothing per decision (after the
//! first call on a thread, which may register the thread with arc-swap).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use nestguard::abi::authorizer::{
    nestguard_approver_approved, nestguard_approver_free, nestguard_approver_new,
    nestguard_authorizer_authorize, nestguard_authorizer_free, nestguard_authorizer_new,
    nestguard_object_view, nestguard_str_view,
};
use nestguard::abi::result::nestguard_result;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{CommandInfo, ContainerId, ExecutorId, ExecutorInfo};
use prost::Message;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn sv(s: &str) -> nestguard_str_view {
    nestguard_str_view {
        ptr: s.as_ptr().cast(),
        len: s.len(),
        present: true,
    }
}

#[test]
fn fast_path_does_not_allocate() {
    let json = r#"{"permissive": false,
      "launch_nested_containers_under_parent_with_user": [{"principals": {"values": ["ops"]}, "users": {"values": ["u"]}}],
      "launch_nested_containers_as_user": [{"principals": {"values": ["ops"]}, "users": {"values": ["v"]}}],
      "kill_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"values": ["u"]}}]}"#;
    let mut auth = std::ptr::null_mut();
    assert_eq!(
        nestguard_authorizer_new(json.as_ptr().cast(), json.len(), true, &mut auth),
        nestguard_result::Ok
    );
    let subject = Subject {
        value: Some("ops".into()),
        claims: None,
    }
    .encode_to_vec();
    for action in [Action::KillNestedContainer, Action::LaunchNestedContainer] {
        let mut approver = std::ptr::null_mut();
        assert_eq!(
            nestguard_approver_new(
                auth,
                subject.as_ptr().cast(),
                subject.len(),
                action as u32,
                &mut approver
            ),
            nestguard_result::Ok
        );
        let view = nestguard_object_view {
            value: nestguard_str_view {
                ptr: std::ptr::null(),
                len: 0,
                present: false,
            },
            executor_user: sv("u"),
            framework_user: sv("f"),
            framework_principal: nestguard_str_view {
                ptr: std::ptr::null(),
                len: 0,
                present: false,
            },
            command_user: sv("v"),
            container_id: sv("c"),
            root_container_id: sv("r"),
            has_executor_info: true,
            has_framework_info: true,
            has_command: true,
        };
        let mut allowed = false;
        assert_eq!(
            nestguard_approver_approved(approver, &view, &mut allowed),
            nestguard_result::Ok
        );
        assert!(allowed);
        let before = ALLOCATIONS.with(Cell::get);
        for _ in 0..10_000 {
            let mut allowed = false;
            nestguard_approver_approved(approver, &view, &mut allowed);
            assert!(allowed);
        }
        assert_eq!(ALLOCATIONS.with(Cell::get) - before, 0, "{action:?}");
        nestguard_approver_free(approver);
    }

    // The protobuf path reads the request in place (issue 29): no decoding,
    // so no allocation either.
    let request = Request {
        subject: Some(Subject {
            value: Some("ops".into()),
            claims: None,
        }),
        action: Some(Action::KillNestedContainer as i32),
        object: Some(Object {
            executor_info: Some(ExecutorInfo {
                executor_id: ExecutorId { value: "e".into() },
                command: Some(CommandInfo {
                    user: Some("u".into()),
                    ..CommandInfo::default()
                }),
                ..ExecutorInfo::default()
            }),
            container_id: Some(ContainerId {
                value: "c".into(),
                parent: Some(Box::new(ContainerId {
                    value: "r".into(),
                    parent: None,
                })),
            }),
            ..Object::default()
        }),
    }
    .encode_to_vec();
    let before = ALLOCATIONS.with(Cell::get);
    for _ in 0..10_000 {
        let mut allowed = false;
        nestguard_authorizer_authorize(auth, request.as_ptr(), request.len(), &mut allowed);
        assert!(allowed);
    }
    assert_eq!(ALLOCATIONS.with(Cell::get) - before, 0, "protobuf path");
    nestguard_authorizer_free(auth);
}
