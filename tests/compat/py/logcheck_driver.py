"""The workload driver of design/reliability.md ("The workload driver"): runs real
confluent-kafka clients against the broker and writes the JSON-lines history that
`cargo run -p logcheck -- check HISTORY` checks (format: crates/logcheck/src/history.rs).

Command (ONE JSON line out, see _common.py):
- w1: the queue workload W1. p.producers idempotent producers (acks=all,
  enable.idempotence=true, max.in.flight<=5, generous message.timeout.ms) send unique integer
  values to random partitions of p.topic, each paced to p.rate sends/s; p.consumers consumers
  assign every partition from the beginning (no group, no commits, read_committed) and poll
  continuously. Runs until stdin is closed (or p.duration_s passes), then flushes the
  producers, stops the consumers and drains: a fresh consumer assigns every partition from
  the beginning and polls until its position reaches each partition's high watermark; the
  drain's assign and polls carry "final": true.

History rules (Appendix B of the note): `invoke` is written BEFORE each client call (assign,
poll, produce); a send is `ok` only with the offset of its delivery report; `fail` only for
the definite, non-retriable errors of DEFINITE (a retriable error that surfaces in a delivery
report ended retries whose earlier attempts may have been appended, so it is `info`), and
for produce() refusing the message locally (_QUEUE_FULL etc.: never sent); everything else is
`info`, including sends still undelivered when the driver stops. Keys are partition numbers
of p.topic. Processes: producers 0..P-1, consumers P..P+C-1, the drain P+C; a producer that
hits a fatal error writes `crash` and continues under a new process number.

Faults: each line written to stdin while it runs is a nemesis marker: `fault [text]` or
`heal [text]` (or a JSON object {"f": "fault"|"heal", "value": ...}), written to the history
as {"proc": "nemesis", "type": "info", "f": ...}; logcheck's liveness figures count from the
last heal. Closing stdin stops the run.

Params: bootstrap, topic, partitions, history (output path), producers (2), consumers (2),
rate (200), duration_s (none), flush_s (30), drain_timeout_s (60), seed, producer_config /
consumer_config (extra client settings), create ({"replication_factor", "config"}: create the
topic first; TOPIC_ALREADY_EXISTS is fine). Progress goes to stderr.

- w2: the transactional queue workload W2 (issue 18). p.producers transactional producers
  (transactional.id "<p.transactional_prefix or 'logcheck-w2'>-<index>", acks=all) each run
  transactions of 1-4 sends (unique integer values) to random partitions, paced to p.rate
  transactions/s; each transaction is aborted on purpose with probability p.abort_p (1/8).
  Consumers and the drain are W1's (read_committed, assign). Progress lines count
  transactions: "ok" committed, "fail" explicitly aborted, "info" unknown outcomes.

History rules of w2: one `txn` invoke (its send micro-ops) before begin_transaction; `ok` with
the delivery reports' offsets when commit_transaction returned; `fail` ONLY when the driver
chose to abort and abort_transaction returned (nothing of it may ever be visible); `info` for
every other end: a failed commit (even when the abort that follows succeeds: never abort-and-
claim after a commit was attempted, the KAFKA-17754 trigger), a produce refused locally, a
producer lost to a fatal error (then `crash`, and a new producer with the same
transactional.id, whose init_transactions fences the old one, continues under a new process
number).

Usage: logcheck_driver.py w1|w2 JSON.
"""

import json
import random
import sys
import threading
import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from _common import main, progress

# Delivery errors that prove nothing was appended, when not retriable (Appendix B).
DEFINITE = {
    ck.KafkaError.MSG_SIZE_TOO_LARGE,  # 10 MESSAGE_TOO_LARGE
    ck.KafkaError.INVALID_MSG,  # 2 CORRUPT_MESSAGE
    ck.KafkaError.INVALID_RECORD,  # 87
    ck.KafkaError.INVALID_REQUIRED_ACKS,  # 21
    ck.KafkaError.TOPIC_AUTHORIZATION_FAILED,  # 29
    ck.KafkaError.NOT_ENOUGH_REPLICAS,  # 19, rejected before append
    ck.KafkaError.UNKNOWN_TOPIC_OR_PART,  # 3
}

BEGINNING = ck.OFFSET_BEGINNING


class History:
    """The JSON-lines file; one lock, so lines are whole and `t` never goes back."""

    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")
        self.lock = threading.Lock()
        self.start = time.monotonic_ns()
        self.lines = 0

    def write(self, proc, type_, f, value=None, error=None, **extra):
        with self.lock:
            line = {"t": time.monotonic_ns() - self.start, "proc": proc, "type": type_, "f": f}
            line["value"] = value
            if error is not None:
                line["error"] = error
            line.update(extra)
            self.f.write(json.dumps(line, separators=(",", ":")) + "\n")
            self.lines += 1
            if self.lines % 256 == 0:
                self.f.flush()

    def close(self):
        with self.lock:
            self.f.flush()
            self.f.close()


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {"sent": 0, "ok": 0, "fail": 0, "info": 0, "polls": 0, "records": 0,
                  "poll_errors": 0, "crashes": 0}
        self.next_value = 0

    def add(self, name, n=1):
        with self.lock:
            self.c[name] += n

    def value(self):
        with self.lock:
            self.next_value += 1
            return self.next_value

    def snapshot(self):
        with self.lock:
            return dict(self.c)


def classify(err):
    """'fail' (definite) or 'info' for a delivery error."""
    if err.code() in DEFINITE and not err.retriable() and not err.fatal():
        return "fail"
    return "info"


def producer_conf(p, errors):
    conf = {
        "bootstrap.servers": p["bootstrap"],
        "acks": "all",
        "enable.idempotence": True,
        "max.in.flight.requests.per.connection": 5,
        "message.timeout.ms": 120000,
        "linger.ms": 5,
        "error_cb": errors.append,
    }
    conf.update(p.get("producer_config", {}))
    return conf


def consumer_conf(p):
    conf = {
        "bootstrap.servers": p["bootstrap"],
        # Required by the binding; never used: assign() only, nothing is committed.
        "group.id": "logcheck-driver-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        "check.crcs": True,
    }
    conf.update(p.get("consumer_config", {}))
    return conf


class ProducerSession:
    """One producer client under one process number; sends paired with completions by value."""

    def __init__(self, p, proc, h, counters):
        self.p, self.proc, self.h, self.counters = p, proc, h, counters
        self.errors = []
        self.pending = {}  # value -> key
        self.client = ck.Producer(producer_conf(p, self.errors))

    def on_delivery(self, err, msg):
        value = int(msg.value())
        key = self.pending.pop(value, msg.partition())
        if err is None:
            self.counters.add("ok")
            self.h.write(self.proc, "ok", "send", [["send", key, [msg.offset(), value]]])
        else:
            kind = classify(err)
            self.counters.add(kind)
            self.h.write(self.proc, kind, "send", [["send", key, value]], error=err.name())

    def send(self, key):
        value = self.counters.value()
        self.pending[value] = key
        self.counters.add("sent")
        self.h.write(self.proc, "invoke", "send", [["send", key, value]])
        try:
            self.client.produce(self.p["topic"], value=str(value).encode(), partition=key,
                                on_delivery=self.on_delivery)
        except BufferError:
            del self.pending[value]
            self.counters.add("fail")
            self.h.write(self.proc, "fail", "send", [["send", key, value]], error="_QUEUE_FULL")
            self.client.poll(0.05)
            return
        except ck.KafkaException as e:  # refused locally: never sent
            del self.pending[value]
            self.counters.add("fail")
            self.h.write(self.proc, "fail", "send", [["send", key, value]],
                         error=e.args[0].name())
        self.client.poll(0)

    def fatal(self):
        return any(e.fatal() or e.code() == ck.KafkaError._FATAL for e in self.errors)

    def close(self, flush_s, reason):
        """Flushes; whatever is still undelivered is indefinite."""
        self.client.flush(flush_s)
        for value, key in sorted(self.pending.items()):
            self.counters.add("info")
            self.h.write(self.proc, "info", "send", [["send", key, value]], error=reason)
        self.pending.clear()


def run_producer(p, index, procs, h, counters, stop):
    rng = random.Random(p.get("seed", 0) * 1000 + index)
    period = 1.0 / p.get("rate", 200)
    proc = index
    s = ProducerSession(p, proc, h, counters)
    next_at = time.monotonic()
    while not stop.is_set():
        if s.fatal():
            progress({"producer": proc, "fatal": [str(e) for e in s.errors]})
            s.close(5, "_FATAL")
            h.write(proc, "info", "crash", error="_FATAL")
            counters.add("crashes")
            proc = procs.next()
            s = ProducerSession(p, proc, h, counters)
        s.send(rng.randrange(p["partitions"]))
        next_at += period
        delay = next_at - time.monotonic()
        if delay > 0:
            s.client.poll(delay)
        else:
            next_at = time.monotonic()
    s.close(p.get("flush_s", 30), "_UNDELIVERED_AT_EXIT")


class Procs:
    def __init__(self, first):
        self.lock = threading.Lock()
        self.n = first

    def next(self):
        with self.lock:
            self.n += 1
            return self.n - 1


def assign(c, p, proc, h, final):
    keys = list(range(p["partitions"]))
    extra = {"final": True} if final else {}
    h.write(proc, "invoke", "assign", keys, **extra)
    c.assign([ck.TopicPartition(p["topic"], k, BEGINNING) for k in keys])
    h.write(proc, "ok", "assign", keys, **extra)


def poll_once(c, proc, h, counters, final):
    """One poll op: invoke, consume(), ok with the records per key (info if it raised)."""
    extra = {"final": True} if final else {}
    h.write(proc, "invoke", "poll", [["poll"]], **extra)
    try:
        msgs = c.consume(num_messages=500, timeout=0.1)
    except ck.KafkaException as e:
        counters.add("poll_errors")
        h.write(proc, "info", "poll", [["poll"]], error=e.args[0].name(), **extra)
        return 0
    reads, errors = {}, []
    for m in msgs:
        if m.error():
            if m.error().code() != ck.KafkaError._PARTITION_EOF:
                errors.append(m.error().name())
            continue
        reads.setdefault(str(m.partition()), []).append([m.offset(), int(m.value())])
    if errors:
        counters.add("poll_errors", len(errors))
        extra["errors"] = errors
    n = sum(len(r) for r in reads.values())
    counters.add("polls")
    counters.add("records", n)
    h.write(proc, "ok", "poll", [["poll", reads]], **extra)
    return n


def run_consumer(p, proc, h, counters, stop):
    c = ck.Consumer(consumer_conf(p))
    assign(c, p, proc, h, False)
    while not stop.is_set():
        poll_once(c, proc, h, counters, False)
    c.close()


def drain(p, proc, h, counters):
    """Polls every partition from the beginning up to its high watermark (taken after the
    producers stopped). Returns (drained, {partition: [position, high]})."""
    tps = [ck.TopicPartition(p["topic"], k) for k in range(p["partitions"])]
    # Asked at read_uncommitted: a read_committed consumer's watermark query answers the LSO,
    # which would let a drain stop short of a hanging transaction (W2).
    w = ck.Consumer(dict(consumer_conf(p), **{"isolation.level": "read_uncommitted"}))
    high = {tp.partition: w.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
    w.close()
    c = ck.Consumer(consumer_conf(p))
    assign(c, p, proc, h, True)
    deadline = time.monotonic() + p.get("drain_timeout_s", 60)
    positions = {}
    while True:
        poll_once(c, proc, h, counters, True)
        positions = {tp.partition: tp.offset for tp in c.position(tps)}
        done = all(high[k] == 0 or positions[k] >= high[k] for k in high)
        if done or time.monotonic() > deadline:
            break
    c.close()
    return done, {str(k): [positions.get(k), high[k]] for k in high}


def create_topic(p):
    spec = p["create"]
    a = AdminClient({"bootstrap.servers": p["bootstrap"]})
    new = NewTopic(p["topic"], num_partitions=p["partitions"],
                   replication_factor=spec.get("replication_factor", 1),
                   config=spec.get("config", {}))
    for f in a.create_topics([new], operation_timeout=10, request_timeout=20).values():
        try:
            f.result()
        except ck.KafkaException as e:
            if e.args[0].code() != ck.KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def watch_stdin(h, stop):
    """Nemesis markers, one per line, until EOF (which stops the run)."""
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        if raw.startswith("{"):
            marker = json.loads(raw)
            f, value = marker.get("f"), marker.get("value")
        else:
            f, _, value = raw.partition(" ")
        if f in ("fault", "heal"):
            h.write("nemesis", "info", f, value or None)
            progress({"nemesis": f, "value": value})
        else:
            progress({"ignored_stdin_line": raw})
    stop.set()


def run_workload(p, producer_fn):
    if p.get("create"):
        create_topic(p)
    h = History(p["history"])
    counters = Counters()
    stop = threading.Event()
    n_prod, n_cons = p.get("producers", 2), p.get("consumers", 2)
    procs = Procs(n_prod + n_cons + 1)
    threading.Thread(target=watch_stdin, args=(h, stop), daemon=True).start()
    producers = [threading.Thread(target=producer_fn, args=(p, i, procs, h, counters, stop))
                 for i in range(n_prod)]
    consumers = [threading.Thread(target=run_consumer, args=(p, n_prod + i, h, counters, stop))
                 for i in range(n_cons)]
    for t in consumers + producers:
        t.start()
    started = time.monotonic()
    last_report = 0.0
    while not stop.is_set():
        if p.get("duration_s") is not None and time.monotonic() - started > p["duration_s"]:
            stop.set()
        if time.monotonic() - last_report > 1:
            progress(counters.snapshot())
            last_report = time.monotonic()
        stop.wait(0.1)
    for t in producers:
        t.join()
    for t in consumers:
        t.join()
    drained, positions = drain(p, n_prod + n_cons, h, counters)
    h.close()
    out = counters.snapshot()
    out.update({"history": p["history"], "drained": drained, "drain_positions": positions,
                "libversion": ck.libversion()[0]})
    progress({"done": True, **out})
    return out


class TxnSession:
    """One transactional producer under one process number."""

    def __init__(self, p, proc, tid, h, counters):
        self.p, self.proc, self.h, self.counters = p, proc, h, counters
        conf = producer_conf(p, [])
        conf.pop("error_cb", None)
        timeout = p.get("transaction_timeout_ms", 10000)
        # librdkafka refuses message.timeout.ms above transaction.timeout.ms.
        conf.update({"transactional.id": tid, "transaction.timeout.ms": timeout,
                     "message.timeout.ms": min(conf["message.timeout.ms"], timeout)})
        conf.update(p.get("txn_config", {}))
        self.client = ck.Producer(conf)
        deadline = time.monotonic() + p.get("init_timeout_s", 60)
        while True:
            try:
                self.client.init_transactions(10)
                return
            except ck.KafkaException as e:
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def run_txn(self, sends, abort):
        """One transaction; returns False when the producer is unusable (fatal)."""
        h, proc = self.h, self.proc
        ops = [["send", k, v] for k, v in sends]
        self.counters.add("sent", len(sends))
        h.write(proc, "invoke", "txn", ops)
        offsets = {}

        def cb(err, msg):
            if err is None:
                offsets[int(msg.value())] = msg.offset()

        stage = "begin"
        try:
            self.client.begin_transaction()
            stage = "produce"
            for k, v in sends:
                self.client.produce(self.p["topic"], value=str(v).encode(), partition=k, on_delivery=cb)
            self.client.poll(0)
            if abort:
                stage = "abort"
                self.client.abort_transaction(30)
                self.counters.add("fail")
                h.write(proc, "fail", "txn", ops, error="ABORTED_BY_CLIENT")
                return True
            stage = "commit"
            deadline = time.monotonic() + 60
            while True:
                try:
                    self.client.commit_transaction(10)
                    break
                except ck.KafkaException as e:
                    if not e.args[0].retriable() or time.monotonic() > deadline:
                        raise
            self.counters.add("ok")
            h.write(proc, "ok", "txn", [["send", k, [offsets.get(v), v]] for k, v in sends])
            return True
        except (ck.KafkaException, BufferError) as e:
            err = e.args[0] if isinstance(e, ck.KafkaException) else None
            name = err.name() if err is not None else "_QUEUE_FULL"
            self.counters.add("info")
            h.write(proc, "info", "txn", ops, error="%s:%s" % (stage, name))
            if err is not None and err.txn_requires_abort() and not err.fatal():
                try:
                    self.client.abort_transaction(30)
                    return True
                except ck.KafkaException:
                    return False
            return err is None and stage == "produce" and self.abort_quietly()

    def abort_quietly(self):
        try:
            self.client.abort_transaction(30)
            return True
        except ck.KafkaException:
            return False


def run_txn_producer(p, index, procs, h, counters, stop):
    rng = random.Random(p.get("seed", 0) * 1000 + index)
    period = 1.0 / p.get("rate", 20)
    tid = "%s-%d" % (p.get("transactional_prefix", "logcheck-w2"), index)
    proc = index
    s = TxnSession(p, proc, tid, h, counters)
    next_at = time.monotonic()
    while not stop.is_set():
        sends = [(rng.randrange(p["partitions"]), counters.value()) for _ in range(rng.randint(1, 4))]
        abort = rng.random() < p.get("abort_p", 0.125)
        if not s.run_txn(sends, abort):
            h.write(proc, "info", "crash", error="_FATAL")
            counters.add("crashes")
            proc = procs.next()
            progress({"producer": index, "recreated_as": proc})
            s = TxnSession(p, proc, tid, h, counters)
        next_at += period
        delay = next_at - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            next_at = time.monotonic()


def w2(p):
    return run_workload(p, run_txn_producer)


def w1(p):
    return run_workload(p, run_producer)


main({"w1": w1, "w2": w2})
