//! Table-driven policy tests (like `opa test`): a JSON list of requests,
//! each with the expected decision and optionally the expected deciding
//! entry, checked against a policy with the evaluator.
//!
//! ```json
//! [{"name": "ci kills its own", "principal": "ci",
//!   "action": "KILL_NESTED_CONTAINER", "user": "ci",
//!   "expect": "allow", "decided_by": "manage_nested_containers[1]"}]
//! ```
//!
//! `principal` absent: unauthenticated. `user` is the object's value (the
//! role for role lists, the path for `GET_ENDPOINT_WITH_PATH`; `role` and
//! `object` are accepted as its other names); absent: an object without
//! one. For launches `user` is the command's user (absent: no command) and
//! `parent_user` the executor's. `decided_by` is `list[index]`,
//! `permissive` or `rejected`; for a launch, the deciding half's (the first
//! denying half, else the child, else the parent).
//!
//! The library reads JSON; the command line also reads YAML (`nestguard
//! acls test` picks by extension or content) and hands the same values to
//! [`run_case_values`], so that the YAML parser is not linked into the
//! plugin.

use std::path::Path;

use jsonc_parser::ast::Value as Ast;
use jsonc_parser::{CollectOptions, ParseOptions};
use serde::Deserialize;

use super::AnalysisError;
use super::domain::{ObjectReq, Verdict, decide};
use crate::authz::compile::{Policy, Req};
use crate::authz::lists::{Route, route};
use crate::authz::parse::Location;
use crate::input::{self, DEFAULT_MAX_FILE_SIZE};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseSpec {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    principal: Option<String>,
    action: String,
    #[serde(default, alias = "role", alias = "object")]
    user: Option<String>,
    #[serde(default)]
    parent_user: Option<String>,
    expect: Expect,
    #[serde(default)]
    decided_by: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Expect {
    Allow,
    Deny,
}

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    /// Index in the list.
    pub index: usize,
    /// Where the case starts in the cases file.
    pub location: Location,
    /// Its `name`, or `case <index>`.
    pub name: String,
    /// Whether decision and deciding entry are as expected.
    pub passed: bool,
    /// What the policy decided.
    pub verdict: Verdict,
    /// Why it failed (empty when it passed).
    pub message: String,
}

/// The results of a cases file.
#[derive(Debug, Clone)]
pub struct CasesReport {
    /// The cases file.
    pub origin: String,
    /// One per case, in file order.
    pub outcomes: Vec<CaseOutcome>,
}

impl CasesReport {
    /// Number of cases that passed.
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.passed).count()
    }

    /// Number of cases that failed.
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.passed()
    }

    /// One line per failure: `FILE:LINE:COLUMN: NAME: what differed`.
    pub fn failure_lines(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|o| !o.passed)
            .map(|o| format!("{}:{}: {}: {}", self.origin, o.location, o.name, o.message))
            .collect()
    }

    /// `N passed, N failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed(), self.failed())
    }
}

/// Runs the cases of a file (JSON, at most 16 MiB) against a policy.
pub fn run_cases_file(policy: &Policy, path: &Path) -> Result<CasesReport, AnalysisError> {
    let (text, origin) = read_cases_file(path)?;
    run_cases(policy, &text, &origin)
}

/// The text of a cases file (at most 16 MiB) and its name for locations.
pub fn read_cases_file(path: &Path) -> Result<(String, String), AnalysisError> {
    let origin = path.display().to_string();
    let text = input::read_text(path, DEFAULT_MAX_FILE_SIZE).map_err(|source| {
        AnalysisError::CasesRead {
            path: origin.clone(),
            source,
        }
    })?;
    Ok((text, origin))
}

fn location(text: &str, offset: usize) -> Location {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    Location {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}

fn start(v: &Ast<'_>) -> usize {
    match v {
        Ast::StringLit(s) => s.range.start,
        Ast::NumberLit(n) => n.range.start,
        Ast::BooleanLit(b) => b.range.start,
        Ast::Object(o) => o.range.start,
        Ast::Array(a) => a.range.start,
        Ast::NullKeyword(n) => n.range.start,
    }
}

/// Plain JSON: no comments, trailing commas or loose keys.
const STRICT_JSON: ParseOptions = ParseOptions {
    allow_comments: false,
    allow_loose_object_property_names: false,
    allow_trailing_commas: false,
    allow_missing_commas: false,
    allow_single_quoted_strings: false,
    allow_hexadecimal_numbers: false,
    allow_unary_plus_numbers: false,
    allow_bare_decimal_point_numbers: false,
    allow_non_finite_numbers: false,
    allow_extended_string_escapes: false,
};

/// Runs the cases in `text` (a JSON list) against a policy. `origin` names
/// the cases file in locations.
pub fn run_cases(policy: &Policy, text: &str, origin: &str) -> Result<CasesReport, AnalysisError> {
    let syntax = |location, message: String| AnalysisError::CasesSyntax {
        origin: origin.to_owned(),
        location,
        message,
    };
    // jsonc-parser for positions (serde_json's values carry none), serde
    // for the fields.
    let ast = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &STRICT_JSON).map_err(
        |e| {
            syntax(
                location(text, e.range().start),
                format!("not valid JSON: {}", e.kind()),
            )
        },
    )?;
    let Some(Ast::Array(array)) = ast.value else {
        return Err(syntax(
            Location { line: 1, column: 1 },
            "expected a JSON list of test cases".to_owned(),
        ));
    };
    let values: Vec<serde_json::Value> = serde_json::from_str(text)
        .map_err(|e| syntax(Location::default(), format!("not valid JSON: {e}")))?;
    let cases = array
        .elements
        .iter()
        .map(|element| location(text, start(element)))
        .zip(values)
        .collect();
    run_case_values(policy, cases, origin)
}

/// Runs cases read from a file of any syntax: each case's value (an object
/// with the fields in the module notes) with where it starts in `origin`.
pub fn run_case_values(
    policy: &Policy,
    cases: Vec<(Location, serde_json::Value)>,
    origin: &str,
) -> Result<CasesReport, AnalysisError> {
    let mut outcomes = Vec::with_capacity(cases.len());
    for (index, (at, value)) in cases.into_iter().enumerate() {
        let bad = |message: String| AnalysisError::Case {
            origin: origin.to_owned(),
            location: at,
            index,
            message,
        };
        let spec: CaseSpec = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        outcomes.push(run_case(policy, index, at, spec).map_err(bad)?);
    }
    Ok(CasesReport {
        origin: origin.to_owned(),
        outcomes,
    })
}

fn some(v: &Option<String>) -> Option<Req<'_>> {
    v.as_deref().map(|s| Req::Some(s.as_bytes()))
}

fn run_case(
    policy: &Policy,
    index: usize,
    location: Location,
    spec: CaseSpec,
) -> Result<CaseOutcome, String> {
    let action = super::parse_action(&spec.action).map_err(|e| e.to_string())?;
    let launch = matches!(route(action), Route::Nested { .. });
    if spec.parent_user.is_some() && !launch {
        return Err(format!(
            "`parent_user` applies only to launches, not to {}",
            action.as_str_name()
        ));
    }
    let subject = some(&spec.principal).unwrap_or(Req::Any);
    let object = if launch {
        ObjectReq::Launch {
            parent: some(&spec.parent_user).unwrap_or(Req::Any),
            child: some(&spec.user),
        }
    } else {
        ObjectReq::Single(some(&spec.user).unwrap_or(Req::Any))
    };
    let verdict = decide(policy, action, subject, object);
    let expected = spec.expect == Expect::Allow;
    let word = |a: bool| if a { "allow" } else { "deny" };
    let mut problems = Vec::new();
    if verdict.allowed != expected {
        problems.push(format!(
            "expected {}, got {} ({verdict})",
            word(expected),
            word(verdict.allowed)
        ));
    }
    if let Some(want) = &spec.decided_by {
        let got = verdict.decided_by.key();
        if *want != got {
            problems.push(format!(
                "expected decided_by {want}, got {}",
                verdict.decided_by
            ));
        }
    }
    Ok(CaseOutcome {
        index,
        location,
        name: spec.name.unwrap_or_else(|| format!("case {index}")),
        passed: problems.is_empty(),
        verdict,
        message: problems.join("; "),
    })
}
