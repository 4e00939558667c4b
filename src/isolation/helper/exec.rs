//! The command process: the last steps before `execve`, in the process the
//! supervisor vforked for it (signal dispositions, stdio, rlimits, working
//! directory, capabilities, user, `no_new_privs`, seccomp). Apart from the
//! supervisor, whose job is to reap and checkpoint.

use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};

use super::command::Prepared;
use super::stdio::Handed;
use super::supervisor::{SETUP_FAILURE, write_fd};
use crate::isolation::seccomp;

/// In the command process: apply limits and identity, then `execve`.
/// `expect_cwd`: the device and inode the working directory must have;
/// `stdio`: the descriptors that become 0/1/2.
pub(super) fn exec_command(
    p: &Prepared,
    mask: &SigSet,
    filters: &[seccompiler::BpfProgram],
    (expect_cwd, in_workdir): (Option<(u64, u64)>, bool),
    stdio: Option<&Handed>,
) -> ! {
    let result = (|| -> Result<std::convert::Infallible, String> {
        reset_signal_dispositions();
        if let Some(handed) = stdio {
            handed.install()?;
        }
        for (res, soft, hard) in &p.rlimits {
            nix::sys::resource::setrlimit(*res, *soft, *hard)
                .map_err(|e| format!("setrlimit({res:?}): {e}"))?;
        }
        if !in_workdir {
            nix::unistd::chdir(&p.workdir)
                .map_err(|e| format!("chdir {}: {e}", p.workdir.display()))?;
        }
        if let Some(expect) = expect_cwd {
            let cwd = nix::sys::stat::stat(".").map_err(|e| format!("stat .: {e}"))?;
            #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
            if (cwd.st_dev as u64, cwd.st_ino as u64) != expect {
                return Err(format!(
                    "{} is not the sandbox the host prepared; refusing it",
                    p.workdir.display()
                ));
            }
        }
        if let Some(c) = &p.capabilities {
            for cap in caps::all().difference(&c.bounding) {
                caps::drop(None, caps::CapSet::Bounding, *cap)
                    .map_err(|e| format!("prctl(PR_CAPBSET_DROP, {cap}): {e}"))?;
            }
            if c.effective.is_some() && p.user.is_some() {
                nix::sys::prctl::set_keepcaps(true)
                    .map_err(|e| format!("prctl(PR_SET_KEEPCAPS): {e}"))?;
            }
        }
        // Already that user (the posix launcher run by a non-root host):
        // nothing to switch, and an unprivileged setgroups would fail.
        let already = p
            .user
            .as_ref()
            .is_some_and(|u| nix::unistd::geteuid() == u.uid && !nix::unistd::geteuid().is_root());
        if let Some(user) = p.user.as_ref().filter(|_| !already) {
            nix::unistd::setgroups(&user.groups).map_err(|e| format!("setgroups: {e}"))?;
            nix::unistd::setgid(user.gid).map_err(|e| format!("setgid({}): {e}", user.gid))?;
            nix::unistd::setuid(user.uid).map_err(|e| format!("setuid({}): {e}", user.uid))?;
        }
        if let Some(effective) = p.capabilities.as_ref().and_then(|c| c.effective.as_ref()) {
            // Effective first (it must stay within permitted), then
            // permitted; ambient last (it needs the capability permitted and
            // inheritable).
            for set in [
                caps::CapSet::Effective,
                caps::CapSet::Permitted,
                caps::CapSet::Inheritable,
                caps::CapSet::Ambient,
            ] {
                caps::set(None, set, effective).map_err(|e| format!("capset({set:?}): {e}"))?;
            }
        }
        if p.no_new_privs {
            nix::sys::prctl::set_no_new_privs()
                .map_err(|e| format!("prctl(PR_SET_NO_NEW_PRIVS): {e}"))?;
        }
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(mask), None)
            .map_err(|e| format!("sigprocmask: {e}"))?;
        // Last: the filter then confines only what the command does.
        seccomp::install(filters)?;
        nix::unistd::execve(&p.path, &p.argv, &p.env)
            .map_err(|e| format!("execve {:?}: {e}", p.path))
    })();
    let Err(text) = result;
    write_fd(2, &format!("nestguard-launch: {text}\n"));
    // SAFETY: _exit is always safe; skips atexit handlers of the copied image.
    unsafe { libc::_exit(SETUP_FAILURE) }
}

/// Ignored signals stay ignored across `execve`: a host that ignores
/// SIGPIPE (most servers do) would otherwise hand that to every container.
/// The command starts with every disposition at its default. The raw
/// syscall, because the C library refuses to touch the real-time signals it
/// reserves (32, 33), which a host may still have ignored.
fn reset_signal_dispositions() {
    /// The kernel's `struct sigaction` (x86-64 and aarch64 layout).
    #[repr(C)]
    struct KernelSigaction {
        handler: usize,
        flags: libc::c_ulong,
        restorer: usize,
        mask: u64,
    }
    let default = KernelSigaction {
        handler: libc::SIG_DFL,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    for signal in 1..=libc::SIGRTMAX() {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: rt_sigaction reads `default` (a valid kernel sigaction
        // with SIG_DFL) and writes nothing (old action pointer is null).
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                signal,
                &default as *const KernelSigaction,
                std::ptr::null_mut::<KernelSigaction>(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}
