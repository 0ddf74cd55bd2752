"""Shared plumbing of the compatibility scripts: `SCRIPT COMMAND JSON` in, ONE JSON line out.

Strings in the JSON stand for UTF-8 bytes and null for a null key/value/header value, so the
Rust tests compare exactly what was produced with what was consumed. Progress of long-running
commands goes to stderr. The process ends with os._exit after the result line: Debian's
confluent-kafka 1.7.0 aborts during interpreter shutdown on Python 3.11 ("none_dealloc", a
refcount bug around None header values), which must not turn a good run into a failure.
"""

import json
import os
import sys


def to_bytes(s):
    return None if s is None else s.encode("utf-8")


def to_str(b):
    if b is None:
        return None
    if isinstance(b, str):
        return b
    return bytes(b).decode("utf-8")


def progress(obj):
    sys.stderr.write(json.dumps(obj) + "\n")
    sys.stderr.flush()


def value_of(m):
    """A message spec's value: `value` (string or null) or `value_len` bytes of 'x'."""
    if "value_len" in m:
        return b"x" * m["value_len"]
    return to_bytes(m.get("value"))


def main(commands):
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.stderr.write("usage: %s {%s} JSON\n" % (sys.argv[0], ",".join(sorted(commands))))
        sys.exit(2)
    result = commands[sys.argv[1]](json.loads(sys.argv[2]))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
