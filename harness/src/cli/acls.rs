//! `nestguard acls check|explain`: validate and lint an ACL file, and show
//! which entry decides a request; `who-can|can|diff|test` (policy analysis)
//! live in `acls/analysis.rs`.
//!
//! Exit codes follow the Cedar CLI: `check` 0 valid / 1 invalid; `explain`
//! 0 allowed / 2 denied / 1 error.

use crate::cli::out::{errln, outln};
use std::process::ExitCode;

mod analysis;
mod cases_file;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use nestguard::authz::{Authorizer, ParseMode, Source, explain, lint};
use nestguard::proto::mesos::authorization::{Action, Object, Request, Subject};
use nestguard::proto::mesos::{
    CommandInfo, ExecutorId, ExecutorInfo, FrameworkInfo, Label, Labels,
};

/// `nestguard acls ...`.
#[derive(Debug, Subcommand)]
pub enum AclsCommand {
    /// Load, validate and lint an ACL file (exit 0 valid, 1 invalid; warnings on stderr).
    Check {
        /// The ACL JSON file (a path or file:// URL).
        file: String,
        /// Load as leniently as Mesos does (ignore unknown keys and types).
        #[arg(long)]
        lenient: bool,
    },
    /// Decide a request and print the deciding entry (exit 0 allowed, 2 denied, 1 error).
    Explain(ExplainArgs),
    /// Every principal allowed an action, per object, with the deciding entries.
    WhoCan(analysis::WhoCanArgs),
    /// Everything one principal may do, with the deciding entries.
    Can(analysis::CanArgs),
    /// Every request two ACL files decide differently (exit 0 same, 1 different, 2 error).
    Diff(analysis::DiffArgs),
    /// Run table-driven policy tests (exit 0 all passed, 1 failures, 2 error).
    Test(analysis::TestArgs),
}

/// Arguments of `acls explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The ACL JSON file (a path or file:// URL).
    file: String,
    /// A mesos.authorization.Request in Mesos' JSON form; flags below override its fields.
    #[arg(long)]
    request: Option<String>,
    /// Action name (e.g. LAUNCH_NESTED_CONTAINER) or number.
    #[arg(long)]
    action: Option<String>,
    /// The subject's principal value.
    #[arg(long)]
    principal: Option<String>,
    /// A subject claim `key=value` (repeatable).
    #[arg(long = "claim", value_name = "KEY=VALUE")]
    claims: Vec<String>,
    /// executor_info.command.user.
    #[arg(long)]
    executor_user: Option<String>,
    /// framework_info.user.
    #[arg(long)]
    framework_user: Option<String>,
    /// command_info.user (sets a command).
    #[arg(long)]
    command_user: Option<String>,
    /// container_id in dotted form (root.child...).
    #[arg(long)]
    container_id: Option<String>,
    /// Print JSON ({"allowed", "list", "index", ...}).
    #[arg(long)]
    json: bool,
    /// Load as leniently as Mesos does.
    #[arg(long)]
    lenient: bool,
}

fn source(file: &str) -> Source {
    Source::File(nestguard::input::flag_path(file).to_path_buf())
}

/// Runs an `acls` command.
pub fn run(command: AclsCommand) -> anyhow::Result<ExitCode> {
    match command {
        AclsCommand::Check { file, lenient } => Ok(check(&file, lenient)),
        AclsCommand::Explain(args) => match explain_cmd(&args) {
            Ok(code) => Ok(code),
            Err(err) => {
                errln!("error: {err:#}");
                Ok(ExitCode::from(1))
            }
        },
        AclsCommand::WhoCan(args) => Ok(analysis::who_can(&args)),
        AclsCommand::Can(args) => Ok(analysis::can(&args)),
        AclsCommand::Diff(args) => Ok(analysis::diff(&args)),
        AclsCommand::Test(args) => Ok(analysis::test(&args)),
    }
}

fn check(file: &str, lenient: bool) -> ExitCode {
    let auth = match Authorizer::new(source(file), ParseMode { strict: !lenient }) {
        Ok(a) => a,
        Err(err) => {
            errln!("error: {err}");
            return ExitCode::from(1);
        }
    };
    let policy = auth.policy();
    let warnings = lint::lint(&policy.doc);
    for w in &warnings {
        if w.list.is_some() {
            errln!("warning: {}:{w}", policy.origin);
        } else {
            errln!("warning: {}: {w}", policy.origin);
        }
    }
    let entries: usize = policy.doc.lists.iter().map(Vec::len).sum();
    let lists = policy.doc.lists.iter().filter(|l| !l.is_empty()).count();
    outln!(
        "{}: valid ({entries} entries in {lists} lists, permissive={}, {} warnings)",
        policy.origin,
        policy.permissive(),
        warnings.len()
    );
    ExitCode::SUCCESS
}

fn parse_action(text: &str) -> anyhow::Result<Action> {
    if let Ok(n) = text.parse::<i32>() {
        return Action::try_from(n).map_err(|_| anyhow::anyhow!("unknown action number {n}"));
    }
    Action::from_str_name(text).with_context(|| {
        format!("unknown action {text:?} (use Mesos' names, e.g. LAUNCH_NESTED_CONTAINER)")
    })
}

fn build_request(args: &ExplainArgs) -> anyhow::Result<Request> {
    let mut request = match &args.request {
        Some(json) => nestguard::json::from_json::<Request>(json).context("--request")?,
        None => Request::default(),
    };
    if let Some(a) = &args.action {
        request.action = Some(parse_action(a)? as i32);
    }
    if args.principal.is_some() || !args.claims.is_empty() {
        let subject = request.subject.get_or_insert_with(Subject::default);
        if let Some(p) = &args.principal {
            subject.value = Some(p.clone());
        }
        for claim in &args.claims {
            let Some((k, v)) = claim.split_once('=') else {
                bail!("--claim {claim:?}: expected KEY=VALUE");
            };
            subject
                .claims
                .get_or_insert_with(Labels::default)
                .labels
                .push(Label {
                    key: k.to_owned(),
                    value: Some(v.to_owned()),
                });
        }
    }
    let touches_object = args.executor_user.is_some()
        || args.framework_user.is_some()
        || args.command_user.is_some()
        || args.container_id.is_some();
    if touches_object {
        let object = request.object.get_or_insert_with(Object::default);
        if let Some(u) = &args.executor_user {
            let e = object.executor_info.get_or_insert_with(|| ExecutorInfo {
                executor_id: ExecutorId {
                    value: "default".to_owned(),
                },
                ..ExecutorInfo::default()
            });
            e.command.get_or_insert_with(CommandInfo::default).user = Some(u.clone());
        }
        if let Some(u) = &args.framework_user {
            object
                .framework_info
                .get_or_insert_with(FrameworkInfo::default)
                .user = u.clone();
        }
        if let Some(u) = &args.command_user {
            object
                .command_info
                .get_or_insert_with(CommandInfo::default)
                .user = Some(u.clone());
        }
        if let Some(c) = &args.container_id {
            object.container_id =
                Some(nestguard::container_id::parse_dotted(c).context("--container-id")?);
        }
    }
    if request.action.is_none() {
        bail!("no action: give --action or \"action\" in --request");
    }
    Ok(request)
}

fn explain_cmd(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let auth = Authorizer::new(
        source(&args.file),
        ParseMode {
            strict: !args.lenient,
        },
    )?;
    let request = build_request(args)?;
    let policy = auth.policy();
    let decision = auth.explain_in(&policy, &request)?;
    if args.json {
        outln!("{}", explain::to_json(&policy, &decision));
    } else {
        outln!("{}", explain::to_text(&policy, &decision));
    }
    Ok(if decision.allowed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
