//! Seccomp filters for container commands: a [`ContainerSeccompProfile`]
//! (what the `seccomp` isolator puts in `ContainerLaunchInfo.seccomp_profile`)
//! compiled to classic BPF by `bpf.rs` (a binary search over call numbers;
//! seccompiler installs it and is the reference its tests compare with),
//! and installed by the command process as its last step before `execve`.
//!
//! # Where each step runs
//!
//! * **host** ([`filters_for`]): the profile and the container's bounding
//!   set become BPF programs, compiled once per (profile, capability set)
//!   and cached; they travel to the helper base64-encoded in the launch
//!   control record.
//! * **helper** ([`decode`]): decoded into memory before anything is
//!   forked — the supervisor and the command share the helper's address
//!   space (`CLONE_VM|CLONE_VFORK`, see `helper/vfork.rs`) and must not allocate.
//! * **command** ([`install`]): after `no_new_privs` and the user switch,
//!   just before `execve`; the filter never applies to the supervisor.
//!
//! # One profile, one filter
//!
//! A profile has a default action and rules with actions of their own
//! (Docker's `clone3` → `ENOSYS`). seccompiler's filters have one action
//! for matching calls and one for the rest, so a profile used to become a
//! stack of filters (the kernel runs every installed filter and keeps the
//! strongest result). `bpf.rs` instead gives each call its rules in order
//! of that same kernel precedence, each returning its own action, so the
//! first rule that matches decides as the stack would have: one filter,
//! one install. The tests keep the stacked layout, built by seccompiler,
//! as the reference the single filter must agree with on every call.
//!
//! Stricter than Mesos (libseccomp): only the native architecture is
//! allowed (32-bit and x32 calls of an x86-64 container are refused — the
//! process is killed on a foreign architecture); `ACT_KILL` kills the whole
//! process, not one thread. As with libseccomp's default, installing a
//! filter also sets `no_new_privs`.
//!
//! Cost: seccompiler laid Docker's default profile out as a linear chain
//! of 1,613 + 10 instructions (Docker's capabilities); the kernel runs a
//! new filter once for every call number when it builds its action cache,
//! so installing it took about 1.0–1.3 ms (median, forked child, loaded
//! 2-core host) and a launch with seccomp 1.6× one without. `bpf.rs` lays
//! the same decisions out as a binary search over call numbers (about 200
//! instructions, installed in about 0.15 ms). Each installed filter also
//! has a fixed cost (about 30–40 µs here for a 9-instruction one, measured
//! in a forked child), which is why the profile is one filter, not two.
//! Looking a profile up in the cache compares it field by field instead of
//! encoding it (about 6 KiB) for a key.

pub mod bpf;
pub mod default_profile;
pub mod docker_json;

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use seccompiler::{BpfProgram, SeccompAction, sock_filter};

use bpf::{CmpOp, Cond};

use crate::proto::mesos::seccomp::ContainerSeccompProfile;
use crate::proto::mesos::seccomp::container_seccomp_profile::Syscall;
use crate::proto::mesos::seccomp::container_seccomp_profile::syscall::arg::Operator;
use crate::proto::mesos::seccomp::container_seccomp_profile::syscall::{Action, Filter};
use crate::proto::mesos::slave::ContainerLaunchInfo;

/// Why a profile cannot become a filter, or a filter cannot be installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// A profile file is not JSON of Docker's seccomp format.
    #[error("seccomp profile {source_name}: {error}")]
    Json {
        /// The file.
        source_name: String,
        /// serde's text (with line and column).
        error: String,
    },
    /// A profile field has a value we cannot use.
    #[error("seccomp profile {at}: expected {expected}, got '{found}'")]
    Profile {
        /// File and JSON path (or the profile field).
        at: String,
        /// What was expected.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// The rules cannot become a filter (e.g. an argument index past 5).
    #[error("seccomp filter cannot be compiled: {0}")]
    Compile(String),
    /// This architecture is not supported.
    #[error("seccomp filters are not supported on {0}")]
    Architecture(&'static str),
    /// The encoded filter in the launch data is malformed.
    #[error("seccomp filter in the launch data is malformed")]
    Encoding,
}

/// The native architecture's `AUDIT_ARCH_*` value (little-endian
/// 64-bit architectures only: the argument offsets in `bpf.rs` assume it).
fn audit_arch() -> Result<u32, SeccompError> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(0xC000_003E),
        "aarch64" => Ok(0xC000_00B7),
        "riscv64" => Ok(0xC000_00F3),
        other => Err(SeccompError::Architecture(other)),
    }
}

/// The call's number here, `None` if this architecture has no such call.
fn native_number(name: &str) -> Option<i64> {
    syscalls::Sysno::from_str(name)
        .ok()
        .map(|s| i64::from(s.id()))
}

/// Whether some architecture has a call of this name (a profile may list
/// calls of several architectures, as Docker's does).
pub fn known_anywhere(name: &str) -> bool {
    native_number(name).is_some()
        || syscalls::x86::Sysno::from_str(name).is_ok()
        || syscalls::x86_64::Sysno::from_str(name).is_ok()
        || syscalls::arm::Sysno::from_str(name).is_ok()
        || syscalls::aarch64::Sysno::from_str(name).is_ok()
        || syscalls::powerpc::Sysno::from_str(name).is_ok()
        || syscalls::powerpc64::Sysno::from_str(name).is_ok()
        || syscalls::s390x::Sysno::from_str(name).is_ok()
        || syscalls::mips::Sysno::from_str(name).is_ok()
        || syscalls::mips64::Sysno::from_str(name).is_ok()
        || syscalls::riscv64::Sysno::from_str(name).is_ok()
        || syscalls::loongarch64::Sysno::from_str(name).is_ok()
}

fn action(a: i32, errno: Option<u32>) -> Result<SeccompAction, SeccompError> {
    let errno = errno.unwrap_or(libc::EPERM as u32);
    Ok(match Action::try_from(a).unwrap_or(Action::Unknown) {
        Action::ActAllow => SeccompAction::Allow,
        Action::ActErrno => SeccompAction::Errno(errno),
        Action::ActKill => SeccompAction::KillProcess,
        Action::ActTrap => SeccompAction::Trap,
        Action::ActTrace => SeccompAction::Trace(0),
        Action::Unknown => {
            return Err(SeccompError::Profile {
                at: "action".into(),
                expected: "a known action",
                found: a.to_string(),
            });
        }
    })
}

fn condition(
    arg: &crate::proto::mesos::seccomp::container_seccomp_profile::syscall::Arg,
) -> Result<Cond, SeccompError> {
    let op = match Operator::try_from(arg.op).unwrap_or(Operator::Unknown) {
        Operator::CmpNe => CmpOp::Ne,
        Operator::CmpLt => CmpOp::Lt,
        Operator::CmpLe => CmpOp::Le,
        Operator::CmpEq => CmpOp::Eq,
        Operator::CmpGe => CmpOp::Ge,
        Operator::CmpGt => CmpOp::Gt,
        // libseccomp's MASKED_EQ: (arg & value) == value_two.
        Operator::CmpMaskedEq => CmpOp::MaskedEq(arg.value),
        Operator::Unknown => {
            return Err(SeccompError::Profile {
                at: "args.op".into(),
                expected: "a known operator",
                found: arg.op.to_string(),
            });
        }
    };
    let value = if matches!(op, CmpOp::MaskedEq(_)) {
        arg.value_two
    } else {
        arg.value
    };
    let index = u8::try_from(arg.index)
        .ok()
        .filter(|i| *i < 6)
        .ok_or_else(|| {
            SeccompError::Compile(format!("argument {}: index out of range", arg.index))
        })?;
    // 64-bit comparisons, as libseccomp makes them.
    Ok(Cond { index, op, value })
}

/// Whether a rule's capability conditions hold for a bounding set (bit n =
/// capability n): every `includes` capability present, no `excludes` one.
fn caps_hold(rule: &Syscall, bounding: u64) -> bool {
    let has = |c: &i32| {
        c.checked_sub(1000)
            .and_then(|n| u32::try_from(n).ok())
            .and_then(|n| 1u64.checked_shl(n))
            .is_some_and(|bit| bounding & bit != 0)
    };
    let all = |f: &Option<Filter>| f.as_ref().is_none_or(|f| f.capabilities.iter().all(has));
    let none = |f: &Option<Filter>| f.as_ref().is_none_or(|f| !f.capabilities.iter().any(has));
    all(&rule.includes) && none(&rule.excludes)
}

/// Rules of one action: call number → conditions (`None`: unconditional).
type Rules = BTreeMap<i64, Option<Vec<Vec<Cond>>>>;

fn add(rules: &mut Rules, nr: i64, rule: Option<Vec<Cond>>) {
    let entry = rules.entry(nr).or_insert_with(|| Some(Vec::new()));
    match (entry.as_mut(), rule) {
        (Some(list), Some(r)) => list.push(r),
        (_, None) => *entry = None,
        (None, Some(_)) => {}
    }
}

fn finish(rules: Rules) -> bpf::Rules {
    rules
        .into_iter()
        .filter_map(|(nr, r)| Some((u32::try_from(nr).ok()?, r.unwrap_or_default())))
        .collect()
}

/// A profile's rules that apply to one bounding set, grouped by action.
struct Grouped {
    default: SeccompAction,
    /// Action (as its BPF return value) → its rules. Rules whose action is
    /// the default are left out: they decide nothing.
    groups: BTreeMap<u32, (SeccompAction, Rules)>,
}

fn group(profile: &ContainerSeccompProfile, bounding: u64) -> Result<Grouped, SeccompError> {
    let default = action(profile.default_action, profile.default_errno_ret)?;
    let mut groups: BTreeMap<u32, (SeccompAction, Rules)> = BTreeMap::new();
    for rule in profile.syscalls.iter().filter(|r| caps_hold(r, bounding)) {
        let act = action(rule.action, rule.errno_ret)?;
        if act == default {
            continue;
        }
        let conditions = rule
            .args
            .iter()
            .map(condition)
            .collect::<Result<Vec<_>, _>>()?;
        let seccomp_rule = (!conditions.is_empty()).then_some(conditions);
        let (_, rules) = groups
            .entry(u32::from(act.clone()))
            .or_insert_with(|| (act, Rules::new()));
        for name in &rule.names {
            match native_number(name) {
                Some(nr) => add(rules, nr, seccomp_rule.clone()),
                None if known_anywhere(name) => {}
                None => {
                    return Err(SeccompError::Profile {
                        at: "syscalls.names".into(),
                        expected: "a Linux system call name",
                        found: name.clone(),
                    });
                }
            }
        }
    }
    Ok(Grouped { default, groups })
}

/// How strongly the kernel ranks a filter's return value when several
/// filters are stacked: lower wins (`ACTION_ONLY` in kernel/seccomp.c, a
/// signed comparison, so `KILL_PROCESS` ranks first and `ALLOW` last).
fn precedence(ret: u32) -> i32 {
    (ret & libc::SECCOMP_RET_ACTION_FULL) as i32
}

/// Compiles `profile` for a container whose bounding set is `bounding`
/// into the filters to install, in order (always exactly one).
pub fn compile(
    profile: &ContainerSeccompProfile,
    bounding: u64,
) -> Result<Vec<BpfProgram>, SeccompError> {
    let arch = audit_arch()?;
    let Grouped { default, groups } = group(profile, bounding)?;
    // The strongest action first; among equals (two errno values), the
    // larger return value first: the stacked layout installs it last, so
    // the kernel runs it first and keeps its result.
    let mut order: Vec<u32> = groups.keys().copied().collect();
    order.sort_by_key(|ret| (precedence(*ret), std::cmp::Reverse(*ret)));
    let mut decisions = bpf::Decisions::new();
    for ret in order {
        let (_, rules) = &groups[&ret];
        for (nr, alts) in finish(rules.clone()) {
            let entry = decisions.entry(nr).or_default();
            if alts.is_empty() {
                entry.push((Vec::new(), ret));
            } else {
                entry.extend(alts.into_iter().map(|conds| (conds, ret)));
            }
        }
    }
    Ok(vec![bpf::build_decisions(
        &decisions,
        arch,
        u32::from(default),
    )])
}

/// Builds one filter from rules: (rules, mismatch action, match action).
#[cfg(test)]
type Builder<'a> =
    &'a dyn Fn(bpf::Rules, SeccompAction, SeccompAction) -> Result<BpfProgram, SeccompError>;

/// The same decisions as [`compile`], laid out as stacked filters of one
/// action each (the layout before one filter could carry several actions),
/// each built by `build`: the tests check `compile` against this with
/// seccompiler as `build`.
///
/// Filter 0 allows every call some rule names (with the rule's argument
/// conditions) and gives the default action to the rest; then one filter
/// per other action returns that action for its rules and allows the rest.
/// The kernel runs every filter and keeps the strongest result.
#[cfg(test)]
fn compile_with(
    profile: &ContainerSeccompProfile,
    bounding: u64,
    build: Builder<'_>,
) -> Result<Vec<BpfProgram>, SeccompError> {
    let Grouped { default, groups } = group(profile, bounding)?;
    let build = |rules: Rules, mismatch: SeccompAction, matched: SeccompAction| {
        build(finish(rules), mismatch, matched)
    };
    let mut out = Vec::new();
    if default != SeccompAction::Allow {
        let mut union = Rules::new();
        for (_, rules) in groups.values() {
            for (nr, r) in rules {
                match r {
                    None => add(&mut union, *nr, None),
                    Some(list) => list
                        .iter()
                        .for_each(|x| add(&mut union, *nr, Some(x.clone()))),
                }
            }
        }
        out.push(build(union, default, SeccompAction::Allow)?);
    }
    for (_, (act, rules)) in groups {
        if act != SeccompAction::Allow {
            out.push(build(rules, SeccompAction::Allow, act)?);
        }
    }
    if out.is_empty() {
        out.push(build(
            Rules::new(),
            SeccompAction::Allow,
            SeccompAction::KillProcess,
        )?);
    }
    Ok(out)
}

/// The container's bounding set as a bit mask (Mesos' rule: the bounding
/// set if given, else the effective set, else every capability).
pub fn bounding_mask(info: &ContainerLaunchInfo) -> u64 {
    let set = info
        .bounding_capabilities
        .as_ref()
        .or(info.effective_capabilities.as_ref());
    set.map_or(u64::MAX, |s| capability_mask(&s.capabilities))
}

/// `CapabilityInfo` values (capability + 1000) as a bit mask.
pub fn capability_mask(capabilities: &[i32]) -> u64 {
    capabilities
        .iter()
        .filter_map(|c| c.checked_sub(1000).and_then(|n| u32::try_from(n).ok()))
        .filter_map(|n| 1u64.checked_shl(n))
        .fold(0, |acc, bit| acc | bit)
}

/// Encoded filters with the (profile, bounding set) they were compiled for.
/// Looked up by comparing profiles field by field: no allocation, and
/// cheaper than encoding the profile (about 6 KiB for Docker's) for a key.
type Cache = Vec<(ContainerSeccompProfile, u64, Arc<Vec<String>>)>;

/// Compiled filters; a handful of profiles in practice, bounded anyway.
static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| Mutex::new(Vec::new()));
const CACHE_ENTRIES: usize = 64;

/// The encoded filters for a launch (empty when it has no profile);
/// compiled once per profile and capability set.
pub fn filters_for(info: &ContainerLaunchInfo) -> Result<Arc<Vec<String>>, SeccompError> {
    let Some(profile) = &info.seccomp_profile else {
        return Ok(Arc::new(Vec::new()));
    };
    let bounding = bounding_mask(info);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, _, hit)) = cache
        .iter()
        .find(|(p, b, _)| *b == bounding && p == profile)
    {
        return Ok(hit.clone());
    }
    let encoded: Vec<String> = compile(profile, bounding)?
        .iter()
        .map(|p| encode(p))
        .collect();
    let encoded = Arc::new(encoded);
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    cache.push((profile.clone(), bounding, encoded.clone()));
    tracing::debug!(filters = encoded.len(), "seccomp filter compiled");
    Ok(encoded)
}

fn encode(program: &[sock_filter]) -> String {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for i in program {
        bytes.extend_from_slice(&i.code.to_le_bytes());
        bytes.push(i.jt);
        bytes.push(i.jf);
        bytes.extend_from_slice(&i.k.to_le_bytes());
    }
    BASE64.encode(bytes)
}

/// Reverses the host's encoding (in the helper, before any fork).
pub fn decode(filters: &[String]) -> Result<Vec<BpfProgram>, SeccompError> {
    filters
        .iter()
        .map(|text| {
            let bytes = BASE64.decode(text).map_err(|_| SeccompError::Encoding)?;
            if bytes.is_empty() || bytes.len() % 8 != 0 {
                return Err(SeccompError::Encoding);
            }
            Ok(bytes
                .chunks_exact(8)
                .map(|c| sock_filter {
                    code: u16::from_le_bytes([c[0], c[1]]),
                    jt: c[2],
                    jf: c[3],
                    k: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
                })
                .collect())
        })
        .collect()
}

/// Installs the filters on the calling thread, in order. Allocates nothing
/// on success (safe in a `CLONE_VM` child); sets `no_new_privs`.
pub fn install(filters: &[BpfProgram]) -> Result<(), String> {
    for f in filters {
        seccompiler::apply_filter(f).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod bpf_tests;
#[cfg(test)]
mod tests;
