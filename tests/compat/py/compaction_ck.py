"""confluent-kafka (PyPI) commands for the compaction tests (issue 7, KIP-280 strategies).

create  {bootstrap, topic, configs}            -> {"ok": true} | {"error", "message"}
produce {bootstrap, topic, messages, filler?}  -> {"count", "last_offset"}
    messages: [{key, value (null = tombstone), ts?, version? (int -> 8-byte header), raw_version?,
                headers? [[key, value], ...]}]
    filler:   {count, value_len, prefix}: distinct-key records after the messages
read    {bootstrap, topic}                     -> {"records": [[offset, key, value, ts, version]],
                                                   "end": high watermark}
reader  {bootstrap, topic}  (background; stops when stdin closes)
        -> {"passes", "errors", "duplicates", "records_last_pass"}: full reads from the start,
           each checking that offsets strictly increase and that no error surfaces

Usage: compaction_ck.py COMMAND JSON; prints one JSON line (see _common.py).
"""

import struct
import sys
import threading
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from _common import main, progress, to_bytes, to_str

TIMEOUT = 20


def create(p):
    a = AdminClient({"bootstrap.servers": p["bootstrap"]})
    fut = a.create_topics(
        [NewTopic(p["topic"], num_partitions=1, replication_factor=1, config=p.get("configs", {}))],
        operation_timeout=TIMEOUT,
    )[p["topic"]]
    try:
        fut.result(TIMEOUT)
        return {"ok": True}
    except KafkaException as e:
        err = e.args[0]
        return {"error": err.name(), "message": err.str()}


def produce(p):
    prod = Producer({"bootstrap.servers": p["bootstrap"], "linger.ms": 5, "acks": "all"})
    offsets = []
    errors = []

    def cb(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            offsets.append(msg.offset())

    def send(key, value, ts=None, headers=None):
        kw = {"key": key, "value": value, "on_delivery": cb}
        if ts is not None:
            kw["timestamp"] = ts
        if headers:
            kw["headers"] = headers
        while True:
            try:
                prod.produce(p["topic"], **kw)
                break
            except BufferError:
                prod.poll(0.05)
        prod.poll(0)

    for m in p.get("messages", []):
        headers = []
        if m.get("version") is not None:
            headers.append(("version", struct.pack(">q", m["version"])))
        if m.get("raw_version") is not None:
            headers.append(("version", to_bytes(m["raw_version"])))
        for hk, hv in m.get("headers") or []:
            headers.append((hk, to_bytes(hv)))
        send(to_bytes(m["key"]), to_bytes(m.get("value")), m.get("ts"), headers)
        # One batch per record: the order on the log is the order given.
        prod.flush(TIMEOUT)
    f = p.get("filler")
    if f:
        for i in range(f["count"]):
            send(("%s-%d" % (f["prefix"], i)).encode(), b"x" * f["value_len"])
    left = prod.flush(TIMEOUT)
    if left or errors:
        raise SystemExit("produce failed: %d undelivered, errors %s" % (left, errors[:3]))
    return {"count": len(offsets), "last_offset": max(offsets) if offsets else -1}


def consumer(p):
    return Consumer(
        {
            "bootstrap.servers": p["bootstrap"],
            "group.id": "compaction-" + uuid.uuid4().hex,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )


def version_of(msg):
    v = None
    for k, val in msg.headers() or []:
        if k == "version":
            v = struct.unpack(">q", val)[0] if val is not None and len(val) == 8 else "invalid"
    return v


def read_once(c, topic):
    """Every record from the log start to the high watermark; raises on any client error."""
    _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
    c.assign([TopicPartition(topic, 0, -2)])  # OFFSET_BEGINNING
    out = []
    last = -1
    while last + 1 < high:
        msg = c.poll(TIMEOUT)
        if msg is None:
            raise RuntimeError("no message within %ds at offset %d (end %d)" % (TIMEOUT, last + 1, high))
        if msg.error():
            if msg.error().code() == -191:  # _PARTITION_EOF
                if last + 1 >= high:
                    break
                continue
            raise RuntimeError(str(msg.error()))
        out.append([msg.offset(), to_str(msg.key()), to_str(msg.value()), msg.timestamp()[1], version_of(msg)])
        last = msg.offset()
    c.unassign()
    return out, high


def read(p):
    c = consumer(p)
    try:
        records, high = read_once(c, p["topic"])
    finally:
        c.close()
    return {"records": records, "end": high}


def reader(p):
    stop = threading.Event()

    def wait_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_stdin, daemon=True).start()
    c = consumer(p)
    passes = errors = duplicates = 0
    last_count = 0
    messages = []
    while not stop.is_set() or passes == 0:
        try:
            records, _ = read_once(c, p["topic"])
        except Exception as e:  # noqa: BLE001 - every error counts
            errors += 1
            messages.append(str(e))
            continue
        offs = [r[0] for r in records]
        duplicates += sum(1 for a, b in zip(offs, offs[1:]) if b <= a)
        passes += 1
        last_count = len(records)
        progress({"pass": passes, "records": last_count})
        stop.wait(0.05)  # pacing only
    c.close()
    return {"passes": passes, "errors": errors, "duplicates": duplicates,
            "records_last_pass": last_count, "messages": messages[:5]}


if __name__ == "__main__":
    main({"create": create, "produce": produce, "read": read, "reader": reader})
