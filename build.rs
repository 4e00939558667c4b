//! Generates the Mesos wire types from `proto/` with prost.
//!
//! protoc comes from the `protoc-bin-vendored` crate, so a fresh machine needs
//! no system protoc. Every file is compiled as checked in: `mesos/v1/*.proto`
//! carry v1's own names (`AgentID`, `agent_id`, `REASON_AGENT_*`), which the
//! unversioned package does not have.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY-free: build scripts are single threaded; prost reads PROTOC.
    unsafe { std::env::set_var("PROTOC", protoc) };

    let out = PathBuf::from(std::env::var("OUT_DIR")?);

    let protos = [
        "proto/mesos/mesos.proto",
        "proto/mesos/quota/quota.proto",
        "proto/mesos/authorizer/acls.proto",
        "proto/mesos/authorizer/authorizer.proto",
        "proto/mesos/seccomp/seccomp.proto",
        "proto/mesos/slave/containerizer.proto",
        "proto/mesos/authentication/authentication.proto",
        "proto/mesos/module/module.proto",
        "proto/mesos/v1/mesos.proto",
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
        .compile_protos_with_config(config, &protos, &["proto"])?;
    Ok(())
}
