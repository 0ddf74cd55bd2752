"""kafka-python (PyPI, pinned in compat/requirements.txt) client commands: produce (default
config = idempotent, acks=all), consume (assign() + seek, no group, no auto-commit),
offsets_for_times, partitions (metadata; producing to a new topic auto-creates it), and a
continuous producer for the failover tests (the protocol of ck.py's produce_continuously).

Usage: kp.py COMMAND JSON; prints one JSON line (see _common.py).
"""

import sys
import threading
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from _common import main, progress, to_bytes, to_str, value_of

TS_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


def error_name(e):
    return getattr(e, "message", None) or type(e).__name__


def produce(p):
    """Produces p.messages in order with KafkaProducer(**p.config) and returns one report per
    message ({error, partition, offset, timestamp}); waits for every future."""
    prod = KafkaProducer(bootstrap_servers=p["bootstrap"], **p.get("config", {}))
    futures = []
    for m in p["messages"]:
        futures.append(
            prod.send(
                p["topic"],
                value=value_of(m),
                key=to_bytes(m.get("key")),
                headers=[(k, to_bytes(v)) for k, v in m.get("headers") or []],
                partition=m.get("partition"),
                timestamp_ms=m.get("timestamp"),
            )
        )
    prod.flush(timeout=30)
    reports = []
    for f in futures:
        try:
            md = f.get(timeout=30)
            reports.append(
                {
                    "error": None,
                    "partition": md.partition,
                    "offset": md.offset,
                    "timestamp": md.timestamp,
                }
            )
        except KafkaError as e:
            reports.append(
                {"error": error_name(e), "errno": getattr(e, "errno", None), "message": str(e)}
            )
    prod.close(timeout=10)
    return {"reports": reports}


def consumer(p):
    return KafkaConsumer(
        bootstrap_servers=p["bootstrap"],
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="none",
        **p.get("config", {})
    )


def message_json(r, with_values):
    out = {
        "partition": r.partition,
        "offset": r.offset,
        "key": to_str(r.key),
        "value_len": None if r.value is None else len(r.value),
        "headers": [[k, to_str(v)] for k, v in r.headers],
        "timestamp_type": TS_TYPES.get(r.timestamp_type, str(r.timestamp_type)),
        "timestamp": r.timestamp,
    }
    if with_values:
        out["value"] = to_str(r.value)
    return out


def consume(p):
    """Assigns p.assign ([[partition, offset]]) and reads until each position reaches the end
    offset taken at start. An offset given as {"from_end": m} seeks to end-m: seek_to_end(),
    position(), then seek(position - m)."""
    c = consumer(p)
    tps = {part: TopicPartition(p["topic"], part) for part, _ in p["assign"]}
    c.assign(list(tps.values()))
    for part, off in p["assign"]:
        tp = tps[part]
        if isinstance(off, dict):
            c.seek_to_end(tp)
            end = c.position(tp)
            c.seek(tp, max(0, end - off["from_end"]))
        else:
            c.seek(tp, off)
    end = c.end_offsets(list(tps.values()))
    msgs = []
    deadline = time.time() + p.get("timeout_s", 20)
    while time.time() < deadline and any(c.position(tp) < end[tp] for tp in tps.values()):
        for _, records in c.poll(timeout_ms=200).items():
            msgs.extend(message_json(r, p.get("values", True)) for r in records)
    done = all(c.position(tp) >= end[tp] for tp in tps.values())
    c.close()
    return {
        "messages": msgs,
        "eof": done,
        "end_offsets": {str(tp.partition): o for tp, o in end.items()},
    }


def offsets_for_times(p):
    """p.queries: [[partition, timestamp]] -> [{partition, offset, timestamp}] (null
    offset/timestamp when the client returns None)."""
    c = consumer(p)
    results = []
    for part, ts in p["queries"]:
        tp = TopicPartition(p["topic"], part)
        r = c.offsets_for_times({tp: ts})[tp]
        results.append(
            {
                "partition": part,
                "offset": None if r is None else r.offset,
                "timestamp": None if r is None else r.timestamp,
            }
        )
    c.close()
    return {"results": results}


def partitions(p):
    """The partition ids of p.topic as the producer's metadata sees them (a producer's
    metadata request may auto-create the topic)."""
    prod = KafkaProducer(bootstrap_servers=p["bootstrap"], **p.get("config", {}))
    parts = prod.partitions_for(p["topic"])
    prod.close(timeout=10)
    return {"partitions": sorted(parts)}


def produce_continuously(p):
    """Produces values "0", "1", ... round-robin over p.partitions with
    KafkaProducer(**p.config) until stdin is closed, then flushes. Reports progress ({acked,
    sent, failed, t: time.time()}) on stderr; returns the acknowledgements in callback order
    ([partition, offset, value]), the failures ([value, error]) and how many records were
    still unresolved after the flush (the same result as ck.py's produce_continuously)."""
    prod = KafkaProducer(bootstrap_servers=p["bootstrap"], **p.get("config", {}))
    acks, failures, futures = [], [], []
    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    # Callbacks run on the sender thread; list.append is atomic under the GIL.
    def on_ack(value):
        return lambda md: acks.append([md.partition, md.offset, value])

    def on_error(value):
        return lambda e: failures.append([value, error_name(e)])

    sent = 0
    last_report = 0.0
    parts = p["partitions"]
    while not stop.is_set():
        value = str(sent)
        f = prod.send(p["topic"], value=value.encode(), partition=sent % parts)
        f.add_callback(on_ack(value))
        f.add_errback(on_error(value))
        futures.append(f)
        sent += 1
        now = time.time()
        if now - last_report > 0.05:
            progress({"acked": len(acks), "sent": sent, "failed": len(failures), "t": now})
            last_report = now
        # The pace of ck.py's produce_continuously (~500 records/s).
        time.sleep(0.002)
    try:
        prod.flush(timeout=p.get("flush_s", 40))
    except KafkaError:
        pass
    unflushed = sum(1 for f in futures if not f.is_done)
    # A future is marked done before its callbacks run (on the sender thread): let the last
    # ones land in the lists before reading them.
    deadline = time.time() + 5
    while len(acks) + len(failures) < sent - unflushed and time.time() < deadline:
        time.sleep(0.01)
    prod.close(timeout=10)
    progress({"acked": len(acks), "sent": sent, "failed": len(failures), "done": True})
    return {"sent": sent, "acks": acks, "failures": failures, "unflushed": unflushed}


main(
    {
        "produce": produce,
        "consume": consume,
        "offsets_for_times": offsets_for_times,
        "partitions": partitions,
        "produce_continuously": produce_continuously,
    }
)
