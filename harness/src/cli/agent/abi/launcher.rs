//! `nestguard_launcher`: launches, waits for, signals and destroys
//! containers, and recovers them after a restart.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust (see `mod.rs`); each call has its SAFETY comment.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use prost::Message;

use super::{Abi, AbiFailure, Handle, Isolator, codes, text};
use crate::cli::agent::bindings::{
    self as ffi, NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE, NESTGUARD_LAUNCHER_POSIX,
};
use nestguard::proto::mesos::{self, slave};

/// A launched command's stdin, stdout and stderr (`nestguard_container_io`).
#[derive(Clone, Copy)]
pub struct LaunchIo<'a> {
    /// Becomes the command's fd 0.
    pub stdin: BorrowedFd<'a>,
    /// Becomes the command's fd 1.
    pub stdout: BorrowedFd<'a>,
    /// Becomes the command's fd 2.
    pub stderr: BorrowedFd<'a>,
    /// The three are a pty's slave: the command's controlling terminal.
    pub tty: bool,
    /// The container is a debug session's (checkpointed as class DEBUG).
    pub debug: bool,
}

/// `nestguard_launcher`.
pub struct Launcher {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_launcher>,
}

impl Launcher {
    /// Creates a launcher on `runtime_dir`; `posix` selects the posix
    /// launcher; `allow_sharing_pid` lets top-level containers share the
    /// agent's pid namespace.
    pub fn create(
        abi: &Arc<Abi>,
        runtime_dir: &Path,
        helper: Option<&Path>,
        posix: bool,
        allow_sharing_pid: bool,
        isolator: Option<&Isolator>,
    ) -> anyhow::Result<Launcher> {
        let rd = runtime_dir.to_str().context("runtime dir is not UTF-8")?;
        let helper = helper
            .map(|p| p.to_str().context("helper path is not UTF-8"))
            .transpose()?
            .unwrap_or("");
        let (rp, rn) = text(rd);
        let (hp, hn) = text(helper);
        let mut out = std::ptr::null_mut();
        let iso = isolator.map_or(std::ptr::null(), |i| i.handle.0.cast_const());
        let mut flags = 0;
        if posix {
            flags |= NESTGUARD_LAUNCHER_POSIX;
        }
        if allow_sharing_pid {
            flags |= NESTGUARD_LAUNCHER_ALLOW_SHARING_AGENT_PID_NAMESPACE;
        }
        // SAFETY: valid texts, live isolator handle (or NULL), out pointer.
        let code = unsafe {
            abi.f()
                .nestguard_launcher_new_with_isolator(rp, rn, hp, hn, flags, iso, &mut out)
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("creating the launcher")?;
        Ok(Launcher {
            abi: abi.clone(),
            handle: Handle(out),
        })
    }

    /// Recovers after a restart; returns the launcher's answer (orphans).
    pub fn recover(
        &self,
        known: &[mesos::ContainerId],
    ) -> Result<slave::ContainerRecoverInfo, AbiFailure> {
        let info = slave::ContainerRecoverInfo {
            known_container_ids: known.to_vec(),
            ..Default::default()
        }
        .encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_launcher_recover(
                self.handle.0,
                info.as_ptr(),
                info.len(),
                &mut out,
            )
        };
        self.abi.check(code)?;
        let bytes = self.abi.take(out)?;
        slave::ContainerRecoverInfo::decode(bytes.as_slice())
            .map_err(|e| AbiFailure::undecodable("recover reply", e))
    }

    /// The `ContainerConfig` the launcher checkpointed at `id`'s launch
    /// (sandbox, user, class): the agent never reads the launcher's files.
    pub fn container_config(
        &self,
        id: &mesos::ContainerId,
    ) -> Result<slave::ContainerConfig, AbiFailure> {
        let i = id.encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_launcher_container_config(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                &mut out,
            )
        };
        self.abi.check(code)?;
        let bytes = self.abi.take(out)?;
        slave::ContainerConfig::decode(bytes.as_slice())
            .map_err(|e| AbiFailure::undecodable("container config", e))
    }

    /// Launches a container; returns its supervisor's pid. With `io`, the
    /// command's stdio is those descriptors (borrowed for the call).
    pub fn launch(
        &self,
        id: &mesos::ContainerId,
        info: &slave::ContainerLaunchInfo,
        container: Option<&mesos::ContainerInfo>,
        sandbox: &Path,
        io: Option<LaunchIo<'_>>,
    ) -> Result<i32, AbiFailure> {
        let (i, l) = (id.encode_to_vec(), info.encode_to_vec());
        let c = container.map(Message::encode_to_vec).unwrap_or_default();
        let s = sandbox.to_string_lossy();
        let (sp, sn) = text(&s);
        let io = io.map(|io| ffi::nestguard_container_io {
            stdin_fd: io.stdin.as_raw_fd(),
            stdout_fd: io.stdout.as_raw_fd(),
            stderr_fd: io.stderr.as_raw_fd(),
            flags: if io.tty {
                ffi::NESTGUARD_CONTAINER_IO_TTY
            } else {
                0
            } | if io.debug {
                ffi::NESTGUARD_CONTAINER_IO_DEBUG
            } else {
                0
            },
        });
        let io_ptr = io.as_ref().map_or(std::ptr::null(), |io| {
            io as *const ffi::nestguard_container_io
        });
        let mut pid = 0;
        // SAFETY: live handle, valid buffers, out pointer; `io`'s
        // descriptors are borrowed for the call.
        let code = unsafe {
            self.abi.f().nestguard_launcher_launch_with_io(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                l.as_ptr(),
                l.len(),
                c.as_ptr(),
                c.len(),
                sp,
                sn,
                io_ptr,
                &mut pid,
            )
        };
        self.abi.check(code)?;
        Ok(pid)
    }

    /// Waits up to `timeout_ms` (negative: forever) for the raw wait status.
    pub fn wait(
        &self,
        id: &mesos::ContainerId,
        timeout_ms: i64,
    ) -> Result<Option<i32>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut status = 0;
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_launcher_wait(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                timeout_ms,
                &mut status,
            )
        };
        if code == codes::LAUNCHER_TIMEOUT {
            return Ok(None);
        }
        self.abi.check(code)?;
        Ok(Some(status))
    }

    /// Sends a signal; false if the container had already exited.
    pub fn kill(&self, id: &mesos::ContainerId, signal: i32) -> Result<bool, AbiFailure> {
        let i = id.encode_to_vec();
        let mut sent = false;
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_launcher_kill(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                signal,
                &mut sent,
            )
        };
        self.abi.check(code)?;
        Ok(sent)
    }

    /// Destroys the container and its subtree; returns its raw status if known.
    pub fn destroy(&self, id: &mesos::ContainerId) -> Result<Option<i32>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut status = -1;
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_launcher_destroy(self.handle.0, i.as_ptr(), i.len(), &mut status)
        };
        self.abi.check(code)?;
        Ok((status >= 0).then_some(status))
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_launcher_free(self.handle.0) }
    }
}
