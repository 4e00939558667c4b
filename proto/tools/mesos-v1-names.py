"""Reduces protoc's text dump of a FileDescriptorSet to one line per message
field and per enum value, each message and enum declared by a line of its
own (see mesos-v1-names.sh, which runs it)."""

import re
import sys

TOKEN = re.compile(r'\s*(?:(\})|([A-Za-z_][A-Za-z0-9_]*)\s*(\{|:\s*("(?:[^"\\]|\\.)*"|\S+)))')


def parse(text):
    """Text format to nested dicts: every key maps to a list of values."""
    root = {}
    stack = [root]
    pos = 0
    while True:
        m = TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip():
                raise SystemExit(f"cannot parse at offset {pos}: {text[pos:pos + 40]!r}")
            break
        pos = m.end()
        if m.group(1):
            stack.pop()
        elif m.group(3) == "{":
            child = {}
            stack[-1].setdefault(m.group(2), []).append(child)
            stack.append(child)
        else:
            value = m.group(4)
            if value.startswith('"'):
                value = value[1:-1]
            stack[-1].setdefault(m.group(2), []).append(value)
    return root


def one(node, key, default=None):
    return node.get(key, [default])[0]


def field_type(field):
    if "type_name" in field:
        return one(field, "type_name").lstrip(".")
    return one(field, "type")[len("TYPE_"):].lower()


def enum_lines(prefix, enum, out):
    name = f"{prefix}.{one(enum, 'name')}"
    out.append((name, f"enum {name}"))
    for value in enum.get("value", []):
        key = f"{name}.{one(value, 'name')}"
        out.append((key, f"{key} = {one(value, 'number')}"))


def message_lines(prefix, message, out):
    name = f"{prefix}.{one(message, 'name')}"
    out.append((name, f"message {name}"))
    for field in message.get("field", []):
        key = f"{name}.{one(field, 'name')}"
        label = one(field, "label")[len("LABEL_"):].lower()
        out.append((key, f"{key} = {one(field, 'number')} {label} {field_type(field)}"))
    for nested in message.get("nested_type", []):
        message_lines(name, nested, out)
    for enum in message.get("enum_type", []):
        enum_lines(name, enum, out)


def main():
    out = []
    for file in parse(sys.stdin.read()).get("file", []):
        package = one(file, "package")
        for message in file.get("message_type", []):
            message_lines(package, message, out)
        for enum in file.get("enum_type", []):
            enum_lines(package, enum, out)
    print("\n".join(line for _, line in sorted(out)))


main()
