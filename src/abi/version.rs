//! ABI and library versions.

/// ABI major version: bumped on any incompatible change of the C ABI.
pub const ABI_VERSION_MAJOR: u32 = 1;
/// ABI minor version: bumped when functions or result codes are added.
pub const ABI_VERSION_MINOR: u32 = 0;
/// ABI patch version.
pub const ABI_VERSION_PATCH: u32 = 0;

/// The packed ABI version: `(major << 16) | (minor << 8) | patch`.
pub const ABI_VERSION: u32 =
    (ABI_VERSION_MAJOR << 16) | (ABI_VERSION_MINOR << 8) | ABI_VERSION_PATCH;

const LIBRARY_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The ABI version of the loaded library, packed as
/// `(major << 16) | (minor << 8) | patch`. Compare it with
/// `NESTGUARD_ABI_VERSION` from the header: the majors must be equal and the
/// library's minor at least the header's.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_abi_version() -> u32 {
    ffi_panic_boundary! { ABI_VERSION }
}

/// The library's version as a static NUL-terminated string (e.g. "0.1.0").
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_library_version() -> *const std::ffi::c_char {
    ffi_panic_boundary! { LIBRARY_VERSION.as_ptr().cast() }
}
