//! Our own classic-BPF layout for one seccomp filter: a binary search over
//! call numbers, as libseccomp emits with its binary-tree optimisation.
//!
//! Why not seccompiler's program: it tests call numbers one after the other
//! (a linear chain: 1,812 instructions for Docker's default profile). Since
//! Linux 5.11 the kernel, when a filter is installed, runs it once for every
//! call number of the architecture to build its constant-action cache, so
//! installing a linear chain costs calls × chain length; that, and checking
//! and JIT-compiling the long program, was most of the 1.5 ms seccomp added
//! to each launch (see the numbers in `mod.rs`). Here the call numbers are
//! merged into intervals of equal outcome (runs of unconditionally allowed
//! calls become one interval) and searched with `JGE`, so every call number
//! takes about log2(intervals) jumps plus its own argument checks, and the
//! program is several times shorter. seccompiler still installs the result
//! and stays the reference the tests compare against.
//!
//! Conditional jumps have 8-bit offsets: a tree node whose left subtree is
//! longer than 255 instructions reaches its right subtree through a `JA`
//! (32-bit offset), leaves reach argument blocks through `JA`, and a failed
//! argument check leaves its rule through a `JA` placed right after it, so
//! no conditional jump is ever longer than a few instructions.

use std::collections::BTreeMap;

use seccompiler::sock_filter;

/// BPF_LD | BPF_W | BPF_ABS.
const LD_W_ABS: u16 = 0x20;
const ALU_AND_K: u16 = 0x04 | 0x50;
const JA: u16 = 0x05;
const JEQ_K: u16 = 0x05 | 0x10;
const JGT_K: u16 = 0x05 | 0x20;
const JGE_K: u16 = 0x05 | 0x30;
const RET_K: u16 = 0x06;

/// `struct seccomp_data` offsets.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARGS: u32 = 16;

/// A 64-bit comparison of one call argument, as libseccomp makes them
/// (unsigned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CmpOp {
    /// `arg == value`
    Eq,
    /// `arg != value`
    Ne,
    /// `arg < value`
    Lt,
    /// `arg <= value`
    Le,
    /// `arg > value`
    Gt,
    /// `arg >= value`
    Ge,
    /// `arg & mask == value & mask`
    MaskedEq(u64),
}

/// One condition on argument `index` (0..6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cond {
    /// Argument index.
    pub index: u8,
    /// Comparison.
    pub op: CmpOp,
    /// Right-hand side.
    pub value: u64,
}

/// Call number → alternatives (each a conjunction of conditions); an empty
/// alternative list means the call matches unconditionally.
pub type Rules = BTreeMap<u32, Vec<Vec<Cond>>>;

/// Call number → alternatives, each a conjunction of conditions and the
/// action it returns, tried in order: the first whose conditions all hold
/// decides (an empty conjunction always holds); when none does, the call
/// gets the filter's default. This is what lets one filter give each rule
/// its own action (see "One filter" in `mod.rs`).
pub type Decisions = BTreeMap<u32, Vec<(Vec<Cond>, u32)>>;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The checks of one condition. Falls through past its end when the
/// condition holds; its last instruction is a `JA` to be patched to the
/// next alternative (taken when the condition fails).
fn condition(c: &Cond) -> Vec<sock_filter> {
    let lo = ARGS + 8 * u32::from(c.index);
    let hi = lo + 4;
    // A masked comparison compares with the masked value (as seccompiler
    // and libseccomp do): value bits outside the mask are ignored.
    let value = match c.op {
        CmpOp::MaskedEq(mask) => c.value & mask,
        _ => c.value,
    };
    let (vhi, vlo) = ((value >> 32) as u32, value as u32);
    // `len` instructions; FAIL = len - 1 (the JA), PASS = len.
    let at = |i: u8, t: u8| t - i - 1;
    let mut p = match c.op {
        CmpOp::Eq => vec![
            stmt(LD_W_ABS, hi),
            jump(JEQ_K, vhi, 0, at(1, 4)),
            stmt(LD_W_ABS, lo),
            jump(JEQ_K, vlo, at(3, 5), at(3, 4)),
        ],
        CmpOp::Ne => vec![
            stmt(LD_W_ABS, hi),
            jump(JEQ_K, vhi, 0, at(1, 5)),
            stmt(LD_W_ABS, lo),
            jump(JEQ_K, vlo, at(3, 4), at(3, 5)),
        ],
        CmpOp::Gt | CmpOp::Ge => vec![
            stmt(LD_W_ABS, hi),
            jump(JGT_K, vhi, at(1, 6), 0),
            jump(JEQ_K, vhi, 0, at(2, 5)),
            stmt(LD_W_ABS, lo),
            jump(
                if c.op == CmpOp::Gt { JGT_K } else { JGE_K },
                vlo,
                at(4, 6),
                at(4, 5),
            ),
        ],
        CmpOp::Lt | CmpOp::Le => vec![
            stmt(LD_W_ABS, hi),
            jump(JGE_K, vhi, 0, at(1, 6)),
            jump(JEQ_K, vhi, 0, at(2, 5)),
            stmt(LD_W_ABS, lo),
            jump(
                if c.op == CmpOp::Lt { JGE_K } else { JGT_K },
                vlo,
                at(4, 5),
                at(4, 6),
            ),
        ],
        CmpOp::MaskedEq(mask) => vec![
            stmt(LD_W_ABS, hi),
            stmt(ALU_AND_K, (mask >> 32) as u32),
            jump(JEQ_K, vhi, 0, at(2, 6)),
            stmt(LD_W_ABS, lo),
            stmt(ALU_AND_K, mask as u32),
            jump(JEQ_K, vlo, at(5, 7), at(5, 6)),
        ],
    };
    p.push(stmt(JA, 0));
    p
}

/// Where a call number's search ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Ret(u32),
    /// Argument block of this call number.
    Block(u32),
}

/// A search leaf whose `JA` goes to a block (patched once blocks are laid
/// out): (instruction index, call number).
type Fixups = Vec<(usize, u32)>;

/// Emits the search over `intervals` (start, target), sorted, the first
/// starting at 0; `base` is where this subtree begins in the program.
fn tree(intervals: &[(u32, Target)], base: usize, fix: &mut Fixups) -> Vec<sock_filter> {
    if let [(_, t)] = intervals {
        return vec![match *t {
            Target::Ret(k) => stmt(RET_K, k),
            Target::Block(nr) => {
                fix.push((base, nr));
                stmt(JA, 0)
            }
        }];
    }
    let mid = intervals.len() / 2;
    let split = intervals[mid].0;
    // Try the short form first; redo with a trampoline if the left side is
    // too long for an 8-bit offset.
    let mut local = Fixups::new();
    let left = tree(&intervals[..mid], base + 1, &mut local);
    if let Ok(skip) = u8::try_from(left.len()) {
        let right = tree(&intervals[mid..], base + 1 + left.len(), fix);
        fix.extend(local);
        let mut p = vec![jump(JGE_K, split, skip, 0)];
        p.extend(left);
        p.extend(right);
        return p;
    }
    let left = tree(&intervals[..mid], base + 2, fix);
    let right = tree(&intervals[mid..], base + 2 + left.len(), fix);
    let mut p = vec![jump(JGE_K, split, 0, 1), stmt(JA, left.len() as u32)];
    p.extend(left);
    p.extend(right);
    p
}

/// Builds one filter: calls in `rules` whose conditions hold get
/// `matched`, every other call `mismatch`; a call of another architecture
/// than `audit_arch` kills the process.
pub fn build(rules: &Rules, audit_arch: u32, mismatch: u32, matched: u32) -> Vec<sock_filter> {
    let decisions: Decisions = rules
        .iter()
        .map(|(&nr, alts)| {
            let alts = if alts.is_empty() {
                vec![(Vec::new(), matched)]
            } else {
                alts.iter().map(|a| (a.clone(), matched)).collect()
            };
            (nr, alts)
        })
        .collect();
    build_decisions(&decisions, audit_arch, mismatch)
}

/// Builds one filter from per-call decisions: a call's first alternative
/// whose conditions hold gives its action, a call with none (or not in
/// `rules`) gets `default`; a call of another architecture than
/// `audit_arch` kills the process.
pub fn build_decisions(rules: &Decisions, audit_arch: u32, default: u32) -> Vec<sock_filter> {
    let mut p = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JEQ_K, audit_arch, 1, 0),
        stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS),
    ];
    if rules.is_empty() {
        p.push(stmt(RET_K, default));
        return p;
    }
    p.push(stmt(LD_W_ABS, NR));
    // [0, 2^32) cut into intervals of one outcome.
    let mut intervals: Vec<(u32, Target)> = Vec::new();
    let mut push = |start: u32, t: Target| {
        if let Some(last) = intervals.last_mut()
            && last.0 == start
        {
            last.1 = t;
            let n = intervals.len();
            if n >= 2 && intervals[n - 2].1 == t {
                intervals.pop();
            }
        } else if intervals.last().is_none_or(|(_, last)| *last != t) {
            intervals.push((start, t));
        }
    };
    push(0, Target::Ret(default));
    for (&nr, alts) in rules {
        push(
            nr,
            match alts.first() {
                None => Target::Ret(default),
                Some((conds, action)) if conds.is_empty() => Target::Ret(*action),
                Some(_) => Target::Block(nr),
            },
        );
        if let Some(next) = nr.checked_add(1) {
            push(next, Target::Ret(default));
        }
    }
    let mut fix = Fixups::new();
    let base = p.len();
    p.extend(tree(&intervals, base, &mut fix));
    // Argument blocks: each alternative's conditions, then its action; a
    // failed condition jumps to the next alternative, after the last one
    // comes `default`. An alternative without conditions ends the block.
    let mut block_at = BTreeMap::new();
    for (&nr, alts) in rules
        .iter()
        .filter(|(_, a)| a.first().is_some_and(|(c, _)| !c.is_empty()))
    {
        block_at.insert(nr, p.len());
        let mut ended = false;
        for (alt, action) in alts {
            let mut fails = Vec::new();
            for c in alt {
                p.extend(condition(c));
                fails.push(p.len() - 1);
            }
            p.push(stmt(RET_K, *action));
            let next = p.len();
            for f in fails {
                p[f].k = (next - f - 1) as u32;
            }
            if alt.is_empty() {
                ended = true;
                break;
            }
        }
        if !ended {
            p.push(stmt(RET_K, default));
        }
    }
    for (at, nr) in fix {
        p[at].k = (block_at[&nr] - at - 1) as u32;
    }
    p
}
