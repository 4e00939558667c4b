//! Loading `libnestguard.so` with libloading, as a host would.
//!
//! Hosts (the simulated agent, the smoke run) go through the C ABI only, so
//! that what they exercise is exactly what a Mesos agent loads.

// Loading a shared library and calling its C functions cannot be done in
// safe Rust; this module and `agent/abi.rs` are the harness's only unsafe
// code, each call with its SAFETY comment.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use libloading::{Library, Symbol};

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

/// A loaded libnestguard.so.
pub struct NestguardLibrary {
    lib: Library,
    path: PathBuf,
}

impl NestguardLibrary {
    /// Loads the library and checks its ABI major version against ours.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        // SAFETY: loading runs the library's initializers; libnestguard.so has
        // none beyond Rust's runtime setup.
        let lib =
            unsafe { Library::new(path) }.with_context(|| format!("loading {}", path.display()))?;
        let this = NestguardLibrary {
            lib,
            path: path.to_path_buf(),
        };
        let version = this.abi_version()?;
        let ours = nestguard::abi::version::ABI_VERSION;
        if version >> 16 != ours >> 16 || (version >> 8) & 0xff < (ours >> 8) & 0xff {
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

    /// Looks up an exported function.
    ///
    /// # Safety
    /// `T` must be the function's exact C signature from `include/nestguard.h`.
    pub unsafe fn symbol<T>(&self, name: &str) -> anyhow::Result<Symbol<'_, T>> {
        // SAFETY: forwarded to the caller.
        unsafe { self.lib.get::<T>(name.as_bytes()) }
            .with_context(|| format!("symbol {name} in {}", self.path.display()))
    }

    /// `nestguard_abi_version()`.
    pub fn abi_version(&self) -> anyhow::Result<u32> {
        // SAFETY: signature from the header.
        let f = unsafe { self.symbol::<unsafe extern "C" fn() -> u32>("nestguard_abi_version")? };
        // SAFETY: no arguments, no preconditions.
        Ok(unsafe { f() })
    }

    /// The calling thread's last error text (`nestguard_error_message`).
    pub fn last_error(&self) -> String {
        type ErrorMessage = unsafe extern "C" fn(*mut u8, usize, *mut usize) -> u32;
        // SAFETY: signature from the header.
        let Ok(f) = (unsafe { self.symbol::<ErrorMessage>("nestguard_error_message") }) else {
            return String::from("(nestguard_error_message not found)");
        };
        let mut buf = vec![0u8; 1024];
        let mut needed = 0usize;
        // SAFETY: buffer and out pointer are valid for the call.
        let mut rc = unsafe { f(buf.as_mut_ptr(), buf.len(), &mut needed) };
        if rc == 5 {
            buf.resize(needed, 0);
            // SAFETY: as above, with the size the library asked for.
            rc = unsafe { f(buf.as_mut_ptr(), buf.len(), &mut needed) };
        }
        if rc != 0 || needed == 0 {
            return String::new();
        }
        buf.truncate(needed - 1);
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// Copies and frees a `nestguard_bytes` handle.
    pub fn take_bytes(&self, bytes: *mut c_void) -> anyhow::Result<Vec<u8>> {
        type Data = unsafe extern "C" fn(*const c_void) -> *const u8;
        type Len = unsafe extern "C" fn(*const c_void) -> usize;
        type Free = unsafe extern "C" fn(*mut c_void);
        // SAFETY: signatures from the header.
        let (data, len, free) = unsafe {
            (
                self.symbol::<Data>("nestguard_bytes_data")?,
                self.symbol::<Len>("nestguard_bytes_len")?,
                self.symbol::<Free>("nestguard_bytes_free")?,
            )
        };
        // SAFETY: `bytes` is a live handle from the library; data/len describe
        // its contents until it is freed, which happens after the copy.
        let copy = unsafe { std::slice::from_raw_parts(data(bytes), len(bytes)).to_vec() };
        // SAFETY: freed exactly once.
        unsafe { free(bytes) };
        Ok(copy)
    }

    /// `nestguard_container_id_parse`: the ContainerID (protobuf bytes) a
    /// dotted ID names, or the call's result code.
    pub fn container_id_parse(&self, text: &str) -> anyhow::Result<Result<Vec<u8>, u32>> {
        type Parse = unsafe extern "C" fn(*const u8, usize, *mut *mut c_void) -> u32;
        // SAFETY: signature from the header.
        let parse = unsafe { self.symbol::<Parse>("nestguard_container_id_parse")? };
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid text slice and out pointer.
        let rc = unsafe { parse(text.as_ptr(), text.len(), &mut out) };
        if rc != 0 {
            return Ok(Err(rc));
        }
        Ok(Ok(self.take_bytes(out)?))
    }

    /// `nestguard_container_id_render`: the dotted text of a ContainerID
    /// (protobuf bytes), or the call's result code.
    pub fn container_id_render(&self, id: &[u8]) -> anyhow::Result<Result<String, u32>> {
        type Render = unsafe extern "C" fn(*const u8, usize, *mut u8, usize, *mut usize) -> u32;
        // SAFETY: signature from the header.
        let render = unsafe { self.symbol::<Render>("nestguard_container_id_render")? };
        let mut buf = [0u8; 256];
        let mut n = 0usize;
        // SAFETY: valid input slice, buffer and out pointer.
        let rc = unsafe { render(id.as_ptr(), id.len(), buf.as_mut_ptr(), buf.len(), &mut n) };
        if rc != 0 {
            return Ok(Err(rc));
        }
        // `n` counts the terminating NUL.
        let text = buf.get(..n.saturating_sub(1)).unwrap_or_default();
        Ok(Ok(String::from_utf8_lossy(text).into_owned()))
    }

    /// `nestguard_abi_selftest_panic`: the result code of a call that
    /// panics inside the library (its panic boundary must catch it).
    pub fn abi_selftest_panic(&self) -> anyhow::Result<u32> {
        type SelftestPanic = unsafe extern "C" fn() -> u32;
        // SAFETY: signature from the header.
        let selftest = unsafe { self.symbol::<SelftestPanic>("nestguard_abi_selftest_panic")? };
        // SAFETY: no arguments, no preconditions.
        Ok(unsafe { selftest() })
    }
}
