"""confluent-kafka (librdkafka) transactional clients (issue 18), for Debian's 1.7.0 and PyPI's 2.x:

- transactions: one transactional producer runs p.transactions in order, each
  {messages: [{key, value, partition}], commit: bool}; returns per transaction its outcome
  ("committed" / "aborted" / the error name) and the delivery reports;
- fence: producer A opens a transaction and produces; producer B with the same
  transactional.id calls init_transactions; A's commit must fail; returns both outcomes;
- hang: opens a transaction, produces p.messages, flushes, then exits the process WITHOUT
  committing (the coordinator must abort it after transaction.timeout.ms);
- ctp: consume-transform-produce: a group consumer reads p.input from the beginning, a
  transactional producer writes each record upper-cased to p.output and commits the input
  offsets with send_offsets_to_transaction, in transactions of p.batch records; with
  p.abort_last the last transaction is aborted instead; returns the counts.

Usage: txn_ck.py COMMAND JSON; prints one JSON line (see _common.py).
"""

import os
import time

import confluent_kafka as ck

from _common import main, progress, to_bytes, to_str


def err_name(e):
    if e is None:
        return None
    if isinstance(e, ck.KafkaException):
        e = e.args[0]
    return e.name()


def producer(p, tid):
    conf = {
        "bootstrap.servers": p["bootstrap"],
        "transactional.id": tid,
        "transaction.timeout.ms": p.get("transaction_timeout_ms", 60000),
    }
    conf.update(p.get("config", {}))
    return ck.Producer(conf)


def send(prod, topic, messages, reports):
    def cb(err, msg):
        reports.append({"error": err_name(err), "partition": msg.partition(), "offset": msg.offset()})

    for m in messages:
        kwargs = {}
        if m.get("partition") is not None:
            kwargs["partition"] = m["partition"]
        prod.produce(topic, value=to_bytes(m.get("value")), key=to_bytes(m.get("key")), on_delivery=cb, **kwargs)
        prod.poll(0)


def transactions(p):
    prod = producer(p, p["transactional_id"])
    t0 = time.time()
    prod.init_transactions(p.get("timeout_s", 30))
    progress({"init_transactions_s": round(time.time() - t0, 3)})
    out = []
    for t in p["transactions"]:
        reports = []
        try:
            prod.begin_transaction()
            send(prod, p["topic"], t["messages"], reports)
            if t.get("commit", True):
                prod.commit_transaction(p.get("timeout_s", 30))
                outcome = "committed"
            else:
                prod.flush(p.get("timeout_s", 30))
                prod.abort_transaction(p.get("timeout_s", 30))
                outcome = "aborted"
        except ck.KafkaException as e:
            outcome = err_name(e)
        out.append({"outcome": outcome, "reports": reports})
    return {"transactions": out}


def fence(p):
    a = producer(p, p["transactional_id"])
    a.init_transactions(30)
    a.begin_transaction()
    reports = []
    send(a, p["topic"], p["messages"], reports)
    a.flush(30)
    b = producer(p, p["transactional_id"])
    b.init_transactions(30)
    try:
        a.commit_transaction(30)
        a_outcome = "committed"
    except ck.KafkaException as e:
        err = e.args[0]
        a_outcome = {"name": err.name(), "fatal": err.fatal(), "abortable": err.txn_requires_abort()}
    b.begin_transaction()
    b_reports = []
    send(b, p["topic"], p["b_messages"], b_reports)
    b.commit_transaction(30)
    return {"a": a_outcome, "a_reports": reports, "b": "committed", "b_reports": b_reports}


def hang(p):
    prod = producer(p, p["transactional_id"])
    prod.init_transactions(30)
    prod.begin_transaction()
    reports = []
    send(prod, p["topic"], p["messages"], reports)
    prod.flush(30)
    progress({"hang": "exiting without commit", "reports": reports})
    import json
    import sys

    sys.stdout.write(json.dumps({"reports": reports}) + "\n")
    sys.stdout.flush()
    os._exit(0)


def ctp(p):
    c = ck.Consumer(
        {
            "bootstrap.servers": p["bootstrap"],
            "group.id": p["group"],
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    c.subscribe([p["input"]])
    prod = producer(p, p["transactional_id"])
    prod.init_transactions(30)
    total, txns, consumed = p["total"], 0, 0
    deadline = time.time() + p.get("timeout_s", 40)
    while consumed < total and time.time() < deadline:
        msgs = c.consume(min(p["batch"], total - consumed), 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            continue
        prod.begin_transaction()
        for m in msgs:
            prod.produce(p["output"], key=m.key(), value=(to_str(m.value()) or "").upper().encode(), partition=m.partition())
        prod.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        last = consumed + len(msgs) >= total
        if last and p.get("abort_last"):
            prod.abort_transaction(30)
        else:
            prod.commit_transaction(30)
        consumed += len(msgs)
        txns += 1
    committed = c.committed([ck.TopicPartition(p["input"], i) for i in range(p["partitions"])], 10)
    c.close()
    return {"consumed": consumed, "transactions": txns, "committed": {str(tp.partition): tp.offset for tp in committed}}


main({"transactions": transactions, "fence": fence, "hang": hang, "ctp": ctp})
