//! What a launch in the pod's user namespace holds (see
//! [`super::user_namespace`]): the descriptors the helper makes as host
//! root before it enters any namespace of the pod, and the parent-death
//! signal of the processes that set the container up.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use super::mounts;
use super::user_namespace::{TreeOptions, UserNamespaceError, create, idmapped_tree};
use crate::isolation::channel::Control;
use crate::proto::mesos::slave::ContainerLaunchInfo;

/// Descriptors of the user namespaces of a launch (see
/// [`super::user_namespace`]): the pod's (a nested container's once its parent
/// is checked), the idmap's, and the sandbox's idmapped tree.
pub(super) struct UserFds {
    pub(super) userns: Option<OwnedFd>,
    sandbox_tree: Option<OwnedFd>,
    bind_trees: HashMap<usize, OwnedFd>,
}

/// [`UserFds`] with the pod's namespace known.
pub(super) struct UserFdsReady {
    pub(super) userns: OwnedFd,
    pub(super) sandbox_tree: Option<OwnedFd>,
    /// The idmapped trees of host binds, by index in the launch info's
    /// mounts ([`mounts::apply`]).
    pub(super) bind_trees: HashMap<usize, OwnedFd>,
}

impl UserFds {
    pub(super) fn complete(self) -> Result<UserFdsReady, UserNamespaceError> {
        Ok(UserFdsReady {
            userns: self.userns.ok_or(UserNamespaceError::Syscall {
                call: "user namespace of the parent container".into(),
                source: nix::Error::ENOENT,
            })?,
            sandbox_tree: self.sandbox_tree,
            bind_trees: self.bind_trees,
        })
    }
}

/// Creates, as host root in the host's namespaces and before anything
/// forks, what a launch in the pod's user namespace needs: the pod's
/// namespace (a top-level container; a nested one enters its parent's,
/// opened once the parent is checked), the idmap's for the container's
/// user, and the sandbox's idmapped tree from `sandbox` (the directory
/// checked to be the one the host prepared).
pub(super) fn created_user_namespaces(
    control: &Control,
    info: &ContainerLaunchInfo,
    proc_dir: &OwnedFd,
    sandbox: &OwnedFd,
) -> Result<Option<UserFds>, UserNamespaceError> {
    let Some(u) = control.user_namespace else {
        return Ok(None);
    };
    let range = u.range();
    let userns = if u.join_parent {
        None
    } else {
        let map = range.namespace_map();
        Some(create(proc_dir.as_fd(), &map, &map)?)
    };
    // The idmap's namespace only when something is bound through it (a
    // paused child is the dearest step of a nested launch).
    let host_binds: Vec<(usize, &str, bool)> = info
        .mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| mounts::idmapped_source(m, &control.sandboxes))
        .filter_map(|(i, m)| {
            let recursive = m.flags.unwrap_or(0) & libc::MS_REC as u32 != 0;
            Some((i, m.source.as_deref()?, recursive))
        })
        .collect();
    if !u.idmap_sandbox && host_binds.is_empty() {
        return Ok(Some(UserFds {
            userns,
            sandbox_tree: None,
            bind_trees: HashMap::new(),
        }));
    }
    let (uid_map, gid_map) = range.idmap(u.owner);
    let idmap = create(proc_dir.as_fd(), &uid_map, &gid_map)?;
    let sandbox_tree = u
        .idmap_sandbox
        .then(|| {
            idmapped_tree(
                sandbox.as_fd(),
                &control.sandbox,
                idmap.as_fd(),
                TreeOptions {
                    recursive: true,
                    nosuid: true,
                },
            )
        })
        .transpose()?;
    let mut bind_trees = HashMap::new();
    for (index, source, recursive) in host_binds {
        let path = Path::new(source);
        let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).map_err(
            |source| UserNamespaceError::Mount {
                call: "open",
                path: path.to_path_buf(),
                source,
            },
        )?;
        let options = TreeOptions {
            recursive,
            nosuid: true,
        };
        bind_trees.insert(
            index,
            idmapped_tree(fd.as_fd(), path, idmap.as_fd(), options)?,
        );
    }
    Ok(Some(UserFds {
        userns,
        sandbox_tree,
        bind_trees,
    }))
}

/// In the pod's user namespace the setup runs before the report, so a
/// launch the host gives up on (it kills the helper) may still be setting
/// up: the intermediate and the supervisor then die with the helper, and
/// nothing runs in the range the host hands out again. The kernel clears
/// the signal when the supervisor becomes the pod's root, after it
/// reported.
pub(super) fn die_with_parent(in_user_namespace: bool) -> Result<(), UserNamespaceError> {
    if in_user_namespace {
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(|source| {
            UserNamespaceError::Syscall {
                call: "prctl(PR_SET_PDEATHSIG)".into(),
                source,
            }
        })?;
    }
    Ok(())
}
