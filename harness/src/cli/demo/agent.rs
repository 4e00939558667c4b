//! The demo's agent: the `nestguard agent` child process it starts with a
//! modules manifest, and the guards that stop it and remove its cgroups
//! root whatever happens.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The first host uid of the demo's user namespace pool (four pods' worth):
/// far above any account of a usual host.
pub(super) const DEMO_USERNS_BASE: u32 = 1_900_000_000;

/// The default isolators, with the executor tokens, and `namespaces/user`.
const DEMO_ISOLATION: &str = "cgroups,namespaces,filesystem/linux,volume/sandbox_path,\
    environment/credentials,hardening,seccomp,disk/du,namespaces/user";

/// Removes the demo's cgroups root after the agent stopped (declared
/// before the agent, so dropped after it).
pub(super) struct CgroupsRootGuard(pub(super) Option<String>);

impl Drop for CgroupsRootGuard {
    fn drop(&mut self) {
        if let Some(root) = &self.0 {
            remove_cgroups_root(root);
        }
    }
}

/// The agent child process; killed and reaped on drop, whatever happens.
pub(super) struct AgentProcess {
    child: Child,
    pub(super) address: String,
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        // Our own child, not yet reaped: its pid cannot name another process.
        // If the signal fails (it exited already), the wait below ends at once.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `nestguard`, `nestguard-launch` and `library` in `<dir>/bin` (mode
/// 0755, below the demo's directory that others may search): hard links,
/// or copies across file systems. A checkout below a private directory
/// (`/root`, a CI clone in a 0700 temporary directory) hides the running
/// binary from every other uid. Returns the agent's binary and library.
fn public_binaries(dir: &Path, library: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir(&bin)?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))?;
    let exe = std::env::current_exe()?;
    let helper = exe.with_file_name("nestguard-launch");
    for from in [exe.as_path(), helper.as_path(), library] {
        let name = from.file_name().context("a binary without a name")?;
        let to = bin.join(name);
        if std::fs::hard_link(from, &to).is_err() {
            std::fs::copy(from, &to).with_context(|| format!("copying {}", from.display()))?;
        }
    }
    let name = library.file_name().context("a library without a name")?;
    Ok((
        bin.join(exe.file_name().context("no name")?),
        bin.join(name),
    ))
}

pub(super) fn start_agent(
    dir: &Path,
    library: &Path,
    log: &Path,
    cgroups_root: Option<&str>,
    user_namespaces: bool,
) -> anyhow::Result<AgentProcess> {
    // In a user namespace the pod's root (an unused host uid) runs the
    // executor, which is this binary: it gets a copy it can reach.
    let (exe, library) = if user_namespaces {
        public_binaries(dir, library)?
    } else {
        (std::env::current_exe()?, library.to_path_buf())
    };
    let library = library.as_path();
    let mut modules = vec![
        serde_json::json!({"name": "io_nestguard_Authorizer", "parameters": [
            {"key": "acls", "value": dir.join("acls.json")}, {"key": "strict", "value": "true"}]}),
        serde_json::json!({"name": "io_nestguard_CredentialHook"}),
    ];
    if let Some(root) = cgroups_root {
        let mut isolator = serde_json::json!({"name": "io_nestguard_Isolator", "parameters": [
            {"key": "cgroups_root", "value": root},
            {"key": "credentials_jwt_key", "value": dir.join("jwt.key")}]});
        if user_namespaces {
            let parameters = isolator["parameters"]
                .as_array_mut()
                .context("parameters")?;
            parameters.push(serde_json::json!({"key": "isolation", "value": DEMO_ISOLATION}));
            parameters.push(serde_json::json!({"key": "user_namespace_range",
                "value": format!("{DEMO_USERNS_BASE}-{}/65536", DEMO_USERNS_BASE + 4 * 65536)}));
            // The pod's ids are "others" to the directories above its
            // sandboxes: they may search (not list) the demo's directory.
            std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o711))?;
        }
        modules.push(isolator);
    }
    let manifest = serde_json::json!({"libraries": [{"file": library, "modules": modules}]});
    std::fs::write(
        dir.join("modules.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    let mut child = Command::new(exe)
        .arg("agent")
        .arg(format!("--work_dir={}", dir.join("work").display()))
        .arg(format!("--modules={}", dir.join("modules.json").display()))
        .arg("--authorizer=io_nestguard_Authorizer")
        .arg("--hooks=io_nestguard_CredentialHook")
        .arg(format!(
            "--http_credentials={}",
            dir.join("credentials.json").display()
        ))
        .arg(format!(
            "--jwt_secret_key={}",
            dir.join("jwt.key").display()
        ))
        .arg("--authenticate_http_readwrite")
        .arg(format!("--audit_log={}", dir.join("audit.jsonl").display()))
        .arg("--authenticate_http_executors")
        .arg(if cgroups_root.is_some() {
            "--isolation=io_nestguard_Isolator"
        } else {
            "--isolation="
        })
        .arg("--port=0")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log)?)
        .spawn()
        .context("starting nestguard agent")?;
    let stdout = child.stdout.take().context("agent stdout")?;
    let mut line = String::new();
    if let Err(e) = BufReader::new(stdout).read_line(&mut line) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e).context("reading the agent's address");
    }
    let Some(address) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("the agent did not start (see {}): {line}", log.display());
    };
    Ok(AgentProcess {
        address: address.to_owned(),
        child,
    })
}

/// Removes the demo's cgroups root once the agent has cleaned up the
/// containers below it: `<mount>/<controller>/<root>` in every v1
/// hierarchy, and `<mount>/<root>` on a cgroup v2-only host (whose
/// entries are cgroups, not controllers: this missed it before).
fn remove_cgroups_root(root: &str) {
    let mount = std::path::Path::new("/sys/fs/cgroup");
    let Ok(controllers) = std::fs::read_dir(mount) else {
        return;
    };
    let tops = controllers
        .flatten()
        .map(|c| c.path().join(root))
        .chain(std::iter::once(mount.join(root)));
    for top in tops {
        if top.is_dir() {
            let _ = std::fs::remove_dir(&top);
        }
    }
}
