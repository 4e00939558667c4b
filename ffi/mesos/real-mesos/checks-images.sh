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
# Under Mesos' launcher the wrapper takes the rootfs from Mesos' helper and
# nestguard's exec stage enters the image itself, after making the
# sandbox's mounts into it through descriptors (src/isolation/exec_stage/
# rootfs.rs): a container with its own image runs with every defence, its
# image's own command (docker/runtime's) or one of its own, standalone or
# nested. A debug session into it is refused (the stage is not in the
# image), with a message and no command run.

IMAGE_FLAGS=(--image_providers=docker --docker_registry="$WORK/registry"
  --image_provisioner_backend=copy
  --isolation=filesystem/linux,docker/runtime,io_nestguard_Isolator)

image_launch_json() {  # image_launch_json <id> <parent or ""> <CommandInfo json>
  printf '{"type":"LAUNCH_CONTAINER","launch_container":{"container_id":%s,"command":%s,"container":{"type":"MESOS","mesos":{"image":{"type":"DOCKER","docker":{"name":"%s"}}}}}}' \
    "$(cid_json "$1" "$2")" "$3" "$IMAGE"
}
# No value: docker/runtime makes the command the image's Entrypoint + Cmd
# (/probe /mnt/mesos/sandbox/probe.json sleep=600).
image_default_cmd() {  # image_default_cmd [user]
  if [ -n "${1:-}" ]; then printf '{"shell":false,"user":"%s"}' "$1"; else printf '{"shell":false}'; fi
}
image_start_agent() {  # image_start_agent <log name>
  start_agent "$1" with "${IMAGE_FLAGS[@]}" || return 1
  # Registered is not recovered: the v1 API answers 503 until then.
  local i
  for i in $(seq 150); do
    [ "$(status_of "$(call ops "$CONTAINERS")")" = 200 ] && return 0
    sleep 0.2
  done
  return 1
}

# The sandbox of a container of this phase on the host (standalone:
# <work_dir>/containers/<id>; nested: .../containers/<parent>/containers/<id>).
image_sandbox() {  # image_sandbox <id>
  find "$WORK/agent/containers" -maxdepth 3 -type d -name "$1" 2>/dev/null | head -1
}
# The probe's report, written inside the image to /mnt/mesos/sandbox/<file>,
# read from the sandbox on the host: "ok" or what is wrong.
image_report_ok() {  # image_report_ok <id> <file> <expected CapEff>
  local i f=""
  for i in $(seq 100); do
    f="$(image_sandbox "$1")/$2"
    [ -s "$f" ] && break
    sleep 0.2
  done
  [ -s "$f" ] || {
    echo "no report $2 in the sandbox of $1; its stderr: $(tail -c 400 "$(image_sandbox "$1")/stderr" 2>/dev/null | tr '\n' ' ')"
    return
  }
  cp "$f" "$REPORTS/$1.json"
  report_ok "$1" "$3"
}

image_checks() {
  local r st
  # The image's own command (Entrypoint + Cmd: the probe, then sleep), as root.
  r="$(expect x 200 ops "$(image_launch_json "$IMGD" "" "$(image_default_cmd)")")"
  [ "$r" = ok ] && r="$(image_report_ok "$IMGD" probe.json "$DEFAULT_CAPS")"
  check iso-image-defences "$r"
  # A debug session into it: refused by the wrapper, naming the image; the
  # probe never runs.
  st="$(python3 "$CLIENT" session "$AGENT" "$(printf '{"type":"LAUNCH_NESTED_CONTAINER_SESSION","launch_nested_container_session":{"container_id":%s,"command":{"shell":false,"value":"/probe","arguments":["probe","/mnt/mesos/sandbox/debug.json"]}}}' \
    "$(cid_json "$IMGS" "$IMGD")")" "ops:$OPS_SECRET" 2>&1)"
  r=ok
  grep -q "image" <<<"$st" || r="the session's answer does not say why: ${st:0:300}"
  sleep 0.5
  [ -e "$(image_sandbox "$IMGD")/debug.json" ] && r="the debug session's command ran"
  check iso-image-debug-session-refused "$r"
  # A command of its own (no shell in the image), exit status 3 to WAIT.
  st="$(launch_and_wait "$IMGV" "$(image_launch_json "$IMGV" "" \
    '{"shell":false,"value":"/probe","arguments":["probe","/mnt/mesos/sandbox/p.json","sleep=2","exit=3"]}')")"
  [ "$st" = "ok 768" ] && r="$(image_report_ok "$IMGV" p.json "$DEFAULT_CAPS")" ||
    r="WAIT: ${st:-nothing}, wanted exit_status 768"
  check iso-image-own-command "$r"
  # A nested container with an image under a plain standalone parent, as nobody.
  r="$(expect x 200 ops "$(launch_json "$IMGR" "" "exec sleep 600")")"
  [ "$r" = ok ] && r="$(expect x 200 ops "$(image_launch_json "$IMGN" "$IMGR" "$(image_default_cmd nobody)")")"
  [ "$r" = ok ] && r="$(image_report_ok "$IMGN" probe.json "$ZERO_CAPS")"
  check iso-image-nested-defences "$r"
  has_container "$IMGR" && wait_then_kill "$IMGR" >/dev/null
  image_restart_checks
}

# After an agent restart: the image container recovered keeps its defences
# (its probe, sleeping inside the image), and a new one gets them.
image_restart_checks() {
  local r
  kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
  if ! image_start_agent agent-images-recovered; then
    for c in iso-image-recovered-keep-defences iso-image-defences-after-restart; do
      fail "$c" "agent with image flags did not restart: $(agent_log_tail agent-images-recovered)"
    done
    return
  fi
  r=ok
  has_container "$IMGD" || r="$IMGD not listed after recovery"
  [ "$r" = ok ] && r="$(sleeps_keep_defences "$IMGD" probe)"
  check iso-image-recovered-keep-defences "$r"
  r="$(expect x 200 ops "$(image_launch_json "$IMGA" "" "$(image_default_cmd)")")"
  [ "$r" = ok ] && r="$(image_report_ok "$IMGA" probe.json "$DEFAULT_CAPS")"
  check iso-image-defences-after-restart "$r"
}

# Every container of the phase ends; nothing listed afterwards.
image_cleanup() {
  local c i
  for c in "$IMGR" "$IMGD" "$IMGV" "$IMGA"; do
    has_container "$c" && wait_then_kill "$c" >/dev/null
  done
  for i in $(seq 50); do
    [ -z "$(containers | json_get '[c for c in d["get_containers"].get("containers",[])] or None')" ] && break
    sleep 0.2
  done
  stop_agent
  unmount_under "$WORK/agent"  # filesystem/linux's bind of the work dir
}

IMGD="img-$RID"; IMGV="img-v-$RID"; IMGN="img-n-$RID"; IMGR="img-parent-$RID"; IMGS="img-s-$RID"
IMGA="img-a-$RID"
IMAGE_CHECKS="iso-image-defences iso-image-debug-session-refused iso-image-own-command
  iso-image-nested-defences iso-image-recovered-keep-defences iso-image-defences-after-restart"
stop_agent
rm -rf "$WORK/agent" "$WORK/run"
MODULES_FILE=""  # the run's modules.json (the phase before used acls/modules.json)
if [ -n "$IMAGE_ERR" ]; then
  for c in $IMAGE_CHECKS; do fail "$c" "no image: $IMAGE_ERR"; done
elif ! image_start_agent agent-images; then
  for c in $IMAGE_CHECKS; do fail "$c" "agent with image flags did not start: $(agent_log_tail agent-images)"; done
  stop_agent
  unmount_under "$WORK/agent"
else
  image_checks
  image_cleanup
fi
