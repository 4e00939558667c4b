//! nestguard's exec stage, as it runs under Mesos' launch helper
//! (`launcher=mesos`): the isolators' launch info goes through the stage,
//! and the stage — run here the way Mesos' helper runs a container's command,
//! in a mount namespace of its own — applies seccomp, the capability sets,
//! `no_new_privs` and read-only kernel paths before it `execve`s the command
//! in place. The real agent runs the same in `ffi/mesos/real-mesos/`.

use crate::isolator_support;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use isolator_support::{config, root_or_skip};
use nestguard::isolation::exec_stage::{WRAPPED_STAGE, containerizer};
use nestguard::isolation::isolator::{Composite, Isolator, IsolatorParams};
use nestguard::proto::mesos::slave::ContainerConfig;
use nestguard::proto::mesos::{
    CapabilityInfo, ContainerId, ContainerInfo, LinuxInfo, TaskInfo, capability_info,
};

pub(crate) const STAGE: &str = env!("CARGO_BIN_EXE_nestguard-exec");
/// Docker's default set, as `hardening_capabilities` gives it.
pub(crate) const DEFAULT_CAPS: &str = "00000000a80425fb";

pub(crate) struct Dir(pub(crate) PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A composite as the shim makes it, with its sealing key in a directory
/// of the test's (removed with it).
pub(crate) struct Mesos {
    pub(crate) composite: Composite,
    pub(crate) keys: Dir,
}

/// `extra`'s `isolation`, if any, replaces the default list.
pub(crate) fn mesos_composite(extra: &[(&str, &str)]) -> Mesos {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let keys = std::env::temp_dir().join(format!("ng-stage-keys-{}-{n}", std::process::id()));
    let keys_arg = keys.display().to_string();
    let isolation = extra
        .iter()
        .find(|(k, _)| *k == "isolation")
        .map_or("filesystem/linux,hardening,seccomp", |(_, v)| *v);
    let mut pairs = vec![
        ("isolation", isolation),
        ("launcher", "mesos"),
        ("exec_stage", STAGE),
        ("exec_stage_keys", keys_arg.as_str()),
    ];
    pairs.extend(extra.iter().filter(|(k, _)| *k != "isolation"));
    let composite = Composite::from_parameters(&IsolatorParams::parse(pairs).unwrap()).unwrap();
    Mesos {
        composite,
        keys: Dir(keys),
    }
}

fn sandbox(tag: &str) -> Dir {
    let dir = std::env::temp_dir().join(format!("ng-exec-stage-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    Dir(dir)
}

fn prepared(mesos: &Mesos, c: ContainerConfig, dir: &Path) -> Vec<String> {
    let id = ContainerId {
        value: "stage".into(),
        parent: None,
    };
    let mut c = c;
    c.directory = dir.display().to_string();
    let info = mesos.composite.prepare(&id, &c).unwrap().unwrap();
    assert!(info.seccomp_profile.is_none() && info.bounding_capabilities.is_none());
    assert!(info.effective_capabilities.is_none() && info.no_new_privileges.is_none());
    let command = info.command.unwrap();
    assert_eq!(command.value.as_deref(), Some(WRAPPED_STAGE));
    assert_eq!(command.shell, Some(false));
    command.arguments
}

/// Runs the stage as Mesos' helper would: in a new mount namespace, `cwd`
/// the sandbox; `as_nobody`: after Mesos switched the user itself.
fn run(arguments: &[String], dir: &Path, as_nobody: bool) -> Output {
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "--propagation", "private"]);
    if as_nobody {
        cmd.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    cmd.arg(STAGE).args(&arguments[1..]).current_dir(dir);
    cmd.output().unwrap()
}

fn status_lines(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("status")).unwrap_or_default()
}

const PROBE: &str = "grep -E '^(Seccomp|NoNewPrivs|Cap(Bnd|Eff|Amb)):' /proc/self/status > status; \
    unshare -U true 2>/dev/null && echo userns >> status; \
    (echo x > /proc/sys/kernel/domainname) 2>/dev/null && echo procsys >> status; \
    grep -E ' /(proc/sys|sys) ' /proc/self/mountinfo | awk '{print $5, $6}' >> status; exit 3";

#[test]
fn stage_applies_every_defence_and_keeps_the_exit_status() {
    if !root_or_skip() {
        return;
    }
    let dir = sandbox("root");
    let args = prepared(&mesos_composite(&[]), config(PROBE), &dir.0);
    let out = run(&args, &dir.0, false);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let s = status_lines(&dir.0);
    for want in [
        "Seccomp:\t2".to_owned(),
        "NoNewPrivs:\t1".to_owned(),
        format!("CapBnd:\t{DEFAULT_CAPS}"),
        format!("CapEff:\t{DEFAULT_CAPS}"),
        "CapAmb:\t0000000000000000".to_owned(),
        "/proc/sys ro".to_owned(),
        "/sys ro".to_owned(),
    ] {
        assert!(s.contains(&want), "{want:?} not in {s}");
    }
    assert!(!s.contains("userns") && !s.contains("procsys"), "{s}");
    // A signal stays a signal.
    let dir = sandbox("signal");
    let args = prepared(&mesos_composite(&[]), config("kill -KILL $$"), &dir.0);
    assert_eq!(run(&args, &dir.0, false).status.signal(), Some(9));
}

#[test]
fn the_wrapper_hands_the_user_switch_to_the_stage() {
    if !root_or_skip() {
        return;
    }
    let dir = sandbox("user");
    let mesos = mesos_composite(&[]);
    let mut asking = config(PROBE);
    asking.user = Some("nobody".into());
    let args = prepared(&mesos, asking, &dir.0);
    let info = serde_json::json!({
        "command": {"shell": false, "value": WRAPPED_STAGE, "arguments": args},
        "user": "nobody",
    });
    let rewritten = containerizer::rewrite(&info.to_string(), &mesos.keys.0)
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&rewritten).unwrap();
    assert!(v.get("user").is_none());
    let args: Vec<String> = serde_json::from_value(v["command"]["arguments"].clone()).unwrap();
    assert!(args[3].starts_with("--user=65534:"), "{args:?}");
    // The same command claimed for root is not the isolator's: untouched.
    let forged = info.to_string().replace("\"nobody\"", "\"root\"");
    assert!(
        containerizer::rewrite(&forged, &mesos.keys.0)
            .unwrap_err()
            .contains("not sealed")
    );
    let out = run(&args, &dir.0, false);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let s = status_lines(&dir.0);
    assert!(s.contains(&format!("CapBnd:\t{DEFAULT_CAPS}")), "{s}");
    assert!(s.contains("CapEff:\t0000000000000000"), "{s}");
    assert!(
        s.contains("Seccomp:\t2") && s.contains("NoNewPrivs:\t1"),
        "{s}"
    );
    assert!(!s.contains("userns"), "{s}");
}

#[test]
fn without_the_wrapper_a_non_root_stage_fails_closed() {
    if !root_or_skip() {
        return;
    }
    let dir = sandbox("closed");
    let args = prepared(&mesos_composite(&[]), config("touch ran; exit 0"), &dir.0);
    let out = run(&args, &dir.0, true);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--launcher_dir") && err.contains("bounding"),
        "{err}"
    );
    assert!(!dir.0.join("ran").exists(), "the command ran unconfined");
    // A plan that does not decode never runs the command either.
    let mut bad = args.clone();
    bad[1] = "--plan=not-a-plan".into();
    let out = run(&bad, &dir.0, false);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    assert!(!dir.0.join("ran").exists());
}

#[test]
fn capabilities_beyond_the_operators_and_images_are_refused() {
    // Refused at prepare: the sandbox is never created.
    let dir = std::env::temp_dir().join("ng-exec-stage-refused-never-made");
    let mesos = mesos_composite(&[]);
    let composite = &mesos.composite;
    let id = ContainerId {
        value: "refused".into(),
        parent: None,
    };
    let mut asking = config("true");
    asking.directory = dir.display().to_string();
    asking.container_info = Some(ContainerInfo {
        linux_info: Some(LinuxInfo {
            effective_capabilities: Some(CapabilityInfo {
                capabilities: vec![capability_info::Capability::SysAdmin as i32],
            }),
            ..LinuxInfo::default()
        }),
        ..ContainerInfo::default()
    });
    let e = composite.prepare(&id, &asking).unwrap_err().to_string();
    assert!(
        e.contains("SYS_ADMIN") && e.contains("hardening_allowed_capabilities"),
        "{e}"
    );
    // Allowed by the operator: the stage grants it.
    let allowing = mesos_composite(&[(
        "hardening_allowed_capabilities",
        "CHOWN,DAC_OVERRIDE,FSETID,FOWNER,MKNOD,NET_RAW,SETGID,SETUID,SETFCAP,SETPCAP,\
         NET_BIND_SERVICE,SYS_CHROOT,KILL,AUDIT_WRITE,SYS_ADMIN",
    )]);
    allowing.composite.prepare(&id, &asking).unwrap();
    // A command task with its own image: its executor would enter the
    // image by a launch of its own, after the stage.
    let mut image = config("true");
    image.directory = dir.display().to_string();
    image.rootfs = Some("/nonexistent-image-rootfs".into());
    image.task_info = Some(TaskInfo::default());
    let e = composite.prepare(&id, &image).unwrap_err().to_string();
    assert!(e.contains("command task") && e.contains("image"), "{e}");
    assert!(!dir.exists());
}

/// The executor command Mesos' agent gives a command task, with what the
/// isolator added (only arguments), as the final launch info has it.
fn command_task_launch(mesos: &Mesos, executor: &Path, dir: &Path, user: &str) -> String {
    let id = ContainerId {
        value: "command-task".into(),
        parent: None,
    };
    let mut task = config("unused: the executor's own command runs");
    task.directory = dir.display().to_string();
    task.task_info = Some(TaskInfo::default());
    task.user = Some(user.into());
    let info = mesos.composite.prepare(&id, &task).unwrap().unwrap();
    assert!(info.seccomp_profile.is_none() && info.bounding_capabilities.is_none());
    let added = info.command.unwrap();
    assert!(added.value.is_none() && added.shell.is_none() && added.user.is_none());
    let mut arguments = vec!["mesos-executor".to_owned(), "--launcher_dir=/x".to_owned()];
    arguments.extend(added.arguments);
    serde_json::json!({
        "command": {"shell": false, "value": executor.display().to_string(), "arguments": arguments},
        "user": user,
    })
    .to_string()
}

#[test]
fn a_command_tasks_executor_and_its_task_run_confined() {
    if !root_or_skip() {
        return;
    }
    let dir = sandbox("command-task");
    // Stands in for mesos-executor: checks its arguments (the isolator's
    // must be gone), then "forks the task", which probes.
    let executor = dir.0.join("mesos-executor");
    std::fs::write(dir.0.join("probe.sh"), PROBE).unwrap();
    std::fs::write(
        &executor,
        "#!/bin/sh\n[ \"$*\" = \"--launcher_dir=/x\" ] || { echo \"args: $*\" > args; exit 1; }\n\
         exec sh ./probe.sh\n",
    )
    .unwrap();
    std::fs::set_permissions(&executor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mesos = mesos_composite(&[]);
    let text = command_task_launch(&mesos, &executor, &dir.0, "nobody");
    let rewritten = containerizer::rewrite(&text, &mesos.keys.0)
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&rewritten).unwrap();
    assert_eq!(v["command"]["value"], STAGE);
    assert!(v.get("user").is_none(), "the stage switches the user");
    let args: Vec<String> = serde_json::from_value(v["command"]["arguments"].clone()).unwrap();
    let out = run(&args, &dir.0, false);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        !dir.0.join("args").exists(),
        "{:?}",
        std::fs::read_to_string(dir.0.join("args"))
    );
    let s = status_lines(&dir.0);
    for want in [
        "Seccomp:\t2",
        "NoNewPrivs:\t1",
        &format!("CapBnd:\t{DEFAULT_CAPS}"),
        "CapEff:\t0000000000000000",
        "/proc/sys ro",
    ] {
        assert!(s.contains(want), "{want:?} not in {s}");
    }
    assert!(!s.contains("userns") && !s.contains("procsys"), "{s}");
    // Sealed for another user, or with the wrapper missing: never runs.
    let forged = text.replace("\"user\":\"nobody\"", "\"user\":\"root\"");
    let e = containerizer::rewrite(&forged, &mesos.keys.0).unwrap_err();
    assert!(e.contains("not sealed"), "{e}");
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
    let unwrapped: Vec<String> =
        serde_json::from_value(raw["command"]["arguments"].clone()).unwrap();
    let out = Command::new(&executor)
        .args(&unwrapped[1..])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

/// A tenant who read another container's plan and seal (they are in the
/// stage's argv for a moment) puts them, with a binary of its own as the
/// stage, in its nested container's arguments: the wrapper must leave them
/// to the tenant's command and never run the tenant's binary as root.
#[test]
fn a_harvested_seal_with_a_tenants_stage_never_runs_as_root() {
    if !root_or_skip() {
        return;
    }
    let dir = sandbox("harvest");
    let mesos = mesos_composite(&[]);
    let mut victim = config("exec sleep 1");
    victim.user = Some("nobody".into());
    let seen = prepared(&mesos, victim, &dir.0);
    let evil = dir.0.join("x").join("nestguard-exec");
    let mut tenant = config("unused");
    tenant.user = Some("nobody".into());
    tenant.command_info.shell = Some(false);
    tenant.command_info.value = Some("/bin/true".into());
    tenant.command_info.arguments = vec![
        "true".into(),
        format!("--nestguard_exec_stage={}", evil.display()),
        format!("--nestguard_exec_plan={}", &seen[1]["--plan=".len()..]),
        format!("--nestguard_exec_seal={}", &seen[2]["--seal=".len()..]),
    ];
    let args = prepared(&mesos, tenant.clone(), &dir.0);
    let info = serde_json::json!({
        "command": {"shell": false, "value": WRAPPED_STAGE, "arguments": args},
        "user": "nobody",
    });
    let out = containerizer::rewrite(&info.to_string(), &mesos.keys.0)
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["command"]["value"], STAGE, "{v}");
    let rewritten: Vec<String> = serde_json::from_value(v["command"]["arguments"].clone()).unwrap();
    let dash = rewritten.iter().position(|a| a == "--").unwrap();
    assert_eq!(
        rewritten[dash + 1..],
        ["/bin/true".to_owned()]
            .into_iter()
            .chain(tenant.command_info.arguments)
            .collect::<Vec<_>>()
    );
    // The same three as a command executor's launch of its own: the seal
    // does not cover the tenant's stage path, so the wrapper refuses it;
    // any other command than Mesos' executor never carries them.
    let forged = |value: &str| {
        serde_json::json!({
            "command": {"shell": false, "value": value, "arguments": rewritten[dash + 2..]},
            "user": "nobody",
        })
        .to_string()
    };
    let e = containerizer::rewrite(&forged("/x/mesos-executor"), &mesos.keys.0).unwrap_err();
    assert!(e.contains("not sealed"), "{e}");
    assert_eq!(
        containerizer::rewrite(&forged("/bin/true"), &mesos.keys.0).unwrap(),
        None
    );
}

/// The targets of a launch info's `mounts` list, in order.
pub(crate) fn mount_targets(list: &serde_json::Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["target"].as_str())
        .collect()
}

/// The environment Mesos' helper runs a rewritten launch's command with:
/// the launch info's variables (the wrapper's hand-over), its default
/// `PATH` added when there is none.
pub(crate) fn helper_environment(v: &serde_json::Value) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = v["environment"]["variables"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|var| {
            let f = |k: &str| var[k].as_str().unwrap_or_default().to_owned();
            (f("name"), f("value"))
        })
        .collect();
    if !vars.iter().any(|(n, _)| n == "PATH") {
        let path = nestguard::isolation::exec_stage::handover::HOST_DEFAULT_PATH;
        vars.push(("PATH".into(), path.into()));
    }
    vars
}

/// A library that records, each time a process loads it, whether that
/// process already runs under seccomp (`Seccomp:` of its status).
const RECORDER: &str = r#"
#include <stdio.h>
#include <string.h>
__attribute__((constructor)) static void record(void) {
    char line[256];
    FILE *in = fopen("/proc/self/status", "r");
    FILE *out = fopen(LOG, "a");
    if (!in || !out) return;
    while (fgets(line, sizeof line, in))
        if (strncmp(line, "Seccomp:", 8) == 0) fputs(line, out);
    fclose(in);
    fclose(out);
}
"#;

/// Builds [`RECORDER`] into `dir`, logging to `log`.
fn recorder(dir: &Path, log: &Path) -> PathBuf {
    let src = dir.join("recorder.c");
    let lib = dir.join("recorder.so");
    std::fs::write(&src, RECORDER).unwrap();
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(format!("-DLOG=\"{}\"", log.display()))
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    lib
}

/// The tenant's environment (`CommandInfo.environment`) names a library of
/// its own in `LD_PRELOAD`. Mesos' helper runs the stage as root with that
/// environment; the stage's loader would run the library before the first
/// defence. The wrapper takes the environment from Mesos' helper and the
/// stage sets it for the command only: the library runs, confined, in the
/// command alone, which still sees every variable.
#[test]
fn the_tenants_environment_never_reaches_the_stages_loader() {
    if !root_or_skip() {
        return;
    }
    let dir = sandbox("preload");
    let log = dir.0.join("loads");
    let lib = recorder(&dir.0, &log);
    let mesos = mesos_composite(&[]);
    let args = prepared(
        &mesos,
        config("echo \"$GREETING\" > greeting; exit 3"),
        &dir.0,
    );
    let env = serde_json::json!({"variables": [
        {"name": "LD_PRELOAD", "value": lib.display().to_string()},
        {"name": "GREETING", "value": "hello"},
    ]});

    // The hole the wrapper closes: the stage run with the tenant's
    // environment loads the library unconfined.
    let mut direct = Command::new("unshare");
    direct
        .args(["-m", "--propagation", "private", STAGE])
        .args(&args[1..])
        .current_dir(&dir.0)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LD_PRELOAD", &lib);
    assert_eq!(direct.output().unwrap().status.code(), Some(3));
    let loads = std::fs::read_to_string(&log).unwrap();
    assert!(loads.contains("Seccomp:\t0"), "{loads}");
    std::fs::remove_file(&log).unwrap();

    // Through the wrapper: Mesos' helper is left an empty environment (it
    // adds only its PATH), the stage gets the tenant's as arguments.
    let info = serde_json::json!({
        "command": {"shell": false, "value": WRAPPED_STAGE, "arguments": args},
        "environment": env,
    });
    let rewritten = containerizer::rewrite(&info.to_string(), &mesos.keys.0)
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&rewritten).unwrap();
    assert!(!v["command"].to_string().contains("recorder"), "{v}");
    assert_eq!(v["command"]["value"], STAGE);
    let staged: Vec<String> = serde_json::from_value(v["command"]["arguments"].clone()).unwrap();
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", STAGE])
        .args(&staged[1..])
        .current_dir(&dir.0)
        .env_clear()
        .envs(helper_environment(&v))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let loads = std::fs::read_to_string(&log).unwrap();
    assert!(
        !loads.is_empty() && loads.lines().all(|l| l == "Seccomp:\t2"),
        "{loads}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.0.join("greeting")).unwrap(),
        "hello\n"
    );
    // Without the wrapper, Mesos' helper cannot run the command at all.
    assert!(!Path::new(WRAPPED_STAGE).exists());
    assert!(std::fs::create_dir_all(Path::new(WRAPPED_STAGE).parent().unwrap()).is_err());
}
