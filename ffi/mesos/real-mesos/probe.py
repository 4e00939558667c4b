#!/usr/bin/env python3
"""Run inside a container by checks-isolation.sh: writes what a hostile
tenant would try, as JSON, to the file named by its first argument.

Fields: the Seccomp/NoNewPrivs/Cap* lines of /proc/self/status; the errno
of unshare(CLONE_NEWUSER), keyctl(KEYCTL_JOIN_SESSION_KEYRING) and
mount(tmpfs) (0 when the call succeeded); the mount options of /proc/sys
and /sys; the uid."""
import ctypes
import json
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)


def errno_of(rc):
    return 0 if rc == 0 else ctypes.get_errno()


status = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    if k in ("Seccomp", "NoNewPrivs", "CapEff", "CapBnd", "CapAmb", "CapPrm"):
        status[k] = v.strip()
CLONE_NEWUSER = 0x10000000
SYS_keyctl = 250  # x86-64
out = {
    "status": status,
    "uid": os.getuid(),
    "keyctl": errno_of(libc.syscall(SYS_keyctl, 1, None)),  # KEYCTL_JOIN_SESSION_KEYRING
    # Onto a directory of the run's own (removed, and unmounted, by run.sh).
    "mount": errno_of(libc.mount(b"none", os.path.dirname(sys.argv[1]).encode() + b"/mnt",
                                 b"tmpfs", 0, None)),
}
# unshare last: it would change this process if it succeeded.
pid = os.fork()
if pid == 0:
    os._exit(errno_of(libc.unshare(CLONE_NEWUSER)))
out["unshare_user"] = os.waitpid(pid, 0)[1] >> 8
mounts = {}
for line in open("/proc/self/mountinfo"):
    f = line.split()
    mounts[f[4]] = f[5]
out["proc_sys"] = mounts.get("/proc/sys", "")
out["sys"] = mounts.get("/sys", "")
with open(sys.argv[1] + ".tmp", "w") as fh:
    json.dump(out, fh)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
