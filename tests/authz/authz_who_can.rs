//! `analysis::who_can` answers by classes of principals and, for launches,
//! by halves: a property against a brute force through the public entry
//! point (`Authorizer::explain_in`) on small random files, and the sizes it
//! reaches on large ones (rows and answers counted, the budget's error).

use nestguard::authz::analysis::{
    self, AnalysisError, ObjectValue, Principal, Target, WhoCan, WhoCanRow,
};
use nestguard::authz::{Authorizer, ParseMode, Policy, Source, load};
use nestguard::proto::mesos::CommandInfo;
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use proptest::prelude::*;
use serde_json::json;

use super::authz_analysis_props::{PRINCIPALS, ROLES, USERS, executor, file, to_json, with_extra};

const USER_ACTIONS: &[Action] = &[
    Action::KillNestedContainer,
    Action::WaitNestedContainer,
    Action::RemoveNestedContainer,
    Action::ViewContainer,
];

fn request(action: Action, principal: Option<&str>, object: Object) -> Request {
    Request {
        subject: principal.map(|p| Subject {
            value: Some(p.to_owned()),
            ..Subject::default()
        }),
        action: Some(action as i32),
        object: Some(object),
    }
}

fn launch_object(parent: Option<&str>, command: Option<Option<&str>>) -> Object {
    Object {
        executor_info: Some(executor(parent)),
        command_info: command.map(|u| CommandInfo {
            user: u.map(str::to_owned),
            ..CommandInfo::default()
        }),
        ..Object::default()
    }
}

fn principal(p: Option<&str>) -> Principal {
    p.map_or(Principal::Unauthenticated, |v| {
        Principal::Named(v.to_owned())
    })
}

/// The target of a concrete object value in `w`: its own row, else the
/// "any other" one (values a file does not name, and no value at all).
fn target_of(w: &WhoCan, value: Option<&str>, make: impl Fn(ObjectValue) -> Target) -> Target {
    value
        .map(|v| make(ObjectValue::Named(v.to_owned())))
        .filter(|t| w.rows.iter().any(|r| r.target == *t))
        .unwrap_or_else(|| make(ObjectValue::Other))
}

fn row<'a>(w: &'a WhoCan, target: &Target) -> &'a WhoCanRow {
    w.rows
        .iter()
        .find(|r| r.target == *target)
        .unwrap_or_else(|| panic!("no row {target:?} in {:?}", w.rows))
}

fn allowed_in(row: &WhoCanRow, p: &Principal) -> bool {
    row.verdict(p).expect("every principal is answered").allowed
}

fn pool(values: &[String]) -> Vec<Option<&str>> {
    std::iter::once(None)
        .chain(values.iter().map(|v| Some(v.as_str())))
        .collect()
}

/// The brute force: one file's authorizer and the values it is asked about.
struct Oracle<'a> {
    auth: &'a Authorizer,
    policy: &'a Policy,
    principals: &'a [Option<&'a str>],
    users: &'a [Option<&'a str>],
}

impl Oracle<'_> {
    /// The authorizer's decision for one request.
    fn allows(&self, action: Action, principal: Option<&str>, object: Object) -> bool {
        let r = request(action, principal, object);
        self.auth
            .explain_in(self.policy, &r)
            .expect("decidable")
            .allowed
    }

    fn check_user_actions(&self) -> Result<(), TestCaseError> {
        let (policy, principals, users) = (self.policy, self.principals, self.users);
        for &action in USER_ACTIONS {
            let w = analysis::who_can(policy, action, None, None).expect("small");
            for &u in users {
                let r = row(&w, &target_of(&w, u, Target::Object));
                let one =
                    u.map(|u| analysis::who_can(policy, action, Some(u), None).expect("small"));
                for &s in principals {
                    let object = Object {
                        executor_info: Some(executor(u)),
                        ..Object::default()
                    };
                    let want = self.allows(action, s, object);
                    let p = principal(s);
                    prop_assert_eq!(allowed_in(r, &p), want, "{:?} {:?} {:?}", action, s, u);
                    if let Some(one) = &one {
                        prop_assert_eq!(allowed_in(&one.rows[0], &p), want);
                    }
                }
            }
        }
        Ok(())
    }

    fn check_launches(&self) -> Result<(), TestCaseError> {
        let (policy, principals, users) = (self.policy, self.principals, self.users);
        let action = Action::LaunchNestedContainer;
        let w = analysis::who_can(policy, action, None, None).expect("small");
        let commands = std::iter::once(None).chain(users.iter().map(|u| Some(*u)));
        let commands: Vec<Option<Option<&str>>> = commands.collect();
        for &pu in users {
            let no_command = |parent| Target::Launch {
                parent,
                child: None,
            };
            let parent = row(&w, &target_of(&w, pu, no_command));
            for &cu in &commands {
                let child = cu.map(|c| row(&w, &target_of(&w, c, Target::Command)));
                let pair = match (pu, cu) {
                    (Some(pu), Some(Some(cu))) => {
                        Some(analysis::who_can(policy, action, Some(cu), Some(pu)).expect("small"))
                    }
                    _ => None,
                };
                for &s in principals {
                    let want = self.allows(action, s, launch_object(pu, cu));
                    let p = principal(s);
                    let got = allowed_in(parent, &p) && child.is_none_or(|c| allowed_in(c, &p));
                    prop_assert_eq!(got, want, "{:?} {:?} {:?}", s, pu, cu);
                    if let Some(pair) = &pair {
                        prop_assert_eq!(allowed_in(&pair.rows[0], &p), want);
                    }
                }
            }
        }
        Ok(())
    }

    fn check_roles(&self, roles: &[String]) -> Result<(), TestCaseError> {
        let (policy, principals) = (self.policy, self.principals);
        let action = Action::ReserveResources;
        for role in roles {
            let w = analysis::who_can(policy, action, Some(role), None).expect("small");
            for &s in principals {
                let object = Object {
                    value: Some(role.clone()),
                    ..Object::default()
                };
                let want = self.allows(action, s, object);
                prop_assert_eq!(
                    allowed_in(&w.rows[0], &principal(s)),
                    want,
                    "{:?} {}",
                    s,
                    role
                );
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Every (principal, object) of a brute-force domain, including values
    /// no file names, gets from who-can's rows (its own answer, else "any
    /// other principal"'s; for launches both halves) what the authorizer
    /// decides.
    #[test]
    fn who_can_by_classes_agrees_with_brute_force(
        f in file(),
        extra_principals in proptest::collection::vec("[a-c]{0,2}", 0..3),
        extra_users in proptest::collection::vec("[x-z]{1,2}", 0..3),
        extra_roles in proptest::collection::vec("(r/|r/s/|q/)?[a-t]{0,2}", 0..3),
    ) {
        let auth = Authorizer::from_json(&to_json(&f), true).expect("loads");
        let policy = auth.policy();
        let principals = with_extra(PRINCIPALS, &extra_principals);
        let users = with_extra(USERS, &extra_users);
        let (principals, users) = (pool(&principals), pool(&users));
        let oracle = Oracle { auth: &auth, policy: &policy, principals: &principals, users: &users };
        oracle.check_user_actions()?;
        oracle.check_launches()?;
        oracle.check_roles(&with_extra(ROLES, &extra_roles))?;
    }
}

fn inline(doc: &serde_json::Value) -> Policy {
    load(&Source::Inline(doc.to_string()), ParseMode::default()).expect("generated policy loads")
}

/// `n` one-entry pairs in the two launch lists: `p<i>` may manage
/// containers of executor user `u<i>` and launch them as `c<i>` (200 pairs
/// are the 27 KB file whose who-can took 1.3 GB before answers were by
/// class).
fn launch_pairs(n: usize) -> Policy {
    let entry = |i: usize, user: &str| json!({"principals": {"values": [format!("p{i}")]}, "users": {"values": [format!("{user}{i}")]}});
    inline(&json!({
        "permissive": false,
        "manage_nested_containers": (0..n).map(|i| entry(i, "u")).collect::<Vec<_>>(),
        "launch_nested_containers_as_user": (0..n).map(|i| entry(i, "c")).collect::<Vec<_>>(),
    }))
}

fn answers(w: &WhoCan) -> usize {
    w.rows.iter().map(|r| r.answers.len()).sum()
}

#[test]
fn who_can_on_many_launch_pairs_is_linear_in_the_entries() {
    let n = 2000;
    let p = launch_pairs(n);
    // Each named user (2n) and "any other user", once per half; in each row
    // the one principal its entry names, "any other principal" and
    // "unauthenticated". The product would be 2000 × 4001 × 4002 answers.
    let budget = 6 * (2 * n + 1) * 2;
    let w = analysis::who_can_within(&p, Action::LaunchNestedContainer, None, None, budget)
        .expect("within a linear budget");
    // Each half: the n values its lists name and "any other user".
    assert_eq!(w.rows.len(), 2 * (n + 1));
    assert!(answers(&w) <= 3 * w.rows.len(), "{} answers", answers(&w));
    let p7 = Principal::Named("p7".to_owned());
    let parent = row(
        &w,
        &Target::Launch {
            parent: ObjectValue::Named("u7".to_owned()),
            child: None,
        },
    );
    assert!(allowed_in(parent, &p7));
    assert!(!allowed_in(parent, &Principal::Named("p8".to_owned())));
    let child = row(&w, &Target::Command(ObjectValue::Named("c7".to_owned())));
    assert!(allowed_in(child, &p7));
    assert!(w.to_text().starts_with("LAUNCH_NESTED_CONTAINER"));

    // One executor user: each command user is a row, still linear.
    let one = analysis::who_can_within(&p, Action::LaunchNestedContainer, None, Some("u7"), budget)
        .expect("within a linear budget");
    assert_eq!(one.rows.len(), 1 + 2 * n + 1);
    assert!(answers(&one) <= 4 * one.rows.len());
    let both = row(
        &one,
        &Target::Launch {
            parent: ObjectValue::Named("u7".to_owned()),
            child: Some(ObjectValue::Named("c7".to_owned())),
        },
    );
    assert!(allowed_in(both, &p7));
}

#[test]
fn who_can_past_its_budget_fails_before_deciding_and_says_what_to_ask() {
    // Every principal is named by an entry matching every user, and every
    // user is named: rows × principals answers, however they are grouped.
    let n = 150;
    let kill = (0..n)
        .map(|i| json!({"principals": {"values": [format!("p{i}")]}, "users": {"type": "ANY"}}))
        .chain((0..n).map(
            |i| json!({"principals": {"type": "ANY"}, "users": {"values": [format!("u{i}")]}}),
        ))
        .collect::<Vec<_>>();
    let p = inline(&json!({"permissive": false, "kill_nested_containers": kill}));
    let budget = 10_000;
    let err = analysis::who_can_within(&p, Action::KillNestedContainer, None, None, budget)
        .expect_err("(n + 1) × (n + 2) answers exceed the budget");
    assert!(
        matches!(
            err,
            AnalysisError::OverBudget {
                budget: 10_000,
                targets: 151,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("more than 10000 answers") && text.contains("--user"),
        "{text}"
    );
    // One user is n + 2 answers.
    let one = analysis::who_can_within(&p, Action::KillNestedContainer, Some("u3"), None, budget)
        .expect("one user is within the budget");
    assert_eq!(answers(&one), n + 2);
    assert_eq!(
        analysis::WHO_CAN_BUDGET,
        1_000_000,
        "the budget acls/README.md states"
    );
}
