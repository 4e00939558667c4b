//! A container with its own image under Mesos' launcher: the stage, not
//! Mesos' helper, enters the image.
//!
//! # Why
//!
//! Mesos' helper `pivot_root`s into the container's `rootfs` and only then
//! `execve`s the container's command by path. With the stage as that
//! command, the path would resolve in the image, a tree the tenant wrote:
//! Mesos' helper would run the tenant's file (or, bound there, a stage whose
//! dynamic loader is the image's) as root with every capability. So the
//! wrapper ([`super::containerizer`]) takes `rootfs` and
//! `working_directory` out of the launch info, once the sealed plan says
//! that very rootfs is the container's, and Mesos' helper runs the stage on
//! the host like any other container's. The stage then:
//!
//! 1. makes the mounts the wrapper took from Mesos' helper (the sandbox's
//!    bind into the image, `SANDBOX_PATH` volumes, and any mount below
//!    those), through descriptors resolved below the sandboxes and the
//!    rootfs without symbolic links ([`super::launch_mounts`]): an image's
//!    `mnt -> /` can never carry a mount out of the image;
//! 2. checks its own identity (still on the host's tree);
//! 3. enters the rootfs ([`enter`]): in the container's own mount namespace
//!    only, made a recursive slave, `pivot_root`, the old root detached;
//! 4. creates and enters the working directory as Mesos' helper does
//!    (`mkdir -p` as root, then `chdir`), resolved inside the image
//!    without magic links;
//! 5. applies the defences and `execve`s the command, found on the
//!    container's `PATH` inside the image.
//!
//! What Mesos' helper still does itself, before the stage: its
//! `filesystem/linux` mounts into the rootfs (the rootfs bound onto itself,
//! which `pivot_root` needs, `/proc`, `/sys`, `/dev`, the devices), the
//! masked paths, rlimits. It makes those by path, as root; the wrapper
//! refuses a launch where a tenant could have steered their targets (a
//! symbolic link on the way, or a directory others may write:
//! [`super::left_to_mesos::target_is_fixed`]).
//!
//! A debug session (`LAUNCH_NESTED_CONTAINER_SESSION`) into a container
//! with its own image is refused by the wrapper: Mesos' helper joins that
//! container's mount namespace, whose root is the image, and the stage is
//! not there.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::launch_mounts::{make_rslave, own_mnt_ns};
use crate::isolation::helper::rootfs::pivot_into;

/// Enters `rootfs` and then `workdir` (`/` without one); never in the
/// agent's mount namespace (`agent_mnt_ns`), whose root it would change.
pub fn enter(rootfs: &Path, workdir: Option<&[u8]>, agent_mnt_ns: u64) -> Result<(), String> {
    if own_mnt_ns()? == agent_mnt_ns {
        return Err(format!(
            "the container has its own rootfs '{}' but this process is in the agent's mount \
             namespace: refusing to pivot the agent's root",
            rootfs.display()
        ));
    }
    make_rslave()?;
    pivot_into(rootfs).map_err(|e| e.to_string())?;
    if let Some(dir) = workdir.filter(|d| !d.is_empty()) {
        enter_workdir(Path::new(std::ffi::OsStr::from_bytes(dir)))?;
    }
    Ok(())
}

/// Creates (as Mesos' helper does, as root, mode 0755) and enters `dir`,
/// the image's working directory, resolved inside the image: every prefix
/// from the root with `RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS`, so neither
/// an image's link nor `/proc/<pid>/root` (a process outside the image,
/// visible without a pid namespace of its own) leads out of it.
fn enter_workdir(dir: &Path) -> Result<(), String> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use std::path::Component;
    let at = |what: &str, e: rustix::io::Errno| {
        format!(
            "{what} working directory {} in the rootfs: {e}",
            dir.display()
        )
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
    let root = rustix::fs::open("/", flags, Mode::empty()).map_err(|e| at("open / for the", e))?;
    let mut here = rustix::fs::openat2(&root, ".", flags, Mode::empty(), resolve)
        .map_err(|e| at("open / for the", e))?;
    let mut prefix = std::path::PathBuf::new();
    for part in dir.components() {
        let Component::Normal(name) = part else {
            if part == Component::ParentDir {
                return Err(format!("the working directory {} has '..'", dir.display()));
            }
            continue;
        };
        prefix.push(name);
        here = match rustix::fs::openat2(&root, &prefix, flags, Mode::empty(), resolve) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => {
                match rustix::fs::mkdirat(&here, name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(at("mkdir", e)),
                }
                rustix::fs::openat2(&root, &prefix, flags, Mode::empty(), resolve)
                    .map_err(|e| at("open", e))?
            }
            Err(e) => return Err(at("open", e)),
        };
    }
    rustix::process::fchdir(&here).map_err(|e| at("enter", e))
}
