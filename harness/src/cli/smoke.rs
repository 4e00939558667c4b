//! `nestguard smoke`: load libnestguard.so and exercise its C ABI.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use prost::Message;

use super::agent::bindings::{
    NESTGUARD_RESULT_INVALID_CONTAINER_ID, NESTGUARD_RESULT_OK, NESTGUARD_RESULT_PANIC,
};
use super::library::{NestguardLibrary, default_path};
use crate::cli::out::outln;
use nestguard::proto::mesos::ContainerId;

/// Loads the library, round-trips a nested ContainerID through it, shows a
/// validation error and a caught panic.
pub fn run(library: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = match library {
        Some(p) => p,
        None => default_path()?,
    };
    let lib = NestguardLibrary::load(&path)?;
    let v = lib.abi_version();
    outln!(
        "loaded {} (C ABI {}.{}.{})",
        lib.path().display(),
        v >> 16,
        (v >> 8) & 0xff,
        v & 0xff
    );

    let text = "executor.task.sidecar";
    let bytes = match lib.container_id_parse(text)? {
        Ok(bytes) => bytes,
        Err(rc) => bail!(
            "nestguard_container_id_parse({text}) failed ({rc}): {}",
            lib.last_error()
        ),
    };
    let id = ContainerId::decode(bytes.as_slice()).context("decoding the returned ContainerID")?;
    outln!(
        "parsed  {text:?} -> ContainerID {{ value: {:?}, parent: {:?} }} ({} bytes)",
        id.value,
        id.parent.as_ref().map(|p| p.value.as_str()),
        bytes.len()
    );

    let rendered = match lib.container_id_render(&bytes)? {
        Ok(rendered) => rendered,
        Err(rc) => bail!(
            "nestguard_container_id_render failed ({rc}): {}",
            lib.last_error()
        ),
    };
    outln!("render  -> {rendered:?}");
    if rendered != text {
        bail!("round trip changed the id: {rendered:?}");
    }

    let bad = ContainerId {
        value: "a b".into(),
        parent: None,
    }
    .encode_to_vec();
    let rc = lib
        .container_id_render(&bad)?
        .err()
        .unwrap_or(NESTGUARD_RESULT_OK);
    outln!("invalid -> result {rc}: {}", lib.last_error());
    if rc != NESTGUARD_RESULT_INVALID_CONTAINER_ID {
        bail!("an invalid ContainerID was not rejected");
    }

    let rc = lib.abi_selftest_panic()?;
    outln!("panic   -> result {rc}: {}", lib.last_error());
    if rc != NESTGUARD_RESULT_PANIC {
        bail!("the panic boundary did not report a panic");
    }
    outln!("smoke run passed");
    Ok(ExitCode::SUCCESS)
}
