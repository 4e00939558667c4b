//! `who-can` (every principal allowed an action, per object) and `can`
//! (everything one principal may do), each answer with its deciding entry.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::domain::{Domain, Principal, Target, Verdict, decide, lists_of};
use crate::authz::compile::Policy;
use crate::proto::mesos::authorization::Action;

/// The answers for one target of `who-can`.
#[derive(Debug, Clone)]
pub struct WhoCanRow {
    /// The object (or launch pair).
    pub target: Target,
    /// Every principal of the domain with its verdict.
    pub answers: Vec<(Principal, Verdict)>,
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
/// launches the command's user, and `parent_user` the executor's).
pub fn who_can(
    policy: &Policy,
    action: Action,
    user: Option<&str>,
    parent_user: Option<&str>,
) -> WhoCan {
    let domain = Domain::new(&[policy]);
    let (noun, probes) = match domain.action(action) {
        Some(a) => (a.noun.clone(), a.select(user, parent_user)),
        None => ("object".to_owned(), Vec::new()),
    };
    let rows = probes
        .iter()
        .map(|probe| WhoCanRow {
            target: probe.target.clone(),
            answers: domain
                .principals
                .iter()
                .map(|p| {
                    (
                        p.clone(),
                        decide(policy, action, domain.subject(p), probe.object()),
                    )
                })
                .collect(),
        })
        .collect();
    WhoCan {
        action,
        noun,
        origin: policy.origin.clone(),
        permissive: policy.permissive(),
        rows,
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
