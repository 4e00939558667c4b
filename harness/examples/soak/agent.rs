//! The agent under test: its setup (work directory, cgroup root, port), the
//! process and its reaping, and figures read from /proc.

use super::*;

/// The agent's configuration, written once.
pub(super) struct Setup {
    pub(super) work: PathBuf,
    pub(super) agent_work: PathBuf,
    pub(super) bin: PathBuf,
    pub(super) port: u16,
    pub(super) cgroups_root: String,
    pub(super) log: PathBuf,
}

impl Setup {
    pub(super) fn write(cli: &Cli) -> Result<Setup> {
        use std::os::unix::fs::PermissionsExt;
        let etc = cli.work.join("etc");
        std::fs::create_dir_all(&etc).map_err(|e| format!("{}: {e}", etc.display()))?;
        let private = |name: &str, text: &str| -> Result<PathBuf> {
            let p = etc.join(name);
            std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("{}: {e}", p.display()))?;
            Ok(p)
        };
        let acls = private("acls.json", ACLS)?;
        private(
            "credentials.json",
            &json!({"credentials": [{"principal": OPS.0, "secret": OPS.1}]}).to_string(),
        )?;
        let key = private("jwt.key", "soak-signing-key-0123456789abcdef")?;
        let manifest = json!({"libraries": [{"file": cli.bin.join("libnestguard.so"), "modules": [
            {"name": "io_nestguard_Authorizer", "parameters": [{"key": "acls", "value": acls}]},
            {"name": "io_nestguard_Isolator", "parameters": [
                {"key": "cgroups_root", "value": cli.cgroups_root},
                {"key": "credentials_jwt_key", "value": key}]},
            {"name": "io_nestguard_CredentialHook"}]}]});
        private("modules.json", &manifest.to_string())?;
        let port = match cli.port {
            0 => std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("finding a free port: {e}"))?
                .port(),
            p => p,
        };
        Ok(Setup {
            work: cli.work.clone(),
            agent_work: cli.work.join("agent"),
            bin: cli.bin.clone(),
            port,
            cgroups_root: cli.cgroups_root.clone(),
            log: cli.work.join("agent.log"),
        })
    }

    /// Starts the agent and waits until it serves (recovery done).
    pub(super) fn start(&self) -> Result<AgentProc> {
        let etc = self.work.join("etc");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut child = Command::new(self.bin.join("nestguard"))
            .arg("agent")
            .arg(format!("--work_dir={}", self.agent_work.display()))
            .arg(format!("--modules={}", etc.join("modules.json").display()))
            .arg("--authorizer=io_nestguard_Authorizer")
            .arg("--hooks=io_nestguard_CredentialHook")
            .arg("--isolation=io_nestguard_Isolator")
            .arg(format!(
                "--http_credentials={}",
                etc.join("credentials.json").display()
            ))
            .arg(format!(
                "--jwt_secret_key={}",
                etc.join("jwt.key").display()
            ))
            .arg("--authenticate_http_readwrite")
            .arg(format!("--port={}", self.port))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting the agent: {e}"))?;
        let pid = Pid::from_raw(i32::try_from(child.id()).map_err(|e| e.to_string())?);
        // For scripts/soak.sh's clean-up, should the driver itself be killed.
        let _ = std::fs::write(self.work.join("agent.pid"), pid.to_string());
        let stdout = child.stdout.take().ok_or("no stdout")?;
        // The child is reaped by `reap`, never through `Child`.
        drop(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(180))
            .map_err(|_| "the agent did not serve within 180 s".to_owned())?;
        let Some(address) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
            let _ = kill(pid, Signal::SIGKILL);
            return Err(format!(
                "the agent did not start: {line:?}; see {}",
                self.log.display()
            ));
        };
        Ok(AgentProc {
            pid,
            client: Client::new(address),
        })
    }

    /// The hierarchy where every container has a cgroup of its own: the
    /// freezer (v1), else whichever has the root.
    pub(super) fn container_cgroups(&self) -> Option<PathBuf> {
        let tops = self.cgroup_tops();
        tops.iter()
            .find(|t| t.parent().is_some_and(|p| p.ends_with("freezer")))
            .or(tops.first())
            .cloned()
    }

    /// The root's directory in every hierarchy where it exists.
    pub(super) fn cgroup_tops(&self) -> Vec<PathBuf> {
        cgroup_tops_under(Path::new("/sys/fs/cgroup"), Path::new(&self.cgroups_root))
    }
}

/// `<mount>/<root>` (cgroup v2: the unified hierarchy is the mount
/// itself) and `<mount>/<controller>/<root>` (v1, and a hybrid host's
/// `unified`), where they exist.
pub(super) fn cgroup_tops_under(mount: &Path, root: &Path) -> Vec<PathBuf> {
    let mut tops: Vec<PathBuf> = std::fs::read_dir(mount)
        .into_iter()
        .flatten()
        .flatten()
        .map(|c| c.path().join(root))
        .filter(|p| p.is_dir())
        .collect();
    let unified = mount.join(root);
    if unified.join("cgroup.controllers").is_file() {
        tops.insert(0, unified);
    }
    tops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pure_v2_root_is_found_at_the_mount_itself() {
        let mount = tempfile::tempdir().unwrap();
        let top = mount.path().join("soak-root");
        std::fs::create_dir_all(top.join("a/mesos/b")).unwrap();
        std::fs::write(top.join("cgroup.controllers"), "cpu memory pids").unwrap();
        assert_eq!(
            cgroup_tops_under(mount.path(), Path::new("soak-root")),
            [top]
        );

        let v1 = tempfile::tempdir().unwrap();
        let freezer = v1.path().join("freezer/soak-root");
        std::fs::create_dir_all(&freezer).unwrap();
        assert_eq!(
            cgroup_tops_under(v1.path(), Path::new("soak-root")),
            [freezer]
        );
    }
}

/// A running agent; SIGKILLed if still running when dropped.
pub(super) struct AgentProc {
    pub(super) pid: Pid,
    pub(super) client: Client,
}

impl AgentProc {
    pub(super) fn sigkill(&self) {
        let _ = kill(self.pid, Signal::SIGKILL);
        wait_exit(self.pid);
    }

    /// SIGTERM, the clean stop; true if it exited 0.
    pub(super) fn stop(&self) -> bool {
        let _ = kill(self.pid, Signal::SIGTERM);
        matches!(wait_exit(self.pid), Some(WaitStatus::Exited(_, 0)))
    }

    pub(super) fn rss_kib(&self) -> u64 {
        status_field(self.pid.as_raw(), "VmRSS:").unwrap_or(0)
    }

    pub(super) fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    pub(super) fn threads(&self) -> u64 {
        status_field(self.pid.as_raw(), "Threads:").unwrap_or(0)
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        if kill(self.pid, None).is_ok() {
            self.sigkill();
        }
    }
}

/// Exit statuses of children reaped while waiting for another.
pub(super) static REAPED: Mutex<BTreeMap<i32, WaitStatus>> = Mutex::new(BTreeMap::new());

/// Reaps every child that has ended (ours and those reparented to us).
pub(super) fn reap() {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(status) => {
                if let Some(pid) = status.pid() {
                    REAPED
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(pid.as_raw(), status);
                }
            }
        }
    }
}

/// Waits (60 s at most) for `pid`, a child, to end; its status.
pub(super) fn wait_exit(pid: Pid) -> Option<WaitStatus> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        reap();
        if let Some(s) = REAPED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pid.as_raw())
        {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

pub(super) fn status_field(pid: i32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
