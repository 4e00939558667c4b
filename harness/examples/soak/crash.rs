//! The crash campaign: seeded plans of launch bursts, the agent killed at a
//! random moment, and every launch checked after the restart.

use super::*;

/// One planned launch.
#[derive(Debug, Clone)]
pub(super) struct Planned {
    /// Dotted ID; a pod's root is `pod:<executor id>` until its ID is known.
    pub(super) id: String,
    pub(super) level: u8,
    pub(super) pod: bool,
    /// None: long-running; Some(code): `exit code`.
    pub(super) exit: Option<i32>,
}

#[derive(Debug, Clone)]
pub(super) enum Outcome {
    NotSent,
    Acked,
    Refused(u16, String),
    Unanswered(String),
}

/// What a unit's launches came to, and its pod's container ID if any.
pub(super) type UnitResult = (Vec<Outcome>, Option<String>);

/// A launch tree: a root (standalone container or pod) and up to two
/// levels of nested containers below it, launched in order.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    pub(super) start_ms: u64,
    pub(super) launches: Vec<Planned>,
}

pub(super) fn plan(round: u32, seed: u64, units: usize, window_ms: u64) -> (Vec<Unit>, u64) {
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(seed ^ (u64::from(round) << 32));
    let mut out = Vec::new();
    for u in 0..units {
        let pod = rng.random_bool(0.4);
        let depth: u8 = rng.random_range(1..=3);
        let root = format!("soak-r{round}-u{u}");
        let mut launches = vec![Planned {
            id: root.clone(),
            level: 1,
            pod,
            exit: None,
        }];
        let mut parent = root;
        for level in 2..=depth {
            // A container with a child must run: only the last may exit.
            let exit = (level == depth && rng.random_bool(0.5)).then(|| rng.random_range(0..10));
            let id = format!("{parent}.l{level}");
            launches.push(Planned {
                id: id.clone(),
                level,
                pod,
                exit,
            });
            parent = id;
        }
        out.push(Unit {
            start_ms: rng.random_range(0..=window_ms / 2),
            launches,
        });
    }
    let kill_ms = rng.random_range(0..=window_ms);
    (out, kill_ms)
}

pub(super) fn pod_spec(executor: &str) -> Value {
    json!({
        "framework": {"user": "root", "name": "soak", "id": {"value": "soak"}, "principal": OPS.0},
        "executor": {"executor_id": {"value": executor}, "type": "DEFAULT", "framework_id": {"value": "soak"}},
        "tasks": [{"task": {"name": "main", "task_id": {"value": "main"}, "agent_id": {"value": "soak"},
            "command": {"value": LONG}}}]
    })
}

/// Runs one unit's launches in order until one is not acknowledged.
/// Returns the outcome of each and the pod's container ID if it has one.
pub(super) fn run_unit(client: &Client, unit: &Unit, started: Instant) -> UnitResult {
    let offset = Duration::from_millis(unit.start_ms);
    if let Some(wait) = offset.checked_sub(started.elapsed()) {
        std::thread::sleep(wait);
    }
    let mut outcomes = vec![Outcome::NotSent; unit.launches.len()];
    let mut pod_id: Option<String> = None;
    for (i, l) in unit.launches.iter().enumerate() {
        let command = match l.exit {
            Some(code) => format!("exit {code}"),
            None => LONG.to_owned(),
        };
        let answer = if l.level == 1 && l.pod {
            client
                .send("POST", "/nestguard/v1/pods", Some(&pod_spec(&l.id)))
                .inspect(|(status, body)| {
                    if *status == 200 {
                        pod_id = serde_json::from_str::<Value>(body)
                            .ok()
                            .and_then(|v| v["container_id"].as_str().map(str::to_owned));
                    }
                })
        } else if l.level == 1 {
            client.api(&json!({"type": "LAUNCH_CONTAINER", "launch_container": {
                "container_id": container_id(&l.id), "command": {"value": command}}}))
        } else {
            // Below a pod, the root is the pod's container.
            let id = match &pod_id {
                Some(root) => l.id.replacen(&unit.launches[0].id, root, 1),
                None => l.id.clone(),
            };
            client.api(
                &json!({"type": "LAUNCH_NESTED_CONTAINER", "launch_nested_container": {
                "container_id": container_id(&id), "command": {"value": command}}}),
            )
        };
        outcomes[i] = match answer {
            Ok((200, _)) => Outcome::Acked,
            Ok((status, body)) => Outcome::Refused(status, body),
            Err(e) => Outcome::Unanswered(e),
        };
        if !matches!(outcomes[i], Outcome::Acked) {
            break;
        }
    }
    (outcomes, pod_id)
}

#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) rounds: u32,
    pub(super) launches: usize,
    pub(super) acked: usize,
    pub(super) exact: usize,
    pub(super) lost: usize,
    pub(super) inexact: usize,
    pub(super) refused: usize,
    pub(super) unanswered: usize,
    pub(super) unanswered_recovered: usize,
    pub(super) unanswered_failed_with_reason: usize,
    pub(super) unanswered_never_started: usize,
    pub(super) not_sent: usize,
    pub(super) orphans: usize,
    pub(super) leaks: Leaks,
}

pub(super) fn crash(
    setup: &Setup,
    rounds: u32,
    seed: u64,
    units: usize,
    window_ms: u64,
    deadline: Instant,
) -> Result<bool> {
    let started = Instant::now();
    let mut agent = setup.start()?;
    reap();
    // The baseline is an agent that launched once: its spare launch helper
    // (two pipes) exists from the first launch on.
    warm_up(&agent.client)?;
    let fd_baseline = agent.fds();
    let (pre, details) = leaks(setup, Some(&agent), fd_baseline);
    if pre.total() > 0 {
        return Err(format!("not a clean start: {pre}: {details:?}"));
    }
    println!(
        "crash: seed {seed}, {units} launch trees a round, kill within {window_ms} ms; fresh agent: {fd_baseline} fds, {} KiB RSS",
        agent.rss_kib()
    );
    let mut t = Tally::default();
    for round in 0..rounds {
        if Instant::now() > deadline {
            println!("deadline reached after {round} rounds");
            break;
        }
        let (plan, kill_ms) = plan(round, seed, units, window_ms);
        let burst = Instant::now();
        let results: Arc<Mutex<Vec<UnitResult>>> =
            Arc::new(Mutex::new(vec![(Vec::new(), None); plan.len()]));
        let threads: Vec<_> = plan
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, unit)| {
                let client = agent.client.clone();
                let results = Arc::clone(&results);
                std::thread::spawn(move || {
                    let r = run_unit(&client, &unit, burst);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = r;
                })
            })
            .collect();
        if let Some(wait) = Duration::from_millis(kill_ms).checked_sub(burst.elapsed()) {
            std::thread::sleep(wait);
        }
        agent.sigkill();
        for th in threads {
            let _ = th.join();
        }
        drop(agent);
        agent = setup.start()?;
        let results = results.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let round_tally = check_round(setup, &agent, &plan, &results, fd_baseline)?;
        println!(
            "round {round}: kill at {kill_ms} ms; launches {}, acknowledged {} (exact {}), unanswered {} (recovered {}, failed with a reason {}, never started {}), refused {}, lost {}, inexact {}, orphans {}; leaks: {}",
            round_tally.launches,
            round_tally.acked,
            round_tally.exact,
            round_tally.unanswered,
            round_tally.unanswered_recovered,
            round_tally.unanswered_failed_with_reason,
            round_tally.unanswered_never_started,
            round_tally.refused,
            round_tally.lost,
            round_tally.inexact,
            round_tally.orphans,
            round_tally.leaks
        );
        t.rounds += 1;
        t.launches += round_tally.launches;
        t.acked += round_tally.acked;
        t.exact += round_tally.exact;
        t.lost += round_tally.lost;
        t.inexact += round_tally.inexact;
        t.refused += round_tally.refused;
        t.unanswered += round_tally.unanswered;
        t.unanswered_recovered += round_tally.unanswered_recovered;
        t.unanswered_failed_with_reason += round_tally.unanswered_failed_with_reason;
        t.unanswered_never_started += round_tally.unanswered_never_started;
        t.not_sent += round_tally.not_sent;
        t.orphans += round_tally.orphans;
        t.leaks.add(&round_tally.leaks);
    }
    let clean_stop = agent.stop();
    reap();
    let (after, details) = leaks(setup, None, 0);
    for d in &details {
        println!("  after the final stop: {d}");
    }
    t.leaks.add(&after);
    println!(
        "total: rounds {}, launches {} (acknowledged {}, unanswered {}, refused {}; {} not sent after the kill), \
         statuses exact {}/{}, unanswered: recovered {}, failed with a reason {}, never started {}; \
         containers lost {}, inexact {}, orphans {}; leaks: {}; clean stop {}; {:.0} s",
        t.rounds,
        t.launches,
        t.acked,
        t.unanswered,
        t.refused,
        t.not_sent,
        t.exact,
        t.acked,
        t.unanswered_recovered,
        t.unanswered_failed_with_reason,
        t.unanswered_never_started,
        t.lost,
        t.inexact,
        t.orphans,
        t.leaks,
        clean_stop,
        started.elapsed().as_secs_f64()
    );
    Ok(t.lost == 0
        && t.inexact == 0
        && t.refused == 0
        && t.orphans == 0
        && t.leaks.total() == 0
        && clean_stop)
}

/// Checks one round after the restart, then destroys everything.
pub(super) fn check_round(
    setup: &Setup,
    agent: &AgentProc,
    plan: &[Unit],
    results: &[UnitResult],
    fd_baseline: usize,
) -> Result<Tally> {
    let client = &agent.client;
    let running = client.running()?;
    let mut t = Tally::default();
    let report = |what: String| println!("  {what}");
    for (unit, (outcomes, pod_id)) in plan.iter().zip(results) {
        // A pod's ID: from its answer, else found by its executor ID.
        let root = &unit.launches[0];
        let pod_root = pod_id.clone().or_else(|| {
            running
                .iter()
                .find(|(_, e)| e.as_deref() == Some(root.id.as_str()))
                .map(|(id, _)| id.clone())
        });
        for (l, outcome) in unit.launches.iter().zip(outcomes) {
            let id = match (&pod_root, l.pod) {
                (Some(r), true) => l.id.replacen(&root.id, r, 1),
                _ => l.id.clone(),
            };
            let known_id = !(l.pod && pod_root.is_none());
            match outcome {
                Outcome::NotSent => {
                    t.not_sent += 1;
                    continue;
                }
                Outcome::Refused(status, body) => {
                    t.launches += 1;
                    t.refused += 1;
                    report(format!("refused {id}: {status} {body}"));
                    continue;
                }
                _ => t.launches += 1,
            }
            let acked = matches!(outcome, Outcome::Acked);
            if acked {
                t.acked += 1;
            } else {
                t.unanswered += 1;
            }
            // A short command may be listed as running just after the
            // restart (its exit not reaped yet): WAIT answers for it.
            let is_running = known_id && running.contains_key(&id) && l.exit.is_none();
            let termination = if is_running || !known_id {
                None
            } else {
                client.wait(&id)?
            };
            let reason = termination
                .as_ref()
                .and_then(|w| w["reason"].as_str().map(str::to_owned));
            let status = termination.as_ref().and_then(|w| w["exit_status"].as_i64());
            let right = match l.exit {
                None => is_running,
                Some(code) => status == Some(i64::from(code) << 8) && reason.is_none(),
            };
            if acked {
                if right {
                    t.exact += 1;
                } else if termination.is_none() && !is_running {
                    t.lost += 1;
                    report(format!(
                        "lost {id} (acknowledged, unknown after the restart)"
                    ));
                } else {
                    t.inexact += 1;
                    report(format!(
                        "inexact {id}: expected {:?}, running {is_running}, termination {termination:?}",
                        l.exit
                    ));
                }
            } else if right {
                t.unanswered_recovered += 1;
            } else if reason.as_deref() == Some("REASON_CONTAINER_LAUNCH_FAILED") {
                t.unanswered_failed_with_reason += 1;
            } else if termination.is_none() && !is_running {
                t.unanswered_never_started += 1;
            } else {
                t.inexact += 1;
                let why = match outcome {
                    Outcome::Unanswered(e) => e.as_str(),
                    _ => "",
                };
                report(format!(
                    "inexact unanswered {id} ({why}): expected {:?}, running {is_running}, termination {termination:?}",
                    l.exit
                ));
            }
        }
    }
    // A launch in progress (the executor relaunching its tasks after the
    // restart) has processes before the agent lists it: an orphan is one
    // still unlisted, with processes, a few seconds later.
    let mut orphans = orphans(setup, &running);
    if !orphans.is_empty() {
        std::thread::sleep(Duration::from_secs(3));
        let later = client.running()?;
        let again = self::orphans(setup, &later);
        orphans.retain(|o| again.contains(o));
    }
    for o in &orphans {
        report(format!("orphan {o}"));
    }
    t.orphans = orphans.len();
    // Destroy everything: pods through the pod endpoint, standalone roots
    // by kill, wait and remove; then the round's planned roots, whatever
    // became of them (a cut-off launch may leave a sandbox to remove).
    for (id, executor) in &running {
        if id.contains('.') {
            continue;
        }
        if executor.is_some() {
            let _ = client.send("DELETE", &format!("/nestguard/v1/pods/{id}"), None);
        } else {
            client.kill_and_remove_standalone(id);
        }
    }
    for unit in plan {
        if !unit.launches[0].pod {
            client.kill_and_remove_standalone(&unit.launches[0].id);
        }
    }
    let gone = Instant::now() + Duration::from_secs(30);
    while !client.running()?.is_empty() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (leaked, details) = leaks(setup, Some(agent), fd_baseline);
    for d in details {
        report(format!("leak: {d}"));
    }
    t.leaks = leaked;
    Ok(t)
}
