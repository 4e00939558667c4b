//! Property test: a serialized request read in place (`Authorizer::
//! authorized_wire`, the protobuf path of `nestguard_authorizer_authorize`)
//! decides exactly as the request decoded by prost, on random requests
//! written field by field: random field orders, fields and whole messages
//! repeated (later scalars win, messages merge), unknown fields and groups,
//! wrong wire types, absent vs empty vs non-UTF-8 strings, container ids
//! nested a few levels and merged, claims, actions the reader declines, and
//! random byte mutations of all of it. When the reader declines, the caller
//! decodes with prost, so only its answers need checking; a second test
//! checks it does answer the shapes a Mesos agent sends.

use std::sync::OnceLock;

use nestguard::abi::authorizer::{
    nestguard_authorizer, nestguard_authorizer_authorize, nestguard_authorizer_new,
};
use nestguard::abi::error::nestguard_error_message;
use nestguard::abi::result::nestguard_result;
use nestguard::authz::wire::read_request;
use nestguard::authz::{Authorizer, ObjectView};
use nestguard::proto::mesos::authorization::{Action, Request};
use nestguard::proto::mesos::{Label, Labels};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use prost::Message;
use prost::encoding::encode_varint;

const ACLS: &str = r#"{
  "kill_nested_containers": [
    {"principals": {"values": ["a"]}, "users": {"values": ["x", "root"]}},
    {"principals": {"values": ["b"]}, "users": {"type": "ANY"}},
    {"principals": {"type": "ANY"}, "users": {"values": ["c1"]}},
    {"principals": {"values": ["a"]}, "users": {"type": "NONE"}}
  ],
  "wait_nested_containers": [{"principals": {"values": ["a", ""]}, "users": {"values": ["", "c2"]}}],
  "remove_nested_containers": [{"principals": {"type": "ANY"}, "users": {"values": ["y"]}}],
  "view_containers": [{"principals": {"values": ["a"]}, "users": {"values": ["x", "y"]}}],
  "access_sandboxes": [{"principals": {"values": ["b"]}, "users": {"values": ["", "x"]}}],
  "view_frameworks": [{"principals": {"values": ["a"]}, "users": {"values": ["y"]}}],
  "view_executors": [{"principals": {"values": ["a", "b"]}, "users": {"values": ["x"]}}],
  "get_endpoints": [{"principals": {"values": ["a"]}, "paths": {"values": ["/monitor/statistics"]}}],
  "launch_nested_containers_under_parent_with_user": [
    {"principals": {"values": ["a"]}, "users": {"values": ["x", "y"]}},
    {"principals": {"values": ["b"]}, "users": {"type": "ANY"}}
  ],
  "launch_nested_containers_as_user": [{"principals": {"values": ["a", "b"]}, "users": {"values": ["x", "root"]}}],
  "launch_nested_container_sessions_as_user": [{"principals": {"type": "ANY"}, "users": {"values": ["y"]}}],
  "run_tasks": [{"principals": {"values": ["a"]}, "users": {"values": ["x"]}}]
}"#;

fn authorizer(permissive: bool) -> &'static Authorizer {
    static STRICT: OnceLock<Authorizer> = OnceLock::new();
    static PERMISSIVE: OnceLock<Authorizer> = OnceLock::new();
    let cell = if permissive { &PERMISSIVE } else { &STRICT };
    cell.get_or_init(|| {
        let text = ACLS.replacen('{', &format!("{{\"permissive\": {permissive},"), 1);
        Authorizer::from_json(&text, true).expect("the test's ACLs load")
    })
}

fn varint(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    encode_varint(v, &mut b);
    b
}

fn key(tag: u32, wire_type: u8) -> Vec<u8> {
    varint(u64::from(tag << 3 | u32::from(wire_type)))
}

fn delimited(tag: u32, payload: &[u8]) -> Vec<u8> {
    [key(tag, 2), varint(payload.len() as u64), payload.to_vec()].concat()
}

fn number(tag: u32, v: u64) -> Vec<u8> {
    [key(tag, 0), varint(v)].concat()
}

const TEXTS: &[&[u8]] = &[
    b"a",
    b"b",
    b"x",
    b"y",
    b"root",
    b"c1",
    b"c2",
    b"",
    b"/monitor/statistics",
];

/// A string value, now and then not UTF-8, now and then long (an
/// executor's command line: read in place beyond the scratch bound).
fn text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        30 => proptest::sample::select(TEXTS).prop_map(<[u8]>::to_vec),
        1 => Just(b"\xff".to_vec()),
        2 => (129usize..3000).prop_map(|n| vec![b'x'; n]),
        1 => (129usize..600).prop_map(|n| [vec![b'y'; n], b"\xc3".to_vec()].concat()),
    ]
}

/// Unknown fields of every wire type, a group among them, and a field
/// number no message of the path uses.
fn unknown() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<u64>().prop_map(|v| number(99, v)),
        text().prop_map(|t| delimited(98, &t)),
        Just([key(97, 5), vec![1, 2, 3, 4]].concat()),
        Just([key(96, 1), vec![0; 8]].concat()),
        Just([key(95, 3), number(1, 7), key(95, 4)].concat()),
    ]
}

/// A message's fields from `field`, 0 to 4 of them, in random order with
/// repeats, concatenated.
fn message_of(field: impl Strategy<Value = Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(field, 0..5).prop_map(|v| v.concat())
}

fn command() -> impl Strategy<Value = Vec<u8>> {
    message_of(prop_oneof![
        12 => text().prop_map(|t| delimited(5, &t)),
        3 => text().prop_map(|t| delimited(3, &t)),
        3 => any::<bool>().prop_map(|b| number(6, u64::from(b))),
        3 => text().prop_map(|t| delimited(7, &t)),
        2 => unknown(),
        1 => Just(number(5, 1)),
    ])
}

fn executor() -> impl Strategy<Value = Vec<u8>> {
    message_of(prop_oneof![
        6 => message_of(prop_oneof![6 => text().prop_map(|t| delimited(1, &t)), 1 => unknown()])
            .prop_map(|id| delimited(1, &id)),
        12 => command().prop_map(|c| delimited(7, &c)),
        3 => text().prop_map(|t| delimited(9, &t)),
        2 => unknown(),
        1 => Just(number(7, 3)),
    ])
}

fn framework() -> impl Strategy<Value = Vec<u8>> {
    message_of(prop_oneof![
        6 => text().prop_map(|t| delimited(1, &t)),
        6 => text().prop_map(|t| delimited(8, &t)),
        2 => text().prop_map(|t| delimited(2, &t)),
        2 => text().prop_map(|t| delimited(12, &t)),
        2 => any::<bool>().prop_map(|b| number(5, u64::from(b))),
        1 => unknown(),
    ])
}

/// A container id with up to four levels of parents, each level's value
/// and parent in either order, sometimes with no value or an unknown field.
fn container() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        (
            proptest::option::of(text()),
            any::<bool>(),
            proptest::option::of(unknown()),
        ),
        1..5,
    )
    .prop_map(|levels| {
        let mut inner: Option<Vec<u8>> = None;
        for (value, parent_first, extra) in levels.into_iter().rev() {
            let value = value.map(|v| delimited(1, &v)).unwrap_or_default();
            let parent = inner.map(|p| delimited(2, &p)).unwrap_or_default();
            let mut level = if parent_first {
                [parent, value].concat()
            } else {
                [value, parent].concat()
            };
            level.extend(extra.unwrap_or_default());
            inner = Some(level);
        }
        inner.unwrap_or_default()
    })
}

fn object() -> impl Strategy<Value = Vec<u8>> {
    message_of(prop_oneof![
        4 => text().prop_map(|t| delimited(1, &t)),
        6 => framework().prop_map(|f| delimited(2, &f)),
        8 => executor().prop_map(|e| delimited(5, &e)),
        6 => command().prop_map(|c| delimited(9, &c)),
        8 => container().prop_map(|c| delimited(10, &c)),
        1 => Just(delimited(11, b"")),
        1 => unknown(),
    ])
}

fn claims() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        (
            proptest::sample::select(&["cid", "cid_prefix", "sub"][..]),
            proptest::sample::select(&["c1", "c", ""][..]),
        ),
        0..3,
    )
    .prop_map(|claims| {
        Labels {
            labels: claims
                .into_iter()
                .map(|(k, v)| Label {
                    key: k.into(),
                    value: Some(v.into()),
                })
                .collect(),
        }
        .encode_to_vec()
    })
}

fn subject() -> impl Strategy<Value = Vec<u8>> {
    message_of(prop_oneof![
        10 => text().prop_map(|t| delimited(1, &t)),
        2 => claims().prop_map(|c| delimited(2, &c)),
        1 => unknown(),
    ])
}

fn action() -> impl Strategy<Value = u64> {
    use Action as A;
    prop_oneof![
        12 => proptest::sample::select(
            &[
                A::KillNestedContainer,
                A::WaitNestedContainer,
                A::RemoveNestedContainer,
                A::LaunchNestedContainer,
                A::LaunchNestedContainerSession,
                A::ViewContainer,
                A::AccessSandbox,
                A::ViewFramework,
                A::ViewExecutor,
                A::GetEndpointWithPath,
                A::AttachContainerInput,
                A::RunTask,
                A::ViewTask,
                A::RegisterFramework,
                A::Unknown,
            ][..]
        )
        .prop_map(|a| a as i32 as u64),
        1 => any::<u64>(),
    ]
}

/// A whole request: its three fields (and the odd unknown one) in random
/// order, each possibly repeated.
fn request() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            6 => subject().prop_map(|s| delimited(1, &s)),
            6 => action().prop_map(|a| number(2, a)),
            8 => object().prop_map(|o| delimited(3, &o)),
            1 => unknown(),
        ],
        1..6,
    )
    .prop_map(|v| v.concat())
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, u8),
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        if bytes.is_empty() {
            break;
        }
        match *m {
            Mutation::Flip(i, x) => {
                let i = i % bytes.len();
                bytes[i] ^= x;
            }
            Mutation::Truncate(i) => bytes.truncate(i % bytes.len()),
            Mutation::Insert(i, x) => bytes.insert(i % bytes.len(), x),
        }
    }
    bytes
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, x)| Mutation::Flip(i, x)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, x)| Mutation::Insert(i, x)),
    ]
}

type Fields<'a> = (
    Option<&'a [u8]>,
    (bool, Option<&'a [u8]>),
    (bool, Option<&'a [u8]>, Option<&'a [u8]>),
    (bool, Option<&'a [u8]>),
    (Option<&'a [u8]>, Option<&'a [u8]>),
);

/// Every named field of a view (what the rules read).
fn fields<'a>(v: &ObjectView<'a>) -> Fields<'a> {
    (
        v.value,
        (v.has_executor_info, v.executor_user),
        (
            v.has_framework_info,
            v.framework_user,
            v.framework_principal,
        ),
        (v.has_command, v.command_user),
        (v.container_id, v.root_container_id),
    )
}

/// The prost path: the request decoded in full, then decided.
fn decoded(auth: &Authorizer, bytes: &[u8]) -> Result<Result<bool, String>, String> {
    let request = Request::decode(bytes).map_err(|e| e.to_string())?;
    Ok(auth.authorized(&request).map_err(|e| e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn read_in_place_decides_as_prost(
        bytes in request(),
        mutations in proptest::collection::vec(mutation(), 0..3),
        mutated in any::<bool>(),
        permissive in any::<bool>(),
    ) {
        let bytes = if mutated { mutate(bytes, &mutations) } else { bytes };
        if let Some(read) = read_request(&bytes) {
            // What the reader read is what prost decodes, field by field.
            let request = Request::decode(&bytes[..]);
            prop_assert!(request.is_ok(), "read in place, but prost refuses: {:?}", request);
            let request = request.unwrap();
            prop_assert_eq!(Some(read.action as i32), request.action);
            prop_assert_eq!(
                read.principal,
                request.subject.as_ref().and_then(|s| s.value.as_deref()).map(str::as_bytes)
            );
            let lowered = request.object.as_ref().map(|o| ObjectView::lower(read.action, o));
            prop_assert_eq!(read.object.map(|v| fields(&v)), lowered.map(|v| fields(&v)));
        }
        let auth = authorizer(permissive);
        if let Some(read) = auth.authorized_wire(&bytes) {
            let read = read.map_err(|e| e.to_string());
            prop_assert_eq!(Ok(read), decoded(auth, &bytes));
        }
    }
}

/// The property is not vacuous: the generator's requests are read in place
/// often (and declined often, on the shapes and damage it also makes).
#[test]
fn generated_requests_reach_the_reader() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = request();
    let (mut read, mut allowed, total) = (0, 0, 2000);
    for _ in 0..total {
        let bytes = strategy.new_tree(&mut runner).unwrap().current();
        if let Some(decided) = authorizer(false).authorized_wire(&bytes) {
            read += 1;
            allowed += usize::from(decided == Ok(true));
        }
    }
    assert!(read * 100 >= total * 15, "{read} of {total} read in place");
    assert!(read * 10 <= total * 9, "{read} of {total} read in place");
    assert!(allowed > 0, "none of {read} allowed");
}

fn served(bytes: &[u8]) -> bool {
    authorizer(false).authorized_wire(bytes).is_some()
}

/// The shapes a Mesos agent sends are read in place, not declined: a kill
/// with the executor, framework and a nested container id, a launch with a
/// command, fields repeated and out of order, unknown fields inside.
#[test]
fn agent_shapes_are_read_in_place() {
    let container = delimited(
        10,
        &[delimited(1, b"c2"), delimited(2, &delimited(1, b"c1"))].concat(),
    );
    let executor = delimited(
        5,
        &[
            delimited(1, &delimited(1, b"e")),
            delimited(7, &[delimited(3, b"/bin/x"), delimited(5, b"x")].concat()),
            delimited(9, b"name"),
            number(99, 1),
        ]
        .concat(),
    );
    let framework = delimited(
        2,
        &[
            delimited(1, b"y"),
            delimited(2, b"f"),
            delimited(8, b"a"),
            number(5, 1),
        ]
        .concat(),
    );
    let object = [executor.clone(), framework, container.clone()].concat();
    let kill = [
        delimited(1, &delimited(1, b"a")),
        number(2, Action::KillNestedContainer as u64),
        delimited(3, &object),
    ]
    .concat();
    assert!(served(&kill));
    assert_eq!(authorizer(false).authorized_wire(&kill), Some(Ok(true)));
    let launch = [
        delimited(
            3,
            &[delimited(9, &delimited(5, b"root")), executor].concat(),
        ),
        number(2, Action::LaunchNestedContainer as u64),
        delimited(1, &delimited(1, b"a")),
        delimited(3, &container),
    ]
    .concat();
    assert!(served(&launch));
    let read = authorizer(false)
        .authorized_wire(&launch)
        .map(|r| r.map_err(|e| e.to_string()));
    assert_eq!(read, decoded(authorizer(false), &launch).ok());
    // Long strings and fields these protos do not know, as a real agent
    // sends them: still read in place, with prost's answer.
    let long = [
        delimited(1, &delimited(1, b"a")),
        number(2, Action::KillNestedContainer as u64),
        delimited(
            3,
            &[
                delimited(
                    5,
                    &[
                        delimited(1, &delimited(1, b"e")),
                        delimited(7, &delimited(3, &[b'x'; 2000])),
                        delimited(90, &[7; 1000]),
                    ]
                    .concat(),
                ),
                delimited(
                    2,
                    &[delimited(1, b"y"), delimited(2, &[b'n'; 500])].concat(),
                ),
                container.clone(),
            ]
            .concat(),
        ),
    ]
    .concat();
    assert!(served(&long));
    let read = authorizer(false)
        .authorized_wire(&long)
        .map(|r| r.map_err(|e| e.to_string()));
    assert_eq!(read, decoded(authorizer(false), &long).ok());
    // A long command line that is not UTF-8 is prost's to refuse.
    let bad = [
        delimited(1, &delimited(1, b"a")),
        number(2, Action::KillNestedContainer as u64),
        delimited(3, &delimited(9, &delimited(3, &[0xff; 300]))),
    ]
    .concat();
    assert!(!served(&bad));
    assert!(decoded(authorizer(false), &bad).is_err());
    // Declined: a subject with claims only, a task, a malformed tail.
    assert!(!served(
        &[delimited(1, &delimited(2, b"")), number(2, 25)].concat()
    ));
    assert!(!served(
        &[number(2, 2), delimited(3, &delimited(4, b""))].concat()
    ));
    assert!(!served(&[kill.clone(), vec![0x0a, 0x05]].concat()));
}

/// Through the C ABI: the same decision on both paths, and a malformed
/// request still names the argument.
#[test]
fn abi_answers_alike_and_names_the_argument() {
    let mut auth: *mut nestguard_authorizer = std::ptr::null_mut();
    let text = ACLS.replacen('{', "{\"permissive\": false,", 1);
    assert_eq!(
        nestguard_authorizer_new(text.as_ptr().cast(), text.len(), true, &mut auth),
        nestguard_result::Ok
    );
    let kill = [
        delimited(1, &delimited(1, b"b")),
        number(2, Action::KillNestedContainer as u64),
        delimited(3, &delimited(10, &delimited(1, b"c9"))),
    ]
    .concat();
    let mut allowed = false;
    assert_eq!(
        nestguard_authorizer_authorize(auth, kill.as_ptr(), kill.len(), &mut allowed),
        nestguard_result::Ok
    );
    assert!(allowed);
    let bad = [kill, vec![0x1a, 0x7f]].concat();
    assert_eq!(
        nestguard_authorizer_authorize(auth, bad.as_ptr(), bad.len(), &mut allowed),
        nestguard_result::ProtobufDecode
    );
    let mut buf = vec![0u8; 4096];
    let mut n = 0usize;
    assert_eq!(
        nestguard_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut n),
        nestguard_result::Ok
    );
    let message = String::from_utf8_lossy(&buf[..n - 1]);
    assert!(
        message.contains("argument `request` does not decode as mesos.authorization.Request"),
        "{message}"
    );
    nestguard::abi::authorizer::nestguard_authorizer_free(auth);
}
