#!/usr/bin/env python3
"""Writes the committed seeds, fuzz/seeds/<target>/<name>: small, valid
inputs of each target (Mesos' message layouts, transcribed by hand), so that
the fuzzer starts past the first checks. The ACL and credential fixtures of
the test suite are added at run time by scripts/fuzz.sh and by the seed
tests. Run from anywhere: python3 fuzz/make_seeds.py"""
import base64, hashlib, hmac, json, os, struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, value):
    """A protobuf field: bytes/str are length-delimited, ints varints."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def container_id(dotted):
    msg = b""
    for part in dotted.split("."):
        msg = field(1, part) + (field(2, msg) if msg else b"")
    return msg


def frame(kind, body):
    return bytes([kind, len(body)]) + body


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(claims, key=b"fuzz-jwt-signing-key-of-32-bytes"):
    head = b64url(b'{"alg":"HS256","typ":"JWT"}') + "." + b64url(
        json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return head + "." + b64url(hmac.new(key, head.encode(), hashlib.sha256).digest())


PRINCIPAL, SECRET = "fuzz-principal", "fuzz-secret"
ACL = ('{"launch_nested_containers_as_user":[{"principals":{"values":["ops"]},'
       '"users":{"type":"ANY"}}],"view_containers":[{"principals":{"type":"ANY"},'
       '"users":{"values":["alice"]}}]}')

# ACLs: also every fixture (scripts/fuzz.sh); here the edge cases.
write("acl_json", "empty", "{}")
write("acl_json", "permissive-false", '{"permissive":false,"register_frameworks":[{"principals":{"type":"ANY"},"roles":{"type":"NONE"}}]}')
write("acl_json", "lenient-only", '{"unknown_key":1,"view_containers":[{"principals":{"values":["a"]},"users":{"type":"ANY"}}]}')

write("credentials_file", "json", json.dumps({"credentials": [{"principal": "a", "secret": "s"}, {"principal": "b", "secret": "t"}]}))
write("credentials_file", "text", "a s\nb t\n")

start = field(1, "CRAM-MD5")
write("cram_md5_server", "start-step",
      frame(3, start) + frame(4, field(1, PRINCIPAL + " 0123456789abcdef0123456789abcdef")))
write("cram_md5_client", "mechanisms-challenge-completed",
      frame(2, field(1, "CRAM-MD5")) + frame(4, field(1, "<1.2@fuzz.example>")) + frame(5, b""))
write("cram_md5_client", "error", frame(2, field(1, "CRAM-MD5")) + frame(7, field(1, "no")))

basic = "Basic " + base64.b64encode(f"{PRINCIPAL}:{SECRET}".encode()).decode()
write("http_auth", "basic", basic)
write("http_auth", "basic-wrong", "Basic " + base64.b64encode(b"x:y").decode())
write("http_auth", "bearer", "Bearer " + token({"cid": "c1", "eid": "e1", "fid": "f1"}))

write("jwt", "claims", "cid,eid,fid\0c1,e1,f1")
write("jwt", "token", token({"sub": "x"}))

for name, dotted in [("one", "c1"), ("nested", "pod-1.task_2.x-3")]:
    write("container_id", name, dotted)
    write("container_id_proto", name, container_id(dotted))

# Framed checkpoint records: 4-byte native (little-endian here) length.
write("checkpoint", "empty-record", struct.pack("<I", 0))
write("checkpoint", "termination", struct.pack("<I", 2) + field(1, 9))
write("checkpoint", "pid", "1234\n5678\n1\n")

params = field(1, field(1, "isolation") + field(2, "filesystem/linux")) + \
    field(1, field(1, "cgroups_root") + field(2, "nestguard"))
write("module_parameters", "isolator-proto", params)
write("module_parameters", "isolator-lines", "isolation=filesystem/linux\ncgroups_pids_max=100\nmax_file_size=1048576\n")
write("module_parameters", "acls", "acls=" + ACL)
write("module_parameters", "delegation", '{"ops":["alice","bob"]}')

request = field(1, field(1, "ops")) + field(2, 36)  # subject "ops", action number 36
write("abi", "0-acls", b"\x00" + ACL.encode())
write("abi", "1-request", b"\x01" + request)
write("abi", "2-approver", b"\x02" + field(1, "ops") + b"\0" + field(1, "alice"))
write("abi", "3-container-id", b"\x03pod.task")
write("abi", "4-credentials", b"\x04a s\n")
write("abi", "5-http", b"\x05" + basic.encode())
write("abi", "6-cram-server", b"\x06" + frame(3, start))
write("abi", "7-cram-client", b"\x07scheduler@127.0.0.1:1\0" + frame(2, field(1, "CRAM-MD5")) + frame(4, field(1, "<c>")))

# Agent API calls: the first byte picks the media types (fuzz/src/agent.rs):
# 0 = JSON in and out, 1|8 = protobuf in and out, 2|16 = RecordIO of JSON.
write("agent_call", "json-get-health", b"\x00" + b'{"type":"GET_HEALTH"}')
write("agent_call", "protobuf-get-health", b"\x09" + field(1, 1))
write("agent_call", "json-launch-nested", b"\x00" + json.dumps({
    "type": "LAUNCH_NESTED_CONTAINER",
    "launch_nested_container": {
        "container_id": {"value": "c2", "parent": {"value": "c1"}},
        "command": {"value": "sleep 1", "shell": True}}}).encode())
write("agent_call", "json-kill-nested", b"\x00" + json.dumps({
    "type": "KILL_NESTED_CONTAINER",
    "kill_nested_container": {"container_id": {"value": "c2", "parent": {"value": "c1"}}, "signal": 15}}).encode())
attach = json.dumps({"type": "ATTACH_CONTAINER_INPUT", "attach_container_input": {
    "type": "CONTAINER_ID", "container_id": {"value": "c2", "parent": {"value": "c1"}}}}).encode()
write("agent_call", "recordio-attach-input", b"\x12" + str(len(attach)).encode() + b"\n" + attach)

write("agent_negotiate", "post-json", "POST\ncontent-type: application/json\naccept: application/json\n")
write("agent_negotiate", "post-recordio", "POST\ncontent-type: application/recordio\nmessage-content-type: application/json\naccept: application/recordio\nmessage-accept: application/x-protobuf\n")

ids = {"framework_id": {"value": "f1"}, "executor_id": {"value": "e1"}}
uuid = base64.b64encode(bytes(range(16))).decode()
write("executor_call", "json-subscribe", b"\x00" + json.dumps({"type": "SUBSCRIBE", **ids, "subscribe": {}}).encode())
write("executor_call", "json-update", b"\x00" + json.dumps({"type": "UPDATE", **ids, "update": {"status": {
    "task_id": {"value": "t1"}, "state": "TASK_RUNNING", "source": "SOURCE_EXECUTOR", "uuid": uuid,
    "executor_id": {"value": "e1"}}}}).encode())
write("executor_call", "json-message", b"\x00" + json.dumps({"type": "MESSAGE", **ids, "message": {"data": "aGk="}}).encode())
write("executor_call", "protobuf-heartbeat", b"\x01" + field(1, field(1, "e1")) + field(2, field(1, "f1")) + field(3, 4))

write("recordio", "two-records", b"\x10\x03" + b"5\nhello3\nabc")
write("recordio", "empty-record", b"\x10\x01" + b"0\n")
