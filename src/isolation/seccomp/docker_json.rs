//! Operator profiles: Docker's seccomp JSON format (what Mesos'
//! `--seccomp_config_dir` holds), read into a [`ContainerSeccompProfile`]
//! the way Mesos' parser reads it: architecture conditions are decided
//! here, for the machine we run on; capability conditions are kept and
//! decided per container when the filter is compiled.
//!
//! Stricter than Mesos: unknown fields, unknown system call names (on every
//! architecture), unknown actions and operators are refused, each error
//! naming the JSON path; `minKernel` conditions are honoured.

use serde::Deserialize;

use super::SeccompError;
use crate::proto::mesos::capability_info::Capability;
use crate::proto::mesos::seccomp::ContainerSeccompProfile;
use crate::proto::mesos::seccomp::container_seccomp_profile::Syscall;
use crate::proto::mesos::seccomp::container_seccomp_profile::syscall::arg::Operator;
use crate::proto::mesos::seccomp::container_seccomp_profile::syscall::{Action, Arg, Filter};

/// Largest profile file read (Docker's default is about 20 KiB).
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Profile {
    default_action: String,
    #[serde(default)]
    default_errno_ret: Option<u32>,
    #[serde(default)]
    architectures: Option<Vec<String>>,
    #[serde(default)]
    arch_map: Option<Vec<ArchMap>>,
    #[serde(default)]
    syscalls: Option<Vec<Rule>>,
    #[serde(default)]
    flags: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ArchMap {
    architecture: String,
    #[serde(default)]
    sub_architectures: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Rule {
    #[serde(default)]
    names: Option<Vec<String>>,
    #[serde(default)]
    name: Option<String>,
    action: String,
    #[serde(default)]
    errno_ret: Option<u32>,
    #[serde(default)]
    args: Option<Vec<RuleArg>>,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    includes: Option<Condition>,
    #[serde(default)]
    excludes: Option<Condition>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleArg {
    index: u32,
    value: u64,
    #[serde(default)]
    value_two: u64,
    op: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Condition {
    #[serde(default)]
    arches: Option<Vec<String>>,
    #[serde(default)]
    caps: Option<Vec<String>>,
    #[serde(default)]
    min_kernel: Option<String>,
}

/// Docker's (Go's) name of the architecture we run on.
fn native_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

fn action(value: &str, at: &str) -> Result<Action, SeccompError> {
    Ok(match value {
        "SCMP_ACT_KILL" | "SCMP_ACT_KILL_PROCESS" | "SCMP_ACT_KILL_THREAD" => Action::ActKill,
        "SCMP_ACT_TRAP" => Action::ActTrap,
        "SCMP_ACT_ERRNO" => Action::ActErrno,
        "SCMP_ACT_TRACE" => Action::ActTrace,
        "SCMP_ACT_ALLOW" => Action::ActAllow,
        other => {
            return Err(invalid(
                at,
                "an action SCMP_ACT_{KILL,TRAP,ERRNO,TRACE,ALLOW}",
                other,
            ));
        }
    })
}

fn operator(value: &str, at: &str) -> Result<Operator, SeccompError> {
    Ok(match value {
        "SCMP_CMP_NE" => Operator::CmpNe,
        "SCMP_CMP_LT" => Operator::CmpLt,
        "SCMP_CMP_LE" => Operator::CmpLe,
        "SCMP_CMP_EQ" => Operator::CmpEq,
        "SCMP_CMP_GE" => Operator::CmpGe,
        "SCMP_CMP_GT" => Operator::CmpGt,
        "SCMP_CMP_MASKED_EQ" => Operator::CmpMaskedEq,
        other => return Err(invalid(at, "an operator SCMP_CMP_*", other)),
    })
}

fn invalid(at: &str, expected: &'static str, found: &str) -> SeccompError {
    SeccompError::Profile {
        at: at.to_owned(),
        expected,
        found: found.to_owned(),
    }
}

fn capabilities(list: &[String], at: &str) -> Result<Filter, SeccompError> {
    let mut out = Vec::new();
    for (i, cap) in list.iter().enumerate() {
        let c = cap
            .strip_prefix("CAP_")
            .and_then(Capability::from_str_name)
            .filter(|c| *c != Capability::Unknown)
            .ok_or_else(|| {
                invalid(
                    &format!("{at}[{i}]"),
                    "a capability such as CAP_SYS_ADMIN",
                    cap,
                )
            })?;
        out.push(c as i32);
    }
    Ok(Filter { capabilities: out })
}

/// `major.minor` of the running kernel.
fn kernel_version() -> (u32, u32) {
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    parse_version(&release).unwrap_or((0, 0))
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Whether a rule's architecture and kernel conditions hold here.
fn applies(rule: &Rule, at: &str) -> Result<bool, SeccompError> {
    let arch = native_arch();
    if let Some(inc) = &rule.includes {
        if let Some(arches) = &inc.arches
            && !arches.iter().any(|a| a == arch)
        {
            return Ok(false);
        }
        if let Some(min) = &inc.min_kernel {
            let wanted = parse_version(min).ok_or_else(|| {
                invalid(
                    &format!("{at}.includes.minKernel"),
                    "a version such as 4.8",
                    min,
                )
            })?;
            if kernel_version() < wanted {
                return Ok(false);
            }
        }
    }
    if let Some(exc) = &rule.excludes {
        if let Some(arches) = &exc.arches
            && arches.iter().any(|a| a == arch)
        {
            return Ok(false);
        }
        if exc.min_kernel.is_some() {
            return Err(invalid(
                &format!("{at}.excludes.minKernel"),
                "no minKernel in excludes",
                "minKernel",
            ));
        }
    }
    Ok(true)
}

/// Parses a Docker-format profile; `source` names it in errors.
pub fn parse(text: &str, source: &str) -> Result<ContainerSeccompProfile, SeccompError> {
    let json: Profile = serde_json::from_str(text).map_err(|e| SeccompError::Json {
        source_name: source.to_owned(),
        error: e.to_string(),
    })?;
    let at = |path: String| format!("{source}: {path}");
    let default_action = action(&json.default_action, &at("defaultAction".into()))?;
    if let Some(flags) = json.flags.as_ref().filter(|f| !f.is_empty()) {
        return Err(invalid(
            &at("flags".into()),
            "no seccomp flags",
            &flags.join(","),
        ));
    }
    // Architectures are for libseccomp's multi-architecture filters: ours
    // allows the native one only. Checked for form, then not used.
    let arches =
        json.arch_map.iter().flatten().flat_map(|m| {
            std::iter::once(&m.architecture).chain(m.sub_architectures.iter().flatten())
        });
    for arch in arches.chain(json.architectures.iter().flatten()) {
        if !arch.starts_with("SCMP_ARCH_") {
            return Err(invalid(
                &at("archMap".into()),
                "architectures such as SCMP_ARCH_X86_64",
                arch,
            ));
        }
    }
    let mut syscalls = Vec::new();
    for (i, rule) in json.syscalls.iter().flatten().enumerate() {
        let here = at(format!("syscalls[{i}]"));
        let mut names: Vec<String> = rule.names.clone().unwrap_or_default();
        names.extend(rule.name.clone());
        if names.is_empty() {
            return Err(invalid(&here, "a non-empty 'names' list", "none"));
        }
        for (n, name) in names.iter().enumerate() {
            if !super::known_anywhere(name) {
                return Err(invalid(
                    &format!("{here}.names[{n}]"),
                    "a Linux system call name",
                    name,
                ));
            }
        }
        let act = action(&rule.action, &format!("{here}.action"))?;
        let mut args = Vec::new();
        for (a, arg) in rule.args.iter().flatten().enumerate() {
            if arg.index > 5 {
                return Err(invalid(
                    &format!("{here}.args[{a}].index"),
                    "an argument index 0..5",
                    &arg.index.to_string(),
                ));
            }
            args.push(Arg {
                index: arg.index,
                op: operator(&arg.op, &format!("{here}.args[{a}].op"))? as i32,
                value: arg.value,
                value_two: arg.value_two,
            });
        }
        let includes = match rule.includes.as_ref().and_then(|c| c.caps.as_ref()) {
            Some(caps) => Some(capabilities(caps, &format!("{here}.includes.caps"))?),
            None => None,
        };
        let excludes = match rule.excludes.as_ref().and_then(|c| c.caps.as_ref()) {
            Some(caps) => Some(capabilities(caps, &format!("{here}.excludes.caps"))?),
            None => None,
        };
        let _ = &rule.comment;
        if !applies(rule, &here)? {
            continue;
        }
        syscalls.push(Syscall {
            names,
            action: act as i32,
            args,
            includes,
            excludes,
            errno_ret: rule.errno_ret,
        });
    }
    Ok(ContainerSeccompProfile {
        default_action: default_action as i32,
        architectures: Vec::new(),
        syscalls,
        default_errno_ret: json.default_errno_ret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_path() {
        let e = parse(r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdri"],"action":"SCMP_ACT_ERRNO"}]}"#, "p.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "seccomp profile p.json: syscalls[0].names[0]: expected a Linux system call name, got 'mkdri'"
        );
        let e = parse(r#"{"defaultAction":"SCMP_ACT_NOPE"}"#, "p.json").unwrap_err();
        assert!(e.to_string().contains("defaultAction"), "{e}");
        let e = parse(r#"{"defaultAction":"SCMP_ACT_ALLOW","bogus":1}"#, "p.json").unwrap_err();
        assert!(
            e.to_string().contains("bogus") && e.to_string().contains("line 1"),
            "{e}"
        );
        let e = parse(r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","excludes":{"caps":["CAP_FLY"]}}]}"#, "p.json").unwrap_err();
        assert!(e.to_string().contains("excludes.caps[0]"), "{e}");
    }

    #[test]
    fn arch_conditions_decided_here() {
        let p = parse(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
                {"names":["mkdir"],"action":"SCMP_ACT_ERRNO","errnoRet":13},
                {"names":["rmdir"],"action":"SCMP_ACT_ERRNO","includes":{"arches":["no-such-arch"]}},
                {"names":["chmod"],"action":"SCMP_ACT_ERRNO","includes":{"caps":["CAP_CHOWN"]},"args":[{"index":1,"value":1,"op":"SCMP_CMP_EQ"}]}
            ]}"#,
            "p.json",
        )
        .unwrap();
        assert_eq!(p.syscalls.len(), 2);
        assert_eq!(p.syscalls[0].errno_ret, Some(13));
        assert_eq!(
            p.syscalls[1].includes.as_ref().unwrap().capabilities,
            [Capability::Chown as i32]
        );
        assert_eq!(p.syscalls[1].args[0].op, Operator::CmpEq as i32);
        assert_eq!(parse_version("6.1.0-18-amd64"), Some((6, 1)));
    }
}
