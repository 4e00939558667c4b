//! What the wrapper takes from Mesos' helper and hands to the stage besides
//! the user and the mounts: the container's environment (never the
//! stage's loader's: see the module doc of [`super`]) and, for a container
//! with its own image, the rootfs and working directory (the stage enters
//! the image itself: [`super::rootfs`]).

use std::path::Path;

use serde_json::{Map, Value};

use super::plan::{ENV_ARG, ExecPlan, WORKDIR_ARG};

/// The default `PATH` Mesos' helper adds to an environment without one
/// (stout's `os::host_default_path()`).
pub const HOST_DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Takes the container's environment out of the launch info: the stage's
/// `--env=NAME=VALUE` arguments, built as Mesos' helper builds the command's
/// (the last value of a name wins, `PATH` defaulted). Mesos' helper is left
/// an empty environment, so it runs the stage with its default `PATH` alone.
/// No environment in the launch info: Mesos' helper passes its own (the
/// agent's), which is not the tenant's, and so is left as it is.
pub fn take_environment(obj: &mut Map<String, Value>) -> Vec<String> {
    let Some(environment) = obj.get("environment") else {
        return Vec::new();
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
    obj.insert("environment".into(), serde_json::json!({ "variables": [] }));
    names
        .into_iter()
        .map(|n| format!("{}{n}={}", ENV_ARG, values[&n]))
        .collect()
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
