//! The agent's container bookkeeping and the operations behind the API:
//! launch, wait, kill, remove of nested and standalone containers, pods
//! (executor containers running the default executor), and recovery after
//! a restart. Module work goes through [`super::abi`] only.

mod authorization;
mod container_io;
mod containers;
mod executor_queue;
mod executors;
mod frameworks;
mod pods;
mod records;
mod recovery;
mod registry;
mod sessions;
mod status_updates;
mod switchboard;
mod update_streams;
mod views;

pub use self::authorization::verify_executor_claims;
pub use self::executor_queue::{EventReceiver, Lookup};
pub use self::records::{ApiError, ExecutorRecord, Launched};
pub use self::registry::{Agent, Modules};
pub use self::switchboard::{Chunk, InputSlot, require_debug_sessions};

/// Turns debug sessions, attach and TTYs on or off for this process (the
/// agent's `--debug_sessions`).
pub fn set_debug_sessions(on: bool) {
    switchboard::DEBUG_SESSIONS.store(on, std::sync::atomic::Ordering::Relaxed);
}
