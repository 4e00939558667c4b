//! Sandbox browsing as Mesos' `Files` does it (src/files/files.cpp), for
//! LIST_FILES / READ_FILE (src/slave/http.cpp:1179, :3196) and
//! `/files/{browse,read,download}`.
//!
//! Each running executor's sandbox is attached, as `Slave` attaches it
//! (src/slave/slave.cpp:10400-10440), under three paths: its real path,
//! `<work_dir>/slaves/<agent>/frameworks/<fw>/executors/<ex>/runs/latest`
//! and the virtual `/frameworks/<fw>/executors/<ex>/runs/latest`. A path at
//! or below an attached one needs ACCESS_SANDBOX on the executor and its
//! framework (the callback `Files::authorize` finds walking up, files.cpp
//! :352-377); any other path needs nothing and is not found.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nestguard::proto::mesos::authorization::{Action, Object, Subject};
use nestguard::proto::mesos::v1;

use crate::cli::agent::core::{Agent, ExecutorRecord};

/// Mesos' `FilesError`: how a browse or read failed (the callers turn it
/// into a status; it is never shown as an error chain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilesError {
    /// 400 with the text.
    Invalid(String),
    /// 404.
    NotFound,
    /// 403.
    Unauthorized,
    /// 500 with the text.
    Unknown(String),
}

impl FilesError {
    /// The answer of the agent API (`Http::listFiles`/`readFile`): the
    /// message as the body, empty for 403 and 404.
    pub fn into_api_response(self) -> axum::response::Response {
        use axum::http::StatusCode;
        use axum::response::IntoResponse;
        match self {
            FilesError::Invalid(m) => (StatusCode::BAD_REQUEST, m).into_response(),
            FilesError::NotFound => StatusCode::NOT_FOUND.into_response(),
            FilesError::Unauthorized => StatusCode::FORBIDDEN.into_response(),
            FilesError::Unknown(m) => (StatusCode::INTERNAL_SERVER_ERROR, m).into_response(),
        }
    }
}

/// Mesos caps one read at 16 pages (files.cpp:670).
const MAX_READ: u64 = 16 * 4096;

struct Mount {
    virtual_path: String,
    real: PathBuf,
    executor: ExecutorRecord,
}

fn mounts(agent: &Agent) -> Vec<Mount> {
    let mut out = Vec::new();
    for e in agent.running_executors() {
        let Ok(real) = std::fs::canonicalize(&e.sandbox) else {
            continue; // Mesos' attach fails on a path without a realpath.
        };
        let framework = e
            .framework
            .id
            .as_ref()
            .map(|f| f.value.clone())
            .unwrap_or_default();
        let executor = e.executor.executor_id.value.clone();
        let mut paths = vec![format!(
            "/frameworks/{framework}/executors/{executor}/runs/latest"
        )];
        if let Some(runs) = e.sandbox.parent() {
            paths.push(runs.join("latest").to_string_lossy().into_owned());
        }
        paths.push(e.sandbox.to_string_lossy().into_owned());
        for virtual_path in paths {
            out.push(Mount {
                virtual_path: virtual_path.trim_end_matches('/').to_owned(),
                real: real.clone(),
                executor: e.clone(),
            });
        }
    }
    out
}

fn mount<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    mounts.iter().find(|m| m.virtual_path == path)
}

/// `FilesProcess::authorize` on the mount that `attached` found: the
/// mount's executor and framework need ACCESS_SANDBOX. The mount is the one
/// the path resolves through, never one found a second way (walking up with
/// `Path::parent` skips a trailing `.` or empty component, so `…/latest/.`
/// would find no mount to authorize and still resolve to the sandbox).
fn authorized(agent: &Agent, subject: Option<&Subject>, m: &Mount) -> bool {
    let object = Object {
        executor_info: Some(m.executor.executor.clone()),
        framework_info: Some(m.executor.framework.clone()),
        ..Default::default()
    };
    agent
        .require(subject, Action::AccessSandbox, Some(object))
        .is_ok()
}

/// `FilesProcess::resolve`'s lookup (files.cpp:836-901): the longest
/// attached prefix of `path` split on `/`, and the components below it.
fn attached<'a, 'p>(mounts: &'a [Mount], path: &'p str) -> Option<(&'a Mount, Vec<&'p str>)> {
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    let mut tokens: Vec<&str> = trimmed.split('/').collect();
    let mut suffix: Vec<&str> = Vec::new();
    while !tokens.is_empty() {
        if let Some(m) = mount(mounts, &tokens.join("/")) {
            return Some((m, suffix));
        }
        if let Some(last) = tokens.pop() {
            suffix.insert(0, last);
        }
    }
    None
}

/// The rest of `FilesProcess::resolve`: the suffix joined below the mount
/// if it is a directory, canonicalized and kept inside it. `Ok(None)`: not
/// found.
fn resolve(m: &Mount, suffix: &[&str]) -> Result<Option<(PathBuf, PathBuf)>, String> {
    if !m.real.is_dir() {
        return Ok(suffix.is_empty().then(|| (m.real.clone(), m.real.clone())));
    }
    let joined = m.real.join(suffix.join("/"));
    match std::fs::canonicalize(&joined) {
        Ok(real) if real.starts_with(&m.real) => Ok(Some((m.real.clone(), real))),
        // Component-wise, stricter than Mesos' string prefix test. Not found
        // (Mesos: 400 "inaccessible"), as a missing target is: the answer
        // must not tell whether a host path a link points at exists.
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "Failed to determine canonical path of '{}': {e}",
            joined.display()
        )),
    }
}

/// stout's `path::from_uri`.
fn from_uri(path: &str) -> &str {
    path.strip_prefix("file://").unwrap_or(path)
}

/// The sandbox root and the canonical path of `path` in it, authorized.
fn located(
    agent: &Agent,
    subject: Option<&Subject>,
    path: &str,
) -> Result<(PathBuf, PathBuf), FilesError> {
    let mounts = mounts(agent);
    // A path below no attached sandbox is not found (Mesos: allowed, then
    // not found); one below a sandbox needs that sandbox's ACCESS_SANDBOX.
    let Some((m, suffix)) = attached(&mounts, path) else {
        return Err(FilesError::NotFound);
    };
    if !authorized(agent, subject, m) {
        return Err(FilesError::Unauthorized);
    }
    match resolve(m, &suffix) {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(FilesError::NotFound),
        Err(e) => Err(FilesError::Invalid(format!("{e}.\n"))),
    }
}

/// What a resolved path is now, opened without following any link below
/// the sandbox root: the tenant owns the sandbox and may swap a checked
/// path for a link to a host file between the check and the open (Mesos
/// opens by path; the agent runs as root). A FIFO is opened non-blocking
/// so that it cannot hang a reader.
enum Opened {
    Dir(OwnedFd),
    File(std::fs::File),
    Other,
}

fn open_beneath(root: &Path, real: &Path) -> Result<Opened, FilesError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let inaccessible = || FilesError::Invalid(format!("'{}' is inaccessible.\n", real.display()));
    let swapped = |_: nestguard::beneath::BeneathError| inaccessible();
    if real == root {
        return nestguard::beneath::open_dir(root, root)
            .map(Opened::Dir)
            .map_err(swapped);
    }
    let (Some(parent), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(FilesError::NotFound);
    };
    let dir = nestguard::beneath::open_dir(root, parent).map_err(swapped)?;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Err(FilesError::NotFound),
        Err(rustix::io::Errno::LOOP) => return Err(inaccessible()),
        Err(e) => {
            return Err(FilesError::Unknown(format!(
                "Failed to open file at '{}': {e}.\n",
                real.display()
            )));
        }
    };
    let stat = rustix::fs::fstat(&fd)
        .map_err(|e| FilesError::Unknown(format!("Failed to stat '{}': {e}.\n", real.display())))?;
    Ok(match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => Opened::Dir(fd),
        FileType::RegularFile => Opened::File(std::fs::File::from(fd)),
        _ => Opened::Other,
    })
}

fn name_of_uid(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

fn name_of_gid(gid: u32) -> String {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map(|g| g.name)
        .unwrap_or_else(|| gid.to_string())
}

/// `protobuf::createFileInfo`.
fn file_info(path: String, stat: &rustix::fs::Stat) -> v1::FileInfo {
    v1::FileInfo {
        path,
        nlink: i32::try_from(stat.st_nlink).ok(),
        size: u64::try_from(stat.st_size).ok(),
        mtime: Some(v1::TimeInfo {
            nanoseconds: stat.st_mtime.saturating_mul(1_000_000_000),
        }),
        mode: Some(stat.st_mode),
        uid: Some(name_of_uid(stat.st_uid)),
        gid: Some(name_of_gid(stat.st_gid)),
    }
}

/// `Files::browse`: the entries of a directory, sorted by path; a file
/// lists as nothing. Entries are read and stat'ed through the directory's
/// descriptor, without following links (Mesos' stat follows them: a link
/// to a host path would show that path's size, owner and mtime).
pub fn browse(
    agent: &Agent,
    subject: Option<&Subject>,
    path: &str,
) -> Result<Vec<v1::FileInfo>, FilesError> {
    let path = from_uri(path);
    let (root, real) = located(agent, subject, path)?;
    let Opened::Dir(dir) = open_beneath(&root, &real)? else {
        return Ok(Vec::new());
    };
    let mut entries = std::collections::BTreeMap::new();
    let Ok(mut listing) = rustix::fs::Dir::read_from(&dir) else {
        return Ok(Vec::new());
    };
    while let Some(Ok(entry)) = listing.next() {
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let Ok(stat) = rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) else {
            tracing::warn!(path = %real.display(), "listed but stat failed");
            continue;
        };
        let name = name.to_string_lossy().into_owned();
        let shown = format!("{}/{name}", path.trim_end_matches('/'));
        entries.insert(name, file_info(shown, &stat));
    }
    Ok(entries.into_values().collect())
}

/// `Files::read`: the file's size and up to `length` bytes (at most 64 KiB)
/// from `offset`; nothing past the end.
pub fn read(
    agent: &Agent,
    subject: Option<&Subject>,
    offset: u64,
    length: Option<u64>,
    path: &str,
) -> Result<(u64, Vec<u8>), FilesError> {
    use std::io::{Read, Seek, SeekFrom};
    let (root, real) = located(agent, subject, from_uri(path))?;
    let mut file = match open_beneath(&root, &real)? {
        Opened::File(file) => file,
        Opened::Dir(_) => return Err(FilesError::Invalid("Cannot read a directory.\n".into())),
        Opened::Other => {
            return Err(FilesError::Invalid(format!(
                "Cannot read '{}': not a regular file.\n",
                real.display()
            )));
        }
    };
    let open_failed = |e: std::io::Error| {
        FilesError::Unknown(format!(
            "Failed to open file at '{}': {e}.\n",
            real.display()
        ))
    };
    let size = file.seek(SeekFrom::End(0)).map_err(open_failed)?;
    if offset >= size {
        return Ok((size, Vec::new()));
    }
    let length = length.unwrap_or(size - offset).min(MAX_READ);
    if length == 0 {
        return Ok((size, Vec::new()));
    }
    file.seek(SeekFrom::Start(offset)).map_err(|e| {
        FilesError::Unknown(format!("Failed to seek file at '{}': {e}", real.display()))
    })?;
    let mut data = Vec::new();
    file.take(length)
        .read_to_end(&mut data)
        .map_err(|e| FilesError::Unknown(format!("Failed to read '{}': {e}", real.display())))?;
    Ok((size, data))
}

/// `Files::download`'s lookup: the file, opened (a directory is 400).
pub fn download(
    agent: &Agent,
    subject: Option<&Subject>,
    path: &str,
) -> Result<(PathBuf, std::fs::File), FilesError> {
    let (root, real) = located(agent, subject, from_uri(path))?;
    match open_beneath(&root, &real)? {
        Opened::File(file) => Ok((real, file)),
        Opened::Dir(_) => Err(FilesError::Invalid("Cannot download a directory.\n".into())),
        Opened::Other => Err(FilesError::Invalid(format!(
            "Cannot read '{}': not a regular file.\n",
            real.display()
        ))),
    }
}
