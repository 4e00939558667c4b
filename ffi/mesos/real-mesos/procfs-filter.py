#!/usr/bin/python3
"""Stands in front of nestguard's mesos-containerizer wrapper during the
image phase (checks-images.sh), on kernels that lack a /proc entry Mesos
1.11 bind-mounts into every image: its filesystem/linux isolator asks for a
read-only bind of <rootfs>/proc/sysrq-trigger onto itself, the launch
helper cannot create that target inside procfs, and every container with
an image fails ("Failed to create mount target .../proc/sysrq-trigger: No
such file or directory"), with or without nestguard. On a kernel without
CONFIG_MAGIC_SYSRQ there is nothing to protect there.

For `launch` with a rootfs, drops the binds of <rootfs>/proc/<x> onto
themselves whose /proc/<x> this host does not have; everything else is
passed on untouched to ng/mesos-containerizer (nestguard's wrapper, with
Mesos' binary beside it as ng/mesos-containerizer.mesos).
"""
import json
import os
import sys

ENV = "MESOS_CONTAINERIZER_LAUNCH_INFO"


def missing_proc_bind(mount, root):
    target = mount.get("target", "")
    if mount.get("source") != target or not target.startswith(root + "/proc/"):
        return False
    return not os.path.exists(target[len(root):])


def filtered(text):
    try:
        info = json.loads(text)
    except ValueError:
        return None  # Mesos' helper reports that itself
    root = (info.get("rootfs") or "").rstrip("/")
    if not root or "mounts" not in info:
        return None
    keep = [m for m in info["mounts"] if not missing_proc_bind(m, root)]
    if len(keep) == len(info["mounts"]):
        return None
    info["mounts"] = keep
    return json.dumps(info)


def main():
    real = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "ng", "mesos-containerizer")
    if sys.argv[1:2] == ["launch"] and os.environ.get(ENV):
        new = filtered(os.environ[ENV])
        if new is not None:
            os.environ[ENV] = new
    os.execv(real, [real] + sys.argv[1:])


main()
