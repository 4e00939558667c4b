//! The memory mode: N idle containers, the agent's RSS per 1,000 containers and
//! one container's helper memory.

use super::*;

/// `Pss:` and `Private_*:` of one process, in KiB.
pub(super) fn pss_private(pid: i32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum()
    };
    (
        field("Pss:"),
        field("Private_Clean:") + field("Private_Dirty:"),
    )
}

pub(super) fn memory(setup: &Setup, containers: u32, deadline: Instant) -> Result<bool> {
    let agent = setup.start()?;
    reap();
    std::thread::sleep(Duration::from_millis(500));
    let rss0 = agent.rss_kib();
    let client = &agent.client;
    let started = Instant::now();
    let mut launched = 0u32;
    for i in 0..containers {
        if Instant::now() > deadline {
            println!("deadline reached after {i} containers");
            break;
        }
        let (status, body) = client
            .api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": {"value": format!("mem-{i}")}, "command": {"value": "sleep 3600"}}}))?;
        if status != 200 {
            return Err(format!("launch mem-{i}: {status} {body}"));
        }
        launched += 1;
    }
    std::thread::sleep(Duration::from_secs(2));
    let rss1 = agent.rss_kib();
    let threads = agent.threads();
    println!(
        "memory: {launched} idle containers launched in {:.1} s; agent RSS {rss0} KiB before, {rss1} KiB after: {:.0} KiB per 1,000 containers; {threads} threads",
        started.elapsed().as_secs_f64(),
        (rss1.saturating_sub(rss0)) as f64 * 1000.0 / f64::from(launched.max(1))
    );
    // One idle container's processes: everything in its cgroup but the
    // command. The launch helper stays out of the cgroup and ends once the
    // container runs: every nestguard-launch below the driver is counted to
    // show what is left per container (the agent's spare helper is one).
    let procs = processes();
    let agent_pid = agent.pid.as_raw();
    let me = std::process::id() as i32;
    let launch_helpers = procs
        .values()
        .filter(|p| p.exe.ends_with("/nestguard-launch") && descends(&procs, p.pid, me))
        .count();
    let outside = procs
        .values()
        .filter(|p| p.exe.ends_with("/nestguard-launch") && p.ppid == agent_pid)
        .count();
    println!(
        "memory: {launch_helpers} nestguard-launch processes for {launched} containers ({outside} of them the agent's own children)"
    );
    let freezer = setup.container_cgroups().ok_or("no cgroup root")?;
    let mut helpers = (0u64, 0u64, 0u64);
    for sample in ["mem-0", "mem-1"] {
        let pids =
            std::fs::read_to_string(freezer.join(sample).join("cgroup.procs")).unwrap_or_default();
        let mut pids: Vec<i32> = pids
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .collect();
        // The launch helper, out of the cgroup: the supervisor's
        // nestguard-launch ancestors below the agent.
        let mut outside = Vec::new();
        for pid in &pids {
            let mut p = procs.get(pid).map(|p| p.ppid);
            while let Some(pp) = p.filter(|pp| *pp != agent_pid && *pp > 1) {
                let Some(parent) = procs.get(&pp) else { break };
                if parent.exe.ends_with("/nestguard-launch") && !pids.contains(&pp) {
                    outside.push(pp);
                }
                p = Some(parent.ppid);
            }
        }
        outside.sort_unstable();
        outside.dedup();
        pids.extend(outside);
        for pid in pids {
            let exe = procs.get(&pid).map(|p| p.exe.clone()).unwrap_or_default();
            let rss = status_field(pid, "VmRSS:").unwrap_or(0);
            let (pss, private) = pss_private(pid);
            let role = if exe.ends_with("/nestguard-launch") {
                "helper"
            } else {
                "command"
            };
            println!(
                "  {sample} pid {pid} {exe} ({role}): RSS {rss} KiB, PSS {pss} KiB, private {private} KiB"
            );
            if role == "helper" && sample == "mem-0" {
                helpers.0 += rss;
                helpers.1 += pss;
                helpers.2 += private;
            }
        }
    }
    println!(
        "memory: one idle container's helper processes: RSS {} KiB, PSS {} KiB, private {} KiB",
        helpers.0, helpers.1, helpers.2
    );
    for i in 0..launched {
        client.kill_and_remove_standalone(&format!("mem-{i}"));
    }
    let (leaked, details) = leaks(setup, Some(&agent), usize::MAX);
    for d in &details {
        println!("  leak: {d}");
    }
    let clean = agent.stop();
    Ok(leaked.total() == 0 && clean)
}
