//! Human and JSON renderings of a [`Decision`]: which list and entry decided,
//! or that no entry matched and `permissive` decided; both halves for launches.

use serde_json::{Value, json};

use super::compile::Policy;
use super::evaluate::{Basis, Decision, ListOutcome};

fn outcome_json(policy: &Policy, o: &ListOutcome) -> Value {
    match o.entry {
        Some(e) => {
            let location = policy
                .doc
                .list(e.origin)
                .get(e.index as usize)
                .map(|entry| entry.location);
            json!({
                "allowed": o.allowed,
                "evaluated_list": o.list.spec().json,
                "list": e.origin.spec().json,
                "index": e.index,
                "line": location.map(|l| l.line),
                "column": location.map(|l| l.column),
            })
        }
        None => json!({
            "allowed": o.allowed,
            "evaluated_list": o.list.spec().json,
            "list": o.list.spec().json,
            "index": Value::Null,
            "permissive": policy.permissive(),
        }),
    }
}

fn outcome_text(policy: &Policy, o: &ListOutcome) -> String {
    match o.entry {
        Some(e) => {
            let at = policy
                .doc
                .list(e.origin)
                .get(e.index as usize)
                .map(|entry| format!(" (line {})", entry.location))
                .unwrap_or_default();
            let via = if e.origin == o.list {
                String::new()
            } else {
                format!(", appended to {}", o.list.spec().json)
            };
            format!(
                "{}[{}]{at}{via} matched → {}",
                e.origin.spec().json,
                e.index,
                verdict(o.allowed)
            )
        }
        None => format!(
            "no entry of {} matched → permissive={}",
            o.list.spec().json,
            policy.permissive()
        ),
    }
}

fn verdict(allowed: bool) -> &'static str {
    if allowed { "allowed" } else { "denied" }
}

/// The half of a launch that determined the result: the first denying half,
/// else the child (the more specific), else the parent.
fn deciding<'a>(parent: &'a ListOutcome, child: Option<&'a ListOutcome>) -> &'a ListOutcome {
    if !parent.allowed {
        return parent;
    }
    child.unwrap_or(parent)
}

/// JSON with at least `allowed`, `list` and `index` (null when `permissive`
/// decided), plus `parent`/`child` for launches.
pub fn to_json(policy: &Policy, d: &Decision) -> Value {
    match &d.basis {
        Basis::Acl(o) => {
            let mut v = outcome_json(policy, o);
            v["decided_by"] = json!(if o.entry.is_some() {
                "entry"
            } else {
                "permissive"
            });
            v
        }
        Basis::Launch { parent, child } => {
            let mut v = outcome_json(policy, deciding(parent, child.as_ref()));
            v["allowed"] = json!(d.allowed);
            v["decided_by"] = json!("launch");
            v["parent"] = outcome_json(policy, parent);
            v["child"] = child
                .as_ref()
                .map_or(Value::Null, |c| outcome_json(policy, c));
            v
        }
        Basis::ImplicitExecutor => json!({
            "allowed": d.allowed, "list": Value::Null, "index": Value::Null,
            "decided_by": "implicit_executor",
        }),
        Basis::ImplicitResourceProvider => json!({
            "allowed": d.allowed, "list": Value::Null, "index": Value::Null,
            "decided_by": "implicit_resource_provider",
        }),
        Basis::Rejected(why) => json!({
            "allowed": false, "list": Value::Null, "index": Value::Null,
            "decided_by": "rejected", "reason": why,
        }),
    }
}

/// One or two lines of text.
pub fn to_text(policy: &Policy, d: &Decision) -> String {
    let head = verdict(d.allowed).to_uppercase();
    match &d.basis {
        Basis::Acl(o) => format!("{head}: {}", outcome_text(policy, o)),
        Basis::Launch { parent, child } => {
            let child = child.as_ref().map_or_else(
                || "child: no command in the object, not consulted".to_owned(),
                |c| format!("child: {}", outcome_text(policy, c)),
            );
            format!(
                "{head}\n  parent: {}\n  {child}",
                outcome_text(policy, parent)
            )
        }
        Basis::ImplicitExecutor => {
            format!(
                "{head}: implicit executor approver (the `cid` claim against the root container id)"
            )
        }
        Basis::ImplicitResourceProvider => format!(
            "{head}: implicit resource-provider approver (the `cid_prefix` claim against the container id)"
        ),
        Basis::Rejected(why) => format!("{head}: rejected: {why}"),
    }
}
