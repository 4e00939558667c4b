# numbers (sourced by checks.sh): LAUNCH_CONTAINER -> WAIT_CONTAINER of
# /bin/true, standalone, NUMBERS_N times per configuration: the real agent
# (LinuxLauncher + mesos-containerizer launch) without and with the nestguard
# modules, and `nestguard agent` (linux launcher, nestguard-launch).
N="${NUMBERS_N:-10}"
declare -A NUM
bench() {  # bench <name> <host:port> [user:secret]
  local out; out="$(python3 "$CLIENT" bench "$2" "$N" "b-$1-$RID" ${3:-} 2>&1)"
  if [[ "$out" =~ ^[0-9]+\ [0-9]+$ ]]; then NUM[$1]="$out"; else NUM[$1]="error"; note "bench $1: $out"; fi
}
rm -rf "$WORK/agent" "$WORK/run"
MODULES_FILE=""
if start_agent agent-bench-plain without; then bench mesos-plain "$AGENT"; fi
stop_agent
rm -rf "$WORK/agent" "$WORK/run"
if start_agent agent-bench-nestguard with; then bench mesos-nestguard "$AGENT" "ops:$OPS_SECRET"; fi
stop_agent
NGP=$(free_port)
"$NG/nestguard" agent --work_dir="$WORK/ngagent" --ip=127.0.0.1 --port="$NGP" --launcher=linux \
  --cgroups_root="$NCG-ng" --library="$NG/libnestguard.so" >"$WORK/nestguard-agent.log" 2>&1 &
NGPID=$!; record_pid "$NGPID"
if wait_http "127.0.0.1:$NGP" 30; then bench nestguard-agent "127.0.0.1:$NGP"; fi
stop_pid "$NGPID"
for d in $(find "$CG"/*/"$NCG-ng" -type d 2>/dev/null | awk '{print length($0) " " $0}' | sort -rn | cut -d' ' -f2-); do
  rmdir "$d" 2>/dev/null
done
printf '%-44s %10s %8s\n' "LAUNCH_CONTAINER -> WAIT_CONTAINER, /bin/true (n=$N)" "median ms" "p90 ms"
r=ok
for k in mesos-plain mesos-nestguard nestguard-agent; do
  v="${NUM[$k]:-error}"
  [ "$v" = error ] && r="no number for $k (see $k log)"
  printf '%-44s %10s %8s\n' "$k" ${v/error/error -}
done
check numbers "$r"
