//! Property test: the compiled engine decides exactly like a plain
//! first-match transcription of Mesos' rules (mesos-facts §3.3–§3.6) on
//! random ACL sets (SOME/ANY/NONE entities, SOME without values, unset
//! users, claims-only subjects) and random requests.

use nestguard::authz::reference;
use nestguard::authz::{Authorizer, Entity, EntityType, Entry, List, Location, ObjectView, Req};
use nestguard::proto::mesos::authorization::{Action, Subject};
use nestguard::proto::mesos::{Label, Labels};
use proptest::prelude::*;
use serde_json::{Value, json};

const PRINCIPALS: &[&str] = &["a", "b", "c", ""];
const USERS: &[&str] = &["x", "y", "z"];

fn entity(pool: &'static [&'static str]) -> impl Strategy<Value = Entity> {
    prop_oneof![
        Just(Entity::any()),
        Just(Entity::none()),
        proptest::sample::subsequence(pool, 0..=pool.len()).prop_map(Entity::some),
    ]
}

fn entries() -> impl Strategy<Value = Vec<Entry>> {
    proptest::collection::vec(
        (entity(PRINCIPALS), entity(USERS)).prop_map(|(principals, object)| Entry {
            principals,
            object,
            location: Location::default(),
        }),
        0..8,
    )
}

const LISTS: &[List] = &[
    List::KillNestedContainers,
    List::LaunchNestedContainersUnderParentWithUser,
    List::LaunchNestedContainersAsUser,
    List::ViewContainers,
    List::ManageNestedContainers,
];

fn entity_json(e: &Entity) -> Value {
    match e.kind {
        EntityType::Any => json!({"type": "ANY"}),
        EntityType::None => json!({"type": "NONE"}),
        EntityType::Some => json!({"values": e.values}),
    }
}

fn acls_json(permissive: bool, lists: &[Vec<Entry>]) -> String {
    let mut v = json!({"permissive": permissive});
    for (list, entries) in LISTS.iter().zip(lists) {
        v[list.spec().json] = entries
            .iter()
            .map(|e| json!({"principals": entity_json(&e.principals), "users": entity_json(&e.object)}))
            .collect();
    }
    v.to_string()
}

#[derive(Debug, Clone)]
enum Subj {
    Anonymous,
    Principal(&'static str),
    Claims(Vec<(&'static str, &'static str)>),
}

fn subject() -> impl Strategy<Value = Subj> {
    prop_oneof![
        Just(Subj::Anonymous),
        proptest::sample::select(PRINCIPALS).prop_map(Subj::Principal),
        proptest::collection::vec(
            (
                proptest::sample::select(&["cid", "cid_prefix", "sub"][..]),
                proptest::sample::select(&["r1", "r2", "x"][..])
            ),
            0..3
        )
        .prop_map(Subj::Claims),
    ]
}

fn opt_user() -> impl Strategy<Value = Option<&'static str>> {
    proptest::option::of(proptest::sample::select(USERS))
}

#[derive(Debug, Clone)]
struct Obj {
    executor: Option<Option<&'static str>>,
    framework: Option<&'static str>,
    command: Option<Option<&'static str>>,
    container: Option<(&'static str, &'static str)>,
}

fn object() -> impl Strategy<Value = Option<Obj>> {
    proptest::option::of(
        (
            proptest::option::of(opt_user()),
            opt_user(),
            proptest::option::of(opt_user()),
            proptest::option::of((
                proptest::sample::select(&["r1", "r2", "x"][..]),
                proptest::sample::select(&["x", "y", "c"][..]),
            )),
        )
            .prop_map(|(executor, framework, command, container)| Obj {
                executor,
                framework,
                command,
                container,
            }),
    )
}

/// Plain transcription of §3: returns the decision.
fn oracle(
    doc: &[Vec<Entry>],
    permissive: bool,
    subj: &Subj,
    action: Action,
    obj: Option<&Obj>,
) -> bool {
    let list = |l: List| -> Vec<Entry> {
        let i = LISTS.iter().position(|x| *x == l).unwrap();
        let mut v = doc[i].clone();
        if l.receives_manage() {
            v.extend(doc[4].iter().cloned());
        }
        v
    };
    let root_leaf = |o: &Obj| o.container;
    let s = match subj {
        Subj::Claims(claims) => {
            let executor_actions = [Action::LaunchNestedContainer, Action::KillNestedContainer];
            if executor_actions.contains(&action) {
                let Some((_, cid)) = claims.iter().find(|(k, _)| *k == "cid") else {
                    return false;
                };
                // Root = first part, the container is root.leaf (or just root when leaf == "c"? no: always nested).
                let owns = obj
                    .and_then(root_leaf)
                    .is_some_and(|(root, _)| root == *cid);
                // nestguard's token-user rule (stricter than Mesos): a launch
                // runs as the executor's own user unless an ACL allows the
                // framework's principal, which the borrowed view never carries.
                let user_ok = action != Action::LaunchNestedContainer
                    || obj.is_none_or(|o| match o.command.flatten() {
                        None => true,
                        Some(u) => o.executor.flatten().or(o.framework) == Some(u),
                    });
                return owns && user_ok;
            }
            return false;
        }
        Subj::Anonymous => Req::Any,
        Subj::Principal(p) => Req::Some(p.as_bytes()),
    };
    let exec_user = |o: &Obj| o.executor.flatten();
    let fw_user = |o: &Obj| o.framework;
    let parent_obj = |o: Option<&Obj>| -> Req<'static> {
        match o {
            None => Req::Any,
            Some(o) => match exec_user(o).or(fw_user(o)) {
                Some(u) => Req::Some(u.as_bytes()),
                None => Req::Any,
            },
        }
    };
    match action {
        Action::KillNestedContainer => {
            let o = match obj {
                None => Req::Any,
                Some(o) => match exec_user(o)
                    .or(fw_user(o))
                    .or(o.container.map(|(_, leaf)| leaf))
                {
                    Some(u) => Req::Some(u.as_bytes()),
                    None => Req::Any,
                },
            };
            reference::first_match(&list(List::KillNestedContainers), permissive, s, o).1
        }
        Action::ViewContainer => {
            reference::first_match(&list(List::ViewContainers), permissive, s, parent_obj(obj)).1
        }
        Action::LaunchNestedContainer => {
            let parent = reference::first_match(
                &list(List::LaunchNestedContainersUnderParentWithUser),
                permissive,
                s,
                parent_obj(obj),
            )
            .1;
            match obj.and_then(|o| o.command) {
                None => parent,
                Some(cmd_user) => {
                    let child_obj = cmd_user.map_or(Req::Any, |u| Req::Some(u.as_bytes()));
                    parent
                        && reference::first_match(
                            &list(List::LaunchNestedContainersAsUser),
                            permissive,
                            s,
                            child_obj,
                        )
                        .1
                }
            }
        }
        _ => unreachable!(),
    }
}

fn proto_subject(s: &Subj) -> Option<Subject> {
    match s {
        Subj::Anonymous => None,
        Subj::Principal(p) => Some(Subject {
            value: Some((*p).to_owned()),
            claims: None,
        }),
        Subj::Claims(c) => Some(Subject {
            value: None,
            claims: Some(Labels {
                labels: c
                    .iter()
                    .map(|(k, v)| Label {
                        key: (*k).to_owned(),
                        value: Some((*v).to_owned()),
                    })
                    .collect(),
            }),
        }),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn compiled_equals_first_match(
        permissive in any::<bool>(),
        lists in proptest::collection::vec(entries(), LISTS.len()),
        requests in proptest::collection::vec(
            (subject(), proptest::sample::select(&[Action::KillNestedContainer, Action::ViewContainer, Action::LaunchNestedContainer][..]), object()),
            1..12,
        ),
    ) {
        let auth = Authorizer::from_json(&acls_json(permissive, &lists), false).unwrap();
        for (subj, action, obj) in &requests {
            let want = oracle(&lists, permissive, subj, *action, obj.as_ref());
            let approver = auth.approver(proto_subject(subj).as_ref(), *action);
            let view = obj.as_ref().map(|o| ObjectView {
                has_executor_info: o.executor.is_some(),
                executor_user: o.executor.flatten().map(str::as_bytes),
                has_framework_info: o.framework.is_some(),
                framework_user: o.framework.map(str::as_bytes),
                has_command: o.command.is_some(),
                command_user: o.command.flatten().map(str::as_bytes),
                container_id: o.container.map(|(_, leaf)| leaf.as_bytes()),
                root_container_id: o.container.map(|(root, _)| root.as_bytes()),
                // No principal: an executor token launching as another
                // user is refused, as the oracle refuses it.
                ..ObjectView::default()
            });
            let got = approver.approved(view.as_ref()).unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(got, want, "subject {:?} action {:?} object {:?}", subj, action, obj);
        }
    }

    #[test]
    fn compiled_index_equals_reference_index(
        permissive in any::<bool>(),
        kill in entries(),
        manage in entries(),
        s in proptest::option::of(proptest::sample::select(PRINCIPALS)),
        o in proptest::option::of(proptest::sample::select(USERS)),
    ) {
        let lists = vec![kill.clone(), vec![], vec![], vec![], manage.clone()];
        let auth = Authorizer::from_json(&acls_json(permissive, &lists), false).unwrap();
        let policy = auth.policy();
        let sr = s.map_or(Req::Any, |s| Req::Some(s.as_bytes()));
        let or = o.map_or(Req::Any, |o| Req::Some(o.as_bytes()));
        let all: Vec<Entry> = kill.iter().chain(manage.iter()).cloned().collect();
        let (want_index, want) = reference::first_match(&all, permissive, sr, or);
        let got = nestguard::authz::evaluate::decide_list(&policy, List::KillNestedContainers, sr, or);
        prop_assert_eq!(got.allowed, want);
        let got_index = got.entry.map(|e| match e.origin {
            List::ManageNestedContainers => kill.len() + e.index as usize,
            _ => e.index as usize,
        });
        prop_assert_eq!(got_index, want_index);
    }
}
