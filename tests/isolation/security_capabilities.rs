//! The `hardening` bounding set on kernels with capabilities Mesos 1.11
//! does not know (`cap_last_cap` > 37, kernels ≥ 5.8): nestguard's launcher
//! drops exactly what the allow-list leaves out, new capabilities included
//! (root); under Mesos' launcher (`launcher=mesos`, set by the C++ shim)
//! the allow-list loads on any kernel, since nestguard's exec stage applies
//! it, and Mesos' helper never sees a capability field.

use crate::isolator_support;

use std::time::Duration;

use isolator_support::{Agent, config, read, root_or_skip};
use nestguard::isolation::isolator::hardening::kernel_last_cap;
use nestguard::isolation::isolator::{Composite, IsolatorParams};

#[test]
fn nestguard_launcher_drops_capabilities_mesos_does_not_know() {
    if !root_or_skip() {
        return;
    }
    let last = kernel_last_cap().unwrap();
    let agent = Agent::new(
        "caps-new",
        &[(
            "hardening_capabilities",
            "CHOWN,KILL,BPF,CHECKPOINT_RESTORE",
        )],
    );
    let (exec, _) = agent.launch("exec", config("exec sleep 120"));
    let (task, _) = agent.launch(
        "exec.task",
        config("grep -E '^Cap(Bnd|Eff)' /proc/self/status > status"),
    );
    assert_eq!(agent.wait(&task, Duration::from_secs(20)), Some(0));
    let status = read(agent.sandbox(&task).join("status"));
    // CHOWN 0, KILL 5, BPF 39 and CHECKPOINT_RESTORE 40 where the kernel has them.
    let expected = [0u32, 5, 39, 40]
        .into_iter()
        .filter(|c| i64::from(*c) <= i64::from(last))
        .fold(0u64, |m, c| m | 1 << c);
    assert!(
        status.contains(&format!("CapBnd:\t{expected:016x}")),
        "{status} vs {expected:016x}"
    );
    assert!(
        status.contains(&format!("CapEff:\t{expected:016x}")),
        "{status}"
    );
    agent.destroy(&exec, None);
}

#[test]
fn mesos_launcher_loads_an_allow_list_on_any_kernel() {
    let keys = std::env::temp_dir().join(format!("ng-caps-keys-{}", std::process::id()));
    let keys_arg = keys.display().to_string();
    let params = IsolatorParams::parse([
        ("isolation", "hardening,seccomp"),
        ("launcher", "mesos"),
        ("hardening_capabilities", "CHOWN,KILL"),
        ("exec_stage_keys", &keys_arg),
    ])
    .unwrap();
    let composite = Composite::from_parameters(&params);
    let _ = std::fs::remove_dir_all(&keys);
    assert_eq!(composite.unwrap().names(), ["hardening", "seccomp"]);
    // A missing exec stage stops the module from loading.
    let params = IsolatorParams::parse([
        ("isolation", "hardening"),
        ("launcher", "mesos"),
        ("exec_stage", "/nonexistent/nestguard-exec"),
    ])
    .unwrap();
    let e = Composite::from_parameters(&params).unwrap_err().to_string();
    assert!(
        e.contains("exec_stage") && e.contains("/nonexistent"),
        "{e}"
    );
}
