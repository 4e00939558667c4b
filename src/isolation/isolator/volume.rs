//! The `volume/sandbox_path` isolator (Mesos' `volume/sandbox_path` with
//! bind mounts, i.e. `--launcher=linux` and `filesystem/linux`): a
//! `SANDBOX_PATH` volume of type PARENT shares a directory of the parent
//! container's sandbox with a nested container, SELF one of its own
//! sandbox, each as a bind mount (read-only for mode RO) in the launch info.
//!
//! # Escapes
//!
//! Mesos documents "upwards traversal not allowed" but does not check it;
//! we do. A volume's source is resolved below its sandbox one component at
//! a time with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, creating
//! missing directories with `mkdirat` on the parent's descriptor, so `..`
//! and every symbolic link (inside or outside the sandbox) are refused and
//! nothing is ever created outside it. A relative mount target inside the
//! container's own sandbox is resolved the same way. `openat2` is wrapped by
//! `rustix`; we hand-roll only the component walk, which no crate offers
//! with creation. The launcher mounts by path only what lies outside every
//! sandbox: a source or target inside one is resolved again, the same way,
//! when the supervisor mounts it (under Mesos' launcher, the exec stage:
//! [`crate::isolation::exec_stage::launch_mounts`]), and mounted from that
//! descriptor ([`crate::isolation::helper::mounts`]), so a directory of the parent sandbox
//! swapped for a symbolic link after this check makes the launch fail
//! instead of mounting what the link points to.
//!
//! A read-only volume is two mounts: the bind, then a
//! `MS_REMOUNT | MS_BIND | MS_RDONLY` of the target, because Linux ignores
//! `MS_RDONLY` when creating a bind mount (Mesos' `fs::mount` does the same
//! remount implicitly).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use super::error::{IsolatorError, Result};
use super::{Isolator, is_debug};
use crate::container_id::to_dotted;
use crate::isolation::helper::rootfs::SANDBOX_IN_ROOTFS;
use crate::proto::mesos::slave::{
    ContainerConfig, ContainerLaunchInfo, ContainerMountInfo, ContainerState,
};
use crate::proto::mesos::volume::Mode as VolumeMode;
use crate::proto::mesos::volume::source::Type as SourceType;
use crate::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;
use crate::proto::mesos::{ContainerId, Volume};

/// Sandboxes of known containers and the volume mount points inside them,
/// shared by the filesystem, volume and disk isolators.
#[derive(Debug, Default)]
pub struct SandboxRegistry {
    sandboxes: Mutex<HashMap<String, PathBuf>>,
    mount_points: Mutex<HashMap<String, Vec<PathBuf>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SandboxRegistry {
    /// Remembers a container's sandbox.
    /// Remembers the sandbox of every recovered container.
    pub fn insert_recovered(&self, states: &[ContainerState]) {
        for state in states {
            self.insert(&state.container_id, Path::new(&state.directory));
        }
    }

    pub fn insert(&self, id: &ContainerId, sandbox: &Path) {
        lock(&self.sandboxes).insert(to_dotted(id), sandbox.to_path_buf());
    }

    /// A container's sandbox, if known.
    pub fn get(&self, id: &ContainerId) -> Option<PathBuf> {
        lock(&self.sandboxes).get(&to_dotted(id)).cloned()
    }

    /// Forgets a container.
    pub fn remove(&self, id: &ContainerId) {
        lock(&self.sandboxes).remove(&to_dotted(id));
        lock(&self.mount_points).remove(&to_dotted(id));
    }

    /// Records the host paths of volume mount points of a container.
    pub fn set_mount_points(&self, id: &ContainerId, points: Vec<PathBuf>) {
        lock(&self.mount_points).insert(to_dotted(id), points);
    }

    /// The host paths of a container's volume mount points.
    pub fn mount_points(&self, id: &ContainerId) -> Vec<PathBuf> {
        lock(&self.mount_points)
            .get(&to_dotted(id))
            .cloned()
            .unwrap_or_default()
    }
}

/// What to create for a missing last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// Nothing: a missing path is an error.
    Nothing,
    /// A directory (and missing parents).
    Directory,
    /// An empty file (parents as directories), for a file mount point.
    File,
}

fn escape(path: &str, sandbox: &Path, reason: impl Into<String>) -> IsolatorError {
    IsolatorError::Escape {
        path: path.to_owned(),
        sandbox: sandbox.to_path_buf(),
        reason: reason.into(),
    }
}

/// Resolves `relative` below `base` without following any symbolic link
/// and without `..`, creating what is missing as `create` says (owned by
/// `base`'s owner, as Mesos chowns created volume sources). Returns the
/// host path and whether it is a directory.
pub fn resolve_beneath(base: &Path, relative: &str, create: Create) -> Result<(PathBuf, bool)> {
    let parts = relative_parts(base, relative)?;
    let open_flags = OFlags::PATH | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let mut dir: OwnedFd = rustix::fs::open(base, open_flags | OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| IsolatorError::io("open sandbox", base)(e.into()))?;
    let owner =
        rustix::fs::fstat(&dir).map_err(|e| IsolatorError::io("stat sandbox", base)(e.into()))?;
    let mut host = base.to_path_buf();
    let mut is_dir = true;
    let last = parts.len().saturating_sub(1);
    for (i, part) in parts.iter().enumerate() {
        host.push(part);
        let opened =
            match rustix::fs::openat2(&dir, part.as_os_str(), open_flags, Mode::empty(), resolve) {
                Err(rustix::io::Errno::NOENT) if create != Create::Nothing => {
                    let file = i == last && create == Create::File;
                    create_missing(&dir, part, &host, &owner, file)?;
                    rustix::fs::openat2(&dir, part.as_os_str(), open_flags, Mode::empty(), resolve)
                }
                other => other,
            };
        let fd = opened.map_err(|e| open_failure(e, relative, base, &host))?;
        let stat =
            rustix::fs::fstat(&fd).map_err(|e| IsolatorError::io("stat", &host)(e.into()))?;
        is_dir =
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory;
        if i < last && !is_dir {
            return Err(IsolatorError::Volume(format!(
                "'{}' is not a directory",
                host.display()
            )));
        }
        dir = fd;
    }
    Ok((host, is_dir))
}

/// The components of `relative`, refused when it is absolute or climbs
/// with `..` (it must stay below `base`).
fn relative_parts(base: &Path, relative: &str) -> Result<Vec<OsString>> {
    let rel = Path::new(relative);
    if rel.is_absolute() {
        return Err(escape(relative, base, "the path is absolute"));
    }
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(p) => parts.push(p.to_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(escape(relative, base, "'..' is not allowed"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(escape(relative, base, "the path is absolute"));
            }
        }
    }
    Ok(parts)
}

/// Creates the missing `part` in `dir` (at `host`): an empty file when
/// `file`, else a directory (one made meanwhile will do), then chowns it
/// to `owner`'s owner, never through a symbolic link.
fn create_missing(
    dir: &OwnedFd,
    part: &OsStr,
    host: &Path,
    owner: &rustix::fs::Stat,
    file: bool,
) -> Result<()> {
    if file {
        let fd = rustix::fs::openat(
            dir,
            part,
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| IsolatorError::io("create", host)(e.into()))?;
        drop(fd);
    } else {
        match rustix::fs::mkdirat(dir, part, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => {
                return Err(IsolatorError::io("create directory", host)(e.into()));
            }
        }
    }
    rustix::fs::chownat(
        dir,
        part,
        Some(rustix::fs::Uid::from_raw(owner.st_uid)),
        Some(rustix::fs::Gid::from_raw(owner.st_gid)),
        AtFlags::SYMLINK_NOFOLLOW,
    )
    .map_err(|e| IsolatorError::io("chown", host)(e.into()))?;
    Ok(())
}

/// The error for `host`, a component of `relative`, that would not open:
/// a symbolic link or a way out of `base` is an escape.
fn open_failure(e: rustix::io::Errno, relative: &str, base: &Path, host: &Path) -> IsolatorError {
    match e {
        rustix::io::Errno::LOOP => escape(
            relative,
            base,
            format!("'{}' is a symbolic link", host.display()),
        ),
        rustix::io::Errno::XDEV => escape(
            relative,
            base,
            format!("'{}' leaves the sandbox", host.display()),
        ),
        rustix::io::Errno::NOENT => {
            IsolatorError::Volume(format!("'{}' does not exist", host.display()))
        }
        e => IsolatorError::io("open", host)(e.into()),
    }
}

fn bind(source: &Path, target: &str, read_only: bool) -> Vec<ContainerMountInfo> {
    let flags = |f: libc::c_ulong| u32::try_from(f).unwrap_or(0);
    let mut out = vec![ContainerMountInfo {
        source: Some(source.to_string_lossy().into_owned()),
        target: target.to_owned(),
        r#type: None,
        flags: Some(flags(libc::MS_BIND | libc::MS_REC)),
        options: None,
    }];
    if read_only {
        out.push(ContainerMountInfo {
            source: None,
            target: target.to_owned(),
            r#type: None,
            flags: Some(flags(
                libc::MS_BIND | libc::MS_REC | libc::MS_REMOUNT | libc::MS_RDONLY,
            )),
            options: None,
        });
    }
    out
}

/// The `volume/sandbox_path` isolator.
#[derive(Debug)]
pub struct SandboxPathIsolator {
    sandboxes: Arc<SandboxRegistry>,
}

impl SandboxPathIsolator {
    /// Records sandboxes in `sandboxes` (shared with other isolators).
    pub fn new(sandboxes: Arc<SandboxRegistry>) -> Self {
        Self { sandboxes }
    }

    /// The sandbox path type and path of a volume we handle, or `None` for
    /// volumes of other isolators (host paths, images, secrets, …).
    fn ours(volume: &Volume) -> Result<Option<(Option<SandboxPathType>, String)>> {
        if let Some(source) = &volume.source {
            if source.r#type() != SourceType::SandboxPath {
                return Ok(None);
            }
            crate::validation::validate_volume(volume).map_err(|e| IsolatorError::Volume(e.0))?;
            let Some(sp) = &source.sandbox_path else {
                return Err(IsolatorError::Volume(
                    "'source.sandbox_path' is not set for SANDBOX_PATH volume".into(),
                ));
            };
            let kind = match sp.r#type() {
                SandboxPathType::Unknown => None,
                t => Some(t),
            };
            return Ok(Some((kind, sp.path.clone())));
        }
        match &volume.host_path {
            // The legacy form: a relative host path is in the own sandbox.
            Some(p) if volume.image.is_none() && !Path::new(p).is_absolute() => {
                Ok(Some((Some(SandboxPathType::Self_), p.clone())))
            }
            _ => Ok(None),
        }
    }

    /// The directory a SANDBOX_PATH volume's source is resolved in: the
    /// container's own `sandbox` (SELF, for an absolute `container_path`
    /// only) or its parent's (PARENT, for a nested container only).
    fn source_base(
        &self,
        id: &ContainerId,
        kind: Option<SandboxPathType>,
        sandbox: &Path,
        relative_target: bool,
    ) -> Result<PathBuf> {
        match kind {
            None => Err(IsolatorError::Volume(
                "Unknown SANDBOX_PATH volume type".into(),
            )),
            Some(SandboxPathType::Self_) => {
                if relative_target {
                    return Err(IsolatorError::Volume(
                        "'container_path' is relative for SANDBOX_PATH volume SELF type".into(),
                    ));
                }
                Ok(sandbox.to_path_buf())
            }
            Some(SandboxPathType::Parent) => {
                let Some(parent) = id.parent.as_deref() else {
                    return Err(IsolatorError::Volume(
                        "SANDBOX_PATH volume PARENT type only works for nested container".into(),
                    ));
                };
                self.sandboxes.get(parent).ok_or_else(|| {
                    IsolatorError::Volume(
                        "Failed to locate the sandbox for the parent container".into(),
                    )
                })
            }
            Some(SandboxPathType::Unknown) => Err(IsolatorError::Volume(
                "Unknown SANDBOX_PATH volume type".into(),
            )),
        }
    }
}

/// The mount target as the container sees `target` (a path in its
/// `sandbox`): in a container with its own image, the sandbox is bound at
/// [`SANDBOX_IN_ROOTFS`] inside the image, so the volume goes there, below
/// that bind (the exec stage resolves it below the rootfs without symbolic
/// links, after the sandbox's bind: `exec_stage::launch_mounts`).
fn in_image(config: &ContainerConfig, sandbox: &Path, target: PathBuf) -> PathBuf {
    match (config.rootfs.as_deref(), target.strip_prefix(sandbox)) {
        (Some(rootfs), Ok(rel)) => Path::new(rootfs)
            .join(SANDBOX_IN_ROOTFS.trim_start_matches('/'))
            .join(rel),
        _ => target,
    }
}

/// The mount point of a SANDBOX_PATH volume with an absolute
/// `container_path`: on the host's file system tree, so it must exist.
fn absolute_mount_point(container_path: &str) -> Result<PathBuf> {
    // Stricter than Mesos: an absolute mount point is named
    // plainly, so what is checked here is what gets mounted on.
    if container_path.contains('\0')
        || Path::new(container_path)
            .components()
            .any(|c| c == Component::ParentDir)
    {
        return Err(IsolatorError::Volume(format!(
            "'container_path' '{}' of a SANDBOX_PATH volume must not contain '..' \
             or NUL",
            container_path.escape_debug()
        )));
    }
    let target = PathBuf::from(container_path);
    if !target.exists() {
        return Err(IsolatorError::Volume(format!(
            "mount point '{container_path}' of a SANDBOX_PATH volume does not exist \
             (containers without an image mount on the host's file system tree)"
        )));
    }
    // No link on the way: a link (in a directory the tenant can write)
    // would carry the mount elsewhere than the path checked here; the
    // launcher opens it without following links too.
    match std::fs::canonicalize(&target) {
        Ok(real) if real == target => Ok(target),
        Ok(real) => Err(IsolatorError::Volume(format!(
            "mount point '{container_path}' of a SANDBOX_PATH volume has a symbolic link on \
             its way (it leads to '{}'): name the real path",
            real.display()
        ))),
        Err(e) => Err(IsolatorError::Volume(format!(
            "mount point '{container_path}' of a SANDBOX_PATH volume: {e}"
        ))),
    }
}

impl Isolator for SandboxPathIsolator {
    serves_all_containers!("volume/sandbox_path", recover_sandboxes);

    fn prepare(
        &self,
        id: &ContainerId,
        config: &ContainerConfig,
    ) -> Result<Option<ContainerLaunchInfo>> {
        let sandbox = PathBuf::from(&config.directory);
        self.sandboxes.insert(id, &sandbox);
        let volumes = config
            .container_info
            .as_ref()
            .map(|c| c.volumes.as_slice())
            .unwrap_or_default();
        let mut info = ContainerLaunchInfo::default();
        let mut mount_points = Vec::new();
        for volume in volumes {
            let Some((kind, path)) = Self::ours(volume)? else {
                continue;
            };
            if is_debug(config) {
                return Err(IsolatorError::Volume(
                    "SANDBOX_PATH volume is not supported for DEBUG containers".into(),
                ));
            }
            if Path::new(&path).is_absolute() {
                return Err(IsolatorError::Volume(format!(
                    "Path '{path}' in SANDBOX_PATH volume is absolute"
                )));
            }
            let container_path = &volume.container_path;
            let relative_target = !Path::new(container_path).is_absolute();
            let base = self.source_base(id, kind, &sandbox, relative_target)?;
            let (source, source_is_dir) = resolve_beneath(&base, &path, Create::Directory)?;
            if !relative_target && config.rootfs.is_some() {
                return Err(IsolatorError::Volume(format!(
                    "SANDBOX_PATH volume at '{container_path}': an absolute 'container_path' \
                     in a container with its own image is not supported (use a path relative \
                     to its sandbox, {SANDBOX_IN_ROOTFS})"
                )));
            }
            let target = if relative_target {
                let create = if source_is_dir {
                    Create::Directory
                } else {
                    Create::File
                };
                let (target, _) = resolve_beneath(&sandbox, container_path, create)?;
                mount_points.push(target.clone());
                in_image(config, &sandbox, target)
            } else {
                absolute_mount_point(container_path)?
            };
            let read_only = volume.mode() == VolumeMode::Ro;
            tracing::debug!(
                container = %to_dotted(id),
                source = %source.display(),
                target = %target.display(),
                read_only,
                "SANDBOX_PATH volume"
            );
            info.mounts
                .extend(bind(&source, &target.to_string_lossy(), read_only));
        }
        self.sandboxes.set_mount_points(id, mount_points);
        Ok((!info.mounts.is_empty()).then_some(info))
    }

    fn cleanup(&self, id: &ContainerId) -> Result<()> {
        self.sandboxes.remove(id);
        Ok(())
    }
}
