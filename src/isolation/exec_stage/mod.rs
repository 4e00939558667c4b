//! The exec stage: nestguard's defences for containers that Mesos' own
//! launch helper runs.
//!
//! # Why
//!
//! Under a real Mesos 1.11 agent, `mesos-containerizer launch` (Mesos'
//! launch helper) starts every container. It aborts on any capability field
//! or seccomp profile on kernels whose `cap_last_cap` exceeds the 37
//! capabilities 1.11 knows (every kernel ≥ 5.8), so those fields cannot be
//! handed to it. Instead, the isolator (`launcher=mesos`) takes them out of
//! the launch info and replaces the container's command with this stage:
//!
//! ```text
//! <stage> --plan=<base64 JSON> --seal=<hmac> [--user=uid:gid:g,g] -- <path> <argv0> <args…>
//! ```
//!
//! Mesos' helper still does everything it always did (namespaces, mounts
//! but those from or onto a sandbox, which the wrapper hands to the stage,
//! masked paths, rlimits, working directory, environment, stdio, tty) and
//! then `execve`s the stage in place; the stage applies the defences and
//! `execve`s the container's own command in place too. So the process is
//! the one Mesos started: same pid, same process tree, same stdio, signals
//! reach the command directly, and its exit status is the command's.
//!
//! # The order, and why it is safe
//!
//! 0. the sandbox mounts the wrapper took from Mesos' helper
//!    (`--mounts`), made through descriptors in the container's own mount
//!    namespace only ([`launch_mounts`]: Mesos' helper would make them by
//!    path, following a link a tenant swapped in);
//! 1. read-only kernel paths (`/proc/sys`, `/sys`, …), only in a mount
//!    namespace other than the agent's (the plan carries the agent's, read
//!    at prepare): remounting in the host's would change the host;
//! 2. the bounding set reduced to the plan's, every capability the kernel
//!    has counted (up to `cap_last_cap`, so 38–40 too), and the inheritable
//!    set clipped to it;
//! 3. the user switch, when the agent's `mesos-containerizer` is nestguard's
//!    wrapper ([`containerizer`]): it moves the launch info's `user` into
//!    `--user` (resolved on the host, as Mesos does before `chroot`), so the
//!    bounding set is dropped while the stage still holds `CAP_SETPCAP`;
//!    only for a command the isolator sealed ([`seal`]), so a tenant's
//!    look-alike command never gets root from it;
//! 4. the effective set, if the container asked for one (kept across the
//!    user switch, then raised as ambient so a non-root command keeps it);
//! 5. `no_new_privs`; 6. the seccomp filters (compiled by the agent for the
//!    container's bounding set); 7. `execve` (the filter allows it).
//!
//! Fails closed: a plan that does not decode, a defence that cannot be
//! applied, or a bounding set that cannot be reduced (a non-root stage
//! without the wrapper) ends the launch with a message on stderr and exit
//! status [`SETUP_FAILURE`]; the command never runs unconfined. A missing
//! stage binary fails Mesos' own `execve`, so nothing runs either.
//!
//! A command task's container gets the stage through the wrapper instead
//! ([`command_task`]): Mesos lets an isolator add only arguments to a
//! command executor's command.
//!
//! The stage does no lookup by name (no NSS inside a container's mount
//! namespace) and reads nothing but its arguments and `/proc/self`.

pub mod command_task;
pub mod containerizer;
pub mod launch_mounts;
pub mod plan;
pub mod seal;
pub mod stage;

pub use plan::{ExecPlan, PlanError, StageIdentity};

/// The stage binary's file name (installed beside `libnestguard.so`).
pub const STAGE_NAME: &str = "nestguard-exec";

/// The stage's exit status when it cannot apply a defence (Mesos reports it
/// as the container's status; the command never started).
pub const SETUP_FAILURE: i32 = 126;
