#!/usr/bin/env python3
"""Small Mesos v1 HTTP API client for the real-Mesos checks (stdlib only).

  client.py call <host:port> <json> [--basic user:secret | --bearer token]
      POSTs one v1 agent/operator call to /api/v1; prints "<status> <body>".
  client.py framework <master host:port> <principal> <state file>
      A v1 scheduler: SUBSCRIBEs, accepts the first offer with one task that
      has a CUSTOM executor (a long `sleep`, so the executor container stays
      up for nested launches), acknowledges updates, writes the ids it knows
      to <state file> as JSON, and TEARDOWNs on SIGTERM. In the same ACCEPT
      it launches two task groups (LAUNCH_GROUP) with DEFAULT executors,
      which the agent runs as <launcher_dir>/mesos-default-executor:
      "pod-a" (a-ok finishes, a-long runs until killed) and "pod-b"
      (b-fail exits 3); and each command task of $COMMAND_TASKS (JSON
      [[task_id, shell command], ...]; the agent runs its executor as
      <launcher_dir>/mesos-executor). Every status update is recorded per task in the
      state file ("tasks": {task_id: [[state, source, reason, message, container]]}).
"""
import base64
import http.client
import json
import os
import random
import signal
import sys
import threading
import time


def post(hostport, path, body, headers=None, stream=False, timeout=30):
    host, port = hostport.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    h = {"Content-Type": "application/json", "Accept": "application/json"}
    h.update(headers or {})
    conn.request("POST", path, json.dumps(body) if not isinstance(body, str) else body, h)
    resp = conn.getresponse()
    if stream:
        return conn, resp
    data = resp.read().decode("utf-8", "replace")
    conn.close()
    return resp.status, data


def cmd_call(argv):
    hostport, body = argv[0], argv[1]
    headers = {}
    if len(argv) >= 4 and argv[2] == "--basic":
        headers["Authorization"] = "Basic " + base64.b64encode(argv[3].encode()).decode()
    elif len(argv) >= 4 and argv[2] == "--bearer":
        headers["Authorization"] = "Bearer " + argv[3]
    timeout = 60
    status, data = post(hostport, "/api/v1", body, headers, timeout=timeout)
    print(status, data.replace("\n", " "))


def cmd_session(argv):
    """A LAUNCH_NESTED_CONTAINER_SESSION: the answer streams the session's
    output (RecordIO) until its command exits; prints the status and the
    number of bytes read."""
    hostport, body, basic = argv[0], argv[1], argv[2]
    headers = {"Accept": "application/recordio", "Message-Accept": "application/json",
               "Authorization": "Basic " + base64.b64encode(basic.encode()).decode()}
    conn, resp = post(hostport, "/api/v1", body, headers, stream=True, timeout=60)
    data = resp.read()
    conn.close()
    print(resp.status, len(data), data[:300].decode("utf-8", "replace").replace("\n", " "),
          "| output:", session_output(data)[:500].replace("\n", " "))


def session_output(data):
    """The text of a session's ProcessIO DATA records (stdout and stderr)."""
    out, rest = [], data
    while b"\n" in rest:
        head, rest = rest.split(b"\n", 1)
        try:
            n = int(head.strip())
            record = json.loads(rest[:n])
        except ValueError:
            break
        rest = rest[n:]
        chunk = record.get("data", {}).get("data")
        if chunk:
            out.append(base64.b64decode(chunk).decode("utf-8", "replace"))
    return "".join(out)


def records(resp):
    """RecordIO: '<length>\\n<bytes>' repeated."""
    while True:
        line = b""
        while not line.endswith(b"\n"):
            c = resp.read(1)
            if not c:
                return
            line += c
        n = int(line.strip())
        data = b""
        while len(data) < n:
            chunk = resp.read(n - len(data))
            if not chunk:
                return
            data += chunk
        yield json.loads(data)


def cmd_framework(argv):
    master, principal, state_file = argv[0], argv[1], argv[2]
    state = {"principal": principal}

    def save():
        with open(state_file + ".tmp", "w") as f:
            json.dump(state, f)
        import os
        os.replace(state_file + ".tmp", state_file)

    info = {"user": os.environ.get("FRAMEWORK_USER", "root"), "name": "nestguard-real-mesos",
            "principal": principal,
            "checkpoint": True, "failover_timeout": 0,
            "roles": ["*"], "capabilities": [{"type": "MULTI_ROLE"}]}
    conn, resp = post(master, "/api/v1/scheduler",
                      {"type": "SUBSCRIBE", "subscribe": {"framework_info": info}},
                      stream=True, timeout=None)
    if resp.status != 200:
        sys.exit("subscribe: %d %s" % (resp.status, resp.read()[:500]))
    stream_id = resp.getheader("Mesos-Stream-Id")
    hdr = {"Mesos-Stream-Id": stream_id}

    def send(call):
        call["framework_id"] = {"value": state["framework_id"]}
        status, data = post(master, "/api/v1/scheduler", call, hdr)
        if status not in (200, 202):
            state.setdefault("errors", []).append("%s: %d %s" % (call["type"], status, data[:300]))
            save()

    def teardown(*_):
        if "framework_id" in state:
            try:
                send({"type": "TEARDOWN"})
            except Exception:
                pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, teardown)
    launched = False
    for ev in records(resp):
        t = ev.get("type")
        if t == "SUBSCRIBED":
            state["framework_id"] = ev["subscribed"]["framework_id"]["value"]
            save()
        elif t == "OFFERS":
            for offer in ev["offers"]["offers"]:
                if launched:
                    send({"type": "DECLINE", "decline": {"offer_ids": [offer["id"]]}})
                    continue
                launched = True
                agent = offer["agent_id"]["value"]
                # Memory above the nested containers' limits: their usage
                # also counts against this container's (hierarchical) cgroup.
                res = [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}},
                       {"name": "mem", "type": "SCALAR", "scalar": {"value": 512}}]
                for r in res:
                    r["allocation_info"] = {"role": "*"}
                task = {"name": "holder", "task_id": {"value": "holder-1"},
                        "agent_id": {"value": agent},
                        "resources": [dict(r, scalar={"value": r["scalar"]["value"] / 2}) for r in res],
                        "executor": {"type": "CUSTOM", "executor_id": {"value": "holder-exec"},
                                     "framework_id": {"value": state["framework_id"]},
                                     "command": {"shell": True, "value": "exec sleep 3600"},
                                     "resources": [dict(r, scalar={"value": r["scalar"]["value"] / 2}) for r in res]}}
                state.update(agent_id=agent, executor_id="holder-exec", task_id="holder-1")
                save()
                ops = [{"type": "LAUNCH", "launch": {"task_infos": [task]}}]
                ops += [pod_group(state["framework_id"], agent, "pod-a",
                                  [("a-ok", "sleep 1"), ("a-long", "exec sleep 3600")]),
                        pod_group(state["framework_id"], agent, "pod-b",
                                  [("b-fail", "sleep 1; exit 3")])]
                ops += [{"type": "LAUNCH", "launch": {"task_infos": [command_task(agent, t, cmd)]}}
                        for t, cmd in json.loads(os.environ.get("COMMAND_TASKS", "[]"))]
                send({"type": "ACCEPT", "accept": {"offer_ids": [offer["id"]], "operations": ops}})
        elif t == "UPDATE":
            st = ev["update"]["status"]
            state.setdefault("updates", []).append(st.get("state"))
            state.setdefault("tasks", {}).setdefault(st["task_id"]["value"], []).append(
                [st.get("state"), st.get("source"), st.get("reason"), st.get("message", "")[:200],
                 st.get("container_status", {}).get("container_id", {}).get("value")])
            save()
            if "uuid" in st:
                send({"type": "ACKNOWLEDGE", "acknowledge": {
                    "agent_id": st["agent_id"], "task_id": st["task_id"], "uuid": st["uuid"]}})
        elif t == "ERROR":
            state["error"] = ev.get("error", {}).get("message")
            save()


def scalar(name, value):
    return {"name": name, "type": "SCALAR", "scalar": {"value": value},
            "allocation_info": {"role": "*"}}


def command_task(agent, task_id, cmd):
    """A command task: no executor, the agent's command executor runs it."""
    return {"name": task_id, "task_id": {"value": task_id}, "agent_id": {"value": agent},
            "resources": [scalar("cpus", 0.1), scalar("mem", 32)],
            "command": {"shell": True, "value": cmd}}


def pod_group(framework_id, agent, executor_id, tasks):
    """A LAUNCH_GROUP operation: one task group under a DEFAULT executor."""
    executor = {"type": "DEFAULT", "executor_id": {"value": executor_id},
                "framework_id": {"value": framework_id},
                "resources": [scalar("cpus", 0.1), scalar("mem", 64), scalar("disk", 16)]}
    infos = [{"name": t, "task_id": {"value": t}, "agent_id": {"value": agent},
              "resources": [scalar("cpus", 0.1), scalar("mem", 32)],
              "command": {"shell": True, "value": cmd}} for t, cmd in tasks]
    return {"type": "LAUNCH_GROUP", "launch_group": {
        "executor": executor, "task_group": {"tasks": infos}}}


def cmd_bench(argv):
    """bench <host:port> <n> <prefix> <samples file> [user:secret]: n
    standalone containers running /bin/true, one after the other; appends
    each LAUNCH_CONTAINER -> WAIT_CONTAINER answered, in ms, to the samples
    file (one per line); prints "ok", or "error <text>"."""
    hostport, n, prefix, samples = argv[0], int(argv[1]), argv[2], argv[3]
    headers = {}
    if len(argv) > 4:
        headers["Authorization"] = "Basic " + base64.b64encode(argv[4].encode()).decode()
    times = []
    rng = random.Random()
    for i in range(n):
        cid = {"value": "%s-%d" % (prefix, i)}
        # Mesos polls for exits every 100 ms: a launch made right after the
        # last WAIT answered would start in step with that poll, and every
        # time would round to whole polls. A random start takes the step away
        # (each time gains 50 ms on average, the same for every agent).
        time.sleep(rng.uniform(0, 0.1))
        t = time.monotonic()
        st, data = post(hostport, "/api/v1", {"type": "LAUNCH_CONTAINER", "launch_container": {
            "container_id": cid, "command": {"shell": False, "value": "/bin/true",
                                             "arguments": ["true"]}}}, headers)
        if st != 200:
            print("error launch %d %s" % (st, data[:200].replace("\n", " ")))
            return
        st, data = post(hostport, "/api/v1", {"type": "WAIT_CONTAINER",
                                              "wait_container": {"container_id": cid}}, headers)
        if st != 200:
            print("error wait %d %s" % (st, data[:200].replace("\n", " ")))
            return
        times.append((time.monotonic() - t) * 1000)
        # No REMOVE_CONTAINER: Mesos 1.11 aborts on it for a standalone one.
    with open(samples, "a") as f:
        f.writelines("%.3f\n" % x for x in times)
    print("ok")


def cmd_summary(argv):
    """summary <samples file>...: per file "n median p90 mean" in ms."""
    for path in argv:
        xs = sorted(float(x) for x in open(path) if x.strip())
        if not xs:
            print("0 - - -")
            continue
        print("%d %.0f %.0f %.1f" % (len(xs), xs[len(xs) // 2],
                                     xs[min(len(xs) - 1, int(len(xs) * 0.9))], sum(xs) / len(xs)))


if __name__ == "__main__":
    {"call": cmd_call, "session": cmd_session, "framework": cmd_framework,
     "bench": cmd_bench, "summary": cmd_summary}[sys.argv[1]](sys.argv[2:])
