//! Policy analysis: who may do what, the exact difference between two ACL
//! files, and table-driven policy tests.
//!
//! Mesos' ACL matching compares request values for *equality* with the values
//! an entry lists (or, for role lists, with `x/%` prefixes), and `ANY`/`NONE`
//! match everything. So every principal that no file names decides like every
//! other such principal, and likewise for object users: the domain is finite
//! — the named values, one representative "any other" value per side (and
//! one per role prefix), plus "unauthenticated" — and a question answered
//! over it is answered for every request. [`domain`] builds that domain and
//! decides each point with the evaluator's own functions
//! ([`super::evaluate::decide_list`], [`super::evaluate::decide_launch`],
//! [`super::roles::decide_role`]), never a second copy of the rules;
//! [`who_can`], [`diff`] and [`cases`] are views over those decisions.
#![forbid(unsafe_code)]

pub mod cases;
pub mod classes;
pub mod diff;
pub mod domain;
pub mod who_can;

pub use cases::{
    CaseOutcome, CasesReport, read_cases_file, run_case_values, run_cases, run_cases_file,
};
pub use diff::{Change, Diff, diff};
pub use domain::{Decider, Domain, Half, ObjectValue, Principal, Probe, Target, Verdict};
pub use who_can::{Can, WHO_CAN_BUDGET, WhoCan, WhoCanRow, can, who_can, who_can_within};

use super::parse::Location;
use crate::input::InputError;

/// Why an analysis could not run. Policy files themselves fail earlier, with
/// [`super::LoadError`].
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// An action name Mesos does not know, or `UNKNOWN`.
    #[error("unknown action {name:?} (use Mesos' names, e.g. KILL_NESTED_CONTAINER)")]
    UnknownAction {
        /// What was given.
        name: String,
    },
    /// The cases file could not be read.
    #[error("{path}: cannot read test cases: {source}")]
    CasesRead {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: InputError,
    },
    /// The cases file is not JSON, or not a list of cases.
    #[error("{origin}:{location}: {message}")]
    CasesSyntax {
        /// The cases file.
        origin: String,
        /// Where the problem starts.
        location: Location,
        /// What was expected.
        message: String,
    },
    /// One case is malformed (unknown field, bad action, bad `expect`).
    #[error("{origin}:{location}: case {index}: {message}")]
    Case {
        /// The cases file.
        origin: String,
        /// Where the case starts.
        location: Location,
        /// Its index in the list.
        index: usize,
        /// What was wrong and what was expected.
        message: String,
    },
    /// `who-can` would give more answers than its budget.
    #[error(
        "who-can {action} needs more than {budget} answers over {targets} objects (its budget): \
         ask about one object with --user (and --parent-user for launches)"
    )]
    OverBudget {
        /// The action asked about.
        action: &'static str,
        /// The budget ([`WHO_CAN_BUDGET`]).
        budget: usize,
        /// How many objects (rows) the question has.
        targets: usize,
    },
}

/// Looks an action up by Mesos' name (`KILL_NESTED_CONTAINER`) or number.
pub fn parse_action(
    text: &str,
) -> Result<crate::proto::mesos::authorization::Action, AnalysisError> {
    use crate::proto::mesos::authorization::Action;
    let found = match text.parse::<i32>() {
        Ok(n) => Action::try_from(n).ok(),
        Err(_) => Action::from_str_name(text),
    };
    found
        .filter(|a| *a != Action::Unknown)
        .ok_or_else(|| AnalysisError::UnknownAction {
            name: text.to_owned(),
        })
}
