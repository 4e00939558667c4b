//! ACL decision benchmarks: nestguard's compiled engine through the C ABI
//! (fast path over string views, and the serialized-protobuf path) against a
//! plain first-match scan (how Mesos' LocalAuthorizer evaluates) and against
//! `cedar-policy` with the same policies, at 10 / 1,000 / 10,000 / 100,000
//! entries per list.
//!
//! Policies: entry i = principals ["p<i>"], users ["u<i>"], permissive
//! false; the request hits the middle entry, so a scan visits n/2 entries.
//! In Cedar each entry is `permit(principal == User::"p<i>", action ==
//! Action::"kill", resource == User::"u<i>");` (default deny = permissive
//! false).
//!
//! `protobuf_path_kill` is `nestguard_authorizer_authorize` on a serialized
//! `mesos.authorization.Request` (what the Mesos shim's `authorized()`
//! passes): the fields a decision reads are read in place from the bytes
//! (`authz::wire`), without decoding the message. `protobuf_path_kill_audit_on`
//! decodes it in full, once, as before (the record describes all of it).
//!
//! The audit log: `fast_path_kill_audit_off` is the fast path with the
//! audit hook compiled in and no callback registered (one relaxed atomic
//! load); `*_audit_on` registers a callback that ignores the bytes, so they
//! measure building and serializing every record.
//!
//! Run: `cargo bench --bench authz` (about a minute); only the audit cases:
//! `cargo bench --bench authz -- 'kill(_audit_(off|on))?/10000'`.

use std::hint::black_box;
use std::str::FromStr;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nestguard::abi::audit::{
    nestguard_audit_options, nestguard_authorizer_clear_audit_callback,
    nestguard_authorizer_set_audit_callback,
};
use nestguard::abi::authorizer::{
    nestguard_approver, nestguard_approver_approved, nestguard_approver_new, nestguard_authorizer,
    nestguard_authorizer_authorize, nestguard_authorizer_new, nestguard_object_view,
    nestguard_str_view,
};
use nestguard::abi::result::nestguard_result;
use nestguard::authz::{Entity, Entry, Location, Req, reference};
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{CommandInfo, ContainerId, ExecutorId, ExecutorInfo};
use prost::Message;

const SIZES: &[usize] = &[10, 1_000, 10_000, 100_000];
const CEDAR_SIZES: &[usize] = &[10, 1_000, 10_000];

fn list_json(name: &str, n: usize) -> String {
    let entries: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"principals":{{"values":["p{i}"]}},"users":{{"values":["u{i}"]}}}}"#))
        .collect();
    format!(r#""{name}":[{}]"#, entries.join(","))
}

fn acls(n: usize) -> String {
    format!(
        r#"{{"permissive":false,{},{},{}}}"#,
        list_json("kill_nested_containers", n),
        list_json("launch_nested_containers_under_parent_with_user", n),
        list_json("launch_nested_containers_as_user", n)
    )
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

/// An audit callback that does nothing with the record.
unsafe extern "C" fn ignore_record(_: *mut std::ffi::c_void, json: *const u8, len: usize) {
    black_box((json, len));
}

fn set_audit(auth: *mut nestguard_authorizer, on: bool) {
    let rc = if on {
        let options = nestguard_audit_options {
            sample_every: 1,
            denials_only: false,
        };
        nestguard_authorizer_set_audit_callback(
            auth,
            Some(ignore_record),
            std::ptr::null_mut(),
            &options,
        )
    } else {
        nestguard_authorizer_clear_audit_callback(auth)
    };
    assert_eq!(rc, nestguard_result::Ok);
}

struct Setup {
    auth: *mut nestguard_authorizer,
    kill: *mut nestguard_approver,
    launch: *mut nestguard_approver,
}

fn setup(n: usize) -> Setup {
    let json = acls(n);
    let mut auth = std::ptr::null_mut();
    assert_eq!(
        nestguard_authorizer_new(json.as_ptr().cast(), json.len(), true, &mut auth),
        nestguard_result::Ok
    );
    let subject = Subject {
        value: Some(format!("p{}", n / 2)),
        claims: None,
    }
    .encode_to_vec();
    let approver = |action: Action| {
        let mut a = std::ptr::null_mut();
        assert_eq!(
            nestguard_approver_new(
                auth,
                subject.as_ptr().cast(),
                subject.len(),
                action as u32,
                &mut a
            ),
            nestguard_result::Ok
        );
        a
    };
    Setup {
        auth,
        kill: approver(Action::KillNestedContainer),
        launch: approver(Action::LaunchNestedContainer),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("authz");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for &n in SIZES {
        let s = setup(n);
        let user = format!("u{}", n / 2);
        let view = nestguard_object_view {
            value: ABSENT,
            executor_user: sv(&user),
            framework_user: sv("framework-user"),
            framework_principal: ABSENT,
            command_user: sv(&user),
            container_id: sv("child"),
            root_container_id: sv("root"),
            has_executor_info: true,
            has_framework_info: true,
            has_command: false,
        };
        let launch_view = nestguard_object_view {
            has_command: true,
            ..view
        };
        let mut allowed = false;
        assert_eq!(
            nestguard_approver_approved(s.kill, &view, &mut allowed),
            nestguard_result::Ok
        );
        assert!(allowed);
        assert_eq!(
            nestguard_approver_approved(s.launch, &launch_view, &mut allowed),
            nestguard_result::Ok
        );
        assert!(allowed);
        group.bench_with_input(BenchmarkId::new("fast_path_kill", n), &n, |b, _| {
            b.iter(|| {
                let mut allowed = false;
                let rc =
                    nestguard_approver_approved(black_box(s.kill), black_box(&view), &mut allowed);
                black_box((rc, allowed))
            });
        });
        group.bench_with_input(BenchmarkId::new("fast_path_launch", n), &n, |b, _| {
            b.iter(|| {
                let mut allowed = false;
                let rc = nestguard_approver_approved(
                    black_box(s.launch),
                    black_box(&launch_view),
                    &mut allowed,
                );
                black_box((rc, allowed))
            });
        });

        let kill_request = |command_line: Option<String>, name: Option<String>| Request {
            subject: Some(Subject {
                value: Some(format!("p{}", n / 2)),
                claims: None,
            }),
            action: Some(Action::KillNestedContainer as i32),
            object: Some(Object {
                executor_info: Some(ExecutorInfo {
                    executor_id: ExecutorId {
                        value: "executor".into(),
                    },
                    command: Some(CommandInfo {
                        user: Some(user.clone()),
                        value: command_line,
                        ..CommandInfo::default()
                    }),
                    name,
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
        };
        let request = kill_request(None, None).encode_to_vec();
        // As a real agent sends it: the executor's command line and name
        // (strings no decision reads, longer than a scratch field).
        let long_request =
            kill_request(Some("x".repeat(2000)), Some("n".repeat(300))).encode_to_vec();
        assert_eq!(
            nestguard_authorizer_authorize(
                s.auth,
                request.as_ptr().cast(),
                request.len(),
                &mut allowed
            ),
            nestguard_result::Ok
        );
        assert!(allowed);
        for (name, bytes) in [
            ("protobuf_path_kill", &request),
            ("protobuf_path_kill_long_strings", &long_request),
        ] {
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| {
                    let mut allowed = false;
                    let rc = nestguard_authorizer_authorize(
                        black_box(s.auth),
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        &mut allowed,
                    );
                    black_box((rc, allowed))
                });
            });
        }

        let entries: Vec<Entry> = (0..n)
            .map(|i| Entry {
                principals: Entity::some([format!("p{i}")]),
                object: Entity::some([format!("u{i}")]),
                location: Location::default(),
            })
            .collect();
        let principal = format!("p{}", n / 2);
        assert_eq!(
            reference::first_match(
                &entries,
                false,
                Req::Some(principal.as_bytes()),
                Req::Some(user.as_bytes())
            ),
            (Some(n / 2), true)
        );
        let fast_kill = |b: &mut criterion::Bencher<'_>, _: &usize| {
            b.iter(|| {
                let mut allowed = false;
                let rc =
                    nestguard_approver_approved(black_box(s.kill), black_box(&view), &mut allowed);
                black_box((rc, allowed))
            });
        };
        let protobuf_kill = |b: &mut criterion::Bencher<'_>, _: &usize| {
            b.iter(|| {
                let mut allowed = false;
                let rc = nestguard_authorizer_authorize(
                    black_box(s.auth),
                    request.as_ptr().cast(),
                    request.len(),
                    &mut allowed,
                );
                black_box((rc, allowed))
            });
        };
        group.bench_with_input(
            BenchmarkId::new("fast_path_kill_audit_off", n),
            &n,
            fast_kill,
        );
        set_audit(s.auth, true);
        group.bench_with_input(
            BenchmarkId::new("fast_path_kill_audit_on", n),
            &n,
            fast_kill,
        );
        group.bench_with_input(
            BenchmarkId::new("protobuf_path_kill_audit_on", n),
            &n,
            protobuf_kill,
        );
        set_audit(s.auth, false);

        group.bench_with_input(BenchmarkId::new("plain_scan_kill", n), &n, |b, _| {
            b.iter(|| {
                reference::first_match(
                    black_box(&entries),
                    false,
                    Req::Some(black_box(principal.as_bytes())),
                    Req::Some(black_box(user.as_bytes())),
                )
            });
        });

        if CEDAR_SIZES.contains(&n) {
            let text: String = (0..n)
                .map(|i| format!("permit(principal == User::\"p{i}\", action == Action::\"kill\", resource == User::\"u{i}\");\n"))
                .collect();
            let policies = cedar_policy::PolicySet::from_str(&text).expect("cedar policies parse");
            let entities = cedar_policy::Entities::empty();
            let authorizer = cedar_policy::Authorizer::new();
            let uid = |s: String| cedar_policy::EntityUid::from_str(&s).expect("entity uid");
            let request = cedar_policy::Request::new(
                uid(format!("User::\"p{}\"", n / 2)),
                uid("Action::\"kill\"".to_owned()),
                uid(format!("User::\"u{}\"", n / 2)),
                cedar_policy::Context::empty(),
                None,
            )
            .expect("cedar request");
            assert_eq!(
                authorizer
                    .is_authorized(&request, &policies, &entities)
                    .decision(),
                cedar_policy::Decision::Allow
            );
            group.bench_with_input(BenchmarkId::new("cedar_kill", n), &n, |b, _| {
                b.iter(|| {
                    authorizer
                        .is_authorized(black_box(&request), &policies, &entities)
                        .decision()
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
