//! Turns a `ContainerLaunchInfo` into what `execve` needs: the executable,
//! argv, the exact environment, working directory, user, rlimits.
//!
//! The environment is exactly `launch_info.environment` plus a default `PATH`
//! when absent (Mesos' helper does the same; nothing of the agent leaks in).
//! Fields this launcher cannot honour are refused before anything is spawned:
//! silently ignoring a seccomp profile or capability set would be permissive.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use nix::sys::resource::Resource;
use nix::unistd::{Gid, Uid, User};

use crate::proto::mesos::r_limit_info::r_limit::Type as RlimitType;
use crate::proto::mesos::slave::ContainerLaunchInfo;

/// `PATH` given to a command whose environment has none (Mesos' default).
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Why a launch info cannot be executed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A field this launcher does not implement.
    #[error("ContainerLaunchInfo.{0} is not supported by the nestguard launcher")]
    Unsupported(&'static str),
    /// No command to run.
    #[error("ContainerLaunchInfo.command is missing or has no value")]
    NoCommand,
    /// A string with an interior NUL.
    #[error("{0} contains a NUL byte")]
    Nul(&'static str),
    /// The command's executable is not found on `PATH` or in the working directory.
    #[error("executable {0:?} not found on PATH or in the working directory")]
    NotFound(String),
    /// The user does not exist.
    #[error("user {0:?} does not exist")]
    UnknownUser(String),
    /// Looking the user up failed.
    #[error("getpwnam({0:?}): {1}")]
    UserLookup(String, nix::Error),
    /// A container image's passwd file cannot be opened.
    #[error("read {0}: {1}")]
    Passwd(PathBuf, std::io::Error),
    /// A container image's passwd file is not a regular file, too large
    /// or unreadable (the text names it).
    #[error("the image's passwd file: {0}")]
    PasswdFile(#[source] crate::input::InputError),
    /// A capability value that is not a known Linux capability + 1000.
    #[error("ContainerLaunchInfo.{0}: unknown capability {1}")]
    Capability(&'static str, i32),
    /// An rlimit entry that cannot be applied.
    #[error("ContainerLaunchInfo.rlimits[{0}]: {1}")]
    Rlimit(usize, &'static str),
}

/// A resolved user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// User id.
    pub uid: Uid,
    /// Primary group id.
    pub gid: Gid,
    /// Supplementary groups (the launch info's, plus the primary group).
    pub groups: Vec<Gid>,
}

/// Everything the supervisor needs to start the command.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Executable to `execve`.
    pub path: CString,
    /// Its argv.
    pub argv: Vec<CString>,
    /// Its complete environment.
    pub env: Vec<CString>,
    /// Working directory.
    pub workdir: PathBuf,
    /// User to switch to, if any.
    pub user: Option<Identity>,
    /// `(resource, soft, hard)`.
    pub rlimits: Vec<(Resource, u64, u64)>,
    /// `PR_SET_NO_NEW_PRIVS`.
    pub no_new_privs: bool,
    /// Capabilities, when the launch info restricts them.
    pub capabilities: Option<Capabilities>,
}

/// The capability sets of the command (Mesos' `linux/capabilities`
/// semantics): everything outside `bounding` is dropped from the bounding
/// set; with `effective`, the permitted, effective, inheritable and ambient
/// sets become exactly it (kept across the user switch), so a non-root
/// command keeps them after `execve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Bounding set (defaults to `effective` when only that is given).
    pub bounding: caps::CapsHashSet,
    /// Effective set, if given.
    pub effective: Option<caps::CapsHashSet>,
}

fn capability_set(
    info: Option<&crate::proto::mesos::CapabilityInfo>,
    field: &'static str,
) -> Result<Option<caps::CapsHashSet>, CommandError> {
    let Some(info) = info else { return Ok(None) };
    let known = caps::all();
    let mut set = caps::CapsHashSet::new();
    for value in &info.capabilities {
        let cap = value
            .checked_sub(1000)
            .and_then(|n| known.iter().find(|c| i32::from(c.index()) == n))
            .ok_or(CommandError::Capability(field, *value))?;
        set.insert(*cap);
    }
    Ok(Some(set))
}

fn capabilities(info: &ContainerLaunchInfo) -> Result<Option<Capabilities>, CommandError> {
    let effective = capability_set(
        info.effective_capabilities.as_ref(),
        "effective_capabilities",
    )?;
    let bounding = capability_set(info.bounding_capabilities.as_ref(), "bounding_capabilities")?;
    Ok(match (bounding, effective) {
        (None, None) => None,
        (Some(bounding), effective) => Some(Capabilities {
            bounding,
            effective,
        }),
        (None, Some(effective)) => Some(Capabilities {
            bounding: effective.clone(),
            effective: Some(effective),
        }),
    })
}

/// Refuses launch-info fields this launcher does not implement.
#[expect(
    deprecated,
    reason = "pre_exec_commands is deprecated but must still be refused"
)]
pub fn check_supported(info: &ContainerLaunchInfo) -> Result<(), CommandError> {
    let checks: [(bool, &'static str); 5] = [
        (!info.pre_exec_commands.is_empty(), "pre_exec_commands"),
        (info.tty_slave_path.is_some(), "tty_slave_path"),
        (!info.masked_paths.is_empty(), "masked_paths"),
        (!info.file_operations.is_empty(), "file_operations"),
        (info.task_environment.is_some(), "task_environment"),
    ];
    match checks.iter().find(|(set, _)| *set) {
        Some((_, name)) => Err(CommandError::Unsupported(name)),
        None => Ok(()),
    }
}

/// Everything about a launch info that can be checked before spawning:
/// unsupported fields, the command, capabilities and rlimits.
pub fn validate(info: &ContainerLaunchInfo) -> Result<(), CommandError> {
    check_supported(info)?;
    if info
        .command
        .as_ref()
        .and_then(|c| c.value.as_ref())
        .is_none()
    {
        return Err(CommandError::NoCommand);
    }
    capabilities(info)?;
    rlimits(info)?;
    Ok(())
}

fn cstring(text: &str, what: &'static str) -> Result<CString, CommandError> {
    CString::new(text).map_err(|_| CommandError::Nul(what))
}

/// Looks up `name` in the user database.
pub fn lookup_user(name: &str, extra_groups: &[u32]) -> Result<Identity, CommandError> {
    let user = User::from_name(name)
        .map_err(|e| CommandError::UserLookup(name.to_owned(), e))?
        .ok_or_else(|| CommandError::UnknownUser(name.to_owned()))?;
    Ok(Identity::new(user.uid, user.gid, extra_groups))
}

impl Identity {
    /// A user with the launch info's extra groups plus its primary group.
    fn new(uid: Uid, gid: Gid, extra_groups: &[u32]) -> Identity {
        let mut groups: Vec<Gid> = extra_groups.iter().map(|g| Gid::from_raw(*g)).collect();
        if !groups.contains(&gid) {
            groups.push(gid);
        }
        Identity { uid, gid, groups }
    }
}

/// The largest passwd file read: an image's passwd is a few KiB; a link
/// to `/dev/zero` or a huge file must not exhaust the supervisor's memory.
const MAX_PASSWD: u64 = 4 * 1024 * 1024;

/// Looks `name` up in a passwd file itself, without NSS: inside a
/// container's own rootfs, NSS would read the image's `nsswitch.conf` and
/// load its `libnss_*` modules into the privileged supervisor (the sudo
/// chroot flaw, CVE-2025-32463). Groups as [`lookup_user`]. The file is
/// read bounded and without blocking (a FIFO or device is refused); to read
/// an image's passwd from the host, use [`lookup_user_in_rootfs`], which
/// also keeps its symbolic links inside the image.
pub fn lookup_user_in_passwd(
    passwd: &Path,
    name: &str,
    extra_groups: &[u32],
) -> Result<Identity, CommandError> {
    let bytes = crate::input::read_file(passwd, MAX_PASSWD).map_err(|e| match e {
        crate::input::InputError::Open { path, source } => CommandError::Passwd(path, source),
        e => CommandError::PasswdFile(e),
    })?;
    parse_passwd(&bytes, name, extra_groups)
}

/// [`lookup_user_in_passwd`] on `<rootfs>/etc/passwd`, resolved as if
/// `rootfs` were `/` (`openat2` with `RESOLVE_IN_ROOT`): an image may
/// legitimately make `/etc/passwd` a link (absolute or relative), but a
/// link never leads to the host's files.
pub fn lookup_user_in_rootfs(
    rootfs: &Path,
    name: &str,
    extra_groups: &[u32],
) -> Result<Identity, CommandError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let passwd = rootfs.join("etc/passwd");
    let failed = |e: rustix::io::Errno| CommandError::Passwd(passwd.clone(), e.into());
    let root = rustix::fs::open(
        rootfs,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| CommandError::Passwd(rootfs.to_path_buf(), e.into()))?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
    // EAGAIN: a rename raced the lookup; the kernel asks to retry.
    let mut opened = rustix::fs::openat2(&root, "etc/passwd", flags, Mode::empty(), resolve);
    for _ in 0..8 {
        if !matches!(opened, Err(rustix::io::Errno::AGAIN)) {
            break;
        }
        opened = rustix::fs::openat2(&root, "etc/passwd", flags, Mode::empty(), resolve);
    }
    let file = std::fs::File::from(opened.map_err(failed)?);
    let bytes =
        crate::input::read_opened(&passwd, file, MAX_PASSWD).map_err(CommandError::PasswdFile)?;
    parse_passwd(&bytes, name, extra_groups)
}

/// Finds `name`'s uid and gid in passwd text (lines that are not UTF-8 or
/// not well formed are skipped).
fn parse_passwd(bytes: &[u8], name: &str, extra_groups: &[u32]) -> Result<Identity, CommandError> {
    let text = String::from_utf8_lossy(bytes);
    let (uid, gid) = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&name))
        .and_then(|f| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))
        .ok_or_else(|| CommandError::UnknownUser(name.to_owned()))?;
    Ok(Identity::new(
        Uid::from_raw(uid),
        Gid::from_raw(gid),
        extra_groups,
    ))
}

fn resource(kind: RlimitType) -> Option<Resource> {
    Some(match kind {
        RlimitType::Unknown => return None,
        RlimitType::RlmtAs => Resource::RLIMIT_AS,
        RlimitType::RlmtCore => Resource::RLIMIT_CORE,
        RlimitType::RlmtCpu => Resource::RLIMIT_CPU,
        RlimitType::RlmtData => Resource::RLIMIT_DATA,
        RlimitType::RlmtFsize => Resource::RLIMIT_FSIZE,
        RlimitType::RlmtLocks => Resource::RLIMIT_LOCKS,
        RlimitType::RlmtMemlock => Resource::RLIMIT_MEMLOCK,
        RlimitType::RlmtMsgqueue => Resource::RLIMIT_MSGQUEUE,
        RlimitType::RlmtNice => Resource::RLIMIT_NICE,
        RlimitType::RlmtNofile => Resource::RLIMIT_NOFILE,
        RlimitType::RlmtNproc => Resource::RLIMIT_NPROC,
        RlimitType::RlmtRss => Resource::RLIMIT_RSS,
        RlimitType::RlmtRtprio => Resource::RLIMIT_RTPRIO,
        RlimitType::RlmtRttime => Resource::RLIMIT_RTTIME,
        RlimitType::RlmtSigpending => Resource::RLIMIT_SIGPENDING,
        RlimitType::RlmtStack => Resource::RLIMIT_STACK,
    })
}

fn rlimits(info: &ContainerLaunchInfo) -> Result<Vec<(Resource, u64, u64)>, CommandError> {
    let mut out = Vec::new();
    let Some(limits) = &info.rlimits else {
        return Ok(out);
    };
    for (i, limit) in limits.rlimits.iter().enumerate() {
        let kind = limit
            .r#type
            .and_then(|t| RlimitType::try_from(t).ok())
            .ok_or(CommandError::Rlimit(i, "unknown or missing type"))?;
        let res = resource(kind).ok_or(CommandError::Rlimit(i, "type UNKNOWN"))?;
        let (soft, hard) = match (limit.soft, limit.hard) {
            (None, None) => (libc::RLIM_INFINITY, libc::RLIM_INFINITY),
            (Some(s), Some(h)) if s <= h => (s, h),
            (Some(_), Some(_)) => {
                return Err(CommandError::Rlimit(i, "soft limit above hard limit"));
            }
            _ => {
                return Err(CommandError::Rlimit(
                    i,
                    "set both soft and hard, or neither",
                ));
            }
        };
        out.push((res, soft, hard));
    }
    Ok(out)
}

/// Finds `name` on `path_var`, then in `workdir` (Mesos also searches the
/// working directory). A name with a `/` is used as is.
fn resolve(name: &str, path_var: &str, workdir: &Path) -> Result<PathBuf, CommandError> {
    use std::os::unix::fs::PermissionsExt;
    if name.contains('/') {
        return Ok(if Path::new(name).is_absolute() {
            PathBuf::from(name)
        } else {
            workdir.join(name)
        });
    }
    let candidates = path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .chain(std::iter::once(workdir.join(name)));
    for candidate in candidates {
        if let Ok(meta) = std::fs::metadata(&candidate)
            && meta.is_file()
            && meta.permissions().mode() & 0o111 != 0
        {
            return Ok(candidate);
        }
    }
    Err(CommandError::NotFound(name.to_owned()))
}

/// Builds the exec plan. Runs in the supervisor, inside the container's mount
/// namespace, so `PATH` lookup sees the container's filesystem.
pub fn prepare(info: &ContainerLaunchInfo, sandbox: &Path) -> Result<Prepared, CommandError> {
    check_supported(info)?;
    let command = info.command.as_ref().ok_or(CommandError::NoCommand)?;
    let value = command.value.as_deref().ok_or(CommandError::NoCommand)?;
    let workdir = info
        .working_directory
        .as_deref()
        .map_or_else(|| sandbox.to_path_buf(), PathBuf::from);

    let mut env = Vec::new();
    let mut path_var = None;
    if let Some(environment) = &info.environment {
        for var in &environment.variables {
            let Some(v) = var.value.as_deref() else {
                return Err(CommandError::Unsupported("environment.variables[].secret"));
            };
            if var.name == "PATH" {
                path_var = Some(v.to_owned());
            }
            env.push(cstring(
                &format!("{}={}", var.name, v),
                "an environment variable",
            )?);
        }
    }
    if path_var.is_none() {
        env.push(cstring(&format!("PATH={DEFAULT_PATH}"), "PATH")?);
    }
    let path_var = path_var.unwrap_or_else(|| DEFAULT_PATH.to_owned());

    let (path, argv) = if command.shell.unwrap_or(true) {
        (
            cstring("/bin/sh", "shell")?,
            vec![
                cstring("sh", "argv")?,
                cstring("-c", "argv")?,
                cstring(value, "command.value")?,
            ],
        )
    } else {
        let exe = resolve(value, &path_var, &workdir)?;
        let argv = command
            .arguments
            .iter()
            .map(|a| cstring(a, "command.arguments"))
            .collect::<Result<Vec<_>, _>>()?;
        (cstring(&exe.to_string_lossy(), "command.value")?, argv)
    };

    // With a rootfs, `prepare` runs after `pivot_root`: /etc is the image's.
    let user = match info.user.as_deref() {
        Some(name) if info.rootfs.is_some() => Some(lookup_user_in_rootfs(
            Path::new("/"),
            name,
            &info.supplementary_groups,
        )?),
        Some(name) => Some(lookup_user(name, &info.supplementary_groups)?),
        None => None,
    };
    Ok(Prepared {
        path,
        argv,
        env,
        workdir,
        user,
        rlimits: rlimits(info)?,
        no_new_privs: info.no_new_privileges.unwrap_or(false),
        capabilities: capabilities(info)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::environment::Variable;
    use crate::proto::mesos::{CommandInfo, Environment};

    fn info(shell: bool, value: &str, args: &[&str]) -> ContainerLaunchInfo {
        ContainerLaunchInfo {
            command: Some(CommandInfo {
                shell: Some(shell),
                value: Some(value.into()),
                arguments: args.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            }),
            environment: Some(Environment {
                variables: vec![Variable {
                    name: "A".into(),
                    value: Some("b".into()),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn passwd_lookup_without_nss() {
        let dir = tempfile::tempdir().unwrap();
        let passwd = dir.path().join("passwd");
        std::fs::write(
            &passwd,
            "# image users\nroot:x:0:0::/root:/bin/sh\napp:x:1000:1001:App:/home/app:/bin/sh\nbad:x:oops:1\n",
        )
        .unwrap();
        let app = lookup_user_in_passwd(&passwd, "app", &[7]).unwrap();
        assert_eq!(
            (app.uid.as_raw(), app.gid.as_raw(), app.groups),
            (1000, 1001, vec![Gid::from_raw(7), Gid::from_raw(1001)])
        );
        for missing in ["nobody", "bad", "# image users"] {
            assert!(matches!(
                lookup_user_in_passwd(&passwd, missing, &[]),
                Err(CommandError::UnknownUser(_))
            ));
        }
        assert!(matches!(
            lookup_user_in_passwd(&dir.path().join("none"), "app", &[]),
            Err(CommandError::Passwd(..))
        ));
    }

    /// An image whose /etc/passwd is a link to /dev/zero, a FIFO or a host
    /// file fails at once with a clear error, and never reads the host's
    /// files; legitimate links inside the image work.
    #[test]
    fn image_passwd_is_read_bounded_inside_the_rootfs() {
        let started = std::time::Instant::now();
        let rootfs = tempfile::tempdir().unwrap();
        let etc = rootfs.path().join("etc");
        std::fs::create_dir(&etc).unwrap();
        let link = etc.join("passwd");
        // An absolute link resolves inside the image (no /dev/zero there).
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = lookup_user_in_rootfs(rootfs.path(), "app", &[]).unwrap_err();
        assert!(matches!(err, CommandError::Passwd(..)), "{err}");
        assert!(err.to_string().contains("etc/passwd"), "{err}");
        // Reached directly (the in-image path after pivot_root), the device
        // is refused instead of read.
        let err = lookup_user_in_passwd(&link, "app", &[]).unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
        // A link to a host file: the host's file is never read.
        let host = tempfile::tempdir().unwrap();
        let host_passwd = host.path().join("passwd");
        std::fs::write(&host_passwd, "app:x:0:0::/:/bin/sh\n").unwrap();
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&host_passwd, &link).unwrap();
        assert!(lookup_user_in_rootfs(rootfs.path(), "app", &[]).is_err());
        // ... a relative one climbing out stays in the image too.
        std::fs::remove_file(&link).unwrap();
        let climb = format!("../../../../../../../..{}", host_passwd.display());
        std::os::unix::fs::symlink(&climb, &link).unwrap();
        assert!(lookup_user_in_rootfs(rootfs.path(), "app", &[]).is_err());
        // A FIFO fails at once.
        std::fs::remove_file(&link).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&link)
            .status()
            .unwrap();
        assert!(made.success());
        let err = lookup_user_in_rootfs(rootfs.path(), "app", &[]).unwrap_err();
        assert!(err.to_string().contains("a FIFO"), "{err}");
        // Too large.
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, vec![b'#'; MAX_PASSWD as usize + 1]).unwrap();
        let err = lookup_user_in_rootfs(rootfs.path(), "app", &[]).unwrap_err();
        assert!(err.to_string().contains("larger than"), "{err}");
        // Legitimate links inside the image, absolute and relative.
        std::fs::remove_file(&link).unwrap();
        let lib = rootfs.path().join("usr/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("passwd"), "app:x:1000:1001::/:/bin/sh\n").unwrap();
        for target in ["/usr/lib/passwd", "../usr/lib/passwd"] {
            std::os::unix::fs::symlink(target, &link).unwrap();
            let app = lookup_user_in_rootfs(rootfs.path(), "app", &[]).unwrap();
            assert_eq!(
                (app.uid.as_raw(), app.gid.as_raw()),
                (1000, 1001),
                "{target}"
            );
            std::fs::remove_file(&link).unwrap();
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn shell_and_exec_forms() {
        let p = prepare(&info(true, "exit 3", &[]), Path::new("/tmp")).unwrap();
        assert_eq!(p.path.to_str().unwrap(), "/bin/sh");
        assert_eq!(p.argv.len(), 3);
        assert_eq!(p.env.len(), 2, "exactly the launch env plus PATH");
        let p = prepare(&info(false, "true", &["truth"]), Path::new("/tmp")).unwrap();
        assert!(p.path.to_str().unwrap().ends_with("/true"));
        assert_eq!(p.argv[0].to_str().unwrap(), "truth");
        assert!(matches!(
            prepare(
                &info(false, "no-such-nestguard-binary", &[]),
                Path::new("/tmp")
            ),
            Err(CommandError::NotFound(_))
        ));
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        let mut c = info(true, "true", &[]);
        c.effective_capabilities = Some(crate::proto::mesos::CapabilityInfo {
            capabilities: vec![1010],
        });
        let p = prepare(&c, Path::new("/tmp"))
            .unwrap()
            .capabilities
            .unwrap();
        assert_eq!(p.bounding, p.effective.clone().unwrap());
        assert!(p.bounding.contains(&caps::Capability::CAP_NET_BIND_SERVICE));
        c.effective_capabilities = Some(crate::proto::mesos::CapabilityInfo {
            capabilities: vec![7],
        });
        assert!(matches!(
            prepare(&c, Path::new("/tmp")),
            Err(CommandError::Capability("effective_capabilities", 7))
        ));
        let mut i = info(true, "true", &[]);
        i.tty_slave_path = Some("/dev/pts/7".into());
        assert_eq!(
            prepare(&i, Path::new("/tmp")).unwrap_err().to_string(),
            "ContainerLaunchInfo.tty_slave_path is not supported by the nestguard launcher"
        );
        assert!(matches!(
            prepare(&ContainerLaunchInfo::default(), Path::new("/tmp")),
            Err(CommandError::NoCommand)
        ));
    }
}
