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
# Under Mesos' launcher nestguard cannot yet confine a container inside its
# image (Mesos' helper makes mounts an image or a volume can steer before it
# runs the stage; see the closing note of issue #24): such a container is
# refused, with a message, and nothing of it is left. The probe image
# stays for the checks of the confined launch.

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

# ---- iso-image-refused (standalone, the image's command and one of its
# own) and iso-image-nested-refused (under a plain parent, as nobody)
image_refused() {  # image_refused <id> <parent or ""> <CommandInfo json>: ok or why not
  local st r=ok
  st="$(call ops "$(image_launch_json "$1" "$2" "$3")")"
  [ "$(status_of "$st")" = 200 ] && r="launched: ${st:0:200}"
  [ "$r" = ok ] && ! grep -q "rootfs" <<<"$st" && r="answer does not say why: ${st:0:300}"
  sleep 0.5
  [ "$r" = ok ] && has_container "$1" && r="GET_CONTAINERS lists $1"
  [ "$r" = ok ] && [ -n "$(cgroup_dirs_named "$1")" ] && r="cgroup left: $(cgroup_dirs_named "$1" | head -1)"
  [ "$r" = ok ] && [ -n "$(find "$WORK/agent/provisioner/containers" -maxdepth 1 -name "$1" 2>/dev/null)" ] &&
    r="provisioned rootfs left for $1"
  echo "$r"
}
image_checks() {
  local r
  r="$(image_refused "$IMGD" "" "$(image_default_cmd)")"
  [ "$r" = ok ] && r="$(image_refused "$IMGV" "" '{"shell":false,"value":"/probe","arguments":["probe","/mnt/mesos/sandbox/p.json"]}')"
  check iso-image-refused "$r"
  # A nested container with an image under a plain standalone parent.
  r="$(expect x 200 ops "$(launch_json "$IMGR" "" "exec sleep 600")")"
  [ "$r" = ok ] && r="$(image_refused "$IMGN" "$IMGR" "$(image_default_cmd nobody)")"
  check iso-image-nested-refused "$r"
  has_container "$IMGR" && wait_then_kill "$IMGR" >/dev/null
}

# Every container of the phase ends; nothing listed afterwards.
image_cleanup() {
  local c i
  for c in "$IMGR" "$IMGD" "$IMGV"; do
    has_container "$c" && wait_then_kill "$c" >/dev/null
  done
  for i in $(seq 50); do
    [ -z "$(containers | json_get '[c for c in d["get_containers"].get("containers",[])] or None')" ] && break
    sleep 0.2
  done
  stop_agent
  unmount_under "$WORK/agent"  # filesystem/linux's bind of the work dir
}

IMGD="img-$RID"; IMGV="img-v-$RID"; IMGN="img-n-$RID"; IMGR="img-parent-$RID"
IMAGE_CHECKS="iso-image-refused iso-image-nested-refused"
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
