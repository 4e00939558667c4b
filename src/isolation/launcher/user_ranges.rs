//! The pods' host id ranges (the `namespaces/user` isolator, see
//! [`crate::isolation::id_map`]): allocated when a top-level container
//! launches, checkpointed in its runtime directory before the helper runs,
//! recovered with it, and free again only once its record is gone, which
//! destroy allows only when no process of the pod is left. A nested
//! container shares its root's range (and enters its user namespace).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::sched::CloneFlags;

use super::tree::{Container, Pending};
use super::{Launcher, LauncherError, Mode, io};
use crate::checkpoint;
use crate::container_id;
use crate::isolation::channel::UserNamespaceControl;
use crate::isolation::helper::command;
use crate::isolation::id_map::{BindOwner, IdRange};
use crate::isolation::namespace_ops::Plan;
use crate::proto::mesos::ContainerId;
use crate::proto::mesos::slave::ContainerLaunchInfo;

/// The checkpoint of a pod's range, in its top-level runtime directory.
pub const USER_NAMESPACE_FILE: &str = "user_namespace";

impl Launcher {
    /// Under both locks: the range of the pod `id` belongs to. A top-level
    /// container gets the lowest free one of the pool (reserved in
    /// `pending` until its record exists); a nested one its root's (none if
    /// the root has none: it launched before the pool was configured).
    pub(super) fn reserve_user_range(
        &self,
        id: &ContainerId,
        key: &str,
        containers: &BTreeMap<String, Container>,
        pending: &mut Pending,
    ) -> Result<Option<IdRange>, LauncherError> {
        // A nested container joins its pod's range whatever the pool is
        // now: a pod recovered after the option was turned off still runs
        // in its user namespace, and nothing may join it as host root.
        if id.parent.is_some() {
            let root = container_id::to_dotted(container_id::root(id));
            let range = containers.get(&root).and_then(|c| c.user_range);
            if range.is_some() && self.options.mode == Mode::Posix {
                return Err(LauncherError::UserNamespaceUnsupported(
                    "the posix launcher makes no namespaces",
                ));
            }
            return Ok(range);
        }
        let Some(pool) = self.options.user_namespaces else {
            return Ok(None);
        };
        if self.options.mode == Mode::Posix {
            return Err(LauncherError::UserNamespaceUnsupported(
                "the posix launcher makes no namespaces",
            ));
        }
        let taken: Vec<IdRange> = containers
            .values()
            .filter_map(|c| c.user_range)
            .chain(pending.user_ranges.values().copied())
            .collect();
        let range = pool.allocate(&taken)?;
        pending.user_ranges.insert(key.to_owned(), range);
        Ok(Some(range))
    }

    /// What the helper needs to run the container in the pod's user
    /// namespace, after the checks that must fail the launch before it.
    pub(super) fn user_namespace_control(
        &self,
        range: IdRange,
        plan: &mut Plan,
        info: &ContainerLaunchInfo,
        place: Placement<'_>,
    ) -> Result<UserNamespaceControl, LauncherError> {
        // A pod's own pid namespace lets destroy reach every process of it
        // before its range is handed out again.
        if !place.nested && !plan.clone.contains(CloneFlags::CLONE_NEWPID) {
            if !plan.clone.is_empty() || !info.clone_namespaces.is_empty() {
                return Err(LauncherError::UserNamespaceUnsupported(
                    "a pod in a user namespace needs a pid namespace of its own: list the \
                     `namespaces` isolator (share_pid_namespace is refused for such a pod)",
                ));
            }
            plan.clone |= CloneFlags::CLONE_NEWPID;
        }
        // Every container gets a mount namespace of its own, made by host
        // root: its mounts are then locked, never left in (or remountable
        // from) its parent's, which the pod's root owns (a debug session
        // entering its parent's mount namespace gets a copy of it).
        plan.clone |= CloneFlags::CLONE_NEWNS;
        if let Some(outermost) = place.sandboxes.first() {
            searchable_ancestors(outermost)?;
        }
        let owner = owner(info, range)?;
        let below_parent = match place.sandboxes {
            [.., parent, own] => own.starts_with(parent),
            _ => false,
        };
        let through_parent = place.nested
            && plan.enter.contains(CloneFlags::CLONE_NEWNS)
            && below_parent
            && (owner.is_none() || owner == place.parent_owner);
        Ok(UserNamespaceControl {
            base: range.base,
            size: range.size,
            join_parent: place.nested,
            owner,
            idmap_sandbox: !through_parent,
        })
    }
}

/// Where a container lies in its pod, for [`Launcher::user_namespace_control`].
pub(super) struct Placement<'a> {
    /// The sandboxes from the outermost down to the container's own.
    pub(super) sandboxes: &'a [PathBuf],
    /// A nested container.
    pub(super) nested: bool,
    /// The ids the parent's binds pass besides root.
    pub(super) parent_owner: Option<BindOwner>,
}

/// The user the command runs as and its on-disk ids ([`BindOwner`]:
/// looked up as the sandbox's owner is, on the host or in the image),
/// unless root; one outside the pod's range is refused here, with its name,
/// rather than by the user switch inside.
fn owner(info: &ContainerLaunchInfo, range: IdRange) -> Result<Option<BindOwner>, LauncherError> {
    let Some(name) = info.user.as_deref() else {
        return Ok(None);
    };
    let (user, from_image) = match info.rootfs.as_deref() {
        Some(rootfs) => (
            command::lookup_user_in_rootfs(Path::new(rootfs), name, &[])?,
            true,
        ),
        None => (command::lookup_user(name, &[])?, false),
    };
    let (uid, gid) = (user.uid.as_raw(), user.gid.as_raw());
    if uid == 0 {
        return Ok(None);
    }
    if uid >= range.size || gid >= range.size {
        return Err(LauncherError::UserNamespaceUser {
            user: name.to_owned(),
            uid,
            gid,
            size: range.size,
        });
    }
    let disk = |id: u32| if from_image { range.base + id } else { id };
    Ok(Some(BindOwner {
        uid,
        gid,
        disk_uid: disk(uid),
        disk_gid: disk(gid),
    }))
}

/// Writes the range checkpoint of a top-level container.
pub(super) fn checkpoint_range(runtime: &Path, range: IdRange) -> Result<(), LauncherError> {
    checkpoint::write_text(
        &runtime.join(USER_NAMESPACE_FILE),
        &range.checkpoint_text(),
        checkpoint::Outlives::HostCrash,
    )?;
    Ok(())
}

/// The checkpoint of the ids a container's binds pass besides root.
pub(super) const IDMAP_OWNER_FILE: &str = "idmap_owner";

/// Writes the owner checkpoint of a container in a pod's user namespace
/// that runs as a user other than root: `uid gid disk_uid disk_gid`.
pub(super) fn checkpoint_owner(runtime: &Path, o: BindOwner) -> Result<(), LauncherError> {
    let text = format!("{} {} {} {}\n", o.uid, o.gid, o.disk_uid, o.disk_gid);
    checkpoint::write_text(
        &runtime.join(IDMAP_OWNER_FILE),
        &text,
        checkpoint::Outlives::HostCrash,
    )?;
    Ok(())
}

/// Reads a container's owner checkpoint (`None`: root, or no user
/// namespace).
pub(super) fn recover_owner(runtime: &Path) -> Result<Option<BindOwner>, LauncherError> {
    let path = runtime.join(IDMAP_OWNER_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", &path)(e)),
    };
    let fields: Vec<&str> = text.strip_suffix('\n').unwrap_or("").split(' ').collect();
    let ids: Vec<u32> = fields.iter().filter_map(|v| v.parse().ok()).collect();
    match (fields.len(), &ids[..]) {
        (4, &[uid, gid, disk_uid, disk_gid]) => Ok(Some(BindOwner {
            uid,
            gid,
            disk_uid,
            disk_gid,
        })),
        _ => Err(crate::isolation::id_map::IdMapError::Checkpoint(path).into()),
    }
}

/// Reads a top-level container's range checkpoint, if it has one.
pub(super) fn recover_range(runtime: &Path) -> Result<Option<IdRange>, LauncherError> {
    let path = runtime.join(USER_NAMESPACE_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(IdRange::parse_checkpoint(&text, &path)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", &path)(e)),
    }
}

/// Refuses a sandbox below a directory others cannot search: the pod's
/// ids are "others" to every host directory above it, and its command (a
/// task's executor reading `MESOS_SANDBOX`, say) could not reach it. Mesos
/// asks the same of the directories above a task user's sandbox.
fn searchable_ancestors(sandbox: &Path) -> Result<(), LauncherError> {
    for dir in sandbox.ancestors().skip(1) {
        let mode = std::fs::metadata(dir)
            .map_err(io("stat", dir))?
            .permissions()
            .mode();
        if mode & 0o001 == 0 {
            return Err(LauncherError::UserNamespaceSandbox {
                dir: dir.to_path_buf(),
                mode: mode & 0o7777,
            });
        }
    }
    Ok(())
}
