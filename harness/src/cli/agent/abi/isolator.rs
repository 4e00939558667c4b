//! `nestguard_isolator` and `nestguard_isolator_watch`: the
//! io_nestguard_Isolator module's container lifecycle and its limitation
//! watch.

// Calls into the loaded libnestguard.so through C function pointers cannot
// be safe Rust (see `mod.rs`); each call has its SAFETY comment.
#![allow(unsafe_code)]

use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

use anyhow::Context;
use prost::Message;

use super::{Abi, AbiFailure, Handle};
use crate::cli::agent::bindings::{self as ffi, nestguard_bytes};
use nestguard::proto::mesos::{self, slave};

/// `nestguard_isolator`: the io_nestguard_Isolator module.
pub struct Isolator {
    abi: Arc<Abi>,
    pub(super) handle: Handle<ffi::nestguard_isolator>,
}

impl Isolator {
    /// Creates the isolators from the module's manifest parameters.
    pub fn create(abi: &Arc<Abi>, parameters: &[mesos::Parameter]) -> anyhow::Result<Isolator> {
        let bytes = mesos::Parameters {
            parameter: parameters.to_vec(),
        }
        .encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: valid buffer and out pointer.
        let code = unsafe {
            abi.f()
                .nestguard_isolator_new(bytes.as_ptr(), bytes.len(), &mut out)
        };
        abi.check(code)
            .map_err(anyhow::Error::new)
            .context("creating io_nestguard_Isolator")?;
        Ok(Isolator {
            abi: abi.clone(),
            handle: Handle(out),
        })
    }

    /// `recover(states, orphans)`.
    pub fn recover(&self, info: &slave::ContainerRecoverInfo) -> Result<(), AbiFailure> {
        let bytes = info.encode_to_vec();
        // SAFETY: live handle, valid buffer.
        self.abi.check(unsafe {
            self.abi
                .f()
                .nestguard_isolator_recover(self.handle.0, bytes.as_ptr(), bytes.len())
        })
    }

    /// `prepare(id, config)`.
    pub fn prepare(
        &self,
        id: &mesos::ContainerId,
        config: &slave::ContainerConfig,
    ) -> Result<Option<slave::ContainerLaunchInfo>, AbiFailure> {
        let (i, c) = (id.encode_to_vec(), config.encode_to_vec());
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffers, out pointer.
        let code = unsafe {
            self.abi.f().nestguard_isolator_prepare(
                self.handle.0,
                i.as_ptr(),
                i.len(),
                c.as_ptr(),
                c.len(),
                &mut out,
            )
        };
        self.abi.check(code)?;
        if out.is_null() {
            return Ok(None);
        }
        let bytes = self.abi.take(out)?;
        slave::ContainerLaunchInfo::decode(bytes.as_slice())
            .map(Some)
            .map_err(|e| AbiFailure::undecodable("launch info", e))
    }

    /// `isolate(id, pid)`.
    pub fn isolate(&self, id: &mesos::ContainerId, pid: u32) -> Result<(), AbiFailure> {
        let i = id.encode_to_vec();
        // SAFETY: live handle, valid buffer.
        self.abi.check(unsafe {
            self.abi
                .f()
                .nestguard_isolator_isolate(self.handle.0, i.as_ptr(), i.len(), pid)
        })
    }

    /// `watch(id)`.
    pub fn watch(&self, id: &mesos::ContainerId) -> Result<Watch, AbiFailure> {
        let i = id.encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_watch_new(self.handle.0, i.as_ptr(), i.len(), &mut out)
        };
        self.abi.check(code)?;
        Ok(Watch {
            abi: self.abi.clone(),
            handle: Handle(out),
        })
    }

    /// `usage(id)`: the container's resource statistics (None: the
    /// isolators report nothing).
    pub fn usage(
        &self,
        id: &mesos::ContainerId,
    ) -> Result<Option<mesos::ResourceStatistics>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_usage(self.handle.0, i.as_ptr(), i.len(), &mut out)
        };
        self.abi.check(code)?;
        self.decode_out(out, "resource statistics")
    }

    /// `status(id)`: the container's status (None: the isolators report
    /// nothing).
    pub fn status(
        &self,
        id: &mesos::ContainerId,
    ) -> Result<Option<mesos::ContainerStatus>, AbiFailure> {
        let i = id.encode_to_vec();
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, valid buffer, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_status(self.handle.0, i.as_ptr(), i.len(), &mut out)
        };
        self.abi.check(code)?;
        self.decode_out(out, "container status")
    }

    fn decode_out<M: Message + Default>(
        &self,
        out: *mut nestguard_bytes,
        what: &str,
    ) -> Result<Option<M>, AbiFailure> {
        if out.is_null() {
            return Ok(None);
        }
        let bytes = self.abi.take(out)?;
        M::decode(bytes.as_slice())
            .map(Some)
            .map_err(|e| AbiFailure::undecodable(what, e))
    }

    /// `cleanup(id)`.
    pub fn cleanup(&self, id: &mesos::ContainerId) -> Result<(), AbiFailure> {
        let i = id.encode_to_vec();
        // SAFETY: live handle, valid buffer.
        self.abi.check(unsafe {
            self.abi
                .f()
                .nestguard_isolator_cleanup(self.handle.0, i.as_ptr(), i.len())
        })
    }
}

impl Drop for Isolator {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_isolator_free(self.handle.0) }
    }
}

/// A container's limitation watch (one thread at a time).
pub struct Watch {
    abi: Arc<Abi>,
    handle: Handle<ffi::nestguard_isolator_watch>,
}

impl Watch {
    /// Waits up to `timeout_ms` for the watch's fd, then checks for a limitation.
    pub fn poll(
        &mut self,
        timeout_ms: i32,
    ) -> Result<Option<slave::ContainerLimitation>, AbiFailure> {
        // SAFETY: live handle.
        let fd = unsafe { self.abi.f().nestguard_isolator_watch_fd(self.handle.0) };
        if fd >= 0 {
            // SAFETY: the watch owns `fd` and keeps it open while the handle
            // lives; it is borrowed for this poll only.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            // Negative: wait until the fd is ready.
            let timeout = u64::try_from(timeout_ms)
                .ok()
                .and_then(|ms| Timespec::try_from(Duration::from_millis(ms)).ok());
            // A failed or interrupted poll only means the check below runs
            // sooner: it reads the watch's state, not the fd.
            let _ = rustix::event::poll(&mut fds, timeout.as_ref());
        }
        let mut out = std::ptr::null_mut();
        // SAFETY: live handle, out pointer.
        let code = unsafe {
            self.abi
                .f()
                .nestguard_isolator_watch_check(self.handle.0, &mut out)
        };
        self.abi.check(code)?;
        if out.is_null() {
            return Ok(None);
        }
        let bytes = self.abi.take(out)?;
        slave::ContainerLimitation::decode(bytes.as_slice())
            .map(Some)
            .map_err(|e| AbiFailure::undecodable("limitation", e))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: freed once.
        unsafe { self.abi.f().nestguard_isolator_watch_free(self.handle.0) }
    }
}
