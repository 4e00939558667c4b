//! `nestguard_launcher`: the nesting-aware container launcher.
//!
//! Containers are identified by serialized `mesos.ContainerID` bytes (nested
//! ids carry their parents). Each container runs under a supervisor process
//! (`nestguard-launch`) that checkpoints its pid and the command's raw wait
//! status under `<runtime_dir>/containers/<root>/containers/<child>/`, so
//! statuses survive a restart of the host.

use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::time::Duration;

use super::bytes::nestguard_bytes;
use super::error::{fail, fail_with};
use super::ffi::{free_handle, handle_ref, into_handle, write_out};
use super::isolator::nestguard_isolator;
use super::result::{AbiError, nestguard_result};
use crate::isolation::helper::command::CommandError;
use crate::isolation::id_map::IdMapError;
use crate::isolation::launcher::{
    ContainerIo, Launcher, LauncherError, LauncherOptions, Mode, default_helper_path,
};
use crate::isolation::namespace_ops::NamespaceError;
use crate::isolation::paths;
use crate::proto::mesos::slave::{ContainerLaunchInfo, ContainerRecoverInfo};
use crate::proto::mesos::{ContainerId, ContainerInfo};

/// Flag for `nestguard_launcher_new`: use the posix launcher (no namespaces,
/// a session per container, the session is killed on destroy), like Mesos'
/// `--launcher=posix`. Without it the Linux launcher is used.
pub const NESTGUARD_LAUNCHER_POSIX: u32 = 1;

/// Flag for `nestguard_launcher_new`: let a top-level container share the
/// agent's pid namespace (`LinuxInfo.share_pid_namespace`). Without it such
/// a launch is refused (Mesos allows it unless
/// `--disallow_sharing_agent_pid_namespace`; nestguard is stricter).
pub const NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE: u32 = 2;

impl AbiError for LauncherError {
    fn code(&self) -> nestguard_result {
        use nestguard_result as R;
        match self {
            LauncherError::ContainerId(_) => R::InvalidContainerId,
            LauncherError::Unknown(_) => R::LauncherUnknownContainer,
            LauncherError::Exists(_) => R::LauncherContainerExists,
            LauncherError::ParentNotRunning(_) => R::LauncherParentNotRunning,
            LauncherError::Helper { .. } => R::LauncherHelperFailed,
            LauncherError::Timeout(..) => R::LauncherTimeout,
            LauncherError::Command(CommandError::Unsupported(_))
            | LauncherError::Namespace(NamespaceError::UnknownFlag(_) | NamespaceError::Posix) => {
                R::LauncherUnsupported
            }
            LauncherError::Command(_)
            | LauncherError::Namespace(_)
            | LauncherError::Signal(_)
            | LauncherError::Seccomp(_)
            | LauncherError::Stdio(_) => R::InvalidArgument,
            LauncherError::Sandbox(_) | LauncherError::Io { .. } => R::Io,
            LauncherError::Checkpoint(_)
            | LauncherError::BadStatus(_)
            | LauncherError::Channel(_) => R::Checkpoint,
            LauncherError::Process(_)
            | LauncherError::Kill(..)
            | LauncherError::UserNamespace(IdMapError::Exhausted { .. }) => R::LauncherSystem,
            LauncherError::UserNamespaceUnsupported(_) => R::LauncherUnsupported,
            LauncherError::UserNamespace(IdMapError::Checkpoint(_)) => R::Checkpoint,
            LauncherError::UserNamespace(_)
            | LauncherError::UserNamespaceSandbox { .. }
            | LauncherError::UserNamespaceUser { .. } => R::InvalidArgument,
            LauncherError::Cgroup(e) => e.code(),
        }
    }
}

/// A launcher bound to one runtime directory. Safe to use from several
/// threads at once; calls are serialized inside except the blocking part of
/// `nestguard_launcher_wait`. Under the hood it is a `Box<Launcher>`.
pub struct nestguard_launcher {
    inner: Launcher,
}

macro_rules! try_launcher {
    ($ptr:expr) => {
        match handle_ref($ptr) {
            Some(l) => &l.inner,
            None => {
                return fail(
                    nestguard_result::NullParameter,
                    "argument `launcher` must not be NULL",
                );
            }
        }
    };
}

macro_rules! try_id {
    ($ptr:expr, $len:expr) => {{
        let id = try_decode!(ContainerId, $ptr, $len, "id");
        try_abi!(crate::container_id::validate(&id));
        id
    }};
}

impl nestguard_launcher {
    /// Creates a launcher.
    ///
    /// `runtime_dir` (UTF-8, not NUL-terminated) is Mesos' `--runtime_dir`;
    /// it is created if missing. `helper` is the path of the
    /// `nestguard-launch` binary; with `helper_len == 0` it is looked up beside
    /// `libnestguard.so`. `flags` is 0 (Linux launcher, needs root) or
    /// `NESTGUARD_LAUNCHER_POSIX`, optionally ORed with
    /// `NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE`. Containers of an earlier launcher are not
    /// managed until `nestguard_launcher_recover` is called. Free with
    /// `nestguard_launcher_free`.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_new(
        runtime_dir: *const std::ffi::c_char,
        runtime_dir_len: usize,
        helper: *const std::ffi::c_char,
        helper_len: usize,
        flags: u32,
        out: *mut *mut nestguard_launcher,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            new_launcher(runtime_dir, runtime_dir_len, helper, helper_len, flags, std::ptr::null(), out)
        }
    }

    /// Like `nestguard_launcher_new`, but the launcher shares the cgroups of
    /// `isolator` (a `nestguard_isolator` with the cgroups isolator, or
    /// NULL): it puts each container's supervisor into the container's
    /// cgroups before the command starts, so no process of the container ever
    /// runs outside them, and kills through the cgroups on destroy. The
    /// isolator must outlive the launcher.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_new_with_isolator(
        runtime_dir: *const std::ffi::c_char,
        runtime_dir_len: usize,
        helper: *const std::ffi::c_char,
        helper_len: usize,
        flags: u32,
        isolator: *const nestguard_isolator,
        out: *mut *mut nestguard_launcher,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            new_launcher(runtime_dir, runtime_dir_len, helper, helper_len, flags, isolator, out)
        }
    }

    /// Rebuilds the container tree from the runtime directory after a restart.
    ///
    /// `recover_info` is a serialized `mesos.slave.ContainerRecoverInfo`
    /// whose `known_container_ids` are the containers the agent knows
    /// (typically its executor containers). `*out` receives a serialized
    /// `ContainerRecoverInfo` whose `orphan_container_ids` lists every
    /// container whose root is not known, nested ones included; they are
    /// managed (wait, destroy work) and should be destroyed by the caller.
    /// Its `checkpointed_container_states` lists every other recovered
    /// container (id, supervisor pid, sandbox), parents first, running or
    /// exited while the host was down.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_recover(
        launcher: *const nestguard_launcher,
        recover_info: *const u8,
        recover_info_len: usize,
        out: *mut *mut nestguard_bytes,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            let l = try_launcher!(launcher);
            try_not_null!(out, "out");
            let info = try_decode!(ContainerRecoverInfo, recover_info, recover_info_len, "recover_info");
            let orphans = try_abi!(l.recover(&info.known_container_ids));
            let orphan_keys: Vec<String> = orphans.iter().map(crate::container_id::to_dotted).collect();
            let states = l
                .states()
                .into_iter()
                .filter(|s| !orphan_keys.contains(&crate::container_id::to_dotted(&s.container_id)))
                .collect();
            let reply = ContainerRecoverInfo {
                checkpointed_container_states: states,
                orphan_container_ids: orphans,
                ..Default::default()
            };
            write_out(out, nestguard_bytes::into_raw(prost::Message::encode_to_vec(&reply)));
            nestguard_result::Ok
        }
    }

    /// Writes to `*out` the serialized `mesos.slave.ContainerConfig` the
    /// launcher checkpointed when it launched `id` (a serialized
    /// `mesos.ContainerID`), as the caller gave it at launch: its sandbox
    /// directory, user and container class, and the command and container
    /// info (nothing the caller did not pass in).
    /// After a restart this is how the agent learns who a recovered
    /// container runs as without opening the launcher's checkpoints.
    /// `NESTGUARD_RESULT_LAUNCHER_UNKNOWN_CONTAINER` for a container the
    /// launcher does not manage; `NESTGUARD_RESULT_CHECKPOINT` when the
    /// checkpoint is missing, torn or too large. Added in ABI 0.4.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_container_config(
        launcher: *const nestguard_launcher,
        id: *const u8,
        id_len: usize,
        out: *mut *mut nestguard_bytes,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            let l = try_launcher!(launcher);
            try_not_null!(out, "out");
            let id = try_id!(id, id_len);
            let config = try_abi!(l.container_config(&id));
            write_out(out, nestguard_bytes::into_raw(prost::Message::encode_to_vec(&config)));
            nestguard_result::Ok
        }
    }

    /// Launches a container and writes its supervisor's pid to `*out_pid`.
    ///
    /// `id` is a serialized `mesos.ContainerID`; a nested id needs a running
    /// parent. `launch_info` is a serialized `mesos.slave.ContainerLaunchInfo`
    /// (command, environment, user, rlimits, mounts, namespaces);
    /// `container_info` (may be NULL with length 0) is a serialized
    /// `mesos.ContainerInfo` supplying `hostname` and
    /// `linux_info.share_pid_namespace`. `sandbox` is the sandbox directory;
    /// for a nested container it may be empty, meaning
    /// `<parent sandbox>/containers/<id>`. Blocks until the container runs
    /// and its pid is checkpointed (a few milliseconds).
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_launch(
        launcher: *const nestguard_launcher,
        id: *const u8,
        id_len: usize,
        launch_info: *const u8,
        launch_info_len: usize,
        container_info: *const u8,
        container_info_len: usize,
        sandbox: *const std::ffi::c_char,
        sandbox_len: usize,
        out_pid: *mut i32,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            launch(launcher, id, id_len, launch_info, launch_info_len, container_info,
                container_info_len, sandbox, sandbox_len, std::ptr::null(), out_pid)
        }
    }

    /// `nestguard_launcher_launch` with the command's stdio given as
    /// descriptors (Mesos' `ContainerIO`): `io` (may be NULL: the sandbox's
    /// `stdout`/`stderr` files, as `nestguard_launcher_launch`) names the
    /// descriptors that become the command's fds 0, 1 and 2 — pipe ends or
    /// sockets, or with `NESTGUARD_CONTAINER_IO_TTY` the slave side of a
    /// pseudo-terminal (each of the three), which becomes the command's
    /// controlling terminal. Nothing is opened by path. The descriptors are
    /// borrowed: the launcher duplicates them for the container, and the
    /// caller closes its own copies when the call returns (the reader sees
    /// EOF once the container's processes are gone). Since ABI 0.3.
    ///
    /// Each descriptor must be open, not `O_PATH`, and a pipe, a socket, a
    /// character device or a regular file (never a directory); with
    /// `NESTGUARD_CONTAINER_IO_TTY` the three must be one pty's slave (the
    /// same device; a master is refused). Otherwise:
    /// `NESTGUARD_RESULT_INVALID_ARGUMENT`, and nothing runs. Fds 0–2 are
    /// accepted like any other, but they hand the container the caller's own
    /// stdio (the agent's terminal or log): pass descriptors made for it.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_launch_with_io(
        launcher: *const nestguard_launcher,
        id: *const u8,
        id_len: usize,
        launch_info: *const u8,
        launch_info_len: usize,
        container_info: *const u8,
        container_info_len: usize,
        sandbox: *const std::ffi::c_char,
        sandbox_len: usize,
        io: *const nestguard_container_io,
        out_pid: *mut i32,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            launch(launcher, id, id_len, launch_info, launch_info_len, container_info,
                container_info_len, sandbox, sandbox_len, io, out_pid)
        }
    }

    /// Writes a pollable fd (a pidfd: readable once the container exited) to
    /// `*out_fd`, or -1 if the container already exited. The fd belongs to
    /// the launcher: do not close it; it stays valid until the container is
    /// destroyed or the launcher freed.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_wait_fd(
        launcher: *const nestguard_launcher,
        id: *const u8,
        id_len: usize,
        out_fd: *mut i32,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            let l = try_launcher!(launcher);
            try_not_null!(out_fd, "out_fd");
            let id = try_id!(id, id_len);
            let fd = try_abi!(l.wait_fd(&id));
            write_out(out_fd, fd.unwrap_or(-1));
            nestguard_result::Ok
        }
    }

    /// Waits for the container to exit, up to `timeout_ms` milliseconds (a
    /// negative value waits forever; 0 polls), and writes its raw wait status
    /// to `*out_status` (exit 1 → 256, killed by SIGKILL → 9; unknown → 9).
    /// Returns `NESTGUARD_RESULT_LAUNCHER_TIMEOUT` if it is still running.
    /// Works after a restart (recovered containers, also those that exited
    /// meanwhile) and for destroyed nested containers.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_wait(
        launcher: *const nestguard_launcher,
        id: *const u8,
        id_len: usize,
        timeout_ms: i64,
        out_status: *mut i32,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            let l = try_launcher!(launcher);
            try_not_null!(out_status, "out_status");
            let id = try_id!(id, id_len);
            let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
            match try_abi!(l.wait(&id, timeout)) {
                Some(status) => {
                    write_out(out_status, status);
                    nestguard_result::Ok
                }
                None => fail(
                    nestguard_result::LauncherTimeout,
                    format!("container '{}' is still running after {timeout_ms} ms", crate::container_id::to_dotted(&id)),
                ),
            }
        }
    }

    /// Sends `signal` to the container's supervisor, which forwards it to the
    /// command. `*out_sent` (may be NULL) is false if the container had
    /// already exited.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_kill(
        launcher: *const nestguard_launcher,
        id: *const u8,
        id_len: usize,
        signal: i32,
        out_sent: *mut bool,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            let l = try_launcher!(launcher);
            let id = try_id!(id, id_len);
            let sent = try_abi!(l.kill(&id, signal));
            if !out_sent.is_null() {
                write_out(out_sent, sent);
            }
            nestguard_result::Ok
        }
    }

    /// Destroys the container and everything nested in it (children first),
    /// waits until all their processes are gone, checkpoints `termination`
    /// for nested containers and removes a top-level container's runtime
    /// directory. Idempotent. `*out_status` (may be NULL) receives the raw
    /// status of the container, or -1 if it was unknown.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_destroy(
        launcher: *const nestguard_launcher,
        id: *const u8,
        id_len: usize,
        out_status: *mut i32,
    ) -> nestguard_result {
        ffi_panic_boundary! {
            let l = try_launcher!(launcher);
            let id = try_id!(id, id_len);
            let status = try_abi!(l.destroy(&id));
            if !out_status.is_null() {
                write_out(out_status, status.unwrap_or(-1));
            }
            nestguard_result::Ok
        }
    }

    /// Frees the launcher. Running containers keep running (their statuses
    /// are checkpointed; a new launcher recovers them). NULL is a no-op; must
    /// not be called twice or while another thread uses the launcher.
    #[unsafe(no_mangle)]
    pub extern "C" fn nestguard_launcher_free(launcher: *mut nestguard_launcher) {
        ffi_panic_boundary! {
            free_handle(launcher)
        }
    }
}

/// Flag of `nestguard_container_io`: the three descriptors are the slave
/// side of a pseudo-terminal.
pub const NESTGUARD_CONTAINER_IO_TTY: u32 = 1;

/// Flag of `nestguard_container_io`: the container is a debug session's
/// (Mesos' `ContainerClass` DEBUG). Its `ContainerConfig` checkpoint then
/// says so (`container_class`), so that a restarted agent, whose ends of
/// the descriptors died with it, can destroy it as Mesos does. Since ABI
/// 0.3.
pub const NESTGUARD_CONTAINER_IO_DEBUG: u32 = 2;

/// The command's stdio for `nestguard_launcher_launch_with_io`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nestguard_container_io {
    /// Becomes the command's fd 0.
    pub stdin_fd: i32,
    /// Becomes the command's fd 1.
    pub stdout_fd: i32,
    /// Becomes the command's fd 2.
    pub stderr_fd: i32,
    /// `NESTGUARD_CONTAINER_IO_TTY` and `NESTGUARD_CONTAINER_IO_DEBUG`, or 0.
    pub flags: u32,
}

/// Shared body of the two launch calls (inside their panic boundaries).
#[allow(clippy::too_many_arguments)]
fn launch(
    launcher: *const nestguard_launcher,
    id: *const u8,
    id_len: usize,
    launch_info: *const u8,
    launch_info_len: usize,
    container_info: *const u8,
    container_info_len: usize,
    sandbox: *const std::ffi::c_char,
    sandbox_len: usize,
    io: *const nestguard_container_io,
    out_pid: *mut i32,
) -> nestguard_result {
    let l = try_launcher!(launcher);
    try_not_null!(out_pid, "out_pid");
    let id = try_id!(id, id_len);
    let info = try_decode!(
        ContainerLaunchInfo,
        launch_info,
        launch_info_len,
        "launch_info"
    );
    let container = if container_info_len == 0 {
        None
    } else {
        Some(try_decode!(
            ContainerInfo,
            container_info,
            container_info_len,
            "container_info"
        ))
    };
    let sandbox = try_str!(sandbox, sandbox_len, "sandbox");
    let sandbox = if !sandbox.is_empty() {
        PathBuf::from(sandbox)
    } else {
        let Some(parent) = id.parent.as_deref() else {
            return fail(
                nestguard_result::InvalidArgument,
                "argument `sandbox` must not be empty for a top-level container",
            );
        };
        match l.sandbox(parent) {
            Some(parent_sandbox) => paths::nested_sandbox(&parent_sandbox, &id),
            None => {
                return fail_with(&LauncherError::ParentNotRunning(
                    crate::container_id::to_dotted(parent),
                ));
            }
        }
    };
    // SAFETY: a non-null `io` points to a caller's nestguard_container_io.
    let io = match unsafe { io.as_ref() } {
        None => None,
        Some(io) => match container_io(io) {
            Ok(io) => Some(io),
            Err(text) => return fail(nestguard_result::InvalidArgument, text),
        },
    };
    let pid = try_abi!(l.launch_with_io(&id, &info, container.as_ref(), &sandbox, io.as_ref()));
    write_out(out_pid, pid);
    nestguard_result::Ok
}

/// The descriptors of `io`, borrowed for the call.
fn container_io(io: &nestguard_container_io) -> Result<ContainerIo<'_>, String> {
    if io.flags & !(NESTGUARD_CONTAINER_IO_TTY | NESTGUARD_CONTAINER_IO_DEBUG) != 0 {
        return Err(format!("unknown container io flags {:#x}", io.flags));
    }
    let fd = |fd: i32, name: &str| {
        if fd < 0 {
            return Err(format!("`io.{name}` is not a descriptor: {fd}"));
        }
        // SAFETY: the caller keeps the descriptor open for the call; the
        // borrow does not outlive `io`, which the call does not keep.
        Ok(unsafe { BorrowedFd::borrow_raw(fd) })
    };
    Ok(ContainerIo {
        stdin: fd(io.stdin_fd, "stdin_fd")?,
        stdout: fd(io.stdout_fd, "stdout_fd")?,
        stderr: fd(io.stderr_fd, "stderr_fd")?,
        tty: io.flags & NESTGUARD_CONTAINER_IO_TTY != 0,
        debug: io.flags & NESTGUARD_CONTAINER_IO_DEBUG != 0,
    })
}

/// Shared body of the two constructors (inside their panic boundaries).
fn new_launcher(
    runtime_dir: *const std::ffi::c_char,
    runtime_dir_len: usize,
    helper: *const std::ffi::c_char,
    helper_len: usize,
    flags: u32,
    isolator: *const nestguard_isolator,
    out: *mut *mut nestguard_launcher,
) -> nestguard_result {
    try_not_null!(out, "out");
    let runtime_dir = try_str!(runtime_dir, runtime_dir_len, "runtime_dir");
    let helper = try_str!(helper, helper_len, "helper");
    if runtime_dir.is_empty() {
        return fail(
            nestguard_result::InvalidArgument,
            "argument `runtime_dir` must not be empty",
        );
    }
    if flags & !(NESTGUARD_LAUNCHER_POSIX | NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE)
        != 0
    {
        return fail(
            nestguard_result::InvalidArgument,
            format!("unknown launcher flags {flags:#x}"),
        );
    }
    let options = LauncherOptions {
        runtime_dir: PathBuf::from(runtime_dir),
        helper: if helper.is_empty() {
            default_helper_path()
        } else {
            PathBuf::from(helper)
        },
        mode: if flags & NESTGUARD_LAUNCHER_POSIX != 0 {
            Mode::Posix
        } else {
            Mode::Linux
        },
        allow_sharing_agent_pid_namespace: flags
            & NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE
            != 0,
        defences: Default::default(),
        user_namespaces: handle_ref(isolator).and_then(|i| i.composite().user_namespaces()),
    };
    let cgroups = handle_ref(isolator).and_then(|i| i.composite().cgroups());
    let inner = match cgroups {
        Some(cg) => try_abi!(Launcher::with_cgroups(options, cg)),
        None => try_abi!(Launcher::new(options)),
    };
    write_out(out, into_handle(nestguard_launcher { inner }));
    nestguard_result::Ok
}
