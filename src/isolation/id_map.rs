//! User namespaces of pods: the pool of host id ranges the operator gives
//! (`user_namespace_range=<start>-<end>/<size>`), the range each pod gets,
//! the maps written for it, and its checkpoint.
//!
//! A pod (a top-level container and every container nested in it) maps
//! container ids `0..size` to host ids `base..base + size`, one range per
//! pod, so container root is a host uid no other pod and no host account
//! uses. Plain data shared by the launcher (which allocates, checkpoints and
//! recovers ranges) and the helper (which writes the maps).
//!
//! Files: a container's sandbox and host-path binds are mounted into it
//! through idmapped mounts whose maps are [`IdRange::idmap`]: exactly two
//! ids pass, the container's user ([`BindOwner`]: a host account's uid and
//! primary gid read and write the same ids on disk, so a task running as
//! the framework's user writes files that user owns on the host; a user
//! only an image knows gets `base + id`) and root (reading and writing the
//! pod's mapped root `base` on disk). Every other id on disk is `nobody`
//! inside, and an id not mapped cannot write at all: root inside can take
//! no other host user's or group's identity through a bind (an identity
//! shift of all ids would let it make a setgid-`disk` file, say). Host
//! root's files are never mapped.

use std::fmt;
use std::path::{Path, PathBuf};

/// A pool, a range or a checkpoint that is not what it must be.
#[derive(Debug, thiserror::Error)]
pub enum IdMapError {
    /// `user_namespace_range` does not parse or is not usable.
    #[error("user_namespace_range '{value}': {expected}")]
    Pool {
        /// The parameter's value.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A host account has an id inside the pool: a pod's root could own
    /// its files.
    #[error(
        "user_namespace_range {pool}: {file} line {line}: {kind} '{name}' has id {id} inside \
         the pool (a pod's mapped ids would be that account's); choose a range no host \
         account uses"
    )]
    HostAccount {
        /// The pool.
        pool: RangePool,
        /// `/etc/passwd` or `/etc/group`.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// `user` or `group`.
        kind: &'static str,
        /// The account's name.
        name: String,
        /// Its id.
        id: u32,
    },
    /// Every range of the pool is taken.
    #[error(
        "user namespace pool {pool} is exhausted: all {slots} ranges of {size} ids are held by \
         running pods; destroy a pod or widen user_namespace_range"
    )]
    Exhausted {
        /// The pool.
        pool: RangePool,
        /// How many ranges it has.
        slots: u32,
        /// Ids per range.
        size: u32,
    },
    /// A checkpointed range does not parse.
    #[error("user namespace checkpoint {0} is malformed: expected '<base> <size>\\n'")]
    Checkpoint(PathBuf),
}

/// The host ids of one pod: container id `i` is host id `base + i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdRange {
    /// Host id of container root.
    pub base: u32,
    /// How many ids.
    pub size: u32,
}

impl IdRange {
    /// Whether the two ranges share an id.
    pub fn overlaps(&self, other: &IdRange) -> bool {
        let end = |r: &IdRange| u64::from(r.base) + u64::from(r.size);
        u64::from(self.base) < end(other) && u64::from(other.base) < end(self)
    }

    /// `uid_map` and `gid_map` of the pod's user namespace.
    pub fn namespace_map(&self) -> String {
        format!("0 {} {}\n", self.base, self.size)
    }

    /// The `uid_map` and `gid_map` of a container's idmapped binds (see
    /// the module documentation): on-disk `base` is container root and,
    /// for a container running as `owner`, its uid and primary gid are
    /// the owner's on-disk ids (0, root's group, and ids outside the range
    /// pass nothing more). Valid because a pool starts at or above `size`
    /// ([`RangePool::parse`]), so the lines never overlap.
    pub fn idmap(&self, owner: Option<BindOwner>) -> (String, String) {
        let root = format!("{} {} 1\n", self.base, self.base);
        let line = |id: u32, disk: u32| {
            if id != 0 && id < self.size {
                format!("{disk} {} 1\n", self.base + id)
            } else {
                String::new()
            }
        };
        let o = owner.unwrap_or_default();
        (
            format!("{root}{}", line(o.uid, o.disk_uid)),
            format!("{root}{}", line(o.gid, o.disk_gid)),
        )
    }

    /// The checkpoint's text.
    pub fn checkpoint_text(&self) -> String {
        format!("{} {}\n", self.base, self.size)
    }

    /// Reads [`IdRange::checkpoint_text`] back; `path` names the file in
    /// the error.
    pub fn parse_checkpoint(text: &str, path: &Path) -> Result<IdRange, IdMapError> {
        let bad = || IdMapError::Checkpoint(path.to_path_buf());
        let mut parts = text.strip_suffix('\n').ok_or_else(bad)?.split(' ');
        let base: u32 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let size: u32 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        if parts.next().is_some() || size == 0 || base < size || base.checked_add(size).is_none() {
            return Err(bad());
        }
        Ok(IdRange { base, size })
    }
}

/// The user a container runs as (not root) and the ids its files get on
/// disk through the idmapped binds: a host account the agent resolved (and
/// its ACLs authorized) keeps its own ids, as under Mesos; a user only an
/// image knows (its `/etc/passwd` is the pod's to write) gets the pod's
/// mapped ids `base + uid`, never a host account's or group's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BindOwner {
    /// The uid inside.
    pub uid: u32,
    /// The primary gid inside.
    pub gid: u32,
    /// The uid its files get on disk.
    pub disk_uid: u32,
    /// The gid its files get on disk.
    pub disk_gid: u32,
}

/// The operator's pool: ranges of `size` ids from `start` up to `end`
/// (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangePool {
    /// First host id of the pool.
    pub start: u32,
    /// One past its last host id.
    pub end: u32,
    /// Ids per pod.
    pub size: u32,
}

impl fmt::Display for RangePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}/{}", self.start, self.end, self.size)
    }
}

impl RangePool {
    /// Parses `<start>-<end>/<size>`: at least one range, `start ≥ size`
    /// (the idmap needs it, see [`IdRange::idmap`]) and `start ≥ 1`; `end`
    /// below 2³² − 1 (the kernel's invalid id).
    pub fn parse(value: &str) -> Result<RangePool, IdMapError> {
        let fail = |expected| IdMapError::Pool {
            value: value.to_owned(),
            expected,
        };
        let syntax = "expected <start>-<end>/<size> in decimal, e.g. 100000-6653600/65536";
        let (span, size) = value.split_once('/').ok_or_else(|| fail(syntax))?;
        let (start, end) = span.split_once('-').ok_or_else(|| fail(syntax))?;
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u32>().ok())
                .flatten()
                .ok_or_else(|| fail(syntax))
        };
        let (start, end, size) = (number(start)?, number(end)?, number(size)?);
        if size == 0 {
            return Err(fail("the size of a range must be at least 1"));
        }
        if start == 0 || start < size {
            return Err(fail(
                "the pool must start above 0 and at or above the size of a range (host root \
                 and the ids a container maps through its binds are never pod ids)",
            ));
        }
        if end == u32::MAX {
            return Err(fail("the pool must end below 4294967295 (the invalid id)"));
        }
        if end <= start || end - start < size {
            return Err(fail(
                "the pool must hold at least one range of the given size",
            ));
        }
        Ok(RangePool { start, end, size })
    }

    /// How many ranges the pool holds.
    pub fn slots(&self) -> u32 {
        (self.end - self.start) / self.size
    }

    /// Whether `id` lies in the pool.
    pub fn contains(&self, id: u32) -> bool {
        (self.start..self.end).contains(&id)
    }

    /// The lowest range of the pool that overlaps none of `taken` (the
    /// ranges held, whatever pool they came from: one recovered from
    /// before the operator changed the pool counts too).
    pub fn allocate(&self, taken: &[IdRange]) -> Result<IdRange, IdMapError> {
        (0..self.slots())
            .map(|i| IdRange {
                base: self.start + i * self.size,
                size: self.size,
            })
            .find(|range| !taken.iter().any(|t| t.overlaps(range)))
            .ok_or(IdMapError::Exhausted {
                pool: *self,
                slots: self.slots(),
                size: self.size,
            })
    }

    /// Refuses a pool that holds the id of an account in `passwd` or
    /// `group` text (`/etc/passwd`, `/etc/group` format; `file` names it).
    pub fn check_accounts(
        &self,
        text: &str,
        file: &Path,
        kind: &'static str,
    ) -> Result<(), IdMapError> {
        for (i, line) in text.lines().enumerate() {
            let mut fields = line.split(':');
            let (Some(name), Some(_), Some(id)) = (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if let Ok(id) = id.parse::<u32>()
                && self.contains(id)
            {
                return Err(IdMapError::HostAccount {
                    pool: *self,
                    file: file.to_path_buf(),
                    line: i + 1,
                    kind,
                    name: name.to_owned(),
                    id,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_pools() {
        let pool = RangePool::parse("100000-231072/65536").unwrap();
        assert_eq!(pool.slots(), 2);
        for bad in [
            "",
            "100000",
            "100000-200000",
            "1-2/0",
            "0-200000/65536",
            "1000-200000/65536",
            "100000-100001/65536",
            "200000-100000/65536",
            "100000-4294967295/65536",
            "+100000-200000/65536",
            "100000-200000/65536/1",
        ] {
            let err = RangePool::parse(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("'{bad}'")), "{err}");
        }
    }

    #[test]
    fn allocates_the_lowest_free_range_and_says_when_none_is_left() {
        let pool = RangePool::parse("100000-231072/65536").unwrap();
        let mut taken = Vec::new();
        let a = pool.allocate(&taken).unwrap();
        assert_eq!(a.base, 100000);
        taken.push(a);
        let b = pool.allocate(&taken).unwrap();
        assert_eq!(b.base, 165536);
        taken.push(b);
        let err = pool.allocate(&taken).unwrap_err().to_string();
        assert!(
            err.contains("exhausted") && err.contains("all 2 ranges"),
            "{err}"
        );
        taken.remove(0);
        assert_eq!(pool.allocate(&taken).unwrap().base, 100000);
        // A range held from an earlier pool (another size) blocks every
        // slot it overlaps.
        let small = RangePool::parse("100000-101000/100").unwrap();
        let old = [IdRange {
            base: 100050,
            size: 200,
        }];
        assert_eq!(small.allocate(&old).unwrap().base, 100300);
    }

    #[test]
    fn maps_and_checkpoints() {
        let r = IdRange {
            base: 100000,
            size: 65536,
        };
        assert_eq!(r.namespace_map(), "0 100000 65536\n");
        let host = BindOwner {
            uid: 1000,
            gid: 100,
            disk_uid: 1000,
            disk_gid: 100,
        };
        assert_eq!(
            r.idmap(Some(host)),
            (
                "100000 100000 1\n1000 101000 1\n".to_owned(),
                "100000 100000 1\n100 100100 1\n".to_owned()
            )
        );
        let image = BindOwner {
            uid: 1000,
            gid: 6,
            disk_uid: 101000,
            disk_gid: 100006,
        };
        assert_eq!(
            r.idmap(Some(image)),
            (
                "100000 100000 1\n101000 101000 1\n".to_owned(),
                "100000 100000 1\n100006 100006 1\n".to_owned()
            )
        );
        let root_only = (
            "100000 100000 1\n".to_owned(),
            "100000 100000 1\n".to_owned(),
        );
        assert_eq!(r.idmap(None), root_only);
        assert_eq!(r.idmap(Some(BindOwner::default())), root_only);
        let path = Path::new("user_namespace");
        assert_eq!(
            IdRange::parse_checkpoint(&r.checkpoint_text(), path).unwrap(),
            r
        );
        for torn in [
            "",
            "100000",
            "100000 65536",
            "100000 0\n",
            "10 65536\n",
            "a b\n",
        ] {
            assert!(IdRange::parse_checkpoint(torn, path).is_err(), "{torn:?}");
        }
    }

    #[test]
    fn refuses_a_pool_holding_a_host_account() {
        let pool = RangePool::parse("100000-231072/65536").unwrap();
        let passwd = "root:x:0:0::/root:/bin/sh\nsvc:x:150000:150000::/:/bin/false\n";
        let err = pool
            .check_accounts(passwd, Path::new("/etc/passwd"), "user")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("'svc'") && err.contains("150000"),
            "{err}"
        );
        assert!(
            pool.check_accounts("root:x:0:\n", Path::new("/etc/group"), "group")
                .is_ok()
        );
    }
}
