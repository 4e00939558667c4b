# Load check (sourced by run.sh right after the agent with the nestguard
# modules has started, before checks.sh: uses run.sh's helpers and agent).
#
# LOAD_N standalone containers (default 40, own cgroups) each fill their
# sandbox with LOAD_FILES files (default 3000); for LOAD_SECONDS (default 20)
# eight clients call GET_CONTAINERS back to back, so the agent asks the
# isolator for every container's usage and status all the time, while
# GET /health is timed every 100 ms. The agent stays responsive when the
# isolator's calls hold no libprocess worker and usage() walks no sandbox:
# `load-health-under-50ms` wants the 95th percentile of /health under 50 ms
# (the maximum is printed; a shared machine's scheduler can delay any one
# request). Then every container is killed and none may be left listed or
# in a cgroup.
load_out="$(python3 "$here/load.py" "$AGENT" "ops:$OPS_SECRET" "load-$RID" \
  "${LOAD_N:-40}" "${LOAD_FILES:-3000}" "${LOAD_SECONDS:-20}" 2>"$WORK/load.log")"
note "load: $load_out"
load_val() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$load_out"; }
if [[ "$load_out" != launched=* ]]; then
  fail load-launch "${load_out:-no output: $(tail -n 2 "$WORK/load.log" | tr '\n' ' ')}"
  fail load-health-under-50ms "no load run"
else
  pass load-launch
  r=ok
  p95="$(load_val health_p95)"
  awk -v v="$p95" 'BEGIN { exit !(v >= 0 && v < 50) }' ||
    r="/health p95 $p95 ms (median $(load_val health_median), max $(load_val health_max)) over $(load_val health_samples) samples"
  [ "$(load_val errors)" = 0 ] || r="$r; $(load_val errors) errors: $(load_val first_error)"
  check load-health-under-50ms "$r"
fi
r=ok
[ "$(load_val left)" = 0 ] || r="$(load_val left) containers still listed"
d="$(find "$CG"/*/"$MCG" "$CG"/*/"$NCG" -type d -name "load-$RID-*" 2>/dev/null | head -3 | tr '\n' ' ')"
[ -n "$d" ] && r="cgroups left: $d"
check load-cleanup "$r"
