//! `who-can` (every principal allowed an action, per object) and `can`
//! (everything one principal may do), each answer with its deciding entry.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::AnalysisError;
use super::classes::{Candidates, half_lists};
use super::domain::{Domain, ObjectValue, Principal, Probe, Target, Verdict, decide, lists_of};
use crate::authz::compile::Policy;
use crate::authz::lists::{Route, route};
use crate::proto::mesos::authorization::Action;

/// The most answers (principal × target cells) `who-can` gives at once:
/// about 200 MB at the most. Past it [`who_can`] fails with
/// [`AnalysisError::OverBudget`] before deciding more; asking about one
/// object (`--user`, and `--parent-user` for launches) needs far fewer.
pub const WHO_CAN_BUDGET: usize = 1_000_000;

/// The answers for one target of `who-can`.
#[derive(Debug, Clone)]
pub struct WhoCanRow {
    /// The object (or launch pair, or a launch's half).
    pub target: Target,
    /// The principals that may decide otherwise than
    /// [`Principal::Other`] here (sorted), then `Other`, which answers for
    /// every principal not listed, then [`Principal::Unauthenticated`].
    pub answers: Vec<(Principal, Verdict)>,
}

impl WhoCanRow {
    /// The verdict of any principal: its own answer, else `Other`'s.
    pub fn verdict(&self, principal: &Principal) -> Option<&Verdict> {
        let find = |p: &Principal| self.answers.iter().find(|(q, _)| q == p).map(|(_, v)| v);
        find(principal).or_else(|| match principal {
            Principal::Named(_) => find(&Principal::Other),
            _ => None,
        })
    }
}

/// Who may perform one action, per object.
#[derive(Debug, Clone)]
pub struct WhoCan {
    /// The action.
    pub action: Action,
    /// The noun of its object.
    pub noun: String,
    /// The policy's origin.
    pub origin: String,
    /// `permissive` of the policy.
    pub permissive: bool,
    /// One row per target.
    pub rows: Vec<WhoCanRow>,
}

/// Who may perform `action`, optionally for one object value (`user`; for
/// launches the command's user, and `parent_user` the executor's). A launch
/// asked about without either is answered by halves (each executor user
/// with no command, then each command user: [`Target::Command`]), not by
/// their product. Each row answers by classes: see [`WhoCanRow::answers`].
pub fn who_can(
    policy: &Policy,
    action: Action,
    user: Option<&str>,
    parent_user: Option<&str>,
) -> Result<WhoCan, AnalysisError> {
    who_can_within(policy, action, user, parent_user, WHO_CAN_BUDGET)
}

/// [`who_can`] with another budget of answers.
pub fn who_can_within(
    policy: &Policy,
    action: Action,
    user: Option<&str>,
    parent_user: Option<&str>,
    budget: usize,
) -> Result<WhoCan, AnalysisError> {
    let domain = Domain::new(&[policy]);
    let by_halves = user.is_none() && parent_user.is_none();
    let (noun, probes) = match domain.action(action) {
        Some(a) if a.is_launch() && by_halves => (a.noun.clone(), a.halves()),
        Some(a) => (a.noun.clone(), a.select(user, parent_user)),
        None => ("object".to_owned(), Vec::new()),
    };
    let index = Index::new(policy, action, by_halves);
    let probes: Vec<Probe> = probes.into_iter().filter(|p| index.keeps(p)).collect();
    // Counted before anything is decided, so a refusal costs little.
    let mut spent = 0usize;
    for probe in &probes {
        let named = index.at(probe).len();
        spent = spent.saturating_add(named.saturating_add(2));
        if spent > budget {
            return Err(AnalysisError::OverBudget {
                action: action.as_str_name(),
                budget,
                targets: probes.len(),
            });
        }
    }
    let mut rows = Vec::with_capacity(probes.len());
    for probe in &probes {
        let named = index.at(probe);
        let principals = named
            .into_iter()
            .map(|v| Principal::Named(v.to_owned()))
            .chain([Principal::Other, Principal::Unauthenticated]);
        let answers = principals
            .map(|p| {
                let v = decide(policy, action, domain.subject(&p), probe.object());
                (p, v)
            })
            .collect();
        rows.push(WhoCanRow {
            target: probe.target.clone(),
            answers,
        });
    }
    Ok(WhoCan {
        action,
        noun,
        origin: policy.origin.clone(),
        permissive: policy.permissive(),
        rows,
    })
}

/// The candidates of an action's targets: over all its lists, and for a
/// launch's halves over each half's own lists.
struct Index<'p> {
    all: Candidates<'p>,
    halves: Option<(Candidates<'p>, Candidates<'p>)>,
}

impl<'p> Index<'p> {
    /// `by_halves`: a launch's targets are its halves (`ActionDomain::halves`).
    fn new(policy: &'p Policy, action: Action, by_halves: bool) -> Index<'p> {
        let halves = match route(action) {
            Route::Nested { parent, child } if by_halves => Some((
                Candidates::of(policy, action, &half_lists(parent)),
                Candidates::of(policy, action, &half_lists(child)),
            )),
            _ => None,
        };
        Index {
            all: Candidates::new(policy, action),
            halves,
        }
    }

    /// The index a target's candidates come from.
    fn of(&self, target: &Target) -> &Candidates<'p> {
        match (target, &self.halves) {
            (Target::Launch { child: None, .. }, Some((parent, _))) => parent,
            (Target::Command(_), Some((_, child))) => child,
            _ => &self.all,
        }
    }

    /// Whether a launch's half target says more than its "any other" one:
    /// a value its half's lists do not name is left out.
    fn keeps(&self, probe: &Probe) -> bool {
        let value = match &probe.target {
            Target::Launch {
                parent: ObjectValue::Named(v),
                child: None,
            }
            | Target::Command(ObjectValue::Named(v)) => v,
            _ => return true,
        };
        self.of(&probe.target).names(value)
    }

    fn at(&self, probe: &Probe) -> std::collections::BTreeSet<&'p str> {
        self.of(&probe.target).at(probe.values())
    }
}

fn lists_text(action: Action) -> String {
    lists_of(action)
        .iter()
        .map(|l| l.spec().json)
        .collect::<Vec<_>>()
        .join(", ")
}

impl WhoCan {
    /// Human text: per object, the allowed principals with their deciding
    /// entries, then the denied ones.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{} in {} (lists: {}; permissive={})\n",
            self.action.as_str_name(),
            self.origin,
            lists_text(self.action),
            self.permissive
        );
        if self
            .rows
            .iter()
            .any(|r| matches!(r.target, Target::Command(_)))
        {
            out.push_str(
                "by halves: a launch with a command is allowed when its executor user's \
                 (no command) and its command user's rows both allow the principal\n",
            );
        }
        for row in &self.rows {
            let _ = writeln!(out, "{}:", row.target.label(&self.noun));
            let allowed: Vec<_> = row.answers.iter().filter(|(_, v)| v.allowed).collect();
            let width = allowed
                .iter()
                .map(|(p, _)| p.to_string().chars().count())
                .max()
                .unwrap_or(0);
            for (p, v) in &allowed {
                let _ = writeln!(out, "  allowed  {:<width$}  {v}", p.to_string());
            }
            if allowed.is_empty() {
                out.push_str("  allowed  nobody\n");
            }
            let denied: Vec<String> = row
                .answers
                .iter()
                .filter(|(_, v)| !v.allowed)
                .map(|(p, _)| p.to_string())
                .collect();
            if !denied.is_empty() {
                let _ = writeln!(out, "  denied   {}", denied.join(", "));
            }
        }
        out
    }

    /// JSON: `{"action", "file", "permissive", "objects": [{..target,
    /// "allowed": [...], "denied": [...]}]}`, each answer with its verdict.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let mut v = row.target.to_json();
                let side = |allowed: bool| -> Vec<Value> {
                    row.answers
                        .iter()
                        .filter(|(_, d)| d.allowed == allowed)
                        .map(|(p, d)| merge(json!({"principal": p.to_json()}), d.to_json()))
                        .collect()
                };
                v["allowed"] = json!(side(true));
                v["denied"] = json!(side(false));
                v
            })
            .collect();
        json!({
            "action": self.action.as_str_name(),
            "file": self.origin,
            "permissive": self.permissive,
            "objects": rows,
        })
    }
}

/// One action's answers for `can`.
#[derive(Debug, Clone)]
pub struct CanAction {
    /// The action.
    pub action: Action,
    /// The noun of its object.
    pub noun: String,
    /// Every target with its verdict.
    pub answers: Vec<(Target, Verdict)>,
}

/// Everything one principal may do.
#[derive(Debug, Clone)]
pub struct Can {
    /// The principal.
    pub principal: Principal,
    /// The policy's origin.
    pub origin: String,
    /// `permissive` of the policy.
    pub permissive: bool,
    /// Every action of the domain.
    pub actions: Vec<CanAction>,
}

/// Everything `principal` may do: every action and object of the domain.
/// A principal the file does not name is decided with its own value (it
/// decides like "any other principal").
pub fn can(policy: &Policy, principal: &Principal) -> Can {
    let domain = Domain::new(&[policy]);
    let subject = domain.subject(principal);
    let actions = domain
        .actions
        .iter()
        .map(|a| CanAction {
            action: a.action,
            noun: a.noun.clone(),
            answers: a
                .targets()
                .iter()
                .map(|probe| {
                    (
                        probe.target.clone(),
                        decide(policy, a.action, subject, probe.object()),
                    )
                })
                .collect(),
        })
        .collect();
    Can {
        principal: principal.clone(),
        origin: policy.origin.clone(),
        permissive: policy.permissive(),
        actions,
    }
}

impl Can {
    /// Human text: each action with at least one allowed object, those
    /// objects and their deciding entries; then the count of the others.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "principal {} in {} (permissive={})\n",
            self.principal, self.origin, self.permissive
        );
        let mut nothing = Vec::new();
        for a in &self.actions {
            let allowed: Vec<_> = a.answers.iter().filter(|(_, v)| v.allowed).collect();
            if allowed.is_empty() {
                nothing.push(a.action.as_str_name());
                continue;
            }
            let _ = writeln!(
                out,
                "{} (allowed for {} of {} objects):",
                a.action.as_str_name(),
                allowed.len(),
                a.answers.len(),
            );
            let labels: Vec<String> = allowed.iter().map(|(t, _)| t.label(&a.noun)).collect();
            let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
            for ((_, v), label) in allowed.iter().zip(&labels) {
                let _ = writeln!(out, "  {label:<width$}  {v}");
            }
        }
        let _ = writeln!(
            out,
            "denied for every object: {} other actions{}",
            nothing.len(),
            if nothing.is_empty() {
                String::new()
            } else {
                " (--json lists them)".to_owned()
            }
        );
        out
    }

    /// JSON: `{"principal", "file", "permissive", "actions": [{"action",
    /// "allowed": [...], "denied": [...]}]}`.
    pub fn to_json(&self) -> Value {
        let actions: Vec<Value> = self
            .actions
            .iter()
            .map(|a| {
                let side = |allowed: bool| -> Vec<Value> {
                    a.answers
                        .iter()
                        .filter(|(_, v)| v.allowed == allowed)
                        .map(|(t, v)| merge(t.to_json(), v.to_json()))
                        .collect()
                };
                json!({
                    "action": a.action.as_str_name(),
                    "allowed": side(true),
                    "denied": side(false),
                })
            })
            .collect();
        json!({
            "principal": self.principal.to_json(),
            "file": self.origin,
            "permissive": self.permissive,
            "actions": actions,
        })
    }
}

/// `a`'s fields, then `b`'s (both objects).
fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(obj), Value::Object(more)) = (a.as_object_mut(), b) {
        obj.extend(more);
    }
    a
}
