//! Builds the C consumer in `ffi/c/` against `include/nestguard.h` with strict
//! warnings, links it to the built `libnestguard.so`, and runs it (under
//! valgrind when installed). Also checks that the library exports nothing but
//! `nestguard_` symbols.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>/deps/`, where `cargo test` builds libnestguard.so (it is
/// only copied up to `target/<profile>/` by `cargo build`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().expect("deps dir").to_path_buf()
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn compile(source: &str, output: &Path) {
    let lib_dir = library_dir();
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg(manifest_dir().join(source))
        .arg("-L")
        .arg(&lib_dir)
        .arg("-lnestguard")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(output)
        .status()
        .expect("run cc");
    assert!(
        status.success(),
        "compiling {source} against include/nestguard.h failed"
    );
}

#[test]
fn c_program_runs_clean() {
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi_test");
    compile("ffi/c/abi_test.c", &exe);
    let mut cmd = if have("valgrind") {
        let mut c = Command::new("valgrind");
        c.args([
            "-q",
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(&exe);
        c
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "valgrind is required in CI"
        );
        Command::new(&exe)
    };
    // cargo puts target/<profile>/ on LD_LIBRARY_PATH, which beats the
    // rpath; a stale `cargo build` copy there must not be the one tested.
    cmd.env("LD_LIBRARY_PATH", library_dir());
    let out = cmd.output().expect("run the C test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "C test failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(!stdout.contains("not ok"), "{stdout}");
    // The library never prints, not even for a caught panic.
    assert!(
        stderr.trim().is_empty(),
        "unexpected output on stderr:\n{stderr}"
    );
}

#[test]
fn only_nestguard_symbols_are_exported() {
    let lib = library_dir().join("libnestguard.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("run nm");
    assert!(out.status.success(), "nm failed on {}", lib.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert!(names.contains(&"nestguard_abi_version"), "{text}");
    // Mesos module symbols (io_nestguard_*) are allowed once the shim exists.
    let foreign: Vec<&&str> = names
        .iter()
        .filter(|n| !n.starts_with("nestguard_") && !n.starts_with("io_nestguard_"))
        .collect();
    assert!(foreign.is_empty(), "unexpected exports: {foreign:?}");
}

#[test]
fn every_header_function_is_exported() {
    let header =
        std::fs::read_to_string(manifest_dir().join("include/nestguard.h")).expect("read header");
    let lib = library_dir().join("libnestguard.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("run nm");
    let exported = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in header.lines() {
        let Some(paren) = line.find('(') else {
            continue;
        };
        let head = &line[..paren];
        if line.starts_with(' ')
            || line.starts_with('#')
            || line.starts_with('*')
            || line.starts_with('/')
        {
            continue;
        }
        if let Some(name) = head.split([' ', '*']).next_back()
            && name.starts_with("nestguard_")
        {
            assert!(
                exported.contains(&format!(" {name}\n")),
                "{name} is declared but not exported"
            );
        }
    }
}
