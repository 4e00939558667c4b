//! The `--modules` manifest (Mesos' `Modules` message in JSON): which
//! libraries to load and which modules to create with which parameters.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use nestguard::proto::mesos::{Modules, Parameter};

/// One module to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSpec {
    /// The module (and symbol) name, e.g. `io_nestguard_Authorizer`.
    pub name: String,
    /// Its parameters, in manifest order.
    pub parameters: Vec<Parameter>,
    /// The library it lives in.
    pub library: PathBuf,
}

/// Reads `--modules`: inline JSON, `file:///path`, or a path.
pub fn read(value: &str) -> anyhow::Result<Vec<ModuleSpec>> {
    use nestguard::input::{DEFAULT_MAX_FILE_SIZE, FlagValue};
    let flag = FlagValue::parse(value);
    let origin = flag.origin("--modules");
    // Only a regular file, bounded: a FIFO or /dev/zero must not hang the agent.
    let text = flag
        .content(DEFAULT_MAX_FILE_SIZE)
        .with_context(|| format!("reading the modules manifest {origin}"))?;
    let modules: Modules = nestguard::json::from_json(&text)
        .with_context(|| format!("parsing the modules manifest {origin}"))?;
    let mut specs = Vec::new();
    for (i, library) in modules.libraries.iter().enumerate() {
        // Mesos: `file` wins over `name`; a name maps to lib<name>.so.
        let path = match (&library.file, &library.name) {
            (Some(file), _) => PathBuf::from(file),
            (None, Some(name)) => PathBuf::from(format!("lib{name}.so")),
            (None, None) => bail!("{origin}: libraries[{i}]: Library name or path not provided"),
        };
        for module in &library.modules {
            let Some(name) = module.name.clone().filter(|n| !n.is_empty()) else {
                bail!("{origin}: libraries[{i}]: a module has no name");
            };
            specs.push(ModuleSpec {
                name,
                parameters: module.parameters.clone(),
                library: path.clone(),
            });
        }
    }
    Ok(specs)
}

/// Resolves a library path as the dynamic loader would, except that a bare
/// file name is looked for next to `fallback_dir` first (where cargo puts
/// libnestguard.so), then left to the loader's search path.
pub fn resolve(library: &Path, fallback_dir: Option<&Path>) -> PathBuf {
    if library.components().count() > 1 {
        return library.to_path_buf();
    }
    if let Some(dir) = fallback_dir {
        for candidate in [dir.join(library), dir.join("deps").join(library)] {
            if candidate.exists() {
                return candidate;
            }
        }
    }
    library.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_manifest() {
        let specs = read(
            r#"{"libraries":[{"name":"nestguard","modules":[{"name":"io_nestguard_Authorizer",
               "parameters":[{"key":"acls","value":"{}"},{"key":"strict","value":"true"}]}]}]}"#,
        )
        .unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].library, PathBuf::from("libnestguard.so"));
        assert_eq!(specs[0].parameters[1].key, "strict");
        let e = read(r#"{"libraries":[{"modules":[]}]}"#).unwrap_err();
        assert!(
            e.to_string().contains("Library name or path not provided"),
            "{e}"
        );
    }
}
