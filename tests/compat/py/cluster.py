"""A Skiff cluster (issue 16) through confluent-kafka (PyPI) and kafka-python (PyPI), both in
one process, each bootstrapped from ONE node so every other broker is learned from Metadata.

Commands (ONE JSON line out, see _common.py):
- brokers: the broker ids, hosts and ports each client sees, and the controller id;
- roundtrip: creates p.topic (p.partitions partitions) through confluent-kafka's AdminClient,
  waits until both clients see a leader for every partition, then confluent-kafka produces
  record "ck-<i>" to partition i and kafka-python (idempotent, acks=all) "kp-<i>" to
  partition i; each client consumes every partition (assign, from the beginning) and reports
  what it read per partition, plus the leaders it saw;
- group: a confluent-kafka consumer in group p.group subscribes to p.topic, reads p.count
  records, commits them synchronously, and reports the committed offsets read back by a
  second consumer of the group (which finds the group's coordinator on its own).

Usage: cluster.py COMMAND JSON.
"""

import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from _common import main, progress


def ck_metadata(p, topic=None):
    return AdminClient({"bootstrap.servers": p["bootstrap"]}).list_topics(topic=topic, timeout=10)


def brokers(p):
    md = ck_metadata(p)
    ck_brokers = sorted([b.id, b.host, b.port] for b in md.brokers.values())
    admin = KafkaAdminClient(bootstrap_servers=p["bootstrap"], request_timeout_ms=10000)
    cluster = admin.describe_cluster()
    admin.close()
    kp_brokers = sorted([b["broker_id"], b["host"], b["port"]] for b in cluster["brokers"])
    return {
        "ck": ck_brokers,
        "ck_controller": md.controller_id,
        "kp": kp_brokers,
        "kp_controller": cluster["controller_id"],
    }


def ck_leaders(p):
    md = ck_metadata(p, p["topic"])
    t = md.topics.get(p["topic"])
    if t is None or t.error is not None:
        return None
    return {str(pid): part.leader for pid, part in t.partitions.items()}


def wait_leaders(p):
    deadline = time.time() + 20
    while True:
        leaders = ck_leaders(p)
        if leaders and len(leaders) == p["partitions"] and all(l >= 0 for l in leaders.values()):
            return leaders
        if time.time() > deadline:
            raise RuntimeError("no leader for every partition of %s: %r" % (p["topic"], leaders))
        time.sleep(0.1)


def roundtrip(p):
    admin = AdminClient({"bootstrap.servers": p["bootstrap"]})
    futures = admin.create_topics([NewTopic(p["topic"], p["partitions"])], operation_timeout=15)
    futures[p["topic"]].result(30)
    leaders = wait_leaders(p)
    progress({"leaders": leaders})
    n = p["partitions"]

    prod = ck.Producer({"bootstrap.servers": p["bootstrap"], "acks": "all", "linger.ms": 0})
    errors = []
    for i in range(n):
        prod.produce(p["topic"], ("ck-%d" % i).encode(), partition=i,
                     on_delivery=lambda err, _m: err and errors.append(str(err)))
    if prod.flush(30) or errors:
        raise RuntimeError("confluent-kafka produce failed: %r" % errors)

    kprod = KafkaProducer(bootstrap_servers=p["bootstrap"], acks="all", enable_idempotence=True)
    for f in [kprod.send(p["topic"], ("kp-%d" % i).encode(), partition=i) for i in range(n)]:
        f.get(timeout=30)
    kprod.close()

    ck_read = {str(i): [] for i in range(n)}
    c = ck.Consumer({"bootstrap.servers": p["bootstrap"], "group.id": "unused-assign",
                     "enable.auto.commit": False})
    c.assign([ck.TopicPartition(p["topic"], i, ck.OFFSET_BEGINNING) for i in range(n)])
    deadline = time.time() + 30
    while sum(len(v) for v in ck_read.values()) < 2 * n and time.time() < deadline:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        ck_read[str(m.partition())].append(m.value().decode())
    c.close()

    kp_read = {str(i): [] for i in range(n)}
    kc = KafkaConsumer(bootstrap_servers=p["bootstrap"], enable_auto_commit=False)
    kc.assign([TopicPartition(p["topic"], i) for i in range(n)])
    kc.seek_to_beginning()
    deadline = time.time() + 30
    while sum(len(v) for v in kp_read.values()) < 2 * n and time.time() < deadline:
        for tp, records in kc.poll(timeout_ms=200).items():
            kp_read[str(tp.partition)].extend(r.value.decode() for r in records)
    kp_leaders = {str(i): kc._client.cluster.leader_for_partition(TopicPartition(p["topic"], i))
                  for i in range(n)}
    kc.close()
    return {"leaders": leaders, "kp_leaders": kp_leaders, "ck": ck_read, "kp": kp_read}


def group(p):
    conf = {"bootstrap.servers": p["bootstrap"], "group.id": p["group"],
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    c = ck.Consumer(conf)
    c.subscribe([p["topic"]])
    read = 0
    deadline = time.time() + 40
    while read < p["count"] and time.time() < deadline:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        read += 1
    c.commit(asynchronous=False)
    c.close()
    c2 = ck.Consumer(conf)
    parts = [ck.TopicPartition(p["topic"], i) for i in range(p["partitions"])]
    committed = c2.committed(parts, timeout=15)
    c2.close()
    return {"read": read, "committed": {str(tp.partition): tp.offset for tp in committed}}


main({"brokers": brokers, "roundtrip": roundtrip, "group": group})
