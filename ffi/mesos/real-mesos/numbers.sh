# numbers (sourced by checks.sh): LAUNCH_CONTAINER -> WAIT_CONTAINER of
# /bin/true, standalone, NUMBERS_N times per configuration: the real agent
# (LinuxLauncher + mesos-containerizer launch) without and with the nestguard
# modules (every defence on), and `nestguard agent` (linux launcher,
# nestguard-launch).
#
# Mesos learns of a container's exit by polling (libprocess' reaper, every
# 100 ms), so one launch's time is its real time rounded up to the next poll,
# and launches made one after the other start in step with the poll: a median
# jumps between 100 and 200 ms. So each launch starts after a random pause
# (client.py bench; every time gains 50 ms on average, alike for all agents),
# the mean of many launches is what moves with a real cost, and the two Mesos
# agents run NUMBERS_ROUNDS rounds in turn (plain, nestguard, plain, ...: load
# on the machine falls on both alike); the ratio compares means.
N="${NUMBERS_N:-100}"
ROUNDS="${NUMBERS_ROUNDS:-4}"
PER=$(( (N + ROUNDS - 1) / ROUNDS ))
declare -A NUM
bench() {  # bench <name> <host:port> <round> [user:secret]
  local out; out="$(python3 "$CLIENT" bench "$2" "$PER" "b-$1-$3-$RID" "$WORK/samples-$1" ${4:-} 2>&1)"
  [ "$out" = ok ] || { NUM[$1]="error"; note "bench $1: $out"; }
}
rm -f "$WORK"/samples-*
MODULES_FILE=""
for round in $(seq "$ROUNDS"); do
  rm -rf "$WORK/agent" "$WORK/run"
  if start_agent agent-bench-plain without; then bench mesos-plain "$AGENT" "$round"; else NUM[mesos-plain]=error; fi
  stop_agent
  rm -rf "$WORK/agent" "$WORK/run"
  if start_agent agent-bench-nestguard with; then bench mesos-nestguard "$AGENT" "$round" "ops:$OPS_SECRET"; else NUM[mesos-nestguard]=error; fi
  stop_agent
done
NGP=$(free_port)
"$NG/nestguard" agent --work_dir="$WORK/ngagent" --ip=127.0.0.1 --port="$NGP" --launcher=linux \
  --cgroups_root="$NCG-ng" --library="$NG/libnestguard.so" >"$WORK/nestguard-agent.log" 2>&1 &
NGPID=$!; record_pid "$NGPID"
PER=$N
if wait_http "127.0.0.1:$NGP" 30; then bench nestguard-agent "127.0.0.1:$NGP" 1; else NUM[nestguard-agent]=error; fi
stop_pid "$NGPID"
for d in $(find "$CG"/*/"$NCG-ng" -type d 2>/dev/null | awk '{print length($0) " " $0}' | sort -rn | cut -d' ' -f2-); do
  rmdir "$d" 2>/dev/null
done
printf '%-44s %5s %10s %8s %8s\n' "LAUNCH_CONTAINER -> WAIT_CONTAINER, /bin/true" "n" "median ms" "p90 ms" "mean ms"
r=ok
declare -A MEAN
for k in mesos-plain mesos-nestguard nestguard-agent; do
  v="${NUM[$k]:-}"
  [ "$v" != error ] && [ -s "$WORK/samples-$k" ] && v="$(python3 "$CLIENT" summary "$WORK/samples-$k")" || v="0 error - -"
  [ "$(cut -d' ' -f2 <<<"$v")" = error ] && r="no number for $k (see $k log)"
  MEAN[$k]="$(cut -d' ' -f4 <<<"$v")"
  printf '%-44s %5s %10s %8s %8s\n' "$k" $v
done
if [ "$r" = ok ]; then
  ratio="$(python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) / float(sys.argv[1])))' "${MEAN[mesos-plain]}" "${MEAN[mesos-nestguard]}")"
  printf '%-44s %s\n' "mesos-nestguard / mesos-plain (means)" "${ratio}x"
fi
check numbers "$r"
