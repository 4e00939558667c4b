//! The agent's fuzz targets (`fuzz/src/agent.rs`, compiled here by path)
//! run over their seeds (`fuzz/seeds/<target>/`): the targets keep
//! compiling without cargo-fuzz, their invariants hold on known inputs, and
//! each fault the fuzzer found stays fixed. A few seconds: no fuzzing here.

#[path = "../../fuzz/src/agent.rs"]
mod agent;

#[path = "../../fuzz/src/seeds.rs"]
mod seeds;

#[test]
fn every_agent_target_passes_its_seeds() {
    seeds::run_all(env!("CARGO_MANIFEST_DIR"), agent::TARGETS);
}
