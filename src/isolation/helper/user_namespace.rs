//! A container in its pod's user namespace: root inside, an unused host
//! range outside (see [`crate::isolation::id_map`] for the ranges and maps).
//!
//! Order, and why:
//!
//! 1. The helper, still host root, gets hold of two user namespaces before
//!    anything forks: the pod's (created for a top-level container, whose
//!    maps only a process outside it may write, so a paused child is made
//!    in it; a nested container takes its parent's from
//!    `/proc/<parent>/ns/user`) and, when the container binds anything
//!    from the host, the idmap's (same way, with [`IdRange::idmap`]).
//! 2. The supervisor does all of today's setup as host root in the
//!    container's own mount namespace (owned by the host's user namespace):
//!    the sandbox bound over itself through an idmapped mount, the volumes,
//!    `/proc`, the read-only paths and masks, the rootfs.
//! 3. It enters the pod's user namespace and unshares the mount namespace
//!    once more: the new one is owned by the pod's user namespace, so every
//!    mount made before is locked (`MNT_LOCKED`) and root inside cannot
//!    unmount a mask or a read-only path to see what is below. The other
//!    namespaces stay owned by the host's: root inside cannot rename the
//!    host, reconfigure the pod's network or mount a procfs.
//! 4. It checkpoints and reports its pid (it is still kuid 0, so the root
//!    owned runtime directory is its own), then becomes the pod's root
//!    (`setresuid(0)` inside: host uid `base`), which makes it
//!    non-dumpable: root inside cannot ptrace it or reach its descriptors.
//!
//! `mount_setattr(MOUNT_ATTR_IDMAP)` fails with `EINVAL` on a file system
//! that cannot be idmapped (NFS, tmpfs before Linux 6.3, …); the launch then
//! fails with that said, and nothing is ever mounted unmapped.
//!
//! [`IdRange::idmap`]: crate::isolation::id_map::IdRange::idmap

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, openat};
use nix::sched::CloneFlags;
use nix::sys::stat::Mode;
use rustix::fs::{CWD, OFlags, ResolveFlags};
use rustix::io::Errno;
use rustix::mount::{MoveMountFlags, OpenTreeFlags};

use super::mounts::{self, MOUNT_ATTR_IDMAP, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID};
use super::vfork;

/// A user-namespace step that failed.
#[derive(Debug, thiserror::Error)]
pub enum UserNamespaceError {
    /// A syscall failed.
    #[error("user namespace: {call}: {source}")]
    Syscall {
        /// The syscall and its argument.
        call: String,
        /// The OS error.
        #[source]
        source: nix::Error,
    },
    /// The parent container runs in the host's user namespace.
    #[error(
        "user namespace: the parent container's supervisor (pid {0}) is not in a user \
         namespace of its own; a nested container never runs in the host's"
    )]
    ParentNotMapped(i32),
    /// The file system cannot be idmapped.
    #[error(
        "user namespace: {path} is on a file system without idmapped mounts \
         (mount_setattr MOUNT_ATTR_IDMAP: {source}); a container in a user namespace \
         cannot bind it (it is never bound unmapped)"
    )]
    NoIdmap {
        /// The path.
        path: PathBuf,
        /// The OS error (EINVAL: not supported).
        #[source]
        source: Errno,
    },
    /// Another mount step of an idmapped bind failed.
    #[error("user namespace: {call} {path}: {source}")]
    Mount {
        /// The syscall.
        call: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: Errno,
    },
}

fn sys(call: impl Into<String>) -> impl FnOnce(nix::Error) -> UserNamespaceError {
    let call = call.into();
    move |source| UserNamespaceError::Syscall { call, source }
}

fn mount_err<'a>(
    call: &'static str,
    path: &'a Path,
) -> impl FnOnce(Errno) -> UserNamespaceError + 'a {
    move |source| UserNamespaceError::Mount {
        call,
        path: path.to_path_buf(),
        source,
    }
}

/// Opens `<proc_dir>/<rel>` (the host's procfs) with `flags`, close-on-exec.
fn open_proc(
    proc_dir: BorrowedFd<'_>,
    rel: &str,
    flags: OFlag,
) -> Result<OwnedFd, UserNamespaceError> {
    openat(proc_dir, rel, flags | OFlag::O_CLOEXEC, Mode::empty())
        .map_err(sys(format!("open /proc/{rel}")))
}

/// Creates a user namespace with `uid_map` and `gid_map`; returns its
/// descriptor. `proc_dir` is the host's procfs.
pub fn create(
    proc_dir: BorrowedFd<'_>,
    uid_map: &str,
    gid_map: &str,
) -> Result<OwnedFd, UserNamespaceError> {
    // SAFETY: the helper is single-threaded here.
    let result = unsafe {
        vfork::with_paused_child(CloneFlags::CLONE_NEWUSER, |pid| {
            for (file, map) in [("uid_map", uid_map), ("gid_map", gid_map)] {
                let path = format!("{pid}/{file}");
                let fd = open_proc(proc_dir, &path, OFlag::O_WRONLY)?;
                nix::unistd::write(&fd, map.as_bytes())
                    .map_err(sys(format!("write /proc/{path}")))?;
            }
            open_proc(proc_dir, &format!("{pid}/ns/user"), OFlag::O_RDONLY)
        })
    };
    result.map_err(sys("clone(CLONE_NEWUSER)"))?
}

/// The user namespace of the parent container's supervisor `pid` (the
/// caller checked it is the very process); refused if it is the helper's
/// own, the host's.
pub fn of_parent(proc_dir: BorrowedFd<'_>, pid: i32) -> Result<OwnedFd, UserNamespaceError> {
    let fd = open_proc(proc_dir, &format!("{pid}/ns/user"), OFlag::O_RDONLY)?;
    let theirs = nix::sys::stat::fstat(&fd).map_err(sys("fstat parent's user namespace"))?;
    // Through the host's procfs: the helper may be in the parent's mount
    // namespace by now, whose `/proc` does not show it.
    let ours = nix::sys::stat::fstatat(
        proc_dir,
        "thread-self/ns/user",
        nix::fcntl::AtFlags::empty(),
    )
    .map_err(sys("stat /proc/thread-self/ns/user"))?;
    if (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino) {
        return Err(UserNamespaceError::ParentNotMapped(pid));
    }
    Ok(fd)
}

/// How an idmapped tree is made.
#[derive(Debug, Clone, Copy)]
pub struct TreeOptions {
    /// With the mounts below the source (`MS_REC`).
    pub recursive: bool,
    /// `nosuid` too (always `nodev`): the binds of host files; not an
    /// image, whose set-user-ID programs work inside as in any container.
    pub nosuid: bool,
}

/// A detached copy of the tree at `source`, idmapped through `idmap`,
/// `nodev` (and `nosuid` as `options` say).
pub fn idmapped_tree(
    source: BorrowedFd<'_>,
    path: &Path,
    idmap: BorrowedFd<'_>,
    options: TreeOptions,
) -> Result<OwnedFd, UserNamespaceError> {
    let mut flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC
        | OpenTreeFlags::AT_EMPTY_PATH;
    if options.recursive {
        flags |= OpenTreeFlags::AT_RECURSIVE;
    }
    let tree = rustix::mount::open_tree(source, "", flags).map_err(mount_err("open_tree", path))?;
    let nosuid = if options.nosuid { MOUNT_ATTR_NOSUID } else { 0 };
    mounts::mount_setattr_with(
        tree.as_fd(),
        Path::new(""),
        true,
        options.recursive,
        MOUNT_ATTR_IDMAP | MOUNT_ATTR_NODEV | nosuid,
        Some(idmap),
    )
    .map_err(|source| match source {
        Errno::INVAL | Errno::OPNOTSUPP => UserNamespaceError::NoIdmap {
            path: path.to_path_buf(),
            source,
        },
        _ => UserNamespaceError::Mount {
            call: "mount_setattr(MOUNT_ATTR_IDMAP)",
            path: path.to_path_buf(),
            source,
        },
    })?;
    Ok(tree)
}

/// Binds the directory `path` over itself through an idmapped mount (in
/// the caller's own mount namespace, an image's root: the pod's map,
/// set-user-ID programs working). Resolved without symbolic links.
pub fn idmapped_bind(path: &Path, idmap: BorrowedFd<'_>) -> Result<(), UserNamespaceError> {
    let dir = open_dir(path)?;
    let tree = idmapped_tree(
        dir.as_fd(),
        path,
        idmap,
        TreeOptions {
            recursive: true,
            nosuid: false,
        },
    )?;
    attach(&tree, &dir, path)
}

fn open_dir(path: &Path) -> Result<OwnedFd, UserNamespaceError> {
    rustix::fs::openat2(
        CWD,
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(mount_err("open (no symbolic links on the way)", path))
}

/// Mounts the sandbox's idmapped `tree` (made by the helper from the
/// host's view, before it entered any namespace: a nested sandbox seen
/// through its parent's idmapped sandbox could not be idmapped again) over
/// the sandbox `path` in the caller's mount namespace, resolved without
/// symbolic links and checked to be the directory the host prepared
/// (`expect`: device and inode).
pub fn attach_sandbox(
    tree: &OwnedFd,
    path: &Path,
    expect: Option<(u64, u64)>,
) -> Result<(), UserNamespaceError> {
    let dir = open_dir(path)?;
    if let Some(expect) = expect {
        let stat = rustix::fs::fstat(&dir).map_err(mount_err("stat", path))?;
        if (stat.st_dev, stat.st_ino) != expect {
            return Err(UserNamespaceError::Mount {
                call: "attach (not the sandbox the host prepared)",
                path: path.to_path_buf(),
                source: Errno::XDEV,
            });
        }
    }
    attach(tree, &dir, path)
}

fn attach(tree: &OwnedFd, dir: &OwnedFd, path: &Path) -> Result<(), UserNamespaceError> {
    rustix::mount::move_mount(
        tree,
        "",
        dir,
        "",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
    )
    .map_err(mount_err("move_mount", path))
}

/// Raises the hard limits among `rlimits` that are above the current ones
/// (soft limits untouched), while the caller is still host root: inside
/// the user namespace the command could only lower them.
pub fn raise_hard_limits(
    rlimits: &[(nix::sys::resource::Resource, u64, u64)],
) -> Result<(), UserNamespaceError> {
    for (res, _, hard) in rlimits {
        let (soft, current) =
            nix::sys::resource::getrlimit(*res).map_err(sys(format!("getrlimit({res:?})")))?;
        if *hard > current {
            nix::sys::resource::setrlimit(*res, soft, *hard)
                .map_err(sys(format!("setrlimit({res:?})")))?;
        }
    }
    Ok(())
}

/// Enters the pod's user namespace and a new mount namespace owned by it,
/// which locks every mount the caller made before. Non-dumpable first:
/// until it becomes the pod's root the caller is still host uid 0, and in
/// the pod's namespace its root's `CAP_SYS_PTRACE` would otherwise reach
/// it (a nested container's supervisor, while its pod runs), with the
/// host's `/proc` and runtime directory it still holds.
pub fn enter(userns: BorrowedFd<'_>) -> Result<(), UserNamespaceError> {
    nix::sys::prctl::set_dumpable(false).map_err(sys("prctl(PR_SET_DUMPABLE, 0)"))?;
    nix::sched::setns(userns, CloneFlags::CLONE_NEWUSER).map_err(sys("setns(CLONE_NEWUSER)"))?;
    nix::sched::unshare(CloneFlags::CLONE_NEWNS).map_err(sys("unshare(CLONE_NEWNS)"))
}

/// Becomes root of the user namespace entered (host id `base`): no
/// supplementary groups, gid and uid 0 inside. The uid change makes the
/// process non-dumpable (said again explicitly).
pub fn become_root() -> Result<(), UserNamespaceError> {
    nix::unistd::setgroups(&[]).map_err(sys("setgroups([])"))?;
    let root_gid = nix::unistd::Gid::from_raw(0);
    nix::unistd::setresgid(root_gid, root_gid, root_gid).map_err(sys("setresgid(0)"))?;
    let root = nix::unistd::Uid::from_raw(0);
    nix::unistd::setresuid(root, root, root).map_err(sys("setresuid(0)"))?;
    nix::sys::prctl::set_dumpable(false).map_err(sys("prctl(PR_SET_DUMPABLE, 0)"))
}
