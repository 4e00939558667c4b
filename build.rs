//! Generates the Mesos wire types from `proto/` with prost.
//!
//! protoc comes from the `protoc-bin-vendored` crate, so a fresh machine needs
//! no system protoc. `mesos/v1/mesos.proto` is derived from `mesos/mesos.proto`
//! by renaming the package: Mesos keeps the two field-for-field identical, and
//! deriving one from the other keeps ours identical too.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY-free: build scripts are single threaded; prost reads PROTOC.
    unsafe { std::env::set_var("PROTOC", protoc) };

    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let generated = out.join("proto");
    let v1_dir = generated.join("mesos/v1");
    std::fs::create_dir_all(&v1_dir)?;
    let unversioned = std::fs::read_to_string("proto/mesos/mesos.proto")?;
    if !unversioned.contains("\npackage mesos;\n") {
        return Err("proto/mesos/mesos.proto must declare `package mesos;`".into());
    }
    let v1 = unversioned.replace("\npackage mesos;\n", "\npackage mesos.v1;\n");
    std::fs::write(v1_dir.join("mesos.proto"), v1)?;

    let protos = [
        "proto/mesos/mesos.proto",
        "proto/mesos/quota/quota.proto",
        "proto/mesos/authorizer/acls.proto",
        "proto/mesos/authorizer/authorizer.proto",
        "proto/mesos/seccomp/seccomp.proto",
        "proto/mesos/slave/containerizer.proto",
        "proto/mesos/authentication/authentication.proto",
        "proto/mesos/module/module.proto",
        "proto/mesos/v1/agent/agent.proto",
        "proto/mesos/v1/executor/executor.proto",
        "proto/nestguard/pod.proto",
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-changed=build.rs");

    let mut config = prost_build::Config::new();
    config.btree_map(["."]);
    config.include_file("_includes.rs");
    prost_reflect_build::Builder::new()
        .descriptor_pool("crate::proto::DESCRIPTOR_POOL")
        .file_descriptor_set_path(out.join("file_descriptor_set.bin"))
        .compile_protos_with_config(
            config,
            &protos,
            &["proto", generated.to_str().ok_or("OUT_DIR is not UTF-8")?],
        )?;
    Ok(())
}
