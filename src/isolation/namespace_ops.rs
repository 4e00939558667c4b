//! Which namespaces a container enters and creates, and the syscalls that do it.
//!
//! Mesos' order: first `setns` into the parent container's namespaces
//! (`enter_namespaces`), then `unshare` the container's own
//! (`clone_namespaces`). A new pid namespace only applies to children, so the
//! helper forks after `unshare`: the supervisor becomes pid 1 of it.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;

use nix::fcntl::{OFlag, openat};
use nix::sched::{CloneFlags, setns, unshare};
use nix::sys::stat::Mode;

use crate::proto::mesos::ContainerInfo;
use crate::proto::mesos::slave::ContainerLaunchInfo;

/// A namespace step that failed; names the syscall and the path.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    /// A flag that is not one `CLONE_NEW*` this launcher handles.
    #[error(
        "namespace flag {0:#x} is not supported (expected CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID or CLONE_NEWNS)"
    )]
    UnknownFlag(i32),
    /// `enter_namespaces` on a top-level container (it has nothing to enter).
    #[error("a top-level container cannot enter namespaces")]
    EnterWithoutParent,
    /// The posix launcher was asked for namespaces.
    #[error("the posix launcher does not support entering or cloning namespaces")]
    Posix,
    /// A hostname without a new UTS namespace would rename the host.
    #[error("a hostname needs a new UTS namespace")]
    HostnameWithoutUts,
    /// A top-level container asked for the agent's pid namespace
    /// (`LinuxInfo.share_pid_namespace`) and the operator does not allow it.
    #[error(
        "Sharing agent pid namespace with top-level container is not allowed \
         (the launcher's allow_sharing_agent_pid_namespace is off)"
    )]
    SharingAgentPidNamespace,
    /// A nested container would end up in the agent's pid namespace: its
    /// parent runs in it (no pid namespace of its own) and the child shares
    /// its parent's (`LinuxInfo.share_pid_namespace`, a debug container) or
    /// creates none; its fresh `/proc` would list every host process.
    #[error(
        "the nested container would join the agent's pid namespace (its parent has no pid \
         namespace of its own); refused unless the launcher's \
         allow_sharing_agent_pid_namespace is on"
    )]
    JoiningAgentPidNamespace,
    /// The pid namespace of a process could not be compared with ours.
    #[error("cannot compare the pid namespace of process {pid} with the agent's: {source}")]
    PidNamespace {
        /// The process.
        pid: i32,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A rootfs without a new mount namespace would replace the host's root.
    #[error("a rootfs needs a new mount namespace (CLONE_NEWNS)")]
    RootfsWithoutMount,
    /// Opening a namespace file failed.
    #[error("open {path}: {source}")]
    Open {
        /// The `/proc/<pid>/ns/<name>` path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: nix::Error,
    },
    /// A namespace syscall failed.
    #[error("{call}({what}): {source}")]
    Syscall {
        /// The syscall.
        call: &'static str,
        /// Its argument.
        what: String,
        /// The OS error.
        #[source]
        source: nix::Error,
    },
}

/// Namespaces in the order they are entered: the mount namespace last, since
/// entering it changes the root and working directory of the helper.
pub const ORDER: [(CloneFlags, &str); 5] = [
    (CloneFlags::CLONE_NEWNET, "net"),
    (CloneFlags::CLONE_NEWUTS, "uts"),
    (CloneFlags::CLONE_NEWIPC, "ipc"),
    (CloneFlags::CLONE_NEWPID, "pid"),
    (CloneFlags::CLONE_NEWNS, "mnt"),
];

fn all_supported() -> CloneFlags {
    ORDER
        .iter()
        .fold(CloneFlags::empty(), |acc, (f, _)| acc | *f)
}

/// ORs a list of `CLONE_NEW*` values, rejecting anything else.
pub fn flags_from(list: &[i32]) -> Result<CloneFlags, NamespaceError> {
    let mut flags = CloneFlags::empty();
    for &raw in list {
        let flag = CloneFlags::from_bits(raw).ok_or(NamespaceError::UnknownFlag(raw))?;
        if flag.is_empty() || !all_supported().contains(flag) {
            return Err(NamespaceError::UnknownFlag(raw));
        }
        flags |= flag;
    }
    Ok(flags)
}

/// The namespaces one container enters and creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Entered from the parent container's init.
    pub enter: CloneFlags,
    /// Created for this container.
    pub clone: CloneFlags,
}

/// `LinuxInfo.share_pid_namespace` of a container.
pub fn shares_pid_namespace(container: Option<&ContainerInfo>) -> bool {
    container
        .and_then(|c| c.linux_info.as_ref())
        .and_then(|l| l.share_pid_namespace)
        .unwrap_or(false)
}

/// Whether process `pid` is in this process' pid namespace (the nsfs
/// inodes of `/proc/<pid>/ns/pid` and `/proc/self/ns/pid` compared).
pub fn in_our_pid_namespace(pid: i32) -> Result<bool, NamespaceError> {
    use std::os::unix::fs::MetadataExt;
    let stat = |p: &str, pid: i32| {
        std::fs::metadata(p).map_err(|source| NamespaceError::PidNamespace { pid, source })
    };
    let theirs = stat(&format!("/proc/{pid}/ns/pid"), pid)?;
    let ours = stat("/proc/self/ns/pid", std::process::id() as i32)?;
    Ok(theirs.dev() == ours.dev() && theirs.ino() == ours.ino())
}

/// Decides the namespaces of a container.
///
/// The launch info's lists win when either is non-empty (isolators decided).
/// Otherwise a nested container gets the pod defaults: it enters all of its
/// parent's namespaces (so the network namespace is the executor's) and
/// creates its own mount, IPC, UTS (with `own_uts`: a copy of the
/// parent's, so a hostname or domainname set inside stays inside) and —
/// unless `LinuxInfo.share_pid_namespace` — pid namespaces; with a rootfs of
/// its own, its mount namespace derives from the host's instead of the
/// parent's. A top-level container without lists runs in the host's
/// namespaces.
pub fn plan(
    nested: bool,
    posix: bool,
    own_uts: bool,
    info: &ContainerLaunchInfo,
    container: Option<&ContainerInfo>,
) -> Result<Plan, NamespaceError> {
    let mut enter = flags_from(&info.enter_namespaces)?;
    let mut clone = flags_from(&info.clone_namespaces)?;
    let hostname = container.and_then(|c| c.hostname.as_deref());
    let share_pid = shares_pid_namespace(container);
    if posix {
        if !enter.is_empty() || !clone.is_empty() || info.rootfs.is_some() {
            return Err(NamespaceError::Posix);
        }
        if hostname.is_some() {
            return Err(NamespaceError::HostnameWithoutUts);
        }
        return Ok(Plan { enter, clone });
    }
    if nested && enter.is_empty() && clone.is_empty() {
        enter = all_supported();
        clone = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC;
        if own_uts || hostname.is_some() {
            clone |= CloneFlags::CLONE_NEWUTS;
        }
        if !share_pid {
            clone |= CloneFlags::CLONE_NEWPID;
        }
    }
    if nested && info.rootfs.is_some() && info.enter_namespaces.is_empty() {
        // Its own image: the mount namespace derives from the host's (where
        // the rootfs was prepared), not the parent's, as in Mesos.
        enter.remove(CloneFlags::CLONE_NEWNS);
    }
    if !nested && !enter.is_empty() {
        return Err(NamespaceError::EnterWithoutParent);
    }
    if info.rootfs.is_some() && !clone.contains(CloneFlags::CLONE_NEWNS) {
        return Err(NamespaceError::RootfsWithoutMount);
    }
    if hostname.is_some() && !clone.contains(CloneFlags::CLONE_NEWUTS) {
        return Err(NamespaceError::HostnameWithoutUts);
    }
    Ok(Plan { enter, clone })
}

/// Opens `/proc/<pid>/ns/<name>` for every namespace in `flags`, through the
/// host's procfs directory `proc_dir`. All are opened before any is entered:
/// after entering a mount namespace, `/proc` may show another pid namespace.
pub fn open_namespaces(
    proc_dir: BorrowedFd<'_>,
    pid: i32,
    flags: CloneFlags,
) -> Result<Vec<(CloneFlags, File)>, NamespaceError> {
    let mut out = Vec::new();
    for (flag, name) in ORDER {
        if !flags.contains(flag) {
            continue;
        }
        let rel = format!("{pid}/ns/{name}");
        let fd = openat(
            proc_dir,
            rel.as_str(),
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|source| NamespaceError::Open {
            path: PathBuf::from(format!("/proc/{rel}")),
            source,
        })?;
        out.push((flag, File::from(fd)));
    }
    Ok(out)
}

/// Enters the namespaces in `flags` of the process behind `pidfd` in one
/// atomic `setns` (Linux ≥ 5.8). `Ok(false)` when the kernel does not take
/// a pidfd there (the caller then opens `/proc/<pid>/ns/*`).
pub fn enter_pidfd(pidfd: BorrowedFd<'_>, flags: CloneFlags) -> Result<bool, NamespaceError> {
    match setns(pidfd, flags) {
        Ok(()) => Ok(true),
        Err(nix::Error::EINVAL | nix::Error::EBADF) => Ok(false),
        Err(source) => Err(NamespaceError::Syscall {
            call: "setns",
            what: format!("pidfd, {flags:?}"),
            source,
        }),
    }
}

/// `setns` into each opened namespace, in [`ORDER`].
pub fn enter(namespaces: &[(CloneFlags, File)]) -> Result<(), NamespaceError> {
    for (flag, file) in namespaces {
        setns(file.as_fd(), *flag).map_err(|source| NamespaceError::Syscall {
            call: "setns",
            what: format!("{flag:?}"),
            source,
        })?;
    }
    Ok(())
}

/// `unshare` the new namespaces; a new mount namespace is made a slave of
/// its origin so that the container's mounts never propagate back.
pub fn create(flags: CloneFlags) -> Result<(), NamespaceError> {
    if flags.is_empty() {
        return Ok(());
    }
    unshare(flags).map_err(|source| NamespaceError::Syscall {
        call: "unshare",
        what: format!("{flags:?}"),
        source,
    })?;
    if flags.contains(CloneFlags::CLONE_NEWNS) {
        use nix::mount::{MsFlags, mount};
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_SLAVE,
            None::<&str>,
        )
        .map_err(|source| NamespaceError::Syscall {
            call: "mount",
            what: "/ MS_REC|MS_SLAVE".into(),
            source,
        })?;
    }
    Ok(())
}

/// Mounts a procfs for the current pid namespace on `/proc` (run by the
/// supervisor, inside its new mount namespace, in its own pid namespace or
/// the parent container's it entered), so the container sees the processes
/// of its pid namespace only — never the host's: a copy of the host's mount
/// table would otherwise keep the host's procfs there.
pub fn mount_proc() -> Result<(), NamespaceError> {
    use nix::mount::{MsFlags, mount};
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|source| NamespaceError::Syscall {
        call: "mount",
        what: "proc on /proc".into(),
        source,
    })
}

/// Brings the loopback interface of a new network namespace up (a fresh
/// network namespace starts with `lo` down). Hand-rolled: one `SIOCSIFFLAGS`
/// ioctl does not justify a netlink crate.
pub fn loopback_up() -> Result<(), NamespaceError> {
    let err = |call, source| NamespaceError::Syscall {
        call,
        what: "lo".into(),
        source,
    };
    let sock = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| err("socket", e))?;
    // SAFETY: an all-zero ifreq is valid; we fill the name and flags below.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    use std::os::fd::AsRawFd;
    // SAFETY: valid socket fd and a properly initialised ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } < 0 {
        return Err(err("ioctl(SIOCGIFFLAGS)", nix::Error::last()));
    }
    // SAFETY: ifru_flags is the active union member after SIOCGIFFLAGS.
    unsafe {
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: as above.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } < 0 {
        return Err(err("ioctl(SIOCSIFFLAGS)", nix::Error::last()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::LinuxInfo;

    #[test]
    fn nested_defaults_follow_pods() {
        let info = ContainerLaunchInfo::default();
        let p = plan(true, false, true, &info, None).unwrap();
        assert!(p.enter.contains(CloneFlags::CLONE_NEWNET));
        assert!(!p.clone.contains(CloneFlags::CLONE_NEWNET));
        assert!(p.clone.contains(CloneFlags::CLONE_NEWPID));
        let shared = ContainerInfo {
            linux_info: Some(LinuxInfo {
                share_pid_namespace: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        let p = plan(true, false, true, &info, Some(&shared)).unwrap();
        assert!(!p.clone.contains(CloneFlags::CLONE_NEWPID));
        assert!(p.enter.contains(CloneFlags::CLONE_NEWPID));
    }

    #[test]
    fn rejects_what_cannot_work() {
        let enter = ContainerLaunchInfo {
            enter_namespaces: vec![libc::CLONE_NEWNET],
            ..Default::default()
        };
        assert!(matches!(
            plan(false, false, true, &enter, None),
            Err(NamespaceError::EnterWithoutParent)
        ));
        assert!(matches!(
            plan(true, true, true, &enter, None),
            Err(NamespaceError::Posix)
        ));
        let user = ContainerLaunchInfo {
            clone_namespaces: vec![libc::CLONE_NEWUSER],
            ..Default::default()
        };
        assert!(matches!(
            plan(false, false, true, &user, None),
            Err(NamespaceError::UnknownFlag(_))
        ));
        let named = ContainerInfo {
            hostname: Some("h".into()),
            ..Default::default()
        };
        assert!(matches!(
            plan(
                false,
                false,
                true,
                &ContainerLaunchInfo::default(),
                Some(&named)
            ),
            Err(NamespaceError::HostnameWithoutUts)
        ));
    }
}
