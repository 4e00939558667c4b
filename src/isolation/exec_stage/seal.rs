//! The seal: proof that a stage command was made by the isolator.
//!
//! The wrapper gives the stage root for the user switch. A tenant who can
//! choose a container's command could otherwise write a command that looks
//! like the stage, with a plan of its own (every capability kept as an
//! effective set), and have the wrapper run it as root. So the isolator
//! seals each plan: HMAC-SHA256 over the plan argument, the stage's path
//! (a look-alike binary of the tenant's never gets a seal that verifies),
//! the user it was made for, and the command's other arguments (the ones
//! Mesos puts before the stage's three, e.g. docker/runtime's for an image's
//! own command, then `--` and the container's command): a plan and seal
//! the tenant read from another container's arguments verify only with that
//! very command, at that very place, so they can never confine a command of
//! the tenant's. Keyed by a random key of the module's that only root can read
//! (`<key dir>/<name>.key`, 0600, written at load). The wrapper moves the
//! user only for a command whose seal verifies under one of the keys there
//! (one per agent on the host); any other command passes through untouched,
//! so Mesos switches the user and the stage, unprivileged, cannot widen
//! anything.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Where the module writes its key and the wrapper reads the keys.
pub const KEY_DIR: &str = "/run/nestguard/exec-stage";

/// The most key files the wrapper reads (one per agent on a host).
const MAX_KEYS: usize = 64;

/// A sealing key.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// HMAC takes keys of any length, so `None` never happens; a seal that
/// could not be made is one that never verifies.
fn mac(
    key: &SealKey,
    plan_arg: &str,
    stage: &str,
    user: &str,
    command: &[String],
) -> Option<Hmac<Sha256>> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&key.0).ok()?;
    m.update(plan_arg.as_bytes());
    m.update(b"\0");
    m.update(stage.as_bytes());
    m.update(b"\0");
    m.update(user.as_bytes());
    // Length-prefixed, so no two lists hash alike.
    m.update(&(command.len() as u64).to_le_bytes());
    for arg in command {
        m.update(&(arg.len() as u64).to_le_bytes());
        m.update(arg.as_bytes());
    }
    Some(m)
}

impl SealKey {
    /// A new random key, written as `<dir>/<name>.key` (0600, atomically).
    pub fn create(dir: &Path, name: &str) -> std::io::Result<SealKey> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let path = key_path(dir, name);
        let tmp = path.with_extension("key.tmp");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&key)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        Ok(SealKey(key))
    }

    /// The `--seal=` argument for `plan_arg` run by the stage at `stage`,
    /// made for `user` ("" for none), with `command` the arguments beside
    /// the stage's three (before them, then from `--` on; none for a
    /// command task, whose executor command is Mesos').
    pub fn seal(&self, plan_arg: &str, stage: &str, user: &str, command: &[String]) -> String {
        let hex: String = mac(self, plan_arg, stage, user, command)
            .map(|m| {
                m.finalize()
                    .into_bytes()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect()
            })
            .unwrap_or_default();
        format!("--seal={hex}")
    }

    fn verifies(
        &self,
        plan_arg: &str,
        stage: &str,
        user: &str,
        command: &[String],
        seal_arg: &str,
    ) -> bool {
        let Some(hex) = seal_arg.strip_prefix("--seal=") else {
            return false;
        };
        let bytes: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| {
                hex.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect();
        match bytes {
            Some(tag) if tag.len() == 32 => mac(self, plan_arg, stage, user, command)
                .is_some_and(|m| m.verify_slice(&tag).is_ok()),
            _ => false,
        }
    }
}

/// `<dir>/<name>.key`, the name made a plain file name.
pub fn key_path(dir: &Path, name: &str) -> PathBuf {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}.key"))
}

/// The keys in `dir`: regular files of 32 bytes, root's, not readable by
/// others (anything else is skipped).
pub fn read_keys(dir: &Path) -> Vec<SealKey> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "key"))
        .filter_map(|e| {
            let meta = std::fs::symlink_metadata(e.path()).ok()?;
            let private = meta.is_file()
                && meta.len() == 32
                && meta.uid() == 0
                && meta.permissions().mode() & 0o077 == 0;
            private.then(|| std::fs::read(e.path()).ok())?
        })
        .filter_map(|bytes| <[u8; 32]>::try_from(bytes.as_slice()).ok().map(SealKey))
        .take(MAX_KEYS)
        .collect()
}

/// Whether any of `keys` sealed `plan_arg` at `stage` for `user` and
/// `command` (see [`SealKey::seal`]).
pub fn verified(
    keys: &[SealKey],
    plan_arg: &str,
    stage: &str,
    user: &str,
    command: &[String],
    seal_arg: &str,
) -> bool {
    keys.iter()
        .any(|k| k.verifies(plan_arg, stage, user, command, seal_arg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_verifies_only_for_its_plan_stage_user_and_command() {
        let dir = std::env::temp_dir().join(format!("ng-seal-{}", std::process::id()));
        let key = SealKey::create(&dir, "nestguard/a b").unwrap();
        assert!(key_path(&dir, "nestguard/a b").ends_with("nestguard_a_b.key"));
        let cmd = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let command = cmd(&["--", "/bin/true"]);
        let seal = key.seal("--plan=abc", "/s/nestguard-exec", "nobody", &command);
        let keys = if nix::unistd::geteuid().is_root() {
            read_keys(&dir)
        } else {
            vec![key.clone()]
        };
        assert_eq!(keys.len(), 1);
        let stage = "/s/nestguard-exec";
        let ok = |plan: &str, stage: &str, user: &str, command: &[String], seal: &str| {
            verified(&keys, plan, stage, user, command, seal)
        };
        assert!(ok("--plan=abc", stage, "nobody", &command, &seal));
        assert!(!ok("--plan=abd", stage, "nobody", &command, &seal));
        assert!(!ok("--plan=abc", stage, "root", &command, &seal));
        assert!(!ok(
            "--plan=abc",
            "/tmp/x/nestguard-exec",
            "nobody",
            &command,
            &seal
        ));
        // Another command, the same arguments split otherwise, or none.
        assert!(!ok(
            "--plan=abc",
            stage,
            "nobody",
            &cmd(&["--", "/bin/sh"]),
            &seal
        ));
        assert!(!ok(
            "--plan=abc",
            stage,
            "nobody",
            &cmd(&["--/bin/true"]),
            &seal
        ));
        assert!(!ok(
            "--plan=abc",
            stage,
            "nobody",
            &cmd(&["x", "--", "/bin/true"]),
            &seal
        ));
        assert!(!ok("--plan=abc", stage, "nobody", &[], &seal));
        assert!(!ok("--plan=abc", stage, "nobody", &command, "--seal=00"));
        assert!(!ok("--plan=abc", stage, "nobody", &command, "--seal=zz"));
        assert!(!verified(
            &[],
            "--plan=abc",
            stage,
            "nobody",
            &command,
            &seal
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
