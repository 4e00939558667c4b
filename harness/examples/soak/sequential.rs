//! The sequential mode: launch, wait and remove one container after another,
//! with the agent's RSS and fd count.

use super::*;

/// One launch → wait → remove, then a pause for the agent to settle.
pub(super) fn warm_up(client: &Client) -> Result<()> {
    let id = container_id("soak-warm-up");
    let (status, body) = client.api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
        "container_id": id, "command": {"value": "true"}}}))?;
    if status != 200 {
        return Err(format!("the warm-up launch: {status} {body}"));
    }
    client.wait("soak-warm-up")?;
    client.api(&json!({"type": "REMOVE_CONTAINER", "remove_container": {"container_id": id}}))?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

pub(super) fn sequential(setup: &Setup, count: u32, deadline: Instant) -> Result<bool> {
    let agent = setup.start()?;
    reap();
    warm_up(&agent.client)?;
    let (fd0, rss0, threads0) = (agent.fds(), agent.rss_kib(), agent.threads());
    println!("sequential: start: agent RSS {rss0} KiB, {fd0} fds, {threads0} threads");
    let client = &agent.client;
    let started = Instant::now();
    let mut failures = 0u32;
    let mut done = 0u32;
    let mut warm = (rss0, fd0);
    let mut each = Vec::with_capacity(count as usize);
    for i in 0..count {
        if Instant::now() > deadline {
            println!("deadline reached after {i} launches");
            break;
        }
        let id = format!("seq-{i}");
        let cid = container_id(&id);
        let one = Instant::now();
        let launched = client.api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": cid, "command": {"value": "true"}}}));
        let waited = client.wait(&id);
        let removed = client.api(&json!({"type": "REMOVE_CONTAINER",
            "remove_container": {"container_id": cid}}));
        each.push(one.elapsed());
        let ok = matches!(launched, Ok((200, _)))
            && matches!(&waited, Ok(Some(w)) if w["exit_status"] == 0)
            && matches!(removed, Ok((200, _)));
        if !ok {
            failures += 1;
            if failures <= 5 {
                println!("  launch {i} failed: {launched:?} {waited:?} {removed:?}");
            }
        }
        done = i + 1;
        if done == 100 {
            warm = (agent.rss_kib(), agent.fds());
        }
        if done.is_multiple_of(1000) {
            println!(
                "  {done}: agent RSS {} KiB, {} fds, {} threads, {:.1} ms a launch",
                agent.rss_kib(),
                agent.fds(),
                agent.threads(),
                started.elapsed().as_secs_f64() * 1000.0 / f64::from(done)
            );
        }
    }
    reap();
    std::thread::sleep(Duration::from_millis(500));
    let (fd1, rss1, threads1) = (agent.fds(), agent.rss_kib(), agent.threads());
    let (leaked, details) = leaks(setup, Some(&agent), fd0);
    for d in &details {
        println!("  leak: {d}");
    }
    let runtime = entries(&setup.agent_work.join("run/containers")).len();
    each.sort();
    let at = |q: usize| {
        each.get((each.len() * q / 100).min(each.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "sequential: one launch -> WAIT -> remove: median {:.1} ms, p90 {:.1} ms, p99 {:.1} ms",
        at(50),
        at(90),
        at(99)
    );
    println!(
        "sequential: {done} launches, {failures} failed, {:.1} ms a launch; agent RSS {rss0} KiB at start, {} KiB after 100, {rss1} KiB at the end; fds {fd0} / {} / {fd1}; threads {threads0} / {threads1}; runtime checkpoint dirs left {runtime}; leaks: {leaked}",
        started.elapsed().as_secs_f64() * 1000.0 / f64::from(done.max(1)),
        warm.0,
        warm.1
    );
    let clean = agent.stop();
    Ok(failures == 0 && leaked.total() == 0 && clean && fd1 <= fd0)
}
