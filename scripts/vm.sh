#!/usr/bin/env bash
# Runs a command inside a QEMU guest that boots Debian's kernel with cgroup2
# alone at /sys/fs/cgroup (every controller available there): the cgroup
# v2-only host that current distributions are, on a machine that is hybrid.
#
#   scripts/vm.sh [--] <command> [args...]
#
# The guest sees this machine's file system read-only (9p, by virtme-ng)
# with writable overlays kept in guest memory: /etc, /usr, /var, /tmp, /home
# (virtme-ng's) and the repository's parent directory (ours), so a guest
# writes nothing to the host; TMPDIR is a directory of the guest's tmpfs.
# It runs the command as root with bash, in the directory this was called
# from, and exits with the command's status; its output is the guest
# console (kernel messages are kept off it).
#
# Environment:
#   VM_KERNEL   the kernel (default: the newest /boot/vmlinuz-*)
#   VM_MEMORY   guest memory (default 3G);  VM_CPUS  vCPUs (default 2)
#   VM_TIMEOUT  seconds before the guest is killed (default 1800)
#   VM_ACCEL    auto (default: KVM if a short probe boots, else TCG), kvm, tcg
#   VM_RW       more directories made writable in the guest (space-separated)
#   VNG         the vng command (default: a venv under ~/.cache/nestguard-vm)
#
# Installs what it lacks (Debian's qemu-system-x86 and linux-image-amd64,
# virtme-ng from PyPI) when run as root. Leaves nothing behind: the QEMU
# process group is killed on exit, and the overlays live in guest memory.
# Exit status: the command's; 124 on timeout; 125 when the VM cannot start.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
VNG_VERSION=1.42
VM_MEMORY="${VM_MEMORY:-3G}"
VM_CPUS="${VM_CPUS:-2}"
VM_TIMEOUT="${VM_TIMEOUT:-1800}"
VM_ACCEL="${VM_ACCEL:-auto}"
say() { echo "vm.sh: $*" >&2; }
die() { say "$*"; exit 125; }

[ "$#" -gt 0 ] || die "usage: vm.sh [--] <command> [args...]"
[ "$1" = -- ] && shift

install_deps() {
  local missing=()
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86 seabios ipxe-qemu)
  compgen -G '/boot/vmlinuz-*' >/dev/null || missing+=(linux-image-amd64)
  if [ "${#missing[@]}" -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]} (install them, or run as root)"
    say "installing ${missing[*]}"
    apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
  fi
  if [ -z "${VNG:-}" ]; then
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/nestguard-vm/venv-$VNG_VERSION"
    if [ ! -x "$venv/bin/vng" ]; then
      say "installing virtme-ng $VNG_VERSION into $venv"
      rm -rf "$venv"
      python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q "virtme-ng==$VNG_VERSION" >&2 ||
        { rm -rf "$venv"; die "pip install virtme-ng==$VNG_VERSION failed"; }
    fi
    VNG="$venv/bin/vng"
    # vng runs virtme-run from PATH.
    export PATH="$venv/bin:$PATH"
  fi
}
install_deps

if [ -z "${VM_KERNEL:-}" ]; then
  VM_KERNEL="$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)"
fi
[ -r "$VM_KERNEL" ] || die "no readable kernel at '${VM_KERNEL}'"

# The command goes to the guest as a script file (no quoting through
# vng's --exec), with a prelude that proves the host is v2-only.
tmp="$(mktemp -d "${TMPDIR:-/tmp}/nestguard-vm.XXXXXX")"
chmod 755 "$tmp"
pgid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$pgid" ] && kill -0 -- "-$pgid" 2>/dev/null; then
    kill -TERM -- "-$pgid" 2>/dev/null; sleep 1; kill -KILL -- "-$pgid" 2>/dev/null
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

printf '%q ' "$@" >"$tmp/command"
cat >"$tmp/guest.sh" <<'GUEST'
#!/bin/bash
# Inside the guest: refuse to run unless cgroup2 alone holds the controllers.
# One stream: vng relays the guest's stderr apart and loses bytes of it.
exec 2>&1
fstype="$(stat -fc %T /sys/fs/cgroup)"
if [ "$fstype" != cgroup2fs ] || grep -q ' cgroup ' /proc/mounts; then
  echo "vm.sh: the guest is not a cgroup v2-only host (/sys/fs/cgroup is $fstype)" >&2
  exit 125
fi
echo "vm.sh: guest kernel $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)" >&2
command="$(cat "$2")"
# Temporary files on one file system (the guest's tmpfs /run), not on
# virtme-ng's overlay of /tmp, whose files report another device than
# their directories (so `du -x` style walks, like the disk/du isolator's,
# skip them). Not a tmpfs over /tmp: the repository may be below it.
mkdir -p -m 1777 /run/nestguard-vm-tmp && chmod 1777 /run/nestguard-vm-tmp || exit 125
export TMPDIR=/run/nestguard-vm-tmp
cd "$1" || exit 125
# Scripts that would change a real host (ffi/mesos/real-mesos/checks-v2.sh)
# know they run in a throw-away guest.
export NESTGUARD_VM=1
eval "$command"
GUEST
chmod 755 "$tmp/guest.sh"

# The guest boots with this run's options; returns vng's status.
boot() {  # boot <accel: kvm|tcg> <timeout> <guest command>
  local accel="$1" limit="$2" rw=(--overlay-rwdir="$(dirname "$repo")") d
  for d in ${VM_RW:-}; do rw+=(--overlay-rwdir="$d"); done
  local args=(--run "$VM_KERNEL" --memory "$VM_MEMORY" --cpus "$VM_CPUS" "${rw[@]}"
    --append "quiet loglevel=1" --exec "$3")
  [ "$accel" = tcg ] && args=(--disable-kvm "${args[@]}")
  # Through a pipe: virtme-ng reopens its output, so a file shared with
  # this script's own messages would be written at two offsets.
  setsid bash -c 'timeout --kill-after=10 "$@" | cat; exit "${PIPESTATUS[0]}"' vm \
    "$limit" "$VNG" "${args[@]}" </dev/null &
  pgid=$!
  wait "$pgid"
  local rc=$?
  pgid=""
  return "$rc"
}

accel="$VM_ACCEL"
if [ "$accel" = auto ]; then
  accel=tcg
  # KVM boots here but may hang early (seen: right after "Probing EDD"): a
  # guest that does not answer within 20 s means TCG.
  if [ -w /dev/kvm ] && boot kvm 20 true >/dev/null 2>&1; then accel=kvm; fi
fi
say "booting $(basename "$VM_KERNEL") ($accel, $VM_CPUS vCPUs, $VM_MEMORY)"
start=$(date +%s)
boot "$accel" "$VM_TIMEOUT" "$tmp/guest.sh $(printf '%q' "$PWD") $tmp/command"
rc=$?
say "guest exited with status $rc after $(( $(date +%s) - start )) s"
[ "$rc" = 124 ] && say "timed out after $VM_TIMEOUT s"
exit "$rc"
