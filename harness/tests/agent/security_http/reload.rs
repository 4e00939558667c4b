//! Hole 9 of the front door: hot reload of the ACL file and SIGHUP, never with
//! a permissive gap or a dead agent.

use super::*;

/// Replaces `path` the way config managers do: write aside, rename over.
fn replace(path: &Path, text: &str) {
    let aside = path.with_extension("tmp");
    std::fs::write(&aside, text).unwrap();
    std::fs::rename(&aside, path).unwrap();
}

#[test]
fn acl_file_changes_flip_decisions_and_bad_files_keep_the_last_good_policy() {
    let mut door = Door::start(Setup::posix(ALLOW_OPS_WAIT));
    let acls = door.dir.path().join("acls.json");
    assert_eq!(door.api(OPS, &wait_missing()).0, 404);

    replace(&acls, DENY_OPS_WAIT);
    assert!(
        eventually(Duration::from_secs(10), || door.api(OPS, &wait_missing()).0
            == 403),
        "the change was never picked up:\n{}",
        door.log()
    );

    // A broken file (also written in place, half a file): the last good
    // policy stays, the agent lives and says why.
    replace(
        &acls,
        r#"{"permissive": false, "wait_standalone_containers": ["#,
    );
    assert!(
        eventually(Duration::from_secs(10), || door
            .log()
            .contains("ACL reload failed; keeping the previous policy")),
        "{}",
        door.log()
    );
    assert_eq!(door.api(OPS, &wait_missing()).0, 403);
    std::fs::write(&acls, "{\"permissive\": tru").unwrap();
    // Absence cannot be polled for: give the agent time to act wrongly.
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(door.api(OPS, &wait_missing()).0, 403);
    assert!(door.alive());

    replace(&acls, ALLOW_OPS_WAIT);
    assert!(
        eventually(Duration::from_secs(10), || door.api(OPS, &wait_missing()).0
            == 404),
        "{}",
        door.log()
    );
}

#[test]
fn sighup_reloads_and_never_kills_the_agent() {
    // The configured file is a hard link of one in another directory: writes
    // through that other name are invisible to the watcher, so only SIGHUP
    // can pick them up.
    let mut door = Door::start(Setup::posix(ALLOW_OPS_WAIT));
    let acls = door.dir.path().join("acls.json");
    let elsewhere = door.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let alias = elsewhere.join("acls.json");
    std::fs::hard_link(&acls, &alias).unwrap();
    assert_eq!(door.api(OPS, &wait_missing()).0, 404);

    std::fs::write(&alias, DENY_OPS_WAIT).unwrap();
    // Absence cannot be polled for: give the agent time to act wrongly.
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        door.api(OPS, &wait_missing()).0,
        404,
        "premise: the watcher does not see writes through the other name"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(door.pid()),
        nix::sys::signal::Signal::SIGHUP,
    )
    .expect("signal the agent");
    assert!(
        eventually(Duration::from_secs(10), || door.api(OPS, &wait_missing()).0
            == 403),
        "SIGHUP did not reload:\n{}",
        door.log()
    );
    assert!(door.alive());

    // A bad file and SIGHUP: alive, last good policy, the reason logged.
    std::fs::write(&alias, "not json").unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(door.pid()),
        nix::sys::signal::Signal::SIGHUP,
    );
    assert!(
        eventually(Duration::from_secs(10), || door
            .log()
            .contains("ACL reload failed; keeping the previous policy")
            && door.log().contains("SIGHUP")),
        "{}",
        door.log()
    );
    assert!(door.alive());
    assert_eq!(door.api(OPS, &wait_missing()).0, 403);
    // Many at once still never kill it.
    for _ in 0..20 {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(door.pid()),
            nix::sys::signal::Signal::SIGHUP,
        );
    }
    // Absence cannot be polled for: give the agent time to act wrongly.
    std::thread::sleep(Duration::from_millis(500));
    assert!(door.alive());
    assert_eq!(door.api(OPS, &wait_missing()).0, 403);
}

// ----- the credentials matrix --------------------------------------------------
