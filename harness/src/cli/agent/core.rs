//! The agent's container bookkeeping and the operations behind the API:
//! launch, wait, kill, remove of nested and standalone containers, pods
//! (executor containers running the default executor), and recovery after
//! a restart. Module work goes through [`super::abi`] only.

mod authorization;
mod container_io;
mod containers;
mod executors;
mod frameworks;
mod pods;
mod recovery;
mod registry;
mod status_updates;
mod switchboard;
mod views;

pub use self::executors::{EventReceiver, Lookup};
pub use self::registry::{Agent, ApiError, ExecutorRecord, Launched, Modules};
pub use self::switchboard::{Chunk, InputSlot, require_debug_sessions};

/// Turns debug sessions, attach and TTYs on or off for this process (the
/// agent's `--debug_sessions`).
pub fn set_debug_sessions(on: bool) {
    switchboard::DEBUG_SESSIONS.store(on, std::sync::atomic::Ordering::Relaxed);
}
