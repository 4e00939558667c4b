//! Creating a process without copying the address space: `clone` with
//! `CLONE_VM | CLONE_VFORK` on a stack of its own, as `posix_spawn` does.
//!
//! Why: copying page tables on `fork` and the copy-on-write faults that
//! follow are the largest costs of a launch on virtualized hosts (hundreds
//! of microseconds per fork where page-table updates trap). The helper and
//! the supervisor each create exactly one process and then only wait, so
//! neither needs a copy: the parent is suspended by the kernel until the
//! child calls `execve` or exits, and the child runs on its own stack in the
//! parent's memory. Nothing runs concurrently with the child, so the memory
//! it shares is never accessed by two processes at once.
//!
//! Rules for the child, enforced by the callers: it never returns into the
//! parent's frames (the callback ends in `execve` or `_exit`), and it never
//! frees what the parent still uses. Allocations it makes and does not free
//! stay behind in the parent's heap, which is harmless for parents that only
//! wait and exit.
//!
//! Side effects of sharing an address space, accepted: the memory of the
//! intermediate and the supervisor is charged to the helper's memory cgroup
//! (the address space's owner), a few hundred kilobytes outside the
//! container's limit; and the OOM killer kills every process of an address
//! space together, so an OOM kill of the supervisor also takes the helper —
//! which only waits for it anyway (the container's processes after `execve`
//! have their own address spaces and are charged to the container).
//!
//! `nix::sched::clone` does the syscall; this module adds the stack (mapped,
//! with a guard page, so an overflow faults instead of corrupting the heap).

use std::ptr::NonNull;

use nix::sched::CloneFlags;
use nix::sys::mman::{MapFlags, ProtFlags, mmap_anonymous, mprotect, munmap};
use nix::unistd::Pid;

/// Stack size of a child; mapped lazily, so only touched pages cost memory.
const STACK_SIZE: usize = 2 << 20;

/// A mapped stack with a guard page at its low end.
struct Stack {
    base: NonNull<std::ffi::c_void>,
    len: usize,
}

impl Stack {
    fn new(len: usize) -> nix::Result<Stack> {
        let size = std::num::NonZeroUsize::new(len).ok_or(nix::Error::EINVAL)?;
        // SAFETY: a fresh private anonymous mapping aliases nothing.
        let base = unsafe {
            mmap_anonymous(
                None,
                size,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_STACK,
            )?
        };
        let stack = Stack { base, len };
        let page = rustix::param::page_size();
        // SAFETY: the first page of our own mapping becomes the guard.
        unsafe { mprotect(base, page, ProtFlags::PROT_NONE)? };
        Ok(stack)
    }

    fn as_slice(&mut self) -> &mut [u8] {
        let page = rustix::param::page_size();
        // SAFETY: the mapping is `len` bytes, readable and writable above
        // the guard page, and lives as long as `self`.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.base.as_ptr().cast::<u8>().add(page),
                self.len - page,
            )
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours; the child that used it has exec'd or
        // exited (CLONE_VFORK returned only then).
        let _ = unsafe { munmap(self.base, self.len) };
    }
}

/// Runs `child` in a new process sharing this one's memory; returns once the
/// child has called `execve` or exited, with its pid. `child` must end in
/// `execve` or `_exit` (its return value becomes the exit code otherwise);
/// see the module rules. The new process gets SIGCHLD as exit signal, so the
/// caller waits for it like a forked child. With `share_files` it also
/// shares the descriptor table (`CLONE_FILES`): what it closes, the caller
/// no longer holds either.
///
/// # Safety
///
/// The caller must be single-threaded (the suspended parent is the only
/// other user of the memory) and `child` must follow the module's rules.
pub unsafe fn spawn(share_files: bool, child: impl FnOnce() -> i32) -> nix::Result<Pid> {
    let mut stack = Stack::new(STACK_SIZE)?;
    let mut child = Some(child);
    let callback = Box::new(move || -> isize { child.take().map_or(127, |f| f() as isize) });
    let mut flags = CloneFlags::CLONE_VM | CloneFlags::CLONE_VFORK;
    if share_files {
        flags |= CloneFlags::CLONE_FILES;
    }
    // SAFETY: the caller guarantees the module's rules; the stack outlives
    // the child's use of it (CLONE_VFORK: we return after it exec'd/exited).
    unsafe { nix::sched::clone(callback, stack.as_slice(), flags, Some(libc::SIGCHLD)) }
}

/// Runs `with` while a child created with `CLONE_VM | flags` (e.g.
/// `CLONE_NEWUSER`) sits in `pause()`, then kills and reaps the child.
/// This is how the helper gets hold of a namespace whose maps only a
/// process outside it may write.
///
/// The caller runs on while the child lives, so the child must touch no
/// memory of the caller's: it starts in [`pause_forever`], a plain
/// `extern "C"` function with no argument, through `libc::clone` (not
/// `nix::sched::clone`, whose child reads its callback through a pointer
/// into the caller's stack frame, valid only while the caller waits, as
/// with `CLONE_VFORK`).
///
/// # Safety
///
/// The caller must be single-threaded.
pub unsafe fn with_paused_child<T>(
    flags: CloneFlags,
    with: impl FnOnce(Pid) -> T,
) -> nix::Result<T> {
    // A small stack: the child only calls `pause`.
    let mut stack = Stack::new(64 << 10)?;
    let top = {
        let slice = stack.as_slice();
        // SAFETY: one past the end of the mapping's usable part.
        let end = unsafe { slice.as_mut_ptr().add(slice.len()) };
        end.wrapping_sub(end as usize % 16)
    };
    // SAFETY: `pause_forever` needs no argument and never returns; the
    // stack stays mapped until the child is reaped below.
    let raw = unsafe {
        libc::clone(
            pause_forever,
            top.cast(),
            (CloneFlags::CLONE_VM | flags).bits() | libc::SIGCHLD,
            std::ptr::null_mut(),
        )
    };
    if raw < 0 {
        return Err(nix::Error::last());
    }
    let child = Pid::from_raw(raw);
    let out = with(child);
    let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
    let _ = crate::isolation::process::waitpid_raw(child.as_raw(), libc::__WALL);
    drop(stack);
    Ok(out)
}

/// The paused child's whole life: `pause` until SIGKILL, which also
/// comes when the caller dies first (a helper killed meanwhile), so no
/// paused child outlives it holding its memory and a namespace.
extern "C" fn pause_forever(_: *mut libc::c_void) -> libc::c_int {
    // SAFETY: a plain syscall on this process' own attributes.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    loop {
        // SAFETY: `pause` only waits.
        unsafe { libc::pause() };
    }
}
