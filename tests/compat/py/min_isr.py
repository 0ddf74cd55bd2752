"""confluent-kafka commands of the min.insync.replicas test (issue 17,
tests/compat/tests/cluster_min_isr.rs): a long-lived acks=all probe producer driven through
stdin, and a reader of one partition up to its high watermark.

probe: ONE producer (p.config: acks=all, no idempotence, no retries, so the broker's error
code reaches the delivery report unchanged). Every stdin line `TAG N` produces the values
`TAG-0` .. `TAG-(N-1)` to partition 0 of p.topic, flushes, and reports on stderr
{"tag", "reports": [[value, offset or null, code, name]], "unflushed", "t"}, where code is 0
for an acknowledgement and KafkaError.code() otherwise (the Kafka error code for a broker
answer, a negative librdkafka code for a local one). Stdin closed: prints
{"reports": every report, "unflushed": total}.

read: {"records": [[offset, value]] of partition 0 of p.topic from the beginning to its high
watermark (asked first), "high": the high watermark}.

Usage: min_isr.py COMMAND JSON; prints one JSON line (see _common.py).
"""

import sys
import time

import confluent_kafka as ck

from _common import main, progress, to_str


def probe(p):
    conf = {"bootstrap.servers": p["bootstrap"]}
    conf.update(p.get("config", {}))
    prod = ck.Producer(conf)
    # Metadata first, so the first probe does not race the connection to the leader.
    prod.list_topics(p["topic"], timeout=10)
    everything, unflushed_total = [], 0
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        tag, n = words[0], int(words[1])
        reports = []

        def cb(err, msg):
            if err is None:
                reports.append([to_str(msg.value()), msg.offset(), 0, None])
            else:
                reports.append([to_str(msg.value()), None, err.code(), err.name()])

        for i in range(n):
            prod.produce(p["topic"], value=("%s-%d" % (tag, i)).encode(), partition=0, on_delivery=cb)
        unflushed = prod.flush(p.get("flush_s", 20))
        unflushed_total += unflushed
        everything.extend(reports)
        progress({"tag": tag, "reports": reports, "unflushed": unflushed, "t": time.time()})
    return {"reports": everything, "unflushed": unflushed_total}


def read(p):
    c = ck.Consumer(
        {
            "bootstrap.servers": p["bootstrap"],
            # Required by the Python binding; never used: assign() only, nothing committed.
            "group.id": "skiff-compat-unused",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
        }
    )
    tp = ck.TopicPartition(p["topic"], 0)
    _, high = c.get_watermark_offsets(tp, timeout=10)
    c.assign([ck.TopicPartition(p["topic"], 0, ck.OFFSET_BEGINNING)])
    records, deadline = [], time.time() + p.get("timeout_s", 30)
    while (records[-1][0] + 1 if records else 0) < high:
        if time.time() > deadline:
            raise SystemExit("read stopped at %d of %d" % (len(records), high))
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            raise SystemExit("read: %s" % m.error())
        records.append([m.offset(), to_str(m.value())])
    c.close()
    return {"records": records, "high": high}


main({"probe": probe, "read": read})
