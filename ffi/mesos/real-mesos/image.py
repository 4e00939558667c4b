#!/usr/bin/env python3
"""Writes a one-layer docker image archive for Mesos' image tar puller
(agent --docker_registry=<dir>: image <name> is read from <dir>/<name>.tar),
laid out as `docker save` (v1) does:

  repositories         {"<name>": {"latest": "<layer id>"}}
  <layer id>/VERSION   "1.0"
  <layer id>/json      the v1 manifest: id, no parent, config
  <layer id>/layer.tar the root filesystem: /probe and nothing else

The image has no shell and no other file: Mesos' filesystem/linux isolator
and launch helper make every mount point (/proc, /sys, /dev, /tmp,
/mnt/mesos/sandbox) in the copied rootfs themselves. Its command is
Entrypoint ["/probe"] with Cmd [<report in the sandbox>, "sleep=600"].

  image.py <static probe binary> <registry dir> <name>
"""
import hashlib
import io
import json
import os
import sys
import tarfile

SANDBOX = "/mnt/mesos/sandbox"  # the agent's --sandbox_directory default


def add_bytes(tar, name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def add_dir(tar, name):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
    tar.addfile(info)


def layer_tar(probe):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        with open(probe, "rb") as f:
            add_bytes(tar, "probe", f.read(), 0o755)
    return buf.getvalue()


def manifest(layer_id, name):
    config = {
        "Entrypoint": ["/probe"],
        "Cmd": [SANDBOX + "/probe.json", "sleep=600"],
        "Env": ["NGPROBE_IMAGE=" + name],
    }
    return {"id": layer_id, "created": "1970-01-01T00:00:00Z", "config": config,
            "container_config": config, "architecture": "amd64", "os": "linux"}


def main(probe, registry, name):
    layer = layer_tar(probe)
    layer_id = hashlib.sha256(layer).hexdigest()
    os.makedirs(registry, exist_ok=True)
    out = os.path.join(registry, name + ".tar")
    with tarfile.open(out + ".tmp", mode="w", format=tarfile.USTAR_FORMAT) as tar:
        add_bytes(tar, "repositories", json.dumps({name: {"latest": layer_id}}).encode())
        add_dir(tar, layer_id)
        add_bytes(tar, layer_id + "/VERSION", b"1.0")
        add_bytes(tar, layer_id + "/json", json.dumps(manifest(layer_id, name)).encode())
        add_bytes(tar, layer_id + "/layer.tar", layer)
    os.rename(out + ".tmp", out)
    print(layer_id)


if __name__ == "__main__":
    main(*sys.argv[1:4])
