//! Runs fuzz bodies over their seeds: `fuzz/seeds/<target>/*` and, for the
//! file parsers, the test suite's fixtures (the same list `scripts/fuzz.sh`
//! copies into the corpus). Used by the seed tests of both packages.

use std::path::{Path, PathBuf};

/// A target's body.
pub type Body = fn(&[u8]);

/// Fixture directories (from the repository root) that seed a target.
pub fn fixtures(target: &str) -> &'static [&'static str] {
    match target {
        "acl_json" => &["tests/fixtures/authz", "acls"],
        "credentials_file" => &["tests/fixtures/credentials"],
        _ => &[],
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Runs each target over its inputs; `repo` is the repository root or a
/// package directory in it. Fails naming the target and the input.
pub fn run_all(repo: &str, targets: &[(&str, Body)]) {
    let mut root = Path::new(repo).to_path_buf();
    while !root.join("fuzz/seeds").is_dir() {
        assert!(root.pop(), "no fuzz/seeds above {repo}");
    }
    for (target, body) in targets {
        let mut inputs = files(&root.join("fuzz/seeds").join(target));
        assert!(!inputs.is_empty(), "target {target} has no seeds");
        for dir in fixtures(target) {
            inputs.extend(files(&root.join(dir)));
        }
        for input in inputs {
            let data = std::fs::read(&input).expect("seed readable");
            let outcome = std::panic::catch_unwind(|| body(&data));
            assert!(
                outcome.is_ok(),
                "target {target} failed on {}",
                input.display()
            );
        }
    }
}
