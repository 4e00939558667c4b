//! Property test: `analysis::diff` is exact. For random pairs of ACL files
//! (often equivalent: identical, or with entries appended that may be
//! shadowed), the diff is empty iff a brute force finds no request the two
//! decide differently. The brute force goes through the public entry point
//! (`Authorizer::explain_in` with protobuf requests), over every named value,
//! extra random principals, users and roles that neither file names, and
//! requests without a principal or without an object.

use nestguard::authz::analysis;
use nestguard::authz::{Authorizer, Entity, EntityType, Entry, List, Location, Policy};
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{CommandInfo, ExecutorId, ExecutorInfo};
use proptest::prelude::*;
use serde_json::{Value, json};

pub(super) const PRINCIPALS: &[&str] = &["a", "b", ""];
pub(super) const USERS: &[&str] = &["x", "y"];
pub(super) const ROLES: &[&str] = &["r/s", "r/%", "r/s/%"];

/// The lists the files are made of, with the value pool of their objects.
const LISTS: &[(List, &[&str])] = &[
    (List::KillNestedContainers, USERS),
    (List::LaunchNestedContainersUnderParentWithUser, USERS),
    (List::LaunchNestedContainersAsUser, USERS),
    (List::ViewContainers, USERS),
    (List::ManageNestedContainers, USERS),
    (List::ReserveResources, ROLES),
];

/// Actions whose object carries an executor's user (the other actions of
/// the files' lists have their own object shapes below).
const USER_ACTIONS: &[Action] = &[
    Action::KillNestedContainer,
    Action::WaitNestedContainer,
    Action::RemoveNestedContainer,
    Action::ViewContainer,
];

fn entity(pool: &'static [&'static str]) -> impl Strategy<Value = Entity> {
    prop_oneof![
        Just(Entity::any()),
        Just(Entity::none()),
        proptest::sample::subsequence(pool, 1..=pool.len()).prop_map(Entity::some),
    ]
}

#[derive(Debug, Clone)]
pub(super) struct File {
    permissive: bool,
    lists: Vec<Vec<Entry>>,
}

pub(super) fn file() -> impl Strategy<Value = File> {
    let lists: Vec<_> = LISTS
        .iter()
        .map(|(_, pool)| {
            proptest::collection::vec(
                (entity(PRINCIPALS), entity(pool)).prop_map(|(principals, object)| Entry {
                    principals,
                    object,
                    location: Location::default(),
                }),
                0..3,
            )
        })
        .collect();
    (any::<bool>(), lists).prop_map(|(permissive, lists)| File { permissive, lists })
}

/// Pairs: identical, the second with the first's lists appended (often
/// shadowed, so equivalent), a permissive flip, one list replaced (small
/// differences, often at a single point of the domain), or independent.
fn pair() -> impl Strategy<Value = (File, File)> {
    (file(), file(), 0..8u8, 0..LISTS.len()).prop_map(|(a, b, mode, list)| match mode {
        0 => (a.clone(), a),
        1 => {
            let mut c = a.clone();
            for (l, extra) in c.lists.iter_mut().zip(&b.lists) {
                l.extend(extra.iter().cloned());
            }
            (a, c)
        }
        2 => {
            let mut c = a.clone();
            c.permissive = !c.permissive;
            (a, c)
        }
        3..=6 => {
            let mut c = a.clone();
            c.lists[list] = b.lists[list].clone();
            (a, c)
        }
        _ => (a, b),
    })
}

fn entity_json(e: &Entity) -> Value {
    match e.kind {
        EntityType::Any => json!({"type": "ANY"}),
        EntityType::None => json!({"type": "NONE"}),
        EntityType::Some => json!({"values": e.values}),
    }
}

pub(super) fn to_json(f: &File) -> String {
    let mut v = json!({"permissive": f.permissive});
    for ((list, _), entries) in LISTS.iter().zip(&f.lists) {
        v[list.spec().json] = entries
            .iter()
            .map(|e| {
                json!({"principals": entity_json(&e.principals), list.spec().object: entity_json(&e.object)})
            })
            .collect();
    }
    v.to_string()
}

pub(super) fn executor(user: Option<&str>) -> ExecutorInfo {
    ExecutorInfo {
        executor_id: ExecutorId {
            value: "e".to_owned(),
        },
        command: Some(CommandInfo {
            user: user.map(str::to_owned),
            ..CommandInfo::default()
        }),
        ..ExecutorInfo::default()
    }
}

/// Every request of the brute-force domain for one action.
fn requests(
    action: Action,
    principals: &[String],
    users: &[String],
    roles: &[String],
) -> Vec<Request> {
    let subjects = std::iter::once(None).chain(principals.iter().map(|p| {
        Some(Subject {
            value: Some(p.clone()),
            ..Subject::default()
        })
    }));
    let user_options: Vec<Option<&str>> = std::iter::once(None)
        .chain(users.iter().map(|u| Some(u.as_str())))
        .collect();
    let mut objects: Vec<Option<Object>> = vec![None];
    match action {
        Action::ReserveResources => objects.extend(roles.iter().map(|r| {
            Some(Object {
                value: Some(r.clone()),
                ..Object::default()
            })
        })),
        Action::LaunchNestedContainer => {
            for parent in &user_options {
                // No command, a command without a user, a command with one.
                let commands = std::iter::once(None).chain(user_options.iter().map(Some));
                for command in commands {
                    objects.push(Some(Object {
                        executor_info: Some(executor(*parent)),
                        command_info: command.map(|u| CommandInfo {
                            user: u.map(str::to_owned),
                            ..CommandInfo::default()
                        }),
                        ..Object::default()
                    }));
                }
            }
        }
        a if USER_ACTIONS.contains(&a) => objects.extend(user_options.iter().map(|u| {
            Some(Object {
                executor_info: Some(executor(*u)),
                ..Object::default()
            })
        })),
        // Every other action consults lists the files leave empty: only
        // `permissive` decides, and a request without an object asks it.
        _ => {}
    }
    let mut out = Vec::new();
    for s in subjects {
        for o in &objects {
            out.push(Request {
                subject: s.clone(),
                action: Some(action as i32),
                object: o.clone(),
            });
        }
    }
    out
}

fn brute_force_differs(
    old: (&Authorizer, &Policy),
    new: (&Authorizer, &Policy),
    principals: &[String],
    users: &[String],
    roles: &[String],
) -> bool {
    analysis::domain::actions().into_iter().any(|action| {
        requests(action, principals, users, roles).iter().any(|r| {
            let a = old
                .0
                .explain_in(old.1, r)
                .expect("decidable request")
                .allowed;
            let b = new
                .0
                .explain_in(new.1, r)
                .expect("decidable request")
                .allowed;
            a != b
        })
    })
}

pub(super) fn with_extra(pool: &[&str], extra: &[String]) -> Vec<String> {
    let mut v: Vec<String> = pool.iter().map(|s| (*s).to_owned()).collect();
    v.extend(extra.iter().cloned());
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn diff_is_empty_iff_brute_force_finds_no_difference(
        (old, new) in pair(),
        extra_principals in proptest::collection::vec("[a-c]{0,2}", 0..3),
        extra_users in proptest::collection::vec("[x-z]{1,2}", 0..3),
        extra_roles in proptest::collection::vec("(r/|r/s/|q/)?[a-t]{0,2}", 0..4),
    ) {
        let old_auth = Authorizer::from_json(&to_json(&old), true).expect("old loads");
        let new_auth = Authorizer::from_json(&to_json(&new), true).expect("new loads");
        let (old_policy, new_policy) = (old_auth.policy(), new_auth.policy());
        let d = analysis::diff(&old_policy, &new_policy);
        let differs = brute_force_differs(
            (&old_auth, &old_policy),
            (&new_auth, &new_policy),
            &with_extra(PRINCIPALS, &extra_principals),
            &with_extra(USERS, &extra_users),
            &with_extra(ROLES, &extra_roles),
        );
        prop_assert_eq!(!d.is_empty(), differs, "diff:\n{}", d.to_text());
        // Each reported change is a real difference at its point.
        for c in &d.changes {
            prop_assert_ne!(c.old.allowed, c.new.allowed);
        }
    }
}
