//! Isolation tests (most need root): cgroups, the launcher, the isolators and
//! the container defences. One test binary. `launcher_host_kill` (a child
//! subreaper that reaps every child of the process) and `launcher_scale`
//! (which counts the process's open descriptors and zombies) stay apart:
//! other tests running beside them would disturb what they measure.

#[path = "../cgroups_support/mod.rs"]
mod cgroups_support;
#[path = "../common/mod.rs"]
mod common;
#[path = "../isolator_support/mod.rs"]
mod isolator_support;
#[path = "../launcher_support/mod.rs"]
mod launcher_support;

mod cgroups_cpu;
mod cgroups_kill;
mod cgroups_nested;
mod cgroups_oom;
mod cgroups_pids;
mod cgroups_recover;
mod cgroups_v2;
mod isolator_cgroups;
mod isolator_namespaces;
mod isolator_volumes;
mod launcher_cgroups;
mod launcher_core;
mod launcher_restart;
mod posix_launcher;
mod security_capabilities;
mod security_exec_stage;
mod security_exec_stage_image;
mod security_exec_stage_mounts;
mod security_isolation;
mod security_seccomp;
