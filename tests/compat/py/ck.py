"""confluent-kafka (librdkafka) client commands, for Debian's 1.7.0 (librdkafka 2.0.2) and
PyPI's 2.x alike: produce, consume (assign() with explicit or logical offsets, no group
coordination, no auto-commit), watermarks, offsets_for_times, admin create/delete/list, a
continuous producer for the restart tests, and version (which librdkafka this interpreter's
confluent-kafka runs on).

Usage: ck.py COMMAND JSON; prints one JSON line (see _common.py).
"""

import logging
import re
import sys
import threading
import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from _common import main, progress, to_bytes, to_str, value_of

TS_TYPES = {
    ck.TIMESTAMP_NOT_AVAILABLE: "NotAvailable",
    ck.TIMESTAMP_CREATE_TIME: "CreateTime",
    ck.TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime",
}


def err_name(e):
    return None if e is None else e.name()


def base_conf(p):
    conf = {"bootstrap.servers": p["bootstrap"]}
    conf.update(p.get("config", {}))
    return conf


def consumer_conf(p):
    conf = {
        "bootstrap.servers": p["bootstrap"],
        # Required by the Python binding; never used: assign() only, nothing is committed.
        "group.id": "skiff-compat-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
    }
    conf.update(p.get("config", {}))
    return conf


def delivery_report(err, msg):
    ts_type, ts = msg.timestamp()
    return {
        "error": err_name(err),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp_type": TS_TYPES.get(ts_type, str(ts_type)),
        "timestamp": ts,
    }


def produce(p):
    """Produces p.messages ({key, value | value_len, headers: [[k, v]], partition, timestamp})
    in order and returns one delivery report per message, in message order. With p.warmup the
    producer first fetches the topic's metadata, so its broker connection is up before the
    first message (librdkafka 2.0.2 otherwise may send the first message alone, ahead of
    linger.ms, while the connection comes up)."""
    prod = ck.Producer(base_conf(p))
    if p.get("warmup"):
        prod.list_topics(p["topic"], timeout=10)
    msgs = p["messages"]
    reports = [None] * len(msgs)

    def on_delivery(i):
        def cb(err, msg):
            reports[i] = delivery_report(err, msg)

        return cb

    for i, m in enumerate(msgs):
        kwargs = {}
        if m.get("partition") is not None:
            kwargs["partition"] = m["partition"]
        if m.get("timestamp") is not None:
            kwargs["timestamp"] = m["timestamp"]
        if m.get("headers") is not None:
            kwargs["headers"] = [(k, to_bytes(v)) for k, v in m["headers"]]
        prod.produce(
            p["topic"],
            value=value_of(m),
            key=to_bytes(m.get("key")),
            on_delivery=on_delivery(i),
            **kwargs
        )
        prod.poll(0)
    unflushed = prod.flush(p.get("flush_s", 30))
    return {"reports": reports, "unflushed": unflushed}


def message_json(m, with_values):
    ts_type, ts = m.timestamp()
    value = m.value()
    out = {
        "partition": m.partition(),
        "offset": m.offset(),
        "key": to_str(m.key()),
        "value_len": None if value is None else len(value),
        # The wire has no "no headers" distinct from zero headers; librdkafka says None.
        "headers": [[k, to_str(v)] for k, v in m.headers() or []],
        "timestamp_type": TS_TYPES.get(ts_type, str(ts_type)),
        "timestamp": ts,
    }
    if with_values:
        out["value"] = to_str(value)
    return out


def consume(p):
    """Assigns p.assign ([[partition, offset]]; logical offsets allowed, e.g. -2000-m = the
    last m) and reads until every partition reported EOF (or p.max messages, or timeout)."""
    c = ck.Consumer(consumer_conf(p))
    c.assign([ck.TopicPartition(p["topic"], part, off) for part, off in p["assign"]])
    pending = set(part for part, _ in p["assign"])
    limit = p.get("max")
    msgs, errors = [], []
    deadline = time.time() + p.get("timeout_s", 20)
    while pending and time.time() < deadline and (limit is None or len(msgs) < limit):
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == ck.KafkaError._PARTITION_EOF:
                pending.discard(m.partition())
            else:
                errors.append(m.error().name())
            continue
        msgs.append(message_json(m, p.get("values", True)))
    c.close()
    return {"messages": msgs, "eof": not pending, "errors": errors}


def watermarks(p):
    c = ck.Consumer(consumer_conf(p))
    out = {}
    for part in p["partitions"]:
        lo, hi = c.get_watermark_offsets(ck.TopicPartition(p["topic"], part), timeout=10)
        out[str(part)] = [lo, hi]
    c.close()
    return {"watermarks": out}


def offsets_for_times(p):
    """p.queries: [[partition, timestamp]] -> one {partition, offset, error} per query."""
    c = ck.Consumer(consumer_conf(p))
    results = []
    for part, ts in p["queries"]:
        [r] = c.offsets_for_times([ck.TopicPartition(p["topic"], part, ts)], timeout=10)
        results.append({"partition": r.partition, "offset": r.offset, "error": err_name(r.error)})
    c.close()
    return {"results": results}


def list_offsets(p):
    """AdminClient.list_offsets (confluent-kafka >= 2.3 only): p.specs: [[partition, spec]] with
    spec "earliest", "latest", "max_timestamp" or a timestamp -> [{partition, offset,
    timestamp, error}]."""
    from confluent_kafka.admin import OffsetSpec

    a = AdminClient(base_conf(p))
    results = []
    for part, spec in p["specs"]:
        if spec == "earliest":
            s = OffsetSpec.earliest()
        elif spec == "latest":
            s = OffsetSpec.latest()
        elif spec == "max_timestamp":
            s = OffsetSpec.max_timestamp()
        else:
            s = OffsetSpec.for_timestamp(spec)
        tp = ck.TopicPartition(p["topic"], part)
        futures = a.list_offsets({tp: s}, request_timeout=10)
        try:
            [r] = [f.result() for f in futures.values()]
            results.append(
                {"partition": part, "offset": r.offset, "timestamp": r.timestamp, "error": None}
            )
        except ck.KafkaException as e:
            results.append({"partition": part, "error": e.args[0].name()})
    return {"results": results}


def admin_create(p):
    """p.topics: [{name, partitions, config}] -> {"results": {name: error name or null},
    "messages": {name: str() of the error, for failed topics}} (the broker's error message
    reaches the application through str())."""
    a = AdminClient(base_conf(p))
    new = [
        NewTopic(
            t["name"],
            num_partitions=t.get("partitions", 1),
            replication_factor=t.get("replication_factor", 1),
            config=t.get("config", {}),
        )
        for t in p["topics"]
    ]
    futures = a.create_topics(
        new, operation_timeout=10, request_timeout=20, validate_only=p.get("validate_only", False)
    )
    out, messages = {}, {}
    for name, f in futures.items():
        try:
            f.result()
            out[name] = None
        except ck.KafkaException as e:
            out[name] = e.args[0].name()
            messages[name] = str(e.args[0])
    return {"results": out, "messages": messages}


def admin_delete(p):
    a = AdminClient(base_conf(p))
    futures = a.delete_topics(p["topics"], operation_timeout=10, request_timeout=20)
    out = {}
    for name, f in futures.items():
        try:
            f.result()
            out[name] = None
        except ck.KafkaException as e:
            out[name] = e.args[0].name()
    return {"results": out}


def list_topics(p):
    """{topics: {name: partition count}} of the cluster's topics (internal ones included)."""
    a = AdminClient(base_conf(p))
    md = a.list_topics(timeout=10)
    return {
        "topics": {name: len(t.partitions) for name, t in md.topics.items()},
        "errors": {name: err_name(t.error) for name, t in md.topics.items() if t.error},
    }


class ImplicitAcks(logging.Handler):
    """Counts the records librdkafka acknowledged implicitly: an idempotent producer whose
    request R1 failed with an unknown outcome (a timeout, a dropped connection) while a later
    request R2 of the same partition succeeded knows R1 was persisted (the broker accepts R2's
    sequence only after R1's) and reports R1's records as delivered WITHOUT an offset
    (`rd_kafka_dr_implicit_ack`, debug context "eos", log facility IMPLICITACK)."""

    PATTERN = re.compile(r"(\d+) message\(s\) implicitly acked")

    def __init__(self):
        super().__init__()
        self.count = 0
        self.lines = []

    def emit(self, record):
        m = self.PATTERN.search(record.getMessage())
        if m:
            self.count += int(m.group(1))
            self.lines.append(record.getMessage())


def produce_continuously(p):
    """Produces values "0", "1", ... round-robin over p.partitions until stdin is closed, then
    flushes. Reports progress ({acked, sent, failed, t: time.time()}) on stderr; returns the
    acknowledgements in delivery-report order ([partition, offset, value]), the failures and
    how many records librdkafka acknowledged implicitly (see ImplicitAcks)."""
    implicit = ImplicitAcks()
    logger = logging.getLogger("librdkafka-eos")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(implicit)
    conf = base_conf(p)
    conf["debug"] = "eos"
    prod = ck.Producer(conf, logger=logger)
    acks, failures = [], []
    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    def cb(err, msg):
        if err is None:
            acks.append([msg.partition(), msg.offset(), to_str(msg.value())])
        else:
            failures.append([to_str(msg.value()), err_name(err)])

    sent = 0
    last_report = 0.0
    parts = p["partitions"]
    while not stop.is_set():
        try:
            prod.produce(p["topic"], value=str(sent).encode(), partition=sent % parts, on_delivery=cb)
            sent += 1
        except BufferError:
            prod.poll(0.05)
            continue
        prod.poll(0)
        now = time.time()
        if now - last_report > 0.05:
            progress({"acked": len(acks), "sent": sent, "failed": len(failures), "t": now})
            last_report = now
        # Pace the producer (~500 records/s): enough batches in flight to straddle a restart
        # without filling the disk or the queue.
        time.sleep(0.002)
    unflushed = prod.flush(p.get("flush_s", 40))
    progress({"acked": len(acks), "sent": sent, "failed": len(failures), "done": True})
    return {
        "sent": sent,
        "acks": acks,
        "failures": failures,
        "unflushed": unflushed,
        "implicit_acks": implicit.count,
        "implicit_ack_lines": implicit.lines[:10],
    }


def version(p):
    """{"libversion": librdkafka's version string, "version": confluent-kafka's}."""
    v = ck.version()
    return {"libversion": ck.libversion()[0], "version": v[0] if isinstance(v, tuple) else v}


main(
    {
        "produce": produce,
        "consume": consume,
        "watermarks": watermarks,
        "offsets_for_times": offsets_for_times,
        "list_offsets": list_offsets,
        "admin_create": admin_create,
        "admin_delete": admin_delete,
        "list_topics": list_topics,
        "produce_continuously": produce_continuously,
        "version": version,
    }
)
