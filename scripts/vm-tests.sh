#!/usr/bin/env bash
# The root tests of cgroups, isolators, the launcher, the ABI and the agent
# end to end, run inside a cgroup v2-only guest (scripts/vm.sh) with
# CI=true, so none of them may skip. Builds the test binaries on the host
# first (the guest only runs them), then prints each binary's result.
#
#   scripts/vm-tests.sh [name[=filter,filter...]...]   (default: the set below)
#
# A name is a test binary; filters select its tests by name (as cargo
# test's). scripts/test.sh runs a smoke part of it in CI (see there).
# abi's check that the committed bindings are fresh is not run in the
# guest: it compares generated text, the same on any host (CI runs it).
#
# Environment: VM_* as scripts/vm.sh; VM_TEST_THREADS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

if [ "$#" -gt 0 ]; then wanted=("$@"); else
  wanted=(isolation launcher_host_kill launcher_scale abi agent cli)
fi

echo "== building the test binaries (host)"
# Each entry: "<name> <binary> <filters, comma-separated>".
mapfile -t bins < <(cargo test --workspace --all-features --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
wanted = dict((w.split("=", 1) + [""])[:2] for w in sys.argv[1:])
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    name = m.get("target", {}).get("name")
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["profile"]["test"] and name in wanted:
        print(name + " " + m["executable"] + " " + wanted[name])
' "${wanted[@]}")
[ "${#bins[@]}" = "${#wanted[@]}" ] || {
  echo "vm-tests.sh: found ${#bins[@]} of ${#wanted[@]} test binaries: ${bins[*]}" >&2; exit 2; }

# One guest for all binaries: a boot costs about 17 s under TCG.
script='failed=0
for entry in "$@"; do
  read -r name bin filters <<<"$entry"
  skip=()
  [ "$name" = abi ] && skip=(--skip header::committed_harness_bindings_are_current)
  echo "== $name ${filters:+($filters) }in the guest"
  ( cd "$(dirname "$bin")/../../.." &&
    CI=true "$bin" --test-threads="${VM_TEST_THREADS:-2}" "${skip[@]}" ${filters//,/ } ) ||
    failed=$((failed + 1))
done
echo "== guest: $failed test binaries failed"
[ "$failed" = 0 ]'
exec scripts/vm.sh bash -c "$script" vm-tests "${bins[@]}"
