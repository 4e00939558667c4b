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
use super::plan::STAGE_FD_ARG;
use super::plan::StageUser;
use super::seal::{self, SealKey};

/// The environment variable that carries the launch info (Mesos' flag
/// `--launch_info` read from the environment with the helper's prefix).
pub const LAUNCH_INFO_ENV: &str = "MESOS_CONTAINERIZER_LAUNCH_INFO";

/// Mesos' own binary, beside the wrapper.
pub const REAL_SUFFIX: &str = ".mesos";

/// A stage command the isolator sealed, in one of its two forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sealed {
    /// `value` is the stage's path, its block of three first.
    Path,
    /// `value` is empty (a container with its own image): the stage is the
    /// wrapper's own binary, handed over as a descriptor; the block starts
    /// at `start` (Mesos' `docker/runtime` may have put the image's
    /// entrypoint in front of it).
    Image { start: usize },
}

/// Whether `command` (the launch info's) is a stage command the isolator
/// sealed for `user`, and in which form.
fn sealed_stage(command: &Value, user: &str, keys: &[SealKey]) -> Option<Sealed> {
    let value = command.get("value").and_then(Value::as_str)?;
    let args: Vec<&str> = command
        .get("arguments")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    let arg = |i: usize| args.get(i).copied().unwrap_or("");
    if value.is_empty() {
        // The seal covers everything after it, so a block in front of the
        // isolator's (the image's entrypoint, a harvested one) never
        // verifies: its remainder holds the isolator's block. The first
        // that verifies is the isolator's; one after it is inside the
        // sealed command (the tenant's argv) and never chosen.
        let start = (0..args.len()).find(|&i| {
            arg(i) == STAGE_NAME && arg(i + 1).starts_with("--plan=") && {
                let tail: Vec<String> = args[(i + 3).min(args.len())..]
                    .iter()
                    .map(|a| (*a).to_owned())
                    .collect();
                seal::verified(
                    keys,
                    arg(i + 1),
                    &seal::image_stage(&tail),
                    user,
                    arg(i + 2),
                )
            }
        })?;
        return Some(Sealed::Image { start });
    }
    (value.rsplit('/').next() == Some(STAGE_NAME)
        && arg(1).starts_with("--plan=")
        && seal::verified(keys, arg(1), value, user, arg(2)))
    .then_some(Sealed::Path)
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
/// container's stage is this binary, opened by `open_stage` (a descriptor
/// that survives the `execve` of Mesos' helper and its `pivot_root`).
pub fn rewrite(
    text: &str,
    key_dir: &Path,
    open_stage: &dyn Fn() -> Result<i32, String>,
) -> Result<Option<String>, String> {
    let Ok(mut info) = serde_json::from_str::<Value>(text) else {
        return Ok(None);
    };
    let Some(obj) = info.as_object_mut() else {
        return Ok(None);
    };
    let name = obj.get("user").and_then(Value::as_str).map(str::to_owned);
    let keys = seal::read_keys(key_dir);
    let staged = match obj.get_mut("command") {
        Some(command) => command_task::into_stage(command, name.as_deref().unwrap_or(""), &keys)?,
        None => false,
    };
    let sealed = obj
        .get("command")
        .and_then(|c| sealed_stage(c, name.as_deref().unwrap_or(""), &keys));
    // The path form needs the wrapper only for a user switch; the image
    // form always (its `value` is empty until the descriptor is in).
    let sealed = match (sealed, &name) {
        (Some(Sealed::Path), None) | (None, _) => {
            return Ok(staged.then(|| info.to_string()));
        }
        (Some(form), _) => form,
    };
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
    let user = match &name {
        Some(name) => resolve(name, &extra)?,
        None => None,
    };
    obj.remove("user");
    obj.remove("supplementary_groups");
    let Some(command) = obj.get_mut("command").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let mut handed = Vec::new();
    if let Some(user) = user {
        handed.push(Value::String(user.to_arg()));
    }
    if let Sealed::Image { .. } = sealed {
        let fd = open_stage()?;
        command.insert("value".into(), Value::String(format!("/proc/self/fd/{fd}")));
        command.insert("shell".into(), Value::Bool(false));
        handed.push(Value::String(format!("{STAGE_FD_ARG}{fd}")));
    }
    if let Some(args) = command.get_mut("arguments").and_then(Value::as_array_mut) {
        if let Sealed::Image { start } = sealed {
            args.drain(..start);
        }
        args.splice(3..3, handed);
    }
    Ok(Some(info.to_string()))
}

/// This binary, opened for the image container's `execve` without
/// close-on-exec (Mesos' helper, which runs next, must inherit it; the
/// stage closes it, or Mesos marks it close-on-exec before its fork).
/// Refused unless statically linked ([`super::static_elf`]): in the image
/// a dynamic stage would run the image's loader as root.
fn open_own_binary() -> Result<i32, String> {
    use std::os::fd::IntoRawFd;
    let what = "the exec stage for an image container (this binary, /proc/self/exe)";
    let fd = nix::fcntl::open(
        "/proc/self/exe",
        nix::fcntl::OFlag::O_RDONLY,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| format!("open {what}: {e}"))?;
    match super::static_elf::statically_linked(&fd) {
        Ok(true) => Ok(fd.into_raw_fd()),
        Ok(false) => Err(format!(
            "{what} is dynamically linked: inside the image it would start the image's loader \
             as root; install a statically linked nestguard-exec as mesos-containerizer \
             (RUSTFLAGS=\"-C target-feature=+crt-static\", see ffi/mesos/README.md)"
        )),
        Err(e) => Err(format!("{what}: {e}")),
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
        match rewrite(
            &text.to_string_lossy(),
            Path::new(seal::KEY_DIR),
            &open_own_binary,
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

    fn no_fd() -> Result<i32, String> {
        Err("no descriptor in this test".into())
    }

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
        let seal = key.seal(plan, &seal::image_stage(&tail), user.unwrap_or(""));
        let mut args: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        args.extend([STAGE_NAME.to_owned(), plan.to_owned(), seal]);
        args.extend(tail);
        let mut v = serde_json::json!({
            "command": {"shell": false, "value": "", "arguments": args},
            "rootfs": "/var/lib/mesos/provisioner/x/rootfs"
        });
        if let Some(user) = user {
            v["user"] = Value::String(user.into());
        }
        v
    }

    #[test]
    fn an_image_containers_stage_is_handed_over_as_a_descriptor() {
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
        let out = rewrite(&text.to_string(), &k.0, &|| Ok(9))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["command"]["value"], "/proc/self/fd/9");
        assert_eq!(v["command"]["shell"], false);
        let args: Vec<&str> = v["command"]["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args[0], STAGE_NAME);
        assert!(args[1].starts_with("--plan=") && args[2].starts_with("--seal="));
        assert_eq!(&args[3..], ["--stage_fd=9", "--", "/probe", "/probe", "r"]);
        assert_eq!(v["rootfs"], "/var/lib/mesos/provisioner/x/rootfs");
        // With a user: resolved on the host and handed to the stage too.
        let text = image_info(&k.1, Some("nobody"), &[], &["--", "/probe"]);
        let out = rewrite(&text.to_string(), &k.0, &|| Ok(5))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(v.get("user").is_none());
        let args = v["command"]["arguments"].as_array().unwrap();
        assert!(args[3].as_str().unwrap().starts_with("--user="), "{args:?}");
        assert_eq!(args[4], "--stage_fd=5");
        // No descriptor: the launch fails, never runs without the stage.
        let text = image_info(&k.1, None, &[], &["--", "/probe"]);
        let e = rewrite(&text.to_string(), &k.0, &no_fd).unwrap_err();
        assert!(e.contains("no descriptor"), "{e}");
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
        let out = rewrite(&text.to_string(), &k.0, &|| Ok(9))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let args = v["command"]["arguments"].as_array().unwrap();
        assert_eq!(args.len(), 6, "{args:?}");
        assert_eq!(args[5], "/probe");
        // The tail changed after sealing (a block of its own appended, an
        // argument altered): no form verifies, the launch passes through
        // untouched, and Mesos' execvp("") runs nothing.
        let mut text = image_info(&k.1, None, &[], &["--", "/probe"]);
        text["command"]["arguments"][4] = Value::String("/evil".into());
        assert_eq!(rewrite(&text.to_string(), &k.0, &|| Ok(9)).unwrap(), None);
        let forged = SealKey::create(&k.0.join("other"), "forged").unwrap();
        let text = image_info(&forged, None, &[], &["--", "/probe"]);
        assert_eq!(rewrite(&text.to_string(), &k.0, &|| Ok(9)).unwrap(), None);
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
        let out = rewrite(&text.to_string(), &k.0, &|| Ok(9))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let args = v["command"]["arguments"].as_array().unwrap();
        // The isolator's block runs /probe, with the rest as its argv.
        assert_eq!(args[5], "/probe", "{args:?}");
        assert_eq!(args.len(), 6 + 5, "{args:?}");
    }
}
