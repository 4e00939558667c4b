//! The stage itself: applies an [`ExecPlan`] to the calling process and
//! `execve`s the container's command in place (see the module doc of
//! [`super`] for the order and why).

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::plan::{StageArgs, StageUser, parse_args};
use super::{handover, launch_mounts, rootfs};
use crate::isolation::helper::mounts::read_only_kernel_paths;
use crate::isolation::seccomp;

/// The current bounding set as a mask, asked of the kernel capability by
/// capability (`PR_CAPBSET_READ`) rather than read from `/proc/self/status`:
/// what is mounted at `/proc` in a container is not the stage's to trust.
fn current_bounding() -> Result<u64, String> {
    let mut mask = 0u64;
    for cap in 0..64u32 {
        // SAFETY: prctl(PR_CAPBSET_READ) takes a capability number only.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_READ, libc::c_ulong::from(cap), 0, 0, 0) };
        match rc {
            1 => mask |= 1u64 << cap,
            0 => {}
            // EINVAL: past the kernel's last capability.
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) => break,
            _ => {
                return Err(format!(
                    "prctl(PR_CAPBSET_READ, {cap}): {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
    }
    Ok(mask)
}

fn mask_to_set(mask: u64) -> caps::CapsHashSet {
    caps::all()
        .into_iter()
        .filter(|c| mask & (1u64 << c.index()) != 0)
        .collect()
}

/// Step 1: read-only kernel paths, in the container's own mount namespace
/// only.
fn read_only_paths(args: &StageArgs) -> Result<(), String> {
    if !args.plan.read_only_paths {
        return Ok(());
    }
    let own = std::fs::metadata("/proc/self/ns/mnt")
        .map_err(|e| format!("stat /proc/self/ns/mnt: {e}"))?
        .ino();
    if own == args.plan.agent_mnt_ns {
        // The agent's own mount namespace: never remount the host's; and a
        // command that stays root there could write the host's knobs.
        if args.user.is_none() && nix::unistd::geteuid().is_root() {
            return Err(format!(
                "container '{}' would run as root in the agent's mount namespace, where /proc/sys \
                 cannot be made read-only (list nestguard's filesystem/linux isolator)",
                args.plan.container
            ));
        }
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        // Unprivileged: the knobs are root's files, already unwritable.
        return Ok(());
    }
    if already_read_only() {
        // A debug session in its parent's namespace, or a nested container
        // in a copy of it: binding again would only stack mounts.
        return Ok(());
    }
    read_only_kernel_paths().map_err(|e| e.to_string())
}

/// Whether `/proc/sys` and `/sys` are read-only mount points here already.
fn already_read_only() -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    // The last mount at a target is the one the container sees.
    let read_only = |target: &str| {
        info.lines()
            .rev()
            .map(|l| l.split(' ').skip(4))
            .find_map(|mut f| (f.next() == Some(target)).then(|| f.next()).flatten())
            .is_some_and(|options| options.split(',').any(|o| o == "ro"))
    };
    read_only("/proc/sys") && read_only("/sys")
}

/// Step 2: the bounding set (every capability the kernel has) and the
/// inheritable set clipped to it. A stage that cannot drop (not root, no
/// `CAP_SETPCAP`) refuses unless the set is already within the plan's.
fn bounding(args: &StageArgs) -> Result<(), String> {
    let wanted = args.plan.bounding;
    let current = current_bounding()?;
    let extra = current & !wanted;
    if extra == 0 {
        return Ok(());
    }
    let can_drop = caps::has_cap(None, caps::CapSet::Effective, caps::Capability::CAP_SETPCAP)
        .unwrap_or(false);
    if !can_drop {
        return Err(format!(
            "container '{}': runs as uid {} without CAP_SETPCAP and cannot reduce its bounding \
             set (CapBnd {current:016x}, wanted {wanted:016x}); the agent's --launcher_dir \
             must hold nestguard's mesos-containerizer wrapper, which lets the stage switch \
             the user itself",
            args.plan.container,
            nix::unistd::geteuid()
        ));
    }
    // Every bit CapBnd shows, not `cap_last_cap` (a file a mount could cover).
    for cap in 0..64u32 {
        if extra & (1u64 << cap) != 0 {
            // SAFETY: prctl(PR_CAPBSET_DROP) takes a capability number only.
            let rc =
                unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) };
            if rc != 0 {
                return Err(format!(
                    "prctl(PR_CAPBSET_DROP, {cap}): {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
    }
    let left = current_bounding()? & !wanted;
    if left != 0 {
        return Err(format!(
            "container '{}': capabilities {left:016x} are still in the bounding set",
            args.plan.container
        ));
    }
    let inheritable = caps::read(None, caps::CapSet::Inheritable)
        .map_err(|e| format!("capget: {e}"))?
        .intersection(&mask_to_set(wanted))
        .copied()
        .collect();
    caps::set(None, caps::CapSet::Inheritable, &inheritable)
        .map_err(|e| format!("capset(inheritable): {e}"))
}

/// Steps 3 and 4: the user switch and the effective set.
fn identity(args: &StageArgs) -> Result<(), String> {
    let effective = args.plan.effective.map(mask_to_set);
    if let Some(user) = &args.user {
        switch_user(user, effective.is_some())?;
    }
    if let Some(set) = &effective {
        for which in [
            caps::CapSet::Effective,
            caps::CapSet::Permitted,
            caps::CapSet::Inheritable,
            caps::CapSet::Ambient,
        ] {
            caps::set(None, which, set).map_err(|e| format!("capset({which:?}): {e}"))?;
        }
    }
    Ok(())
}

fn switch_user(user: &StageUser, keep_caps: bool) -> Result<(), String> {
    use nix::unistd::{Gid, Uid};
    if keep_caps {
        nix::sys::prctl::set_keepcaps(true).map_err(|e| format!("prctl(PR_SET_KEEPCAPS): {e}"))?;
    }
    let groups: Vec<Gid> = user.groups.iter().map(|g| Gid::from_raw(*g)).collect();
    nix::unistd::setgroups(&groups).map_err(|e| format!("setgroups: {e}"))?;
    nix::unistd::setgid(Gid::from_raw(user.gid))
        .map_err(|e| format!("setgid({}): {e}", user.gid))?;
    nix::unistd::setuid(Uid::from_raw(user.uid)).map_err(|e| format!("setuid({}): {e}", user.uid))
}

/// The executable as Mesos' helper picks it: a relative one that exists in
/// the working directory (the stage's, which Mesos set) and is executable
/// for the user runs from there, as `os::which(value, working_directory)`
/// finds it (`launch.cpp`, about line 1180); anything else goes to `execvp`
/// as it is. Checked as the container's user, as Mesos' helper checks it.
fn executable(path: &[u8], cwd: &Path) -> Vec<u8> {
    if path.starts_with(b"/") || path.is_empty() {
        return path.to_vec();
    }
    let candidate = cwd.join(OsStr::from_bytes(path));
    let runnable = candidate.exists()
        && nix::unistd::access(&candidate, nix::unistd::AccessFlags::X_OK).is_ok();
    if runnable {
        candidate.into_os_string().into_vec()
    } else {
        path.to_vec()
    }
}

unsafe extern "C" {
    /// The C runtime's environment, which `execvp` passes on and whose
    /// `PATH` it searches.
    static mut environ: *const *const libc::c_char;
}

/// The container's environment as `execvp` wants it (`NAME=VALUE`, NUL
/// terminated), if the wrapper handed one over ([`handover`]).
fn environment() -> Result<Option<Vec<CString>>, String> {
    let Some(env) = handover::handed_environment(std::env::vars_os())? else {
        return Ok(None);
    };
    env.into_iter()
        .map(CString::new)
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
        .map_err(|_| "an environment variable has a NUL byte".to_owned())
}

/// Steps 5 and 6, then 7: `execvp` with the container's environment (the
/// one the wrapper handed over, or the stage's own), searching its `PATH`
/// as Mesos' helper does (stout's `os::execvpe` swaps `environ` the same
/// way).
fn confine_and_exec(args: &StageArgs) -> Result<std::convert::Infallible, String> {
    let filters = seccomp::decode(&args.plan.filters).map_err(|e| e.to_string())?;
    let env = environment()?;
    let envp: Option<Vec<*const libc::c_char>> = env.as_ref().map(|vars| {
        vars.iter()
            .map(|v| v.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    });
    let cwd = std::env::current_dir().unwrap_or_default();
    let path = CString::new(executable(&args.path, &cwd)).map_err(|_| "the path has a NUL byte")?;
    let argv: Vec<CString> = args
        .argv
        .iter()
        .map(|a| CString::new(a.clone()))
        .collect::<Result<_, _>>()
        .map_err(|_| "an argument has a NUL byte")?;
    if args.plan.no_new_privs {
        nix::sys::prctl::set_no_new_privs()
            .map_err(|e| format!("prctl(PR_SET_NO_NEW_PRIVS): {e}"))?;
    }
    seccomp::install(&filters)?;
    if let Some(envp) = &envp {
        // SAFETY: the stage is single-threaded, and `envp` (NULL
        // terminated, pointing into `env`) outlives the `execvp` below;
        // after a failed `execvp` the stage only formats its message.
        unsafe { std::ptr::addr_of_mut!(environ).write(envp.as_ptr()) };
    }
    let e = nix::unistd::execvp(&path, &argv).unwrap_err();
    Err(format!(
        "execvp {:?}: {e}",
        OsStr::from_bytes(&args.path).to_string_lossy()
    ))
}

/// Runs the stage: returns only on failure, with the message to print.
pub fn run(args: &[&[u8]]) -> String {
    let result = (|| -> Result<std::convert::Infallible, String> {
        let args = parse_args(args).map_err(|e| e.to_string())?;
        // Step 0: the sandbox mounts, before anything reads the tree.
        launch_mounts::perform(&args.mounts, &args.plan.roots(), args.plan.agent_mnt_ns)
            .map_err(|e| format!("container '{}': {e}", args.plan.container))?;
        // Every mount of the container is made: its stage path must still
        // be this stage (see `StageIdentity`). Only a root stage can be
        // abused through it (Mesos' helper runs it as root when the wrapper
        // moved the user switch here); a stage that is not root fails
        // closed below anyway (it cannot reduce its bounding set), and may
        // not even be allowed to stat its own path.
        if nix::unistd::geteuid().is_root() {
            args.plan
                .stage
                .verify()
                .map_err(|e| format!("container '{}': {e}", args.plan.container))?;
        }
        // An image: entered now, after the mounts into it and the check
        // above, before the defences (see `rootfs`).
        if let Some(rootfs) = &args.plan.rootfs {
            rootfs::enter(rootfs, args.workdir.as_deref(), args.plan.agent_mnt_ns)
                .map_err(|e| format!("container '{}': {e}", args.plan.container))?;
        }
        read_only_paths(&args)?;
        bounding(&args)?;
        identity(&args)?;
        confine_and_exec(&args)
    })();
    match result {
        Err(text) => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_relative_command_in_the_working_directory_runs_from_there_as_mesos_runs_it() {
        let dir = std::env::temp_dir().join(format!("ng-stage-which-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        for (name, mode) in [("run.sh", 0o755), ("data.txt", 0o644), ("bin/tool", 0o755)] {
            std::fs::write(dir.join(name), "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(mode))
                .unwrap();
        }
        let found = |p: &str| String::from_utf8(executable(p.as_bytes(), &dir)).unwrap();
        assert_eq!(found("run.sh"), dir.join("run.sh").display().to_string());
        assert_eq!(
            found("bin/tool"),
            dir.join("bin/tool").display().to_string()
        );
        assert_eq!(found("/bin/true"), "/bin/true");
        // Not executable, or not there: left to execvp's PATH search.
        assert_eq!(found("data.txt"), "data.txt");
        assert_eq!(found("sleep"), "sleep");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
