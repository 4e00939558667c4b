//! Policy analysis (`authz::analysis`): who-can, can, diff and test cases on
//! small policies whose answers are known, including launches, roles under
//! `x/%` prefixes, the permissive default and located errors.

use nestguard::authz::analysis::{
    self, AnalysisError, Decider, Domain, ObjectValue, Principal, Target, Verdict,
};
use nestguard::authz::{List, ParseMode, Policy, Source, load};
use nestguard::proto::mesos::authorization::Action;

fn policy(json: &str) -> Policy {
    load(&Source::Inline(json.to_owned()), ParseMode::default()).expect("test policy loads")
}

fn example(name: &str) -> Policy {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("acls")
        .join(name);
    load(&Source::File(path), ParseMode::default()).expect("example policy loads")
}

fn named(v: &str) -> Principal {
    Principal::Named(v.to_owned())
}

fn entry(list: List, index: u32) -> (List, u32) {
    (list, index)
}

fn decider_of(v: &Verdict) -> Option<(List, u32)> {
    match v.decided_by {
        Decider::Entry { list, index, .. } => Some((list, index)),
        _ => None,
    }
}

/// The allowed principals of a who-can row, with their deciding entries.
fn allowed(row: &analysis::who_can::WhoCanRow) -> Vec<(Principal, Option<(List, u32)>)> {
    row.answers
        .iter()
        .filter(|(_, v)| v.allowed)
        .map(|(p, v)| (p.clone(), decider_of(v)))
        .collect()
}

#[test]
fn who_can_kill_names_every_principal_per_user() {
    let p = example("nested-containers.json");
    let w = analysis::who_can(&p, Action::KillNestedContainer, None, None).expect("within budget");
    let targets: Vec<&Target> = w.rows.iter().map(|r| &r.target).collect();
    assert_eq!(
        targets,
        [
            &Target::Object(ObjectValue::Named("ci".into())),
            &Target::Object(ObjectValue::Other)
        ]
    );
    assert_eq!(
        allowed(&w.rows[0]),
        [
            (named("ci"), Some(entry(List::ManageNestedContainers, 1))),
            (named("oncall"), Some(entry(List::KillNestedContainers, 0))),
            (named("ops"), Some(entry(List::ManageNestedContainers, 0))),
        ]
    );
    assert_eq!(
        allowed(&w.rows[1]),
        [
            (named("oncall"), Some(entry(List::KillNestedContainers, 0))),
            (named("ops"), Some(entry(List::ManageNestedContainers, 0))),
        ]
    );
    // Answered by class: the principals an entry matching the user names,
    // then "any other principal" for the rest (`ci` is named only for user
    // `ci`, so here it decides like any other), denials by `permissive`.
    let all: Vec<&Principal> = w.rows[1].answers.iter().map(|(p, _)| p).collect();
    assert_eq!(
        all,
        [
            &named("oncall"),
            &named("ops"),
            &Principal::Other,
            &Principal::Unauthenticated
        ]
    );
    let ci = w.rows[1].verdict(&named("ci")).expect("answered by class");
    assert_eq!(
        (ci.allowed, ci.decided_by),
        (false, Decider::Permissive(false))
    );
    let (_, unauth) = &w.rows[1].answers[3];
    assert!(!unauth.allowed);
    assert_eq!(unauth.decided_by, Decider::Permissive(false));
    let text = w.to_text();
    assert!(
        text.contains("allowed  oncall  kill_nested_containers[0] (13:5)"),
        "{text}"
    );
    assert_eq!(w.to_json()["objects"][0]["allowed"][0]["principal"], "ci");
}

#[test]
fn who_can_launch_reports_both_halves() {
    let p = example("nested-containers.json");
    // `root` is named nowhere: decided with its own value, like any other user.
    let w = analysis::who_can(&p, Action::LaunchNestedContainer, Some("root"), Some("ci"))
        .expect("within budget");
    assert_eq!(w.rows.len(), 1);
    assert_eq!(
        w.rows[0].target,
        Target::Launch {
            parent: ObjectValue::Named("ci".into()),
            child: Some(ObjectValue::Named("root".into())),
        }
    );
    let ops: Vec<_> = allowed(&w.rows[0]);
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ops[0].0, named("ops"));
    let (_, ci) = w.rows[0]
        .answers
        .iter()
        .find(|(p, _)| *p == named("ci"))
        .unwrap();
    assert!(!ci.allowed);
    let (parent, child) = ci.launch.expect("a launch has halves");
    assert!(parent.allowed);
    assert_eq!(
        parent.decider,
        Decider::Entry {
            list: List::ManageNestedContainers,
            index: 1,
            location: nestguard::authz::Location { line: 5, column: 5 }
        }
    );
    let child = child.expect("a command user consults the child list");
    assert!(!child.allowed);
    assert_eq!(ci.decided_by, child.decider, "the denying half decides");
    assert_eq!(
        decider_of(ci),
        Some(entry(List::LaunchNestedContainersAsUser, 2))
    );

    // Without filters, by halves: (ci, other) executors with no command,
    // then (ci, other) command users, not their product.
    let all =
        analysis::who_can(&p, Action::LaunchNestedContainer, None, None).expect("within budget");
    assert_eq!(all.rows.len(), 4);
    assert_eq!(
        all.rows[2].target,
        Target::Command(ObjectValue::Named("ci".into()))
    );
    let (_, ci_command) = &all.rows[2].answers[0];
    assert!(ci_command.allowed && ci_command.launch.is_none());
    let no_command = &all.rows[0];
    assert_eq!(
        no_command.target,
        Target::Launch {
            parent: ObjectValue::Named("ci".into()),
            child: None
        }
    );
    let (_, ci) = &no_command.answers[0];
    assert!(ci.allowed && ci.launch.unwrap().1.is_none());
}

#[test]
fn can_lists_everything_one_principal_may_do() {
    let p = example("nested-containers.json");
    let c = analysis::can(&p, &named("ci"));
    let actions: Vec<Action> = c
        .actions
        .iter()
        .filter(|a| a.answers.iter().any(|(_, v)| v.allowed))
        .map(|a| a.action)
        .collect();
    assert_eq!(
        actions,
        [
            Action::LaunchNestedContainer,
            Action::KillNestedContainer,
            Action::WaitNestedContainer,
            Action::RemoveNestedContainer
        ]
    );
    let unauth = analysis::can(&p, &Principal::Unauthenticated);
    assert!(
        unauth
            .actions
            .iter()
            .all(|a| a.answers.iter().all(|(_, v)| !v.allowed))
    );
    // A principal no file names decides like "any other principal".
    let stranger = analysis::can(&p, &named("stranger"));
    let other = analysis::can(&p, &Principal::Other);
    for (a, b) in stranger.actions.iter().zip(&other.actions) {
        let allowed = |x: &analysis::who_can::CanAction| -> Vec<bool> {
            x.answers.iter().map(|(_, v)| v.allowed).collect()
        };
        assert_eq!(allowed(a), allowed(b), "{:?}", a.action);
    }
}

#[test]
fn permissive_default_is_the_decider_when_nothing_matches() {
    let p = policy(
        r#"{"kill_nested_containers": [{"principals": {"values": ["a"]}, "users": {"type": "NONE"}}]}"#,
    );
    let w = analysis::who_can(&p, Action::KillNestedContainer, None, None).expect("within budget");
    let row = &w.rows[0];
    let (a, verdict) = &row.answers[0];
    assert_eq!(*a, named("a"));
    assert!(!verdict.allowed);
    assert_eq!(
        decider_of(verdict),
        Some(entry(List::KillNestedContainers, 0))
    );
    let (_, other) = &row.answers[1];
    assert!(other.allowed);
    assert_eq!(other.decided_by, Decider::Permissive(true));
    assert_eq!(other.decided_by.key(), "permissive");
}

#[test]
fn roles_get_one_point_per_prefix() {
    let p = policy(
        r#"{"permissive": false, "reserve_resources": [
            {"principals": {"values": ["a"]}, "roles": {"values": ["dev/%"]}},
            {"principals": {"values": ["b"]}, "roles": {"values": ["dev/team"]}}]}"#,
    );
    let d = Domain::new(&[&p]);
    let labels: Vec<&ObjectValue> = d
        .action(Action::ReserveResources)
        .unwrap()
        .objects
        .iter()
        .map(|o| &o.label)
        .collect();
    assert_eq!(
        labels,
        [
            &ObjectValue::Named("dev/team".into()),
            &ObjectValue::Under("dev/%".into()),
            &ObjectValue::Other
        ]
    );
    let w = analysis::who_can(&p, Action::ReserveResources, None, None).expect("within budget");
    let names =
        |i: usize| -> Vec<Principal> { allowed(&w.rows[i]).into_iter().map(|(p, _)| p).collect() };
    assert_eq!(
        names(0),
        [named("a"), named("b")],
        "dev/team: a by prefix, b by name"
    );
    assert_eq!(names(1), [named("a")], "a role under dev/");
    assert!(names(2).is_empty(), "no prefix: nobody");
}

#[test]
fn diff_is_empty_for_equivalent_files_and_exact_otherwise() {
    let old = example("nested-containers.json");
    assert!(analysis::diff(&old, &old).is_empty());
    // Reordered values and a shadowed entry change nothing.
    let same = policy(
        r#"{"permissive": false,
        "manage_nested_containers": [
          {"principals": {"values": ["ops"]}, "users": {"type": "ANY"}},
          {"principals": {"values": ["ci"]}, "users": {"values": ["ci"]}},
          {"principals": {"values": ["ci"]}, "users": {"values": ["ci"]}}],
        "launch_nested_containers_as_user": [
          {"principals": {"values": ["ops"]}, "users": {"type": "ANY"}},
          {"principals": {"values": ["ci"]}, "users": {"values": ["ci"]}},
          {"principals": {"type": "ANY"}, "users": {"type": "NONE"}},
          {"principals": {"values": ["ci"]}, "users": {"type": "ANY"}}],
        "kill_nested_containers": [{"principals": {"values": ["oncall"]}, "users": {"type": "ANY"}}],
        "attach_containers_output": [{"principals": {"values": ["oncall", "ops"]}, "users": {"type": "ANY"}}]}"#,
    );
    let d = analysis::diff(&old, &same);
    assert!(d.is_empty(), "{}", d.to_text());

    let new = example("nested-containers.next.json");
    let d = analysis::diff(&old, &new);
    let changes: Vec<(Action, Principal, Target, bool)> = d
        .changes
        .iter()
        .map(|c| {
            (
                c.action,
                c.principal.clone(),
                c.target.clone(),
                c.new.allowed,
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            (
                Action::KillNestedContainer,
                named("oncall"),
                Target::Object(ObjectValue::Other),
                false
            ),
            (
                Action::ViewContainer,
                named("ci"),
                Target::Object(ObjectValue::Named("ci".into())),
                true
            ),
        ]
    );
    assert_eq!(
        decider_of(&d.changes[0].old),
        Some(entry(List::KillNestedContainers, 0))
    );
    assert_eq!(d.changes[0].new.decided_by, Decider::Permissive(false));
    let json = d.to_json();
    assert_eq!(json["identical"], false);
    assert_eq!(json["changes"][1]["object"], "ci");
    assert_eq!(
        json["changes"][1]["new"]["decided_by"]["list"],
        "view_containers"
    );
}

#[test]
fn diff_sees_names_only_the_other_file_uses() {
    // `old` names no user; `new` singles `bob` out. Only the union domain
    // has a point where they differ.
    let old = policy(
        r#"{"kill_nested_containers": [{"principals": {"type": "ANY"}, "users": {"type": "ANY"}}]}"#,
    );
    let new = policy(
        r#"{"kill_nested_containers": [
            {"principals": {"type": "ANY"}, "users": {"values": ["bob"]}},
            {"principals": {"type": "ANY"}, "users": {"type": "NONE"}}]}"#,
    );
    let d = analysis::diff(&old, &new);
    assert!(!d.is_empty());
    assert!(
        d.changes
            .iter()
            .all(|c| c.target == Target::Object(ObjectValue::Other) && !c.new.allowed)
    );
    // Any other principal and unauthenticated.
    assert_eq!(d.changes.len(), 2, "{}", d.to_text());
}

#[test]
fn example_cases_pass_and_failures_are_located() {
    let p = example("nested-containers.json");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("acls/nested-containers.cases.json");
    let report = analysis::run_cases_file(&p, &path).unwrap();
    assert_eq!(
        (report.passed(), report.failed()),
        (9, 0),
        "{:?}",
        report.failure_lines()
    );

    let cases = r#"[
  {"principal": "ops", "action": "KILL_NESTED_CONTAINER", "expect": "allow"},
  {"name": "wrong", "principal": "ci", "action": "KILL_NESTED_CONTAINER",
   "user": "root", "expect": "allow"},
  {"name": "wrong entry", "principal": "ci", "action": "KILL_NESTED_CONTAINER",
   "user": "ci", "expect": "allow", "decided_by": "kill_nested_containers[0]"}
]"#;
    let report = analysis::run_cases(&p, cases, "cases.json").unwrap();
    assert_eq!(report.summary(), "1 passed, 2 failed");
    let lines = report.failure_lines();
    assert_eq!(
        lines[0],
        "cases.json:3:3: wrong: expected allow, got deny (no entry matched, permissive=false)"
    );
    assert_eq!(
        lines[1],
        "cases.json:5:3: wrong entry: expected decided_by kill_nested_containers[0], got manage_nested_containers[1] (5:5)"
    );
}

#[test]
fn malformed_cases_are_errors_with_locations() {
    let p = example("nested-containers.json");
    let err = |text: &str| analysis::run_cases(&p, text, "c.json").unwrap_err();
    let e = err("[\n {\"action\": \"KILL\", \"expect\": \"allow\"}]");
    assert!(matches!(e, AnalysisError::Case { index: 0, .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("c.json:2:2: case 0: unknown action \"KILL\""),
        "{e}"
    );
    let e = err("[{\"action\": \"KILL_NESTED_CONTAINER\", \"expect\": \"maybe\"}]");
    assert!(e.to_string().contains("unknown variant `maybe`"), "{e}");
    let e = err("[{\"action\": \"KILL_NESTED_CONTAINER\", \"expect\": \"deny\", \"usr\": \"x\"}]");
    assert!(e.to_string().contains("unknown field `usr`"), "{e}");
    let e = err(
        "[{\"action\": \"KILL_NESTED_CONTAINER\", \"expect\": \"deny\", \"parent_user\": \"x\"}]",
    );
    assert!(e.to_string().contains("applies only to launches"), "{e}");
    let e = err("{}");
    assert!(matches!(e, AnalysisError::CasesSyntax { .. }), "{e}");
    let e = err("[\n  {,}]");
    assert!(
        e.to_string().starts_with("c.json:2:4: not valid JSON"),
        "{e}"
    );
}
