//! Mesos' runtime and sandbox layouts (`src/slave/containerizer/mesos/paths.hpp`).
//!
//! `<runtime_dir>/containers/<root>/containers/<child>/...` holds each
//! container's checkpoints; a nested sandbox is `<parent sandbox>/containers/<child>`.

use std::path::{Path, PathBuf};

use crate::container_id;
use crate::proto::mesos::ContainerId;

/// Directory name used at every nesting level.
pub const CONTAINERS: &str = "containers";
/// Decimal helper pid, then its start time, one per line.
pub const PID_FILE: &str = "pid";
/// Raw wait status as decimal text, written by the supervisor.
pub const STATUS_FILE: &str = "status";
/// Framed `mesos.slave.ContainerLaunchInfo`.
pub const LAUNCH_INFO_FILE: &str = "launch_info";
/// Framed `mesos.slave.ContainerConfig`.
pub const CONFIG_FILE: &str = "config";
/// Framed `mesos.slave.ContainerTermination` (nested containers only).
pub const TERMINATION_FILE: &str = "termination";
/// Sandbox file receiving the command's standard output.
pub const STDOUT_FILE: &str = "stdout";
/// Sandbox file receiving the command's standard error.
pub const STDERR_FILE: &str = "stderr";

/// `<runtime_dir>/containers/<root>/containers/<child>...` for `id`.
pub fn runtime_path(runtime_dir: &Path, id: &ContainerId) -> PathBuf {
    let mut path = runtime_dir.to_path_buf();
    for value in container_id::chain(id) {
        path.push(CONTAINERS);
        path.push(value);
    }
    path
}

/// The sandbox of a nested container: `<parent sandbox>/containers/<value>`.
pub fn nested_sandbox(parent_sandbox: &Path, id: &ContainerId) -> PathBuf {
    parent_sandbox.join(CONTAINERS).join(&id.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_mesos() {
        let id = container_id::parse_dotted("a.b.c").unwrap();
        assert_eq!(
            runtime_path(Path::new("/rt"), &id),
            Path::new("/rt/containers/a/containers/b/containers/c")
        );
        assert_eq!(
            nested_sandbox(Path::new("/runs/a/containers/b"), &id),
            Path::new("/runs/a/containers/b/containers/c")
        );
    }
}
