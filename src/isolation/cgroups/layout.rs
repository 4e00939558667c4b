//! Where a container's cgroup lives, and back: Mesos' nesting layout
//! `<cgroups_root>/<root>/mesos/<child>/mesos/<grandchild>`.
//!
//! The `mesos` separator keeps a container's own control files apart from
//! its children's directories, and lets recovery tell container directories
//! from anything else a human or another tool created under the root.

use std::path::{Component, Path, PathBuf};

use super::error::{CgroupError, Result};
use super::fsops;
use crate::container_id;
use crate::proto::mesos::ContainerId;

/// The directory between a container's cgroup and its children's
/// (Mesos' `CGROUP_SEPARATOR`).
pub const SEPARATOR: &str = "mesos";

/// The cgroup v2 child that holds a container's processes: v2 forbids
/// processes in a cgroup whose controllers are enabled for children.
pub const LEAF: &str = "leaf";

/// Checks that `cgroups_root` is a relative path of plain components, so it
/// can never point outside the mount root.
pub(crate) fn validate_cgroups_root(cgroups_root: &Path) -> Result<()> {
    let plain = !cgroups_root.as_os_str().is_empty()
        && cgroups_root
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(())
    } else {
        Err(CgroupError::Invalid(format!(
            "cgroups_root '{}' must be a relative path without '.' or '..'",
            cgroups_root.display()
        )))
    }
}

/// The container's cgroup path relative to the hierarchy's mount point:
/// `<cgroups_root>/<root>/mesos/<child>...`. Validates the ID first, so a
/// hostile ID can never form a path outside `cgroups_root`.
pub fn container_path(cgroups_root: &Path, id: &ContainerId) -> Result<PathBuf> {
    container_id::validate(id)?;
    let mut path = cgroups_root.to_path_buf();
    for (i, value) in container_id::chain(id).into_iter().enumerate() {
        if i > 0 {
            path.push(SEPARATOR);
        }
        path.push(value);
    }
    Ok(path)
}

/// The paths of `id` and each of its ancestors, root first.
pub(crate) fn ancestor_paths(cgroups_root: &Path, id: &ContainerId) -> Result<Vec<PathBuf>> {
    container_id::validate(id)?;
    let mut out = Vec::new();
    let mut path = cgroups_root.to_path_buf();
    for (i, value) in container_id::chain(id).into_iter().enumerate() {
        if i > 0 {
            path.push(SEPARATOR);
        }
        path.push(value);
        out.push(path.clone());
    }
    Ok(out)
}

/// Parses a path relative to `cgroups_root` back into a ContainerID:
/// alternating `<id>/mesos/<id>`; a trailing `mesos` is ignored; anything
/// else (including a v2 `leaf`) is not a container and gives `None`.
pub fn parse_relative(relative: &Path) -> Option<ContainerId> {
    let mut id: Option<ContainerId> = None;
    let mut expect_separator = false;
    for component in relative.components() {
        let Component::Normal(name) = component else {
            return None;
        };
        let name = name.to_str()?;
        if expect_separator {
            if name != SEPARATOR {
                return None;
            }
        } else {
            let next = ContainerId {
                value: name.to_owned(),
                parent: id.map(Box::new),
            };
            container_id::validate(&next).ok()?;
            id = Some(next);
        }
        expect_separator = !expect_separator;
    }
    id
}

/// Every container cgroup under `base` (= `<mount>/<cgroups_root>`), parents
/// before their children. Directories that do not fit the layout are
/// skipped (and so is everything below them).
pub(crate) fn scan(base: &Path) -> Result<Vec<ContainerId>> {
    let mut out = Vec::new();
    scan_level(base, None, &mut out)?;
    Ok(out)
}

fn scan_level(dir: &Path, parent: Option<&ContainerId>, out: &mut Vec<ContainerId>) -> Result<()> {
    for child in fsops::subdirs(dir)? {
        let Some(name) = child.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let id = ContainerId {
            value: name.to_owned(),
            parent: parent.map(|p| Box::new(p.clone())),
        };
        if container_id::validate(&id).is_err() {
            tracing::debug!(path = %child.display(), "ignoring a cgroup that is not a container");
            continue;
        }
        out.push(id.clone());
        scan_level(&child.join(SEPARATOR), Some(&id), out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_id::{parse_dotted, to_dotted};

    #[test]
    fn nested_ids_alternate_with_the_separator() {
        let id = parse_dotted("exec.task.debug").unwrap();
        assert_eq!(
            container_path(Path::new("nestguard"), &id).unwrap(),
            PathBuf::from("nestguard/exec/mesos/task/mesos/debug")
        );
        let ancestors = ancestor_paths(Path::new("ng"), &id).unwrap();
        assert_eq!(
            ancestors,
            vec![
                PathBuf::from("ng/exec"),
                PathBuf::from("ng/exec/mesos/task"),
                PathBuf::from("ng/exec/mesos/task/mesos/debug"),
            ]
        );
    }

    #[test]
    fn parsing_inverts_the_layout_and_ignores_strangers() {
        let parsed = parse_relative(Path::new("exec/mesos/task/mesos/debug")).unwrap();
        assert_eq!(to_dotted(&parsed), "exec.task.debug");
        let trailing = parse_relative(Path::new("exec/mesos")).unwrap();
        assert_eq!(to_dotted(&trailing), "exec");
        assert!(parse_relative(Path::new("exec/leaf")).is_none());
        assert!(parse_relative(Path::new("exec/other/task")).is_none());
        assert!(parse_relative(Path::new("")).is_none());
        assert!(parse_relative(Path::new("bad.name")).is_none());
    }

    #[test]
    fn a_hostile_id_never_forms_a_path() {
        let id = ContainerId {
            value: "..".to_owned(),
            parent: None,
        };
        assert!(container_path(Path::new("nestguard"), &id).is_err());
        for bad in ["", "/abs", "a/../b", "./a"] {
            assert!(validate_cgroups_root(Path::new(bad)).is_err(), "{bad}");
        }
        validate_cgroups_root(Path::new("nestguard/test")).unwrap();
    }

    #[test]
    fn scan_finds_containers_parents_first() {
        let dir = tempfile::tempdir().unwrap();
        for p in [
            "a/mesos/b/mesos/c",
            "a/leaf",
            "a/junk/x",
            "d",
            "bad.name/mesos/e",
        ] {
            std::fs::create_dir_all(dir.path().join(p)).unwrap();
        }
        let found: Vec<String> = scan(dir.path()).unwrap().iter().map(to_dotted).collect();
        assert_eq!(found, vec!["a", "a.b", "a.b.c", "d"]);
        assert!(scan(&dir.path().join("missing")).unwrap().is_empty());
    }
}
