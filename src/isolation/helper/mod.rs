//! The helper side: code that runs in the `nestguard-launch` helper and the
//! processes it forks (intermediate, supervisor, command), never in the host.
//!
//! It reads the launch data the host sent over [`super::channel`], enters and
//! creates namespaces, forks the supervisor, sets up mounts and the rootfs,
//! prepares the command and execs it.

pub mod command;
mod exec;
pub mod mounts;
pub mod rootfs;
pub mod stdio;
pub mod supervisor;
mod user_fds;
pub mod user_namespace;
mod vfork;

/// The arguments of a `no_main` binary (`argv[0]` included), as bytes:
/// the helper and the exec stage skip the Rust runtime's start-up, so they
/// read the C runtime's `argv` themselves.
///
/// # Safety
///
/// `argv` must hold `argc` valid, NUL-terminated strings that live for the
/// whole process, as the C runtime passes them to `main`.
pub unsafe fn c_args(
    argc: std::ffi::c_int,
    argv: *const *const std::ffi::c_char,
) -> Vec<&'static [u8]> {
    let count = usize::try_from(argc).unwrap_or(0);
    (0..count)
        .filter_map(|i| {
            // SAFETY: the caller's contract: `argc` valid strings in `argv`.
            let arg = unsafe { *argv.add(i) };
            (!arg.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(arg) }.to_bytes())
        })
        .collect()
}
