"""kafka-python transactional clients (issue 18): transactions runs p.transactions in order
with one KafkaProducer(transactional_id=...), each {messages: [{key, value, partition}],
commit: bool}, and returns each transaction's outcome ("committed" / "aborted" / the error);
consume reads p.assign to the end offsets at p.isolation ("read_committed" or
"read_uncommitted"; kafka-python's end_offsets answer the LSO when read_committed).

Usage: txn_kp.py COMMAND JSON; prints one JSON line (see _common.py).
"""

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from _common import main, progress, to_bytes, to_str


def transactions(p):
    prod = KafkaProducer(
        bootstrap_servers=p["bootstrap"],
        transactional_id=p["transactional_id"],
        **p.get("config", {})
    )
    t0 = time.time()
    prod.init_transactions()
    progress({"init_transactions_s": round(time.time() - t0, 3)})
    out = []
    for t in p["transactions"]:
        try:
            prod.begin_transaction()
            futures = [
                prod.send(p["topic"], key=to_bytes(m.get("key")), value=to_bytes(m.get("value")), partition=m.get("partition"))
                for m in t["messages"]
            ]
            prod.flush(timeout=30)
            for f in futures:
                f.get(timeout=30)
            if t.get("commit", True):
                prod.commit_transaction()
                outcome = "committed"
            else:
                prod.abort_transaction()
                outcome = "aborted"
        except KafkaError as e:
            outcome = type(e).__name__
        out.append({"outcome": outcome})
    prod.close(timeout=10)
    return {"transactions": out}


def consume(p):
    c = KafkaConsumer(
        bootstrap_servers=p["bootstrap"],
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level=p["isolation"],
    )
    tps = [TopicPartition(p["topic"], part) for part in p["partitions"]]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    end = c.end_offsets(tps)
    keys = []
    deadline = time.time() + p.get("timeout_s", 20)
    while time.time() < deadline and any(c.position(tp) < end[tp] for tp in tps):
        for _, records in c.poll(timeout_ms=200).items():
            keys.extend(to_str(r.key) for r in records)
    done = all(c.position(tp) >= end[tp] for tp in tps)
    c.close()
    return {"keys": keys, "eof": done, "end_offsets": {str(tp.partition): o for tp, o in end.items()}}


main({"transactions": transactions, "consume": consume})
