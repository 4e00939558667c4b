//! Mounts the supervisor makes in a container's own mount namespace: the
//! isolators' mounts ([`apply`]) and the read-only kernel paths
//! ([`read_only_kernel_paths`]).
//!
//! # Sandbox paths are mounted through descriptors
//!
//! A `SANDBOX_PATH` volume's source lies in the parent's sandbox, which a
//! process of the parent container can change at any time. The isolator
//! checks the path when it prepares; mounting the same *path* later would
//! follow a symbolic link swapped in meanwhile, out of the sandbox. So a
//! bind mount whose source or target lies in a sandbox of the container's
//! tree is resolved again here, below the outermost sandbox, with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`,
//! and mounted from that descriptor (`open_tree(OPEN_TREE_CLONE)` then
//! `move_mount` onto the target's descriptor): the object resolved is the
//! object mounted. A read-only remount of such a target is applied to the
//! same mount through its descriptor (`mount_setattr`), not by path. A
//! file system (`tmpfs`, `ramfs`, …) mounted onto a sandbox path is
//! mounted onto the target's descriptor, through its `/proc/self/fd` link.
//!
//! # Read-only kernel paths
//!
//! Docker's read-only paths: `/proc/sys`, `/proc/sysrq-trigger`,
//! `/proc/irq` and `/proc/bus` are bound onto themselves and made
//! read-only; `/sys` and every mount below it (cgroup hierarchies,
//! securityfs, debugfs, …) become read-only with one recursive
//! `mount_setattr`. Mount flags are per mount: the host's stay writable.
//!
//! `mount_setattr` (Linux ≥ 5.12) is a raw syscall: neither `rustix` nor
//! `nix` wraps it yet.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use rustix::mount::{MoveMountFlags, OpenTreeFlags};

use crate::proto::mesos::slave::ContainerMountInfo;

/// Paths made read-only (besides `/sys`), as Docker's default.
pub const READ_ONLY_PATHS: [&str; 4] =
    ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"];

/// A mount step that failed.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// A syscall on a path failed.
    #[error("{call} {path}: {source}")]
    Syscall {
        /// The syscall.
        call: &'static str,
        /// The path it was applied to.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: Errno,
    },
    /// A path in a sandbox no longer resolves below it without symbolic
    /// links (it was changed since the isolator checked it).
    #[error(
        "{path} does not resolve below {sandbox} without symbolic links or '..' \
         (changed since it was checked?): {source}"
    )]
    Beneath {
        /// The mount source or target.
        path: PathBuf,
        /// The sandbox it must stay in.
        sandbox: PathBuf,
        /// The OS error (ELOOP for a symbolic link, EXDEV for an escape).
        #[source]
        source: Errno,
    },
}

fn at<'a>(call: &'static str, path: &'a Path) -> impl FnOnce(Errno) -> MountError + 'a {
    move |source| MountError::Syscall {
        call,
        path: path.to_path_buf(),
        source,
    }
}

/// The kernel's `struct mount_attr`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(super) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(super) const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// `mount_setattr(dirfd, path, flags, {attr_set})`: sets `attr_set` on the
/// mount at `path` (relative to `dirfd`), on every mount below it with
/// `recursive`.
fn mount_setattr(
    dirfd: BorrowedFd<'_>,
    path: &Path,
    empty_path: bool,
    recursive: bool,
    attr_set: u64,
) -> Result<(), Errno> {
    mount_setattr_with(dirfd, path, empty_path, recursive, attr_set, None)
}

/// `MOUNT_ATTR_IDMAP`: the mount's ids go through a user namespace's map.
pub(super) const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// [`mount_setattr`], with `userns` for [`MOUNT_ATTR_IDMAP`].
pub(super) fn mount_setattr_with(
    dirfd: BorrowedFd<'_>,
    path: &Path,
    empty_path: bool,
    recursive: bool,
    attr_set: u64,
    userns: Option<BorrowedFd<'_>>,
) -> Result<(), Errno> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| Errno::INVAL)?;
    let mut flags = 0u32;
    if empty_path {
        flags |= libc::AT_EMPTY_PATH as u32;
    }
    if recursive {
        flags |= libc::AT_RECURSIVE as u32;
    }
    let attr = MountAttr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.map_or(0, |fd| fd.as_raw_fd() as u64),
    };
    // SAFETY: a valid descriptor, a NUL-terminated path and a fully
    // initialised `mount_attr` of the size passed; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd.as_raw_fd(),
            c_path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        return Err(Errno::from_raw_os_error(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        ));
    }
    Ok(())
}

/// Makes the kernel's knobs read-only in the caller's (the container's own)
/// mount namespace; paths this kernel lacks are skipped.
pub fn read_only_kernel_paths() -> Result<(), MountError> {
    for path in READ_ONLY_PATHS.map(Path::new) {
        match rustix::mount::mount_bind_recursive(path, path) {
            Ok(()) => {}
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(at("bind onto itself", path)(e)),
        }
        mount_setattr(CWD, path, false, true, MOUNT_ATTR_RDONLY)
            .map_err(at("mount_setattr(MOUNT_ATTR_RDONLY)", path))?;
    }
    let sys = Path::new("/sys");
    match mount_setattr(CWD, sys, false, true, MOUNT_ATTR_RDONLY) {
        Ok(()) => Ok(()),
        Err(Errno::NOENT) => Ok(()),
        // Not a mount point on this host: make it one first.
        Err(Errno::INVAL) => {
            rustix::mount::mount_bind_recursive(sys, sys).map_err(at("bind onto itself", sys))?;
            mount_setattr(CWD, sys, false, true, MOUNT_ATTR_RDONLY)
                .map_err(at("mount_setattr(MOUNT_ATTR_RDONLY)", sys))
        }
        Err(e) => Err(at("mount_setattr(MOUNT_ATTR_RDONLY)", sys)(e)),
    }
}

/// Opens `path` as an `O_PATH` descriptor: resolved below the outermost of
/// `sandboxes` that contains it (without symbolic links or `..`), else by
/// path (`None` when no sandbox contains it).
fn open_in_sandbox(path: &Path, sandboxes: &[PathBuf]) -> Result<Option<OwnedFd>, MountError> {
    let Some(sandbox) = sandboxes.iter().find(|s| path.starts_with(s)) else {
        return Ok(None);
    };
    let root = rustix::fs::open(
        sandbox,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(at("open sandbox", sandbox))?;
    let rel = path.strip_prefix(sandbox).unwrap_or(Path::new(""));
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    rustix::fs::openat2(
        &root,
        rel,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map(Some)
    .map_err(|source| MountError::Beneath {
        path: path.to_path_buf(),
        sandbox: sandbox.clone(),
        source,
    })
}

/// A bind's target outside every sandbox, opened from `/` without following
/// a symbolic link on the way: a link (a tenant's, in a directory it can
/// write) would carry the mount onto whatever it names, e.g. over the
/// binaries a root debug session later runs in the container's namespace.
fn open_without_links(path: &Path) -> Result<OwnedFd, MountError> {
    rustix::fs::openat2(
        CWD,
        path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(at("open (no symbolic links on the way)", path))
}

pub(super) fn open_by_path(path: &Path) -> Result<OwnedFd, MountError> {
    rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).map_err(at("open", path))
}

/// The `mount_setattr` attributes of `MS_RDONLY`, `MS_NOSUID`,
/// `MS_NODEV` and `MS_NOEXEC` in `flags`.
fn attributes(flags: nix::mount::MsFlags) -> u64 {
    use nix::mount::MsFlags;
    let mut set = 0;
    for (ms, attr) in [
        (MsFlags::MS_RDONLY, MOUNT_ATTR_RDONLY),
        (MsFlags::MS_NOSUID, MOUNT_ATTR_NOSUID),
        (MsFlags::MS_NODEV, MOUNT_ATTR_NODEV),
        (MsFlags::MS_NOEXEC, MOUNT_ATTR_NOEXEC),
    ] {
        if flags.contains(ms) {
            set |= attr;
        }
    }
    set
}

/// Performs the launch info's mounts in order. Bind mounts from or onto a
/// path in one of `sandboxes` (the container's and its ancestors'
/// sandboxes, outermost first) go through descriptors (see the module
/// documentation); every other mount is made by path, as given.
///
/// With `trees` (a container in the pod's user namespace), a bind of a
/// host directory or file ([`idmapped_source`]) is the idmapped tree the
/// helper made of its source, by index in `mounts`, from the host's view
/// before it entered any namespace of the pod (whose root could otherwise
/// have put another directory at the source's path); one from a sandbox
/// path lies below an idmapped sandbox already (its own, or its parent's).
pub fn apply(
    mounts: &[ContainerMountInfo],
    sandboxes: &[PathBuf],
    trees: Option<&HashMap<usize, OwnedFd>>,
) -> Result<(), MountError> {
    use nix::mount::MsFlags;
    // Targets mounted through descriptors: a later remount of the same
    // target applies to that very mount.
    let mut by_fd: HashMap<&str, OwnedFd> = HashMap::new();
    for (index, m) in mounts.iter().enumerate() {
        let flags = MsFlags::from_bits_retain(libc::c_ulong::from(m.flags.unwrap_or(0)));
        let target = Path::new(&m.target);
        let recursive = flags.contains(MsFlags::MS_REC);
        if flags.contains(MsFlags::MS_REMOUNT | MsFlags::MS_BIND)
            && let Some(tree) = by_fd.get(m.target.as_str())
        {
            mount_setattr(
                tree.as_fd(),
                Path::new(""),
                true,
                recursive,
                attributes(flags),
            )
            .map_err(at("mount_setattr", target))?;
            continue;
        }
        if flags.contains(MsFlags::MS_BIND)
            && !flags.contains(MsFlags::MS_REMOUNT)
            && let Some(source) = m.source.as_deref().map(Path::new)
        {
            let source_fd = open_in_sandbox(source, sandboxes)?;
            let target_fd = open_in_sandbox(target, sandboxes)?;
            let prepared = trees.and_then(|t| t.get(&index));
            if source_fd.is_some() || target_fd.is_some() || prepared.is_some() {
                let target_fd = match target_fd {
                    Some(fd) => fd,
                    None => open_without_links(target)?,
                };
                let tree = match (prepared, source_fd) {
                    (Some(tree), _) => tree.try_clone().map_err(|e| {
                        at("dup", source)(Errno::from_raw_os_error(
                            e.raw_os_error().unwrap_or(libc::EBADF),
                        ))
                    })?,
                    (None, Some(fd)) => clone_tree(&fd, source, recursive)?,
                    (None, None) => clone_tree(&open_by_path(source)?, source, recursive)?,
                };
                rustix::mount::move_mount(
                    &tree,
                    "",
                    &target_fd,
                    "",
                    MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH
                        | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
                )
                .map_err(at("move_mount", target))?;
                // A bind ignores these flags (Mesos' `fs::mount` remounts
                // for them): set them on the new mount itself.
                let set = attributes(flags);
                if set != 0 {
                    mount_setattr(tree.as_fd(), Path::new(""), true, recursive, set)
                        .map_err(at("mount_setattr", target))?;
                }
                by_fd.insert(m.target.as_str(), tree);
                continue;
            }
        }
        // A file system mounted onto a sandbox path: onto the descriptor
        // resolved below the sandbox, through its `/proc/self/fd` link
        // (the kernel follows it to that very object), not by path.
        let by_descriptor = if flags.intersects(NOT_BY_DESCRIPTOR) {
            None
        } else {
            open_in_sandbox(target, sandboxes)?
        };
        if by_descriptor.is_some() {
            proc_is_procfs()?;
        }
        let fd_path = by_descriptor
            .as_ref()
            .map(|fd| PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())));
        nix::mount::mount(
            m.source.as_deref(),
            fd_path.as_deref().unwrap_or(target),
            m.r#type.as_deref(),
            flags,
            m.options.as_deref(),
        )
        .map_err(|e| at("mount", target)(Errno::from_raw_os_error(e as i32)))?;
    }
    Ok(())
}

fn clone_tree(source_fd: &OwnedFd, source: &Path, recursive: bool) -> Result<OwnedFd, MountError> {
    let mut tree_flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC
        | OpenTreeFlags::AT_EMPTY_PATH;
    if recursive {
        tree_flags |= OpenTreeFlags::AT_RECURSIVE;
    }
    rustix::mount::open_tree(source_fd, "", tree_flags).map_err(at("open_tree", source))
}

/// Whether a container in the pod's user namespace gets `m` through an
/// idmapped mount: a bind (not a remount) of a host directory or file
/// outside every sandbox. Device nodes (the masks' `/dev/null`) are bound
/// as they are: their owner grants nothing.
pub fn idmapped_source(m: &ContainerMountInfo, sandboxes: &[PathBuf]) -> bool {
    use nix::mount::MsFlags;
    use std::os::unix::fs::FileTypeExt;
    let flags = MsFlags::from_bits_retain(libc::c_ulong::from(m.flags.unwrap_or(0)));
    let Some(source) = m.source.as_deref().map(Path::new) else {
        return false;
    };
    flags.contains(MsFlags::MS_BIND)
        && !flags.contains(MsFlags::MS_REMOUNT)
        && !sandboxes.iter().any(|s| source.starts_with(s))
        && std::fs::metadata(source)
            .map(|md| !md.file_type().is_char_device() && !md.file_type().is_block_device())
            .unwrap_or(true)
}

/// Refuses a `/proc/self/fd` that is not procfs's (something mounted over
/// `/proc` would make the link lead elsewhere).
fn proc_is_procfs() -> Result<(), MountError> {
    let path = Path::new("/proc/self/fd");
    let fs = rustix::fs::statfs(path).map_err(at("statfs", path))?;
    // PROC_SUPER_MAGIC
    if fs.f_type as i64 != 0x9fa0 {
        return Err(at("statfs (not procfs)", path)(Errno::NOTSUP));
    }
    Ok(())
}

/// Flags of mounts that do not create a file system at their target
/// (binds, remounts, moves, propagation changes): never mounted onto a
/// `/proc/self/fd` link.
const NOT_BY_DESCRIPTOR: nix::mount::MsFlags = nix::mount::MsFlags::MS_BIND
    .union(nix::mount::MsFlags::MS_REMOUNT)
    .union(nix::mount::MsFlags::MS_MOVE)
    .union(nix::mount::MsFlags::MS_SHARED)
    .union(nix::mount::MsFlags::MS_SLAVE)
    .union(nix::mount::MsFlags::MS_PRIVATE)
    .union(nix::mount::MsFlags::MS_UNBINDABLE);

/// Whether `apply` makes `m` through a descriptor resolved below one of
/// `sandboxes`, given the targets already bound that way before it
/// (`bound`): a bind from or onto a sandbox path, a remount of such a
/// bind's target, or a file system (not from a sandbox path) mounted onto
/// a sandbox path. Everything else it makes by path.
pub fn through_descriptors(m: &ContainerMountInfo, sandboxes: &[PathBuf], bound: &[&str]) -> bool {
    use nix::mount::MsFlags;
    let flags = MsFlags::from_bits_retain(libc::c_ulong::from(m.flags.unwrap_or(0)));
    let inside = |p: &str| sandboxes.iter().any(|s| Path::new(p).starts_with(s));
    let target_inside = inside(&m.target);
    let source_inside = m.source.as_deref().is_some_and(inside);
    if flags.contains(MsFlags::MS_REMOUNT) {
        flags.contains(MsFlags::MS_BIND) && bound.contains(&m.target.as_str())
    } else if flags.contains(MsFlags::MS_BIND) {
        m.source.is_some() && (target_inside || source_inside)
    } else {
        !flags.intersects(NOT_BY_DESCRIPTOR) && target_inside && !source_inside
    }
}
