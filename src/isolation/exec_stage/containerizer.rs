//! The `mesos-containerizer` wrapper: lets the stage switch the user itself.
//!
//! Mesos' launch helper switches to the container's user before it
//! `execve`s the command, and a non-root process cannot reduce its bounding
//! set any more (that needs `CAP_SETPCAP`). So, installed as
//! `<--launcher_dir>/mesos-containerizer` with Mesos' binary beside it as
//! `mesos-containerizer.mesos`, this wrapper rewrites the launch info of
//! every `launch` whose command is the stage: the `user` (and
//! `supplementary_groups`) leave the launch info and become the stage's
//! `--user=uid:gid:groups`, resolved here, on the host, exactly as Mesos'
//! helper resolves them before any `chroot` (`getpwnam`, `getgrouplist`,
//! plus the supplementary groups). Mesos' helper then runs as root to the
//! end and the stage drops everything in the right order.
//!
//! A command task's executor command, which the isolator may only add
//! arguments to, first becomes a stage command here
//! ([`super::command_task`]); it then gets the same user hand-over.
//!
//! The launch info's mounts from or onto a sandbox of the container's tree
//! (a `SANDBOX_PATH` volume's bind, its read-only remount) leave it too,
//! for the same commands only, and become the stage's `--mounts=`: Mesos'
//! helper would make them by path, following a symbolic link the tenant
//! swapped in since the isolator checked them; the stage makes them through
//! descriptors ([`launch_mounts`], which says why the stage and not this
//! wrapper). Mesos' helper still makes every other mount, in order.
//!
//! The container's environment is handed to the stage too, as the values of
//! variables no loader reads ([`handover`]; see the module doc of
//! [`super`]): the
//! stage is a dynamically linked binary that Mesos' helper runs as root,
//! and its loader must never read the tenant's `LD_PRELOAD`. The stage
//! command's value, [`WRAPPED_STAGE`], becomes the stage's path from the
//! sealed plan only here, so a launch that did not pass through this
//! wrapper runs nothing.
//!
//! Everything else passes through untouched: other subcommands, launches
//! whose command is not the stage, and a launch info that does not parse
//! (Mesos' helper reports that itself).

use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::Value;

use super::plan::{ExecPlan, PosixLaunch, StageUser};
use super::seal::{self, SealKey};
use super::{STAGE_NAME, WRAPPED_STAGE};
use super::{command_task, handover, launch_mounts, left_to_mesos, posix_launcher};

/// The environment variable that carries the launch info (Mesos' flag
/// `--launch_info` read from the environment with the helper's prefix).
pub const LAUNCH_INFO_ENV: &str = "MESOS_CONTAINERIZER_LAUNCH_INFO";

/// Mesos' own binary, beside the wrapper.
pub const REAL_SUFFIX: &str = ".mesos";

/// A stage command the isolator sealed: its plan, and where the stage's
/// three arguments begin (after docker/runtime's, for an image's own
/// command: see [`super::docker_command`]).
struct Sealed {
    plan: ExecPlan,
    at: usize,
}

/// `command` (the launch info's) if it is a stage command the isolator
/// sealed for `user` (`""`: the launch info names none): its value is
/// [`WRAPPED_STAGE`], and its arguments hold the stage's three, followed by
/// `--`, whose seal verifies for the plan's own stage path and every other
/// argument ([`seal`]). Only two places can hold them: the start, or, for
/// an image's own command, right after docker/runtime's `a` arguments,
/// which the isolator repeated after `--` behind the executable (`n = 2a +
/// 5`). A command task's executor command, made the stage form by
/// `staged` [`command_task::into_stage`], is sealed with no command, at the
/// start.
fn sealed_plan(command: &Value, user: &str, keys: &[SealKey], staged: bool) -> Option<Sealed> {
    if command.get("value").and_then(Value::as_str)? != WRAPPED_STAGE {
        return None;
    }
    let args: Vec<String> = command
        .get("arguments")?
        .as_array()?
        .iter()
        .map(|a| a.as_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let header = |i: usize| {
        args.get(i).is_some_and(|a| a == STAGE_NAME)
            && args.get(i + 1).is_some_and(|a| a.starts_with("--plan="))
            && args.get(i + 2).is_some_and(|a| a.starts_with("--seal="))
            && args.get(i + 3).is_some_and(|a| a == "--")
    };
    let docker = (!staged && args.len() > 5 && args.len() % 2 == 1).then(|| (args.len() - 5) / 2);
    let places = std::iter::once(0).chain(docker).filter(|&i| header(i));
    for at in places {
        let plan_arg = &args[at + 1];
        let Ok(plan) = ExecPlan::from_arg(&plan_arg.as_bytes()["--plan=".len()..]) else {
            continue;
        };
        let Some(stage) = plan.stage.path.to_str() else {
            continue;
        };
        let named = Path::new(stage).is_absolute()
            && Path::new(stage).file_name() == Some(STAGE_NAME.as_ref());
        let others: Vec<String> = if staged {
            Vec::new()
        } else {
            args[..at].iter().chain(&args[at + 3..]).cloned().collect()
        };
        if named && seal::verified(keys, plan_arg, stage, user, &others, &args[at + 2]) {
            return Some(Sealed { plan, at });
        }
    }
    None
}

/// The user as Mesos' helper resolves it; `None` when it is the current
/// effective user (Mesos then switches nothing either).
fn resolve(name: &str, extra: &[u32]) -> Result<Option<StageUser>, String> {
    let user = nix::unistd::User::from_name(name)
        .map_err(|e| format!("getpwnam({name:?}): {e}"))?
        .ok_or_else(|| format!("Failed to get the uid of user '{name}': not found"))?;
    if user.uid == nix::unistd::geteuid() {
        return Ok(None);
    }
    let cname = CString::new(name).map_err(|_| "the user name has a NUL byte".to_owned())?;
    let mut groups: Vec<u32> = nix::unistd::getgrouplist(&cname, user.gid)
        .map_err(|e| format!("getgrouplist({name:?}): {e}"))?
        .into_iter()
        .map(|g| g.as_raw())
        .collect();
    groups.extend_from_slice(extra);
    Ok(Some(StageUser {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
        groups,
    }))
}

/// Rewrites one launch info (JSON text) with the sealing keys in
/// `key_dir`; `Ok(None)`: leave it as it is. A command task's executor
/// command first becomes the stage form ([`command_task`]).
pub fn rewrite(text: &str, key_dir: &Path) -> Result<Option<String>, String> {
    rewrite_for(text, key_dir, Joins::No)
}

/// How Mesos' helper will join another container's mount namespace (its
/// `--namespace_mnt_target` flag: a debug session), if it will.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joins {
    /// It will not: the container has a mount namespace of its own.
    No,
    /// A namespace whose root is the host's (a container without an image).
    SameRoot,
    /// A namespace with another root: a container with its own image.
    OtherRoot,
}

/// [`rewrite`] for a helper that joins another container's mount namespace
/// as `joins` says.
pub fn rewrite_for(text: &str, key_dir: &Path, joins: Joins) -> Result<Option<String>, String> {
    Ok(rewrite_with_plan(text, key_dir, joins)?.map(|(text, _)| text))
}

/// [`rewrite_for`], with what the wrapper itself must do under Mesos' posix
/// launcher ([`super::posix_launcher`]).
fn rewrite_with_plan(
    text: &str,
    key_dir: &Path,
    joins: Joins,
) -> Result<Option<(String, PosixLaunch)>, String> {
    let Ok(mut info) = serde_json::from_str::<Value>(text) else {
        return Ok(None);
    };
    let Some(obj) = info.as_object_mut() else {
        return Ok(None);
    };
    let name = obj
        .get("user")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let keys = seal::read_keys(key_dir);
    let staged = match obj.get_mut("command") {
        Some(command) => command_task::into_stage(command, &name, &keys)?,
        None => false,
    };
    let wrapped = obj
        .get("command")
        .and_then(|c| c.get("value"))
        .and_then(Value::as_str)
        == Some(WRAPPED_STAGE);
    let Some(Sealed { plan, at }) = obj
        .get("command")
        .and_then(|c| sealed_plan(c, &name, &keys, staged))
    else {
        // The isolator's command that does not verify never goes on to
        // Mesos' helper: it would run whatever the container's tree has at
        // that path (in an image, the tenant's), with the defences gone.
        return if staged || wrapped {
            Err(format!(
                "the exec stage's command for this container is not sealed by this host's \
                 nestguard (keys in {}) for user '{}' and these arguments: refusing to run it",
                key_dir.display(),
                name.escape_debug()
            ))
        } else {
            Ok(None)
        };
    };
    if joins == Joins::OtherRoot {
        return Err(format!(
            "container '{}' would join a mount namespace whose root is another container's \
             image (a debug session into it): nestguard's exec stage is not in that image, so \
             under Mesos' launcher it refuses to run there",
            plan.container
        ));
    }
    let mut handed: Vec<String> = user_of(obj, &name)?.iter().map(StageUser::to_arg).collect();
    handover::drop_binds_of_absent_proc_files(obj, &plan);
    handed.extend(sandbox_mounts(obj, &plan, joins != Joins::No)?);
    handed.extend(handover::take_rootfs(obj, &plan)?);
    handover::take_environment(obj);
    obj.remove("user");
    obj.remove("supplementary_groups");
    let stage = plan.stage.path.to_string_lossy().into_owned();
    if let Some(command) = obj.get_mut("command").and_then(Value::as_object_mut) {
        command.insert("value".into(), Value::String(stage));
        if let Some(args) = command.get_mut("arguments").and_then(Value::as_array_mut) {
            // docker/runtime's arguments, before the stage's: the stage
            // runs them after its `--`.
            args.drain(..at);
            args.splice(3..3, handed.into_iter().map(Value::String));
        }
    }
    if plan.posix.unshare != 0 {
        // Mesos' helper mounts only where it sees CLONE_NEWNS cloned.
        let flags = posix_launcher::clone_flags(plan.posix.unshare);
        obj.insert("clone_namespaces".into(), serde_json::json!(flags));
    }
    Ok(Some((info.to_string(), plan.posix)))
}

/// The user to switch to, resolved from the launch info's `user` (`name`)
/// and `supplementary_groups`; `None` when there is none or it is the
/// current effective user.
fn user_of(obj: &serde_json::Map<String, Value>, name: &str) -> Result<Option<StageUser>, String> {
    if name.is_empty() {
        return Ok(None);
    }
    let extra: Vec<u32> = obj
        .get("supplementary_groups")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_u64)
                .filter_map(|g| u32::try_from(g).ok())
                .collect()
        })
        .unwrap_or_default();
    resolve(name, &extra)
}

/// Takes the sandbox mounts out of a sealed stage command's launch info
/// (see [`launch_mounts`]): the stage's `--mounts=` argument, if any.
/// The sandboxes are the sealed plan's, never the launch info's.
fn sandbox_mounts(
    obj: &mut serde_json::Map<String, Value>,
    plan: &ExecPlan,
    joins_mount_namespace: bool,
) -> Result<Option<String>, String> {
    if ["mounts", "file_operations", "masked_paths"]
        .iter()
        .all(|k| !obj.contains_key(*k))
    {
        return Ok(None);
    }
    let taken = launch_mounts::take(
        obj,
        &plan.sandboxes,
        plan.rootfs.as_deref(),
        joins_mount_namespace,
    )?;
    left_to_mesos::left_mounts_are_safe(obj, plan.rootfs.as_deref(), &plan.stage.path)?;
    Ok((!taken.is_empty()).then(|| launch_mounts::to_arg(&taken)))
}

/// The environment variable of Mesos' helper's `--namespace_mnt_target`
/// flag: the agent passes the launch flags in the environment
/// (`launchFlags.buildEnvironment("MESOS_CONTAINERIZER_")`), not on argv.
pub const NAMESPACE_MNT_TARGET_ENV: &str = "MESOS_CONTAINERIZER_NAMESPACE_MNT_TARGET";

/// How Mesos' helper will join another container's mount namespace (a
/// debug session): its `--namespace_mnt_target` flag (a pid), in the
/// environment as the agent passes it, or on argv; the root of that pid
/// compared with ours. A target that cannot be read counts as another root
/// (the launch is then refused, never run in an unknown tree).
fn joins_mount_namespace(args: &[OsString], env: Option<OsString>) -> Joins {
    let on_argv = args.iter().find_map(|a| {
        a.as_bytes()
            .strip_prefix(b"--namespace_mnt_target=")
            .map(|v| OsString::from_vec(v.to_vec()))
    });
    let flagged = args
        .iter()
        .any(|a| a.as_bytes().starts_with(b"--namespace_mnt_target"));
    let target = env.filter(|v| !v.is_empty()).or(on_argv);
    if target.is_none() && !flagged {
        return Joins::No;
    }
    let pid = target
        .as_deref()
        .and_then(|t| t.to_str())
        .and_then(|t| t.parse::<u32>().ok());
    let root = |p: &str| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
    match pid.and_then(|pid| root(&format!("/proc/{pid}/root"))) {
        Some(theirs) if Some(theirs) == root("/") => Joins::SameRoot,
        _ => Joins::OtherRoot,
    }
}

/// Before a refusal: waits, as Mesos' helper does first, until the agent
/// has isolated the container and signals on the control pipe (its
/// `--pipe_read`/`--pipe_write` flags, in the environment or on argv).
/// Exiting earlier, the wrapper would fail the agent's `isolate` (the pid
/// gone from its cgroups), and the refusal's message would be lost; after
/// it, the container exits with the message on its stderr (a debug
/// session's client reads it there).
fn wait_for_agent(args: &[OsString]) {
    let flag = |name: &str| {
        let prefix = format!("--{name}=");
        args.iter()
            .find_map(|a| a.to_str()?.strip_prefix(&prefix).map(str::to_owned))
            .or_else(|| std::env::var(format!("MESOS_CONTAINERIZER_{}", name.to_uppercase())).ok())
            .and_then(|v| v.parse::<i32>().ok())
    };
    let (Some(read), Some(write)) = (flag("pipe_read"), flag("pipe_write")) else {
        return;
    };
    // SAFETY: the agent's pipe, inherited for this purpose; closed or read
    // as Mesos' helper would, by number.
    unsafe { libc::close(write) };
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into a local.
        let n = unsafe { libc::read(read, (&raw mut byte).cast(), 1) };
        if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
}

/// Runs the wrapper: returns only on failure, with the message to print.
pub fn run(args: &[OsString]) -> String {
    let real = match std::env::current_exe() {
        Ok(exe) => {
            let mut name = exe.file_name().unwrap_or_default().to_os_string();
            name.push(REAL_SUFFIX);
            exe.with_file_name(name)
        }
        Err(e) => return format!("cannot find its own binary: {e}"),
    };
    // A `--launch_info=` on the command line wins over the environment in
    // Mesos' helper (a command executor's task launch): the environment's
    // then is not the one that runs, and may be the tenant's.
    let on_argv = args
        .iter()
        .any(|a| a.as_bytes().starts_with(b"--launch_info"));
    if args.get(1).map(|a| a.as_bytes()) == Some(b"launch")
        && !on_argv
        && let Some(text) = std::env::var_os(LAUNCH_INFO_ENV)
    {
        let joins = joins_mount_namespace(args, std::env::var_os(NAMESPACE_MNT_TARGET_ENV));
        match rewrite_with_plan(&text.to_string_lossy(), Path::new(seal::KEY_DIR), joins) {
            Ok(Some((new, posix))) => {
                // SAFETY: single-threaded here (the wrapper's main, before
                // any thread), as set_var requires.
                unsafe { std::env::set_var(LAUNCH_INFO_ENV, new) };
                if let Err(e) = posix_launcher::enter(&posix) {
                    wait_for_agent(args);
                    return format!("under Mesos' posix launcher: {e}");
                }
            }
            Ok(None) => {}
            Err(e) => {
                wait_for_agent(args);
                return e;
            }
        }
    }
    exec_real(&real, args)
}

fn exec_real(real: &Path, args: &[OsString]) -> String {
    let path = match CString::new(real.as_os_str().as_bytes()) {
        Ok(p) => p,
        Err(_) => return "its path has a NUL byte".to_owned(),
    };
    let argv: Result<Vec<CString>, _> = args
        .iter()
        .map(|a| CString::new(a.clone().into_vec()))
        .collect();
    let Ok(argv) = argv else {
        return "an argument has a NUL byte".to_owned();
    };
    let e = nix::unistd::execv(&path, &argv).unwrap_err();
    format!("execv {}: {e}", real.display())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::IntoRawFd;

    struct Keys(std::path::PathBuf, SealKey);
    impl Drop for Keys {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn keys(tag: &str) -> Keys {
        let dir = std::env::temp_dir().join(format!("ng-wrapper-{tag}-{}", std::process::id()));
        let key = SealKey::create(&dir, "test").unwrap();
        Keys(dir, key)
    }

    fn plan_for(stage: &str) -> String {
        ExecPlan::example(stage, &["/w/runs/p", "/w/runs/p/containers/c"]).to_arg()
    }

    /// The command after the stage's three in [`info`].
    fn tail() -> Vec<String> {
        vec!["--".into(), "/bin/true".into()]
    }

    /// A stage launch info sealed for `stage` and `user`, with `value` as
    /// the command's value.
    fn info(key: &SealKey, user: &str, value: &str) -> String {
        let stage = "/opt/ng/nestguard-exec";
        let plan = plan_for(stage);
        serde_json::json!({
            "command": {"shell": false, "value": value,
                        "arguments": ["nestguard-exec", plan, key.seal(&plan, stage, user, &tail()), "--", "/bin/true"]},
            "user": user,
            "supplementary_groups": [4242],
            "working_directory": "/tmp"
        })
        .to_string()
    }

    #[test]
    fn moves_the_user_of_a_sealed_stage_command() {
        if !nix::unistd::geteuid().is_root() {
            return; // the keys must be root's to be read
        }
        let k = keys("move");
        let out = rewrite(&info(&k.1, "nobody", WRAPPED_STAGE), &k.0)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["command"]["value"], "/opt/ng/nestguard-exec");
        assert!(v.get("user").is_none() && v.get("supplementary_groups").is_none());
        let args = v["command"]["arguments"].as_array().unwrap();
        let user = args[3].as_str().unwrap();
        let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
        assert!(
            user.starts_with(&format!("--user={}:{}:", nobody.uid, nobody.gid)),
            "{user}"
        );
        assert!(user.ends_with(",4242"), "{user}");
        assert_eq!(args[4], "--");
        assert_eq!(v["working_directory"], "/tmp");
        let e = rewrite(&info(&k.1, "no-such-user-ng", WRAPPED_STAGE), &k.0).unwrap_err();
        assert!(e.contains("not found"), "{e}");
    }

    #[test]
    fn the_environment_goes_to_the_stage_never_to_its_loader() {
        if !nix::unistd::geteuid().is_root() {
            return; // the keys must be root's to be read
        }
        let k = keys("env");
        // No user in the launch info: sealed for "" (Mesos' helper then
        // switches nobody), and still rewritten.
        let mut v: Value = serde_json::from_str(&info(&k.1, "", WRAPPED_STAGE)).unwrap();
        v.as_object_mut().unwrap().remove("user");
        v["environment"] = serde_json::json!({"variables": [
            {"name": "LD_PRELOAD", "value": "/w/runs/p/evil.so", "type": "VALUE"},
            {"name": "A", "value": "1"},
            {"name": "A", "value": "x=2"},
        ]});
        let out: Value =
            serde_json::from_str(&rewrite(&v.to_string(), &k.0).unwrap().unwrap()).unwrap();
        assert_eq!(out["command"]["value"], "/opt/ng/nestguard-exec");
        // Nothing of the environment on the stage's (world-readable) argv.
        assert!(!out["command"].to_string().contains("evil"), "{out}");
        let handed = |out: &Value| -> Vec<(String, String)> {
            out["environment"]["variables"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    let f = |k: &str| v[k].as_str().unwrap().to_owned();
                    (f("name"), f("value"))
                })
                .collect()
        };
        let vars = handed(&out);
        let path = format!("PATH={}", handover::HOST_DEFAULT_PATH);
        assert_eq!(
            vars,
            [
                (handover::ENV_COUNT.to_owned(), "3".to_owned()),
                (
                    "NESTGUARD_STAGE_ENV_0".into(),
                    "LD_PRELOAD=/w/runs/p/evil.so".into()
                ),
                ("NESTGUARD_STAGE_ENV_1".into(), "A=x=2".into()),
                ("NESTGUARD_STAGE_ENV_2".into(), path.clone()),
            ]
        );
        // The stage reads them back, in order, as the command's environment.
        let own = vars.into_iter().map(|(n, v)| (n.into(), v.into()));
        let env = handover::handed_environment(own).unwrap().unwrap();
        assert_eq!(
            env,
            [
                b"LD_PRELOAD=/w/runs/p/evil.so".to_vec(),
                b"A=x=2".to_vec(),
                path.into_bytes()
            ]
        );
        // One missing: the stage refuses rather than run with a part.
        let partial = [(handover::ENV_COUNT.into(), "2".into())].into_iter();
        assert!(handover::handed_environment(partial).is_err());
        // A PATH of the container's own is kept, not defaulted.
        v["environment"] = serde_json::json!({"variables": [{"name": "PATH", "value": "/bin"}]});
        let out: Value =
            serde_json::from_str(&rewrite(&v.to_string(), &k.0).unwrap().unwrap()).unwrap();
        assert_eq!(handed(&out)[1].1, "PATH=/bin");
        // No environment: Mesos' helper passes the agent's own, untouched.
        v.as_object_mut().unwrap().remove("environment");
        let out = rewrite(&v.to_string(), &k.0).unwrap().unwrap();
        assert!(!out.contains("environment"), "{out}");
    }

    #[test]
    fn an_images_own_command_is_found_after_docker_runtimes_arguments() {
        if !nix::unistd::geteuid().is_root() {
            return; // the keys must be root's to be read
        }
        let k = keys("image");
        let stage = "/opt/ng/nestguard-exec";
        let mut plan = ExecPlan::from_arg(&plan_for(stage).as_bytes()["--plan=".len()..]).unwrap();
        plan.rootfs = Some("/w/prov/r".into());
        let plan = plan.to_arg();
        // docker/runtime's arguments come first; the isolator sealed them
        // with its own command after `--`.
        let docker: Vec<String> = vec!["/probe".into(), "report.json".into()];
        let mut sealed = docker.clone();
        sealed.extend(["--".to_owned(), "/probe".to_owned()]);
        sealed.extend(docker.iter().cloned());
        let seal = k.1.seal(&plan, stage, "nobody", &sealed);
        let mut args: Vec<String> = docker.clone();
        args.extend([
            STAGE_NAME.into(),
            plan.clone(),
            seal.clone(),
            "--".into(),
            "/probe".into(),
        ]);
        args.extend(docker.iter().cloned());
        let launch = |args: &[String], rootfs: &str| {
            serde_json::json!({
                "command": {"shell": false, "value": WRAPPED_STAGE, "arguments": args},
                "user": "nobody",
                "rootfs": rootfs,
                "working_directory": "/mnt/mesos/sandbox",
            })
            .to_string()
        };
        let out: Value =
            serde_json::from_str(&rewrite(&launch(&args, "/w/prov/r"), &k.0).unwrap().unwrap())
                .unwrap();
        assert!(out.get("rootfs").is_none() && out.get("working_directory").is_none());
        let got: Vec<&str> = out["command"]["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(got[..3], [STAGE_NAME, plan.as_str(), seal.as_str()]);
        assert!(got[3].starts_with("--user="));
        assert_eq!(
            got[4..],
            [
                "--workdir=/mnt/mesos/sandbox",
                "--",
                "/probe",
                "/probe",
                "report.json"
            ]
        );
        // Another rootfs than the sealed one: refused.
        let e = rewrite(&launch(&args, "/w/prov/other"), &k.0).unwrap_err();
        assert!(e.contains("/w/prov/other"), "{e}");
        // The same three moved anywhere else (a tenant's image command
        // holding a harvested plan and seal): never the isolator's.
        let mut moved = vec!["/evil".to_owned()];
        moved.extend(args[docker.len()..].iter().cloned());
        assert!(
            rewrite(&launch(&moved, "/w/prov/r"), &k.0)
                .unwrap_err()
                .contains("not sealed")
        );
        let mut harvested = vec![
            STAGE_NAME.to_owned(),
            plan.clone(),
            seal.clone(),
            "--".into(),
            "/evil".into(),
        ];
        harvested.extend(args.iter().cloned());
        assert!(
            rewrite(&launch(&harvested, "/w/prov/r"), &k.0)
                .unwrap_err()
                .contains("not sealed")
        );
        // Look-alikes crowding the front: the isolator's command fails
        // closed, never goes on to Mesos' helper as it is.
        let mut crowded: Vec<String> = Vec::new();
        for _ in 0..9 {
            crowded.extend([
                STAGE_NAME.into(),
                "--plan=e30=".into(),
                "--seal=00".into(),
                "--".into(),
            ]);
        }
        crowded.extend(args.iter().cloned());
        let e = rewrite(&launch(&crowded, "/w/prov/r"), &k.0).unwrap_err();
        assert!(e.contains("not sealed"), "{e}");
        // A debug session into a container with its own image: refused.
        let e = rewrite_for(&launch(&args, "/w/prov/r"), &k.0, Joins::OtherRoot).unwrap_err();
        assert!(e.contains("image"), "{e}");
    }

    #[test]
    fn a_refusal_waits_for_the_agents_signal_as_mesos_helper_does() {
        let (r, w) = nix::unistd::pipe().unwrap();
        let signal = nix::unistd::dup(&w).unwrap();
        let (r, w) = (r.into_raw_fd(), w.into_raw_fd());
        let args: Vec<OsString> = [
            "mesos-containerizer".to_owned(),
            "launch".to_owned(),
            format!("--pipe_read={r}"),
            format!("--pipe_write={w}"),
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        let agent = std::thread::spawn(move || nix::unistd::write(&signal, b"x").unwrap());
        wait_for_agent(&args);
        agent.join().unwrap(); // drops the agent's write end
        // Its copy of the write end is closed too (the number may be
        // another test's by now, so ask the pipe): every writer gone, a
        // read that would block ends at once.
        // SAFETY: the test's own read end, made non-blocking, read into a
        // local, closed once.
        unsafe {
            libc::fcntl(r, libc::F_SETFL, libc::O_NONBLOCK);
            let mut byte = 0u8;
            assert_eq!(libc::read(r, (&raw mut byte).cast(), 1), 0);
            libc::close(r);
        }
        // Without the flags: returns at once.
        wait_for_agent(&args[..2]);
    }

    #[test]
    fn a_debug_sessions_namespace_flag_is_seen_where_the_agent_passes_it() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let plain = args(&["mesos-containerizer", "launch"]);
        assert_eq!(joins_mount_namespace(&plain, None), Joins::No);
        assert_eq!(joins_mount_namespace(&plain, Some("".into())), Joins::No);
        // The agent's way: the flag in the helper's environment. Our own
        // pid shares our root; a pid that is not there counts as another.
        let me = std::process::id().to_string();
        assert_eq!(
            joins_mount_namespace(&plain, Some(me.clone().into())),
            Joins::SameRoot
        );
        assert_eq!(
            joins_mount_namespace(&plain, Some("4294967295".into())),
            Joins::OtherRoot
        );
        let flagged = args(&[
            "mesos-containerizer",
            "launch",
            "--namespace_mnt_target=4242",
        ]);
        assert_eq!(joins_mount_namespace(&flagged, None), Joins::OtherRoot);
        let mine = args(&[
            "mesos-containerizer",
            "launch",
            &format!("--namespace_mnt_target={me}"),
        ]);
        assert_eq!(joins_mount_namespace(&mine, None), Joins::SameRoot);
    }

    #[test]
    fn takes_the_sandbox_mounts_of_a_sealed_stage_command_only() {
        let k = keys("mounts");
        let stage = "/opt/ng/nestguard-exec";
        let plan = plan_for(stage);
        let bind = (libc::MS_BIND | libc::MS_REC) as u32;
        let launch = |seal: String| {
            serde_json::json!({
                "command": {"shell": false, "value": WRAPPED_STAGE,
                            "arguments": ["nestguard-exec", plan, seal, "--", "/bin/true"]},
                "mounts": [
                    {"source": "/w/runs/p/d", "target": "/w/runs/p/containers/c/d", "flags": bind},
                    {"source": "tmpfs", "target": "/dev/shm", "type": "tmpfs", "flags": 0}
                ]
            })
            .to_string()
        };
        // Root's own user: no user switch, the mounts still move.
        let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
            .unwrap()
            .unwrap()
            .name;
        let text = launch(k.1.seal(&plan, stage, "", &tail()));
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["user"] = Value::String(me.clone());
        v["command"]["arguments"][2] = Value::String(k.1.seal(&plan, stage, &me, &tail()));
        if !nix::unistd::geteuid().is_root() {
            return; // the keys must be root's to be read
        }
        let out: Value =
            serde_json::from_str(&rewrite(&v.to_string(), &k.0).unwrap().unwrap()).unwrap();
        let args = out["command"]["arguments"].as_array().unwrap();
        let mounts = args[3]
            .as_str()
            .unwrap()
            .strip_prefix(launch_mounts::MOUNTS_ARG);
        let mounts = launch_mounts::from_arg(mounts.unwrap().as_bytes()).unwrap();
        assert_eq!(mounts.len(), 1);
        assert_eq!(mounts[0].target, "/w/runs/p/containers/c/d");
        assert_eq!(args[4], "--");
        assert_eq!(out["mounts"].as_array().unwrap().len(), 1);
        assert_eq!(out["mounts"][0]["target"], "/dev/shm");
        // A forged seal: the mounts stay with Mesos' helper, untouched.
        let mut forged = v.clone();
        forged["command"]["arguments"][2] = Value::String(k.1.seal(&plan, stage, "other", &tail()));
        assert!(
            rewrite(&forged.to_string(), &k.0)
                .unwrap_err()
                .contains("not sealed")
        );
        // Sandbox mounts a debug session's helper would make in another
        // container's namespace (its --namespace_mnt_target flag).
        let e = rewrite_for(&v.to_string(), &k.0, Joins::SameRoot).unwrap_err();
        assert!(e.contains("namespace_mnt_target"), "{e}");
        // Mesos' secret volumes' file operations in a sandbox: refused.
        let mut secret = v.clone();
        secret["file_operations"] = serde_json::json!([{"operation": "RENAME",
            "rename": {"source": "/w/runs/p/containers/c/.secret-1", "destination": "/w/runs/p/containers/c/s"}}]);
        let e = rewrite(&secret.to_string(), &k.0).unwrap_err();
        assert!(e.contains("file operations"), "{e}");
    }

    #[test]
    fn leaves_other_and_forged_launches_alone() {
        let k = keys("alone");
        assert_eq!(
            rewrite(&info(&k.1, "nobody", "/bin/sleep"), &k.0).unwrap(),
            None
        );
        assert_eq!(rewrite("not json", &k.0).unwrap(), None);
        // A tenant's look-alike: sealed with another key, or for another user.
        let forged = SealKey::create(&k.0.join("other"), "forged").unwrap();
        let text = info(&forged, "nobody", WRAPPED_STAGE);
        assert!(rewrite(&text, &k.0).unwrap_err().contains("not sealed"));
        let text = info(&k.1, "root", WRAPPED_STAGE).replace("\"root\"", "\"nobody\"");
        assert!(rewrite(&text, &k.0).unwrap_err().contains("not sealed"));
        // Sealed for the stage, but its value is a path of the tenant's:
        // only the wrapped form is the isolator's.
        let text = info(&k.1, "nobody", "/opt/ng/nestguard-exec");
        assert_eq!(rewrite(&text, &k.0).unwrap(), None);
        let no_user = serde_json::json!({"command": {"value": WRAPPED_STAGE,
            "arguments": ["nestguard-exec", "--plan=e30=", "--", "/bin/true"]}});
        assert!(
            rewrite(&no_user.to_string(), &k.0)
                .unwrap_err()
                .contains("not sealed")
        );
    }
}
