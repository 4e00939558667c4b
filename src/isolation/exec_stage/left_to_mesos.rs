//! What the wrapper leaves to Mesos' helper: the mounts of Mesos' other
//! isolators (host_path, image and CSI volumes, an image's `/proc`, `/sys`,
//! `/dev`), the masked paths and the file operations, which Mesos' helper
//! makes by path, as root, before the stage runs. None of them may be
//! steerable by a tenant, cover what the stage runs from, or follow a
//! tree an earlier bind brought in; else the wrapper fails the launch.
//! (What the stage makes itself, through descriptors: [`super::launch_mounts`].)

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

/// What the stage runs from or loads on the host's tree: a mount left to
/// Mesos' helper may not cover these (nor the stage itself, nor be above
/// them), as nestguard's own volumes may not (`isolator::exec_stage`).
const PROTECTED: [&str; 6] = ["/lib", "/lib64", "/usr", "/etc", "/bin", "/sbin"];

/// The files Mesos' `network/cni` isolator binds over the host's (from
/// files the agent writes): no loader or C library start-up reads them.
const NETWORK_FILES: [&str; 3] = ["/etc/hosts", "/etc/hostname", "/etc/resolv.conf"];

/// Refuses a mount left to Mesos' helper (another Mesos isolator's:
/// `volume/host_path`, `volume/image`, CSI, …) that could put a tenant's
/// tree where a root process runs or loads something, as nestguard's own
/// volumes are refused at prepare:
/// - outside the container's image (`rootfs`): any mount onto, above or
///   below the stage or [`PROTECTED`]; onto `/proc` or above it, anything
///   but a fresh `proc` or `tmpfs`; below it, anything but those or a bind
///   of `/dev/null` (the masked paths);
/// - anywhere: a mount strictly below the target of an earlier bind (but a
///   bind of a path onto itself, as Mesos makes an image's rootfs a mount
///   point): the bound tree is not the one [`target_is_fixed`] walked, and
///   a link in it (an image volume's) could lead the later mount out, onto
///   the stage.
pub fn left_mounts_are_safe(
    info: &Map<String, Value>,
    rootfs: Option<&Path>,
    stage: &Path,
) -> Result<(), String> {
    let list = info.get("mounts").and_then(Value::as_array);
    let mut binds: Vec<&str> = Vec::new();
    for m in list.into_iter().flatten() {
        let text = |k: &str| m.get(k).and_then(Value::as_str);
        let Some(target) = text("target") else {
            continue;
        };
        let flags = m.get("flags").and_then(Value::as_u64).unwrap_or(0);
        let bind = flags & libc::MS_BIND != 0;
        let refuse = |why: String| {
            Err(format!(
                "a mount onto '{target}' left to Mesos' helper {why}: refusing it under Mesos' \
                 launcher"
            ))
        };
        if let Some(below) = binds
            .iter()
            .find(|b| Path::new(target) != Path::new(b) && Path::new(target).starts_with(b))
        {
            return refuse(format!("lies below the earlier bind onto '{below}'"));
        }
        let remount = flags & libc::MS_REMOUNT != 0;
        if !remount && !rootfs.is_some_and(|r| Path::new(target).starts_with(r)) {
            covers_nothing_the_stage_needs(target, text("source"), text("type"), bind, stage)
                .or_else(refuse)?;
        }
        if bind && text("source") != Some(target) {
            binds.push(target);
        }
    }
    Ok(())
}

/// See [`left_mounts_are_safe`]: `Err` says what the mount would cover.
fn covers_nothing_the_stage_needs(
    target: &str,
    source: Option<&str>,
    fstype: Option<&str>,
    bind: bool,
    stage: &Path,
) -> Result<(), String> {
    if bind && NETWORK_FILES.contains(&target) {
        return Ok(());
    }
    let target = Path::new(target);
    let overlaps = |p: &Path| target.starts_with(p) || p.starts_with(target);
    if let Some(p) = PROTECTED
        .iter()
        .map(Path::new)
        .chain([stage])
        .find(|p| overlaps(p))
    {
        return Err(format!(
            "would cover '{}', which the exec stage runs from",
            p.display()
        ));
    }
    let fresh = !bind && matches!(fstype, Some("proc" | "tmpfs"));
    let mask = bind && source == Some("/dev/null") && target.starts_with("/proc/");
    if overlaps(Path::new("/proc")) && !fresh && !mask {
        return Err("would cover what the stage reads in /proc".into());
    }
    Ok(())
}

/// Refuses a target left to Mesos' helper (which mounts it by path, as
/// root, before the stage runs) that a tenant could steer: a symbolic link
/// on its way, or a directory on its way that is not root's or that others
/// may write (where a link could be swapped in after this check). Such a
/// mount (another Mesos isolator's volume whose `container_path` leads
/// through the tenant's link) could cover the stage before it ever checks
/// its identity. Components that do not exist yet end the walk: Mesos'
/// helper creates them below a directory that passed.
pub fn target_is_fixed(target: &Path) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let refuse = |why: String| {
        Err(format!(
            "a mount onto '{}' is left to Mesos' helper, which mounts by path as root, and \
             {why}: refusing it under Mesos' launcher",
            target.display()
        ))
    };
    if !target.is_absolute() {
        return refuse("its target is not an absolute path".into());
    }
    let mut here = PathBuf::from("/");
    let parts: Vec<Component<'_>> = target.components().skip(1).collect();
    for (i, part) in parts.iter().enumerate() {
        let dir_meta = std::fs::symlink_metadata(&here)
            .map_err(|e| format!("lstat {}: {e}", here.display()))?;
        if dir_meta.uid() != 0 || dir_meta.permissions().mode() & 0o022 != 0 {
            return refuse(format!(
                "'{}' on its way is not root's alone (a link could be swapped in)",
                here.display()
            ));
        }
        here.push(part);
        match std::fs::symlink_metadata(&here) {
            Ok(m) if m.file_type().is_symlink() => {
                return refuse(format!(
                    "'{}' on its way is a symbolic link",
                    here.display()
                ));
            }
            Ok(m) if i + 1 < parts.len() && !m.is_dir() => {
                return refuse(format!(
                    "'{}' on its way is not a directory",
                    here.display()
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("lstat {}: {e}", here.display())),
        }
    }
    Ok(())
}

/// The masked paths and the targets of the file operations Mesos' helper
/// performs by path, as root, before the stage (an image's `/proc` masks,
/// its `/dev` links) must be as fixed as the targets of the mounts left to
/// it ([`target_is_fixed`]): a mask or link steered by a tenant's link
/// could land over the stage, or what it loads, on the host's tree.
pub fn other_targets_are_fixed(info: &Map<String, Value>) -> Result<(), String> {
    let masked = info
        .get("masked_paths")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let linked = info
        .get("file_operations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|op| op.get("symlink")?.get("target")?.as_str());
    for target in masked.chain(linked) {
        target_is_fixed(Path::new(target))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masks_and_links_left_to_mesos_must_have_fixed_targets() {
        // /tmp is writable by anyone: a link could be swapped in there.
        let i = json!({"masked_paths": ["/tmp/ng-image/proc/kcore"]})
            .as_object()
            .unwrap()
            .clone();
        let e = other_targets_are_fixed(&i).unwrap_err();
        assert!(e.contains("/tmp") && e.contains("root's alone"), "{e}");
        let i = json!({"file_operations": [{"operation": "SYMLINK",
            "symlink": {"source": "/proc/self/fd", "target": "/tmp/ng-image/dev/fd"}}]})
        .as_object()
        .unwrap()
        .clone();
        let e = other_targets_are_fixed(&i).unwrap_err();
        assert!(e.contains("/tmp/ng-image/dev/fd"), "{e}");
        // Below directories only root writes (or not made yet): fine.
        let i = json!({"masked_paths": ["/proc/kcore", "/w/r/proc/keys"]})
            .as_object()
            .unwrap()
            .clone();
        other_targets_are_fixed(&i).unwrap();
    }

    #[test]
    fn mounts_left_to_mesos_never_cover_what_the_stage_needs() {
        let stage = Path::new("/opt/ng/nestguard-exec");
        let bind = u64::from(libc::MS_BIND as u32);
        let check = |mounts: Value, rootfs: Option<&str>| {
            let i = json!({ "mounts": mounts }).as_object().unwrap().clone();
            left_mounts_are_safe(&i, rootfs.map(Path::new), stage)
        };
        // What Mesos and nestguard leave there themselves: fine.
        let ours = json!([
            {"source": "proc", "target": "/proc", "type": "proc", "flags": 14},
            {"source": "tmpfs", "target": "/proc/acpi", "type": "tmpfs", "flags": 1},
            {"source": "/dev/null", "target": "/proc/keys", "flags": bind},
            {"target": "/proc/keys", "flags": u64::from((libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY) as u32)},
            {"source": "tmpfs", "target": "/dev/shm", "type": "tmpfs", "flags": 0},
            {"source": "/var/run/mesos/cni/hosts", "target": "/etc/hosts", "flags": bind},
            {"source": "/srv/data", "target": "/data", "flags": bind}
        ]);
        check(ours, None).unwrap();
        // A host path volume onto the stage's directory, or /etc, or /proc.
        for target in ["/opt/ng", "/opt", "/etc", "/usr/lib", "/proc/self"] {
            let e = check(
                json!([{"source": "/tmp/evil", "target": target, "flags": bind}]),
                None,
            )
            .unwrap_err();
            assert!(e.contains(target), "{e}");
        }
        // In an image: the rootfs onto itself, its own mounts; but nothing
        // below an earlier bind (an image volume's link could lead out).
        let image = json!([
            {"source": "/w/r", "target": "/w/r", "flags": bind},
            {"source": "proc", "target": "/w/r/proc", "type": "proc", "flags": 14},
            {"source": "/w/r/proc/sys", "target": "/w/r/proc/sys", "flags": bind},
            {"source": "/w/images/v", "target": "/w/r/v", "flags": bind},
            {"source": "/srv/data", "target": "/w/r/v/x", "flags": bind}
        ]);
        let e = check(image, Some("/w/r")).unwrap_err();
        assert!(e.contains("/w/r/v/x") && e.contains("below"), "{e}");
    }
}
