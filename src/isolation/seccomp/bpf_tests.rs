//! The new layout against seccompiler's: every call number and the
//! argument values the default profile tests, run through a small classic
//! BPF interpreter, must get the same action from both programs.

use proptest::prelude::*;
use seccompiler::{
    SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use super::*;
use crate::proto::mesos::seccomp::container_seccomp_profile::syscall::Arg;

/// Runs a classic BPF program (the subset both layouts use) on a
/// `seccomp_data` (nr, arch, args). Panics on anything else, and on a jump
/// out of the program.
fn run(p: &[sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_le_bytes());
    data[4..8].copy_from_slice(&arch.to_le_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    let (mut pc, mut acc) = (0usize, 0u32);
    loop {
        let i = &p[pc];
        pc += 1;
        let cond = |taken: bool| usize::from(if taken { i.jt } else { i.jf });
        match i.code {
            0x20 => {
                let o = i.k as usize;
                acc = u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
            }
            0x54 => acc &= i.k,
            0x05 => pc += i.k as usize,
            0x15 => pc += cond(acc == i.k),
            0x25 => pc += cond(acc > i.k),
            0x35 => pc += cond(acc >= i.k),
            0x45 => pc += cond(acc & i.k != 0),
            0x06 => return i.k,
            c => panic!("unexpected BPF code {c:#x}"),
        }
    }
}

/// seccompiler's layout of the same rules (the reference).
fn old_build(
    rules: bpf::Rules,
    mismatch: SeccompAction,
    matched: SeccompAction,
) -> Result<BpfProgram, SeccompError> {
    let arch = match std::env::consts::ARCH {
        "aarch64" => TargetArch::aarch64,
        "riscv64" => TargetArch::riscv64,
        _ => TargetArch::x86_64,
    };
    let rules = rules
        .into_iter()
        .map(|(nr, alts)| {
            let alts = alts
                .into_iter()
                .map(|alt| {
                    let conds = alt
                        .into_iter()
                        .map(|c| {
                            let op = match c.op {
                                CmpOp::Eq => SeccompCmpOp::Eq,
                                CmpOp::Ne => SeccompCmpOp::Ne,
                                CmpOp::Lt => SeccompCmpOp::Lt,
                                CmpOp::Le => SeccompCmpOp::Le,
                                CmpOp::Gt => SeccompCmpOp::Gt,
                                CmpOp::Ge => SeccompCmpOp::Ge,
                                CmpOp::MaskedEq(m) => SeccompCmpOp::MaskedEq(m),
                            };
                            SeccompCondition::new(c.index, SeccompCmpArgLen::Qword, op, c.value)
                                .unwrap()
                        })
                        .collect();
                    SeccompRule::new(conds).unwrap()
                })
                .collect();
            (i64::from(nr), alts)
        })
        .collect();
    Ok(BpfProgram::try_from(SeccompFilter::new(rules, mismatch, matched, arch).unwrap()).unwrap())
}

fn old_compile(p: &ContainerSeccompProfile, bounding: u64) -> Vec<BpfProgram> {
    compile_with(p, bounding, &old_build).unwrap()
}

/// Argument values the default profile's conditions tell apart.
fn interesting() -> Vec<u64> {
    let mut v: Vec<u64> = vec![
        0,
        1,
        8,
        0x20000,
        0x20008,
        0xffff_ffff,
        0x1_0000_0000,
        0x1_0000_0008,
        u64::MAX,
    ];
    v.extend(0..=45); // socket domains (AF_ALG 38, AF_VSOCK 40)
    for bit in [
        0x20000u64, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000,
    ] {
        v.push(bit); // each namespace flag of clone
        v.push(bit | 0x11); // with SIGCHLD
    }
    v.push(0x7E02_0000);
    v.push(0x0100_0011); // CLONE_CHILD_SETTID|SIGCHLD: plain fork
    v
}

/// What the kernel decides with `filters` installed in this order: it
/// runs the newest first and keeps the strongest result, the first seen
/// among equals (kernel/seccomp.c, `seccomp_run_filters`).
fn run_stack(filters: &[BpfProgram], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
    let mut kept = libc::SECCOMP_RET_ALLOW;
    for f in filters.iter().rev() {
        let ret = run(f, nr, arch, args);
        if precedence(ret) < precedence(kept) {
            kept = ret;
        }
    }
    kept
}

fn assert_same(old: &[BpfProgram], new: &[BpfProgram], args: &[[u64; 6]]) {
    let arch = audit_arch().unwrap();
    let max = syscalls::Sysno::last().id() as u32 + 16;
    let numbers = (0..=max)
        .chain((0..=max).map(|n| n | 0x4000_0000))
        .chain([u32::MAX, 0x8000_0000]);
    for nr in numbers {
        for a in args {
            assert_eq!(
                run_stack(old, nr, arch, *a),
                run_stack(new, nr, arch, *a),
                "nr {nr} args {a:?}"
            );
        }
        assert_eq!(
            run_stack(old, nr, 0x4000_0003, args[0]),
            run_stack(new, nr, 0x4000_0003, args[0])
        );
    }
}

#[test]
fn default_profile_same_decisions_as_seccompiler() {
    let p = default_profile::profile();
    let docker = crate::isolation::isolator::hardening::DEFAULT_CAPABILITIES
        .iter()
        .fold(0u64, |m, c| m | 1u64 << (*c as i32 - 1000));
    let args: Vec<[u64; 6]> = interesting()
        .into_iter()
        .map(|a| [a, a, a, 0, 0, 0])
        .collect();
    for bounding in [docker, u64::MAX, 0] {
        let (old, new) = (old_compile(&p, bounding), compile(&p, bounding).unwrap());
        assert_eq!(new.len(), 1, "one filter");
        assert_same(&old, &new, &args);
        let (o, n): (usize, usize) = (
            old.iter().map(Vec::len).sum(),
            new.iter().map(Vec::len).sum(),
        );
        assert!(n * 3 < o, "new {n} instructions, old {o}");
        if bounding == docker {
            eprintln!("default profile, Docker's capabilities: {o} instructions before, {n} now");
        }
    }
}

#[test]
fn long_subtrees_and_blocks_use_trampolines() {
    // Every other number conditional: a tree far wider than 255.
    let mut rules = bpf::Rules::new();
    for nr in (0..1000u32).step_by(2) {
        let c = Cond {
            index: 0,
            op: CmpOp::Eq,
            value: u64::from(nr),
        };
        rules.insert(nr, if nr % 4 == 0 { vec![vec![c]] } else { vec![] });
    }
    let (allow, deny) = (SeccompAction::Allow, SeccompAction::Errno(1));
    let arch = audit_arch().unwrap();
    let new = bpf::build(
        &rules,
        arch,
        u32::from(deny.clone()),
        u32::from(allow.clone()),
    );
    let old = old_build(rules, deny, allow).unwrap();
    // A tree node reaching its right side through a JA.
    assert!(
        new.windows(2)
            .any(|w| w[0].code == 0x35 && (w[0].jt, w[0].jf) == (0, 1) && w[1].code == 0x05)
    );
    // Leaves reaching far argument blocks.
    assert!(new.iter().any(|i| i.code == 0x05 && i.k > 255));
    for nr in 0..1100u32 {
        for a in [0, u64::from(nr), 1 << 40 | u64::from(nr)] {
            assert_eq!(
                run(&old, nr, arch, [a; 6]),
                run(&new, nr, arch, [a; 6]),
                "{nr} {a}"
            );
        }
    }
}

fn cond() -> impl Strategy<Value = Cond> {
    let value = prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        0u64..4,
        any::<u64>(),
        (0u64..4).prop_map(|h| h << 32 | 2)
    ];
    let op = prop_oneof![
        Just(CmpOp::Eq),
        Just(CmpOp::Ne),
        Just(CmpOp::Lt),
        Just(CmpOp::Le),
        Just(CmpOp::Gt),
        Just(CmpOp::Ge),
        value.clone().prop_map(CmpOp::MaskedEq),
    ];
    (0u8..2, op, value).prop_map(|(index, op, value)| Cond { index, op, value })
}

proptest! {
    #[test]
    fn random_rules_same_decisions(
        rules in prop::collection::btree_map(
            0u32..40,
            prop::collection::vec(prop::collection::vec(cond(), 1..4), 0..3),
            0..20,
        ),
        inputs in prop::collection::vec(
            (0u32..42, prop_oneof![Just(0u64), Just(u64::MAX), 0u64..5, any::<u64>(), (0u64..4).prop_map(|h| h << 32 | 2)],
             prop_oneof![Just(0u64), 0u64..5, any::<u64>()]),
            64,
        ),
    ) {
        let (allow, deny) = (SeccompAction::Allow, SeccompAction::KillProcess);
        let arch = audit_arch().unwrap();
        let new = bpf::build(&rules, arch, u32::from(deny.clone()), u32::from(allow.clone()));
        let old = old_build(rules, deny, allow).unwrap();
        for (nr, a0, a1) in inputs {
            let args = [a0, a1, 0, 0, 0, 0];
            prop_assert_eq!(run(&old, nr, arch, args), run(&new, nr, arch, args));
        }
    }
}

/// An action of a random profile rule (or default): every kind, and two
/// errno values (equal strength, different results).
fn profile_action() -> impl Strategy<Value = (i32, Option<u32>)> {
    prop_oneof![
        Just((Action::ActAllow as i32, None)),
        Just((Action::ActErrno as i32, None)),
        Just((Action::ActErrno as i32, Some(38))),
        Just((Action::ActKill as i32, None)),
        Just((Action::ActTrap as i32, None)),
        Just((Action::ActTrace as i32, None)),
    ]
}

fn profile_arg() -> impl Strategy<Value = Arg> {
    (
        0u32..2,
        prop_oneof![
            Just(Operator::CmpEq),
            Just(Operator::CmpNe),
            Just(Operator::CmpLt),
            Just(Operator::CmpGe),
            Just(Operator::CmpMaskedEq),
        ],
        0u64..4,
        0u64..4,
    )
        .prop_map(|(index, op, value, value_two)| Arg {
            index,
            value,
            value_two,
            op: op as i32,
        })
}

fn profile() -> impl Strategy<Value = ContainerSeccompProfile> {
    // Calls every architecture we build for has.
    let names = [
        "read", "write", "close", "fstat", "lseek", "mmap", "openat", "getpid",
    ];
    let rule = (
        prop::collection::btree_set(0..names.len(), 1..3),
        profile_action(),
        prop::collection::vec(profile_arg(), 0..3),
    )
        .prop_map(move |(picked, (action, errno_ret), args)| Syscall {
            names: picked.into_iter().map(|i| names[i].to_string()).collect(),
            action,
            errno_ret,
            args,
            ..Default::default()
        });
    (profile_action(), prop::collection::vec(rule, 0..6)).prop_map(
        |((default_action, default_errno_ret), syscalls)| ContainerSeccompProfile {
            default_action,
            default_errno_ret,
            syscalls,
            ..Default::default()
        },
    )
}

proptest! {
    /// One filter with per-rule actions decides every call as the stacked
    /// one-action filters (built by seccompiler) decide it together.
    #[test]
    fn one_filter_decides_as_stacked_filters(
        p in profile(),
        inputs in prop::collection::vec((0u32..600, 0u64..5, 0u64..5), 64),
    ) {
        let arch = audit_arch().unwrap();
        let (old, new) = (old_compile(&p, u64::MAX), compile(&p, u64::MAX).unwrap());
        prop_assert_eq!(new.len(), 1);
        for (nr, a0, a1) in inputs {
            let args = [a0, a1, 0, 0, 0, 0];
            prop_assert_eq!(
                run_stack(&old, nr, arch, args),
                run_stack(&new, nr, arch, args),
                "nr {} args {:?}", nr, args
            );
        }
    }
}
