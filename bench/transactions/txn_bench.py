#!/usr/bin/env python3
"""Transactions benchmark (issue 18's performance point): transactional produce throughput
against idempotent produce, and read_committed fetch CPU against read_uncommitted, for Skiff
and Apache Kafka in ONE run. One command, from the repository root:

    ./bench/transactions/run.sh              # the figures of record (~6 min once built)
    ./bench/transactions/run.sh --quick      # smoke run: figures mean nothing

run.sh builds what is missing (release `skiff` and `skiff-bench`, Kafka's jars with Maven)
and calls this driver, which can also be called directly: `python3
bench/transactions/txn_bench.py --skiff target/release/skiff --gen target/release/skiff-bench`.
Python 3 standard library only; it reuses bench/broker (servers.py: both brokers on fixed
ports pinned to core 1, Kafka as shipped through `scripts/kafka-reference.sh` with
KAFKA_REF_PROFILE=bench; procs.py: /proc accounting; broker_bench.py: median [min-max]).

Mental model: both brokers are started once (single node, every key at its default) and stay
up for the whole run, pinned to core 1; the load generator `skiff-bench` (bench/src/
produce_gen.rs, txn_gen.rs, fetch_gen.rs) and this driver run on core 0. Rounds alternate
the systems (round r: Skiff then Kafka, round r+1 Kafka then Skiff) and rotate the modes, so
drift of the shared machine hits everything alike. Before each cell both brokers are left
to settle (each under 15 ms of CPU per 0.5 s, at most 10 s); the idle broker's CPU during each
cell is printed ("other"), and the CPU of everything else on the machine ("rest": busy
jiffies of both cores minus the brokers, the generator and this driver, % of one core). Every figure comes from the generator's own window and the kernel: the
broker's utime+stime from /proc/PID/stat (all threads, Kafka's JIT and GC included), MB =
10^6 bytes.
  warm-up  per system, one untimed idempotent run and one 1,000-record-transaction run of
           --warmup-records (Kafka's JIT, the transaction coordinator's topic).
  produce  per round, per system, modes "idem" (idempotent producer), "txn100" and "txn1000"
           (transactions of 100 and 1,000 records, each committed): --records 1 KiB records
           to a fresh one-partition topic (deleted after), 16 KiB batches, 5 requests in
           flight, acks=all. The transactional modes are the same stream cut into
           transactions: AddPartitionsToTxn v3, the transaction's Produce requests pipelined,
           EndTxn v3 once all are answered; CONCURRENT_TRANSACTIONS (the previous commit's
           markers still being written) retried after 1 ms (--txn-retry-ms; the Java client
           waits 20). MB/s of record values over the generator's window, broker CPU-ms/MB,
           and the ratio of each transactional mode to "idem" of the same round and system.
           The round-trip limit: modes "rtt100" and "rtt1000" are "idem" that, every 100 or
           1,000 records, waits for every answer (the drain before EndTxn) and then makes 2
           no-op round trips (ApiVersions v3) on the same connection: the serial round-trip
           shape of a v1 transaction (drain, EndTxn, the next AddPartitionsToTxn) without any
           transaction work (`--drain-every N --extra-round-trips 2`). Reported per round:
           rtt/idem (the protocol's bound), txn/idem and txn/rtt (what the transaction costs
           beyond its round trips).
  fetch    per system, three topics written once (--fetch-records each): "plain"
           (idempotent), "txn1000" and "txn100" (committed transactions); per round each
           topic is read --passes times with isolation level 0 (read_uncommitted, "ru") and 1
           (read_committed, "rc"), in rotating order, by `skiff-bench fetch` (one connection,
           Fetch v11, the consumer's default 1 MiB per partition): broker CPU-ms/MB of batch
           bytes sent, and rc/ru per round.
Targets (issue 18): txn1000 MB/s within 10% of idem (ratio >= 0.90); rc CPU-ms/MB relative to
ru reported. --json FILE keeps every measurement. The work dir (default
/tmp/skiff-txn-bench-<pid>) is deleted at the end.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "broker"))

import procs  # noqa: E402
import servers  # noqa: E402
from broker_bench import fmt, machine_info, uptime  # noqa: E402
from procs import GENERATOR_CPU, BenchError  # noqa: E402

SYSTEMS = ("skiff", "kafka")
PORTS = {"skiff": 29700, "kafka": 29710}
MODES = ("idem", "txn100", "txn1000", "rtt100", "rtt1000")
PER_TXN = {"txn100": 100, "txn1000": 1000, "rtt100": 100, "rtt1000": 1000}
EXTRA_ROUND_TRIPS = 2  # EndTxn and the next AddPartitionsToTxn
FETCH_TOPICS = ("plain", "txn1000", "txn100")
RECORD_BYTES = 1024


def log(msg):
    print(msg, flush=True)


def kv_line(out, prefix):
    lines = [l for l in out.splitlines() if l.startswith(prefix)]
    if not lines:
        raise BenchError("no %r line in %r" % (prefix, out[-2000:]))
    return {k: v for k, v in (w.split("=", 1) for w in lines[-1][len(prefix):].split())}


def busy_ms():
    """Busy time of every core (all but idle and iowait) in ms, from /proc/stat."""
    return sum(b for b, _ in procs.cpu_jiffies().values()) * 1000.0 / procs.CLK_TCK


def ours_ms(broker_pids):
    """CPU ms of the brokers, the reaped generators and this driver."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (sum(procs.proc_cpu_ms(p) for p in broker_pids)
            + 1000.0 * (me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime))


class Bench:
    def __init__(self, opts):
        self.o = opts
        self.servers = {}
        self.txn_ids = 0

    def gen(self, *args, timeout=600):
        """Runs the generator; also sets self.rest_pct: the CPU of everything else on the
        machine meanwhile (busy jiffies of both cores minus the brokers, the generator and
        this driver), % of one core (200 = both cores)."""
        cmd = ["taskset", "-c", GENERATOR_CPU, self.o.gen] + [str(a) for a in args]
        pids = [srv.pid for srv in self.servers.values()]
        busy0, ours0, t0 = busy_ms(), ours_ms(pids), time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, RUST_BACKTRACE="0"))
        secs = time.monotonic() - t0
        self.rest_pct = 100.0 * ((busy_ms() - busy0) - (ours_ms(pids) - ours0)) / 1000.0 / secs
        if r.returncode != 0:
            raise BenchError("%s failed: %s" % (" ".join(cmd[3:6]), r.stderr.strip()[-2000:]))
        return r.stdout

    def topic(self, system, create=None, delete=None):
        args = ["topic", "--bootstrap", self.servers[system].bootstrap]
        if delete:
            args += ["--delete", delete]
        if create:
            args += ["--create", create]
        self.gen(*args)

    def settle(self):
        """Before a cell: both brokers quiet (< 15 ms of CPU in 0.5 s, at most 10 s each), so
        neither's background work (Kafka deletes a topic's files a minute later, JIT, GC)
        falls into the next window."""
        for srv in self.servers.values():
            procs.wait_idle(srv.pid, quiet_ms=15, interval=0.5, limit=10.0)

    def produce(self, system, topic, mode, records):
        self.settle()
        s = self.servers[system]
        args = ["produce", "--bootstrap", s.bootstrap, "--topic", topic, "--records", records,
                "--record-bytes", RECORD_BYTES, "--broker-pid", s.pid]
        if mode == "idem":
            args.append("--idempotent")
        elif mode.startswith("rtt"):
            args += ["--idempotent", "--drain-every", PER_TXN[mode],
                     "--extra-round-trips", EXTRA_ROUND_TRIPS]
        else:
            self.txn_ids += 1
            args += ["--transactional-id", "bench-%s-%d" % (mode, self.txn_ids),
                     "--records-per-txn", PER_TXN[mode], "--txn-retry-ms", self.o.txn_retry_ms]
        other = self.servers[[x for x in SYSTEMS if x != system][0]] if len(self.servers) > 1 else None
        o0 = procs.proc_cpu_ms(other.pid) if other else 0.0
        kv = kv_line(self.gen(*args), "produce: ")
        o1 = procs.proc_cpu_ms(other.pid) if other else 0.0
        secs = float(kv["seconds"])
        r = {k: float(kv[k]) for k in ("mb_per_s", "broker_cpu_ms_per_mb", "client_cpu_ms_per_mb",
                                       "rtt_ms", "seconds", "mb", "broker_sched_ms_per_mb")}
        r["other_pct"] = 100.0 * (o1 - o0) / 1000.0 / secs
        r["rest_pct"] = self.rest_pct
        r["broker_util_pct"] = 100.0 * float(kv["broker_cpu_ms"]) / 1000.0 / secs
        for k in ("txns", "txn_retries", "add_ms_per_txn", "end_ms_per_txn", "drains",
                  "extra_rtt_ms_per_drain"):
            if k in kv:
                r[k] = float(kv[k])
        return r

    def fetch(self, system, topic, isolation):
        self.settle()
        s = self.servers[system]
        kv = kv_line(self.gen("fetch", "--bootstrap", s.bootstrap, "--topic", topic,
                              "--isolation-level", isolation, "--passes", self.o.passes,
                              "--broker-pid", s.pid), "fetch: ")
        return {
            "mb_per_s": float(kv["mb_per_s"]),
            "broker_cpu_ms_per_mb": float(kv["broker_cpu_ms_per_mb"]),
            "broker_sched_ms_per_mb": float(kv["broker_sched_ms_per_mb"]),
            "client_cpu_ms_per_mb": float(kv["client_cpu_ms_per_mb"]),
            "mb": float(kv["mb"]),
            "broker_cpu_ms": float(kv["broker_cpu_ms"]),
            "broker_sched_ms": float(kv["broker_sched_ms"]),
            "rest_pct": self.rest_pct,
            "control_batches": int(kv["control_batches"]),
            "batches": int(kv["batches"]),
        }


def start(bench, system):
    o = bench.o
    binary = o.skiff if system == "skiff" else servers.kafka_libs()
    s = servers.Server(system, binary, o.work, PORTS[system])
    for port in (PORTS[system], PORTS[system] + 1):
        if not procs.port_free(port):
            raise BenchError("port %d is in use (another run?)" % port)
    s.start()
    bench.servers[system] = s
    return s


def summary(results, system, phase, key, mode):
    return [r[key] for r in results if r["system"] == system and r["phase"] == phase
            and r["mode"] == mode]


def per_round_ratio(results, system, phase, key, a, b):
    out = []
    rounds = sorted({r["round"] for r in results if r["phase"] == phase})
    for rnd in rounds:
        va = [r[key] for r in results if (r["system"], r["phase"], r["mode"], r["round"])
              == (system, phase, a, rnd)]
        vb = [r[key] for r in results if (r["system"], r["phase"], r["mode"], r["round"])
              == (system, phase, b, rnd)]
        if va and vb and vb[0]:
            out.append(va[0] / vb[0])
    return out


def report(results, systems, passes):
    log("")
    log("== produce: median [min-max] over rounds (1 KiB records, one partition)")
    log("| mode | system | MB/s | broker CPU-ms/MB (stat) | (schedstat) | broker CPU % "
        "| MB/s / idem (per round) | CPU-ms/MB / idem | retries/txn | AddPartitions ms/txn "
        "| EndTxn ms/txn | extra ms per txn (or drain) | other % | rest % |")
    log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode in MODES:
        for s in systems:
            g = lambda k: summary(results, s, "produce", k, mode)  # noqa: E731
            rows = [r for r in results if (r["system"], r["phase"], r["mode"]) == (s, "produce", mode)]
            ratio = per_round_ratio(results, s, "produce", "mb_per_s", mode, "idem")
            cpu_ratio = per_round_ratio(results, s, "produce", "broker_cpu_ms_per_mb", mode, "idem")
            txn = [r["txn_retries"] / max(r["txns"], 1) for r in rows if "txns" in r]
            # wall time a transaction adds over the same bytes produced idempotently, per round
            extra = [1000.0 * (1.0 / max(x, 1e-9) - 1.0) / max(idem, 1e-9)
                     * PER_TXN.get(mode, 0) * RECORD_BYTES / 1e6
                     for x, idem in zip(ratio, [v for v in summary(results, s, "produce",
                                                                   "mb_per_s", "idem")])]
            log("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                mode, s, fmt(g("mb_per_s"), 1), fmt(g("broker_cpu_ms_per_mb"), 3),
                fmt(g("broker_sched_ms_per_mb"), 3), fmt(g("broker_util_pct"), 0),
                "-" if mode == "idem" else fmt(ratio, 3),
                "-" if mode == "idem" else fmt(cpu_ratio, 3),
                fmt(txn, 2) if txn else "-",
                fmt(g("add_ms_per_txn"), 3) if txn else "-",
                fmt(g("end_ms_per_txn"), 3) if txn else "-",
                fmt(extra, 3) if mode != "idem" else "-",
                fmt(g("other_pct"), 1), fmt(g("rest_pct"), 0)))
    log("")
    log("== the round-trip limit: per-round ratios, median [min-max] (rtt: idem drained every "
        "N records, then %d no-op round trips)" % EXTRA_ROUND_TRIPS)
    log("| N | system | rtt MB/s | rtt / idem | txn / idem | txn / rtt | rtt CPU-ms/MB / idem "
        "| txn CPU-ms/MB / rtt | no-op round trips ms per drain | EndTxn + AddPartitions ms/txn |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for n in (1000, 100):
        rtt, txn = "rtt%d" % n, "txn%d" % n
        for s in systems:
            g = lambda k, m: summary(results, s, "produce", k, m)  # noqa: E731
            both = [r["add_ms_per_txn"] + r["end_ms_per_txn"] for r in results
                    if (r["system"], r["phase"], r["mode"]) == (s, "produce", txn)]
            log("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                n, s, fmt(g("mb_per_s", rtt), 1),
                fmt(per_round_ratio(results, s, "produce", "mb_per_s", rtt, "idem"), 3),
                fmt(per_round_ratio(results, s, "produce", "mb_per_s", txn, "idem"), 3),
                fmt(per_round_ratio(results, s, "produce", "mb_per_s", txn, rtt), 3),
                fmt(per_round_ratio(results, s, "produce", "broker_sched_ms_per_mb", rtt, "idem"), 3),
                fmt(per_round_ratio(results, s, "produce", "broker_sched_ms_per_mb", txn, rtt), 3),
                fmt(g("extra_rtt_ms_per_drain", rtt), 3), fmt(both, 3)))
    log("")
    log("== fetch: median [min-max] over rounds (broker CPU-ms per MB of batches sent, schedstat)")
    log("| topic | system | ru CPU-ms/MB | rc CPU-ms/MB | rc / ru (per round) | rc / ru (stat) "
        "| ru MB/s | rc MB/s | control batches per pass | rest % |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for t in FETCH_TOPICS:
        for s in systems:
            g = lambda k, iso: summary(results, s, "fetch", k, "%s-%s" % (t, iso))  # noqa: E731
            ratio = per_round_ratio(results, s, "fetch", "broker_sched_ms_per_mb",
                                    t + "-rc", t + "-ru")
            ratio_stat = per_round_ratio(results, s, "fetch", "broker_cpu_ms_per_mb",
                                         t + "-rc", t + "-ru")
            ctl = g("control_batches", "rc")
            rest = g("rest_pct", "ru") + g("rest_pct", "rc")
            log("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                t, s, fmt(g("broker_sched_ms_per_mb", "ru"), 4),
                fmt(g("broker_sched_ms_per_mb", "rc"), 4), fmt(ratio, 3), fmt(ratio_stat, 3),
                fmt(g("mb_per_s", "ru"), 0), fmt(g("mb_per_s", "rc"), 0),
                "%d" % (ctl[0] // max(1, passes)) if ctl else "-", fmt(rest, 0)))
    for s in systems:
        r = per_round_ratio(results, s, "fetch", "broker_sched_ms_per_mb", "txn1000-rc", "plain-ru")
        r2 = per_round_ratio(results, s, "fetch", "broker_sched_ms_per_mb", "txn100-rc", "plain-ru")
        log("%s: read_committed of txn1000 / read_uncommitted of plain: %s; txn100: %s"
            % (s, fmt(r, 3), fmt(r2, 3)))
    log("")
    for s in systems:
        r = per_round_ratio(results, s, "produce", "mb_per_s", "txn1000", "idem")
        if r:
            v = statistics.median(r)
            log("target txn1000 >= 0.90 x idem MB/s, %s: %.3f (%s)"
                % (s, v, "met" if v >= 0.90 else "MISSED by %.1f%%" % (100 * (0.90 - v) / 0.90)))
        lim = per_round_ratio(results, s, "produce", "mb_per_s", "rtt1000", "idem")
        vs = per_round_ratio(results, s, "produce", "mb_per_s", "txn1000", "rtt1000")
        if lim and vs:
            log("measured round-trip limit rtt1000 / idem, %s: %.3f; txn1000 / rtt1000: %.3f"
                % (s, statistics.median(lim), statistics.median(vs)))


def run(opts):
    bench = Bench(opts)
    results = []
    systems = [s for s in opts.systems.split(",") if s]
    log("uptime at start: %s" % uptime())
    log("machine: %s" % json.dumps(machine_info(opts.work)))
    for label in opts.label:
        log(label)
    log("records per produce cell %d, per fetch topic %d, %d rounds, %d passes per fetch cell, "
        "txn retry %s ms" % (opts.records, opts.fetch_records, opts.rounds, opts.passes,
                             opts.txn_retry_ms))
    try:
        for s in systems:
            srv = start(bench, s)
            log("%s up on %s (pid %d)" % (s, srv.bootstrap, srv.pid))
        for s in systems:
            for mode in ("idem", "txn1000"):
                bench.topic(s, create="warm-%s" % mode)
                r = bench.produce(s, "warm-%s" % mode, mode, opts.warmup_records)
                bench.topic(s, delete="warm-%s" % mode)
                log("warm-up %s %s: %.1f MB/s" % (s, mode, r["mb_per_s"]))
        log("%-5s %-5s %-8s %9s %10s %10s %8s %8s %9s %7s %6s" % (
            "round", "sys", "mode", "MB/s", "CPUms/MB", "sched", "brk CPU", "rtt ms", "retries",
            "other", "rest"))
        for rnd in range(opts.rounds):
            order = systems if rnd % 2 == 0 else systems[::-1]
            shift = rnd % len(MODES)
            for s in order:
                for mode in MODES[shift:] + MODES[:shift]:
                    topic = "p-%s-%d" % (mode, rnd)
                    bench.topic(s, create=topic)
                    r = bench.produce(s, topic, mode, opts.records)
                    bench.topic(s, delete=topic)
                    r.update(system=s, phase="produce", mode=mode, round=rnd)
                    results.append(r)
                    log("%-5d %-5s %-8s %9.1f %10.3f %10.3f %7.0f%% %8.2f %9s %6.1f%% %5.0f%%" % (
                        rnd, s, mode, r["mb_per_s"], r["broker_cpu_ms_per_mb"],
                        r["broker_sched_ms_per_mb"], r["broker_util_pct"], r["rtt_ms"],
                        "%d" % r["txn_retries"] if "txn_retries" in r else "-", r["other_pct"],
                        r["rest_pct"]))
        for s in systems:
            for t in FETCH_TOPICS:
                bench.topic(s, create="f-" + t)
                bench.produce(s, "f-" + t, "idem" if t == "plain" else t, opts.fetch_records)
        cells = [(t, iso) for t in FETCH_TOPICS for iso in ("ru", "rc")]
        for rnd in range(opts.rounds):
            order = systems if rnd % 2 == 0 else systems[::-1]
            shift = rnd % len(cells)
            for s in order:
                for t, iso in cells[shift:] + cells[:shift]:
                    r = bench.fetch(s, "f-" + t, 1 if iso == "rc" else 0)
                    r.update(system=s, phase="fetch", mode="%s-%s" % (t, iso), round=rnd,
                             passes=opts.passes)
                    results.append(r)
                    log("%-5d %-5s %-12s %7.0f MB/s %8.4f CPU-ms/MB (schedstat %.1f ms, stat %d ms) "
                        "rest %.0f%%" % (rnd, s, "%s-%s" % (t, iso), r["mb_per_s"],
                                         r["broker_sched_ms_per_mb"], r["broker_sched_ms"],
                                         r["broker_cpu_ms"], r["rest_pct"]))
        log("uptime at end: %s" % uptime())
    finally:
        for s in bench.servers.values():
            try:
                s.destroy()
            except Exception as e:  # noqa: BLE001
                log("stopping %s: %s" % (s.kind, e))
    report(results, systems, opts.passes)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skiff", default=os.path.join(ROOT, "target/release/skiff"))
    ap.add_argument("--gen", default=os.path.join(ROOT, "target/release/skiff-bench"))
    ap.add_argument("--systems", default="skiff,kafka")
    ap.add_argument("--records", type=int, default=400_000, help="1 KiB records per produce cell")
    ap.add_argument("--fetch-records", type=int, default=400_000, help="records per fetch topic")
    ap.add_argument("--passes", type=int, default=5, help="reads of a topic per fetch cell")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup-records", type=int, default=200_000)
    ap.add_argument("--txn-retry-ms", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="tiny volumes: figures mean nothing")
    ap.add_argument("--work", default="/tmp/skiff-txn-bench-%d" % os.getpid())
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--json")
    opts = ap.parse_args()
    if opts.quick:
        opts.records, opts.fetch_records, opts.passes = 20_000, 20_000, 1
        opts.rounds, opts.warmup_records = 1, 5_000
    os.sched_setaffinity(0, {int(GENERATOR_CPU)})
    os.makedirs(opts.work, exist_ok=True)
    try:
        run(opts)
    except BenchError as e:
        sys.exit("txn_bench: %s" % e)
    finally:
        shutil.rmtree(opts.work, ignore_errors=True)


if __name__ == "__main__":
    main()
