"""confluent-kafka (PyPI) transactions against a Skiff cluster whose nodes are killed (issue 18,
tests/compat/tests/cluster_txn.rs).

Commands (ONE JSON line out, see _common.py):
- loop: one transactional producer (p.transactional_id) runs transactions 0, 1, 2, ... until
  its stdin is closed (or p.max_txns): transaction n writes p.per_partition records to EVERY
  partition of p.topic, each keyed "n" with the value "n:partition:i", then commits. Before
  each commit it prints a progress line {"committing": n, "ts": wall clock} (the test kills the
  coordinator's node right then), after it {"txn": n, "outcome": ..., "ts": ...}. Errors are handled as the
  librdkafka docs say: a retriable commit error retries the commit; an abortable one aborts
  (the outcome is "aborted" when the abort succeeded); a fatal one (fenced, or anything
  unrecoverable) ends that producer: the outcome is "unknown" and a new producer with the
  same transactional.id calls init_transactions (which completes or aborts the old
  transaction). Any other failure is "unknown": only the checker decides what happened.
  Returns every transaction's outcome and the counts.
- read: assigns every partition of p.topic from the beginning at p.isolation and polls until
  each position reaches the high watermark taken at the start by a read_uncommitted client
  (at read_committed that needs the LSO to reach it: every transaction's markers written, no
  hanging transaction), or p.timeout_s; returns the values per
  partition, the positions, the high watermarks and whether every partition got there.

Usage: txn_cluster.py COMMAND JSON.
"""

import sys
import threading
import time

import confluent_kafka as ck

from _common import main, progress


def err_of(e):
    return e.args[0] if isinstance(e, ck.KafkaException) else None


def name_of(e):
    err = err_of(e)
    return err.name() if err is not None else repr(e)


def producer_conf(p):
    conf = {
        "bootstrap.servers": p["bootstrap"],
        "transactional.id": p["transactional_id"],
        "transaction.timeout.ms": p.get("transaction_timeout_ms", 10000),
        "acks": "all",
        "linger.ms": 0,
        "request.timeout.ms": 5000,
        "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    conf.update(p.get("config", {}))
    return conf


def retrying(what, fn, deadline):
    """Calls fn until it succeeds, retrying retriable errors until the deadline."""
    while True:
        try:
            return fn()
        except ck.KafkaException as e:
            err = err_of(e)
            if err is None or not err.retriable() or time.time() > deadline:
                raise
            progress({"retry": what, "error": err.name()})
            time.sleep(0.1)


def new_producer(p, recreated):
    prod = ck.Producer(producer_conf(p))
    deadline = time.time() + p.get("init_timeout_s", 60)
    t0 = time.time()
    retrying("init_transactions", lambda: prod.init_transactions(10), deadline)
    progress({"init_transactions_s": round(time.time() - t0, 3), "recreated": recreated})
    return prod


def one_txn(prod, p, n):
    """Runs transaction n; returns (outcome, error name, producer still usable)."""
    deadline = time.time() + p.get("txn_timeout_s", 60)
    errors = []

    def cb(err, _msg):
        if err is not None:
            errors.append(err.name())

    try:
        prod.begin_transaction()
        for part in range(p["partitions"]):
            for i in range(p.get("per_partition", 2)):
                prod.produce(p["topic"], key=str(n).encode(), value=("%d:%d:%d" % (n, part, i)).encode(),
                             partition=part, on_delivery=cb)
        prod.poll(0)
        progress({"committing": n, "ts": time.time()})
        retrying("commit_transaction", lambda: prod.commit_transaction(10), deadline)
        return "committed", None, True
    except ck.KafkaException as e:
        err = err_of(e)
        name = name_of(e)
        if err is not None and err.txn_requires_abort() and not err.fatal():
            try:
                retrying("abort_transaction", lambda: prod.abort_transaction(10), deadline)
                return "aborted", name, True
            except ck.KafkaException as e2:
                return "unknown", "%s; abort: %s" % (name, name_of(e2)), False
        return "unknown", name, False


def loop(p):
    stop = threading.Event()

    def watch():
        for _ in sys.stdin:
            pass
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    recreated = 0
    prod = new_producer(p, recreated)
    txns, counts = [], {"committed": 0, "aborted": 0, "unknown": 0}
    n = 0
    while not stop.is_set() and n < p.get("max_txns", 1 << 30):
        outcome, error, usable = one_txn(prod, p, n)
        counts[outcome] += 1
        txns.append({"n": n, "outcome": outcome, "error": error})
        progress({"txn": n, "outcome": outcome, "error": error, "ts": time.time(), **counts})
        n += 1
        if not usable:
            recreated += 1
            prod = new_producer(p, recreated)
    return {"txns": txns, "counts": counts, "recreated": recreated}


def high_watermarks(p, tps):
    """The high watermarks, asked by a read_uncommitted consumer (librdkafka's watermark query
    of a read_committed consumer answers the LSO instead)."""
    c = ck.Consumer({"bootstrap.servers": p["bootstrap"], "group.id": "txn-cluster-unused",
                     "isolation.level": "read_uncommitted"})
    high = {tp.partition: c.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
    c.close()
    return high


def read(p):
    c = ck.Consumer({
        "bootstrap.servers": p["bootstrap"],
        "group.id": "txn-cluster-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": p.get("isolation", "read_committed"),
        "auto.offset.reset": "earliest",
    })
    tps = [ck.TopicPartition(p["topic"], k) for k in range(p["partitions"])]
    high = high_watermarks(p, tps)
    c.assign([ck.TopicPartition(p["topic"], k, ck.OFFSET_BEGINNING) for k in range(p["partitions"])])
    values = {str(k): [] for k in high}
    positions = {}
    deadline = time.time() + p.get("timeout_s", 30)
    done = False
    errors = []
    while time.time() < deadline:
        for m in c.consume(num_messages=500, timeout=0.2):
            if m.error():
                errors.append(m.error().name())
                continue
            values[str(m.partition())].append(m.value().decode())
        positions = {tp.partition: tp.offset for tp in c.position(tps)}
        done = all(high[k] == 0 or positions[k] >= high[k] for k in high)
        if done:
            break
    c.close()
    return {"values": values, "done": done, "errors": errors[:20],
            "positions": {str(k): positions.get(k) for k in high}, "high": {str(k): v for k, v in high.items()}}


main({"loop": loop, "read": read})
