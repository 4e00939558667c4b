//! Helpers every test support module needs: the root check that refuses to
//! skip under CI, and polling for a condition. Included by `#[path]` from the
//! support modules of both the library's and the harness's tests, so there is
//! one copy of each rule.

#![allow(dead_code, reason = "each test binary uses a subset")]

/// True if the test may run; false (skip) when not root, unless CI=true,
/// where a missing root is a failure. `what` names the tests in the
/// messages ("cgroup tests").
pub fn root_or_skip(what: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{what} need root (CI=true forbids skipping)"
    );
    eprintln!("skipping: {what} need root");
    false
}

/// Polls `condition` every 10 ms until it holds, and panics naming `what`
/// once `timeout` has passed. Tests wait on conditions, not on time: a fixed
/// sleep is too short on a busy machine and wasted on an idle one.
pub fn wait_until(what: &str, timeout: std::time::Duration, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
