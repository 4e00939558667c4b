#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser (fuzz/, cargo-fuzz + libFuzzer).
#
#   scripts/fuzz.sh TARGET SECONDS   one target
#   scripts/fuzz.sh all SECONDS      every target, one after the other
#   scripts/fuzz.sh list             the targets
#
# Builds the targets (release, coverage instrumentation, no sanitizer: the
# stable toolchain has none), seeds each corpus fuzz/corpus/TARGET/ from the
# committed seeds (fuzz/seeds/TARGET/, read-only) and the test fixtures,
# runs the target for SECONDS and prints per target the execs, execs/s and
# findings (crash, timeout, out-of-memory or leak inputs, kept under
# fuzz/artifacts/TARGET/). Exits 1 if any target found anything. One
# fuzzer at a time: each uses one core.
#
# FUZZ_RUNS=N stops each target after N execs (SECONDS still bounds it):
# `FUZZ_RUNS=10000000 scripts/fuzz.sh all 3600` is the campaign of
# docs/reliability.md.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). The build dir is
# $NESTGUARD_FUZZ_TARGET_DIR (default fuzz/target). Reproduce a finding
# with: scripts/fuzz.sh repro TARGET FILE
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

usage() { echo "usage: $0 TARGET|all SECONDS | list | repro TARGET FILE" >&2; exit 2; }
[ $# -ge 1 ] || usage

target_dir=${NESTGUARD_FUZZ_TARGET_DIR:-$root/fuzz/target}
targets() { sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^nestguard-fuzz$'; }

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
  exit 2
fi

build() {
  # `--sanitizer none`: cargo-fuzz then passes only stable `-C` flags
  # (sancov passes, `--cfg fuzzing`), so the stable toolchain builds it.
  (cd fuzz && cargo fuzz build --sanitizer none --release --target-dir "$target_dir" "$@")
}
host=$(rustc -vV | sed -n 's/^host: //p')
binary() { echo "$target_dir/$host/release/$1"; }

# The fixture directories that seed a target (as fuzz/src/seeds.rs).
fixtures() {
  case $1 in
    acl_json) echo tests/fixtures/authz acls ;;
    credentials_file) echo tests/fixtures/credentials ;;
  esac
}

case $1 in
  list) targets; exit 0 ;;
  repro)
    [ $# -eq 3 ] || usage
    build "$2"
    exec "$(binary "$2")" "$3" ;;
esac
[ $# -eq 2 ] || usage
seconds=$2
if [ "$1" = all ]; then mapfile -t chosen < <(targets); else chosen=("$1"); fi
for t in "${chosen[@]}"; do
  targets | grep -qx "$t" || { echo "unknown target: $t (scripts/fuzz.sh list)" >&2; exit 2; }
done

if [ "$1" = all ]; then build; else build "$1"; fi

found=0
rows=()
for t in "${chosen[@]}"; do
  corpus=fuzz/corpus/$t
  artifacts=fuzz/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  for dir in $(fixtures "$t"); do
    cp -n "$dir"/* "$corpus"/ 2>/dev/null || true
  done
  before=$(find "$artifacts" -type f | wc -l)
  log=$(mktemp)
  echo "== $t: ${seconds}s"
  status=0
  # The first corpus dir receives new inputs; the seeds are only read.
  "$(binary "$t")" "$corpus" "fuzz/seeds/$t" \
    -max_total_time="$seconds" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  after=$(find "$artifacts" -type f | wc -l)
  findings=$((after - before))
  if [ "$status" -ne 0 ] && [ "$findings" -eq 0 ]; then
    findings=1 # the fuzzer failed without leaving an input: see its log
    tail -20 "$log"
  fi
  if [ "$findings" -ne 0 ]; then
    found=1
    grep -E "^(==[0-9]+==|thread '|SUMMARY|panicked)" "$log" | head -5 || true
    find "$artifacts" -type f -newer "$log" -printf '   %p\n'
  fi
  rows+=("$(printf '%-20s %12s %8s %8s' "$t" "${execs:-?}" "${rate:-?}" "$findings")")
  rm -f "$log"
done

printf '%-20s %12s %8s %8s\n' target execs execs/s findings
printf '%s\n' "${rows[@]}"
exit $found
