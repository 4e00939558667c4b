# The isolation checks of run.sh (sourced after checks.sh: uses its helpers,
# $EXEC, the framework's executor container, and $SA-style ids). Every
# container nestguard's isolator prepares must run under the same defences
# as under nestguard's launcher: Docker's seccomp profile, the default
# capability set (bounding; effective for root), no_new_privs, read-only
# kernel paths; Mesos' launch helper never sees a field it aborts on.
#
# iso_checks <when>: <when> is "" before the agent restart, "-after-restart"
# after it (new launches), and the recovered containers are checked apart.

REPORTS="$WORK/reports"
mkdir -p "$REPORTS/mnt"; chmod 1777 "$REPORTS"
cp "$here/probe.py" "$WORK/probe.py"; chmod 755 "$WORK/probe.py"
# Docker's default set (CHOWN … AUDIT_WRITE), as hardening_capabilities' default.
DEFAULT_CAPS=00000000a80425fb
ZERO_CAPS=0000000000000000

probe_cmd() {  # probe_cmd <report name> [then]: a shell command for a container
  printf 'python3 %s %s/%s.json; %s' "$WORK/probe.py" "$REPORTS" "$1" "${2:-exec sleep 600}"
}
report_ok() {  # report_ok <name> <expected CapEff>: "ok" or what is wrong
  local f="$REPORTS/$1.json" i
  for i in $(seq 100); do [ -s "$f" ] && break; sleep 0.2; done
  [ -s "$f" ] || { echo "no report $f (did the container start?)"; return; }
  python3 - "$f" "$2" "$DEFAULT_CAPS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); eff, bnd = sys.argv[2], sys.argv[3]
s = r["status"]; bad = []
want = {"Seccomp": "2", "NoNewPrivs": "1", "CapBnd": bnd, "CapEff": eff, "CapAmb": "0000000000000000"}
for k, v in want.items():
    if s.get(k) != v: bad.append("%s %s (wanted %s)" % (k, s.get(k), v))
for k in ("unshare_user", "keyctl", "mount"):
    if r[k] != 1: bad.append("%s errno %s (wanted EPERM)" % (k, r[k]))
for k in ("proc_sys", "sys"):
    if not r[k].split(",")[0] == "ro": bad.append("%s mounted %r" % (k, r[k]))
print("ok" if not bad else "; ".join(bad))
PY
}

nested_json() {  # nested_json <id> <parent> <shell command> [user]
  local user=""
  [ -n "${4:-}" ] && user=',"user":"'"$4"'"'
  printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":{"shell":true,"value":"%s"%s}}}' \
    "$(cid_json "$1" "$2")" "$3" "$user"
}

iso_checks() {  # iso_checks <when> <parent> <who> [user]: nested ones under <parent>, as <who>
  local when="$1" parent="$2" who="$3" user="${4:-}" r S N D st
  # A standalone container, as root.
  S="iso-sa$when-$RID"
  r="$(expect x 200 ops "$(launch_json "$S" "" "$(probe_cmd "$S")")")"
  [ "$r" = ok ] && r="$(report_ok "$S" "$DEFAULT_CAPS")"
  check "iso-standalone-defences$when" "$r"
  call ops "$(kill_json "$S")" >/dev/null
  if [ -z "$parent" ]; then
    fail "iso-nested-defences$when" "no parent container (see framework-executor)"
    fail "iso-debug-session-defences$when" "no parent container (see framework-executor)"
    return
  fi
  # A nested container, as a user other than root (the parent's, or <user>).
  N="iso-n$when-$RID"
  r="$(expect x 200 "$who" "$(nested_json "$N" "$parent" "$(probe_cmd "$N")" "$user")")"
  [ "$r" = ok ] && r="$(report_ok "$N" "$ZERO_CAPS")"
  check "iso-nested-defences$when" "$r"
  call "$who" "$(kill_json "$N" "$parent")" >/dev/null
  call "$who" "$(wait_json "$N" "$parent")" >/dev/null
  call "$who" "$(remove_json "$N" "$parent")" >/dev/null
  iso_volume_check "$when" "$parent" "$who" "$user"
  # A debug session under the parent (enters its mount namespace, inherits
  # its environment): the session's answer ends when its command exits.
  D="iso-d$when-$RID"
  local duser=""
  [ -n "$user" ] && duser=',"user":"'"$user"'"'
  st="$(python3 "$CLIENT" session "$AGENT" "$(printf '{"type":"LAUNCH_NESTED_CONTAINER_SESSION","launch_nested_container_session":{"container_id":%s,"command":{"shell":true,"value":"%s"%s}}}' \
    "$(cid_json "$D" "$parent")" "$(probe_cmd "$D" "exit 0")" "$duser")" "ops:$OPS_SECRET" 2>&1)"
  if [ "$(status_of "$st")" = 200 ]; then r="$(report_ok "$D" "$ZERO_CAPS")"; else r="session: ${st:0:300}"; fi
  check "iso-debug-session-defences$when" "$r"
}

# A nested container with a read-only SANDBOX_PATH volume from its parent's
# sandbox: the bind is made by the exec stage through descriptors (the
# wrapper took it from Mesos' helper), lands read-only, and only in the
# container's mount namespace.
iso_volume_check() {  # iso_volume_check <when> <parent> <who> [user]
  local when="$1" parent="$2" who="$3" user="${4:-}" V psb r u="" got i
  V="iso-vol$when-$RID"
  psb="$(find "$WORK/agent/slaves" -maxdepth 7 -type d -path "*/runs/$parent" 2>/dev/null | head -1)"
  if [ -z "$psb" ]; then fail "iso-nested-volume$when" "no sandbox for $parent"; return; fi
  mkdir -p "$psb/vol-$V"; chmod 777 "$psb/vol-$V"; echo "secret-$V" >"$psb/vol-$V/f"
  [ -n "$user" ] && u=',"user":"'"$user"'"'
  r="$(expect x 200 "$who" "$(printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":{"shell":true,"value":"%s"%s},"container":{"type":"MESOS","volumes":[{"mode":"RO","container_path":"shared","source":{"type":"SANDBOX_PATH","sandbox_path":{"type":"PARENT","path":"vol-%s"}}}]}}}' \
    "$(cid_json "$V" "$parent")" \
    "(cat shared/f; if touch shared/w 2>/dev/null; then echo writable; else echo read-only; fi) >$REPORTS/$V.vol; exec sleep 600" \
    "$u" "$V")")"
  if [ "$r" = ok ]; then
    for i in $(seq 100); do [ -s "$REPORTS/$V.vol" ] && break; sleep 0.2; done
    got="$(tr '\n' ' ' <"$REPORTS/$V.vol" 2>/dev/null)"
    [ "$got" = "secret-$V read-only " ] || r="the container saw '${got:-nothing}', wanted 'secret-$V read-only'"
  fi
  # The bind is the container's own: the host's mount table never has it.
  [ "$r" = ok ] && grep -q "/containers/$V/shared" /proc/self/mountinfo && r="the volume is mounted on the host"
  check "iso-nested-volume$when" "$r"
  call "$who" "$(kill_json "$V" "$parent")" >/dev/null
  call "$who" "$(wait_json "$V" "$parent")" >/dev/null
  call "$who" "$(remove_json "$V" "$parent")" >/dev/null
}

# WAIT right after the launch (a standalone container's termination is gone
# once it is destroyed): "ok <exit_status>", or why not.
launch_and_wait() {  # launch_and_wait <id> <launch json>
  local r
  r="$(expect x 200 ops "$2")"
  [ "$r" = ok ] || { echo "$r"; return; }
  call ops "$(wait_json "$1")" >"$WORK/$1-wait.out"
  body_of "$(cat "$WORK/$1-wait.out")" | json_get '"ok %s" % d["wait_container"].get("exit_status")'
}

iso_exit_checks() {
  local r S st
  # Exit status 3 reaches Mesos as 3 (raw wait status 768); the command
  # sleeps first, so that WAIT is in before it exits.
  S="iso-exit-$RID"
  st="$(launch_and_wait "$S" "$(launch_json "$S" "" "sleep 2; exit 3")")"
  [ "$st" = "ok 768" ] && r=ok || r="WAIT: ${st:-nothing}, wanted exit_status 768"
  check iso-exit-status "$r"
  # A SIGKILL as a signal (raw status 9).
  S="iso-sig-$RID"
  st="$(launch_and_wait "$S" "$(launch_json "$S" "" "sleep 2; kill -KILL \$\$")")"
  [ "$st" = "ok 9" ] && r=ok || r="WAIT: ${st:-nothing}, wanted exit_status 9"
  check iso-signal-status "$r"
  # KILL ends every process of the container.
  S="iso-kill-$RID"
  r="$(expect x 200 ops "$(launch_json "$S" "" "sleep 600 & sleep 600 & exec sleep 600")")"
  local procs="" i
  for i in $(seq 50); do procs="$(cat "$CG/freezer/$MCG/$S/cgroup.procs" 2>/dev/null | wc -l)"; [ "$procs" -ge 3 ] && break; sleep 0.2; done
  [ "$r" = ok ] && [ "${procs:-0}" -lt 3 ] && r="$S has ${procs:-0} processes, wanted 3"
  [ "$r" = ok ] && r="$(wait_then_kill "$S")"
  if [ "$r" = ok ]; then
    for i in $(seq 50); do [ -z "$(cat "$CG/freezer/$MCG/$S/cgroup.procs" 2>/dev/null)" ] && break; sleep 0.2; done
    [ -n "$(cat "$CG/freezer/$MCG/$S/cgroup.procs" 2>/dev/null)" ] && r="processes left in freezer/$MCG/$S"
  fi
  check iso-kill-ends-every-process "$r"
  # The container's environment reaches its command exactly (the wrapper
  # hands it to the stage as arguments, never to the stage's own loader).
  S="iso-env-$RID"
  st="$(launch_and_wait "$S" "$(printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":{"shell":true,"value":"sleep 2; [ \\"$NG_A\\" = \\"x y=z\\" ] && [ \\"$NG_B\\" = 2 ] && exit 4","environment":{"variables":[{"name":"NG_A","value":"x y=z"},{"name":"NG_B","value":"1"},{"name":"NG_B","value":"2"}]}}}}' "$(cid_json "$S")")")"
  [ "$st" = "ok 1024" ] && r=ok || r="WAIT: ${st:-nothing}, wanted exit_status 1024 (the command saw its environment)"
  check iso-environment "$r"
  # A command that is not a shell (an image without one runs this way).
  S="iso-noshell-$RID"
  st="$(launch_and_wait "$S" "$(printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":{"shell":false,"value":"/bin/sleep","arguments":["sleep","2"]}}}' "$(cid_json "$S")")")"
  [ "$st" = "ok 0" ] && r=ok || r="WAIT: ${st:-nothing}, wanted exit_status 0"
  check iso-no-shell-command "$r"
  # A capability the operator does not allow: refused, naming it; nothing left.
  S="iso-cap-$RID"
  st="$(call ops "$(printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":{"shell":true,"value":"exec sleep 600"},"container":{"type":"MESOS","linux_info":{"effective_capabilities":{"capabilities":["SYS_ADMIN"]}}}}}' "$(cid_json "$S")")")"
  r=ok
  [ "$(status_of "$st")" = 200 ] && r="launched: ${st:0:200}"
  grep -q "SYS_ADMIN" <<<"$st" && grep -q "hardening_allowed_capabilities" <<<"$st" || r="answer does not name the capability and the parameter: ${st:0:300}"
  sleep 0.5
  has_container "$S" && r="GET_CONTAINERS lists $S"
  [ -n "$(cgroup_dirs_named "$S")" ] && r="cgroup left: $(cgroup_dirs_named "$S" | head -1)"
  check iso-capability-refused "$r"
}

# ---- command tasks: the agent runs each in the container of its command
# executor (<launcher_dir>/mesos-executor); the isolator may only add
# arguments to that executor's command, and nestguard's mesos-containerizer
# wrapper makes the stage confine the executor and so its task.
command_tasks_json() {  # the framework's $COMMAND_TASKS
  printf '[["cmd-probe","%s"],["cmd-exit","sleep 2; exit 3"],["cmd-sig","sleep 2; kill -KILL $$"]]' \
    "$(probe_cmd "cmd-probe-$RID" "sleep 600 & exec sleep 600")"
}
task_message() {  # task_message <task> <state>: the executor's message with it
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print(next((u[3] for u in d.get("tasks",{}).get(sys.argv[2],[]) if u[0]==sys.argv[3] and u[1]=="SOURCE_EXECUTOR"), ""))' \
    "$WORK/framework.json" "$1" "$2" 2>/dev/null
}
command_task_container() {  # command_task_container <task>: its executor's container
  containers | json_get '[c["container_id"]["value"] for c in d["get_containers"].get("containers",[]) if c.get("executor_id",{}).get("value")==sys.argv[2] and "parent" not in c["container_id"]][0]' "$1"
}
# "ok" when every `sleep` of <container> has the defences, or what is wrong.
sleeps_keep_defences() {  # sleeps_keep_defences <container path under freezer/$MCG> [comm, default sleep]
  local pids="" pid st r=ok comm="${2:-sleep}"
  for pid in $(cat "$CG/freezer/$MCG/$1/cgroup.procs" 2>/dev/null); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] && pids="$pids $pid"
  done
  [ -z "$pids" ] && { echo "$1 has no $comm process"; return; }
  for pid in $pids; do
    st="$(grep -E '^(Seccomp|NoNewPrivs|CapBnd):' "/proc/$pid/status" 2>/dev/null | tr -s '\t\n' '  ')"
    { grep -q "Seccomp: 2" <<<"$st" && grep -q "NoNewPrivs: 1" <<<"$st" &&
      grep -q "CapBnd: $DEFAULT_CAPS" <<<"$st"; } || r="pid $pid of $1: $st"
  done
  echo "$r"
}

CMDC=""
CMDPIDS=""
iso_command_task_checks() {
  local r msg
  r=ok
  if ! wait_update cmd-probe TASK_RUNNING 60; then
    r="no TASK_RUNNING from the command executor: $(task_updates cmd-probe | tr '\n' ' ')"
  else
    r="$(report_ok "cmd-probe-$RID" "$ZERO_CAPS")"
  fi
  CMDC="$(command_task_container cmd-probe)"
  [ "$r" = ok ] && [ -z "$CMDC" ] && r="GET_CONTAINERS lists no container for cmd-probe's executor"
  [ "$r" = ok ] && r="$(sleeps_keep_defences "$CMDC")"
  CMDPIDS="$(cat "$CG/freezer/$MCG/$CMDC/cgroup.procs" 2>/dev/null | sort | tr '\n' ' ')"
  check iso-command-task-defences "$r"
  r=ok
  if ! wait_update cmd-exit TASK_FAILED 60; then r="no TASK_FAILED: $(task_updates cmd-exit | tr '\n' ' ')"
  else
    msg="$(task_message cmd-exit TASK_FAILED)"
    [ "$msg" = "Command exited with status 3" ] || r="message: $msg"
  fi
  check iso-command-task-exit-status "$r"
  r=ok
  if ! wait_update cmd-sig TASK_FAILED 60; then r="no TASK_FAILED: $(task_updates cmd-sig | tr '\n' ' ')"
  else
    msg="$(task_message cmd-sig TASK_FAILED)"
    [ "$msg" = "Command terminated with signal Killed" ] || r="message: $msg"
  fi
  check iso-command-task-signal "$r"
}

# After the agent restart: the command executor re-subscribed (its
# processes are the same), they keep their defences, and KILL_CONTAINER
# ends every process of the container.
iso_command_task_recovery_checks() {
  local r now i
  r=ok
  if [ -z "$CMDC" ] || [ -z "$CMDPIDS" ]; then r="no cmd-probe container before the restart (see iso-command-task-defences)"
  else
    now="$(cat "$CG/freezer/$MCG/$CMDC/cgroup.procs" 2>/dev/null | sort | tr '\n' ' ')"
    [ "$now" = "$CMDPIDS" ] || r="processes changed: $CMDPIDS -> ${now:-none}"
    [ "$r" = ok ] && r="$(sleeps_keep_defences "$CMDC")"
  fi
  check iso-command-task-recovered "$r"
  r=ok
  if [ -z "$CMDC" ]; then r="no cmd-probe container (see iso-command-task-defences)"
  else
    r="$(expect x 200 ops "$(kill_json "$CMDC")")"
    for i in $(seq 50); do [ -z "$(cat "$CG/freezer/$MCG/$CMDC/cgroup.procs" 2>/dev/null)" ] && break; sleep 0.2; done
    [ -n "$(cat "$CG/freezer/$MCG/$CMDC/cgroup.procs" 2>/dev/null)" ] && r="processes left in freezer/$MCG/$CMDC"
    # The agent reports the task's end (its executor is gone with it).
    for i in $(seq 150); do task_updates cmd-probe | grep -qE "^TASK_(KILLED|FAILED) " && break; sleep 0.2; done
    [ "$r" = ok ] && ! task_updates cmd-probe | grep -qE "^TASK_(KILLED|FAILED) " &&
      r="no terminal update for cmd-probe: $(task_updates cmd-probe | tr '\n' ' ')"
  fi
  check iso-command-task-kill "$r"
}
