"""Delayed delivery (issue 8) scenarios with stock clients: PyPI confluent-kafka (librdkafka)
for producing and consuming, kafka-python for ListOffsets -1 (`end_offsets`).

Times are wall-clock epoch milliseconds of this machine (the broker runs on it too). The
topics of the timing tests use message.timestamp.type=LogAppendTime, so a consumed record's
timestamp IS the broker's append time; `ack_ms` (delivery report) is an upper bound of it.

Commands (ONE JSON line out, see _common.py):
- create: p.topic with p.partitions (1) and p.config -> {error};
- timed: starts a consumer (assign p.partition from p.offset, or subscribe with p.group and
  commit every record synchronously), then produces p.messages ([{key, value, headers}]) one
  batch each (flush after each) or all in one batch (p.one_batch, with linger), and polls
  until p.expect records arrived plus p.linger_s more seconds (duplicates would show) or
  p.timeout_s -> {reports: [...], received: [...]};
- produce: like timed without a consumer -> {reports};
- consume_group: subscribe with p.group, commit each record, until p.expect records plus
  p.linger_s, or p.timeout_s -> {received, committed};
- alter: IncrementalAlterConfigs SET p.config on p.topic -> {error};
- end_offsets: kafka-python KafkaConsumer.end_offsets polled every 20 ms until it reaches
  p.until or p.timeout_s -> {samples: [[t_ms, end]] (first + every change)}.

Usage: delivery_ck.py COMMAND JSON.
"""

import threading
import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from _common import main, progress, to_bytes, to_str


def now_ms():
    return int(time.time() * 1000)


def create(p):
    admin = AdminClient({"bootstrap.servers": p["bootstrap"]})
    fs = admin.create_topics(
        [NewTopic(p["topic"], p.get("partitions", 1), 1, config=p.get("config", {}))],
        operation_timeout=10,
    )
    try:
        fs[p["topic"]].result(15)
        return {"error": None}
    except ck.KafkaException as e:
        return {"error": e.args[0].name()}


def received_json(m, t):
    ts_type, ts = m.timestamp()
    return {
        "offset": m.offset(),
        "partition": m.partition(),
        "recv_ms": t,
        "key": to_str(m.key()),
        "value": to_str(m.value()),
        "headers": [[k, to_str(v)] for k, v in m.headers() or []],
        "timestamp": ts,
        "timestamp_type": ts_type,
    }


def produce_messages(p):
    conf = {"bootstrap.servers": p["bootstrap"], "linger.ms": 0, "acks": "all"}
    if p.get("one_batch"):
        conf.update({"linger.ms": 200, "batch.num.messages": 100000})
    conf.update(p.get("producer_config", {}))
    prod = ck.Producer(conf)
    msgs = p["messages"]
    reports = [None] * len(msgs)

    def on_delivery(i, sent):
        def cb(err, msg):
            ts_type, ts = msg.timestamp()
            reports[i] = {
                "error": None if err is None else err.name(),
                "code": None if err is None else err.code(),
                "offset": msg.offset(),
                "timestamp": ts,
                "sent_ms": sent,
                "ack_ms": now_ms(),
            }

        return cb

    for i, m in enumerate(msgs):
        headers = [(k, to_bytes(v)) for k, v in m.get("headers", [])]
        prod.produce(
            p["topic"],
            value=to_bytes(m.get("value")),
            key=to_bytes(m.get("key")),
            headers=headers,
            partition=p.get("partition", 0),
            on_delivery=on_delivery(i, now_ms()),
        )
        if not p.get("one_batch"):
            prod.flush(30)
    left = prod.flush(30)
    if left:
        raise RuntimeError("%d records not delivered" % left)
    return reports


def group_conf(p):
    return {
        "bootstrap.servers": p["bootstrap"],
        "group.id": p["group"],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "check.crcs": True,
    }


def poll_loop(c, p, received, ready=None, commit=False, state=None):
    """Polls until p.expect records plus p.linger_s, or p.timeout_s. `state` gets
    assigned_ms (first time the consumer had an assignment) and errors."""
    state = {} if state is None else state
    state.setdefault("errors", [])
    deadline = time.time() + p.get("timeout_s", 20)
    done_at = None
    while time.time() < deadline:
        if done_at is not None and time.time() >= done_at:
            break
        m = c.poll(0.05)
        if "assigned_ms" not in state and c.assignment():
            state["assigned_ms"] = now_ms()
            if ready is not None:
                ready.set()
        if m is None:
            continue
        if m.error():
            if m.error().code() != ck.KafkaError._PARTITION_EOF:
                progress({"consumer_error": m.error().name()})
                state["errors"].append(m.error().name())
            continue
        received.append(received_json(m, now_ms()))
        if commit:
            c.commit(message=m, asynchronous=False)
        if done_at is None and len(received) >= p["expect"]:
            done_at = time.time() + p.get("linger_s", 0)


def timed(p):
    received = []
    state = {}
    ready = threading.Event()
    if p.get("group"):
        c = ck.Consumer(group_conf(p))
        c.subscribe([p["topic"]])
    else:
        c = ck.Consumer(
            {
                "bootstrap.servers": p["bootstrap"],
                "group.id": "skiff-compat-unused",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "check.crcs": True,
                **p.get("consumer_config", {}),
            }
        )
        c.assign([ck.TopicPartition(p["topic"], p.get("partition", 0), p.get("offset", 0))])
    t = threading.Thread(
        target=poll_loop,
        args=(c, p, received, ready, bool(p.get("group")), state),
        daemon=True,
    )
    t.start()
    ready.wait(15)
    reports = produce_messages(p)
    t.join(p.get("timeout_s", 20) + 5)
    c.close()
    return {"reports": reports, "received": received, "errors": state["errors"]}


def produce(p):
    return {"reports": produce_messages(p)}


def consume_group(p):
    received = []
    state = {}
    c = ck.Consumer(group_conf(p))
    c.subscribe([p["topic"]])
    poll_loop(c, p, received, commit=True, state=state)
    committed = c.committed([ck.TopicPartition(p["topic"], 0)], timeout=10)
    c.close()
    return {
        "received": received,
        "committed": [tp.offset for tp in committed],
        "assigned_ms": state.get("assigned_ms"),
        "errors": state["errors"],
    }


def alter(p):
    """IncrementalAlterConfigs SET of p.config on topic p.topic -> {error}."""
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": p["bootstrap"]})
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
        for k, v in p["config"].items()
    ]
    res = ConfigResource(ResourceType.TOPIC, p["topic"], incremental_configs=entries)
    fs = admin.incremental_alter_configs([res])
    try:
        for f in fs.values():
            f.result(15)
        return {"error": None}
    except ck.KafkaException as e:
        return {"error": e.args[0].name()}


def end_offsets(p):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=p["bootstrap"])
    tp = TopicPartition(p["topic"], p.get("partition", 0))
    samples = []
    deadline = time.time() + p.get("timeout_s", 15)
    while time.time() < deadline:
        t = now_ms()
        end = c.end_offsets([tp])[tp]
        if not samples or samples[-1][1] != end:
            samples.append([t, end])
        if end >= p["until"]:
            break
        time.sleep(0.02)
    c.close()
    return {"samples": samples}


if __name__ == "__main__":
    main(
        {
            "create": create,
            "timed": timed,
            "produce": produce,
            "consume_group": consume_group,
            "end_offsets": end_offsets,
            "alter": alter,
        }
    )
