#!/usr/bin/env python3
"""Skiff, Apache Kafka and Tansu side by side (issue 14 item 5). One command, from anywhere:

    ./bench/broker/run.sh --vs-kafka [--quick] [--runs N] [--phases matrix,latency,retained]
                          [--retained-gib 10] [--json FILE]

Mental model: run.sh prepares the binaries (Skiff release, rdkafka_performance built from
librdkafka's bundled source, Tansu 0.6, Apache Kafka 4.1.1 fetched with Maven) and calls this
driver, which owns one work dir. Every broker runs on core 1, every load generator on core 0
(`taskset`), the brokers one at a time. Figures come from the kernel (procs.py: utime+stime of
the broker process, all its threads, JIT and GC threads included; VmRSS/VmHWM), never from the
brokers. MB = 10^6 bytes of record payload. First, where the VM allows it, freed guest pages
are held for the run and the available memory is touched once (limits.hold_guest_memory: on
this Firecracker VM a write into a never-reused page-cache page costs a host fault, 2-3
CPU-ms/MB in the writer, whoever it is), and dd's price of a page-cache write is measured (the
floor under every produce cell).

Phases:
  matrix   per round, per broker (order rotated each round): every cell is a fresh broker
           process on an empty data dir (deleted after the cell), warmed up by 300k records of
           1 KiB on another topic (untimed: Kafka's JIT), then the cell on its own new topic
           (--one-process: one process per round for all cells instead; on this VM the page
           cache then fills with data the run never deletes, and writes into new page-cache
           pages cost several CPU-ms per MB on and off, see limits.hold_guest_memory).
           Cells: record size 100 B and
           1 KiB x acks=1 and acks=all with enable.idempotence x 1 and 8 producers (8
           rdkafka_performance processes, each an eighth of the records) x 1 and 64
           partitions (64: keyless records, librdkafka's sticky partitioner), then C (catch-up
           consume: the 1 KiB acks=1 1-partition topic read back from offset 0) and J1/Jall
           (kafka-producer-perf-test, 1 KiB, acks=1 / acks=all, 1 partition, the second load
           generator). Peak RSS is VmHWM over the cell's process (the round's with --one-process).
  latency  per broker, a fresh process: rdkafka_performance -l producer at a fixed rate (-r,
           paced on an absolute schedule that sleeps when ahead: run.sh's pacing patch; the
           stock pacer busy-polled and fell short of the rate) and a consumer (-l -A FILE,
           nice -10, on the same core); 1 KiB records, acks=1, linger.ms=0, one partition;
           the first 2 s of samples are dropped (the consumer's start), then p50/p99/p99.9 of
           the consumer's per-record produce->consume latency. Rates: a third of each broker's
           own peak (the matrix's 1 KiB acks=1 1x1 cell) and a third of Kafka's peak (the
           same offered rate for all three). Beside them, at the same rates and duration, the
           machine's floor (limits.latency_floor, `skiff-bench latency-floor`): a bare relay
           on the broker core forwarding the records from a paced client on the generator core
           back to it, once writing them to segment files rolled and fdatasync'ed at the
           broker's 1 GiB segment size ("floor+disk") and once without the disk ("floor"). A
           p99.9/p50 target is out of the broker's reach when the floor's p99.9 alone exceeds
           7x the broker's median: the verdict line says which.
  retained Skiff and Kafka only (Tansu's memory:// keeps nothing over a restart): load
           --retained-gib of 1 KiB records into one partition, wait until idle (under 50 ms
           of CPU in a second, at most 30 s), RSS; then
           --restarts clean restarts (SIGTERM, then start) and as many kill -9 restarts, each
           timed from the exec to the moment a consumer started with it has fetched the last
           record (servers.probe_ready, an absolute offset), RSS at ready and once idle; and the
           same probe against the running broker (the probe's own floor, in both figures).
Output: a line per measurement, markdown tables with median [min-max], ratios to Kafka, and
the issue's verdict lines. --json FILE keeps every measurement.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import limits
import procs
import servers
from broker_bench import fmt, machine_info, uptime
from procs import GENERATOR_CPU, BenchError
from servers import Server

# Below the ephemeral range (32768-60999), so no client connection holds them.
PORTS = {"skiff": 29092, "kafka": 29192, "tansu": 29292}
BROKERS = ("skiff", "kafka", "tansu")
RDK = [(size, acks, parts, prods) for size in (100, 1024) for acks in ("1", "all") for parts in (1, 64)
       for prods in (1, 8)]


def cell_id(size, acks, parts, prods):
    return "%s a%s %dp x%d" % ("100B" if size == 100 else "1KiB", acks, parts, prods)


def rdk_args(topic, bootstrap, size, acks, records, partitioned, linger=5, extra=()):
    a = ["-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(records), "-z", "none", "-q",
         "-X", "linger.ms=%d" % linger]
    if not partitioned:
        a += ["-p", "0"]
    if acks == "all":
        a += ["-a", "-1", "-X", "enable.idempotence=true"]
    else:
        a += ["-a", "1"]
    return a + list(extra)


def run_generators(cmds, broker_pid, size, expect_total, parse):
    """Runs the generator commands at once on the generator core; broker CPU and core load
    over their whole lives; throughput over the longest of their own windows. An untimed
    sync() first: no writeback of the previous cell's data runs during this one."""
    os.sync()
    j0, b0, w0 = procs.cpu_jiffies(), procs.proc_cpu_ms(broker_pid), procs.runq_wait_ms(broker_pid)
    t0 = time.monotonic()
    ps = [subprocess.Popen(["taskset", "-c", GENERATOR_CPU] + c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, text=True) for c in cmds]
    outs, gen_ms = [], 0.0
    for p in ps:
        outs.append(p.stdout.read())
        p.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        gen_ms += (ru.ru_utime + ru.ru_stime) * 1000.0
    wall_ms = (time.monotonic() - t0) * 1000.0
    b1, w1, j1 = procs.proc_cpu_ms(broker_pid), procs.runq_wait_ms(broker_pid), procs.cpu_jiffies()
    records, window_ms = 0, 1
    for p, out in zip(ps, outs):
        r, w = parse(p, out)
        records += r
        window_ms = max(window_ms, w)
    if records != expect_total:
        raise BenchError("generators moved %d of %d records:\n%s" % (records, expect_total, outs[0][-2000:]))
    mb = records * size / 1e6
    broker_ms = b1 - b0
    return {
        "records": records, "payload_mb": mb, "window_ms": window_ms, "wall_ms": wall_ms,
        "mb_s": mb / (window_ms / 1000.0), "rec_s": records / (window_ms / 1000.0),
        "broker_cpu_ms": broker_ms, "broker_ms_per_mb": broker_ms / mb,
        "broker_core_pct": 100.0 * broker_ms / window_ms,
        "gen_cpu_pct": 100.0 * gen_ms / window_ms, "gen_ms_per_mb": gen_ms / mb,
        "broker_runq_wait_pct": 100.0 * (w1 - w0) / window_ms,
        "core0_busy_pct": procs.core_busy_pct(j0, j1, 0), "core1_busy_pct": procs.core_busy_pct(j0, j1, 1),
    }


def parse_rdk(p, out):
    m = procs.PRODUCED.search(out)
    if m:
        if int(m.group(5)):
            raise BenchError("%s delivery failures:\n%s" % (m.group(5), out[-2000:]))
        return int(m.group(3)), int(m.group(6))
    m = procs.CONSUMED.search(out)
    if not m or p.returncode != 0:
        raise BenchError("rdkafka_performance exited %s:\n%s" % (p.returncode, out[-2000:]))
    return int(m.group(1)), int(m.group(3))


JPERF = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency")


def parse_jperf(p, out):
    m = list(JPERF.finditer(out))
    if not m or p.returncode != 0:
        raise BenchError("kafka-producer-perf-test exited %s:\n%s" % (p.returncode, out[-2000:]))
    n, rate = int(m[-1].group(1)), float(m[-1].group(2))
    return n, int(1000.0 * n / rate)


def percentile(sorted_xs, q):
    if not sorted_xs:
        return float("nan")
    k = min(len(sorted_xs) - 1, max(0, int(round(q * (len(sorted_xs) - 1)))))
    return sorted_xs[k]


class Bench:
    def __init__(self, opts):
        self.opts = opts
        self.results = []
        self.idle = {k: [] for k in BROKERS}
        self.lat = []
        self.restarts = []
        self.retained = {}
        self.failures = []
        self.dd = []
        self.held = False
        self.libs = servers.kafka_libs() if "kafka" in opts.brokers else None

    def warm(self):
        """Touches the available memory (see limits.hold_guest_memory) if freed pages are held."""
        return limits.touch_free_memory() if self.held else 0.0

    def server(self, kind):
        binary = {"skiff": self.opts.skiff, "tansu": self.opts.tansu, "kafka": self.libs}[kind]
        return Server(kind, binary, self.opts.work, PORTS[kind])

    def scaled(self, n):
        return max(8000, n // 10) if self.opts.quick else n

    def record(self, res):
        self.results.append(res)
        print("%-18s %-5s r%d %8.1f MB/s %9.0f rec/s  broker %6.2f ms/MB %4.0f%% core  peak %7.1f MiB  gen %4.0f%%  "
              "cores %3.0f%%/%3.0f%%" % (res["cell"], res["broker"], res["round"], res["mb_s"], res["rec_s"],
                                         res["broker_ms_per_mb"], res["broker_core_pct"], res["peak_rss_mib"],
                                         res["gen_cpu_pct"], res["core0_busy_pct"], res["core1_busy_pct"]), flush=True)

    def fresh(self, kind):
        s = self.server(kind)
        s.destroy()
        try:
            s.start()
        except BaseException:
            s.destroy()
            raise
        time.sleep(1.0)
        self.idle[kind].append(procs.proc_mem_kib(s.pid)[0])
        return s

    def fresh_warm(self, kind):
        s = self.fresh(kind)
        try:
            self.warm_up(s)
        except BaseException:
            s.destroy()
            raise
        return s

    def topic(self, s, name, parts):
        procs.create_topic(self.opts.tansu, s.bootstrap, name, parts)
        if s.kind != "tansu":
            servers.wait_topic_ready(s.bootstrap, name, parts)

    def warm_up(self, s):
        self.topic(s, "warmup", 1)
        n = self.scaled(300_000)
        run_generators([[self.opts.perf] + rdk_args("warmup", s.bootstrap, 1024, "1", n, False)], s.pid, 1024, n,
                       parse_rdk)

    def measure(self, s, kind, rnd, cell, cmds, size, total, parse):
        try:
            res = run_generators(cmds, s.pid, size, total, parse)
        except BenchError as e:
            # One failed cell (e.g. a client Tansu cannot serve) is reported, not fatal.
            s.check_alive()
            self.failures.append("%s %s r%d: %s" % (cell, kind, rnd, str(e)[:600]))
            print("FAILED %s %s r%d: %s" % (cell, kind, rnd, str(e)[:300]), flush=True)
            return
        res.update(cell=cell, broker=kind, round=rnd, peak_rss_mib=procs.proc_mem_kib(s.pid)[1] / 1024.0)
        self.record(res)

    def produce(self, s, kind, rnd, size, acks, parts, prods):
        cell = cell_id(size, acks, parts, prods)
        topic = "m-%d-%s-%d-%d-r%d" % (size, acks, parts, prods, rnd)
        self.topic(s, topic, parts)
        total = self.scaled(3_000_000 if size == 100 else 1_000_000) // prods * prods
        cmds = [[self.opts.perf] + rdk_args(topic, s.bootstrap, size, acks, total // prods, parts > 1)
                for _ in range(prods)]
        self.measure(s, kind, rnd, cell, cmds, size, total, parse_rdk)
        return topic, total

    def consume(self, s, kind, rnd, topic, records):
        procs.wait_idle(s.pid, quiet_ms=50, limit=30)
        procs.reset_peak_rss(s.pid)
        cmd = [self.opts.perf, "-C", "-t", topic, "-p", "0", "-b", s.bootstrap, "-o", "beginning", "-e",
               "-c", str(records), "-q"]
        self.measure(s, kind, rnd, "C 1KiB catch-up", [cmd], 1024, records, parse_rdk)

    def jperf(self, s, kind, rnd, acks):
        topic = "j-%s-r%d" % (acks, rnd)
        self.topic(s, topic, 1)
        n = self.scaled(1_000_000)
        props = ["bootstrap.servers=" + s.bootstrap, "acks=" + ("all" if acks == "all" else "1"),
                 "enable.idempotence=" + ("true" if acks == "all" else "false"), "compression.type=none"]
        cmd = (["java", "-Xmx512M", "-cp", os.path.join(self.libs, "*"), "org.apache.kafka.tools.ProducerPerformance",
                "--topic", topic, "--num-records", str(n), "--record-size", "1024", "--throughput", "-1",
                "--producer-props"] + props)
        self.measure(s, kind, rnd, "J 1KiB a%s 1p x1" % acks, [cmd], 1024, n, parse_jperf)

    def matrix_round(self, rnd, order):
        for kind in order:
            self.warm()
            per_cell = kind == "tansu" or not self.opts.one_process
            s = None if per_cell else self.fresh(kind)
            try:
                if s:
                    self.warm_up(s)
                for size, acks, parts, prods in RDK:
                    t = self.fresh_warm(kind) if per_cell else s
                    try:
                        topic, total = self.produce(t, kind, rnd, size, acks, parts, prods)
                        if (size, acks, parts, prods) == (1024, "1", 1, 1):
                            self.consume(t, kind, rnd, topic, total)
                    finally:
                        if per_cell:
                            t.destroy()
                if self.libs:
                    for acks in ("1", "all"):
                        t = self.fresh_warm(kind) if per_cell else s
                        try:
                            self.jperf(t, kind, rnd, acks)
                        finally:
                            if per_cell:
                                t.destroy()
            finally:
                if s:
                    s.destroy()

    def peak(self, kind):
        given = dict(kv.split("=") for kv in self.opts.peaks.split(",") if "=" in kv)
        if kind in given:
            return float(given[kind])
        xs = [r["rec_s"] for r in self.results if r["broker"] == kind and r["cell"] == cell_id(1024, "1", 1, 1)]
        return statistics.median(xs) if xs else None

    def latency(self, kind, rate, basis):
        self.warm()
        s = self.fresh(kind)
        try:
            self.topic(s, "lat", 1)
            secs = self.opts.latency_s
            n = int(rate * secs)
            afile = os.path.join(self.opts.work, "lat-%s-%s.txt" % (kind, basis.replace("/", "-")))
            cons = subprocess.Popen(
                ["taskset", "-c", GENERATOR_CPU, "nice", "-n", "-10", self.opts.perf, "-C", "-t", "lat", "-p", "0",
                 "-b", s.bootstrap, "-o", "beginning", "-c", str(n), "-l", "-A", afile, "-q"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(1.0)  # the consumer's start; its samples of the first 2 s are dropped anyway
            c0 = procs.proc_cpu_ms(s.pid)
            prod = subprocess.run(
                ["taskset", "-c", GENERATOR_CPU, self.opts.perf] + rdk_args(
                    "lat", s.bootstrap, 1024, "1", n, False, linger=0, extra=["-r", str(int(rate)), "-l"]),
                capture_output=True, text=True, timeout=secs * 4 + 60)
            try:
                cout, _ = cons.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                cons.kill()
                cout, _ = cons.communicate()
                raise BenchError("latency consumer on %s did not get %d records:\n%s" % (kind, n, cout[-1500:]))
            cpu = procs.proc_cpu_ms(s.pid) - c0
            with open(afile) as f:
                xs = [int(x) for x in f.read().split()]
            drop = int(rate * 2)
            kept = sorted(x / 1000.0 for x in xs[drop:])
            m = procs.PRODUCED.search(prod.stdout)
            achieved = int(m.group(3)) / (int(m.group(6)) / 1000.0) if m else float("nan")
            res = {"broker": kind, "basis": basis, "rate": rate, "achieved_rec_s": achieved, "samples": len(kept),
                   "p50_ms": percentile(kept, 0.5), "p99_ms": percentile(kept, 0.99),
                   "p999_ms": percentile(kept, 0.999), "max_ms": kept[-1] if kept else float("nan"),
                   "broker_ms_per_mb": cpu / (n * 1024 / 1e6)}
            res["p999_over_p50"] = res["p999_ms"] / res["p50_ms"]
            self.lat.append(res)
            print("latency %-5s %-12s %8.0f rec/s offered (%8.0f achieved): p50 %.2f p99 %.2f p99.9 %.2f max %.1f ms"
                  " (%d samples), broker %.2f ms/MB" % (kind, basis, rate, achieved, res["p50_ms"], res["p99_ms"],
                                                         res["p999_ms"], res["max_ms"], len(kept),
                                                         res["broker_ms_per_mb"]), flush=True)
        finally:
            s.destroy()

    def latency_floor(self, rate, basis):
        for disk in (True, False):
            r = limits.latency_floor(self.opts.floor_bin, self.opts.work if disk else None, rate,
                                     self.opts.latency_s)
            res = {"broker": "floor+disk" if disk else "floor", "basis": basis, "rate": rate,
                   "achieved_rec_s": r["achieved_rec_s"], "samples": r["samples"], "p50_ms": r["p50_ms"],
                   "p99_ms": r["p99_ms"], "p999_ms": r["p999_ms"], "max_ms": r["max_ms"],
                   "broker_ms_per_mb": float("nan")}
            res["p999_over_p50"] = res["p999_ms"] / res["p50_ms"]
            self.lat.append(res)
            print("latency %-10s %-12s %8.0f rec/s offered (%8.0f achieved): p50 %.3f p99 %.3f p99.9 %.3f max %.1f ms"
                  " (%d samples)" % (res["broker"], basis, rate, res["achieved_rec_s"], res["p50_ms"], res["p99_ms"],
                                     res["p999_ms"], res["max_ms"], res["samples"]), flush=True)

    def retained_phase(self, kind):
        self.warm()
        s = self.fresh(kind)
        idle_empty = self.idle[kind][-1]
        try:
            self.topic(s, "retained", 1)
            n = int(self.opts.retained_gib * (1 << 30)) // 1024
            res = run_generators([[self.opts.perf] + rdk_args("retained", s.bootstrap, 1024, "1", n, False)],
                                 s.pid, 1024, n, parse_rdk)
            waited, _ = procs.wait_idle(s.pid, quiet_ms=50, limit=30)
            rss, hwm = procs.proc_mem_kib(s.pid)
            info = {"load_mb_s": res["mb_s"], "load_ms_per_mb": res["broker_ms_per_mb"], "idle_empty_kib": idle_empty,
                    "rss_loaded_kib": rss, "hwm_loaded_kib": hwm, "data_bytes": s.data_bytes(), "settle_s": waited}
            print("retained %-5s loaded %.1f GiB at %.0f MB/s; RSS empty %.1f MiB, loaded+idle %.1f MiB, peak %.1f MiB"
                  % (kind, info["data_bytes"] / (1 << 30), res["mb_s"], idle_empty / 1024, rss / 1024, hwm / 1024),
                  flush=True)
            self.retained[kind] = info
            for mode in ["clean"] * self.opts.restarts + ["kill9"] * self.opts.restarts:
                stop_s = s.stop() if mode == "clean" else (s.kill9() or 0.0)
                ready_s, _ = servers.probe_ready(s, self.opts.perf, "retained", n - 1)
                rss_ready = procs.proc_mem_kib(s.pid)[0]
                procs.wait_idle(s.pid, quiet_ms=50, limit=30)
                rss_idle = procs.proc_mem_kib(s.pid)[0]
                floor_s, _ = servers.probe_ready(s, self.opts.perf, "retained", n - 1, spawn=False)
                r = {"broker": kind, "mode": mode, "stop_s": stop_s, "ready_s": ready_s, "rss_ready_kib": rss_ready,
                     "rss_idle_kib": rss_idle, "probe_floor_s": floor_s}
                self.restarts.append(r)
                print("restart %-5s %-5s stop %.2f s, ready after %.3f s (the probe alone: %.3f s), RSS at ready "
                      "%.1f MiB, idle %.1f MiB" % (kind, mode, stop_s, ready_s, floor_s, rss_ready / 1024,
                                                   rss_idle / 1024), flush=True)
        finally:
            s.destroy()


def med(xs):
    return statistics.median(xs) if xs else None


def cells_of(results):
    seen = []
    for r in results:
        if r["cell"] not in seen:
            seen.append(r["cell"])
    return seen


def report(b, brokers):
    res = b.results
    cols = (("mb_s", "MB/s", 1), ("broker_ms_per_mb", "broker CPU-ms/MB", 2), ("broker_core_pct", "broker % core", 0),
            ("peak_rss_mib", "peak RSS MiB", 0), ("gen_cpu_pct", "generator % core", 0),
            ("core0_busy_pct", "core 0 busy %", 0))
    out = []
    if res:
        out.append("| cell | broker | " + " | ".join(c[1] for c in cols) + " | MB/s / Kafka | CPU-ms/MB / Kafka |")
        out.append("|---|---|" + "---|" * (len(cols) + 2))
        for cell in cells_of(res):
            km = {k: med([r[k] for r in res if r["cell"] == cell and r["broker"] == "kafka"]) for k, _, _ in cols}
            for kind in brokers:
                rs = [r for r in res if r["cell"] == cell and r["broker"] == kind]
                if not rs:
                    continue
                ratio = ["-", "-"]
                if km["mb_s"] and kind != "kafka":
                    ratio = ["%.2f" % (med([r["mb_s"] for r in rs]) / km["mb_s"]),
                             "%.2f" % (med([r["broker_ms_per_mb"] for r in rs]) / km["broker_ms_per_mb"])]
                out.append("| %s | %s | " % (cell, kind) + " | ".join(fmt([r[k] for r in rs], d) for k, _, d in cols)
                           + " | %s | %s |" % tuple(ratio))
    return out


def verdicts(b):
    res, out = b.results, ["measurement failed: " + f for f in b.failures]
    cpu_ok, thr_ok, gen_bound = True, True, []
    for cell in cells_of(res):
        get = lambda kind, k: med([r[k] for r in res if r["cell"] == cell and r["broker"] == kind])  # noqa: E731
        if get("skiff", "mb_s") is None or get("kafka", "mb_s") is None:
            continue
        cpu = get("skiff", "broker_ms_per_mb") / get("kafka", "broker_ms_per_mb")
        thr = get("skiff", "mb_s") / get("kafka", "mb_s")
        gb = get("skiff", "core0_busy_pct") >= 95 or get("skiff", "gen_cpu_pct") >= 95
        if gb:
            gen_bound.append(cell)
        if cpu > 0.5:
            cpu_ok = False
            out.append("CPU per MB %s: Skiff/Kafka %.2f -> MISSED (target <= 0.5)" % (cell, cpu))
        if thr < 1.0 and not gb:
            thr_ok = False
            out.append("throughput %s: Skiff/Kafka %.2f, Skiff's generator core not saturated -> MISSED" % (cell, thr))
    compared = [c for c in cells_of(res) if any(r["cell"] == c and r["broker"] == "kafka" for r in res)]
    if compared:
        out.append("broker CPU per MB <= 0.5x Kafka's in every cell: %s" % ("met" if cpu_ok else "MISSED"))
        out.append("throughput >= Kafka's where the generator is not the bottleneck: %s; generator-bound in Skiff's "
                   "runs (core 0 >= 95%% busy): %s" % ("met" if thr_ok else "MISSED", ", ".join(gen_bound) or "none"))
    for basis in ("kafka/3", "own/3"):
        sk = [x for x in b.lat if x["broker"] == "skiff" and x["basis"] == basis]
        ka = [x for x in b.lat if x["broker"] == "kafka" and x["basis"] == basis]
        if sk and ka:
            r = sk[0]["p99_ms"] / ka[0]["p99_ms"]
            out.append("p99 e2e latency at %s (Skiff %.0f rec/s, Kafka %.0f rec/s): Skiff %.2f ms, Kafka %.2f ms, "
                       "ratio %.2f -> %s (target <= 0.5%s)" % (
                           basis, sk[0]["rate"], ka[0]["rate"], sk[0]["p99_ms"], ka[0]["p99_ms"], r,
                           "met" if r <= 0.5 else "MISSED", ", same offered rate" if basis == "kafka/3" else ""))
    for x in b.lat:
        if x["broker"] == "skiff":
            line = "p99.9/p50 Skiff at %s: %.1f -> %s (target <= 7)" % (
                x["basis"], x["p999_over_p50"], "met" if x["p999_over_p50"] <= 7 else "MISSED")
            fl = [f for f in b.lat if f["broker"] == "floor+disk" and f["basis"] == x["basis"]]
            if fl:
                need = 7 * x["p50_ms"]
                line += ("; machine floor at the same rate (bare relay + log writes): p50 %.3f, p99.9 %.3f ms; "
                         "<= 7 needs Skiff's p99.9 <= %.2f ms (7 x its p50), %s" % (
                             fl[0]["p50_ms"], fl[0]["p999_ms"], need,
                             "which the floor's p99.9 alone exceeds: unreachable on this machine"
                             if fl[0]["p999_ms"] > need else "which the floor allows"))
            out.append(line)
    si, ki = med(b.idle["skiff"]), med(b.idle["kafka"])
    if si and ki:
        out.append("idle RSS: Skiff %.1f MiB, Kafka %.1f MiB, Tansu %s MiB; Skiff/Kafka %.3f -> %s (target <= 0.1)" % (
            si / 1024, ki / 1024, "%.1f" % (med(b.idle["tansu"]) / 1024) if b.idle["tansu"] else "-", si / ki,
            "met" if si / ki <= 0.1 else "MISSED"))
    for kind in ("skiff", "kafka"):
        info = b.retained.get(kind)
        rs = [r for r in b.restarts if r["broker"] == kind]
        if info and rs:
            after = max(r["rss_idle_kib"] for r in rs)
            line = "RSS %s with %.1f GiB retained: %.1f MiB after the load, %.1f MiB idle after restarts (empty: %.1f)" % (
                kind, info["data_bytes"] / (1 << 30), info["rss_loaded_kib"] / 1024, after / 1024,
                info["idle_empty_kib"] / 1024)
            if kind == "skiff":
                line += " -> %s (target: independent of retained data, read as <= 2x the empty broker's)" % (
                    "met" if after <= 2 * info["idle_empty_kib"] else "MISSED")
            out.append(line)
    for mode in ("clean", "kill9"):
        sk = med([r["ready_s"] for r in b.restarts if r["broker"] == "skiff" and r["mode"] == mode])
        ka = med([r["ready_s"] for r in b.restarts if r["broker"] == "kafka" and r["mode"] == mode])
        fl = med([r["probe_floor_s"] for r in b.restarts if r["mode"] == mode])
        if sk is not None and ka is not None:
            out.append("restart to ready with %.1f GiB, %s: Skiff %.3f s, Kafka %.3f s, ratio %.3f -> %s (target <= 0.1); "
                       "the probe alone against a running broker takes %.3f s (in both figures)"
                       % (b.opts.retained_gib, mode, sk, ka, sk / ka, "met" if sk / ka <= 0.1 else "MISSED", fl))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skiff", required=True)
    ap.add_argument("--tansu", required=True)
    ap.add_argument("--perf", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=None, help="matrix rounds (2; --quick: 1)")
    ap.add_argument("--brokers", default="skiff,kafka,tansu")
    ap.add_argument("--phases", default="matrix,latency,retained")
    ap.add_argument("--retained-gib", type=float, default=10.0)
    ap.add_argument("--restarts", type=int, default=3)
    ap.add_argument("--latency-s", type=int, default=12)
    ap.add_argument("--floor-bin", default=None, help="skiff-bench (its latency-floor subcommand)")
    ap.add_argument("--peaks", default="",
                    help="with --phases latency alone: each broker's 1 KiB acks=1 1x1 peak in rec/s "
                         "from an earlier run's matrix, e.g. skiff=1012146,kafka=201572,tansu=216920")
    ap.add_argument("--one-process", action="store_true",
                    help="matrix: one Skiff / Kafka process per round for every cell (default: a fresh process "
                         "and data dir per cell, warmed up, as broker_bench.py does)")
    ap.add_argument("--quick", action="store_true", help="a tenth of the volume, 1 round, 1 GiB retained")
    ap.add_argument("--json")
    ap.add_argument("--label", action="append", default=[])
    opts = ap.parse_args()
    opts.brokers = [x for x in opts.brokers.split(",") if x]
    if opts.runs is None:
        opts.runs = 1 if opts.quick else 2
    if opts.quick:
        opts.retained_gib, opts.restarts, opts.latency_s = min(opts.retained_gib, 1.0), 1, 6
    phases = opts.phases.split(",")
    os.makedirs(opts.work, exist_ok=True)
    header = {"start": time.strftime("%Y-%m-%d %H:%M:%S"), "uptime_start": uptime()}
    header.update(machine_info(opts.work))
    header.update(dict(kv.split("=", 1) for kv in opts.label))
    for k, v in header.items():
        print("# %s: %s" % (k, v), flush=True)
    t0 = time.monotonic()
    b = Bench(opts)
    held = None
    try:
        held = limits.hold_guest_memory()
        if held is None:
            print("# guest memory: free page reporting knob absent or read-only: writes into new page-cache pages "
                  "may carry the host's faults (see limits.hold_guest_memory)", flush=True)
        else:
            b.held = True
            print("# guest memory: free page reporting held (%s, was %s; restored at the end); available memory "
                  "touched before each broker's measurements (first: %.0f s)"
                  % (dict(limits.PAGE_REPORTING_HOLD), dict(held), b.warm()), flush=True)
        for i in range(3):
            mb_s, ms_mb = limits.dd_write_cost(opts.work)
            b.dd.append((mb_s, ms_mb))
            print("limit dd bs=1M 2 GiB into a new file, core 1, run %d: %.0f MB/s, dd %.2f CPU-ms/MB" % (i + 1, mb_s, ms_mb),
                  flush=True)
        if "matrix" in phases:
            for rnd in range(1, opts.runs + 1):
                k = (rnd - 1) % len(opts.brokers)
                b.matrix_round(rnd, opts.brokers[k:] + opts.brokers[:k])
        if "latency" in phases:
            kpeak = b.peak("kafka")
            for kind in opts.brokers:
                own = b.peak(kind)
                if own:
                    b.latency(kind, own / 3.0, "own/3")
                if kpeak:
                    b.latency(kind, kpeak / 3.0, "kafka/3")
            if opts.floor_bin:
                if kpeak:
                    b.latency_floor(kpeak / 3.0, "kafka/3")
                spk = b.peak("skiff")
                if spk:
                    b.latency_floor(spk / 3.0, "own/3")
        if "retained" in phases:
            for kind in opts.brokers:
                if kind != "tansu":
                    b.retained_phase(kind)
    except BenchError as e:
        sys.exit("benchmark aborted: %s" % e)
    finally:
        limits.release_guest_memory(held)
        header["uptime_end"] = uptime()
        header["wall_s"] = round(time.monotonic() - t0)
        shutil.rmtree(opts.work, ignore_errors=True)
    print("\n# uptime_end: %s\n# wall: %d s\n" % (header["uptime_end"], header["wall_s"]))
    if b.dd:
        print("Limit: dd bs=1M of 2 GiB into a new file on core 1 (x%d): %s MB/s, %s CPU-ms/MB (the page-cache "
              "write floor under every produce figure)\n" % (len(b.dd), fmt([d[0] for d in b.dd], 0),
                                                             fmt([d[1] for d in b.dd], 2)))
    for line in report(b, opts.brokers):
        print(line)
    if b.lat:
        print("\n| broker | rate basis | offered rec/s | achieved rec/s | p50 ms | p99 ms | p99.9 ms | max ms | p99.9/p50 |"
              " broker CPU-ms/MB |\n|---|---|---|---|---|---|---|---|---|---|")
        for x in b.lat:
            print("| %s | %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.1f | %.1f | %.2f |" % (
                x["broker"], x["basis"], x["rate"], x["achieved_rec_s"], x["p50_ms"], x["p99_ms"], x["p999_ms"],
                x["max_ms"], x["p999_over_p50"], x["broker_ms_per_mb"]))
    if b.restarts:
        print("\n| broker | restart | stop s | ready s | probe alone s | RSS at ready MiB | RSS idle MiB |\n"
              "|---|---|---|---|---|---|---|")
        for kind in ("skiff", "kafka"):
            for mode in ("clean", "kill9"):
                rs = [r for r in b.restarts if r["broker"] == kind and r["mode"] == mode]
                if rs:
                    print("| %s | %s | %s | %s | %s | %s | %s |" % (
                        kind, mode, fmt([r["stop_s"] for r in rs], 2), fmt([r["ready_s"] for r in rs], 3),
                        fmt([r["probe_floor_s"] for r in rs], 3),
                        fmt([r["rss_ready_kib"] / 1024 for r in rs], 1), fmt([r["rss_idle_kib"] / 1024 for r in rs], 1)))
    print()
    for line in verdicts(b):
        print("- " + line)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"header": header, "dd": b.dd, "results": b.results, "latency": b.lat, "restarts": b.restarts,
                       "retained": b.retained, "idle_rss_kib": b.idle}, f, indent=1)


if __name__ == "__main__":
    main()
