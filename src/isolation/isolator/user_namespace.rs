//! `namespaces/user` (opt-in, listed in `isolation`): every pod runs in a
//! user namespace of its own, root inside mapped to a range of
//! `user_namespace_range` no other pod and no host account uses. Not an
//! isolator object: the launcher allocates, maps and enters the ranges
//! ([`crate::isolation::launcher`], [`crate::isolation::helper::user_namespace`]);
//! here the parameters are checked, once, when the module loads.

use std::collections::HashMap;
use std::path::Path;

use super::error::{IsolatorError, Result};
use crate::isolation::id_map::RangePool;

/// The isolator's name in `isolation`.
pub const NAME: &str = "namespaces/user";

/// The pool, when `namespaces/user` is listed: `user_namespace_range` is
/// then required (and refused without it), the launcher must be
/// nestguard's, the kernel must allow user namespaces, and no account of
/// `/etc/passwd` or `/etc/group` may have an id in the pool.
pub fn pool(
    map: &HashMap<&str, &str>,
    isolation: &[String],
    mesos_launcher: bool,
) -> Result<Option<RangePool>> {
    let listed = isolation.iter().any(|n| n == NAME);
    let value = map.get("user_namespace_range");
    let parameter = |expected: &'static str, found: &str| IsolatorError::Parameter {
        key: "user_namespace_range".into(),
        expected,
        found: found.to_owned(),
    };
    let value = match (listed, value) {
        (false, None) => return Ok(None),
        (false, Some(v)) => {
            return Err(parameter(
                "no value unless namespaces/user is in 'isolation'",
                v,
            ));
        }
        (true, None) => {
            return Err(parameter(
                "a pool such as 100000-6653600/65536 (namespaces/user is in 'isolation')",
                "",
            ));
        }
        (true, Some(v)) => *v,
    };
    if mesos_launcher {
        return Err(IsolatorError::Invalid(
            "namespaces/user runs only under nestguard's launcher: Mesos 1.11's launch helper \
             cannot put a container in a user namespace (see docs/isolation.md)"
                .into(),
        ));
    }
    let pool = RangePool::parse(value)?;
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    if max.trim().parse::<u64>().unwrap_or(0) == 0 {
        return Err(IsolatorError::Invalid(
            "namespaces/user: this kernel allows no user namespaces \
             (/proc/sys/user/max_user_namespaces is 0 or missing)"
                .into(),
        ));
    }
    for (file, kind) in [("/etc/passwd", "user"), ("/etc/group", "group")] {
        let path = Path::new(file);
        let text = crate::input::read_text(path, crate::input::DEFAULT_MAX_FILE_SIZE)
            .map_err(|e| IsolatorError::Invalid(format!("namespaces/user: {e}")))?;
        pool.check_accounts(&text, path, kind)?;
    }
    Ok(Some(pool))
}
