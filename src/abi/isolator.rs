//! `nestguard_isolator`: nestguard's isolators as one Mesos isolator, shaped
//! so a C++ `mesos::slave::Isolator` shim maps each virtual method to one
//! call (run them off the libprocess actor, e.g. with `process::async`, as
//! several block on the file system):
//!
//! | Mesos | here |
//! |---|---|
//! | module creation with `Parameters` | `nestguard_isolator_new` |
//! | `supportsNesting`, `supportsStandalone` | both `true` |
//! | `recover(states, orphans)` | `nestguard_isolator_recover` |
//! | `prepare` → `Option<ContainerLaunchInfo>` | `nestguard_isolator_prepare` (`*out` NULL = `None()`) |
//! | `isolate(id, pid)` | `nestguard_isolator_isolate` |
//! | `watch` → `Future<ContainerLimitation>` | `nestguard_isolator_watch_new` + poll `nestguard_isolator_watch_fd` + `nestguard_isolator_watch_check` |
//! | `update(id, requests, limits)` | `nestguard_isolator_update` |
//! | `usage` → `ResourceStatistics` | `nestguard_isolator_usage` |
//! | `status` → `ContainerStatus` | `nestguard_isolator_status` |
//! | `cleanup` | `nestguard_isolator_cleanup` |
//!
//! Containers are serialized `mesos.ContainerID` bytes (nested ids carry
//! their parents). The isolator handle may be used from several threads at
//! once; a watch handle from one thread at a time.

use prost::Message;

use super::bytes::nestguard_bytes;
use super::error::fail;
use super::ffi::{free_handle, handle_ref, into_handle, write_out};
use super::result::{AbiError, nestguard_result};
use crate::isolation::isolator::{Composite, Isolator, IsolatorParams, Watch};
use crate::proto::mesos::slave::{ContainerConfig, ContainerRecoverInfo};
use crate::proto::mesos::{ContainerId, Parameters};

/// The configured isolators. Thread-safe. Under the hood a `Box<Composite>`.
pub struct nestguard_isolator {
    inner: Composite,
}

impl nestguard_isolator {
    /// The isolators behind the handle (for the launcher to share their cgroups).
    pub(crate) fn composite(&self) -> &Composite {
        &self.inner
    }
}

/// A container's limitation watch. Use from one thread at a time.
pub struct nestguard_isolator_watch {
    inner: Watch,
}

macro_rules! isolator_ref {
    ($ptr:expr) => {{
        try_not_null!($ptr, "isolator");
        match handle_ref($ptr) {
            Some(i) => i,
            None => {
                return fail(
                    nestguard_result::NullParameter,
                    "argument `isolator` must not be NULL",
                );
            }
        }
    }};
}

/// Creates the isolators from module parameters: `parameters` is a
/// serialized `mesos.Parameters` (keys `isolation`, `cgroups_root`,
/// `cgroups_pids_max`, `hardening_capabilities`, `credentials_jwt_key`, …;
/// see the isolator documentation). Unknown keys are refused. An empty
/// buffer means all defaults. Free with `nestguard_isolator_free`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_new(
    parameters: *const u8,
    parameters_len: usize,
    out: *mut *mut nestguard_isolator,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(out, "out");
        let parameters = try_decode!(Parameters, parameters, parameters_len, "parameters");
        let params = try_abi!(IsolatorParams::from_proto(&parameters));
        let inner = try_abi!(Composite::from_parameters(&params));
        write_out(out, into_handle(nestguard_isolator { inner }));
        nestguard_result::Ok
    }
}

/// Mesos' `recover(states, orphans)`: `recover_info` is a serialized
/// `mesos.slave.ContainerRecoverInfo` whose `checkpointed_container_states`
/// are the states and `orphan_container_ids` the orphans
/// (`known_container_ids` is ignored). Cgroups of containers in neither are
/// killed and removed; orphans are left for the caller to destroy and then
/// `nestguard_isolator_cleanup`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_recover(
    isolator: *const nestguard_isolator,
    recover_info: *const u8,
    recover_info_len: usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        let info = try_decode!(ContainerRecoverInfo, recover_info, recover_info_len, "recover_info");
        try_abi!(isolator.inner.recover(&info.checkpointed_container_states, &info.orphan_container_ids));
        nestguard_result::Ok
    }
}

/// Mesos' `prepare`: `container_id` is a serialized `mesos.ContainerID`,
/// `config` a serialized `mesos.slave.ContainerConfig`. `*out` receives a
/// serialized `mesos.slave.ContainerLaunchInfo`, or NULL when no isolator
/// has anything to add (Mesos' `None()`). The launch info may carry a
/// credential in `environment`: do not log it. After a failure call
/// `nestguard_isolator_cleanup`, as Mesos does.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_prepare(
    isolator: *const nestguard_isolator,
    container_id: *const u8,
    container_id_len: usize,
    config: *const u8,
    config_len: usize,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        try_not_null!(out, "out");
        let id = try_decode!(ContainerId, container_id, container_id_len, "container_id");
        let config = try_decode!(ContainerConfig, config, config_len, "config");
        let info = try_abi!(isolator.inner.prepare(&id, &config));
        let bytes = match info {
            Some(info) => nestguard_bytes::into_raw(info.encode_to_vec()),
            None => std::ptr::null_mut(),
        };
        write_out(out, bytes);
        nestguard_result::Ok
    }
}

/// Mesos' `isolate`: `pid` is the container's first process in the host's
/// pid namespace. Isolators run in parallel threads; blocks until all end.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_isolate(
    isolator: *const nestguard_isolator,
    container_id: *const u8,
    container_id_len: usize,
    pid: u32,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        let id = try_decode!(ContainerId, container_id, container_id_len, "container_id");
        try_abi!(isolator.inner.isolate(&id, pid));
        nestguard_result::Ok
    }
}

/// Mesos' `watch`: a watch handle for the container's limitations (OOM
/// kills …). Poll `nestguard_isolator_watch_fd` for readability, then call
/// `nestguard_isolator_watch_check`. Free with `nestguard_isolator_watch_free`
/// (the fd closes with it).
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_watch_new(
    isolator: *const nestguard_isolator,
    container_id: *const u8,
    container_id_len: usize,
    out: *mut *mut nestguard_isolator_watch,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        try_not_null!(out, "out");
        let id = try_decode!(ContainerId, container_id, container_id_len, "container_id");
        let inner = try_abi!(isolator.inner.watch_all(&id));
        write_out(out, into_handle(nestguard_isolator_watch { inner }));
        nestguard_result::Ok
    }
}

/// The descriptor to poll for readability (an epoll fd; owned by the
/// watch, do not close). -1 for a NULL watch. After a wake-up whose
/// `nestguard_isolator_watch_check` reports nothing, check again a few
/// times over the next seconds (e.g. after 10 ms, doubling): on cgroup v1
/// the memory controller signals an OOM before it counts the kill, and
/// sends no further event when it does.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_watch_fd(watch: *const nestguard_isolator_watch) -> i32 {
    ffi_panic_boundary! {
        handle_ref(watch).map_or(-1, |w| w.inner.fd())
    }
}

/// Non-blocking: `*out` receives a serialized `mesos.slave.ContainerLimitation`
/// (e.g. `reason` = `REASON_CONTAINER_LIMITATION_MEMORY` after an OOM kill)
/// once one happened — and again on later calls — or NULL while none has.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_watch_check(
    watch: *mut nestguard_isolator_watch,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        try_not_null!(watch, "watch");
        try_not_null!(out, "out");
        // SAFETY: non-NULL handles come from `nestguard_isolator_watch_new` and
        // are used by one thread at a time (documented).
        let Some(w) = (unsafe { watch.as_mut() }) else {
            return fail(nestguard_result::NullParameter, "argument `watch` must not be NULL");
        };
        let limitation = try_abi!(w.inner.check());
        write_out(out, limitation.map_or(std::ptr::null_mut(), |l| nestguard_bytes::into_raw(l.encode_to_vec())));
        nestguard_result::Ok
    }
}

/// Frees a watch. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_watch_free(watch: *mut nestguard_isolator_watch) {
    ffi_panic_boundary! {
        free_handle(watch)
    }
}

/// Mesos' `update(id, requests, limits)`: `resources` is a serialized
/// `mesos.slave.ContainerConfig` of which only `resources` (the requests)
/// and `limits` are read — the shim copies `Resources` and the limits map
/// into it (`SerializePartialToString`: required fields may be absent).
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_update(
    isolator: *const nestguard_isolator,
    container_id: *const u8,
    container_id_len: usize,
    resources: *const u8,
    resources_len: usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        let id = try_decode!(ContainerId, container_id, container_id_len, "container_id");
        let config = try_decode!(ContainerConfig, resources, resources_len, "resources");
        try_abi!(isolator.inner.update(&id, &config.resources, &config.limits));
        nestguard_result::Ok
    }
}

/// Mesos' `usage`: `*out` receives a serialized `mesos.ResourceStatistics`
/// (CPU times and throttling, memory, processes, `disk_used_bytes`).
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_usage(
    isolator: *const nestguard_isolator,
    container_id: *const u8,
    container_id_len: usize,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        answer_encoded(container_id, container_id_len, out, |id| isolator.inner.usage(id))
    }
}

/// Mesos' `status`: `*out` receives a serialized `mesos.ContainerStatus`.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_status(
    isolator: *const nestguard_isolator,
    container_id: *const u8,
    container_id_len: usize,
    out: *mut *mut nestguard_bytes,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        answer_encoded(container_id, container_id_len, out, |id| isolator.inner.status(id))
    }
}

/// Shared body of `usage` and `status` (inside their panic boundaries):
/// decodes the container id, asks `query` about it and hands the answer out
/// serialized in `*out`.
fn answer_encoded<M: Message, E: AbiError>(
    container_id: *const u8,
    container_id_len: usize,
    out: *mut *mut nestguard_bytes,
    query: impl FnOnce(&ContainerId) -> Result<M, E>,
) -> nestguard_result {
    try_not_null!(out, "out");
    let id = try_decode!(ContainerId, container_id, container_id_len, "container_id");
    let answer = try_abi!(query(&id));
    write_out(out, nestguard_bytes::into_raw(answer.encode_to_vec()));
    nestguard_result::Ok
}

/// Mesos' `cleanup`: after all the container's processes are gone; undoes
/// everything prepare did (cgroups removed, registrations dropped), in
/// reverse isolator order. A no-op for an unknown container.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_cleanup(
    isolator: *const nestguard_isolator,
    container_id: *const u8,
    container_id_len: usize,
) -> nestguard_result {
    ffi_panic_boundary! {
        let isolator = isolator_ref!(isolator);
        let id = try_decode!(ContainerId, container_id, container_id_len, "container_id");
        try_abi!(isolator.inner.cleanup(&id));
        nestguard_result::Ok
    }
}

/// Frees the isolators. Containers' cgroups stay (a new handle recovers
/// them). NULL is a no-op; not while another thread uses the handle.
#[unsafe(no_mangle)]
pub extern "C" fn nestguard_isolator_free(isolator: *mut nestguard_isolator) {
    ffi_panic_boundary! {
        free_handle(isolator)
    }
}
