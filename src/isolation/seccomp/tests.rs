use super::*;
use crate::proto::mesos::CapabilityInfo;
use crate::proto::mesos::capability_info::Capability;

#[test]
fn every_default_name_is_a_system_call() {
    let p = default_profile::profile();
    for rule in &p.syscalls {
        for name in &rule.names {
            assert!(known_anywhere(name), "{name}");
        }
    }
}

#[test]
fn default_profile_compiles_to_one_filter() {
    let p = default_profile::profile();
    let docker_caps = crate::isolation::isolator::hardening::DEFAULT_CAPABILITIES
        .iter()
        .fold(0u64, |m, c| m | 1u64 << (*c as i32 - 1000));
    // Allow-list with EPERM default and clone3 → ENOSYS, in one filter
    // (the kernel pays a fixed cost for each filter installed).
    let filters = compile(&p, docker_caps).unwrap();
    assert_eq!(filters.len(), 1);
    assert_eq!(compile(&p, u64::MAX).unwrap().len(), 1);
    let encoded: Vec<String> = filters.iter().map(|f| encode(f)).collect();
    assert_eq!(decode(&encoded).unwrap(), filters);
    assert!(decode(&["AAAA".into()]).is_err());
}

#[test]
fn bounding_mask_follows_mesos_rules() {
    let mut info = ContainerLaunchInfo::default();
    assert_eq!(bounding_mask(&info), u64::MAX);
    info.effective_capabilities = Some(CapabilityInfo {
        capabilities: vec![Capability::Chown as i32],
    });
    assert_eq!(bounding_mask(&info), 1);
    info.bounding_capabilities = Some(CapabilityInfo {
        capabilities: vec![Capability::SysAdmin as i32, Capability::Kill as i32],
    });
    assert_eq!(bounding_mask(&info), 1 << 21 | 1 << 5);
}

#[test]
fn cache_compiles_once() {
    let info = ContainerLaunchInfo {
        seccomp_profile: Some(default_profile::profile()),
        ..Default::default()
    };
    let a = filters_for(&info).unwrap();
    let b = filters_for(&info).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert!(
        filters_for(&ContainerLaunchInfo::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn unknown_names_refused_foreign_ones_skipped() {
    let mut p = docker_json::parse(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","chown32","_llseek"],"action":"SCMP_ACT_ERRNO"}]}"#,
        "p",
    )
    .unwrap();
    assert_eq!(compile(&p, 0).unwrap().len(), 1);
    // Nothing refused: still one filter (the architecture check).
    let all = docker_json::parse(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#, "p").unwrap();
    assert_eq!(compile(&all, 0).unwrap().len(), 1);
    p.syscalls[0].names.push("nope".into());
    assert!(matches!(compile(&p, 0), Err(SeccompError::Profile { .. })));
}
