#!/usr/bin/env bash
# Runs nestguard's Mesos modules inside a real Mesos 1.11.0 master and agent
# (built by build.sh from the PyPI libmesos binary and Mesos' own headers)
# and checks them end to end. Prints "PASS <check>" / "FAIL <check>: why" per
# check and a final "N passed, N failed"; exits 1 if any check failed.
#
#   MESOS_GIT=<apache/mesos mirror> PROTOBUF_GIT=<protobuf mirror> \
#   CACHE=<cache dir> ffi/mesos/real-mesos/run.sh
#
# Environment: SKIP_BUILD=1 (use the cache as it is), KEEP_WORK=1 (keep the
# work dir; logs are copied to $CACHE/last-run on failure anyway),
# NUMBERS_N (launches per configuration for the numbers table, default 100,
# in NUMBERS_ROUNDS rounds, default 4, alternating the two Mesos agents),
# FRAMEWORK_USER (the framework's user, so its executors' and tasks',
# default nobody), WORK_BASE (where the work dir is made, default
# /var/lib/nestguard-real-mesos: below directories only root may write).
#
# Root only (cgroups, the linux launcher; on a cgroup v2-only host the
# posix one and checks-v2.sh). Everything it creates is named
# after this run (ports picked free, cgroup roots mesos-ngrm<pid> and
# nestguard-ngrm<pid>, a work dir under $TMPDIR) and removed at exit.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
CACHE="${CACHE:-$HOME/.cache/nestguard-real-mesos}"
BIN="$CACHE/bin"
NG="$CACHE/ng"
[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root" >&2; exit 2; }

t0=$(date +%s)
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  "$here/build.sh" || { echo "FAIL build: build.sh failed"; echo "0 passed, 1 failed"; exit 1; }
fi
echo "build: $(( $(date +%s) - t0 )) s" >&2

RID="ngrm$$"
# The work dir (the agent's --work_dir among others) lies below directories
# only root may write, as /var/lib/mesos does on an agent: the wrapper
# refuses to leave Mesos' helper a mount onto an image's rootfs below a
# directory others may write (/tmp), where a link could be swapped in.
WORK_BASE="${WORK_BASE:-/var/lib/nestguard-real-mesos}"
mkdir -p "$WORK_BASE" && chmod 755 "$WORK_BASE"
WORK="$(mktemp -d "$WORK_BASE/ngrm.XXXXXX")"
chmod 755 "$WORK"
MCG="mesos-$RID"        # Mesos' --cgroups_root
NCG="nestguard-$RID"    # the isolator's cgroups_root
CG=/sys/fs/cgroup
# A cgroup v2-only host (scripts/vm-real-mesos.sh runs this in such a VM):
# Mesos 1.11 starts there with its posix launcher only, and the checks are
# checks-v2.sh's.
V2=0
[ "$(stat -fc %T "$CG")" = cgroup2fs ] && V2=1
AGENT_LAUNCHER=linux
[ "$V2" = 1 ] && AGENT_LAUNCHER=posix
PASSED=0
FAILED=0
pass() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
check() { if [ "$2" = ok ]; then pass "$1"; else fail "$1" "$2"; fi; }
note() { echo "-- $*" >&2; }

# ---------------------------------------------------------------- cleanup
record_pid() { echo "$1" >>"$WORK/pids"; }
stop_pid() {
  local pid="$1" i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  for i in $(seq 20); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}
# Our cgroup directories in every v1 controller (v2: in the one
# hierarchy), deepest first.
our_cgroups() {
  local tops=("$CG"/*/"$MCG" "$CG"/*/"$NCG")
  [ "$V2" = 1 ] && tops=("$CG/$MCG" "$CG/$NCG")
  find "${tops[@]}" -mindepth 0 -type d 2>/dev/null | awk '{print length($0) " " $0}' |
    sort -rn | cut -d' ' -f2-
}
# Mounts at or under <dir>, deepest first (Mesos' filesystem/linux binds the
# agent's work dir onto itself and leaves it when the agent stops).
unmount_under() {  # unmount_under <dir>
  local m
  for m in $(awk -v w="$1" 'index($5, w) == 1 {print length($5) " " $5}' /proc/self/mountinfo |
             sort -rn | cut -d' ' -f2-); do
    umount -l "$m" 2>/dev/null
  done
}
cleanup() {
  local rc=$? pid d i
  trap - EXIT INT TERM
  [ -f "$WORK/framework.pid" ] && stop_pid "$(cat "$WORK/framework.pid")"
  if [ -f "$WORK/pids" ]; then
    for pid in $(tac "$WORK/pids"); do stop_pid "$pid"; done
  fi
  # Container processes left in this run's cgroups (by pid, never by name).
  for i in 1 2 3; do
    for d in $(our_cgroups); do
      for pid in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    done
    [ -f "$CG/freezer/$MCG/freezer.state" ] && find "$CG/freezer/$MCG" -name freezer.state \
      -exec sh -c 'echo THAWED > "$1"' _ {} \; 2>/dev/null
    sleep 0.3
  done
  unmount_under "$WORK"
  for d in $(our_cgroups); do rmdir "$d" 2>/dev/null; done
  if [ -n "$(our_cgroups)" ]; then
    echo "cleanup: cgroups left: $(our_cgroups | tr '\n' ' ')" >&2
  fi
  # The isolator's claim files (named after the escaped cgroup path).
  rm -f /run/nestguard/cgroups-roots/*"nestguard-$RID".lock /run/nestguard/cgroups-roots/*"nestguard-$RID-ng".lock 2>/dev/null
  # The isolator's sealing keys (named after its cgroups_root).
  rm -f /run/nestguard/exec-stage/"nestguard-$RID".key 2>/dev/null
  rm -rf /run/nestguard/exec-stage/"nestguard-$RID".pids 2>/dev/null
  # (Not in a guest of scripts/vm.sh, which sees the cache read-only.)
  if { [ "$FAILED" -gt 0 ] || [ "$rc" != 0 ]; } && [ -w "$CACHE" ] && touch "$CACHE/.w" 2>/dev/null; then
    rm -f "$CACHE/.w"
    rm -rf "$CACHE/last-run"; mkdir -p "$CACHE/last-run"
    cp "$WORK"/*.log "$WORK"/*.json "$CACHE/last-run/" 2>/dev/null
  fi
  # A v2-only host: Mesos' LinuxLauncher (checks-v2.sh starts it once)
  # mounts a v1 freezer hierarchy on a cgroup it makes; undo both.
  if [ -e "$WORK/freezer-ours" ]; then
    umount /sys/fs/cgroup/freezer 2>/dev/null; rmdir /sys/fs/cgroup/freezer 2>/dev/null
  fi
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $WORK" >&2; else rm -rf "$WORK"; rmdir "$WORK_BASE" 2>/dev/null; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- setup
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MP=$(free_port); AP=$(free_port)
while [ "$AP" = "$MP" ]; do AP=$(free_port); done
MASTER="127.0.0.1:$MP"
AGENT="127.0.0.1:$AP"

OPS_SECRET="ops-$RANDOM$RANDOM"; FW_SECRET="fw-$RANDOM$RANDOM"; BAD_SECRET="intruder-$RANDOM"
cat >"$WORK/creds.json" <<JSON
{"credentials": [
  {"principal": "ops", "secret": "$OPS_SECRET"},
  {"principal": "fw", "secret": "$FW_SECRET"},
  {"principal": "intruder", "secret": "$BAD_SECRET"}
]}
JSON
chmod 600 "$WORK/creds.json"
head -c 48 /dev/urandom | base64 | tr -d '\n' >"$WORK/jwt.key"; chmod 600 "$WORK/jwt.key"

# ops: standalone containers, and nested ones through manage_nested_containers;
# fw (the framework): nested containers under its executors through the
# specific lists; intruder: authenticated, allowed nothing.
write_acls() {  # $1: "fw-kill" to let fw kill nested containers, "no-fw-kill" not
  local fwkill='{"principals": {"values": ["fw"]}, "users": {"type": "ANY"}}'
  [ "$1" = no-fw-kill ] && fwkill='{"principals": {"values": ["fw"]}, "users": {"type": "NONE"}}'
  cat >"$WORK/acls.json.tmp" <<JSON
{
  "permissive": false,
  "run_tasks": [{"principals": {"values": ["fw"]}, "users": {"type": "ANY"}}],
  "launch_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "wait_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "kill_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "remove_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_standalone_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "view_containers": [{"principals": {"values": ["ops", "fw"]}, "users": {"type": "ANY"}}],
  "launch_nested_containers_under_parent_with_user": [{"principals": {"values": ["fw"]}, "users": {"type": "ANY"}}],
  "launch_nested_containers_as_user": [{"principals": {"values": ["fw", "ops"]}, "users": {"type": "ANY"}}],
  "wait_nested_containers": [{"principals": {"values": ["fw"]}, "users": {"type": "ANY"}}],
  "kill_nested_containers": [$fwkill],
  "remove_nested_containers": [{"principals": {"values": ["fw"]}, "users": {"type": "ANY"}}],
  "manage_nested_containers": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_container_sessions_under_parent_with_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "launch_nested_container_sessions_as_user": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}],
  "attach_containers_output": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]
}
JSON
  mv "$WORK/acls.json.tmp" "$WORK/acls.json"
}
write_acls fw-kill

# The agent's modules: ffi/mesos/modules.json with this run's paths and
# cgroup root. Deviation, said in ffi/mesos/README.md: the isolator runs in token mode
# (credentials_jwt_key = the agent's --jwt_secret_key) instead of secret mode,
# because secret mode refuses nested containers by design.
python3 - "$repo/ffi/mesos/modules.json" "$WORK/modules.json" "$NG/libnestguard_mesos.so" \
  "$WORK/acls.json" "$NCG" "$WORK/creds.json" "$WORK/jwt.key" <<'PY'
import json, sys
src, out, lib, acls, ncg, creds, jwt = sys.argv[1:]
m = json.load(open(src))
for l in m["libraries"]:
    l["file"] = lib
    for mod in l["modules"]:
        ps = []
        for p in mod.get("parameters", []):
            k = p["key"]
            if k == "acls": p["value"] = acls
            elif k == "cgroups_root": p["value"] = ncg
            elif k == "http_credentials": p["value"] = creds
            elif k == "credentials_http_credentials": p = {"key": "credentials_jwt_key", "value": jwt}
            ps.append(p)
        mod["parameters"] = ps
json.dump(m, open(out, "w"), indent=1)
PY

# The agent's --launcher_dir: Mesos' mesos-containerizer behind nestguard's
# wrapper, and in place of
# Mesos' default executor (not in the binary) a wrapper that runs
# `nestguard executor` (the agent runs the real path of
# <launcher_dir>/mesos-default-executor, so the wrapper is copied and finds
# `nestguard` next to it).
LAUNCHER="$WORK/launcher"
mkdir -p "$LAUNCHER"
# nestguard's mesos-containerizer wrapper (a copy of nestguard-exec: it
# finds Mesos' binary beside its own path, as mesos-containerizer.mesos)
# hands the user switch of every container to the exec stage.
cp "$NG/nestguard-exec" "$LAUNCHER/mesos-containerizer"
ln -s "$BIN/mesos-containerizer" "$LAUNCHER/mesos-containerizer.mesos"
# The agent's IOSwitchboard runs <launcher_dir>/mesos-io-switchboard (as the
# agent's user) for every container with a session or attach.
ln -s "$BIN/mesos-io-switchboard" "$LAUNCHER/mesos-io-switchboard"
cp "$here/mesos-default-executor" "$LAUNCHER/mesos-default-executor"
# And in place of Mesos' command executor (not in the binary either), one
# that runs `nestguard command-executor` (command tasks).
cp "$here/mesos-executor" "$LAUNCHER/mesos-executor"
# A copy, not a link: the executor runs as the framework's user, who may
# not traverse the cache's path (under a 0700 home, say).
cp "$NG/nestguard" "$LAUNCHER/nestguard"
chmod 755 "$LAUNCHER"

# The static probe and the docker image holding only it (checks-images.sh):
# an archive in $WORK/registry for Mesos' image tar puller.
IMAGE=ngprobe
IMAGE_ERR=""
if ! command -v cc >/dev/null; then IMAGE_ERR="no C compiler (cc)"
elif ! cc -static -O2 -o "$WORK/probe" "$here/probe.c" >"$WORK/probe-build.log" 2>&1; then
  IMAGE_ERR="cc -static probe.c failed (static libc, libc6-dev?): $(head -c 300 "$WORK/probe-build.log")"
elif ! python3 "$here/image.py" "$WORK/probe" "$WORK/registry" "$IMAGE" >"$WORK/image-build.log" 2>&1; then
  IMAGE_ERR="image.py failed: $(head -c 300 "$WORK/image-build.log")"
fi

CLIENT="$here/client.py"
call() {  # call <who> <json>: who = none | ops | fw | intruder | wrong | bearer:<token>
  local who="$1" body="$2"
  case "$who" in
    none) python3 "$CLIENT" call "$AGENT" "$body" ;;
    ops) python3 "$CLIENT" call "$AGENT" "$body" --basic "ops:$OPS_SECRET" ;;
    fw) python3 "$CLIENT" call "$AGENT" "$body" --basic "fw:$FW_SECRET" ;;
    intruder) python3 "$CLIENT" call "$AGENT" "$body" --basic "intruder:$BAD_SECRET" ;;
    wrong) python3 "$CLIENT" call "$AGENT" "$body" --basic "ops:not-the-secret" ;;
    bearer:*) python3 "$CLIENT" call "$AGENT" "$body" --bearer "${who#bearer:}" ;;
  esac 2>&1
}
status_of() { cut -d' ' -f1 <<<"$1"; }
json_get() {  # json_get <python expression over d> < response body
  python3 -c 'import json,sys
d=json.loads(sys.stdin.read() or "null")
try:
    v=eval(sys.argv[1])
except Exception:
    v=None
print("" if v is None else v)' "$@"
}
body_of() { cut -d' ' -f2- <<<"$1"; }
containers() { body_of "$(call ops "$CONTAINERS")"; }
has_container() { containers | grep -q "\"value\":\"$1\""; }
expect() {  # expect <check> <wanted status> <who> <json>
  local r; r="$(call "$3" "$4")"
  if [ "$(status_of "$r")" = "$2" ]; then echo ok; else echo "wanted $2, got ${r:0:300}"; fi
}
cid_json() {  # cid_json <id> [parent id]
  if [ -n "${2:-}" ]; then printf '{"value":"%s","parent":{"value":"%s"}}' "$1" "$2"
  else printf '{"value":"%s"}' "$1"; fi
}
launch_json() {  # launch_json <id> <parent or ""> <shell command> [mem MB]
  local res="" ci=""
  if [ -n "${4:-}" ]; then
    res=',"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":0.1}},{"name":"mem","type":"SCALAR","scalar":{"value":'"$4"'}}]'
    ci=',"container":{"type":"MESOS","linux_info":{"share_cgroups":false}}'
  fi
  printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":{"shell":true,"value":"%s"}%s%s}}' \
    "$(cid_json "$1" "$2")" "$3" "$res" "$ci"
}
kill_json() { printf '{"type":"KILL_CONTAINER","kill_container":{"container_id":%s,"signal":9}}' "$(cid_json "$1" "${2:-}")"; }
wait_json() { printf '{"type":"WAIT_CONTAINER","wait_container":{"container_id":%s}}' "$(cid_json "$1" "${2:-}")"; }
remove_json() { printf '{"type":"REMOVE_CONTAINER","remove_container":{"container_id":%s}}' "$(cid_json "$1" "${2:-}")"; }
CONTAINERS='{"type":"GET_CONTAINERS","get_containers":{"show_nested":true,"show_standalone":true}}'

wait_http() {  # wait_http <host:port> <seconds> [pid: give up when it exits]
  local i
  for i in $(seq $(( $2 * 5 ))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$1/health" 2>/dev/null)" = 200 ] && return 0
    [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && return 1
    sleep 0.2
  done
  return 1
}
agent_registered() {
  local i
  for i in $(seq 150); do
    curl -s "http://$MASTER/slaves" 2>/dev/null | grep -q "\"$AP\"\|:$AP" && return 0
    sleep 0.2
  done
  return 1
}

AGENT_PID=""
agent_flags() {  # common flags; $1 = with | without (the nestguard modules), $2 = --isolation (optional)
  local f=(--work_dir="$WORK/agent" --runtime_dir="$WORK/run" --launcher_dir="$LAUNCHER"
    --master="$MASTER" --ip=127.0.0.1 --port="$AP" --hostname=127.0.0.1 --launcher="$AGENT_LAUNCHER"
    --no-systemd_enable_support --resources="cpus:4;mem:4096;disk:1024"
    --fetcher_cache_dir="$WORK/fetch" --appc_store_dir="$WORK/appc"
    --docker_store_dir="$WORK/docker" --docker_volume_checkpoint_dir="$WORK/dvc"
    --cgroups_root="$MCG" --executor_registration_timeout=10mins --http_command_executor
    --http_credentials="$WORK/creds.json" --jwt_secret_key="$WORK/jwt.key")
  if [ "$1" = with ]; then
    f+=(--modules="file://${MODULES_FILE:-$WORK/modules.json}" --authorizer=io_nestguard_Authorizer
      --isolation="${2:-io_nestguard_Isolator}" --hooks=io_nestguard_CredentialHook
      --authenticate_http_readwrite --authenticate_http_readonly --authenticate_http_executors)
  else
    f+=(--isolation="${2:-filesystem/posix}")
  fi
  printf '%s\n' "${f[@]}"
}
start_agent() {  # start_agent <log name> <with|without> [extra flags...]; an --isolation= among them replaces the default
  local name="$1" mode="$2" a iso="" extra=(); shift 2
  for a in "$@"; do
    case "$a" in --isolation=*) iso="${a#--isolation=}" ;; *) extra+=("$a") ;; esac
  done
  local flags; mapfile -t flags < <(agent_flags "$mode" "$iso")
  "$BIN/mesos-agent" "${flags[@]}" "${extra[@]}" >>"$WORK/$name.log" 2>&1 &
  AGENT_PID=$!
  record_pid "$AGENT_PID"
  wait_http "$AGENT" 60 "$AGENT_PID" && agent_registered
}
stop_agent() { [ -n "$AGENT_PID" ] && stop_pid "$AGENT_PID"; AGENT_PID=""; }
agent_log_tail() { tail -n 3 "$WORK/$1.log" 2>/dev/null | tr '\n' ' ' | cut -c1-400; }

# ---------------------------------------------------------------- master + agent
"$BIN/mesos-master" --ip=127.0.0.1 --port="$MP" --work_dir="$WORK/master" \
  --registry=in_memory --hostname=127.0.0.1 >"$WORK/master.log" 2>&1 &
record_pid $!
if ! wait_http "$MASTER" 60; then
  fail master "did not become healthy: $(agent_log_tail master)"
  echo "$PASSED passed, $FAILED failed"; exit 1
fi
pass master-starts

if ! start_agent agent with; then
  fail agent "did not start or register: $(agent_log_tail agent)"
  echo "$PASSED passed, $FAILED failed"; exit 1
fi
grep -q "Creating 'io_nestguard_Authorizer' authorizer" "$WORK/agent.log" &&
  grep -q "io_nestguard_Isolator" "$WORK/agent.log" &&
  grep -q "io_nestguard_CredentialHook" "$WORK/modules.json" &&
  pass agent-loads-modules || fail agent-loads-modules "module names missing from the agent log"

if [ "$V2" = 1 ]; then
  source "$here/checks-v2.sh"
else
  [ "${SKIP_LOAD:-0}" = 1 ] || source "$here/load.sh"
  source "$here/checks.sh"
fi
