//! What travels between the host and the `nestguard-launch` helper.
//!
//! Host → helper, on the helper's stdin (a pipe, never argv, so nothing shows
//! in `ps`): a JSON [`Control`] record, then the serialized
//! `ContainerLaunchInfo`, each behind a 4-byte little-endian length. Helper → host, on the helper's
//! stdout (a pipe): one line, `ok <pid> <start time>` or `error <text>`.
//! The `pid` checkpoint is decimal lines: pid, start time, and `1` if the
//! supervisor is the init of its own pid namespace (else `0`; absent reads
//! as `0`, the safe choice: destroy then also kills the session).

use std::path::PathBuf;

use prost::Message;
use serde::{Deserialize, Serialize};

use crate::proto::mesos::slave::ContainerLaunchInfo;

/// The first argument of a helper that was handed stdio; three descriptor
/// numbers follow (stdin, stdout, stderr). Part of the protocol, so both the
/// launcher (which writes it) and the helper (which reads it) take it from
/// here and the helper never depends on the launcher.
pub const STDIO_ARG: &str = "--stdio";

/// Launcher-side facts the helper needs besides the launch info.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// The container's runtime directory (checkpoints go here).
    pub runtime_dir: PathBuf,
    /// The container's sandbox (stdout/stderr, default working directory).
    pub sandbox: PathBuf,
    /// Parent container's init: pid and start time; its namespaces are entered.
    pub parent: Option<(i32, u64)>,
    /// `CLONE_NEW*` flags to enter from the parent, as `setns` types.
    pub enter: i32,
    /// `CLONE_NEW*` flags to create.
    pub clone: i32,
    /// Hostname to set in a new UTS namespace.
    pub hostname: Option<String>,
    /// `cgroup.procs` files the helper joins before it forks anything.
    #[serde(default)]
    pub cgroup_procs: Vec<PathBuf>,
    /// Make the kernel's knobs read-only in a container with its own mount
    /// namespace ([`super::helper::mounts::read_only_kernel_paths`]).
    #[serde(default)]
    pub read_only_paths: bool,
    /// The sandboxes of the container and its ancestors: a bind mount whose
    /// source or target lies in one is resolved below the outermost one
    /// without following symbolic links ([`super::helper::mounts::apply`]).
    #[serde(default)]
    pub sandboxes: Vec<PathBuf>,
    /// Seccomp filters (BPF, base64) the command installs before `execve`,
    /// compiled by the host (see [`super::seccomp`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seccomp: Vec<String>,
    /// Device and inode of the sandbox the host prepared: the helper
    /// reopens the sandbox by path and refuses another directory (a
    /// component swapped for a link since).
    #[serde(default)]
    pub sandbox_identity: Option<(u64, u64)>,
    /// The host handed the helper the command's stdin, stdout and stderr
    /// (see [`super::launcher::ContainerIo`]): the command gets them as
    /// fds 0/1/2 instead of the sandbox's log files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdio: Option<StdioKind>,
    /// The pod's user namespace (the `namespaces/user` isolator): the
    /// container runs as root of it (see
    /// [`super::helper::user_namespace`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_namespace: Option<UserNamespaceControl>,
}

/// The user namespace a container runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserNamespaceControl {
    /// The pod's host range.
    pub base: u32,
    /// Ids in it.
    pub size: u32,
    /// Enter the parent container's user namespace (a nested container)
    /// instead of creating one with the range's map.
    pub join_parent: bool,
    /// The uid and primary gid the command runs as, when not root: they
    /// pass the idmapped binds as themselves ([`crate::isolation::id_map::IdRange::idmap`]).
    pub owner: Option<crate::isolation::id_map::BindOwner>,
    /// Bind the sandbox's own idmapped tree: not when the container's
    /// mount namespace derives from its parent's, its sandbox lies below
    /// the parent's and the parent's map passes the same ids (the same
    /// user, or root, whom every map passes).
    pub idmap_sandbox: bool,
}

impl UserNamespaceControl {
    /// The range.
    pub fn range(&self) -> crate::isolation::id_map::IdRange {
        crate::isolation::id_map::IdRange {
            base: self.base,
            size: self.size,
        }
    }
}

/// What the descriptors the host handed over are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StdioKind {
    /// Pipes (or sockets): plain descriptors.
    Pipes,
    /// The slave side of a pseudo-terminal, three times: it becomes the
    /// command's controlling terminal.
    Tty,
}

/// A malformed message between host and helper.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// Fewer bytes than the framing needs.
    #[error("launch data on the helper's stdin is truncated: {0}")]
    Truncated(&'static str),
    /// The control record is not the expected JSON.
    #[error("launch control record does not parse: {0}")]
    Json(#[from] serde_json::Error),
    /// The launch info does not decode.
    #[error("launch info does not decode as mesos.slave.ContainerLaunchInfo: {0}")]
    Decode(#[from] prost::DecodeError),
    /// The helper's report line is not `ok <pid> <start>` or `error <text>`.
    #[error("unexpected report from the launch helper: {0:?}")]
    Report(String),
    /// The `pid` checkpoint is not two decimal lines.
    #[error("pid checkpoint {0} is malformed: expected '<pid>\\n<start time>\\n<0|1>\\n'")]
    PidFile(PathBuf),
}

/// Frames the launch data for the helper's stdin: each part behind its
/// length, so the helper never waits for EOF (a copy of the pipe's write end
/// in some other child of the host would withhold it forever).
pub fn encode(control: &Control, info: &ContainerLaunchInfo) -> Result<Vec<u8>, ChannelError> {
    let json = serde_json::to_vec(control)?;
    let info = info.encode_to_vec();
    let mut out = Vec::with_capacity(8 + json.len() + info.len());
    for part in [&json, &info] {
        let len =
            u32::try_from(part.len()).map_err(|_| ChannelError::Truncated("part too long"))?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(part);
    }
    Ok(out)
}

/// Reads one length-prefixed part.
fn read_part(input: &mut impl std::io::Read, what: &'static str) -> Result<Vec<u8>, ChannelError> {
    let mut prefix = [0u8; 4];
    input
        .read_exact(&mut prefix)
        .map_err(|_| ChannelError::Truncated(what))?;
    let mut part = vec![0u8; u32::from_le_bytes(prefix) as usize];
    input
        .read_exact(&mut part)
        .map_err(|_| ChannelError::Truncated(what))?;
    Ok(part)
}

/// Reads what [`encode`] framed, exactly, from `input`.
pub fn read_from(
    input: &mut impl std::io::Read,
) -> Result<(Control, ContainerLaunchInfo), ChannelError> {
    let control = serde_json::from_slice(&read_part(input, "control record")?)?;
    let info = ContainerLaunchInfo::decode(read_part(input, "launch info")?.as_slice())?;
    Ok((control, info))
}

/// Reverses [`encode`].
pub fn decode(mut bytes: &[u8]) -> Result<(Control, ContainerLaunchInfo), ChannelError> {
    read_from(&mut bytes)
}

/// What the helper reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The supervisor runs with this pid and start time.
    Started {
        /// Supervisor pid (host pid namespace).
        pid: i32,
        /// Its start time.
        start_time: u64,
    },
    /// The helper failed before the container started.
    Failed(String),
}

impl Report {
    /// The line the helper writes.
    pub fn to_line(&self) -> String {
        match self {
            Report::Started { pid, start_time } => format!("ok {pid} {start_time}\n"),
            Report::Failed(text) => format!("error {}\n", text.replace('\n', " ")),
        }
    }

    /// Parses a line written by [`Report::to_line`].
    pub fn parse(line: &str) -> Result<Report, ChannelError> {
        let line = line.trim_end_matches('\n');
        if let Some(text) = line.strip_prefix("error ") {
            return Ok(Report::Failed(text.to_owned()));
        }
        let bad = || ChannelError::Report(line.to_owned());
        let mut parts = line.strip_prefix("ok ").ok_or_else(bad)?.split(' ');
        let pid = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let start_time = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Report::Started { pid, start_time })
    }
}

/// What the `pid` checkpoint records about the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidRecord {
    /// Supervisor pid (host pid namespace).
    pub pid: i32,
    /// Its start time.
    pub start_time: u64,
    /// It is pid 1 of its own pid namespace.
    pub own_pid_namespace: bool,
}

/// Text of the `pid` checkpoint.
pub fn pid_file_text(record: &PidRecord) -> String {
    format!(
        "{}\n{}\n{}\n",
        record.pid,
        record.start_time,
        u8::from(record.own_pid_namespace)
    )
}

/// Parses the `pid` checkpoint text read from `path`.
pub fn parse_pid_file(text: &str, path: PathBuf) -> Result<PidRecord, ChannelError> {
    let mut lines = text.lines();
    let pid = lines.next().and_then(|l| l.trim().parse().ok());
    let start = lines.next().and_then(|l| l.trim().parse().ok());
    let own = match lines.next().map(str::trim) {
        None | Some("0") => Some(false),
        Some("1") => Some(true),
        Some(_) => None,
    };
    match (pid, start, own, lines.next()) {
        (Some(pid), Some(start_time), Some(own_pid_namespace), None) if pid > 0 => Ok(PidRecord {
            pid,
            start_time,
            own_pid_namespace,
        }),
        _ => Err(ChannelError::PidFile(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let control = Control {
            runtime_dir: "/rt/containers/a".into(),
            sandbox: "/sb".into(),
            parent: Some((12, 34)),
            enter: libc::CLONE_NEWNET,
            clone: libc::CLONE_NEWPID,
            hostname: Some("h".into()),
            cgroup_procs: vec!["/sys/fs/cgroup/freezer/x/cgroup.procs".into()],
            read_only_paths: true,
            sandboxes: vec!["/sb".into()],
            seccomp: vec!["AAAAAAAAAAA=".into()],
            sandbox_identity: Some((1, 2)),
            stdio: Some(StdioKind::Tty),
            user_namespace: None,
        };
        let info = ContainerLaunchInfo {
            working_directory: Some("/w".into()),
            ..Default::default()
        };
        let (c, i) = decode(&encode(&control, &info).unwrap()).unwrap();
        assert_eq!((c, i), (control, info));
        assert!(decode(&[1, 0]).is_err());
        assert!(decode(&[9, 0, 0, 0, b'{']).is_err());

        let r = Report::Started {
            pid: 5,
            start_time: 6,
        };
        assert_eq!(Report::parse(&r.to_line()).unwrap(), r);
        assert_eq!(
            Report::parse("error setns: EPERM\n").unwrap(),
            Report::Failed("setns: EPERM".into())
        );
        assert!(Report::parse("ok 5").is_err());
        let record = PidRecord {
            pid: 5,
            start_time: 6,
            own_pid_namespace: true,
        };
        assert_eq!(
            parse_pid_file(&pid_file_text(&record), "p".into()).unwrap(),
            record
        );
        assert!(
            !parse_pid_file("5\n6\n", "p".into())
                .unwrap()
                .own_pid_namespace
        );
        assert!(parse_pid_file("5\n6\n2\n", "p".into()).is_err());
        assert!(parse_pid_file("5\n", "p".into()).is_err());
        assert!(parse_pid_file("0\n1\n", "p".into()).is_err());
    }
}
