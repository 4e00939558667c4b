# The image phase of run.sh (sourced by checks.sh after modules-json-acls:
# uses the helpers of run.sh, checks.sh and checks-isolation.sh). Containers
# with their own docker image: $IMAGE, which run.sh builds with image.py and
# which holds only the static probe (probe.c), no shell. The agent runs with
# Mesos' image flags: the docker provisioner reads the archive from
# $WORK/registry (image tar puller) and copies the layer into a rootfs per
# container; Mesos requires its own filesystem/linux isolator for a rootfs,
# and docker/runtime turns the image's Entrypoint/Cmd/Env into the launch's
# command (Mesos runs builtin isolators before module isolators).
#
# Every container must run under the same defences as without an image:
# seccomp, the bounding set, no_new_privs, read-only /proc/sys and /sys, no
# user namespace, keyring or mount; and across an agent restart.

IMAGE_FLAGS=(--image_providers=docker --docker_registry="$WORK/registry"
  --image_provisioner_backend=copy
  --isolation=filesystem/linux,docker/runtime,io_nestguard_Isolator)
IMG_SANDBOX=/mnt/mesos/sandbox  # the sandbox inside an image container (MESOS_SANDBOX)

image_launch_json() {  # image_launch_json <id> <parent or ""> <CommandInfo json>
  printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":%s,"container":{"type":"MESOS","mesos":{"image":{"type":"DOCKER","docker":{"name":"%s"}}}}}}' \
    "$(cid_json "$1" "$2")" "$3" "$IMAGE"
}
# No value: docker/runtime makes the command the image's Entrypoint + Cmd
# (/probe /mnt/mesos/sandbox/probe.json sleep=600).
image_default_cmd() {  # image_default_cmd [user]
  if [ -n "${1:-}" ]; then printf '{"shell":false,"user":"%s"}' "$1"; else printf '{"shell":false}'; fi
}
# The container's sandbox on the host (standalone: containers/<id>, nested:
# containers/<parent>/containers/<id>).
host_sandbox() {  # host_sandbox <id>
  find "$WORK/agent/containers" -type d -name "$1" 2>/dev/null | head -n1
}
image_report_ok() {  # image_report_ok <id> <expected CapEff> [report file name]
  local d i
  for i in $(seq 100); do d="$(host_sandbox "$1")"; [ -n "$d" ] && break; sleep 0.2; done
  [ -n "$d" ] || { echo "no sandbox for $1 under $WORK/agent/containers"; return; }
  report_ok "$d/${3:-probe.json}" "$2"
}
# Why a launch failed, from the agent's log (the refusal's reason).
image_log_reason() {  # image_log_reason <id> <log name>
  grep -m1 -E "$1.*(Fail|fail|refus|error)" "$WORK/$2.log" 2>/dev/null | cut -d] -f2- | cut -c1-300
}
image_launch_ok() {  # image_launch_ok <id> <parent or ""> <CommandInfo json> <who> <expected CapEff> [report]
  local r
  r="$(expect x 200 "$4" "$(image_launch_json "$1" "$2" "$3")")"
  [ "$r" = ok ] || { echo "$r"; return; }
  r="$(image_report_ok "$1" "$5" "${6:-}")"
  [ "$r" = ok ] || r="$r; agent: $(image_log_reason "$1" "$IMG_LOG")"
  echo "$r"
}
image_procs() { cat "$CG/freezer/$MCG/$1/cgroup.procs" 2>/dev/null; }

# Mesos 1.11 cannot start any image container on a kernel without
# /proc/sysrq-trigger (see procfs-filter.py): for this phase only, the
# filter goes in front of nestguard's wrapper in the launcher dir.
image_procfs_filter() {  # image_procfs_filter on|off
  [ -e /proc/sysrq-trigger ] && return 0
  if [ "$1" = on ]; then
    note "no /proc/sysrq-trigger: procfs-filter.py in front of the wrapper for the image phase"
    mkdir -p "$LAUNCHER/ng"
    mv "$LAUNCHER/mesos-containerizer" "$LAUNCHER/ng/mesos-containerizer"
    ln -sf "$BIN/mesos-containerizer" "$LAUNCHER/ng/mesos-containerizer.mesos"
    cp "$here/procfs-filter.py" "$LAUNCHER/mesos-containerizer"
    chmod 755 "$LAUNCHER/ng" "$LAUNCHER/mesos-containerizer"
  elif [ -e "$LAUNCHER/ng/mesos-containerizer" ]; then
    mv -f "$LAUNCHER/ng/mesos-containerizer" "$LAUNCHER/mesos-containerizer"
    rm -rf "$LAUNCHER/ng"
  fi
}

image_start_agent() {  # image_start_agent <log name>
  IMG_LOG="$1"
  start_agent "$1" with "${IMAGE_FLAGS[@]}" || return 1
  # Registered is not recovered: the v1 API answers 503 until then.
  local i
  for i in $(seq 150); do
    [ "$(status_of "$(call ops "$CONTAINERS")")" = 200 ] && return 0
    sleep 0.2
  done
  return 1
}

# ---- iso-image-defences / -command-value / -nested-defences / -kill
image_checks() {
  local r st
  # The image's Entrypoint and Cmd, merged by docker/runtime, as root.
  check iso-image-defences "$(image_launch_ok "$IMGD" "" "$(image_default_cmd)" ops "$DEFAULT_CAPS")"
  # The launch's own value and arguments (docker/runtime leaves them): the
  # probe sleeps 3 s after its report, so that WAIT is in before it exits 3
  # (raw status 768; a standalone container's termination is gone once it
  # is destroyed).
  local cv="{\"shell\":false,\"value\":\"/probe\",\"arguments\":[\"probe\",\"$IMG_SANDBOX/cv.json\",\"sleep=3\",\"exit=3\"]}"
  r="$(image_launch_ok "$IMGV" "" "$cv" ops "$DEFAULT_CAPS" cv.json)"
  if [ "$r" = ok ]; then
    call ops "$(wait_json "$IMGV")" >"$WORK/$IMGV-wait.out"
    st="$(body_of "$(cat "$WORK/$IMGV-wait.out")" | json_get '"ok %s" % d["wait_container"].get("exit_status")')"
    [ "$st" = "ok 768" ] || r="WAIT: ${st:-$(head -c 300 "$WORK/$IMGV-wait.out")}, wanted exit_status 768"
  fi
  check iso-image-command-value "$r"
  image_nested_check
  image_kill_check
}

# A nested container with its own image under the standalone image
# container $IMGD, as nobody (the wrapper resolves the user on the host;
# the image has no /etc/passwd): no capability left.
image_nested_check() {
  local r
  if ! has_container "$IMGD"; then
    check iso-image-nested-defences "no parent: $IMGD is not running (see iso-image-defences)"
    return
  fi
  r="$(image_launch_ok "$IMGN" "$IMGD" "$(image_default_cmd nobody)" ops "$ZERO_CAPS")"
  check iso-image-nested-defences "$r"
  call ops "$(kill_json "$IMGN" "$IMGD")" >/dev/null
  call ops "$(wait_json "$IMGN" "$IMGD")" >/dev/null
  call ops "$(remove_json "$IMGN" "$IMGD")" >/dev/null
}

# KILL of the sleeping image container ends every process of it.
image_kill_check() {
  local r=ok i
  [ -n "$(image_procs "$IMGD")" ] || r="$IMGD has no process (see iso-image-defences)"
  [ "$r" = ok ] && r="$(wait_then_kill "$IMGD")"
  if [ "$r" = ok ]; then
    for i in $(seq 50); do [ -z "$(image_procs "$IMGD")" ] && break; sleep 0.2; done
    [ -n "$(image_procs "$IMGD")" ] && r="processes left in freezer/$MCG/$IMGD: $(image_procs "$IMGD" | tr '\n' ' ')"
  fi
  check iso-image-kill "$r"
}

# ---- across an agent restart (kill -9, same flags)
image_recovery_checks() {
  local r=ok pids now
  r="$(image_launch_ok "$IMGR" "" "$(image_default_cmd)" ops "$DEFAULT_CAPS")"
  pids="$(image_procs "$IMGR" | sort | tr '\n' ' ')"
  kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
  if ! image_start_agent agent-images-recovered; then
    fail iso-image-recovered-keep-defences "agent did not restart: $(agent_log_tail agent-images-recovered)"
    fail iso-image-defences-after-restart "agent did not restart"
    return
  fi
  if [ "$r" != ok ]; then r="before the restart: $r"
  else
    now="$(image_procs "$IMGR" | sort | tr '\n' ' ')"
    has_container "$IMGR" || r="$IMGR not listed after recovery"
    [ "$r" = ok ] && [ "$now" != "$pids" ] && r="processes changed: $pids -> ${now:-none}"
    [ "$r" = ok ] && r="$(sleeps_keep_defences "$IMGR" probe)"
  fi
  check iso-image-recovered-keep-defences "$r"
  check iso-image-defences-after-restart "$(image_launch_ok "$IMGA" "" "$(image_default_cmd)" ops "$DEFAULT_CAPS")"
}

# Every container of the phase ends; nothing listed afterwards.
image_cleanup() {
  local c i
  for c in "$IMGR" "$IMGA" "$IMGD" "$IMGV"; do
    has_container "$c" && wait_then_kill "$c" >/dev/null
  done
  for i in $(seq 50); do
    [ -z "$(containers | json_get '[c for c in d["get_containers"].get("containers",[])] or None')" ] && break
    sleep 0.2
  done
  stop_agent
  unmount_under "$WORK/agent"  # filesystem/linux's bind of the work dir
}

IMGD="img-$RID"; IMGV="img-v-$RID"; IMGN="img-n-$RID"; IMGR="img-rec-$RID"; IMGA="img-a-$RID"
IMAGE_CHECKS="iso-image-defences iso-image-command-value iso-image-nested-defences iso-image-kill
  iso-image-recovered-keep-defences iso-image-defences-after-restart"
stop_agent
rm -rf "$WORK/agent" "$WORK/run"
MODULES_FILE=""  # the run's modules.json (the phase before used acls/modules.json)
image_procfs_filter on
if [ -n "$IMAGE_ERR" ]; then
  for c in $IMAGE_CHECKS; do fail "$c" "no image: $IMAGE_ERR"; done
elif ! image_start_agent agent-images; then
  for c in $IMAGE_CHECKS; do fail "$c" "agent with image flags did not start: $(agent_log_tail agent-images)"; done
  stop_agent
  unmount_under "$WORK/agent"
else
  image_checks
  image_recovery_checks
  image_cleanup
fi
image_procfs_filter off
