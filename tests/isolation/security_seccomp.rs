//! The `seccomp` isolator end to end (root): Docker's default profile
//! refuses dangerous calls with EPERM while ordinary programs run; a
//! per-container profile from `seccomp_config_dir` applies; `unconfined`
//! needs the operator's consent; an unknown profile is refused at prepare.
//!
//! Probes use perl's `syscall` (perl-base is essential on Debian) with the
//! numbers of this architecture, and print the errno (0 on success), so
//! each probe tells a filter's EPERM from the kernel's own answer.

use crate::isolator_support;

use std::time::Duration;

use isolator_support::{Agent, config, id, read, root_or_skip};
use nestguard::proto::mesos::{ContainerInfo, LinuxInfo, SeccompInfo};
use syscalls::Sysno;

const WITH_SECCOMP: &str =
    "cgroups,namespaces,filesystem/linux,volume/sandbox_path,hardening,seccomp,disk/du";

/// A shell line printing `<label> <errno>` for one raw system call.
fn probe(label: &str, nr: Sysno, args: &str) -> String {
    format!(
        "perl -e '$r = syscall({}, {args}); print \"{label} \", ($r < 0 ? $! + 0 : 0), \"\\n\"' >> probes; ",
        nr.id()
    )
}

fn with_seccomp(c: &mut nestguard::proto::mesos::slave::ContainerConfig, s: SeccompInfo) {
    c.container_info = Some(ContainerInfo {
        linux_info: Some(LinuxInfo {
            seccomp: Some(s),
            ..Default::default()
        }),
        ..Default::default()
    });
}

fn results(text: &str) -> std::collections::HashMap<String, i32> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.trim().parse().unwrap_or(-1)))
        .collect()
}

#[test]
fn default_profile_refuses_dangerous_calls_and_runs_ordinary_programs() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new("seccomp-default", &[("isolation", WITH_SECCOMP)]);
    let script = [
        probe("keyctl", Sysno::keyctl, "0, -3, 0, 0, 0"),
        probe("unshare_user", Sysno::unshare, "0x10000000"),
        probe("mount", Sysno::mount, "0, 0, 0, 0, 0"),
        probe("kexec_load", Sysno::kexec_load, "0, 0, 0, 0"),
        probe("bpf", Sysno::bpf, "0, 0, 0"),
        probe("personality_bad", Sysno::personality, "0x0040000"),
        probe("personality_query", Sysno::personality, "0xffffffff"),
        probe("vsock", Sysno::socket, "40, 1, 0"),
        probe("inet", Sysno::socket, "2, 1, 0"),
        probe("clone3", Sysno::clone3, "0, 0"),
        "ls / > /dev/null && cat /proc/self/status | grep -E '^Seccomp' > status && \
         mkdir d && echo hi > d/f && cat d/f > read"
            .to_owned(),
    ]
    .concat();
    // Nested under an executor, as a task runs.
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let (task, _) = agent.launch("exec.task", config(&script));
    assert_eq!(agent.wait(&task, Duration::from_secs(30)), Some(0));
    let sandbox = agent.sandbox(&task);
    let got = results(&read(sandbox.join("probes")));
    let eperm = libc::EPERM;
    for call in [
        "keyctl",
        "unshare_user",
        "mount",
        "kexec_load",
        "bpf",
        "personality_bad",
        "vsock",
    ] {
        assert_eq!(got.get(call), Some(&eperm), "{call}: {got:?}");
    }
    assert_eq!(got.get("personality_query"), Some(&0), "{got:?}");
    assert_eq!(got.get("inet"), Some(&0), "{got:?}");
    // ENOSYS, so that the C library falls back to clone.
    assert_eq!(got.get("clone3"), Some(&libc::ENOSYS), "{got:?}");
    let status = read(sandbox.join("status"));
    assert!(status.contains("Seccomp:\t2"), "{status}");
    assert_eq!(read(sandbox.join("read")), "hi\n");

    // Without the filter (the default list less `seccomp`, the one way to
    // opt out) the same keyctl succeeds: the EPERM is the filter's.
    let plain = Agent::new(
        "seccomp-off",
        &[(
            "isolation",
            "cgroups,namespaces,filesystem/linux,volume/sandbox_path,hardening,disk/du",
        )],
    );
    let (c, _) = plain.launch(
        "c",
        config(&probe("keyctl", Sysno::keyctl, "0, -3, 0, 0, 0")),
    );
    assert_eq!(plain.wait(&c, Duration::from_secs(30)), Some(0));
    assert_eq!(
        results(&read(plain.sandbox(&c).join("probes"))).get("keyctl"),
        Some(&0)
    );
    plain.destroy(&c, None);
    agent.destroy(&exec, None);
}

#[test]
fn per_container_profile_unconfined_and_unknown_names() {
    if !root_or_skip() {
        return;
    }
    let profiles = tempfile::tempdir().unwrap();
    std::fs::write(
        profiles.path().join("no-mkdir.json"),
        r#"{"defaultAction": "SCMP_ACT_ALLOW",
            "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}"#,
    )
    .unwrap();
    let dir = profiles.path().to_str().unwrap();
    let agent = Agent::new(
        "seccomp-custom",
        &[("isolation", WITH_SECCOMP), ("seccomp_config_dir", dir)],
    );

    let mut c = config("mkdir d 2> err; echo $? > rc; touch f && echo ok > touched");
    with_seccomp(
        &mut c,
        SeccompInfo {
            profile_name: Some("no-mkdir.json".into()),
            unconfined: None,
        },
    );
    let (task, _) = agent.launch("custom", c);
    assert_eq!(agent.wait(&task, Duration::from_secs(30)), Some(0));
    let sandbox = agent.sandbox(&task);
    assert_ne!(read(sandbox.join("rc")).trim(), "0");
    assert!(read(sandbox.join("err")).contains("Operation not permitted"));
    assert!(!sandbox.join("d").exists());
    assert_eq!(read(sandbox.join("touched")), "ok\n");
    agent.destroy(&task, None);

    // Unknown and path-like names: refused at prepare, nothing launched.
    for (name, text) in [
        ("nope.json", "seccomp profile 'nope.json'"),
        (
            "../no-mkdir.json",
            "must be a file name in seccomp_config_dir",
        ),
    ] {
        let mut c = config("true");
        with_seccomp(
            &mut c,
            SeccompInfo {
                profile_name: Some(name.into()),
                unconfined: None,
            },
        );
        let err = agent.try_launch(&id("bad"), c).unwrap_err();
        assert!(err.contains(text) && err.contains("prepare"), "{err}");
        assert!(agent.l().containers().is_empty());
    }

    // Unconfined: refused unless the operator allows it.
    let mut c = config("grep -E '^Seccomp:' /proc/self/status > status");
    with_seccomp(
        &mut c,
        SeccompInfo {
            profile_name: None,
            unconfined: Some(true),
        },
    );
    let err = agent.try_launch(&id("free"), c.clone()).unwrap_err();
    assert!(err.contains("seccomp_allow_unconfined"), "{err}");
    let lenient = Agent::new(
        "seccomp-unconfined",
        &[
            ("isolation", WITH_SECCOMP),
            ("seccomp_allow_unconfined", "true"),
        ],
    );
    let (free, _) = lenient.launch("free", c);
    assert_eq!(lenient.wait(&free, Duration::from_secs(30)), Some(0));
    assert_eq!(
        read(lenient.sandbox(&free).join("status")).trim(),
        "Seccomp:\t0"
    );
    lenient.destroy(&free, None);
}

#[test]
fn a_bad_default_profile_stops_the_module() {
    let profiles = tempfile::tempdir().unwrap();
    std::fs::write(profiles.path().join("bad.json"), r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdri"], "action": "SCMP_ACT_ERRNO"}]}"#).unwrap();
    let params = nestguard::isolation::isolator::IsolatorParams::parse([
        ("isolation", "seccomp"),
        ("seccomp_config_dir", profiles.path().to_str().unwrap()),
        ("seccomp_profile_name", "bad.json"),
    ])
    .unwrap();
    let err = nestguard::isolation::isolator::Composite::from_parameters(&params).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("seccomp_profile_name")
            && text.contains("syscalls[0].names[0]")
            && text.contains("mkdri"),
        "{text}"
    );
}
