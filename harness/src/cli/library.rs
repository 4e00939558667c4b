//! Loading `libnestguard.so` with libloading, as a host would.
//!
//! Hosts (the simulated agent, the smoke run) go through the C ABI only, so
//! that what they exercise is exactly what a Mesos agent loads.

// Loading a shared library and calling its C functions cannot be done in
// safe Rust; this module and `agent/abi/` are the harness's only unsafe
// code, each call with its SAFETY comment.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::agent::bindings::{
    NESTGUARD_RESULT_BUFFER_TOO_SMALL, NESTGUARD_RESULT_OK, Nestguard, nestguard_bytes,
};

/// File name of the shared library.
pub const LIBRARY_FILE: &str = "libnestguard.so";

/// The library's default location: next to the running executable, or in
/// its `deps/` directory where `cargo test` leaves it; the newer wins, so a
/// stale copy from an older build is never picked over a fresh one.
pub fn default_path() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the running executable")?;
    let dir = exe
        .parent()
        .context("the executable has no parent directory")?;
    let candidates = [dir.join(LIBRARY_FILE), dir.join("deps").join(LIBRARY_FILE)];
    let newest = candidates
        .iter()
        .filter_map(|p| Some((std::fs::metadata(p).ok()?.modified().ok()?, p)))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, p)| p.clone());
    newest.with_context(|| format!("{LIBRARY_FILE} not found next to {}", exe.display()))
}

/// A loaded libnestguard.so and its function table.
pub struct NestguardLibrary {
    functions: Nestguard,
    path: PathBuf,
}

impl NestguardLibrary {
    /// Loads the library and checks its ABI major version against ours.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        // SAFETY: loading runs the library's initializers; libnestguard.so has
        // none beyond Rust's runtime setup. The table's signatures are
        // bindgen's rendering of include/nestguard.h, the header the library
        // is built from; its ABI version is checked next.
        let functions = unsafe { Nestguard::new(path) }.with_context(|| {
            format!(
                "loading {} (it must export every function of include/nestguard.h)",
                path.display()
            )
        })?;
        let this = NestguardLibrary {
            functions,
            path: path.to_path_buf(),
        };
        let version = this.abi_version();
        // The version this host was built against: the header's, through the
        // bindings generated from it.
        let ours = super::agent::bindings::NESTGUARD_ABI_VERSION;
        if !compatible(version, ours) {
            bail!(
                "{} has C ABI {:#08x}, this host needs {:#08x}",
                path.display(),
                version,
                ours
            );
        }
        Ok(this)
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The library's functions, as declared in include/nestguard.h.
    pub fn functions(&self) -> &Nestguard {
        &self.functions
    }

    /// `nestguard_abi_version()`.
    pub fn abi_version(&self) -> u32 {
        // SAFETY: no arguments, no preconditions.
        unsafe { self.functions.nestguard_abi_version() }
    }

    /// The calling thread's last error text (`nestguard_error_message`).
    pub fn last_error(&self) -> String {
        let mut buf = vec![0u8; 1024];
        let mut needed = 0usize;
        // SAFETY: buffer and out pointer are valid for the call.
        let mut rc = unsafe {
            self.functions
                .nestguard_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut needed)
        };
        if rc == NESTGUARD_RESULT_BUFFER_TOO_SMALL {
            buf.resize(needed, 0);
            // SAFETY: as above, with the size the library asked for.
            rc = unsafe {
                self.functions.nestguard_error_message(
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut needed,
                )
            };
        }
        if rc != NESTGUARD_RESULT_OK || needed == 0 {
            return String::new();
        }
        buf.truncate(needed - 1);
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// Copies and frees a `nestguard_bytes` handle (NULL: no bytes).
    pub fn take_bytes(&self, bytes: *mut nestguard_bytes) -> anyhow::Result<Vec<u8>> {
        if bytes.is_null() {
            return Ok(Vec::new());
        }
        let f = &self.functions;
        // SAFETY: `bytes` is a live handle from the library; data/len describe
        // its contents until it is freed, which happens after the copy.
        let copy = unsafe {
            let (data, len) = (f.nestguard_bytes_data(bytes), f.nestguard_bytes_len(bytes));
            if len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(data, len).to_vec()
            }
        };
        // SAFETY: freed exactly once.
        unsafe { f.nestguard_bytes_free(bytes) };
        Ok(copy)
    }

    /// `nestguard_container_id_parse`: the ContainerID (protobuf bytes) a
    /// dotted ID names, or the call's result code.
    pub fn container_id_parse(&self, text: &str) -> anyhow::Result<Result<Vec<u8>, u32>> {
        let mut out = std::ptr::null_mut();
        // SAFETY: valid text slice and out pointer.
        let rc = unsafe {
            self.functions
                .nestguard_container_id_parse(text.as_ptr().cast(), text.len(), &mut out)
        };
        if rc != NESTGUARD_RESULT_OK {
            return Ok(Err(rc));
        }
        Ok(Ok(self.take_bytes(out)?))
    }

    /// `nestguard_container_id_render`: the dotted text of a ContainerID
    /// (protobuf bytes), or the call's result code.
    pub fn container_id_render(&self, id: &[u8]) -> anyhow::Result<Result<String, u32>> {
        let mut buf = [0u8; 256];
        let mut n = 0usize;
        // SAFETY: valid input slice, buffer and out pointer.
        let rc = unsafe {
            self.functions.nestguard_container_id_render(
                id.as_ptr(),
                id.len(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut n,
            )
        };
        if rc != NESTGUARD_RESULT_OK {
            return Ok(Err(rc));
        }
        // `n` counts the terminating NUL.
        let text = buf.get(..n.saturating_sub(1)).unwrap_or_default();
        Ok(Ok(String::from_utf8_lossy(text).into_owned()))
    }

    /// `nestguard_abi_selftest_panic`: the result code of a call that
    /// panics inside the library (its panic boundary must catch it).
    pub fn abi_selftest_panic(&self) -> anyhow::Result<u32> {
        // SAFETY: no arguments, no preconditions.
        Ok(unsafe { self.functions.nestguard_abi_selftest_panic() })
    }
}

/// Whether a library of ABI `loaded` serves a host built against `built`
/// (both packed as `(major << 16) | (minor << 8) | patch`): the same major,
/// and at least the host's minor. A changed struct layout bumps the major,
/// so a host built against an older layout is refused, never handed a
/// struct the library reads differently.
fn compatible(loaded: u32, built: u32) -> bool {
    loaded >> 16 == built >> 16 && (loaded >> 8) & 0xff >= (built >> 8) & 0xff
}

#[cfg(test)]
mod version_tests {
    use super::compatible;

    const fn v(major: u32, minor: u32, patch: u32) -> u32 {
        (major << 16) | (minor << 8) | patch
    }

    #[test]
    fn a_library_serves_hosts_of_its_major_and_older_minors_only() {
        assert!(compatible(v(1, 0, 0), v(1, 0, 0)));
        assert!(compatible(v(1, 2, 0), v(1, 1, 3)));
        assert!(!compatible(v(1, 0, 0), v(1, 1, 0)));
        // ABI 1.0 changed `nestguard_object_view`: a 0.x host is refused.
        assert!(!compatible(v(1, 0, 0), v(0, 4, 0)));
        assert!(!compatible(v(0, 4, 0), v(1, 0, 0)));
    }
}
