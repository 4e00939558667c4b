//! The exact semantic difference of two policies: every (principal, action,
//! object) of their union domain whose decision changes.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::domain::{Domain, Principal, Target, Verdict, decide};
use crate::authz::compile::Policy;
use crate::proto::mesos::authorization::Action;

/// One request whose decision changes.
#[derive(Debug, Clone)]
pub struct Change {
    /// Who asks.
    pub principal: Principal,
    /// For what.
    pub action: Action,
    /// The noun of the action's object.
    pub noun: String,
    /// On what.
    pub target: Target,
    /// The old policy's verdict.
    pub old: Verdict,
    /// The new policy's verdict.
    pub new: Verdict,
}

/// Every change between two policies.
#[derive(Debug, Clone)]
pub struct Diff {
    /// Origin of the old policy.
    pub old: String,
    /// Origin of the new policy.
    pub new: String,
    /// Number of requests compared (the size of the union domain).
    pub compared: usize,
    /// The requests whose decision differs, by action, target, principal.
    pub changes: Vec<Change>,
}

impl Diff {
    /// Whether the two policies decide every request alike.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Compares two policies over the union of what they name.
///
/// Exact: a request outside the domain uses values neither file names, and
/// decides like the domain's "any other" point (both policies see it the same
/// way), so no request can differ unless a domain point does.
pub fn diff(old: &Policy, new: &Policy) -> Diff {
    let domain = Domain::new(&[old, new]);
    let mut changes = Vec::new();
    let mut compared = 0;
    for a in &domain.actions {
        for probe in a.targets() {
            for p in &domain.principals {
                compared += 1;
                let subject = domain.subject(p);
                let o = decide(old, a.action, subject, probe.object());
                let n = decide(new, a.action, subject, probe.object());
                if o.allowed != n.allowed {
                    changes.push(Change {
                        principal: p.clone(),
                        action: a.action,
                        noun: a.noun.clone(),
                        target: probe.target.clone(),
                        old: o,
                        new: n,
                    });
                }
            }
        }
    }
    Diff {
        old: old.origin.clone(),
        new: new.origin.clone(),
        compared,
        changes,
    }
}

fn word(allowed: bool) -> &'static str {
    if allowed { "allowed" } else { "denied" }
}

impl Diff {
    /// Human text: one block per change, then a summary line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.changes {
            let _ = writeln!(
                out,
                "{}, principal {}, {}: {} -> {}",
                c.action.as_str_name(),
                c.principal,
                c.target.label(&c.noun),
                word(c.old.allowed),
                word(c.new.allowed)
            );
            let _ = writeln!(out, "  old: {}", c.old);
            let _ = writeln!(out, "  new: {}", c.new);
        }
        if self.changes.is_empty() {
            let _ = writeln!(
                out,
                "{} and {} decide alike ({} requests compared)",
                self.old, self.new, self.compared
            );
        } else {
            let _ = writeln!(
                out,
                "{} of {} requests decide differently",
                self.changes.len(),
                self.compared
            );
        }
        out
    }

    /// JSON: `{"old", "new", "identical", "compared", "changes": [{"action",
    /// "principal", ..target, "old": verdict, "new": verdict}]}`.
    pub fn to_json(&self) -> Value {
        let changes: Vec<Value> = self
            .changes
            .iter()
            .map(|c| {
                let mut v = json!({
                    "action": c.action.as_str_name(),
                    "principal": c.principal.to_json(),
                });
                if let (Some(obj), Value::Object(target)) = (v.as_object_mut(), c.target.to_json())
                {
                    obj.extend(target);
                }
                v["old"] = c.old.to_json();
                v["new"] = c.new.to_json();
                v
            })
            .collect();
        json!({
            "old": self.old,
            "new": self.new,
            "identical": self.changes.is_empty(),
            "compared": self.compared,
            "changes": changes,
        })
    }
}
