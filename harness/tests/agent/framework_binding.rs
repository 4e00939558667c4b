//! A framework ID belongs to the principal that first launched a pod with
//! it, for good (issue 25, item 4): Mesos' master refuses a principal
//! change for a known framework ID ("Changing framework's principal is not
//! allowed.", src/master/validation.cpp `validateUpdate`). The binding is
//! checkpointed (`<work_dir>/meta/frameworks/<id>.info`) and survives
//! restarts; a damaged binding stops the agent with an error naming the
//! file instead of unbinding the ID. A principal that may not view the
//! framework gets the neutral `403 Forbidden.` of any refusal, which does
//! not say the ID exists; one that may view it gets Mesos' text (409).
//! Needs root (the Linux launcher); with CI=true skipping is a failure.

use std::path::{Path, PathBuf};

use crate::agent_support::{INTRUDER, OPS, TestAgent, pod, require_root, task};

/// ops (alice) and intruder (bob) may both run tasks; only ops may view
/// frameworks.
const ACLS: &str = r#"{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["ops", "intruder"]}, "users": {"type": "ANY"}}],
  "view_frameworks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
}"#;

const FORBIDDEN: &str = "403 Forbidden.";

/// A pod of framework `fid` claimed by `principal` (None: left unset, the
/// agent takes the authenticated one).
fn pod_of(fid: &str, principal: Option<&str>) -> serde_json::Value {
    let mut spec = pod(serde_json::json!([task("main", "sleep 600")]));
    spec["framework"]["id"]["value"] = fid.into();
    spec["executor"]["framework_id"]["value"] = fid.into();
    match principal {
        Some(p) => spec["framework"]["principal"] = p.into(),
        None => {
            spec["framework"]
                .as_object_mut()
                .unwrap()
                .remove("principal");
        }
    }
    spec
}

/// Submits `spec` as `who`; (status, body).
fn submit(agent: &TestAgent, who: (&str, &str), spec: &serde_json::Value) -> (u16, String) {
    agent.curl(Some(who), "/nestguard/v1/pods", &spec.to_string())
}

/// Submits `spec` as `who`, which must be accepted, then ends the pod
/// (DELETE as `who`, its framework's principal).
fn run_and_end(agent: &TestAgent, who: (&str, &str), spec: &serde_json::Value) {
    let (status, body) = submit(agent, who, spec);
    assert_eq!(status, 200, "{body}\n{}", agent.log());
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = v["container_id"].as_str().unwrap();
    let (status, body) = agent.curl_with_method(who, "DELETE", &format!("/nestguard/v1/pods/{id}"));
    assert_eq!(status, 200, "{body}");
}

/// The executors' sandbox directories of framework `fid` on the agent.
fn sandboxes_of(agent: &TestAgent, fid: &str) -> Vec<PathBuf> {
    let slaves = agent.dir.path().join("work/slaves");
    let mut found = Vec::new();
    for slave in std::fs::read_dir(slaves).into_iter().flatten().flatten() {
        let executors = slave.path().join("frameworks").join(fid).join("executors");
        for e in std::fs::read_dir(executors).into_iter().flatten().flatten() {
            found.push(e.path());
        }
    }
    found
}

fn executor_name(spec: &serde_json::Value) -> String {
    spec["executor"]["executor_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Bob's submissions of alice's framework ID are refused with the neutral
/// 403 and leave nothing behind.
fn assert_squat_refused(agent: &TestAgent, fid: &str) {
    for principal in [Some(INTRUDER.0), None] {
        let spec = pod_of(fid, principal);
        assert_eq!(
            submit(agent, INTRUDER, &spec),
            (403, FORBIDDEN.to_owned()),
            "bob claimed {fid} as {principal:?}"
        );
        let eid = executor_name(&spec);
        assert!(
            sandboxes_of(agent, fid)
                .iter()
                .all(|p| !p.ends_with(Path::new(&eid))),
            "bob's sandbox landed under frameworks/{fid}/"
        );
    }
}

#[test]
fn a_framework_id_stays_bound_to_its_first_principal() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start_with_acls(ACLS);
    // Alice's last pod of fw-alice ends; the ID stays hers.
    run_and_end(&agent, OPS, &pod_of("fw-alice", Some(OPS.0)));
    assert_squat_refused(&agent, "fw-alice");
    // Alice is not locked out of her own framework.
    run_and_end(&agent, OPS, &pod_of("fw-alice", Some(OPS.0)));
    assert!(
        agent
            .dir
            .path()
            .join("work/meta/frameworks/fw-alice.info")
            .is_file()
    );

    // Bob's own framework is his; alice, who may view frameworks, hears
    // Mesos' reason.
    run_and_end(&agent, INTRUDER, &pod_of("fw-bob", None));
    assert_eq!(
        submit(&agent, OPS, &pod_of("fw-bob", Some(OPS.0))),
        (
            409,
            "Changing framework's principal is not allowed.".to_owned()
        )
    );

    // The bindings survive a restart.
    agent.sigkill();
    agent.spawn();
    assert_squat_refused(&agent, "fw-alice");
    run_and_end(&agent, OPS, &pod_of("fw-alice", Some(OPS.0)));
    run_and_end(&agent, INTRUDER, &pod_of("fw-bob", Some(INTRUDER.0)));
}

/// Writes a damaged binding file at the path it is given.
type Damage = Box<dyn Fn(&Path)>;

#[test]
fn a_damaged_binding_stops_the_agent_and_never_unbinds() {
    if !require_root() {
        return;
    }
    let mut agent = TestAgent::start_with_acls(ACLS);
    run_and_end(&agent, OPS, &pod_of("fw-alice", Some(OPS.0)));
    agent.sigkill();
    let binding = agent.dir.path().join("work/meta/frameworks/fw-alice.info");
    let good = std::fs::read(&binding).unwrap();
    // Bob's own record written over alice's, as if to rebind her ID.
    let hostile = nestguard::proto::mesos::FrameworkInfo {
        id: Some(nestguard::proto::mesos::FrameworkId {
            value: "fw-bob".into(),
        }),
        principal: Some(INTRUDER.0.into()),
        ..Default::default()
    };
    let mut torn = good.clone();
    torn.truncate(good.len() - 1);
    let mut trailing = good.clone();
    trailing.extend_from_slice(b"junk");
    let damages: Vec<(&str, Damage)> = vec![
        ("torn", Box::new(move |p| std::fs::write(p, &torn).unwrap())),
        (
            "trailing bytes",
            Box::new(move |p| std::fs::write(p, &trailing).unwrap()),
        ),
        ("empty", Box::new(|p| std::fs::write(p, b"").unwrap())),
        (
            "another framework's record",
            Box::new(move |p| {
                nestguard::checkpoint::write_message(
                    p,
                    &hostile,
                    nestguard::checkpoint::Outlives::HostCrash,
                )
                .unwrap()
            }),
        ),
        (
            "a link to /dev/zero",
            Box::new(|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap()),
        ),
    ];
    for (what, damage) in damages {
        std::fs::remove_file(&binding).unwrap();
        damage(&binding);
        let stderr = agent.refused_restart();
        assert!(
            stderr.contains(&binding.display().to_string())
                && stderr.contains("framework 'fw-alice'"),
            "{what}: {stderr}"
        );
    }
    // The operator repairs the file: the ID is alice's still.
    std::fs::remove_file(&binding).unwrap();
    std::fs::write(&binding, &good).unwrap();
    agent.spawn();
    assert_squat_refused(&agent, "fw-alice");
    run_and_end(&agent, OPS, &pod_of("fw-alice", Some(OPS.0)));
}
