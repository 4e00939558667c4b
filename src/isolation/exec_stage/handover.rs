//! What the wrapper takes from Mesos' helper and hands to the stage besides
//! the user and the mounts: the container's environment (never the
//! stage's loader's: see the module doc of [`super`]) and, for a container
//! with its own image, the rootfs and working directory (the stage enters
//! the image itself: [`super::rootfs`]).

use std::path::Path;

use serde_json::{Map, Value};

use super::plan::{ExecPlan, WORKDIR_ARG};

/// The default `PATH` Mesos' helper adds to an environment without one
/// (stout's `os::host_default_path()`).
pub const HOST_DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The variable that tells the stage how many of the container's variables
/// the wrapper handed over ([`ENV_PREFIX`]`0` to `N-1`).
pub const ENV_COUNT: &str = "NESTGUARD_STAGE_ENV_COUNT";

/// The prefix of the variables that carry the container's, one each, in
/// order: `NESTGUARD_STAGE_ENV_<i>=<NAME>=<VALUE>`.
pub const ENV_PREFIX: &str = "NESTGUARD_STAGE_ENV_";

/// Moves the container's environment out of the reach of the stage's
/// loader: the launch info's variables, built as Mesos' helper builds the
/// command's (the last value of a name wins, `PATH` defaulted), become
/// values of variables no loader or C library reads ([`ENV_PREFIX`]`<i>`,
/// and [`ENV_COUNT`]), which Mesos' helper gives the stage beside its
/// default `PATH`; the stage turns them back into the command's
/// environment just before its `execve`.
///
/// Why the environment and not the stage's arguments: a process' arguments
/// are world-readable (`/proc/<pid>/cmdline`), its environment only to its
/// owner, and the container's variables carry secrets (an executor's token,
/// the credentials `environment/credentials` injects, Mesos' secrets).
///
/// No environment in the launch info: Mesos' helper passes its own (the
/// agent's), which is not the tenant's, and so is left as it is.
pub fn take_environment(obj: &mut Map<String, Value>) {
    let Some(environment) = obj.get("environment") else {
        return;
    };
    let mut names: Vec<String> = Vec::new();
    let mut values: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let variables = environment.get("variables").and_then(Value::as_array);
    for variable in variables.into_iter().flatten() {
        let field = |f: &str| variable.get(f).and_then(Value::as_str).unwrap_or("");
        let name = field("name").to_owned();
        if values
            .insert(name.clone(), field("value").to_owned())
            .is_none()
        {
            names.push(name);
        }
    }
    if !values.contains_key("PATH") {
        values.insert("PATH".into(), HOST_DEFAULT_PATH.into());
        names.push("PATH".into());
    }
    let mut handed = vec![serde_json::json!({"name": ENV_COUNT, "value": names.len().to_string()})];
    handed.extend(names.iter().enumerate().map(|(i, n)| {
        serde_json::json!({"name": format!("{ENV_PREFIX}{i}"), "value": format!("{n}={}", values[n])})
    }));
    obj.insert(
        "environment".into(),
        serde_json::json!({ "variables": handed }),
    );
}

/// The container's environment the wrapper handed over in `vars` (the
/// stage's own environment), in order; `None` when it handed none.
pub fn handed_environment(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Option<Vec<Vec<u8>>>, String> {
    use std::os::unix::ffi::OsStringExt;
    let vars: std::collections::HashMap<std::ffi::OsString, std::ffi::OsString> = vars.collect();
    let Some(count) = vars.get(std::ffi::OsStr::new(ENV_COUNT)) else {
        return Ok(None);
    };
    let count: usize = count
        .to_str()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{ENV_COUNT} is not a number"))?;
    (0..count)
        .map(|i| {
            vars.get(std::ffi::OsStr::new(&format!("{ENV_PREFIX}{i}")))
                .map(|v| v.clone().into_vec())
                .ok_or_else(|| format!("{ENV_PREFIX}{i} is missing ({ENV_COUNT} is {count})"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Takes `rootfs` and `working_directory` out of the launch info when the
/// sealed plan names that very rootfs: the stage's `--workdir=` argument,
/// if there is a working directory. A rootfs the plan does not name (or a
/// plan's rootfs the launch info lacks) fails the launch: the stage would
/// run in a tree the isolator never saw.
pub fn take_rootfs(
    obj: &mut Map<String, Value>,
    plan: &ExecPlan,
) -> Result<Option<String>, String> {
    let given = obj
        .get("rootfs")
        .map(|v| v.as_str().unwrap_or_default().to_owned());
    match (given, &plan.rootfs) {
        (None, None) => Ok(None),
        (Some(given), Some(sealed)) if Path::new(&given) == sealed => {
            obj.remove("rootfs");
            Ok(obj
                .remove("working_directory")
                .and_then(|d| d.as_str().map(|d| format!("{WORKDIR_ARG}{d}"))))
        }
        (Some(given), _) => Err(format!(
            "the launch info's rootfs '{given}' is not the one nestguard's isolator sealed for \
             this container ({:?}): refusing to run it",
            plan.rootfs
        )),
        (None, Some(sealed)) => Err(format!(
            "nestguard's isolator sealed rootfs '{}' for this container, but the launch info has \
             none: refusing to run it",
            sealed.display()
        )),
    }
}

/// Drops, for a container with its own image, Mesos' binds of a file of
/// the image's procfs onto itself (`filesystem/linux` makes
/// `/proc/{bus,fs,irq,sys,sysrq-trigger}` read-only that way) when the
/// host's kernel has no such file: Mesos 1.11's helper would fail to create
/// the target in procfs and no image container could start on such a
/// kernel (one without `CONFIG_MAGIC_SYSRQ` has no `/proc/sysrq-trigger`).
/// There is nothing there to make read-only. Returns what it dropped.
pub fn drop_binds_of_absent_proc_files(
    obj: &mut Map<String, Value>,
    plan: &ExecPlan,
) -> Vec<String> {
    let Some(rootfs) = plan.rootfs.as_deref() else {
        return Vec::new();
    };
    let Some(mounts) = obj.get_mut("mounts").and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    let proc_in_image = rootfs.join("proc");
    let mut dropped = Vec::new();
    mounts.retain(|m| {
        let text = |k: &str| m.get(k).and_then(Value::as_str);
        let bind = m
            .get("flags")
            .and_then(Value::as_u64)
            .is_some_and(|f| f & libc::MS_BIND != 0);
        let absent = match (text("target"), text("source")) {
            (Some(target), source) if bind && source.is_none_or(|s| s == target) => {
                Path::new(target)
                    .strip_prefix(&proc_in_image)
                    .ok()
                    .filter(|rel| !rel.as_os_str().is_empty())
                    .is_some_and(|rel| !Path::new("/proc").join(rel).exists())
            }
            _ => false,
        };
        if absent {
            dropped.push(text("target").unwrap_or_default().to_owned());
        }
        !absent
    });
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::exec_stage::launch_mounts::targets_of;

    #[test]
    fn binds_of_proc_files_the_kernel_lacks_are_dropped_only_in_an_image() {
        let bind = u64::from(libc::MS_BIND as u32);
        let remount = u64::from((libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY) as u32);
        let mounts = serde_json::json!([
            {"source": "proc", "target": "/w/r/proc", "type": "proc", "flags": 14},
            {"source": "/w/r/proc/sys", "target": "/w/r/proc/sys", "flags": bind},
            {"source": "/w/r/proc/ng-no-such-file", "target": "/w/r/proc/ng-no-such-file", "flags": bind},
            {"target": "/w/r/proc/ng-no-such-file", "flags": remount},
            {"source": "/srv/x", "target": "/w/r/proc/ng-no-such-file", "flags": bind},
            {"source": "tmpfs", "target": "/w/r/dev", "type": "tmpfs", "flags": 0}
        ]);
        let mut plan = ExecPlan::example("/x/nestguard-exec", &[]);
        let mut obj = serde_json::json!({ "mounts": mounts.clone() })
            .as_object()
            .unwrap()
            .clone();
        assert!(drop_binds_of_absent_proc_files(&mut obj, &plan).is_empty());
        plan.rootfs = Some("/w/r".into());
        let dropped = drop_binds_of_absent_proc_files(&mut obj, &plan);
        assert_eq!(dropped, ["/w/r/proc/ng-no-such-file"; 2]);
        let left = targets_of(&obj["mounts"]);
        // A bind from elsewhere stays: it is not Mesos' read-only bind.
        assert_eq!(
            left,
            [
                "/w/r/proc",
                "/w/r/proc/sys",
                "/w/r/proc/ng-no-such-file",
                "/w/r/dev"
            ]
        );
    }
}
