# The checks of run.sh on a cgroup v2-only host (sourced by it: uses its
# helpers and variables). There the agent runs --launcher=posix: Mesos
# 1.11's LinuxLauncher needs the v1 freezer, and its cgroups/* isolators
# cannot start (checked last). nestguard's isolator gives each container a
# v2 cgroup (processes in its `leaf`) and, through the wrapper, its
# namespaces; the exec stage applies the defences as under the linux
# launcher. Run inside scripts/vm.sh's guest (scripts/vm-real-mesos.sh).

v2_dir() { echo "$CG/$NCG/$1"; }  # v2_dir <id or parent/mesos/child>
# The container's command: the process in its leaf whose comm is $2.
v2_pid_of() {  # v2_pid_of <dir> <comm>
  local pid
  for pid in $(cat "$1/leaf/cgroup.procs" 2>/dev/null); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && { echo "$pid"; return; }
  done
}
status_field() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
wait_for_pid() {  # wait_for_pid <dir> <comm>: up to 30 s
  local i pid
  for i in $(seq 150); do
    pid="$(v2_pid_of "$1" "$2")"
    [ -n "$pid" ] && { echo "$pid"; return; }
    sleep 0.2
  done
}
wait_then_kill() {  # wait_then_kill <id> [parent]: WAIT in the background, then KILL
  local r waiter
  call ops "$(wait_json "$1" "${2:-}")" >"$WORK/$1-wait.out" &
  waiter=$!
  sleep 0.5
  r="$(expect x 200 ops "$(kill_json "$1" "${2:-}")")"
  wait "$waiter"
  [ "$r" = ok ] && [ "$(status_of "$(cat "$WORK/$1-wait.out")")" != 200 ] && r="WAIT gave $(head -c 300 "$WORK/$1-wait.out")"
  echo "$r"
}
gone() {  # gone <pid...>: "ok" once none is alive (10 s)
  local i p alive
  for i in $(seq 50); do
    alive=""
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && { echo ok; return; }
    sleep 0.2
  done
  echo "still alive:$alive"
}

# ---- limits, namespaces and defences of a standalone container
L="v2lim-$RID"
r="$(expect x 200 ops "$(launch_json "$L" "" "exec sleep 600" 64)")"
LPID=""
if [ "$r" = ok ]; then
  d="$(v2_dir "$L")"
  LPID="$(wait_for_pid "$d" sleep)"
  [ -n "$LPID" ] || r="no sleep in $d/leaf/cgroup.procs"
  v="$(cat "$d/memory.max" 2>/dev/null)"
  [ "$r" = ok ] && [ "$v" != 67108864 ] && r="$d/memory.max = '${v:-missing}', wanted 67108864"
  v="$(cat "$d/memory.low" 2>/dev/null)"
  [ "$r" = ok ] && [ "$v" != 67108864 ] && r="$d/memory.low = '${v:-missing}', wanted 67108864"
  v="$(cat "$d/cpu.weight" 2>/dev/null)"
  [ "$r" = ok ] && [ "$v" != 10 ] && r="$d/cpu.weight = '${v:-missing}', wanted 10 (0.1 cpus)"
  v="$(cat "/proc/$LPID/cgroup" 2>/dev/null)"
  [ "$r" = ok ] && [ "$v" != "0::/$NCG/$L/leaf" ] && r="pid $LPID is in '$v'"
fi
check v2-limits-in-the-containers-cgroup "$r"

r=ok
if [ -z "$LPID" ]; then r="no container process (see v2-limits-in-the-containers-cgroup)"
else
  for ns in mnt pid uts ipc; do
    [ "$(readlink "/proc/$LPID/ns/$ns")" = "$(readlink "/proc/self/ns/$ns")" ] && r="shares the agent's $ns namespace"
  done
  # Its pid in its own namespace, where Mesos' helper (which checkpoints
  # the exit status) is pid 1, as under the LinuxLauncher.
  levels="$(awk '$1 == "NSpid:" {print NF - 1}' "/proc/$LPID/status")"
  [ "$r" = ok ] && [ "${levels:-1}" -lt 2 ] && r="the command has no pid namespace of its own ($(grep NSpid "/proc/$LPID/status"))"
fi
check v2-own-namespaces-under-the-posix-launcher "$r"

r=ok
if [ -z "$LPID" ]; then r="no container process"
else
  [ "$(status_field "$LPID" Seccomp)" = 2 ] || r="Seccomp: $(status_field "$LPID" Seccomp)"
  [ "$(status_field "$LPID" NoNewPrivs)" = 1 ] || r="NoNewPrivs: $(status_field "$LPID" NoNewPrivs)"
  [ "$(status_field "$LPID" CapBnd)" = "$(status_field self CapBnd)" ] && r="CapBnd not reduced"
fi
check v2-defences-under-the-posix-launcher "$r"

# ---- OOM: a memory limitation, as Mesos reports it
O="v2oom-$RID"
# (It sleeps first: WAIT must be in before it ends, or Mesos, which keeps no
# standalone container once destroyed, answers 404.)
r="$(expect x 200 ops "$(launch_json "$O" "" "sleep 2; exec tail /dev/zero" 64)")"
if [ "$r" = ok ]; then
  w="$(call ops "$(wait_json "$O")")"
  reason="$(body_of "$w" | json_get 'd["wait_container"].get("reason")')"
  [ "$reason" = REASON_CONTAINER_LIMITATION_MEMORY ] || r="WAIT gave ${w:0:300}"
  [ "$r" = ok ] && [ -d "$(v2_dir "$O")" ] && r="$(v2_dir "$O") left after the OOM"
fi
check v2-oom-is-a-memory-limitation "$r"

# ---- KILL: no process and no cgroup left
r="$(wait_then_kill "$L")"
[ "$r" = ok ] && [ -n "$LPID" ] && r="$(gone "$LPID")"
[ "$r" = ok ] && [ -d "$(v2_dir "$L")" ] && r="$(v2_dir "$L") left"
check v2-kill-leaves-no-process-and-no-cgroup "$r"

# ---- a pod: nested containers under a standalone parent
P="v2pod-$RID"; N1="v2n1-$RID"; N2="v2n2-$RID"
r="$(expect x 200 ops "$(launch_json "$P" "" "exec sleep 600")")"
PPID_=""
[ "$r" = ok ] && { PPID_="$(wait_for_pid "$(v2_dir "$P")" sleep)"; [ -n "$PPID_" ] || r="parent not running"; }
if [ "$r" = ok ]; then
  r="$(expect x 200 ops "$(launch_json "$N1" "$P" "test -d /proc/1 && echo nested-ok")")"
  [ "$r" = ok ] && {
    w="$(call ops "$(wait_json "$N1" "$P")")"
    [ "$(body_of "$w" | json_get 'd["wait_container"].get("exit_status")')" = 0 ] || r="nested WAIT gave ${w:0:300}"
  }
  call ops "$(remove_json "$N1" "$P")" >/dev/null
fi
N2PID=""
if [ "$r" = ok ]; then
  r="$(expect x 200 ops "$(launch_json "$N2" "$P" "exec sleep 600" 32)")"
  d="$(v2_dir "$P/mesos/$N2")"
  [ "$r" = ok ] && { N2PID="$(wait_for_pid "$d" sleep)"; [ -n "$N2PID" ] || r="no sleep in $d/leaf"; }
  v="$(cat "$d/memory.max" 2>/dev/null)"
  [ "$r" = ok ] && [ "$v" != 33554432 ] && r="$d/memory.max = '${v:-missing}', wanted 33554432"
fi
[ "$r" = ok ] || note "stderr of $P's nested containers: $(find "$WORK/agent" -path "*$P*" -name stderr -exec tail -n 3 {} + 2>/dev/null | tr '\n' ' ' | cut -c1-600)"
check v2-pod-with-nested-containers "$r"

# ---- the namespaces of a pod, as Mesos gives them under its LinuxLauncher:
# a nested container has its own mount and pid namespaces and shares its
# parent's IPC one; a debug session enters all of its parent's.
same_ns() { [ "$(readlink "/proc/$1/ns/$3")" = "$(readlink "/proc/$2/ns/$3")" ]; }
ns_inode() { stat -Lc %i "/proc/$1/ns/$2"; }
parent_pid_ns() {  # the inode of the parent of <pid>'s pid namespace (NS_GET_PARENT)
  python3 -c 'import fcntl, os, sys
fd = os.open("/proc/%s/ns/pid" % sys.argv[1], os.O_RDONLY)
print(os.fstat(fcntl.ioctl(fd, 0xb702)).st_ino)' "$1" 2>/dev/null
}
r=ok
if [ -z "$N2PID" ] || [ -z "$PPID_" ]; then r="no pod (see v2-pod-with-nested-containers)"
else
  same_ns "$N2PID" "$PPID_" ipc || r="$N2 has an IPC namespace of its own, not its parent's"
  same_ns "$N2PID" "$PPID_" mnt && r="$N2 shares its parent's mount namespace"
  same_ns "$N2PID" "$PPID_" pid && r="$N2 shares its parent's pid namespace"
  [ "$r" = ok ] && [ "$(parent_pid_ns "$N2PID")" != "$(ns_inode "$PPID_" pid)" ] &&
    r="$N2's pid namespace is not inside its parent's"
fi
check v2-nested-namespaces-as-under-mesos-linux-launcher "$r"
# A debug session needs an executor's container (Mesos attaches its output
# through the executor): a framework's, running nestguard's executor.
COMMAND_TASKS='[]' FRAMEWORK_USER="${FRAMEWORK_USER:-nobody}" \
  python3 "$CLIENT" framework "$MASTER" fw "$WORK/framework.json" >"$WORK/framework.log" 2>&1 &
echo $! >"$WORK/framework.pid"
# A process of the executor's container inside its pid namespace (not the
# wrapper that relays for it, which Mesos knows).
inner_pid() {  # inner_pid <dir>
  local pid
  for pid in $(cat "$1/leaf/cgroup.procs" 2>/dev/null); do
    same_ns "$pid" self pid || { echo "$pid"; return; }
  done
}
EXEC=""; EPID=""; deadline=$((SECONDS + 120))
while [ "$SECONDS" -lt "$deadline" ]; do
  [ -n "$EXEC" ] || EXEC="$(containers | json_get '[c["container_id"]["value"] for c in d["get_containers"].get("containers",[]) if c.get("executor_id",{}).get("value")=="holder-exec" and "parent" not in c["container_id"]][0]')"
  [ -n "$EXEC" ] && EPID="$(inner_pid "$(v2_dir "$EXEC")")"
  [ -n "$EPID" ] && break
  sleep 1
done
r=ok
D="v2dbg-$RID"
if [ -z "$EPID" ]; then r="no executor container ('$EXEC'): $(tail -c 300 "$WORK/framework.log")"
else
  note "debug session under executor $EXEC (pid $EPID)"
  st="$(timeout 120 python3 "$CLIENT" session "$AGENT" "$(printf '{"type":"LAUNCH_NESTED_CONTAINER_SESSION","launch_nested_container_session":{"container_id":%s,"command":{"shell":true,"value":"%s"}}}' \
    "$(cid_json "$D" "$EXEC")" 'readlink /proc/self/ns/mnt /proc/self/ns/ipc /proc/self/ns/pid; grep Seccomp: /proc/self/status')" "ops:$OPS_SECRET" 2>&1)"
  want="$(readlink "/proc/$EPID/ns/mnt" "/proc/$EPID/ns/ipc" "/proc/$EPID/ns/pid" | tr '\n' ' ')"
  got="$(printf '%s' "${st#*| output:}" | grep -oE '(mnt|ipc|pid):\[[0-9]+\]' | tr '\n' ' ')"
  if [ "$(status_of "$st")" != 200 ]; then r="session: ${st:0:300}"
  elif [ "$got" != "$want" ]; then r="the session is in '$got', its executor in '$want'"
  elif ! printf '%s' "${st#*| output:}" | grep -q 'Seccomp:[[:space:]]*2'; then
    r="the session has no seccomp filter: ${st:0:300}"
  fi
fi
check v2-debug-session-enters-its-parent "$r"
# With a terminal: Mesos' helper makes it the controlling one, which only
# a session leader may (the wrapper's fork makes its child one).
r=ok
if [ -z "$EPID" ]; then r="no executor container"
else
  st="$(timeout 120 python3 "$CLIENT" session "$AGENT" "$(printf '{"type":"LAUNCH_NESTED_CONTAINER_SESSION","launch_nested_container_session":{"container_id":%s,"command":{"shell":true,"value":"tty"},"container":{"type":"MESOS","tty_info":{}}}}' \
    "$(cid_json "$D-tty" "$EXEC")")" "ops:$OPS_SECRET" 2>&1)"
  [ "$(status_of "$st")" = 200 ] && printf '%s' "${st#*| output:}" | grep -q /dev/pts/ ||
    r="session with a tty: ${st:0:300}"
fi
check v2-debug-session-with-a-terminal "$r"
[ -f "$WORK/framework.pid" ] && stop_pid "$(cat "$WORK/framework.pid")"

# ---- agent restart: running containers stay manageable
r=ok
stop_agent
if [ -n "$PPID_" ] && ! kill -0 "$PPID_" 2>/dev/null; then r="the pod died with the agent"; fi
if [ "$r" = ok ] && start_agent agent-recovered with; then
  # (Mesos answers 503 until its recovery ends, longer with a framework's
  # pods to recover.)
  for i in $(seq 60); do has_container "$P" && break; sleep 0.5; done
  has_container "$P" || r="$P not listed after the restart: $(call ops "$CONTAINERS" | cut -c1-200)"
  [ "$r" = ok ] && { has_container "$N2" || r="$N2 not listed after the restart"; }
  # A new nested container under the recovered parent enters its
  # namespaces through the process noted before the restart.
  N3="v2n3-$RID"
  [ "$r" = ok ] && r="$(expect x 200 ops "$(launch_json "$N3" "$P" "test \$(stat -Lc %i /proc/self/ns/ipc) = $(ns_inode "$PPID_" ipc)")")"
  if [ "$r" = ok ]; then
    w="$(call ops "$(wait_json "$N3" "$P")")"
    [ "$(body_of "$w" | json_get 'd["wait_container"].get("exit_status")')" = 0 ] ||
      r="a nested container after the restart: ${w:0:300}"
  fi
  call ops "$(remove_json "$N3" "$P")" >/dev/null
  [ "$r" = ok ] && r="$(wait_then_kill "$N2" "$P")"
  [ "$r" = ok ] && [ -n "$N2PID" ] && r="$(gone "$N2PID")"
  call ops "$(remove_json "$N2" "$P")" >/dev/null
  [ "$r" = ok ] && [ -d "$(v2_dir "$P/mesos/$N2")" ] && r="$(v2_dir "$P/mesos/$N2") left"
  [ "$r" = ok ] && r="$(wait_then_kill "$P")"
  [ "$r" = ok ] && [ -n "$PPID_" ] && r="$(gone "$PPID_")"
  [ "$r" = ok ] && [ -d "$(v2_dir "$P")" ] && r="$(v2_dir "$P") left"
elif [ "$r" = ok ]; then
  r="agent did not restart: $(agent_log_tail agent-recovered)"
fi
[ "$r" = ok ] || note "the restarted agent: $(grep -iE "$P|orphan|fail|error" "$WORK/agent-recovered.log" | grep -v "^W.*http" | head -n 12 | cut -c1-300 | tr '\n' ' ')"
check v2-recovery-keeps-containers-manageable "$r"

r=ok
for i in $(seq 50); do  # the framework's executor goes when it ends
  left="$(find "$CG/$NCG" -mindepth 1 -type d 2>/dev/null | head -3)"
  [ -z "$left" ] && break
  sleep 0.2
done
[ -n "$left" ] && r="cgroups left: $left"
check v2-destroy-leaves-no-cgroup "$r"
stop_agent

# ---- why this exists: Mesos 1.11's own cgroups isolators fail here, and
# its LinuxLauncher runs only by turning the host into a hybrid one.
failure_line() {  # the first error Mesos logged, as a one-line excerpt
  grep -m1 -E "^[EF][0-9]{4} |Failed to|Error" "$WORK/$1.log" | cut -c1-300
}
rm -rf "$WORK/agent" "$WORK/run"
r=ok
if start_agent agent-mesos-cgroups without --isolation=cgroups/cpu,cgroups/mem; then
  r="Mesos' cgroups/cpu,cgroups/mem started on a v2-only host"
else
  note "Mesos' own cgroups isolators: $(failure_line agent-mesos-cgroups)"
fi
stop_agent
check v2-mesos-own-cgroups-isolators-fail "$r"
rm -rf "$WORK/agent" "$WORK/run"
r=ok
AGENT_LAUNCHER=linux
if [ -z "${NESTGUARD_VM:-}" ]; then
  # It would mount cgroup v1 on this host: only in scripts/vm.sh's guest.
  note "Mesos' LinuxLauncher not started: not in scripts/vm.sh's guest"
elif [ -e /sys/fs/cgroup/freezer ]; then
  r="/sys/fs/cgroup/freezer exists before the check"
elif touch "$WORK/freezer-ours" && start_agent agent-mesos-linux without; then
  # It mounts a v1 freezer hierarchy of its own: inside cgroup2's tree.
  v1="$(awk '$3 == "cgroup" {print $2}' /proc/mounts | head -3 | tr '\n' ' ')"
  if [ -n "$v1" ]; then note "Mesos' LinuxLauncher started by mounting cgroup v1 at: $v1"
  else r="Mesos' LinuxLauncher started on a v2-only host without cgroup v1"; fi
else
  note "Mesos' LinuxLauncher: $(failure_line agent-mesos-linux)"
fi
stop_agent
AGENT_LAUNCHER=posix
check v2-mesos-linux-launcher-needs-cgroup-v1 "$r"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
