//! The panic boundary every exported function runs in.
//!
//! Since Rust 1.81 a panic that reaches an `extern "C"` frame aborts the
//! process, which here would be the Mesos agent. [`ffi_panic_boundary!`]
//! catches it, records the message as the thread's last error, and returns
//! the "panic value" of the function's return type. The library never prints:
//! while inside the boundary, the panic hook logs through `tracing` instead of
//! writing to stderr; outside it, the previous hook runs unchanged.

use std::cell::Cell;
use std::sync::Once;

use super::result::nestguard_result;

thread_local! {
    static IN_BOUNDARY: Cell<u32> = const { Cell::new(0) };
}

static HOOK: Once = Once::new();

/// Installs (once per process) a panic hook that stays silent inside the
/// boundary and defers to the previous hook elsewhere.
pub(crate) fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_BOUNDARY.with(Cell::get) > 0 {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                tracing::error!(
                    location = location.as_deref(),
                    "panic caught at the nestguard ABI boundary"
                );
            } else {
                previous(info);
            }
        }));
    });
}

/// Marks the current thread as inside the boundary for the guard's lifetime.
pub(crate) struct BoundaryGuard;

impl BoundaryGuard {
    pub(crate) fn enter() -> Self {
        install_hook();
        IN_BOUNDARY.with(|c| c.set(c.get() + 1));
        BoundaryGuard
    }
}

impl Drop for BoundaryGuard {
    fn drop(&mut self) {
        IN_BOUNDARY.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// What a function returns when a panic was caught.
pub(crate) trait PanicValue {
    fn panic_value() -> Self;
}

impl PanicValue for nestguard_result {
    fn panic_value() -> Self {
        nestguard_result::Panic
    }
}

impl<T> PanicValue for *mut T {
    fn panic_value() -> Self {
        std::ptr::null_mut()
    }
}

impl<T> PanicValue for *const T {
    fn panic_value() -> Self {
        std::ptr::null()
    }
}

macro_rules! impl_panic_default {
    ($($t:ty),*) => { $(impl PanicValue for $t { fn panic_value() -> Self { <$t>::default() } })* };
}
impl_panic_default!(bool, u8, u16, u32, u64, usize, i32, i64, ());

/// Text of a caught panic payload.
pub(crate) fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// Runs the body, catching any panic. Use as the whole body of every
/// exported function.
macro_rules! ffi_panic_boundary {
    ($($body:tt)*) => {{
        let _guard = $crate::abi::panic::BoundaryGuard::enter();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| { $($body)* })) {
            Ok(value) => value,
            Err(payload) => {
                $crate::abi::error::set_last_error(format!(
                    "internal error: panic at the ABI boundary: {}",
                    $crate::abi::panic::payload_text(payload.as_ref())
                ));
                $crate::abi::panic::PanicValue::panic_value()
            }
        }
    }};
}
