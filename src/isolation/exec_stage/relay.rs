//! The fork into a pid namespace under Mesos' posix launcher, and the
//! relay that stays behind as the process Mesos knows.
//!
//! Why a relay: a process enters a new (or another) pid namespace only
//! through its children. Mesos tracks, signals and reaps the process it
//! forked, so that one stays: it forwards every signal it can catch
//! (real-time ones too, as Mesos' own helper does) to the child and ends as
//! the child ends, by the same exit code or the same signal. It holds
//! nothing: its descriptors are closed, it cannot be dumped (no core file,
//! no `/proc/<pid>/mem` for others), and it never runs tenant code.
//!
//! Written with `libc` directly: `nix`'s `SigSet::wait` panics on a
//! real-time signal, which a framework can send with KILL_CONTAINER.

use std::mem::MaybeUninit;

/// Forks; returns `Ok` in the child (a session leader, killed with the
/// relay), never in the parent, which relays until the child ends.
pub fn fork_and_relay() -> Result<(), String> {
    let mut all = MaybeUninit::<libc::sigset_t>::uninit();
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes the set; sigprocmask reads it and
    // writes the old mask (the wrapper is single-threaded).
    let all = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        if libc::sigprocmask(libc::SIG_BLOCK, all.as_ptr(), old.as_mut_ptr()) != 0 {
            return Err(format!(
                "block signals: {}",
                std::io::Error::last_os_error()
            ));
        }
        all.assume_init()
    };
    // SAFETY: called right after sigprocmask succeeded.
    let old = unsafe { old.assume_init() };
    // The relay as a pidfd (5.3+; -1 before): the child, in another pid
    // namespace, cannot tell by its parent pid whether the relay died
    // before its death signal was armed.
    // SAFETY: pidfd_open of our own pid.
    let relay = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as i32;
    // SAFETY: single-threaded; the child only makes syscalls before it
    // returns to `execve` Mesos' helper.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => become_child(relay, &old),
        child => relay_until_exit(child, &all),
    }
}

fn become_child(relay: i32, old: &libc::sigset_t) -> Result<(), String> {
    // SAFETY: prctl/poll/close/setsid/sigprocmask with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if relay >= 0 {
            let mut gone = libc::pollfd {
                fd: relay,
                events: libc::POLLIN,
                revents: 0,
            };
            // Readable: the relay died before the death signal was armed.
            if libc::poll(&mut gone, 1, 0) == 1 {
                libc::_exit(1);
            }
            libc::close(relay);
        }
        // Mesos' helper makes a terminal the controlling one
        // (`setctty`), which only a session leader may.
        if libc::setsid() < 0 {
            return Err(format!("setsid: {}", std::io::Error::last_os_error()));
        }
        if libc::sigprocmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) != 0 {
            return Err(format!(
                "restore the signal mask: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Holds nothing, then forwards signals until `child` ends.
fn relay_until_exit(child: libc::pid_t, all: &libc::sigset_t) -> ! {
    // SAFETY: prctl/setrlimit/syscall with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..4096 {
                libc::close(fd);
            }
        }
    }
    loop {
        // SAFETY: `all` is an initialized set; a null info is allowed.
        let signal = unsafe { libc::sigwaitinfo(all, std::ptr::null_mut()) };
        if signal < 0 {
            continue;
        }
        if signal != libc::SIGCHLD {
            // SAFETY: kill with a pid of ours and the signal received.
            unsafe { libc::kill(child, signal) };
            continue;
        }
        let mut status = 0;
        // SAFETY: waitpid on our only child.
        let ended = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if ended != child {
            continue;
        }
        if libc::WIFEXITED(status) {
            std::process::exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            die_by(libc::WTERMSIG(status));
        }
    }
}

/// Dies by `signal` with its default action, as the child did.
fn die_by(signal: i32) -> ! {
    // SAFETY: resetting a disposition, unblocking and raising one signal.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut only = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(only.as_mut_ptr());
        libc::sigaddset(only.as_mut_ptr(), signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, only.as_ptr(), std::ptr::null_mut());
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}
