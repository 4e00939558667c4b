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
//!    (`mkdir -p` as root, then `chdir`), inside the image now;
//! 5. applies the defences and `execve`s the command, found on the
//!    container's `PATH` inside the image.
//!
//! What Mesos' helper still does itself, before the stage: its
//! `filesystem/linux` mounts into the rootfs (the rootfs bound onto itself,
//! which `pivot_root` needs, `/proc`, `/sys`, `/dev`, the devices), the
//! masked paths, rlimits. It makes those by path, as root; the wrapper
//! refuses a launch where a tenant could have steered their targets (a
//! symbolic link on the way, or a directory others may write:
//! [`super::launch_mounts::target_is_fixed`]).
//!
//! A debug session (`LAUNCH_NESTED_CONTAINER_SESSION`) into a container
//! with its own image is refused by the wrapper: Mesos' helper joins that
//! container's mount namespace, whose root is the image, and the stage is
//! not there.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::mount::MsFlags;

use super::launch_mounts::own_mnt_ns;
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
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_SLAVE | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("mount --make-rslave /: {e}"))?;
    pivot_into(rootfs).map_err(|e| e.to_string())?;
    if let Some(dir) = workdir.filter(|d| !d.is_empty()) {
        let dir = Path::new(std::ffi::OsStr::from_bytes(dir));
        // As Mesos' helper: made as root if the image lacks it.
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("mkdir {} in the rootfs: {e}", dir.display()))?;
        nix::unistd::chdir(dir)
            .map_err(|e| format!("chdir {} in the rootfs: {e}", dir.display()))?;
    }
    Ok(())
}
