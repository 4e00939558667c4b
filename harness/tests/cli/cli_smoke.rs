//! The CLI's smoke run: the `nestguard` binary loads libnestguard.so with
//! libloading and exercises the C ABI, as the simulated agent will.

use std::process::Command;

#[test]
fn smoke_run_passes() {
    let out = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .arg("smoke")
        .output()
        .expect("run nestguard smoke");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "smoke failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("render  -> \"executor.task.sidecar\""),
        "{stdout}"
    );
    assert!(stdout.contains("contains invalid characters"), "{stdout}");
    assert!(stdout.ends_with("smoke run passed\n"), "{stdout}");
}

#[test]
fn version_names_the_abi() {
    let out = Command::new(env!("CARGO_BIN_EXE_nestguard"))
        .arg("version")
        .output()
        .expect("run nestguard version");
    assert!(out.status.success());
    // The header's version, which the host was built against.
    let v = nestguard::abi::version::ABI_VERSION;
    let expected = format!("C ABI {}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&expected), "{stdout}");
}
