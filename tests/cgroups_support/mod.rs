//! Shared pieces of the root-only cgroup tests: a uniquely named
//! `cgroups_root` per test, workloads placed into a cgroup before they exec,
//! and a guard that kills and removes everything even when a test fails.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use crate::common;
#[allow(unused_imports, reason = "not every test binary waits")]
pub use crate::common::wait_until;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use nestguard::container_id::parse_dotted;
use nestguard::isolation::cgroups::{Cgroups, CgroupsConfig};
use nestguard::proto::mesos::ContainerId;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// True if we may run; see `common::root_or_skip`.
pub fn require_root() -> bool {
    common::root_or_skip("cgroup tests")
}

/// A unique `cgroups_root` for one test.
pub fn unique_root(tag: &str) -> PathBuf {
    PathBuf::from(format!(
        "nestguard-test-{}-{}-{}",
        std::process::id(),
        tag,
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ))
}

pub fn id(dotted: &str) -> ContainerId {
    parse_dotted(dotted).unwrap()
}

/// One test's cgroups and workloads; dropping it kills the workloads and
/// removes every cgroup under the test's `cgroups_root`.
pub struct TestCgroups {
    pub cg: Cgroups,
    pub children: Vec<Child>,
}

impl TestCgroups {
    /// The host's hierarchy (detected), under a fresh test root.
    pub fn host(tag: &str) -> Self {
        let cg = Cgroups::new(CgroupsConfig {
            cgroups_root: unique_root(tag),
            destroy_timeout: Duration::from_secs(20),
            ..CgroupsConfig::default()
        })
        .unwrap();
        Self {
            cg,
            children: Vec::new(),
        }
    }

    /// A cgroup v2 mount (e.g. a hybrid host's `/sys/fs/cgroup/unified`).
    pub fn v2_at(mount: &Path, tag: &str) -> Self {
        let cg = Cgroups::v2_with_root(CgroupsConfig {
            mount_root: mount.to_owned(),
            cgroups_root: unique_root(tag),
            destroy_timeout: Duration::from_secs(20),
        })
        .unwrap();
        Self {
            cg,
            children: Vec::new(),
        }
    }

    /// Runs `sh -c script` inside the container's cgroups: the child writes
    /// itself into every `cgroup.procs` before exec, so nothing it does is
    /// charged elsewhere. Returns the index into `children`.
    pub fn spawn(&mut self, container: &ContainerId, script: &str) -> usize {
        let files: Vec<CString> = self
            .cg
            .procs_files(container)
            .unwrap()
            .iter()
            .map(|p| CString::new(p.as_os_str().as_bytes()).unwrap())
            .collect();
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: between fork and exec the closure only calls open(2),
        // write(2) and close(2), which are async-signal-safe, on buffers
        // prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                for file in &files {
                    let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let written = libc::write(fd, b"0".as_ptr().cast(), 1);
                    let err = std::io::Error::last_os_error();
                    libc::close(fd);
                    if written != 1 {
                        return Err(err);
                    }
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        self.children.push(child);
        self.children.len() - 1
    }

    pub fn pid(&self, index: usize) -> u32 {
        self.children[index].id()
    }

    /// Waits up to `timeout` for a child to exit; its raw wait status.
    pub fn wait_exit(
        &mut self,
        index: usize,
        timeout: Duration,
    ) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.children[index].try_wait().unwrap() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The directories of the whole test root in every hierarchy.
    pub fn leftovers(&self) -> Vec<PathBuf> {
        let root = &self.cg.config().cgroups_root;
        let mounts: Vec<PathBuf> = if self.cg.is_v2() {
            vec![self.cg.config().mount_root.clone()]
        } else {
            ["freezer", "cpu", "cpuacct", "memory", "pids"]
                .iter()
                .map(|c| self.cg.config().mount_root.join(c))
                .collect()
        };
        mounts
            .into_iter()
            .map(|m| m.join(root))
            .filter(|p| p.exists())
            .collect()
    }
}

impl Drop for TestCgroups {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Err(e) = self.cg.destroy_all() {
            eprintln!("cleanup of {:?} failed: {e}", self.cg.config().cgroups_root);
        }
    }
}

/// True if the process is gone or a zombie.
pub fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}
