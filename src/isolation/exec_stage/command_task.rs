//! Command tasks: the stage confines the command executor, and so its task.
//!
//! Mesos 1.11 runs a command task inside the container of its command
//! executor (`<launcher_dir>/mesos-executor`), which later starts the task
//! through `mesos-containerizer launch` itself: no isolator prepares the
//! task's process. And for that container an isolator may only add
//! `arguments` to the executor's command: the agent CHECK-fails (aborts)
//! when one sets its `value`, `shell`, `user`, `environment` or `uris`
//! (`containerizer.cpp`, about line 1763).
//!
//! So the isolator appends three arguments, [`STAGE_ARG`], [`PLAN_ARG`] and
//! [`SEAL_ARG`], and the `mesos-containerizer` wrapper (which sees the final
//! launch info of every container) turns the executor's command into the
//! stage form before Mesos' helper runs it:
//!
//! ```text
//! <stage> --plan=… --seal=… -- <mesos-executor> mesos-executor --launcher_dir=… …
//! ```
//!
//! The executor then runs confined, and every defence the stage applies
//! (bounding set, `no_new_privs`, seccomp, read-only kernel paths) is
//! inherited by the task it forks: a task can never hold more than its
//! executor. What Mesos still does itself: everything else, as for any
//! container, and the executor's own start of the task.
//!
//! Fails closed at every step: without the wrapper the arguments reach
//! Mesos' command executor, which exits on an unknown flag
//! (`src/launcher/executor.cpp`: "the command executor exits if it sees an
//! unknown flag"); a triple that is incomplete, repeated, or not sealed by
//! this host's key ends the launch with a message.

use serde_json::Value;

use super::seal::{self, SealKey};
use super::{STAGE_NAME, WRAPPED_STAGE};

/// The stage's path (`exec_stage`).
pub const STAGE_ARG: &str = "--nestguard_exec_stage=";
/// The plan, as after `--plan=`.
pub const PLAN_ARG: &str = "--nestguard_exec_plan=";
/// The seal, as after `--seal=`.
pub const SEAL_ARG: &str = "--nestguard_exec_seal=";
/// Mesos' command executor (`<launcher_dir>/mesos-executor`).
const EXECUTOR_NAME: &str = "mesos-executor";
/// What the three have in common.
const PREFIX: &str = "--nestguard_exec_";

/// The arguments the isolator appends for a command task.
pub fn arguments(stage: &str, plan_arg: &str, seal_arg: &str) -> Vec<String> {
    vec![
        format!("{STAGE_ARG}{stage}"),
        format!(
            "{PLAN_ARG}{}",
            plan_arg.strip_prefix("--plan=").unwrap_or(plan_arg)
        ),
        format!(
            "{SEAL_ARG}{}",
            seal_arg.strip_prefix("--seal=").unwrap_or(seal_arg)
        ),
    ]
}

/// The one argument of `args` after `prefix`.
fn only<'a>(args: &[&'a str], prefix: &str) -> Result<&'a str, String> {
    let mut found = args.iter().filter_map(|a| a.strip_prefix(prefix));
    match (found.next(), found.next()) {
        (Some(v), None) => Ok(v),
        (None, _) => Err(format!(
            "the command task's launch has no {prefix}… argument"
        )),
        (Some(_), Some(_)) => Err(format!(
            "the command task's launch has {prefix}… more than once"
        )),
    }
}

/// Turns a command task's executor command carrying the isolator's three
/// arguments into the stage form, if it carries any; `Ok(false)`: it
/// carries none (leave it alone). `user` is the launch info's ("" for none),
/// as the isolator sealed it.
pub fn into_stage(command: &mut Value, user: &str, keys: &[SealKey]) -> Result<bool, String> {
    let value = command.get("value").and_then(Value::as_str).unwrap_or("");
    if value.rsplit('/').next() == Some(STAGE_NAME) {
        // Already the stage: what follows its `--` is the tenant's command,
        // whose arguments are never the isolator's.
        return Ok(false);
    }
    if value.rsplit('/').next() != Some(EXECUTOR_NAME) {
        // Only Mesos' command executor carries the isolator's three.
        return Ok(false);
    }
    let args: Vec<String> = command
        .get("arguments")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(first) = args.iter().position(|a| a.starts_with(PREFIX)) else {
        return Ok(false);
    };
    let ours: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| a.starts_with(PREFIX))
        .collect();
    let stage = only(&ours, STAGE_ARG)?.to_owned();
    let plan_arg = format!("--plan={}", only(&ours, PLAN_ARG)?);
    let seal_arg = format!("--seal={}", only(&ours, SEAL_ARG)?);
    let block = [STAGE_ARG, PLAN_ARG, SEAL_ARG];
    let in_order = args
        .get(first..first + 3)
        .is_some_and(|three| three.iter().zip(block).all(|(a, p)| a.starts_with(p)));
    if ours.len() != 3 || !in_order {
        return Err(
            "the command task's launch has --nestguard_exec_… arguments other than the \
             isolator's three, in order"
                .into(),
        );
    }
    if !seal::verified(keys, &plan_arg, &stage, user, &[], &seal_arg) {
        return Err(format!(
            "the exec stage's plan for this command task is not sealed by this host's nestguard \
             (keys in {}) for stage '{}' and user '{}': refusing to run it",
            seal::KEY_DIR,
            stage.escape_debug(),
            user.escape_debug()
        ));
    }
    let stage_path = std::path::Path::new(&stage);
    if !stage_path.is_absolute() || stage_path.file_name() != Some(STAGE_NAME.as_ref()) {
        return Err(format!(
            "{STAGE_ARG}{stage}: expected an absolute path to {STAGE_NAME}"
        ));
    }
    if command.get("shell").and_then(Value::as_bool) == Some(true) {
        return Err("the command task's executor command is a shell command".into());
    }
    let Some(value) = command.get("value").and_then(Value::as_str) else {
        return Err("the command task's executor command has no value".into());
    };
    let mut staged = vec![
        STAGE_NAME.to_owned(),
        plan_arg,
        seal_arg,
        "--".to_owned(),
        value.to_owned(),
    ];
    staged.extend(args.into_iter().filter(|a| !a.starts_with(PREFIX)));
    // Made runnable by the wrapper's next step, as every stage command.
    command["value"] = Value::String(WRAPPED_STAGE.to_owned());
    command["shell"] = Value::Bool(false);
    command["arguments"] = Value::from(staged);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn executor_command(extra: Vec<String>) -> Value {
        let mut args = vec![
            "mesos-executor".to_owned(),
            "--launcher_dir=/opt/mesos/libexec".to_owned(),
        ];
        args.extend(extra);
        args.push("--task_environment={}".to_owned());
        json!({"shell": false, "value": "/opt/mesos/libexec/mesos-executor", "arguments": args})
    }

    fn key(tag: &str) -> (std::path::PathBuf, SealKey) {
        let dir = std::env::temp_dir().join(format!("ng-cmdtask-{tag}-{}", std::process::id()));
        let key = SealKey::create(&dir, "test").unwrap();
        (dir, key)
    }

    #[test]
    fn the_sealed_arguments_become_the_stage_around_the_executor() {
        let (dir, key) = key("ok");
        let plan = "--plan=e30=";
        let stage = "/opt/ng/nestguard-exec";
        let ours = arguments(stage, plan, &key.seal(plan, stage, "nobody", &[]));
        let mut command = executor_command(ours);
        assert!(into_stage(&mut command, "nobody", std::slice::from_ref(&key)).unwrap());
        assert_eq!(command["value"], WRAPPED_STAGE);
        assert_eq!(command["shell"], false);
        let args: Vec<&str> = command["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(&args[..2], ["nestguard-exec", plan]);
        assert!(args[2].starts_with("--seal="));
        assert_eq!(
            &args[3..],
            [
                "--",
                "/opt/mesos/libexec/mesos-executor",
                "mesos-executor",
                "--launcher_dir=/opt/mesos/libexec",
                "--task_environment={}"
            ]
        );
        // Without any of the three: left alone.
        let mut plain = executor_command(vec![]);
        assert!(!into_stage(&mut plain, "nobody", &[key]).unwrap());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn forged_partial_or_repeated_arguments_fail_closed() {
        let (dir, key) = key("bad");
        let plan = "--plan=e30=";
        let stage = "/opt/ng/nestguard-exec";
        let good = arguments(stage, plan, &key.seal(plan, stage, "nobody", &[]));
        let keys = std::slice::from_ref(&key);
        let cases: Vec<(Vec<String>, &str, &str)> = vec![
            (good.clone(), "root", "not sealed"),
            (good[..2].to_vec(), "nobody", "no --nestguard_exec_seal"),
            (
                [good.clone(), vec![good[1].clone()]].concat(),
                "nobody",
                "more than once",
            ),
            (
                [good.clone(), vec!["--nestguard_exec_x=1".into()]].concat(),
                "nobody",
                "other than",
            ),
            (
                vec![
                    good[0].clone(),
                    "--x".into(),
                    good[1].clone(),
                    good[2].clone(),
                ],
                "nobody",
                "in order",
            ),
            // A harvested plan and seal with a stage of the tenant's.
            (
                arguments(
                    "/tmp/evil/nestguard-exec",
                    plan,
                    &key.seal(plan, stage, "nobody", &[]),
                ),
                "nobody",
                "not sealed",
            ),
            (
                arguments(
                    "evil/nestguard-exec",
                    plan,
                    &key.seal(plan, "evil/nestguard-exec", "nobody", &[]),
                ),
                "nobody",
                "absolute path",
            ),
        ];
        for (extra, user, want) in cases {
            let mut command = executor_command(extra);
            let e = into_stage(&mut command, user, keys).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
        // The three after a stage command's `--` are a tenant's arguments:
        // left alone (the stage runs them as the command's argv).
        let mut tenant: Vec<String> = [
            "nestguard-exec",
            "--plan=e30=",
            "--seal=00",
            "--",
            "/bin/true",
            "true",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        tenant.extend(good.clone());
        let mut staged = json!({"shell": false, "value": stage, "arguments": tenant});
        let before = staged.clone();
        assert!(!into_stage(&mut staged, "nobody", keys).unwrap());
        assert_eq!(staged, before);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
