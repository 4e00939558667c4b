//! The finite domain of an analysis and the decision at each of its points.
//!
//! Principals: each value named in any list of the files, one fresh value
//! for "any other principal", and no principal at all ("unauthenticated").
//! Objects, per action: each value named in the lists the action consults,
//! one fresh value for "any other", and for role lists one fresh role under
//! each `x/%` prefix. A request whose object carries no user (object ANY)
//! decides like "any other": both are matched only by `ANY`/`NONE` entries.
//!
//! Every decision is made by the evaluator's own functions, chosen by
//! [`route`] exactly as [`crate::authz::Approver`] chooses them once it has
//! the request's object entities.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Value, json};

use crate::authz::compile::{Policy, Req};
use crate::authz::evaluate::{Basis, ListOutcome, decide_launch, decide_list};
use crate::authz::lists::{List, Route, route};
use crate::authz::parse::{EntityType, Location};
use crate::authz::roles::decide_role;
use crate::proto::mesos::authorization::Action;

/// A principal of the domain.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Principal {
    /// A principal value (named in a file, or asked about).
    Named(String),
    /// Every principal value no file names.
    Other,
    /// A request without a principal.
    Unauthenticated,
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::Named(v) => write!(f, "{}", show(v)),
            Principal::Other => f.write_str("any other principal"),
            Principal::Unauthenticated => f.write_str("unauthenticated"),
        }
    }
}

impl Principal {
    /// JSON: the value, or `{"other": true}` / `{"unauthenticated": true}`.
    pub fn to_json(&self) -> Value {
        match self {
            Principal::Named(v) => json!(v),
            Principal::Other => json!({"other": true}),
            Principal::Unauthenticated => json!({"unauthenticated": true}),
        }
    }
}

/// An object value of the domain (a user, role, path... per list).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectValue {
    /// A value named in a file (or asked about).
    Named(String),
    /// Every role under the prefix of this `x/%` value that is neither
    /// named nor under a longer prefix (role lists only).
    Under(String),
    /// Every value no file names (and no object value at all).
    Other,
}

impl ObjectValue {
    /// Text with the noun of the list's object ("any other user").
    pub fn label(&self, noun: &str) -> String {
        match self {
            ObjectValue::Named(v) => show(v),
            ObjectValue::Under(p) => format!("any other {noun} matching {p}"),
            ObjectValue::Other => format!("any other {noun}"),
        }
    }

    /// JSON: the value, or `{"other": true}` / `{"under": "x/%"}`.
    pub fn to_json(&self) -> Value {
        match self {
            ObjectValue::Named(v) => json!(v),
            ObjectValue::Under(p) => json!({"under": p}),
            ObjectValue::Other => json!({"other": true}),
        }
    }
}

/// Values shown quoted only when they would be unreadable bare.
fn show(v: &str) -> String {
    if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        format!("{v:?}")
    } else {
        v.to_owned()
    }
}

/// The object side of one request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// A single-list action's object.
    Object(ObjectValue),
    /// A launch: the executor's user (parent half) and the command's user
    /// (child half; `None` = no command, the child list is not consulted).
    Launch {
        /// Object of the `..._under_parent_with_user` list.
        parent: ObjectValue,
        /// Object of the `..._as_user` list.
        child: Option<ObjectValue>,
    },
    /// A launch's child half alone: the command's user against the
    /// `..._as_user` list (`who-can` without `--user`/`--parent-user`; the
    /// launch is allowed when this and its executor user's no-command
    /// target both are).
    Command(ObjectValue),
}

impl Target {
    /// Text with the noun of the list's object.
    pub fn label(&self, noun: &str) -> String {
        match self {
            Target::Object(o) => format!("{noun} {}", o.label(noun)),
            Target::Launch { parent, child } => format!(
                "executor {noun} {}, {}",
                parent.label(noun),
                child.as_ref().map_or_else(
                    || "no command".to_owned(),
                    |c| format!("command {noun} {}", c.label(noun))
                )
            ),
            Target::Command(c) => format!("command {noun} {} (child half)", c.label(noun)),
        }
    }

    /// JSON: `{"object": ...}`, `{"parent_user": ..., "user": ...}`
    /// (`user` null: no command) or `{"user": ..., "half": "child"}`.
    pub fn to_json(&self) -> Value {
        match self {
            Target::Object(o) => json!({"object": o.to_json()}),
            Target::Launch { parent, child } => json!({
                "parent_user": parent.to_json(),
                "user": child.as_ref().map_or(Value::Null, ObjectValue::to_json),
            }),
            Target::Command(c) => json!({"user": c.to_json(), "half": "child"}),
        }
    }
}

/// What decided one list's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    /// The first matching entry.
    Entry {
        /// The list it is written in (`manage_nested_containers` for
        /// entries appended to a nested-container list).
        list: List,
        /// Its index there.
        index: u32,
        /// Where it is in its file.
        location: Location,
    },
    /// No entry matched: `permissive` (its value) decided.
    Permissive(bool),
    /// Rejected without consulting ACLs.
    Rejected(&'static str),
}

impl Decider {
    /// `list[index]`, `permissive` or `rejected`: what a test case names.
    pub fn key(&self) -> String {
        match self {
            Decider::Entry { list, index, .. } => format!("{}[{index}]", list.spec().json),
            Decider::Permissive(_) => "permissive".to_owned(),
            Decider::Rejected(_) => "rejected".to_owned(),
        }
    }

    /// JSON: `{"list", "index", "line", "column"}` or `{"permissive": bool}`.
    pub fn to_json(&self) -> Value {
        match self {
            Decider::Entry {
                list,
                index,
                location,
            } => json!({
                "list": list.spec().json, "index": index,
                "line": location.line, "column": location.column,
            }),
            Decider::Permissive(p) => {
                json!({"list": Value::Null, "index": Value::Null, "permissive": p})
            }
            Decider::Rejected(why) => {
                json!({"list": Value::Null, "index": Value::Null, "rejected": why})
            }
        }
    }
}

impl fmt::Display for Decider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decider::Entry {
                list,
                index,
                location,
            } => write!(f, "{}[{index}] ({location})", list.spec().json),
            Decider::Permissive(p) => write!(f, "no entry matched, permissive={p}"),
            Decider::Rejected(why) => write!(f, "rejected: {why}"),
        }
    }
}

/// One list's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Half {
    /// The list evaluated.
    pub list: List,
    /// Its verdict.
    pub allowed: bool,
    /// What decided it.
    pub decider: Decider,
}

impl Half {
    fn from_outcome(policy: &Policy, o: &ListOutcome) -> Half {
        let decider = match o.entry {
            Some(e) => Decider::Entry {
                list: e.origin,
                index: e.index,
                location: policy
                    .doc
                    .list(e.origin)
                    .get(e.index as usize)
                    .map(|entry| entry.location)
                    .unwrap_or_default(),
            },
            None => Decider::Permissive(policy.permissive()),
        };
        Half {
            list: o.list,
            allowed: o.allowed,
            decider,
        }
    }

    /// JSON: `allowed`, `evaluated_list` and the decider's fields.
    pub fn to_json(&self) -> Value {
        let mut v = self.decider.to_json();
        v["allowed"] = json!(self.allowed);
        v["evaluated_list"] = json!(self.list.spec().json);
        v
    }
}

/// A decision and what made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Authorized or not.
    pub allowed: bool,
    /// What decided: the list's entry, or for a launch the first denying
    /// half, else the child half, else the parent half.
    pub decided_by: Decider,
    /// For launches, both halves (`child` is `None` without a command).
    pub launch: Option<(Half, Option<Half>)>,
}

impl Verdict {
    /// JSON: `allowed`, `decided_by`, and `parent`/`child` for launches.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"allowed": self.allowed, "decided_by": self.decided_by.to_json()});
        if let Some((parent, child)) = &self.launch {
            v["parent"] = parent.to_json();
            v["child"] = child.as_ref().map_or(Value::Null, Half::to_json);
        }
        v
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.launch {
            None => write!(f, "{}", self.decided_by),
            Some((parent, child)) => {
                write!(f, "parent: {}", parent.decider)?;
                match child {
                    Some(c) => write!(f, "; child: {}", c.decider),
                    None => f.write_str("; child: not consulted"),
                }
            }
        }
    }
}

/// The object entities of one request, as the approver derives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectReq<'a> {
    /// A single-list (or role) action's object entity.
    Single(Req<'a>),
    /// A launch's two object entities.
    Launch {
        /// The executor's user.
        parent: Req<'a>,
        /// The command's user (`None`: no command).
        child: Option<Req<'a>>,
    },
    /// A launch's command user alone: only the child half is decided.
    Command(Req<'a>),
}

/// Decides one request for a principal-valued (or absent) subject with the
/// evaluator's functions, routed as [`crate::authz::Approver`] routes it.
pub fn decide(policy: &Policy, action: Action, subject: Req<'_>, object: ObjectReq<'_>) -> Verdict {
    let single = match object {
        ObjectReq::Single(r) | ObjectReq::Command(r) => r,
        ObjectReq::Launch { parent, .. } => parent,
    };
    match route(action) {
        Route::Generic(list) => from_list(policy, &decide_list(policy, list, subject, single)),
        Route::Roles(list) => from_list(
            policy,
            &decide_role(
                policy.doc.list(list),
                list,
                policy.permissive(),
                subject,
                single,
            ),
        ),
        Route::Nested { child, .. } if matches!(object, ObjectReq::Command(_)) => {
            from_list(policy, &decide_list(policy, child, subject, single))
        }
        Route::Nested { parent, child } => {
            let (p, c) = match object {
                ObjectReq::Launch { parent, child } => (parent, child),
                ObjectReq::Single(r) | ObjectReq::Command(r) => (r, None),
            };
            let d = decide_launch(policy, parent, child, subject, p, c);
            match d.basis {
                Basis::Launch { parent, child } => {
                    let p = Half::from_outcome(policy, &parent);
                    let c = child.as_ref().map(|c| Half::from_outcome(policy, c));
                    let deciding = if !p.allowed { p } else { c.unwrap_or(p) };
                    Verdict {
                        allowed: d.allowed,
                        decided_by: deciding.decider,
                        launch: Some((p, c)),
                    }
                }
                _ => rejected("unexpected launch basis"),
            }
        }
        Route::Reject => rejected("the action is UNKNOWN"),
    }
}

fn from_list(policy: &Policy, o: &ListOutcome) -> Verdict {
    let half = Half::from_outcome(policy, o);
    Verdict {
        allowed: half.allowed,
        decided_by: half.decider,
        launch: None,
    }
}

fn rejected(why: &'static str) -> Verdict {
    Verdict {
        allowed: false,
        decided_by: Decider::Rejected(why),
        launch: None,
    }
}

/// Every action an ACL can decide (all but `UNKNOWN`), in number order.
pub fn actions() -> Vec<Action> {
    (1..=i32::from(u8::MAX))
        .filter_map(|n| Action::try_from(n).ok())
        .filter(|a| *a != Action::Unknown)
        .collect()
}

/// The lists an action consults (`manage_nested_containers` included where
/// its entries are appended).
pub fn lists_of(action: Action) -> Vec<List> {
    let mut out = match route(action) {
        Route::Generic(l) | Route::Roles(l) => vec![l],
        Route::Nested { parent, child } => vec![parent, child],
        Route::Reject => Vec::new(),
    };
    if out.iter().any(|l| l.receives_manage()) {
        out.push(List::ManageNestedContainers);
    }
    out
}

/// One object point: its label and the value that represents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// What it stands for.
    pub label: ObjectValue,
    /// The concrete value decided.
    pub value: String,
}

impl Point {
    fn req(&self) -> Req<'_> {
        Req::Some(self.value.as_bytes())
    }
}

/// One target of an action with the values that represent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// What it stands for.
    pub target: Target,
    parent: Point,
    child: Option<Point>,
}

impl Probe {
    /// The object entities to decide.
    pub fn object(&self) -> ObjectReq<'_> {
        match &self.target {
            Target::Object(_) => ObjectReq::Single(self.parent.req()),
            Target::Command(_) => ObjectReq::Command(self.parent.req()),
            Target::Launch { .. } => ObjectReq::Launch {
                parent: self.parent.req(),
                child: self.child.as_ref().map(Point::req),
            },
        }
    }

    /// The object values decided for this target (the parent's, then the
    /// command's).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.parent.value.as_str())
            .chain(self.child.as_ref().map(|c| c.value.as_str()))
    }
}

/// The domain of one action.
#[derive(Debug, Clone)]
pub struct ActionDomain {
    /// The action.
    pub action: Action,
    /// Singular noun of its object ("user", "role", "path").
    pub noun: String,
    /// Its object points: named values, role prefixes, any other.
    pub objects: Vec<Point>,
}

impl ActionDomain {
    /// Whether the action is a launch (two halves).
    pub fn is_launch(&self) -> bool {
        matches!(route(self.action), Route::Nested { .. })
    }

    /// Every target: each object, or for launches each (executor user,
    /// command user or no command) pair.
    pub fn targets(&self) -> Vec<Probe> {
        self.select(None, None)
    }

    /// A launch's targets by halves, not their product: each executor user
    /// without a command (the parent half alone), then each command user
    /// (the child half alone). Other actions: [`ActionDomain::targets`].
    pub fn halves(&self) -> Vec<Probe> {
        if !self.is_launch() {
            return self.targets();
        }
        let parents = self.objects.iter().map(|p| Probe {
            target: Target::Launch {
                parent: p.label.clone(),
                child: None,
            },
            parent: p.clone(),
            child: None,
        });
        let children = self.objects.iter().map(|c| Probe {
            target: Target::Command(c.label.clone()),
            parent: c.clone(),
            child: None,
        });
        parents.chain(children).collect()
    }

    /// The targets, narrowed to one object value (for launches: `user` is
    /// the command's user, `parent_user` the executor's). A value no file
    /// names is decided with that value itself.
    pub fn select(&self, user: Option<&str>, parent_user: Option<&str>) -> Vec<Probe> {
        let all = || self.objects.clone();
        if !self.is_launch() {
            let points = user.map_or_else(all, |u| vec![self.point(u)]);
            return points
                .into_iter()
                .map(|p| Probe {
                    target: Target::Object(p.label.clone()),
                    parent: p,
                    child: None,
                })
                .collect();
        }
        let parents = parent_user.map_or_else(all, |u| vec![self.point(u)]);
        let children: Vec<Option<Point>> = match user {
            Some(u) => vec![Some(self.point(u))],
            None => std::iter::once(None)
                .chain(all().into_iter().map(Some))
                .collect(),
        };
        let mut out = Vec::new();
        for parent in &parents {
            for child in &children {
                out.push(Probe {
                    target: Target::Launch {
                        parent: parent.label.clone(),
                        child: child.as_ref().map(|c| c.label.clone()),
                    },
                    parent: parent.clone(),
                    child: child.clone(),
                });
            }
        }
        out
    }

    /// The point for a value: its named point, else a point labelled with
    /// the value itself (decided with that value, so exact either way).
    pub fn point(&self, value: &str) -> Point {
        self.objects
            .iter()
            .find(|p| p.label == ObjectValue::Named(value.to_owned()))
            .cloned()
            .unwrap_or_else(|| Point {
                label: ObjectValue::Named(value.to_owned()),
                value: value.to_owned(),
            })
    }
}

/// The finite domain of one or more policies (the union of what they name).
#[derive(Debug, Clone)]
pub struct Domain {
    /// Named principals (sorted), then any other, then unauthenticated.
    pub principals: Vec<Principal>,
    other_principal: String,
    /// One entry per action of [`actions`].
    pub actions: Vec<ActionDomain>,
}

/// The first of `base`, `base1`, `base2`... that `taken` refuses not.
fn fresh(base: &str, taken: impl Fn(&str) -> bool) -> String {
    (0u64..)
        .map(|i| {
            if i == 0 {
                base.to_owned()
            } else {
                format!("{base}{i}")
            }
        })
        .find(|c| !taken(c))
        .unwrap_or_default()
}

/// The prefix an `x/%` role value covers, exactly as the role approver
/// computes it.
fn role_prefix(value: &str) -> &str {
    value.trim_end_matches('%')
}

impl Domain {
    /// The domain over what `policies` name.
    pub fn new(policies: &[&Policy]) -> Domain {
        let mut named = BTreeSet::new();
        for p in policies {
            for entries in &p.doc.lists {
                for e in entries {
                    if e.principals.kind == EntityType::Some {
                        named.extend(e.principals.values.iter().map(|v| v.to_string()));
                    }
                }
            }
        }
        let other_principal = fresh("~other", |c| named.contains(c));
        let mut principals: Vec<Principal> = named.into_iter().map(Principal::Named).collect();
        principals.push(Principal::Other);
        principals.push(Principal::Unauthenticated);
        let actions = actions()
            .into_iter()
            .map(|a| action_domain(policies, a))
            .collect();
        Domain {
            principals,
            other_principal,
            actions,
        }
    }

    /// The subject entity of a principal.
    pub fn subject<'a>(&'a self, p: &'a Principal) -> Req<'a> {
        match p {
            Principal::Named(v) => Req::Some(v.as_bytes()),
            Principal::Other => Req::Some(self.other_principal.as_bytes()),
            Principal::Unauthenticated => Req::Any,
        }
    }

    /// The domain of one action.
    pub fn action(&self, action: Action) -> Option<&ActionDomain> {
        self.actions.iter().find(|a| a.action == action)
    }
}

fn action_domain(policies: &[&Policy], action: Action) -> ActionDomain {
    let roles = matches!(route(action), Route::Roles(_));
    let lists = lists_of(action);
    let mut named = BTreeSet::new();
    let mut prefixes = BTreeSet::new();
    for p in policies {
        for &l in &lists {
            for e in p.doc.list(l) {
                if e.object.kind != EntityType::Some {
                    continue;
                }
                for v in &e.object.values {
                    if roles && v.ends_with("/%") {
                        prefixes.insert(role_prefix(v).to_owned());
                    } else {
                        named.insert(v.to_string());
                    }
                }
            }
        }
    }
    let object = lists.first().map_or("objects", |l| l.spec().object);
    let noun = object.strip_suffix('s').unwrap_or(object).replace('_', " ");
    let mut objects: Vec<Point> = named
        .iter()
        .map(|v| Point {
            label: ObjectValue::Named(v.clone()),
            value: v.clone(),
        })
        .collect();
    for prefix in &prefixes {
        // Under this prefix and no longer one; not a named value.
        let value = fresh(&format!("{prefix}~other"), |c| {
            named.contains(c)
                || prefixes
                    .iter()
                    .any(|q| q.len() > prefix.len() && c.starts_with(q.as_str()))
        });
        objects.push(Point {
            label: ObjectValue::Under(format!("{prefix}%")),
            value,
        });
    }
    let value = fresh("~other", |c| {
        named.contains(c) || prefixes.iter().any(|q| c.starts_with(q.as_str()))
    });
    objects.push(Point {
        label: ObjectValue::Other,
        value,
    });
    ActionDomain {
        action,
        noun,
        objects,
    }
}
