//! Where the agent keeps sandboxes and its own checkpoints (Mesos' layout
//! for sandboxes, `src/slave/paths.hpp`; a flat `meta/executors/` for what the
//! agent must remember about executors across restarts).

use std::path::{Path, PathBuf};

use nestguard::proto::mesos::{ContainerId, ExecutorInfo, FrameworkInfo};

/// The agent's directories under `--work_dir`.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `--work_dir`.
    pub work_dir: PathBuf,
    /// The agent's id (stable across restarts on the same work dir).
    pub agent_id: String,
}

impl Layout {
    /// `<work_dir>/slaves/<agent>/frameworks/<fw>/executors/<ex>/runs/<container>`.
    pub fn executor_sandbox(
        &self,
        framework: &FrameworkInfo,
        executor: &ExecutorInfo,
        id: &ContainerId,
    ) -> PathBuf {
        let fw = framework
            .id
            .as_ref()
            .map_or("unknown-framework", |f| f.value.as_str());
        self.work_dir
            .join("slaves")
            .join(&self.agent_id)
            .join("frameworks")
            .join(fw)
            .join("executors")
            .join(&executor.executor_id.value)
            .join("runs")
            .join(&id.value)
    }

    /// `<work_dir>/containers/<id>`: a standalone container's sandbox.
    pub fn standalone_sandbox(&self, id: &ContainerId) -> PathBuf {
        self.work_dir.join("containers").join(&id.value)
    }

    /// `<work_dir>/meta/executors/<root>`: the executor's checkpoints.
    pub fn executor_meta(&self, root: &str) -> PathBuf {
        self.work_dir.join("meta").join("executors").join(root)
    }

    /// `<work_dir>/meta/executors`.
    pub fn executors_meta(&self) -> PathBuf {
        self.work_dir.join("meta").join("executors")
    }

    /// `<work_dir>/meta/standalone/<id>`: a standalone container's config,
    /// written before its launch and removed with REMOVE_CONTAINER, so a
    /// restarted agent recovers it instead of destroying it as an orphan
    /// (Mesos keeps a `standalone.marker` for the same purpose).
    pub fn standalone_meta(&self, id: &ContainerId) -> PathBuf {
        self.standalones_meta().join(&id.value)
    }

    /// `<work_dir>/meta/launching/<dotted id>`: present while the agent
    /// launches the container. Only a crash leaves one behind; recovery then
    /// ends that container as a failed launch.
    pub fn launch_marker(&self, dotted: &str) -> PathBuf {
        self.launch_markers().join(dotted)
    }

    /// `<work_dir>/meta/launching`.
    pub fn launch_markers(&self) -> PathBuf {
        self.work_dir.join("meta").join("launching")
    }

    /// `<work_dir>/meta/standalone`.
    pub fn standalones_meta(&self) -> PathBuf {
        self.work_dir.join("meta").join("standalone")
    }
}

/// Reads or creates the agent id kept in `<work_dir>/meta/agent_id`. The
/// id names a directory of every executor sandbox, so a stored one must
/// pass Mesos' ID rules (`validateSlaveID`); a bad one stops the agent.
pub fn agent_id(work_dir: &Path) -> anyhow::Result<String> {
    let path = work_dir.join("meta").join("agent_id");
    let stored = match nestguard::input::read_text(&path, 4096) {
        Ok(id) => Some(id),
        Err(nestguard::input::InputError::Open { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            None
        }
        Err(e) => anyhow::bail!("reading the stored agent ID: {e}"),
    };
    if let Some(id) = stored {
        let id = id.trim().to_owned();
        if !id.is_empty() {
            nestguard::validation::validate_path_id(&id).map_err(|e| {
                anyhow::anyhow!("{}: the stored agent ID is invalid: {e}", path.display())
            })?;
            return Ok(id);
        }
    }
    std::fs::create_dir_all(work_dir.join("meta"))?;
    let id = format!("nestguard-{}", uuid::Uuid::new_v4());
    nestguard::checkpoint::write_text(&path, &id, nestguard::checkpoint::Outlives::HostCrash)?;
    Ok(id)
}
