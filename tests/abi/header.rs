//! The committed C header must equal a fresh cbindgen generation, and its
//! version macros must equal the library's ABI version.
//!
//! Regenerate after changing `src/abi/`: `NESTGUARD_BLESS=1 cargo test --test header`.

use std::path::Path;

fn generate() -> String {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(Path::new(crate_dir).join("cbindgen.toml"))
        .expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("header is UTF-8")
}

#[test]
fn committed_header_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/nestguard.h");
    let fresh = generate();
    if std::env::var_os("NESTGUARD_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/nestguard.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let first_diff = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(fresh.lines().count()));
        panic!(
            "include/nestguard.h is stale (first difference at line {}).\n\
             Regenerate it with: NESTGUARD_BLESS=1 cargo test --test header",
            first_diff + 1
        );
    }
}

#[test]
fn header_version_macros_match_the_library() {
    let header = generate();
    let value = |name: &str| -> u32 {
        let prefix = format!("#define {name} ");
        let line = header
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{name} missing"));
        line[prefix.len()..]
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} is not a number"))
    };
    use nestguard::abi::version::*;
    assert_eq!(value("NESTGUARD_ABI_VERSION_MAJOR"), ABI_VERSION_MAJOR);
    assert_eq!(value("NESTGUARD_ABI_VERSION_MINOR"), ABI_VERSION_MINOR);
    assert_eq!(value("NESTGUARD_ABI_VERSION_PATCH"), ABI_VERSION_PATCH);
}

#[test]
fn header_declares_only_nestguard_names() {
    let header = generate();
    for line in header.lines() {
        let name = if let Some(rest) = line.strip_prefix("typedef struct ") {
            rest.split_whitespace().next().filter(|n| *n != "{")
        } else if let Some(rest) = line.strip_prefix("enum ") {
            rest.split_whitespace().next()
        } else if line.starts_with("} ") && line.ends_with(';') {
            Some(line.trim_start_matches("} ").trim_end_matches(';'))
        } else {
            None
        };
        if let Some(name) = name {
            assert!(
                name.starts_with("nestguard_"),
                "the header leaks a non-nestguard type: {line}"
            );
        }
    }
}
