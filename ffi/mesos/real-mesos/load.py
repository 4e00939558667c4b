#!/usr/bin/env python3
"""Load driver of the real-Mesos load check (load.sh; stdlib only).

  load.py <agent host:port> <user:secret> <prefix> <n> <files> <seconds>

Launches <n> standalone containers (own cgroups, 32 MB each) whose command
fills its sandbox with <files> empty files and sleeps; then, for <seconds>,
eight clients call GET_CONTAINERS without pause (the agent asks every
isolator for every container's usage and status on each call) while the
main thread times GET /health every 100 ms; then kills the containers and
waits until the agent lists none of them. Prints one line of key=value
results (times in ms), or "error <text>".
"""
import base64
import http.client
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import post  # noqa: E402


def health(hostport):
    host, port = hostport.rsplit(":", 1)
    t = time.monotonic()
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", "/health")
    status = conn.getresponse().status
    conn.close()
    return status, (time.monotonic() - t) * 1000


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else -1


def main(argv):
    hostport, userpass, prefix = argv[0], argv[1], argv[2]
    n, files, seconds = int(argv[3]), int(argv[4]), float(argv[5])
    auth = {"Authorization": "Basic " + base64.b64encode(userpass.encode()).decode()}
    ids = ["%s-%d" % (prefix, i) for i in range(n)]

    def listed():
        st, data = post(hostport, "/api/v1", {"type": "GET_CONTAINERS", "get_containers": {
            "show_nested": True, "show_standalone": True}}, auth, timeout=120)
        if st != 200:
            raise RuntimeError("GET_CONTAINERS %d %s" % (st, data[:200]))
        return [i for i in ids if '"value":"%s"' % i in data.replace(" ", "")]

    for cid in ids:
        st, data = post(hostport, "/api/v1", {"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": {"value": cid},
            "command": {"shell": True,
                        "value": "seq 1 %d | xargs touch && exec sleep 600" % files},
            "resources": [
                {"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.01}},
                {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}}],
            "container": {"type": "MESOS", "linux_info": {"share_cgroups": False}}}},
            auth, timeout=120)
        if st != 200:
            print("error launch %s: %d %s" % (cid, st, data[:200].replace("\n", " ")))
            return 1
    # Let the commands fill their sandboxes.
    time.sleep(5)

    stop = threading.Event()
    calls, errors = [], []

    def hammer():
        while not stop.is_set():
            t = time.monotonic()
            try:
                st, data = post(hostport, "/api/v1", {"type": "GET_CONTAINERS", "get_containers": {
                    "show_nested": True, "show_standalone": True}}, auth, timeout=120)
                if st != 200:
                    errors.append("%d %s" % (st, data[:100]))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(str(e))
            calls.append((time.monotonic() - t) * 1000)

    threads = [threading.Thread(target=hammer, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        st, ms = health(hostport)
        if st != 200:
            errors.append("/health %d" % st)
        samples.append(ms)
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(timeout=150)

    for cid in ids:
        post(hostport, "/api/v1", {"type": "KILL_CONTAINER", "kill_container": {
            "container_id": {"value": cid}, "signal": 9}}, auth, timeout=120)
    left = ids
    deadline = time.monotonic() + 90
    while left and time.monotonic() < deadline:
        time.sleep(1)
        left = listed()

    print("launched=%d health_samples=%d health_median=%.1f health_p95=%.1f health_max=%.1f "
          "get_containers_calls=%d get_containers_median=%.0f get_containers_p95=%.0f "
          "errors=%d left=%d%s" % (
              n, len(samples), pct(samples, 0.5), pct(samples, 0.95), max(samples or [-1]),
              len(calls), pct(calls, 0.5), pct(calls, 0.95), len(errors), len(left),
              (" first_error=" + errors[0].replace(" ", "_")[:120]) if errors else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
