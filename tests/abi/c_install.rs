//! The library installed as a C library (docs/install.md): `cargo cinstall`
//! into a staging directory, then what a C project sees there: the versioned
//! SONAME `libnestguard.so.0` and its links, `nestguard.pc` found by
//! pkg-config, and `ffi/c/abi_test.c` compiled with pkg-config's flags
//! against the installed header, linked to the installed library by its
//! SONAME and run.
//!
//! Needs cargo-c (`cargo install cargo-c --locked`) and pkg-config, so it is
//! ignored by default and run by hand (`cargo test --test abi c_install --
//! --ignored`), as the real-Mesos script is: building cargo-c takes longer
//! than the rest of CI on a 2-core machine, and no registry CI reaches ships
//! a cargo-c that reads this workspace's manifests.
//! It builds in a target directory of its own (cargo-c builds with an
//! explicit `--target`, so nothing of the ordinary build is reused anyway).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({:?}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have_cargo_c() -> bool {
    Command::new("cargo")
        .args(["cinstall", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
#[ignore = "needs cargo-c: cargo test --test abi c_install -- --ignored"]
fn cinstall_gives_a_versioned_library_a_pkg_config_file_and_the_header() {
    assert!(
        have_cargo_c(),
        "cargo-c is not installed (cargo install cargo-c --locked)"
    );
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let stage = tempfile::Builder::new()
        .prefix("nestguard-cinstall-")
        .tempdir_in(tmp)
        .expect("staging dir");
    let destdir = stage.path();
    run(Command::new("cargo")
        .current_dir(manifest_dir())
        .args([
            "cinstall",
            "-p",
            "nestguard",
            "--profile",
            "dev",
            "--library-type",
            "cdylib",
            "--prefix",
            "/usr",
            "--libdir",
            "/usr/lib",
        ])
        .arg("--destdir")
        .arg(destdir)
        .arg("--target-dir")
        .arg(tmp.join("cinstall-target")));

    let lib = destdir.join("usr/lib");
    let header = destdir.join("usr/include/nestguard.h");
    assert_eq!(
        std::fs::read(&header).expect("installed header"),
        std::fs::read(manifest_dir().join("include/nestguard.h")).unwrap(),
        "the installed header is include/nestguard.h"
    );
    for link in ["libnestguard.so", "libnestguard.so.0"] {
        let target: PathBuf = std::fs::read_link(lib.join(link))
            .unwrap_or_else(|e| panic!("{link} is a symbolic link: {e}"));
        assert!(
            target.to_string_lossy().starts_with("libnestguard.so."),
            "{link} -> {}",
            target.display()
        );
    }
    let dynamic = text(&run(Command::new("readelf")
        .arg("-d")
        .arg(lib.join("libnestguard.so"))));
    assert!(
        dynamic.contains("Library soname: [libnestguard.so.0]"),
        "{dynamic}"
    );

    // pkg-config as a C project uses it, pointed at the staging tree.
    let pkg_config = |what: &str| {
        text(&run(Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
            .env("PKG_CONFIG_SYSROOT_DIR", destdir)
            .args([what, "nestguard"])))
    };
    let cflags = pkg_config("--cflags");
    let libs = pkg_config("--libs");
    assert!(
        libs.split_whitespace().any(|f| f == "-lnestguard"),
        "{libs}"
    );
    let version = pkg_config("--modversion");
    assert_eq!(version.trim(), env!("CARGO_PKG_VERSION"));

    let exe = destdir.join("abi_test");
    run(Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .args(cflags.split_whitespace())
        .arg(manifest_dir().join("ffi/c/abi_test.c"))
        .args(libs.split_whitespace())
        .arg("-o")
        .arg(&exe));
    let needed = text(&run(Command::new("readelf").arg("-d").arg(&exe)));
    assert!(
        needed.contains("Shared library: [libnestguard.so.0]"),
        "the program needs the SONAME: {needed}"
    );
    let out = run(Command::new(&exe).env("LD_LIBRARY_PATH", &lib));
    let stdout = text(&out);
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
