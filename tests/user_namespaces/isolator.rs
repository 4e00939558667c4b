//! `namespaces/user` as an agent configures it: the module's parameters,
//! and a pod through every default isolator (cgroups, hardening, seccomp,
//! a `SANDBOX_PATH` volume) whose sub-container is OOM-killed.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use crate::isolator_support::*;
use crate::support::searchable;
use nestguard::isolation::isolator::IsolatorParams;
use nestguard::proto::mesos::task_status::Reason;
use nestguard::proto::mesos::volume::Mode as VolumeMode;
use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;

const ISOLATION: &str = "cgroups,namespaces,filesystem/linux,volume/sandbox_path,hardening,\
                         seccomp,disk/du,namespaces/user";

#[test]
fn parameters_are_checked_when_the_module_loads() {
    let err = |pairs: &[(&str, &str)]| {
        IsolatorParams::parse(pairs.iter().copied())
            .unwrap_err()
            .to_string()
    };
    assert!(
        err(&[("isolation", ISOLATION)]).contains("'user_namespace_range': expected a pool"),
        "the pool is required"
    );
    assert!(
        err(&[("user_namespace_range", "100000-200000/65536")])
            .contains("no value unless namespaces/user is in 'isolation'")
    );
    let e = err(&[
        ("isolation", ISOLATION),
        ("user_namespace_range", "0-65536/65536"),
    ]);
    assert!(e.contains("user_namespace_range '0-65536/65536'"), "{e}");
    let e = err(&[
        ("isolation", ISOLATION),
        ("user_namespace_range", "100000-200000/65536"),
        ("launcher", "mesos"),
    ]);
    assert!(
        e.contains("namespaces/user runs only under nestguard's launcher"),
        "{e}"
    );
    // A pool over a host account (root's 0 is never in a pool).
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let (name, uid) = passwd
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((f.first()?.to_string(), f.get(2)?.parse::<u32>().ok()?))
        })
        .find(|(_, uid)| *uid > 0)
        .unwrap();
    let e = err(&[
        ("isolation", ISOLATION),
        ("user_namespace_range", &format!("{uid}-{}/1", uid + 1)),
    ]);
    assert!(
        e.contains("/etc/passwd line") && e.contains(&format!("user '{name}' has id {uid}")),
        "{e}"
    );
    let ok = IsolatorParams::parse([
        ("isolation", ISOLATION),
        ("user_namespace_range", "3000400000-3000531072/65536"),
    ])
    .unwrap();
    assert_eq!(ok.user_namespaces.unwrap().slots(), 2);
}

#[test]
fn an_oom_kill_in_a_user_namespace_is_still_a_memory_limitation() {
    if !root_or_skip() {
        return;
    }
    let agent = Agent::new(
        "userns",
        &[
            ("isolation", ISOLATION),
            ("user_namespace_range", "3000400000-3000531072/65536"),
        ],
    );
    searchable(agent.dir.path());
    std::fs::create_dir_all(agent.dir.path().join("runs")).unwrap();
    searchable(&agent.dir.path().join("runs"));
    let (exec, exec_pid) = agent.launch("exec", config("mkdir -p shared; exec sleep 120"));
    let shared = agent.sandbox(&exec).join("shared");
    assert!(wait_for_file(&shared, Duration::from_secs(10)));
    // A sub-container writes through a SANDBOX_PATH volume of the pod,
    // under the hardening isolator's capabilities and the seccomp filter.
    let writer = with_volumes(
        config("id -u > shared/writer; grep -E '^(Uid|CapEff)' /proc/self/status >> shared/writer"),
        vec![sandbox_volume(
            SandboxPathType::Parent,
            "shared",
            "shared",
            VolumeMode::Rw,
        )],
    );
    let (writer, _) = agent.launch("exec.writer", writer);
    assert_eq!(agent.wait(&writer, Duration::from_secs(30)), Some(0));
    let written = read(shared.join("writer"));
    assert!(written.starts_with("0\nUid:\t0\t0\t0\t0\n"), "{written}");
    assert!(
        !written.contains("CapEff:\t000001ffffffffff"),
        "hardened: {written}"
    );
    assert_eq!(
        std::fs::metadata(shared.join("writer")).unwrap().uid(),
        3000400000
    );
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{exec_pid}/uid_map"))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["0", "3000400000", "65536"]
    );

    let hog = id("exec.hog");
    let mut hog_config = own_cgroups(config("head -c 67108864 /dev/zero | tail > /dev/null"));
    hog_config.resources = vec![scalar("mem", 32.0), scalar("cpus", 0.5)];
    agent.try_launch(&hog, hog_config).unwrap();
    let limitation = agent
        .watch(&hog)
        .wait(Some(Duration::from_secs(60)))
        .unwrap()
        .expect("an OOM limitation within 60 s");
    assert_eq!(
        limitation.reason,
        Some(Reason::ContainerLimitationMemory as i32)
    );
    agent.destroy(&hog, Some(limitation));
    agent.destroy(&writer, None);
    assert_eq!(agent.destroy(&exec, None).status, Some(9));
    assert!(agent.cg().scan().unwrap().is_empty());
}
