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
//! Everything else passes through untouched: other subcommands, launches
//! whose command is not the stage, and a launch info that does not parse
//! (Mesos' helper reports that itself). Without the wrapper the stage still
//! runs, as the container's user, and refuses to start a command whose
//! bounding set it cannot reduce: no path runs a command less confined.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use serde_json::Value;

use super::STAGE_NAME;
use super::command_task;
use super::plan::StageUser;
use super::plan::{CWD_ARG, ROOTFS_ARG};
use super::seal::{self, SealKey};

/// The environment variable that carries the launch info (Mesos' flag
/// `--launch_info` read from the environment with the helper's prefix).
pub const LAUNCH_INFO_ENV: &str = "MESOS_CONTAINERIZER_LAUNCH_INFO";

/// Mesos' own binary, beside the wrapper.
pub const REAL_SUFFIX: &str = ".mesos";

/// A stage command the isolator sealed, in one of its two forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sealed {
    /// `value` is the stage's path, its block of three first (a container
    /// without an image).
    Path,
    /// `value` is empty (a container with its own image): the stage is the
    /// wrapper's own binary, run on the host, which enters the image
    /// itself; the block starts at `start` (Mesos' `docker/runtime` may
    /// have put the image's entrypoint in front of it).
    Image { start: usize },
}

/// How many `nestguard-exec --plan=` pairs are tried in an image
/// container's arguments: docker/runtime's front part (the image's
/// entrypoint) never legitimately holds one, and each try hashes the rest.
const MAX_IMAGE_CANDIDATES: usize = 8;

/// Whether `command` (the launch info's) is a stage command the isolator
/// sealed for `user` (and, for an image container, for `rootfs`), and in
/// which form. A container with an image only ever has the image form.
fn sealed_stage(
    command: &Value,
    user: &str,
    rootfs: Option<&str>,
    keys: &[SealKey],
) -> Option<Sealed> {
    let value = command.get("value").and_then(Value::as_str)?;
    let args: Vec<&str> = command
        .get("arguments")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    let arg = |i: usize| args.get(i).copied().unwrap_or("");
    match rootfs {
        Some(rootfs) if value.is_empty() => {
            // The seal covers the image and everything after it, so a block
            // in front of the isolator's (the image's entrypoint, a
            // harvested one) never verifies: its remainder holds the
            // isolator's block. The first that verifies is the isolator's;
            // one after it is inside the sealed command and never chosen.
            let start = (0..args.len())
                .filter(|&i| arg(i) == STAGE_NAME && arg(i + 1).starts_with("--plan="))
                .take(MAX_IMAGE_CANDIDATES)
                .find(|&i| {
                    let tail: Vec<String> = args[(i + 3).min(args.len())..]
                        .iter()
                        .map(|a| (*a).to_owned())
                        .collect();
                    let stage = seal::image_stage(rootfs, &tail);
                    seal::verified(keys, arg(i + 1), &stage, user, arg(i + 2))
                })?;
            Some(Sealed::Image { start })
        }
        Some(_) => None,
        None => (value.rsplit('/').next() == Some(STAGE_NAME)
            && arg(1).starts_with("--plan=")
            && seal::verified(keys, arg(1), value, user, arg(2)))
        .then_some(Sealed::Path),
    }
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
/// command first becomes the stage form ([`command_task`]). An image
/// container's stage is `own_binary` (this binary's host path): its
/// `rootfs` and `working_directory` move to the stage, so Mesos' helper
/// runs the stage on the host and the stage enters the image.
pub fn rewrite(
    text: &str,
    key_dir: &Path,
    own_binary: &dyn Fn() -> Result<String, String>,
) -> Result<Option<String>, String> {
    let Ok(mut info) = serde_json::from_str::<Value>(text) else {
        return Ok(None);
    };
    let Some(obj) = info.as_object_mut() else {
        return Ok(None);
    };
    let name = obj.get("user").and_then(Value::as_str).map(str::to_owned);
    let rootfs = obj.get("rootfs").and_then(Value::as_str).map(str::to_owned);
    let keys = seal::read_keys(key_dir);
    // A command task with an image is refused at prepare; an image
    // container's command is only ever the image form.
    let staged = match obj.get_mut("command") {
        Some(command) if rootfs.is_none() => {
            command_task::into_stage(command, name.as_deref().unwrap_or(""), &keys)?
        }
        _ => false,
    };
    let sealed = obj
        .get("command")
        .and_then(|c| sealed_stage(c, name.as_deref().unwrap_or(""), rootfs.as_deref(), &keys));
    // The path form needs the wrapper only for a user switch; the image
    // form always (its `value` is empty until the stage is in).
    let sealed = match (sealed, &name) {
        (Some(Sealed::Path), None) | (None, _) => {
            return Ok(staged.then(|| info.to_string()));
        }
        (Some(form), _) => form,
    };
    let mut handed = Vec::new();
    if let Some(user) = take_user(obj, name.as_deref())? {
        handed.push(Value::String(user.to_arg()));
    }
    let mut value = None;
    if let (Sealed::Image { .. }, Some(rootfs)) = (sealed, &rootfs) {
        value = Some(own_binary()?);
        obj.remove("rootfs");
        handed.push(Value::String(format!("{ROOTFS_ARG}{rootfs}")));
        if let Some(cwd) = obj.remove("working_directory") {
            let cwd = cwd.as_str().unwrap_or_default().to_owned();
            handed.push(Value::String(format!("{CWD_ARG}{cwd}")));
        }
    }
    let Some(command) = obj.get_mut("command").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    if let Some(value) = value {
        command.insert("value".into(), Value::String(value));
        command.insert("shell".into(), Value::Bool(false));
    }
    if let Some(args) = command.get_mut("arguments").and_then(Value::as_array_mut) {
        if let Sealed::Image { start } = sealed {
            args.drain(..start);
        }
        args.splice(3..3, handed);
    }
    Ok(Some(info.to_string()))
}

/// Takes the launch info's `user` and `supplementary_groups` for the stage,
/// resolved as Mesos' helper resolves them; `None` when no switch is due.
fn take_user(
    obj: &mut serde_json::Map<String, Value>,
    name: Option<&str>,
) -> Result<Option<StageUser>, String> {
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
    let user = match name {
        Some(name) => resolve(name, &extra)?,
        None => None,
    };
    obj.remove("user");
    obj.remove("supplementary_groups");
    Ok(user)
}

/// This binary's path on the host (it is the stage).
fn own_binary() -> Result<String, String> {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .map_err(|e| format!("cannot find its own binary (the exec stage): {e}"))
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
        match rewrite(
            &text.to_string_lossy(),
            Path::new(seal::KEY_DIR),
            &own_binary,
        ) {
            Ok(Some(new)) => {
                // SAFETY: single-threaded here (the wrapper's main, before
                // any thread), as set_var requires.
                unsafe { std::env::set_var(LAUNCH_INFO_ENV, new) };
            }
            Ok(None) => {}
            Err(e) => return e,
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

    fn no_fd() -> Result<String, String> {
        Err("no stage in this test".into())
    }

    fn the_stage() -> Result<String, String> {
        Ok("/opt/ng/mesos-containerizer".into())
    }

    const ROOTFS: &str = "/var/lib/mesos/provisioner/x/rootfs";

    fn info(key: &SealKey, user: &str, value: &str) -> String {
        let plan = "--plan=e30=";
        serde_json::json!({
            "command": {"shell": false, "value": value,
                        "arguments": ["nestguard-exec", plan, key.seal(plan, value, user), "--", "/bin/true"]},
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
        let out = rewrite(
            &info(&k.1, "nobody", "/opt/ng/nestguard-exec"),
            &k.0,
            &no_fd,
        )
        .unwrap()
        .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
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
        let e = rewrite(
            &info(&k.1, "no-such-user-ng", "/x/nestguard-exec"),
            &k.0,
            &no_fd,
        )
        .unwrap_err();
        assert!(e.contains("not found"), "{e}");
    }

    #[test]
    fn leaves_other_and_forged_launches_alone() {
        let k = keys("alone");
        assert_eq!(
            rewrite(&info(&k.1, "nobody", "/bin/sleep"), &k.0, &no_fd).unwrap(),
            None
        );
        assert_eq!(rewrite("not json", &k.0, &no_fd).unwrap(), None);
        // A tenant's look-alike: sealed with another key, or for another user.
        let forged = SealKey::create(&k.0.join("other"), "forged").unwrap();
        let text = info(&forged, "nobody", "/opt/ng/nestguard-exec");
        assert_eq!(rewrite(&text, &k.0, &no_fd).unwrap(), None);
        let text = info(&k.1, "root", "/opt/ng/nestguard-exec").replace("\"root\"", "\"nobody\"");
        assert_eq!(rewrite(&text, &k.0, &no_fd).unwrap(), None);
        let no_user = serde_json::json!({"command": {"value": "/x/nestguard-exec",
            "arguments": ["nestguard-exec", "--plan=e30=", "--", "/bin/true"]}});
        assert_eq!(rewrite(&no_user.to_string(), &k.0, &no_fd).unwrap(), None);
    }

    fn image_info(key: &SealKey, user: Option<&str>, prefix: &[&str], tail: &[&str]) -> Value {
        let plan = "--plan=e30=";
        let tail: Vec<String> = tail.iter().map(|s| s.to_string()).collect();
        let seal = key.seal(plan, &seal::image_stage(ROOTFS, &tail), user.unwrap_or(""));
        let mut args: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        args.extend([STAGE_NAME.to_owned(), plan.to_owned(), seal]);
        args.extend(tail);
        let mut v = serde_json::json!({
            "command": {"shell": false, "value": "", "arguments": args},
            "rootfs": ROOTFS,
            "working_directory": "/mnt/mesos/sandbox"
        });
        if let Some(user) = user {
            v["user"] = Value::String(user.into());
        }
        v
    }

    #[test]
    fn an_image_containers_stage_runs_on_the_host_and_enters_the_image() {
        if !nix::unistd::geteuid().is_root() {
            return; // the keys must be root's to be read
        }
        let k = keys("image");
        // docker/runtime's entrypoint in front: dropped; the block first.
        let text = image_info(
            &k.1,
            None,
            &["/probe", "/probe", "r"],
            &["--", "/probe", "/probe", "r"],
        );
        let out = rewrite(&text.to_string(), &k.0, &the_stage)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["command"]["value"], "/opt/ng/mesos-containerizer");
        assert_eq!(v["command"]["shell"], false);
        assert!(v.get("rootfs").is_none() && v.get("working_directory").is_none());
        let args: Vec<&str> = v["command"]["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args[0], STAGE_NAME);
        assert!(args[1].starts_with("--plan=") && args[2].starts_with("--seal="));
        let root = format!("--rootfs={ROOTFS}");
        assert_eq!(
            &args[3..],
            [
                root.as_str(),
                "--cwd=/mnt/mesos/sandbox",
                "--",
                "/probe",
                "/probe",
                "r"
            ]
        );
        // With a user: resolved on the host and handed to the stage too.
        let text = image_info(&k.1, Some("nobody"), &[], &["--", "/probe"]);
        let out = rewrite(&text.to_string(), &k.0, &the_stage)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(v.get("user").is_none());
        let args = v["command"]["arguments"].as_array().unwrap();
        assert!(args[3].as_str().unwrap().starts_with("--user="), "{args:?}");
        assert_eq!(args[4], root.as_str());
        // No stage: the launch fails, never runs without it.
        let text = image_info(&k.1, None, &[], &["--", "/probe"]);
        let e = rewrite(&text.to_string(), &k.0, &no_fd).unwrap_err();
        assert!(e.contains("no stage"), "{e}");
        // Sealed for another container's image: never verifies.
        let mut other = image_info(&k.1, None, &[], &["--", "/probe"]);
        other["rootfs"] = Value::String("/var/lib/mesos/provisioner/y/rootfs".into());
        assert_eq!(rewrite(&other.to_string(), &k.0, &the_stage).unwrap(), None);
    }

    #[test]
    fn path_forms_inside_an_image_container_are_never_the_stage() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let k = keys("image-path");
        // A harvested path-form seal as an image container's command.
        let mut path_form: Value =
            serde_json::from_str(&info(&k.1, "nobody", "/opt/ng/nestguard-exec")).unwrap();
        path_form["rootfs"] = Value::String(ROOTFS.into());
        assert_eq!(
            rewrite(&path_form.to_string(), &k.0, &the_stage).unwrap(),
            None
        );
        // A harvested command-task triple in an image container's arguments.
        let plan = "--plan=e30=";
        let stage = "/opt/ng/nestguard-exec";
        let seal = k.1.seal(plan, stage, "nobody");
        let mut args = vec!["x".to_owned()];
        args.extend(command_task::arguments(stage, plan, &seal));
        let triple = serde_json::json!({
            "command": {"shell": false, "value": "", "arguments": args},
            "rootfs": ROOTFS, "user": "nobody"
        });
        assert_eq!(
            rewrite(&triple.to_string(), &k.0, &the_stage).unwrap(),
            None
        );
    }

    #[test]
    fn an_image_block_in_front_of_the_sealed_one_never_runs() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let k = keys("image-front");
        // A tenant's image puts a harvested block (sealed for another
        // command) in its entrypoint, before the isolator's.
        let harvested = image_info(&k.1, None, &[], &["--", "/other"]);
        let theirs: Vec<String> = harvested["command"]["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        let prefix: Vec<&str> = theirs.iter().map(String::as_str).collect();
        let text = image_info(&k.1, None, &prefix, &["--", "/probe"]);
        let out = rewrite(&text.to_string(), &k.0, &the_stage)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let args = v["command"]["arguments"].as_array().unwrap();
        assert_eq!(args.len(), 7, "{args:?}");
        assert_eq!(args[6], "/probe");
        // The tail changed after sealing (a block of its own appended, an
        // argument altered): no form verifies, the launch passes through
        // untouched, and Mesos' execvp("") runs nothing.
        let mut text = image_info(&k.1, None, &[], &["--", "/probe"]);
        text["command"]["arguments"][4] = Value::String("/evil".into());
        assert_eq!(rewrite(&text.to_string(), &k.0, &the_stage).unwrap(), None);
        let forged = SealKey::create(&k.0.join("other"), "forged").unwrap();
        let text = image_info(&forged, None, &[], &["--", "/probe"]);
        assert_eq!(rewrite(&text.to_string(), &k.0, &the_stage).unwrap(), None);
    }

    #[test]
    fn a_harvested_block_in_the_tenants_own_argv_is_never_chosen() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let k = keys("image-argv");
        // Another container's block, sealed for its command `/app`.
        let harvested = image_info(&k.1, None, &[], &["--", "/app"]);
        let mut tail = vec!["--".to_owned(), "/probe".to_owned()];
        tail.extend(
            harvested["command"]["arguments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_owned()),
        );
        let tail: Vec<&str> = tail.iter().map(String::as_str).collect();
        let text = image_info(&k.1, None, &[], &tail);
        let out = rewrite(&text.to_string(), &k.0, &the_stage)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let args = v["command"]["arguments"].as_array().unwrap();
        // The isolator's block runs /probe, with the rest as its argv.
        assert_eq!(args[6], "/probe", "{args:?}");
        assert_eq!(args.len(), 7 + 5, "{args:?}");
    }
}
