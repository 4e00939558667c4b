# The checks of run.sh (sourced by it: uses its helpers and variables).
# Order matters: later checks use containers made by earlier ones.

cgroup_dirs_named() { find "$CG"/*/"$MCG" "$CG"/*/"$NCG" -type d -name "$1" 2>/dev/null; }
# First pid of a container (Mesos' freezer cgroup of the linux launcher).
container_pid() {  # container_pid <path under freezer/$MCG>
  head -n1 "$CG/freezer/$MCG/$1/cgroup.procs" 2>/dev/null
}
environ_of() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null; }
# The environments of all processes of a container (the launch helper may be
# one of them; the executor's command is another).
container_environ() {  # container_environ <path under freezer/$MCG>
  local pid
  for pid in $(cat "$CG/freezer/$MCG/$1/cgroup.procs" 2>/dev/null); do environ_of "$pid"; done
}

# A standalone container's termination is not kept once it is destroyed:
# WAIT first (in the background), then KILL; "ok" when both answer 200.
# (No REMOVE of a standalone container: Mesos 1.11's containerizer aborts
# the agent on it, containerizer.cpp:3152, CHECK containerId.has_parent().)
wait_then_kill() {  # wait_then_kill <standalone container id>
  local r waiter
  call ops "$(wait_json "$1")" >"$WORK/$1-wait.out" &
  waiter=$!
  sleep 0.5
  r="$(expect x 200 ops "$(kill_json "$1")")"
  wait "$waiter"
  [ "$r" = ok ] && [ "$(status_of "$(cat "$WORK/$1-wait.out")")" != 200 ] && r="WAIT gave $(head -c 300 "$WORK/$1-wait.out")"
  echo "$r"
}

# ---- authn
check authn-none "$(expect authn-none 401 none "$CONTAINERS")"
check authn-wrong-secret "$(expect authn-wrong 401 wrong "$CONTAINERS")"
check authn-basic "$(expect authn-basic 200 ops "$CONTAINERS")"

# ---- authz: standalone containers
SA="sa-$RID"
check authz-standalone-allowed "$(expect x 200 ops "$(launch_json "$SA" "" "exec sleep 600")")"
check authz-standalone-denied "$(expect x 403 intruder "$(launch_json "$SA-denied" "" "exec sleep 600")")"
sleep 1
r=ok
has_container "$SA-denied" && r="GET_CONTAINERS lists $SA-denied"
[ -n "$(cgroup_dirs_named "$SA-denied")" ] && r="cgroup left: $(cgroup_dirs_named "$SA-denied" | head -1)"
[ -e "$WORK/run/containers/$SA-denied" ] && r="runtime dir left for $SA-denied"
check authz-denied-leaves-nothing "$r"
check authz-standalone-kill-denied "$(expect x 403 intruder "$(kill_json "$SA")")"
check authz-standalone-kill-wait "$(wait_then_kill "$SA")"

# ---- a framework with an executor (parent of the nested containers)
# The framework (and so its executors and tasks) runs as FRAMEWORK_USER
# (default nobody): nestguard's executor must work as a user other than root.
# It also launches command tasks (checks-isolation.sh checks them).
source "$here/checks-isolation.sh"
COMMAND_TASKS="$(command_tasks_json)" \
FRAMEWORK_USER="${FRAMEWORK_USER:-nobody}" python3 "$CLIENT" framework "$MASTER" fw "$WORK/framework.json" >"$WORK/framework.log" 2>&1 &
echo $! >"$WORK/framework.pid"
EXEC=""
for i in $(seq 150); do
  EXEC="$(containers | json_get '[c["container_id"]["value"] for c in d["get_containers"].get("containers",[]) if c.get("executor_id",{}).get("value")=="holder-exec" and "parent" not in c["container_id"]][0]')"
  [ -n "$EXEC" ] && [ -n "$(container_pid "$EXEC")" ] && break
  sleep 0.2
done
if [ -z "$EXEC" ]; then
  fail framework-executor "no executor container: $(cat "$WORK/framework.json" 2>/dev/null | head -c 300)"
else
  pass framework-executor
fi
EPID="$(container_pid "$EXEC")"
if [ -z "$EXEC" ]; then
  # Nothing below means anything without the parent container.
  for c in hook-secret hook-token authn-executor-token authz-nested-launch authz-nested-kill \
           authz-nested-wait authz-nested-remove authz-manage-nested-containers iso-limits \
           iso-oom-reported iso-oom-sibling-unaffected fix-a-pids-stay-in-mesos-freezer \
           ; do
    fail "$c" "no executor container to nest under (see framework-executor)"
  done
else

# ---- hook: injected credentials in the executor's environment
r="no executor pid"
if [ -n "$EPID" ]; then
  # The container's first process may still be Mesos' launch helper (with
  # the agent's environment) until it execs the executor's command as the
  # framework's user.
  for i in $(seq 50); do
    envs="$(container_environ "$EXEC")"
    grep -q "^MESOS_EXECUTOR_ID=" <<<"$envs" && break
    sleep 0.2
  done
  if ! grep -qx "MESOS_PRINCIPAL=fw" <<<"$envs"; then r="no MESOS_PRINCIPAL=fw in the executor's environment"
  elif ! grep -qx "MESOS_SECRET=$FW_SECRET" <<<"$envs"; then r="MESOS_SECRET missing or wrong"
  else r=ok; fi
fi
check hook-secret "$r"
TOKEN="$(container_environ "$EXEC" | sed -n 's/^MESOS_EXECUTOR_AUTHENTICATION_TOKEN=//p' | head -n1)"
r=ok
if [ -z "$TOKEN" ]; then r="no MESOS_EXECUTOR_AUTHENTICATION_TOKEN (agent --jwt_secret_key)"
else
  claims="$(python3 -c 'import base64,sys; p=sys.argv[1].split(".")[1]; print(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)).decode())' "$TOKEN" 2>&1)"
  grep -q "\"cid\":\"$EXEC\"" <<<"$claims" || r="token claims lack cid $EXEC: $claims"
fi
check hook-token "$r"
grep -q "nestguard-real-mesos: stub" "$WORK/agent.log" &&
  fail openssl-stubs-unused "$(grep -m1 'nestguard-real-mesos: stub' "$WORK/agent.log")" ||
  pass openssl-stubs-unused

# ---- authn with the executor's token: nested launch under its own container
if [ -n "$TOKEN" ]; then
  check authn-executor-token "$(expect x 200 "bearer:$TOKEN" "$(launch_json tok-$RID "$EXEC" "exec sleep 600")")"
  check authn-executor-token-foreign-parent "$(expect x 403 "bearer:$TOKEN" "$(launch_json tok2-$RID "$SA" "exec sleep 600")")"
  call ops "$(kill_json tok-$RID "$EXEC")" >/dev/null
  call ops "$(wait_json tok-$RID "$EXEC")" >/dev/null
  call ops "$(remove_json tok-$RID "$EXEC")" >/dev/null
else
  fail authn-executor-token "no executor token"
fi

# ---- authz: nested containers under the executor
N1="n1-$RID"
check authz-nested-launch-denied "$(expect x 403 intruder "$(launch_json "$N1-x" "$EXEC" "exec sleep 600")")"
check authz-nested-launch-allowed "$(expect x 200 fw "$(launch_json "$N1" "$EXEC" "exec sleep 600")")"
check authz-nested-kill-denied "$(expect x 403 intruder "$(kill_json "$N1" "$EXEC")")"
check authz-nested-kill-allowed "$(expect x 200 fw "$(kill_json "$N1" "$EXEC")")"
check authz-nested-wait-denied "$(expect x 403 intruder "$(wait_json "$N1" "$EXEC")")"
check authz-nested-wait-allowed "$(expect x 200 fw "$(wait_json "$N1" "$EXEC")")"
check authz-nested-remove-denied "$(expect x 403 intruder "$(remove_json "$N1" "$EXEC")")"
check authz-nested-remove-allowed "$(expect x 200 fw "$(remove_json "$N1" "$EXEC")")"
r=ok
has_container "$N1-x" && r="GET_CONTAINERS lists $N1-x"
[ -n "$(cgroup_dirs_named "$N1-x")" ] && r="cgroup left: $(cgroup_dirs_named "$N1-x" | head -1)"
check authz-nested-denied-leaves-nothing "$r"
N2="n2-$RID"
r="$(expect x 200 ops "$(launch_json "$N2" "$EXEC" "exec sleep 600")")"
[ "$r" = ok ] && r="$(expect x 200 ops "$(kill_json "$N2" "$EXEC")")"
[ "$r" = ok ] && r="$(expect x 200 ops "$(wait_json "$N2" "$EXEC")")"
[ "$r" = ok ] && r="$(expect x 200 ops "$(remove_json "$N2" "$EXEC")")"
check authz-manage-nested-containers "$r"

# ---- isolator: limits, OOM, sibling
LIM="lim-$RID"; OOM="oom-$RID"
r="$(expect x 200 fw "$(launch_json "$LIM" "$EXEC" "exec sleep 600" 64)")"
if [ "$r" = ok ]; then
  f="$CG/memory/$NCG/$EXEC/mesos/$LIM/memory.limit_in_bytes"
  v="$(cat "$f" 2>/dev/null)"
  [ "$v" = 67108864 ] || r="$f = '${v:-missing}', wanted 67108864"
fi
check iso-limits "$r"
r="$(expect x 200 fw "$(launch_json "$OOM" "$EXEC" "exec tail /dev/zero" 64)")"
if [ "$r" = ok ]; then
  w="$(call fw "$(wait_json "$OOM" "$EXEC")")"
  reason="$(body_of "$w" | json_get 'd["wait_container"].get("reason")')"
  [ "$reason" = REASON_CONTAINER_LIMITATION_MEMORY ] || r="WAIT gave ${w:0:300}"
fi
check iso-oom-reported "$r"
r=ok
LPID="$(container_pid "$EXEC/mesos/$LIM")"
{ [ -n "$LPID" ] && kill -0 "$LPID" 2>/dev/null; } || r="sibling $LIM is not running"
has_container "$LIM" || r="sibling $LIM not listed"
check iso-oom-sibling-unaffected "$r"
call fw "$(remove_json "$OOM" "$EXEC")" >/dev/null

fi  # executor container present
# ---- fixes (a)/(b): the isolator and Mesos' LinuxLauncher freezer cgroups
if [ -n "$EXEC" ]; then
  r=ok
  [ -n "$LPID" ] || r="no pid in Mesos' freezer cgroup $MCG/$EXEC/mesos/$LIM (moved out by the isolator?)"
  check fix-a-pids-stay-in-mesos-freezer "$r"
fi
r=ok
if [ -d "$CG/freezer/$NCG" ]; then
  n="$(find "$CG/freezer/$NCG" -mindepth 1 -type d | wc -l)"
  [ "$n" = 0 ] || r="$n directories under freezer/$NCG"
fi
check fix-b-no-isolator-freezer-cgroups "$r"

# ---- pods: task groups run by nestguard's executor as the DEFAULT executor
# (the framework launched pod-a: a-ok finishes, a-long runs; pod-b: b-fail
# exits 3). The states come from the executor's UPDATE calls through the
# real agent's v1 executor API, forwarded by the master to the framework.
task_updates() {  # task_updates <task>: "state source container" per line
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for u in d.get("tasks",{}).get(sys.argv[2],[]): print(u[0], u[1], u[4] if len(u)>4 else "")' \
    "$WORK/framework.json" "$1" 2>/dev/null
}
has_update() {  # has_update <task> <state>: from the executor
  task_updates "$1" | grep -q "^$2 SOURCE_EXECUTOR "
}
wait_update() {  # wait_update <task> <state> <seconds>
  local i
  for i in $(seq $(( $3 * 5 ))); do has_update "$1" "$2" && return 0; sleep 0.2; done
  return 1
}
pod_diag() {  # the tasks' updates and the executors' stderr, for FAIL lines
  local f
  printf 'updates: %s' "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get("tasks")))' "$WORK/framework.json" 2>/dev/null | cut -c1-400)"
  for f in "$WORK"/agent/slaves/*/frameworks/*/executors/pod-*/runs/latest/stderr; do
    [ -f "$f" ] && printf ' | %s: %s' "$(basename "$(dirname "$(dirname "$(dirname "$f")")")")" "$(tail -n 3 "$f" | tr '\n' ' ' | cut -c1-300)"
  done
}
r=ok
for t in a-ok a-long b-fail; do
  wait_update "$t" TASK_RUNNING 60 || { r="no TASK_RUNNING from the executor for $t; $(pod_diag)"; break; }
done
check pods-running "$r"
wait_update a-ok TASK_FINISHED 30 && pass pods-finished || fail pods-finished "a-ok: no TASK_FINISHED; $(pod_diag)"
wait_update b-fail TASK_FAILED 30 && pass pods-failed || fail pods-failed "b-fail: no TASK_FAILED; $(pod_diag)"
# a-long: a nested container of pod-a's executor container, in Mesos'
# freezer cgroup under it.
pods_answer="$(call ops "$CONTAINERS")"
printf '%s\n' "$pods_answer" >"$WORK/pods-get-containers.log"
kill -0 "$(cat "$WORK/framework.pid")" 2>/dev/null || echo "framework process gone" >>"$WORK/pods-get-containers.log"
{ date +%T.%N; cat "$WORK/framework.json"; echo
  for f in "$WORK"/agent/slaves/*/frameworks/*/executors/pod-*/runs/latest/std*; do echo "== $f"; tail -n 20 "$f"; done
  grep -n "pod-a\|pod-b\|Failed\|limitation\|Destroying container\|has exited" "$WORK/agent.log" | tail -n 60; } >>"$WORK/pods-get-containers.log" 2>&1
PODA="$(body_of "$pods_answer" | json_get '[c["container_id"]["value"] for c in d["get_containers"].get("containers",[]) if c.get("executor_id",{}).get("value")=="pod-a" and "parent" not in c["container_id"]][0]')"
ALONG="$(task_updates a-long | awk '$1=="TASK_RUNNING" {print $3}' | tail -n1)"
ALONG="${ALONG##*.}"
ALONGPID=""
r=ok
if [ -z "$PODA" ]; then
  # What the one GET_CONTAINERS answer said (an executor is listed from its
  # launch until it terminates, so with its tasks running this is either a
  # failed call or an executor container already gone), with the
  # framework's liveness; the whole answer and the executors' logs are in
  # pods-get-containers.log (copied to $CACHE/last-run).
  listed="$(body_of "$pods_answer" | json_get '" ".join(c["executor_id"]["value"] for c in d["get_containers"].get("containers",[]) if "executor_id" in c) or "none"' 2>/dev/null)"
  fwup=alive; kill -0 "$(cat "$WORK/framework.pid")" 2>/dev/null || fwup=gone
  r="no executor container for pod-a (GET_CONTAINERS answered $(status_of "$pods_answer"), executors listed: ${listed:-unparsable}, framework $fwup); $(pod_diag)"
elif [ -z "$ALONG" ]; then r="a-long's TASK_RUNNING names no container; $(pod_diag)"
else
  ALONGPID="$(container_pid "$PODA/mesos/$ALONG")"
  has_container "$ALONG" || r="GET_CONTAINERS does not list a-long's container $PODA.$ALONG"
  [ -n "$ALONGPID" ] || r="no process in freezer/$MCG/$PODA/mesos/$ALONG"
fi
check pods-nested-containers "$r"

# ---- strict isolation in every container kind (checks-isolation.sh)
iso_checks "" "$EXEC" fw
iso_exit_checks
iso_command_task_checks
# A container that lives across the agent restart below keeps its defences.
ISOREC="iso-rec-$RID"
r="$(expect x 200 ops "$(launch_json "$ISOREC" "" "$(probe_cmd "$ISOREC")")")"
[ "$r" = ok ] && r="$(report_ok "$ISOREC" "$DEFAULT_CAPS")"
ISORECPID="$(container_pid "$ISOREC")"
[ "$r" = ok ] && [ -z "$ISORECPID" ] && r="no process for $ISOREC"
check iso-recovery-setup "$r"

# ---- recovery (+ ACL flip, which the shim only reads at start)
# Parent: a standalone container (Mesos kills an executor that never
# subscribed when it recovers, and ours cannot subscribe before #14).
RP="rp-$RID"; RC="rc-$RID"
r="$(expect x 200 ops "$(launch_json "$RP" "" "exec sleep 600")")"
[ "$r" = ok ] && r="$(expect x 200 ops "$(launch_json "$RC" "$RP" "exec sleep 600")")"
RCPID=""
for i in $(seq 50); do RCPID="$(container_pid "$RP/mesos/$RC")"; [ -n "$RCPID" ] && break; sleep 0.2; done
[ "$r" = ok ] && [ -z "$RCPID" ] && r="no process for $RC"
write_acls no-fw-kill
kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
if [ "$r" != ok ]; then
  fail recovery-containers-survive "setup: $r"
elif start_agent agent-recovered with; then
  # Registered is not recovered: the v1 API answers 503 until then.
  for i in $(seq 150); do
    [ "$(status_of "$(call ops "$CONTAINERS")")" = 200 ] && break
    sleep 0.2
  done
  r=ok
  has_container "$RP" || r="$RP not listed after recovery"
  has_container "$RC" || r="$RC not listed after recovery"
  pid_now="$(container_pid "$RP/mesos/$RC")"
  [ "$pid_now" = "$RCPID" ] || r="$RC's process changed: $RCPID -> ${pid_now:-none}"
  grep -q "io_nestguard_Isolator" "$WORK/agent-recovered.log" || r="isolator not in the restarted agent"
  check recovery-containers-survive "$r"
  if [ -n "$EXEC" ]; then
    check authz-flip-after-restart "$(expect x 403 fw "$(kill_json "$LIM" "$EXEC")")"
  fi
  r="$(expect x 200 ops "$(kill_json "$RC" "$RP")")"
  [ "$r" = ok ] && r="$(expect x 200 ops "$(wait_json "$RC" "$RP")")"
  [ "$r" = ok ] && r="$(expect x 200 ops "$(remove_json "$RC" "$RP")")"
  [ "$r" = ok ] && r="$(wait_then_kill "$RP")"
  check recovery-containers-manageable "$r"
else
  fail recovery-containers-survive "agent did not restart: $(agent_log_tail agent-recovered)"
  fail recovery-containers-manageable "agent did not restart"
fi
# pod-a's executor (nestguard's) re-subscribes to the restarted agent: its
# container and a-long's are kept with the same process, and a KILL of
# a-long reaches the framework as the executor's TASK_KILLED. (The holder's
# CUSTOM executor never subscribes: Mesos kills it at recovery.)
r=ok
if [ -z "$PODA" ] || [ -z "$ALONGPID" ]; then r="no pod-a container before the restart (see pods-nested-containers)"
else
  # Past the agent's --executor_reregistration_timeout (2 s): an executor
  # that did not re-subscribe is being killed by then.
  sleep 4
  has_container "$PODA" || r="pod-a's executor container $PODA not listed after recovery"
  pid_now="$(container_pid "$PODA/mesos/$ALONG")"
  [ "$r" = ok ] && [ "$pid_now" != "$ALONGPID" ] && r="a-long's process changed: $ALONGPID -> ${pid_now:-none}"
fi
check recovery-executor-container "$r"
# New launches after the restart, nested ones and a session under pod-a's
# recovered executor container (Mesos 1.11 attaches a session's output
# through its executor, so a standalone parent would not do); the holder's
# executor is gone (Mesos kills a CUSTOM executor that never re-subscribes).
if [ "$r" = ok ]; then iso_checks "-after-restart" "$PODA" ops nobody
else iso_checks "-after-restart" "" ops; fi
if [ "$r" = ok ]; then
  r="$(expect x 200 ops "$(kill_json "$ALONG" "$PODA")")"
  if [ "$r" = ok ] && ! wait_update a-long TASK_KILLED 30; then
    r="no TASK_KILLED for a-long after the restart (executor not re-subscribed?); $(pod_diag)"
  fi
  check recovery-executor-resubscribes "$r"
else
  fail recovery-executor-resubscribes "no pod-a to check (see recovery-executor-container)"
fi

# ---- strict isolation after the restart: recovered and new containers
r=ok
if [ -z "$ISORECPID" ]; then r="no $ISOREC before the restart (see iso-recovery-setup)"
else
  # The container's command (its sleep), not Mesos' launch helper, which
  # stays as the init of the container's pid namespace.
  r="$(sleeps_keep_defences "$ISOREC")"
fi
check iso-recovered-keep-defences "$r"
call ops "$(kill_json "$ISOREC")" >/dev/null
iso_command_task_recovery_checks

# ---- teardown: nothing left
stop_pid "$(cat "$WORK/framework.pid")"; rm -f "$WORK/framework.pid"
for i in $(seq 100); do
  [ -z "$(containers | json_get '[c for c in d["get_containers"].get("containers",[])] or None')" ] && break
  sleep 0.2
done
r=ok
left="$(containers | json_get '" ".join(c["container_id"]["value"] for c in d["get_containers"].get("containers",[]))')"
[ -n "$left" ] && r="containers left after teardown: $left"
for i in $(seq 50); do
  [ -z "$(find "$CG"/*/"$NCG" "$CG"/*/"$MCG" -mindepth 1 -type d 2>/dev/null)" ] && break
  sleep 0.2
done
d="$(find "$CG"/*/"$NCG" "$CG"/*/"$MCG" -mindepth 1 -type d 2>/dev/null | head -3 | tr '\n' ' ')"
[ -n "$d" ] && r="cgroups left after teardown: $d"
check iso-cleanup-no-cgroups "$r"

# ---- fix (c): the isolator enabled on an agent that already runs containers
stop_agent
rm -rf "$WORK/agent" "$WORK/run"
PRE="pre-$RID"
r=ok
if ! start_agent agent-pre without; then r="agent without modules did not start: $(agent_log_tail agent-pre)"
else
  r="$(expect x 200 none "$(launch_json "$PRE" "" "exec sleep 600")")"
  PREPID=""
  for i in $(seq 50); do PREPID="$(container_pid "$PRE")"; [ -n "$PREPID" ] && break; sleep 0.2; done
  [ "$r" = ok ] && [ -z "$PREPID" ] && r="no process for $PRE"
  kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
  if [ "$r" = ok ]; then
    if start_agent agent-pre-with with; then
      for i in $(seq 150); do
        [ "$(status_of "$(call ops "$CONTAINERS")")" = 200 ] && break
        sleep 0.2
      done
      sleep 2  # a failed watch destroys the container right after recovery
      has_container "$PRE" || r="$PRE not listed after the restart with the isolator: $(grep -m1 -i "$PRE" "$WORK/agent-pre-with.log" | cut -c1-300)"
      [ "$r" = ok ] && [ "$(container_pid "$PRE")" != "$PREPID" ] && r="$PRE's process changed: $PREPID -> $(container_pid "$PRE")"
      [ "$r" = ok ] && r="$(wait_then_kill "$PRE")"
    else
      r="agent with the isolator did not restart: $(agent_log_tail agent-pre-with)"
    fi
  fi
fi
check fix-c-preexisting-containers-left-alone "$r"

# ---- modules JSON of acls/ (for nestguard agent), paths rewritten
stop_agent
python3 - "$repo/acls/modules.json" "$WORK/modules-acls.json" "$NG/libnestguard_mesos.so" "$repo" "$NCG" "$WORK/creds.json" <<'PY'
import json, os, sys
src, out, lib, repo, ncg, creds = sys.argv[1:]
m = json.load(open(src))
for l in m["libraries"]:
    l["file"] = lib
    for mod in l["modules"]:
        for p in mod.get("parameters", []):
            if p["key"] == "acls": p["value"] = os.path.join(repo, p["value"])
        if mod["name"] == "io_nestguard_CredentialHook":
            # A path the agent supplies (its --http_credentials file).
            mod.setdefault("parameters", []).append({"key": "http_credentials", "value": creds})
        if mod["name"] == "io_nestguard_Isolator":
            # Not a path but shared with other jobs: this run's cgroup root.
            mod.setdefault("parameters", []).append({"key": "cgroups_root", "value": ncg})
json.dump(m, open(out, "w"), indent=1)
PY
# acls/modules.json loads as it is on any kernel: the capability allow-list
# and seccomp go through nestguard's exec stage, never to Mesos' launch
# helper (which aborts on them when cap_last_cap > 37).
rm -rf "$WORK/agent" "$WORK/run"
MODULES_FILE="$WORK/modules-acls.json"
modules_error() { grep -m1 -E "module 'io_nestguard|exec_stage|hardening" "$WORK/$1.log" | cut -d] -f2- | cut -c1-400; }
if start_agent agent-acls-modules with; then
  pass modules-json-acls
else
  fail modules-json-acls "did not start: $(modules_error agent-acls-modules)"
fi
stop_agent

# ---- containers with their own docker image (checks-images.sh)
source "$here/checks-images.sh"

# ---- numbers
source "$here/numbers.sh"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
