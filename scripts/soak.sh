#!/usr/bin/env bash
# The soak and crash campaign and the memory figures of issue 17
# (docs/reliability.md, "Soak and memory"). Root only (cgroups, namespaces);
# loopback only; bounded in rounds, launches and time; everything in its own
# work directory, cgroup root and port, removed at the end whatever happens.
#
#   scripts/soak.sh crash [ROUNDS [SEED [UNITS]]]   launch bursts, SIGKILL, restart, check
#   scripts/soak.sh sequential [COUNT]              launch → wait → remove, RSS and fds
#   scripts/soak.sh memory [CONTAINERS]             agent RSS per 1,000 containers, one
#                                                   container's helpers, authorizer per ACL entry
#
# SOAK_MINUTES (default 9) bounds a run: no round or launch starts after it.
# SOAK_PROFILE=release builds optimized binaries (default: debug, as the tests).
# The driver is harness/examples/soak/ (main.rs); its exit status is 0 only when
# nothing was lost, inexact, orphaned or leaked.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

if [ "$(id -u)" -ne 0 ]; then
  echo "soak.sh: needs root (cgroups and namespaces of the Linux launcher)" >&2
  exit 2
fi
mode=${1:-crash}
shift || true
profile=${SOAK_PROFILE:-debug}
minutes=${SOAK_MINUTES:-9}
flag=()
[ "$profile" = release ] && flag=(--release)
target=${CARGO_TARGET_DIR:-target}
bin="$target/$profile"

echo "== building ($profile)"
cargo build --quiet "${flag[@]}" --workspace --bins --lib
cargo build --quiet "${flag[@]}" -p nestguard-harness --example soak

work=$(mktemp -d "${TMPDIR:-/tmp}/nestguard-soak.XXXXXX")
root="nestguard-soak-$$-$RANDOM"
driver=""

cleanup() {
  status=$?
  set +e
  [ -n "$driver" ] && kill -TERM "$driver" 2>/dev/null && wait "$driver" 2>/dev/null
  # The driver's agent, if the driver could not stop it: the pid it wrote,
  # only if that process is still our agent (a pid can be reused).
  if [ -f "$work/agent.pid" ]; then
    p=$(cat "$work/agent.pid")
    if tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" | grep -qF -- "--work_dir=$work/agent "; then
      kill -KILL "$p"
    fi
  fi
  # Whatever still runs in the campaign's cgroups, then the cgroups
  # themselves, deepest first, and the root's lock file. cgroup v2: the
  # root is right under the mount; v1: under each controller's.
  for top in /sys/fs/cgroup/"$root" /sys/fs/cgroup/*/"$root"; do
    [ -d "$top" ] || continue
    for _ in 1 2 3 4 5; do
      pids=$(find "$top" -name cgroup.procs -exec cat {} + 2>/dev/null)
      [ -z "$pids" ] && break
      kill -KILL $pids 2>/dev/null
      sleep 0.2
    done
    find "$top" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  rm -f /run/nestguard/cgroups-roots/*"%2F$root.lock"
  # Mounts below the work directory (none expected: counted as leaks).
  if [ "${status:-0}" -ne 0 ] && [ -f "$work/agent.log" ]; then
    kept="${TMPDIR:-/tmp}/nestguard-soak-agent-$(date +%s).log"
    cp "$work/agent.log" "$kept" && echo "soak.sh: the agent's log is kept in $kept" >&2
  fi
  grep -F " $work/" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run_driver() {
  "$target/$profile/examples/soak" --work "$work" --bin "$bin" --cgroups-root "$root" \
    --deadline-secs "$((minutes * 60))" "$@" &
  driver=$!
  local rc=0
  wait "$driver" || rc=$?
  driver=""
  return "$rc"
}

case "$mode" in
  crash)
    run_driver crash --rounds "${1:-10}" --seed "${2:-17}" --units "${3:-6}"
    ;;
  sequential)
    run_driver sequential --count "${1:-10000}"
    ;;
  memory)
    rc=0
    run_driver memory --containers "${1:-1000}" || rc=$?
    echo "== authorizer memory per ACL entry"
    cargo run --quiet "${flag[@]}" --example authz_memory || rc=$?
    exit "$rc"
    ;;
  *)
    echo "usage: scripts/soak.sh crash [ROUNDS [SEED [UNITS]]] | sequential [COUNT] | memory [CONTAINERS]" >&2
    exit 2
    ;;
esac
