//! The library's fuzz targets (`fuzz/src/library.rs`, compiled here by
//! path) run over their seeds (`fuzz/seeds/<target>/`) and the test
//! fixtures: the targets keep compiling without cargo-fuzz, their
//! invariants hold on known inputs, and each fault the fuzzer found stays
//! fixed (its input is kept as a seed). A few seconds: no fuzzing here.

#[path = "../fuzz/src/library.rs"]
#[allow(unsafe_code, dead_code)]
mod library;

#[path = "../fuzz/src/seeds.rs"]
mod seeds;

#[test]
fn every_library_target_passes_its_seeds() {
    seeds::run_all(env!("CARGO_MANIFEST_DIR"), library::TARGETS);
}
