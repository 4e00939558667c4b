//! Sandbox mounts under Mesos' launcher: taken from Mesos' helper by the
//! wrapper, made by the stage through descriptors (issue #24).
//!
//! # The hole
//!
//! A `SANDBOX_PATH` volume is a bind mount whose source lies in the parent's
//! sandbox and whose target lies in the container's own: both directories a
//! tenant's executor can change at any time. Mesos' launch helper mounts
//! the launch info's `mounts` *by path*, following symbolic links, long
//! after the isolator checked them. A target swapped for a link to the
//! stage (or to anything the stage loads) would put the tenant's file where
//! a root process executes it: the stage runs as root with every
//! capability when the wrapper moved the user switch into it.
//!
//! # The fix
//!
//! 1. The wrapper ([`super::containerizer`]), for a command the isolator
//!    sealed only, takes every mount whose source or target lies in a
//!    sandbox of the container's tree ([`take`]) out of the launch info
//!    (the others keep their order and stay Mesos') and hands them to the
//!    stage as one argument, `--mounts=<base64 JSON>`, beside `--user`.
//!    The sandboxes come from the sealed plan ([`super::ExecPlan`]'s
//!    `sandboxes`, the isolator's, outermost first): nothing the tenant can
//!    steer decides what is a sandbox path.
//! 2. The stage makes them ([`perform`]) before any other step: in a mount
//!    namespace other than the agent's only (the plan's `agent_mnt_ns`),
//!    after making `/` a recursive slave (nothing propagates to the host),
//!    with [`helper::mounts::apply`](crate::isolation::helper::mounts::apply):
//!    every sandbox path is resolved again below the outermost sandbox with
//!    `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`
//!    and mounted from that descriptor (`open_tree` + `move_mount`); a
//!    read-only remount applies to that very mount (`mount_setattr`). A
//!    swapped link ends the launch with an escape error.
//!
//! # Why the stage and not the wrapper itself
//!
//! The wrapper `execve`s Mesos' helper by path, and that helper loads its
//! libraries by path, as root, *after* anything the wrapper mounted: a
//! volume with an absolute `container_path` onto (or through a link to)
//! Mesos' install (`<launcher_dir>/mesos-containerizer.mesos` is often a
//! link to `/usr/libexec/mesos/…`, `libmesos` may live in `/opt`) would have
//! the tenant's file run as root. The stage is already running when it
//! mounts, and runs nothing as root afterwards: it drops the bounding set,
//! switches the user and `execve`s the container's own command. So the
//! mounts land after Mesos' helper has done everything else (its remaining
//! mounts, `chdir`, `pre_exec_commands`), and just before the defences.
//!
//! # What fails closed
//!
//! Anything [`apply`](crate::isolation::helper::mounts::apply) would make by
//! path (a remount of a target not bound just before, a propagation change,
//! a file system whose source is a sandbox path, a bind flag it would
//! ignore), a path with `..`, a container joining another's mount
//! namespace (`namespace_mnt_target`, a debug session), a plan without
//! sandboxes, the
//! agent's mount namespace, a `--mounts` argument that does not decode:
//! the launch ends with a message and the command never runs.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use nix::mount::MsFlags;
use serde_json::{Map, Value};

use super::plan::MAX_PLAN_BYTES;
use crate::isolation::helper::mounts;
use crate::proto::mesos::slave::ContainerMountInfo;

/// The stage's argument that carries the mounts.
pub const MOUNTS_ARG: &str = "--mounts=";

/// The flags a bind mount may carry (the attributes are set on the new
/// mount through its descriptor).
const BIND_FLAGS: MsFlags = MsFlags::MS_BIND
    .union(MsFlags::MS_REC)
    .union(MsFlags::MS_RDONLY)
    .union(MsFlags::MS_NOSUID)
    .union(MsFlags::MS_NODEV)
    .union(MsFlags::MS_NOEXEC);

/// The flags a remount of a bound target may carry.
const REMOUNT_FLAGS: MsFlags = BIND_FLAGS.union(MsFlags::MS_REMOUNT);

/// Whether `path` lies in one of `sandboxes`.
fn in_sandbox(path: &str, sandboxes: &[PathBuf]) -> bool {
    sandboxes.iter().any(|s| Path::new(path).starts_with(s))
}

fn flags(m: &ContainerMountInfo) -> MsFlags {
    MsFlags::from_bits_retain(libc::c_ulong::from(m.flags.unwrap_or(0)))
}

/// Refuses any of `mounts` that `apply` would not make through
/// descriptors ([`mounts::through_descriptors`]): a bind from or onto a
/// sandbox path, a remount of a target bound earlier in the list, or a file
/// system (`tmpfs`, Mesos' secrets' `ramfs`) onto a sandbox path; binds and
/// remounts with flags other than the attributes `apply` sets are refused
/// too (it would ignore them).
pub fn check(mounts: &[ContainerMountInfo], sandboxes: &[PathBuf]) -> Result<(), String> {
    if mounts.is_empty() {
        return Ok(());
    }
    if sandboxes.is_empty() || sandboxes.iter().any(|s| !s.is_absolute()) {
        return Err(format!(
            "the exec stage's plan names no sandboxes (or a relative one: {sandboxes:?}): \
             cannot mount sandbox paths safely"
        ));
    }
    let mut bound: Vec<&str> = Vec::new();
    for m in mounts {
        let f = flags(m);
        let allowed = if f.contains(MsFlags::MS_REMOUNT) {
            REMOUNT_FLAGS.contains(f)
        } else if f.contains(MsFlags::MS_BIND) {
            BIND_FLAGS.contains(f)
        } else {
            true
        };
        if !allowed || !mounts::through_descriptors(m, sandboxes, &bound) {
            return Err(format!(
                "mount of {:?} onto '{}' (type {:?}, flags {:#x}) touches a sandbox but is not \
                 one nestguard can make through descriptors: refusing to make it by path",
                m.source,
                m.target,
                m.r#type,
                f.bits()
            ));
        }
        if f.contains(MsFlags::MS_BIND) && !f.contains(MsFlags::MS_REMOUNT) {
            bound.push(&m.target);
        }
    }
    Ok(())
}

/// Takes from the launch info `info` every mount whose source or target
/// lies in one of `sandboxes`, the remount of a target taken so (a
/// read-only volume's second step, whose absolute target may lie outside
/// every sandbox), and every mount onto a path below a target taken so (a
/// volume inside the sandbox an image container sees at
/// `/mnt/mesos/sandbox`: made after that bind, as Mesos would); the others
/// stay, in their order. The taken ones are resolved below the sandboxes
/// and `rootfs` (the container's image, if it has one). Fails when such
/// mounts cannot be made safely (see the module documentation), among them
/// when Mesos' helper joins another container's mount namespace
/// (`joins_mount_namespace`: its `--namespace_mnt_target` flag, a debug
/// session), and when the launch info's `file_operations` touch a sandbox.
pub fn take(
    info: &mut Map<String, Value>,
    sandboxes: &[PathBuf],
    rootfs: Option<&Path>,
    joins_mount_namespace: bool,
) -> Result<Vec<ContainerMountInfo>, String> {
    refuse_sandbox_file_operations(info, sandboxes)?;
    super::left_to_mesos::other_targets_are_fixed(info)?;
    let Some(list) = info.get("mounts") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return Err("the launch info's 'mounts' is not a list".into());
    };
    let mut taken = Vec::new();
    let mut left = Vec::new();
    for entry in list {
        let text = |key: &str| entry.get(key).and_then(Value::as_str);
        let paths = [text("source"), text("target")];
        if let Some(p) = paths
            .iter()
            .flatten()
            .find(|p| Path::new(p).components().any(|c| c == Component::ParentDir))
        {
            return Err(format!("a mount path of the launch info has '..': '{p}'"));
        }
        let remounts_taken = entry
            .get("flags")
            .and_then(Value::as_u64)
            .is_some_and(|f| f & u64::from(libc::MS_REMOUNT as u32) != 0)
            && text("target")
                .is_some_and(|t| taken.iter().any(|m: &ContainerMountInfo| m.target == t));
        let below_taken = text("target").is_some_and(|t| {
            taken.iter().any(|m: &ContainerMountInfo| {
                Path::new(t) != Path::new(&m.target) && Path::new(t).starts_with(&m.target)
            })
        });
        if remounts_taken || below_taken || paths.iter().flatten().any(|p| in_sandbox(p, sandboxes))
        {
            let m = crate::json::from_json::<ContainerMountInfo>(&entry.to_string())
                .map_err(|e| format!("a mount of the launch info: {e}"))?;
            taken.push(m);
        } else {
            left.push(entry.clone());
        }
    }
    for entry in &left {
        if let Some(target) = entry.get("target").and_then(Value::as_str) {
            super::left_to_mesos::target_is_fixed(Path::new(target))?;
        }
    }
    if taken.is_empty() {
        return Ok(taken);
    }
    if joins_mount_namespace {
        return Err("Mesos' helper joins another container's mount namespace \
             (--namespace_mnt_target) and the launch has mounts in a sandbox: nestguard \
             cannot make those mounts safely there"
            .into());
    }
    let mut roots = sandboxes.to_vec();
    roots.extend(rootfs.map(Path::to_path_buf));
    check(&taken, &roots)?;
    if left.is_empty() {
        info.remove("mounts");
    } else {
        info.insert("mounts".into(), Value::Array(left));
    }
    Ok(taken)
}

/// Refuses `file_operations` (Mesos 1.11's secret volumes: a `ramfs` onto
/// `<sandbox>/.secret-…`, then a rename and a bind) that name a path in a
/// sandbox: Mesos' helper performs them by path, as root, where the tenant
/// can swap a link in; nestguard does not make them itself yet, so the
/// launch fails closed rather than running them.
fn refuse_sandbox_file_operations(
    info: &Map<String, Value>,
    sandboxes: &[PathBuf],
) -> Result<(), String> {
    fn paths_in(v: &Value, sandboxes: &[PathBuf]) -> Option<String> {
        match v {
            Value::String(s) if in_sandbox(s, sandboxes) => Some(s.clone()),
            Value::Array(a) => a.iter().find_map(|v| paths_in(v, sandboxes)),
            Value::Object(o) => o.values().find_map(|v| paths_in(v, sandboxes)),
            _ => None,
        }
    }
    match info
        .get("file_operations")
        .and_then(|v| paths_in(v, sandboxes))
    {
        Some(path) => Err(format!(
            "the launch info has file operations on '{path}', in a sandbox (Mesos' secret \
             volumes): Mesos' helper would perform them by path, as root, where the tenant can \
             swap a link in; nestguard refuses them under Mesos' launcher"
        )),
        None => Ok(()),
    }
}

/// The `--mounts=` argument.
pub fn to_arg(mounts: &[ContainerMountInfo]) -> String {
    let list: Vec<Value> = mounts.iter().map(crate::json::to_json_value).collect();
    format!(
        "{MOUNTS_ARG}{}",
        BASE64.encode(Value::Array(list).to_string())
    )
}

/// Decodes a `--mounts=` value (bounded as a plan).
pub fn from_arg(value: &[u8]) -> Result<Vec<ContainerMountInfo>, String> {
    if value.len() > MAX_PLAN_BYTES {
        return Err(format!(
            "--mounts: {} bytes, more than {MAX_PLAN_BYTES}",
            value.len()
        ));
    }
    let json = BASE64
        .decode(value)
        .map_err(|e| format!("--mounts: base64: {e}"))?;
    let list: Vec<Value> =
        serde_json::from_slice(&json).map_err(|e| format!("--mounts: JSON: {e}"))?;
    list.iter()
        .map(|v| {
            crate::json::from_json::<ContainerMountInfo>(&v.to_string())
                .map_err(|e| format!("--mounts: {e}"))
        })
        .collect()
}

/// The targets of a launch info's `mounts` list, in order (for tests).
#[cfg(test)]
pub(crate) fn targets_of(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["target"].as_str())
        .collect()
}

/// The inode of the caller's mount namespace.
pub fn own_mnt_ns() -> Result<u64, String> {
    Ok(std::fs::metadata("/proc/self/ns/mnt")
        .map_err(|e| format!("stat /proc/self/ns/mnt: {e}"))?
        .ino())
}

/// Makes `mounts` in the caller's mount namespace, which must not be
/// `agent_mnt_ns`: `/` first becomes a recursive slave, then every mount
/// goes through descriptors resolved below `sandboxes` (outermost first).
pub fn perform(
    mounts: &[ContainerMountInfo],
    sandboxes: &[PathBuf],
    agent_mnt_ns: u64,
) -> Result<(), String> {
    if mounts.is_empty() {
        return Ok(());
    }
    check(mounts, sandboxes)?;
    if own_mnt_ns()? == agent_mnt_ns {
        return Err(format!(
            "{} sandbox mount(s) to make, but this process is in the agent's mount namespace: \
             refusing to mount on the host (the container needs a mount namespace of its own: \
             list nestguard's filesystem/linux isolator)",
            mounts.len()
        ));
    }
    make_rslave()?;
    crate::isolation::helper::mounts::apply(mounts, sandboxes, None).map_err(|e| e.to_string())
}

/// Makes `/` a recursive slave of its origin, so that nothing mounted or
/// unmounted here propagates to the host (Mesos' helper does the same
/// before its own mounts; doing it again costs nothing).
pub fn make_rslave() -> Result<(), String> {
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_SLAVE | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("mount --make-rslave /: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BIND: u32 = (libc::MS_BIND | libc::MS_REC) as u32;
    const RO: u32 = (libc::MS_BIND | libc::MS_REC | libc::MS_REMOUNT | libc::MS_RDONLY) as u32;

    fn sandboxes() -> Vec<PathBuf> {
        vec![
            PathBuf::from("/w/runs/p"),
            PathBuf::from("/w/runs/p/containers/c"),
        ]
    }

    fn info() -> Map<String, Value> {
        json!({
            "command": {"value": "/x"},
            "mounts": [
                {"target": "/dev/shm", "type": "tmpfs", "source": "tmpfs", "flags": 6},
                {"source": "/w/runs/p/data", "target": "/w/runs/p/containers/c/data", "flags": BIND},
                {"target": "/w/runs/p/containers/c/data", "flags": RO},
                {"source": "/srv/host", "target": "/srv/x", "flags": BIND},
                {"source": "/srv/tools", "target": "/w/runs/p/containers/c/tools", "flags": BIND},
                {"target": "/proc", "type": "proc", "source": "proc", "flags": 14}
            ]
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn takes_the_sandbox_mounts_and_keeps_the_others_in_order() {
        let mut i = info();
        let taken = take(&mut i, &sandboxes(), None, false).unwrap();
        let targets: Vec<&str> = taken.iter().map(|m| m.target.as_str()).collect();
        assert_eq!(
            targets,
            [
                "/w/runs/p/containers/c/data",
                "/w/runs/p/containers/c/data",
                "/w/runs/p/containers/c/tools"
            ]
        );
        assert_eq!(taken[1].flags, Some(RO));
        let left = targets_of(&i["mounts"]);
        assert_eq!(left, ["/dev/shm", "/srv/x", "/proc"]);
        assert_eq!(i["command"]["value"], "/x");
        // Round trip through the stage's argument.
        let arg = to_arg(&taken);
        let back = from_arg(arg.strip_prefix(MOUNTS_ARG).unwrap().as_bytes()).unwrap();
        assert_eq!(back, taken);
        assert!(from_arg(b"!!").is_err() && from_arg(b"e30=").is_err());
    }

    #[test]
    fn the_remount_of_a_taken_bind_outside_every_sandbox_is_taken_too() {
        // A read-only volume with an absolute container_path: the bind's
        // source is in a sandbox, its target (and its remount's) is not.
        let mut i = json!({"mounts": [
            {"source": "/w/runs/p/a", "target": "/srv/ro", "flags": BIND},
            {"target": "/srv/ro", "flags": RO},
            {"target": "/srv/other", "flags": RO}
        ]})
        .as_object()
        .unwrap()
        .clone();
        let taken = take(&mut i, &sandboxes(), None, false).unwrap();
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[1].flags, Some(RO));
        let left = i["mounts"].as_array().unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0]["target"], "/srv/other");
    }

    #[test]
    fn all_taken_removes_the_list_and_none_taken_changes_nothing() {
        let mut i = json!({"mounts": [
            {"source": "/w/runs/p/a", "target": "/w/runs/p/containers/c/a", "flags": BIND}
        ]})
        .as_object()
        .unwrap()
        .clone();
        assert_eq!(take(&mut i, &sandboxes(), None, false).unwrap().len(), 1);
        assert!(!i.contains_key("mounts"));
        let mut i = json!({"mounts": [{"target": "/dev/shm", "type": "tmpfs", "flags": 0}]})
            .as_object()
            .unwrap()
            .clone();
        let before = i.clone();
        assert!(take(&mut i, &sandboxes(), None, false).unwrap().is_empty());
        assert_eq!(i, before);
        let mut none = Map::new();
        assert!(
            take(&mut none, &sandboxes(), None, false)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn an_image_containers_sandbox_and_what_lies_below_it_are_taken() {
        let rootfs = Path::new("/w/prov/r");
        let mut i = json!({"mounts": [
            {"source": "/w/prov/r", "target": "/w/prov/r", "flags": BIND},
            {"source": "proc", "target": "/w/prov/r/proc", "type": "proc", "flags": 14},
            {"source": "/w/runs/p/containers/c", "target": "/w/prov/r/mnt/mesos/sandbox", "flags": BIND},
            {"source": "/srv/data", "target": "/w/prov/r/mnt/mesos/sandbox/data", "flags": BIND},
            {"source": "/srv/other", "target": "/w/prov/r/srv", "flags": BIND}
        ]})
        .as_object()
        .unwrap()
        .clone();
        let taken = take(&mut i, &sandboxes(), Some(rootfs), false).unwrap();
        let targets: Vec<&str> = taken.iter().map(|m| m.target.as_str()).collect();
        assert_eq!(
            targets,
            [
                "/w/prov/r/mnt/mesos/sandbox",
                "/w/prov/r/mnt/mesos/sandbox/data"
            ]
        );
        let left = targets_of(&i["mounts"]);
        assert_eq!(left, ["/w/prov/r", "/w/prov/r/proc", "/w/prov/r/srv"]);
        // Without the rootfs as a root, a host path onto a path below the
        // sandbox's target could only be made by path: refused.
        let mut i = json!({"mounts": [
            {"source": "/w/runs/p/containers/c", "target": "/srv/x", "flags": BIND},
            {"source": "/srv/data", "target": "/srv/x/data", "flags": BIND}
        ]})
        .as_object()
        .unwrap()
        .clone();
        let e = take(&mut i, &sandboxes(), None, false).unwrap_err();
        assert!(e.contains("/srv/x/data") && e.contains("by path"), "{e}");
    }

    #[test]
    fn what_cannot_be_made_through_descriptors_is_refused() {
        let s = sandboxes();
        let refused = |mounts: Value, extra: Option<(&str, Value)>| {
            let mut i = json!({ "mounts": mounts }).as_object().unwrap().clone();
            if let Some((k, v)) = extra {
                i.insert(k.into(), v);
            }
            take(&mut i, &s, None, false).unwrap_err()
        };
        let bind =
            json!({"source": "/w/runs/p/a", "target": "/w/runs/p/containers/c/a", "flags": BIND});
        // A file system from a sandbox path (a device node the tenant
        // could swap) would be mounted from it by path.
        let e = refused(
            json!([{"source": "/w/runs/p/img", "type": "ext4", "target": "/w/runs/p/containers/c/t", "flags": 0}]),
            None,
        );
        assert!(e.contains("by path"), "{e}");
        // A propagation change of a sandbox path.
        let e = refused(
            json!([{"target": "/w/runs/p/containers/c/t", "flags": libc::MS_SHARED as u32}]),
            None,
        );
        assert!(e.contains("by path"), "{e}");
        // A remount of a target not bound before it.
        let e = refused(
            json!([{"target": "/w/runs/p/containers/c/a", "flags": RO}]),
            None,
        );
        assert!(e.contains("by path"), "{e}");
        // A propagation flag on a bind.
        let e = refused(
            json!([{"source": "/w/runs/p/a", "target": "/w/runs/p/containers/c/a",
                    "flags": BIND | libc::MS_SHARED as u32}]),
            None,
        );
        assert!(e.contains("by path"), "{e}");
        let e = refused(
            json!([{"source": "/w/runs/p/containers/c/../../../../etc", "target": "/x", "flags": BIND}]),
            None,
        );
        assert!(e.contains(".."), "{e}");
        // A debug session's helper joins another container's namespace.
        let mut i = json!({ "mounts": [bind.clone()] })
            .as_object()
            .unwrap()
            .clone();
        let e = take(&mut i, &s, None, true).unwrap_err();
        assert!(e.contains("namespace_mnt_target"), "{e}");
        // Mesos' secret volumes arrive as file operations: refused when
        // they name a sandbox path, whatever the mounts.
        let mut i = json!({"file_operations": [{"operation": "MOUNT", "mount":
            {"source": "ramfs", "target": "/w/runs/p/containers/c/.secret-9"}}]})
        .as_object()
        .unwrap()
        .clone();
        let e = take(&mut i, &s, None, false).unwrap_err();
        assert!(e.contains("file operations"), "{e}");
        let e = refused(json!({"source": "/w/runs/p/a"}), None);
        assert!(e.contains("not a list"), "{e}");
        // No sandboxes in the plan: nothing is a sandbox path, nothing taken;
        // the stage refuses such mounts outright.
        let m = from_arg(
            to_arg(&[ContainerMountInfo {
                source: Some("/w/runs/p/a".into()),
                target: "/w/runs/p/containers/c/a".into(),
                flags: Some(BIND),
                ..Default::default()
            }])
            .strip_prefix(MOUNTS_ARG)
            .unwrap()
            .as_bytes(),
        )
        .unwrap();
        assert!(check(&m, &[]).unwrap_err().contains("no sandboxes"));
        check(&m, &s).unwrap();
        // Mesos' secrets: a ramfs onto a sandbox path, then a bind from it.
        let mut i = json!({"mounts": [
            {"source": "ramfs", "type": "ramfs", "target": "/w/runs/p/containers/c/.secret-1", "flags": 0},
            {"source": "/w/runs/p/containers/c/.secret-1/s", "target": "/w/runs/p/containers/c/s",
             "flags": BIND | libc::MS_RDONLY as u32}
        ]})
        .as_object()
        .unwrap()
        .clone();
        assert_eq!(take(&mut i, &s, None, false).unwrap().len(), 2);
    }

    #[test]
    fn never_mounts_in_the_agents_namespace() {
        let m = [ContainerMountInfo {
            source: Some("/w/runs/p/a".into()),
            target: "/w/runs/p/containers/c/a".into(),
            flags: Some(BIND),
            ..Default::default()
        }];
        let e = perform(&m, &sandboxes(), own_mnt_ns().unwrap()).unwrap_err();
        assert!(e.contains("agent's mount namespace"), "{e}");
        // Nothing to mount: nothing is checked, nothing done.
        perform(&[], &sandboxes(), own_mnt_ns().unwrap()).unwrap();
    }
}
