//! Entering a container's own root file system (`ContainerLaunchInfo.rootfs`,
//! an image's unpacked root prepared by the host), as Mesos' launch helper
//! does after the isolators' mounts: the rootfs becomes a mount point, the
//! sandbox is bound at [`SANDBOX_IN_ROOTFS`], a fresh `/proc`, a read-only
//! `/sys`, a minimal `/dev` (device nodes, `pts`, `shm`), then `pivot_root`
//! and the old root is detached, so nothing of the host's tree stays
//! reachable.
//!
//! Runs in the supervisor, inside the container's new mount namespace (made
//! a slave of its origin, so none of these mounts propagates back).
//! Hand-rolled over `nix`: a dozen mount calls in a fixed order; youki's
//! rootfs code takes an OCI spec as input, which we do not have.

use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sys::stat::{Mode, SFlag, makedev, mknod};

/// Where the sandbox appears inside a container with its own rootfs (Mesos'
/// `MESOS_SANDBOX` for image containers).
pub const SANDBOX_IN_ROOTFS: &str = "/mnt/mesos/sandbox";

/// Character devices of the container's `/dev`: name, major, minor.
const DEVICES: [(&str, u64, u64); 6] = [
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
];

/// Symbolic links of the container's `/dev`: name, target.
const LINKS: [(&str, &str); 5] = [
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("ptmx", "pts/ptmx"),
];

/// A rootfs step that failed: the call and the path.
#[derive(Debug, thiserror::Error)]
#[error("rootfs: {call} {path}: {source}")]
pub struct RootfsError {
    /// The syscall or operation.
    pub call: &'static str,
    /// The path it was applied to.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: nix::Error,
}

fn at<'a>(call: &'static str, path: &'a Path) -> impl FnOnce(nix::Error) -> RootfsError + 'a {
    move |source| RootfsError {
        call,
        path: path.to_path_buf(),
        source,
    }
}

/// For `std::fs` calls: the OS error of an `io::Error`.
fn io_at<'a>(
    call: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> RootfsError + 'a {
    move |e| at(call, path)(nix::Error::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
}

/// `<rootfs>/<rel>` as a directory, created where missing. Every component
/// is checked with `lstat` and a symbolic link is refused: resolved from the
/// host's root, an image's `proc -> /` or `mnt -> /etc` would put our mounts
/// or new directories outside the image.
fn dir_in(rootfs: &Path, rel: &str) -> Result<PathBuf, RootfsError> {
    let mut path = rootfs.to_path_buf();
    for component in rel.split('/').filter(|c| !c.is_empty()) {
        path.push(component);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(RootfsError {
                    call: "use as a directory (a symbolic link or file in the image)",
                    path,
                    source: nix::Error::ENOTDIR,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&path).map_err(io_at("mkdir", &path))?;
            }
            Err(e) => return Err(io_at("lstat", &path)(e)),
        }
    }
    Ok(path)
}

fn mount_fs(
    fstype: &'static str,
    under: &Path,
    rel: &str,
    flags: MsFlags,
    data: Option<&str>,
) -> Result<PathBuf, RootfsError> {
    let target = dir_in(under, rel)?;
    mount(Some(fstype), &target, Some(fstype), flags, data).map_err(at("mount", &target))?;
    Ok(target)
}

/// Creates the directories [`enter`] mounts on, where missing: done as
/// host root before an image is idmapped for a pod's user namespace, where
/// host root's new directories would have no owner.
pub fn make_mount_points(rootfs: &Path) -> Result<(), RootfsError> {
    for rel in [SANDBOX_IN_ROOTFS, "proc", "sys", "dev"] {
        dir_in(rootfs, rel)?;
    }
    Ok(())
}

/// Makes `rootfs` the root of the calling process' mount namespace, with the
/// sandbox at [`SANDBOX_IN_ROOTFS`]; the working directory is `/` after.
///
/// `expect`: the sandbox's device and inode as the host prepared it; the
/// sandbox is bound by path (its parents belong to tenants), so what got
/// mounted is checked against them, and another directory is refused.
pub fn enter(rootfs: &Path, sandbox: &Path, expect: Option<(u64, u64)>) -> Result<(), RootfsError> {
    let bind = MsFlags::MS_BIND | MsFlags::MS_REC;
    // pivot_root needs the new root to be a mount point.
    mount(Some(rootfs), rootfs, None::<&str>, bind, None::<&str>).map_err(at("bind", rootfs))?;
    let sandbox_target = dir_in(rootfs, SANDBOX_IN_ROOTFS)?;
    mount(
        Some(sandbox),
        &sandbox_target,
        None::<&str>,
        bind,
        None::<&str>,
    )
    .map_err(at("bind", &sandbox_target))?;
    if let Some(expect) = expect {
        let stat = nix::sys::stat::stat(&sandbox_target).map_err(at("stat", &sandbox_target))?;
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        let found = (stat.st_dev as u64, stat.st_ino as u64);
        if found != expect {
            return Err(RootfsError {
                call: "bind (the sandbox is not the directory the host prepared)",
                path: sandbox.to_path_buf(),
                source: nix::Error::EXDEV,
            });
        }
    }

    let hardened = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount_fs("proc", rootfs, "proc", hardened, None)?;
    mount_fs("sysfs", rootfs, "sys", hardened | MsFlags::MS_RDONLY, None)?;
    populate_dev(rootfs)?;

    pivot_into(rootfs)
}

/// Makes `rootfs` (a mount point) the root of the calling process' mount
/// namespace, which must be a slave of its origin, and detaches the old
/// root, so nothing of the host's tree stays reachable; the working
/// directory is `/` after.
pub fn pivot_into(rootfs: &Path) -> Result<(), RootfsError> {
    nix::unistd::chdir(rootfs).map_err(at("chdir", rootfs))?;
    // With new and old root the same directory, the old root ends up
    // stacked on top of the new one; detaching it leaves just the rootfs.
    nix::unistd::pivot_root(".", ".").map_err(at("pivot_root", rootfs))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(at("umount2", Path::new("old root")))?;
    nix::unistd::chdir("/").map_err(at("chdir", Path::new("/")))?;
    Ok(())
}

/// A tmpfs `/dev` with the usual character devices, links, `pts` and `shm`
/// (inside the fresh tmpfs, so nothing of the image is followed there).
fn populate_dev(rootfs: &Path) -> Result<(), RootfsError> {
    let dev = mount_fs(
        "tmpfs",
        rootfs,
        "dev",
        MsFlags::MS_NOSUID | MsFlags::MS_STRICTATIME,
        Some("mode=755,size=65536k"),
    )?;
    for (name, major, minor) in DEVICES {
        let path = dev.join(name);
        mknod(
            &path,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            makedev(major, minor),
        )
        .map_err(at("mknod", &path))?;
        // mknod applies the umask; the devices are for everyone.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .map_err(io_at("chmod", &path))?;
    }
    for (name, target) in LINKS {
        let path = dev.join(name);
        std::os::unix::fs::symlink(target, &path).map_err(io_at("symlink", &path))?;
    }
    mount_fs(
        "devpts",
        &dev,
        "pts",
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )?;
    mount_fs(
        "tmpfs",
        &dev,
        "shm",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("mode=1777,size=65536k"),
    )?;
    Ok(())
}
