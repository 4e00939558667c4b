//! `nestguard acls who-can|can|diff|test`: policy analysis over the finite
//! domain of an ACL file (see `nestguard::authz::analysis`).
//!
//! Exit codes: `who-can` and `can` 0, 1 on errors; `diff` 0 identical, 1
//! different, 2 on errors; `test` 0 all passed, 1 some failed, 2 on errors
//! (the last two as `diff(1)` and test runners do, for CI).

use std::process::ExitCode;

use crate::cli::out::{errln, out, outln};
use clap::Args;
use nestguard::authz::analysis::{self, Principal};
use nestguard::authz::{ParseMode, Policy, Source, load};

/// Arguments of `acls who-can`.
#[derive(Debug, Args)]
pub struct WhoCanArgs {
    /// The ACL JSON file (a path or file:// URL).
    file: String,
    /// Action name (e.g. KILL_NESTED_CONTAINER) or number.
    action: String,
    /// Only this object value (for launches: the user the container runs as).
    #[arg(long)]
    user: Option<String>,
    /// Launches only: only this executor user (the parent half's object).
    #[arg(long)]
    parent_user: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Load as leniently as Mesos does.
    #[arg(long)]
    lenient: bool,
}

/// Arguments of `acls can`.
#[derive(Debug, Args)]
pub struct CanArgs {
    /// The ACL JSON file (a path or file:// URL).
    file: String,
    /// The principal (omit with --unauthenticated).
    #[arg(required_unless_present = "unauthenticated")]
    principal: Option<String>,
    /// Requests without a principal.
    #[arg(long, conflicts_with = "principal")]
    unauthenticated: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Load as leniently as Mesos does.
    #[arg(long)]
    lenient: bool,
}

/// Arguments of `acls diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The ACL file in force.
    old: String,
    /// The ACL file to compare it with.
    new: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Load both as leniently as Mesos does.
    #[arg(long)]
    lenient: bool,
}

/// Arguments of `acls test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The ACL JSON file.
    file: String,
    /// The test cases: a JSON or YAML list of requests with expected
    /// decisions (`.yaml`/`.yml` are YAML; otherwise by content).
    cases: String,
    /// Load the ACLs as leniently as Mesos does.
    #[arg(long)]
    lenient: bool,
}

fn policy(file: &str, lenient: bool) -> anyhow::Result<Policy> {
    let source = Source::File(nestguard::input::flag_path(file).to_path_buf());
    Ok(load(&source, ParseMode { strict: !lenient })?)
}

fn failed(err: &anyhow::Error, code: u8) -> ExitCode {
    errln!("error: {err:#}");
    ExitCode::from(code)
}

/// `acls who-can`.
pub fn who_can(args: &WhoCanArgs) -> ExitCode {
    let run = || -> anyhow::Result<()> {
        let policy = policy(&args.file, args.lenient)?;
        let action = analysis::parse_action(&args.action)?;
        let answer = analysis::who_can(
            &policy,
            action,
            args.user.as_deref(),
            args.parent_user.as_deref(),
        )?;
        if args.json {
            outln!("{}", answer.to_json());
        } else {
            out!("{}", answer.to_text());
        }
        Ok(())
    };
    run().map_or_else(|e| failed(&e, 1), |()| ExitCode::SUCCESS)
}

/// `acls can`.
pub fn can(args: &CanArgs) -> ExitCode {
    let run = || -> anyhow::Result<()> {
        let policy = policy(&args.file, args.lenient)?;
        let principal = match &args.principal {
            Some(p) if !args.unauthenticated => Principal::Named(p.clone()),
            _ => Principal::Unauthenticated,
        };
        let answer = analysis::can(&policy, &principal);
        if args.json {
            outln!("{}", answer.to_json());
        } else {
            out!("{}", answer.to_text());
        }
        Ok(())
    };
    run().map_or_else(|e| failed(&e, 1), |()| ExitCode::SUCCESS)
}

/// `acls diff`.
pub fn diff(args: &DiffArgs) -> ExitCode {
    let run = || -> anyhow::Result<bool> {
        let old = policy(&args.old, args.lenient)?;
        let new = policy(&args.new, args.lenient)?;
        let d = analysis::diff(&old, &new);
        if args.json {
            outln!("{}", d.to_json());
        } else {
            out!("{}", d.to_text());
        }
        Ok(d.is_empty())
    };
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => failed(&e, 2),
    }
}

/// `acls test`.
pub fn test(args: &TestArgs) -> ExitCode {
    let run = || -> anyhow::Result<bool> {
        let policy = policy(&args.file, args.lenient)?;
        let cases = nestguard::input::flag_path(&args.cases);
        let report = super::cases_file::run(&policy, cases)?;
        for line in report.failure_lines() {
            outln!("{line}");
        }
        outln!("{}", report.summary());
        Ok(report.failed() == 0)
    };
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => failed(&e, 2),
    }
}
