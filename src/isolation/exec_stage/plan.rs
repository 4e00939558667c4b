//! What the stage applies, as the agent computed it, and its argv form.
//!
//! The plan travels in the command's arguments (Mesos passes them through
//! untouched and they vanish at the stage's `execve`): base64 of JSON, one
//! argument. The stage decodes it bounded and refuses anything malformed.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

/// The largest plan argument accepted (Docker's profile compiles to about
/// 10 KiB of BPF; the kernel takes 4096 instructions per filter).
pub const MAX_PLAN_BYTES: usize = 1 << 20;

/// Why a stage argv cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The arguments are not of the stage's form.
    #[error("usage: {0}")]
    Usage(&'static str),
    /// The plan argument does not decode.
    #[error("the --plan argument is not a valid plan: {0}")]
    Plan(String),
    /// The `--mounts` argument does not decode.
    #[error("the --mounts argument is not valid: {0}")]
    Mounts(String),
    /// The `--user` argument does not parse.
    #[error("--user takes uid:gid[:group,group…], found {0:?}")]
    User(String),
}

/// The defences of one container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecPlan {
    /// The container (dotted), for messages.
    pub container: String,
    /// Bounding set as a bit mask (bit n = capability n).
    pub bounding: u64,
    /// Effective (and permitted, inheritable, ambient) set, when asked for.
    pub effective: Option<u64>,
    /// Set `PR_SET_NO_NEW_PRIVS`.
    pub no_new_privs: bool,
    /// Seccomp filters, encoded as the launcher's (installed in order).
    pub filters: Vec<String>,
    /// Make the kernel's knobs read-only (own mount namespace only).
    pub read_only_paths: bool,
    /// The agent's mount namespace (inode of `/proc/self/ns/mnt`).
    pub agent_mnt_ns: u64,
    /// The sandboxes of the container's tree, outermost first (Mesos'
    /// layout: `…/runs/<id>`, then each `…/containers/<id>`): the mounts
    /// from or onto them are the stage's to make through descriptors
    /// ([`super::launch_mounts`]). Sealed with the rest, so the tenant
    /// never chooses what counts as a sandbox.
    pub sandboxes: Vec<std::path::PathBuf>,
    /// The stage binary as the isolator found it on the host at prepare:
    /// what Mesos' helper must have executed, and what the stage's path must
    /// still be once every mount is made (see [`StageIdentity`]).
    pub stage: StageIdentity,
    /// The container's own root file system (an image's, which Mesos'
    /// provisioner made): the wrapper takes it from Mesos' helper and the
    /// stage enters it itself ([`super::rootfs`]). Sealed, so the tenant
    /// never chooses the tree the stage pivots into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<std::path::PathBuf>,
    /// What Mesos' posix launcher does not do (the agent's `--launcher=posix`,
    /// the only launcher of Mesos 1.11 that starts on a cgroup v2-only
    /// host), the wrapper does before Mesos' helper runs
    /// ([`super::posix_launcher`]). Sealed, so the tenant never chooses.
    #[serde(default, skip_serializing_if = "PosixLaunch::is_empty")]
    pub posix: PosixLaunch,
}

/// The namespaces and the cgroup of a container started by Mesos' posix
/// launcher, which clones no namespace and joins no cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PosixLaunch {
    /// `CLONE_NEW*` flags of the namespaces to create (the isolators'
    /// `clone_namespaces`, which Mesos' posix launcher refuses).
    #[serde(default)]
    pub unshare: i32,
    /// The `cgroup.procs` files to join before anything runs: the
    /// container's v2 `leaf` (an `isolate` after the fork would come after
    /// the wrapper's own fork into the new pid namespace).
    #[serde(default)]
    pub cgroup_procs: Vec<std::path::PathBuf>,
    /// `CLONE_NEW*` flags of the parent's namespaces to enter (never the
    /// mount one: Mesos' helper enters that itself, after `execve`).
    #[serde(default)]
    pub enter: i32,
    /// The parent's process whose namespaces are entered, and its start
    /// time (a pid reused by another process is refused).
    #[serde(default)]
    pub enter_pid: u32,
    /// See `enter_pid`.
    #[serde(default)]
    pub enter_start_time: u64,
}

impl PosixLaunch {
    /// Nothing to do (any other launcher).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The stage binary's path, device and inode.
///
/// Why: Mesos' helper executes the stage *by path* as root, and so does a
/// debug session that later joins the container's mount namespace. A mount
/// in that namespace covering the path (a volume whose absolute
/// `container_path` leads there through a link the tenant made) would have
/// the tenant's file run as root. So the stage, once the container's mounts
/// are made and before anything else, checks that its path still names
/// this very file; after that nothing in the container may mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageIdentity {
    /// The stage's path on the host (the command Mesos' helper executes).
    pub path: std::path::PathBuf,
    /// `st_dev` of that file.
    pub dev: u64,
    /// `st_ino` of that file.
    pub ino: u64,
}

impl StageIdentity {
    /// The identity of the file at `path` now.
    pub fn of(path: &std::path::Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// Fails unless the stage's path still names the sealed file.
    pub fn verify(&self) -> Result<(), String> {
        match Self::of(&self.path) {
            Ok(now) if now == *self => Ok(()),
            Ok(_) => Err(format!(
                "'{}' is no longer the exec stage the isolator sealed (a mount covers it in \
                 this container's mount namespace): refusing to run anything",
                self.path.display()
            )),
            Err(e) => Err(format!("stat {}: {e}", self.path.display())),
        }
    }
}

/// A user to switch to, resolved on the host by the wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageUser {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

impl StageUser {
    /// `uid:gid:g,g` (the `--user` value).
    pub fn to_arg(&self) -> String {
        let groups: Vec<String> = self.groups.iter().map(u32::to_string).collect();
        format!("--user={}:{}:{}", self.uid, self.gid, groups.join(","))
    }

    fn parse(value: &str) -> Result<Self, PlanError> {
        let bad = || PlanError::User(value.to_owned());
        let mut parts = value.splitn(3, ':');
        let uid = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let gid = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let groups = match parts.next() {
            None | Some("") => Vec::new(),
            Some(list) => list
                .split(',')
                .map(|g| g.parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?,
        };
        Ok(StageUser { uid, gid, groups })
    }
}

/// The prefix of the working directory in the rootfs, as the wrapper hands
/// it to the stage (`--workdir=<path>`).
pub const WORKDIR_ARG: &str = "--workdir=";

/// A decoded stage argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageArgs {
    /// The defences.
    pub plan: ExecPlan,
    /// The user to switch to, if the wrapper moved it here.
    pub user: Option<StageUser>,
    /// The sandbox mounts the wrapper took from Mesos' helper.
    pub mounts: Vec<crate::proto::mesos::slave::ContainerMountInfo>,
    /// The working directory inside the rootfs (the launch info's, which
    /// the wrapper took from Mesos' helper with the rootfs).
    pub workdir: Option<Vec<u8>>,
    /// The command's executable (searched on `PATH` as Mesos does).
    pub path: Vec<u8>,
    /// The command's argv, verbatim.
    pub argv: Vec<Vec<u8>>,
}

impl ExecPlan {
    /// A plan with no defence of note for `stage`, for tests.
    #[cfg(test)]
    pub(crate) fn example(stage: &str, sandboxes: &[&str]) -> Self {
        ExecPlan {
            container: "p.c".into(),
            bounding: 0,
            effective: None,
            no_new_privs: true,
            filters: Vec::new(),
            read_only_paths: true,
            agent_mnt_ns: 1,
            sandboxes: sandboxes.iter().map(Into::into).collect(),
            stage: StageIdentity {
                path: stage.into(),
                dev: 1,
                ino: 2,
            },
            rootfs: None,
            posix: PosixLaunch::default(),
        }
    }

    /// The trees the stage's mounts are resolved below, without symbolic
    /// links: the sandboxes, outermost first, then the rootfs.
    pub fn roots(&self) -> Vec<std::path::PathBuf> {
        let mut roots = self.sandboxes.clone();
        roots.extend(self.rootfs.iter().cloned());
        roots
    }

    /// The `--plan=` argument.
    pub fn to_arg(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("--plan={}", BASE64.encode(json))
    }

    /// Decodes the value of a `--plan=` argument (bounded).
    pub fn from_arg(value: &[u8]) -> Result<Self, PlanError> {
        if value.len() > MAX_PLAN_BYTES {
            return Err(PlanError::Plan(format!(
                "{} bytes, more than {MAX_PLAN_BYTES}",
                value.len()
            )));
        }
        let json = BASE64
            .decode(value)
            .map_err(|e| PlanError::Plan(format!("base64: {e}")))?;
        serde_json::from_slice(&json).map_err(|e| PlanError::Plan(format!("JSON: {e}")))
    }
}

const USAGE: &str = "nestguard-exec --plan=<plan> [--user=uid:gid:groups] [--mounts=<mounts>] [--workdir=<dir>] -- <path> [argv0 args…]";

/// Parses the stage's arguments (without `argv[0]`).
pub fn parse_args(args: &[&[u8]]) -> Result<StageArgs, PlanError> {
    let mut plan = None;
    let mut user = None;
    let mut mounts = None;
    let mut workdir = None;
    let mut rest = args.iter();
    for arg in rest.by_ref() {
        if *arg == b"--" {
            break;
        } else if let Some(v) = arg.strip_prefix(b"--plan=") {
            if plan.replace(ExecPlan::from_arg(v)?).is_some() {
                return Err(PlanError::Usage(USAGE));
            }
        } else if let Some(v) = arg.strip_prefix(WORKDIR_ARG.as_bytes()) {
            if workdir.replace(v.to_vec()).is_some() {
                return Err(PlanError::Usage(USAGE));
            }
        } else if arg.starts_with(b"--seal=") {
            // The wrapper's business (see `seal`); nothing for the stage.
        } else if let Some(v) = arg.strip_prefix(b"--mounts=") {
            let list = super::launch_mounts::from_arg(v).map_err(PlanError::Mounts)?;
            if mounts.replace(list).is_some() {
                return Err(PlanError::Usage(USAGE));
            }
        } else if let Some(v) = arg.strip_prefix(b"--user=") {
            let text = std::str::from_utf8(v)
                .map_err(|_| PlanError::User(String::from_utf8_lossy(v).into_owned()))?;
            if user.replace(StageUser::parse(text)?).is_some() {
                return Err(PlanError::Usage(USAGE));
            }
        } else {
            return Err(PlanError::Usage(USAGE));
        }
    }
    let plan = plan.ok_or(PlanError::Usage(USAGE))?;
    let path = rest.next().ok_or(PlanError::Usage(USAGE))?.to_vec();
    if path.is_empty() {
        return Err(PlanError::Usage(USAGE));
    }
    Ok(StageArgs {
        plan,
        user,
        mounts: mounts.unwrap_or_default(),
        workdir,
        path,
        argv: rest.map(|a| a.to_vec()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> ExecPlan {
        ExecPlan {
            container: "pod.task".into(),
            bounding: 0b1010,
            effective: None,
            no_new_privs: true,
            filters: vec!["AAAA".into()],
            read_only_paths: true,
            agent_mnt_ns: 4026531840,
            sandboxes: vec!["/w/runs/p".into()],
            stage: StageIdentity {
                path: "/opt/ng/nestguard-exec".into(),
                dev: 1,
                ino: 2,
            },
            rootfs: None,
            posix: PosixLaunch::default(),
        }
    }

    #[test]
    fn round_trips_with_and_without_a_user() {
        let p = plan();
        let plan_arg = p.to_arg();
        let user = StageUser {
            uid: 65534,
            gid: 65534,
            groups: vec![65534, 4],
        };
        let user_arg = user.to_arg();
        let args: Vec<&[u8]> = vec![
            plan_arg.as_bytes(),
            user_arg.as_bytes(),
            b"--",
            b"/bin/sh",
            b"sh",
            b"-c",
            b"exit 3",
        ];
        let parsed = parse_args(&args).unwrap();
        assert_eq!(parsed.plan, p);
        assert_eq!(parsed.user, Some(user));
        assert_eq!(parsed.path, b"/bin/sh");
        assert_eq!(
            parsed.argv,
            vec![b"sh".to_vec(), b"-c".to_vec(), b"exit 3".to_vec()]
        );
        let args: Vec<&[u8]> = vec![plan_arg.as_bytes(), b"--", b"/bin/true"];
        let parsed = parse_args(&args).unwrap();
        assert_eq!(parsed.user, None);
        assert!(parsed.mounts.is_empty());
        let mount = crate::proto::mesos::slave::ContainerMountInfo {
            source: Some("/w/runs/p/a".into()),
            target: "/w/runs/p/b".into(),
            flags: Some(libc::MS_BIND as u32),
            ..Default::default()
        };
        let mounts_arg = super::super::launch_mounts::to_arg(std::slice::from_ref(&mount));
        let args: Vec<&[u8]> = vec![plan_arg.as_bytes(), mounts_arg.as_bytes(), b"--", b"/x"];
        assert_eq!(parse_args(&args).unwrap().mounts, [mount]);
        let twice: Vec<&[u8]> = vec![
            plan_arg.as_bytes(),
            mounts_arg.as_bytes(),
            mounts_arg.as_bytes(),
            b"--",
            b"/x",
        ];
        assert!(parse_args(&twice).is_err());
        let bad: Vec<&[u8]> = vec![plan_arg.as_bytes(), b"--mounts=e30=", b"--", b"/x"];
        assert!(
            parse_args(&bad)
                .unwrap_err()
                .to_string()
                .contains("--mounts")
        );
        assert!(parsed.argv.is_empty());
    }

    #[test]
    fn refuses_malformed_arguments() {
        let plan_arg = plan().to_arg();
        let cases: Vec<Vec<&[u8]>> = vec![
            vec![],
            vec![b"--", b"/bin/true"],
            vec![plan_arg.as_bytes(), b"--"],
            vec![
                plan_arg.as_bytes(),
                plan_arg.as_bytes(),
                b"--",
                b"/bin/true",
            ],
            vec![b"--plan=!!!", b"--", b"/bin/true"],
            vec![b"--plan=e30=", b"--", b"/bin/true"],
            vec![plan_arg.as_bytes(), b"--user=0", b"--", b"/bin/true"],
            vec![plan_arg.as_bytes(), b"--user=a:b", b"--", b"/bin/true"],
            vec![plan_arg.as_bytes(), b"--other", b"--", b"/bin/true"],
        ];
        for case in cases {
            assert!(parse_args(&case).is_err(), "{case:?}");
        }
        let huge = vec![b'A'; MAX_PLAN_BYTES + 4];
        let mut arg = b"--plan=".to_vec();
        arg.extend_from_slice(&huge);
        let e = parse_args(&[&arg, b"--", b"/bin/true"]).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
    }
}
