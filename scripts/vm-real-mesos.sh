#!/usr/bin/env bash
# The real Mesos 1.11 checks (ffi/mesos/real-mesos/run.sh) on a cgroup
# v2-only host: builds on this machine (build.sh, into $CACHE), then runs
# run.sh inside scripts/vm.sh's guest, where it takes the agent's posix
# launcher and checks-v2.sh's checks. Same environment as run.sh
# (MESOS_GIT, PROTOBUF_GIT, CACHE) and as vm.sh (VM_*).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
export CACHE="${CACHE:-$HOME/.cache/nestguard-real-mesos}"
"$repo/ffi/mesos/real-mesos/build.sh"
cd "$repo"
exec "$here/vm.sh" env SKIP_BUILD=1 CACHE="$CACHE" ffi/mesos/real-mesos/run.sh
