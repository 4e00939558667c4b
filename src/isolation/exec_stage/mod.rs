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
//! masked paths, rlimits, working directory, stdio, tty) and then
//! `execve`s the stage in place; the stage applies the defences and
//! `execve`s the container's own command in place too. So the process is
//! the one Mesos started: same pid, same process tree, same stdio, signals
//! reach the command directly, and its exit status is the command's.
//!
//! The environment is the one exception: the container's (the tenant's
//! `CommandInfo.environment`, e.g. an `LD_PRELOAD` naming a library in the
//! sandbox) must never reach the stage, a dynamically linked binary that
//! Mesos' helper runs as root with every capability: its loader would run
//! the tenant's code before the first defence. So nestguard's
//! `mesos-containerizer` wrapper ([`containerizer`]) builds the environment
//! exactly as Mesos' helper would (the last of a name wins, `PATH`
//! defaulted) and hands it over as the values of variables no loader reads
//! (`NESTGUARD_STAGE_ENV_<i>=NAME=VALUE`: [`handover`]; not as arguments,
//! which any user can read in `/proc/<pid>/cmdline`, and the container's
//! variables carry secrets). The stage turns them back into the command's
//! environment just before its `execve`. And the isolator's command is [`WRAPPED_STAGE`], a path only
//! the wrapper makes runnable: without the wrapper, nothing runs.
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
//! 3. the user switch: nestguard's `mesos-containerizer` wrapper
//!    ([`containerizer`]) moves the launch info's `user` into
//!    `--user` (resolved on the host, as Mesos does before `chroot`), so the
//!    bounding set is dropped while the stage still holds `CAP_SETPCAP`;
//!    only for a command the isolator sealed ([`seal`]), so a tenant's
//!    look-alike command never gets root from it;
//! 4. the effective set, if the container asked for one (kept across the
//!    user switch, then raised as ambient so a non-root command keeps it);
//! 5. `no_new_privs`; 6. the seccomp filters (compiled by the agent for the
//!    container's bounding set); 7. the container's environment (handed
//!    over by the wrapper) and `execve` (the filter allows it).
//!
//! Fails closed: a plan that does not decode, a defence that cannot be
//! applied, or a bounding set that cannot be reduced ends the launch with
//! a message on stderr and exit status [`SETUP_FAILURE`]; the command never
//! runs unconfined. A missing stage binary or wrapper fails Mesos' own
//! `execve`, so nothing runs either.
//!
//! A command task's container gets the stage through the wrapper instead
//! ([`command_task`]): Mesos lets an isolator add only arguments to a
//! command executor's command.
//!
//! The stage does no lookup by name (no NSS inside a container's mount
//! namespace) and reads nothing but its arguments and `/proc/self`.

pub mod command_task;
pub mod containerizer;
pub mod docker_command;
pub mod handover;
pub mod launch_mounts;
pub mod left_to_mesos;
pub mod plan;
pub mod posix_launcher;
mod relay;
pub mod rootfs;
pub mod seal;
pub mod stage;

pub use plan::{ExecPlan, PlanError, PosixLaunch, StageIdentity};

/// The stage binary's file name (installed beside `libnestguard.so`).
pub const STAGE_NAME: &str = "nestguard-exec";

/// The command `value` the isolator gives Mesos: a path that cannot exist
/// (`/proc` takes no new files), which only nestguard's
/// `mesos-containerizer` wrapper replaces with the stage's own path, taken
/// from the sealed plan ([`containerizer`]). So without the wrapper nothing
/// runs: Mesos' helper fails to `execve` it. The wrapper is what keeps the
/// tenant's environment away from the stage's dynamic loader (an
/// `LD_PRELOAD` would otherwise run the tenant's code as root before any
/// defence), and what moves the user switch to the stage.
pub const WRAPPED_STAGE: &str =
    "/proc/nestguard-needs-its-mesos-containerizer-wrapper/nestguard-exec";

/// The stage's exit status when it cannot apply a defence (Mesos reports it
/// as the container's status; the command never started).
pub const SETUP_FAILURE: i32 = 126;
