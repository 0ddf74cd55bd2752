#!/usr/bin/env python3
"""A/B of two prebuilt Skiff release binaries on cells of the broker benchmark (issue 13's
performance bar). One command, from anywhere:

    ./bench/broker/run.sh --ab A_BIN,B_BIN [--runs 5] [--cells P2,C1] [--reads 3] [--json FILE]

(run.sh builds librdkafka's rdkafka_performance and fetches Tansu, whose admin client creates
the topics; no Tansu broker runs and nothing of Skiff is built.) A is the baseline, B the
candidate. A file `BIN.commit` beside a binary, if present, is printed as its commit.

Mental model: the cells and the measurement are broker_bench.py's and procs.py's (same
taskset pinning: broker on core 1, generator on core 0; same rdkafka_performance arguments;
a fresh broker process and empty log dir per produce measurement). Round r runs every cell
for A then B when r is odd, B then A when it is even, so slow drift of the shared machine hits
both. C1 here is a fresh broker per measurement too: start, load 1 GiB with P2's producer,
wait until idle, then --reads (3) timed catch-up reads from offset 0, the run's figure being
the read with the median broker CPU-ms/MB (broker_bench.py instead loads once and reads once
per round): one read of 1 GiB costs the broker ~0.2-0.3 s of CPU, and on the shared machine
one read in a few is disturbed by other jobs. No dd and no sendfile floor: A/B needs no
absolute limit.

The figure compared is broker CPU per MB of payload over the generator's run: produce for
produce cells (P*), fetch for C1. It is taken from the per-thread schedstat of the broker
(on-CPU ns summed over its threads) so that C1's ~200 ms of broker CPU is not read in 10 ms
ticks (a thread born in the window counts from zero); the tick figure of /proc/PID/stat
(broker_bench.py's) is printed beside it. If a broker thread exited during a measurement (it
takes its schedstat with it), that run's figure is the tick figure, and the run says which
thread it was.

Verdict per cell: PASS if median(B) <= 1.05 x median(A), or |median(B) - median(A)| <= the
spread (max - min) of A's runs (the baseline's run-to-run noise); else FAIL. Both binaries'
medians, min-max, every run and the per-round B/A ratios are printed. MB = 10^6 bytes.
Owns its work dir (logs, broker log dirs) and deletes it at the end; stops only the brokers
it started (procs.Broker).
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import time

import broker_bench
import procs
from broker_bench import CELLS, consume_args, fmt, produce_args, uptime
from procs import BenchError, Broker

LABELS = ("A", "B")
TOLERANCE = 1.05


def thread_names(pid, tids):
    names = []
    for tid in sorted(tids):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except OSError:
            names.append("tid %s" % tid)
    return names


def sched_window(pid, before, after):
    """Broker on-CPU ms between two tasks_schedstat_ns snapshots, per thread (a thread born in
    the window counts from 0), and the tids that vanished (their in-window CPU is lost)."""
    ms = sum(on - before.get(tid, (0, 0))[0] for tid, (on, _) in after.items()) / 1e6
    return ms, set(before) - set(after)


def describe_binary(path):
    commit_file = path + ".commit"
    commit = "?"
    if os.path.exists(commit_file):
        with open(commit_file) as f:
            commit = f.read().strip()
    return "%s (%s, commit %s, sha256 %s)" % (
        path,
        broker_bench.sh([path, "--version"]),
        commit,
        broker_bench.sh(["sha256sum", path]).split(" ")[0][:16],
    )


class AB:
    def __init__(self, opts):
        self.opts = opts
        self.bins = dict(zip(LABELS, opts.ab))
        self.results = []

    def broker(self, label, tag):
        return Broker("skiff", self.bins[label], self.opts.work, 0).start(tag)

    def measure(self, broker, args, size, records):
        before = procs.tasks_schedstat_ns(broker.pid)
        names0 = thread_names(broker.pid, before)
        res = procs.run_generator(self.opts.perf, args, broker.pid, size, records)
        after = procs.tasks_schedstat_ns(broker.pid)
        ms, vanished = sched_window(broker.pid, before, after)
        born = set(after) - set(before)
        res["broker_sched_ms"] = ms
        res["broker_sched_ms_per_mb"] = ms / res["payload_mb"]
        # A thread that exited took its in-window CPU with it: the tick figure is used then.
        res["threads_stable"] = not vanished
        res["threads_vanished"] = [n for t, n in zip(sorted(before), names0) if t in vanished]
        res["threads_born"] = thread_names(broker.pid, born)
        res["figure"] = res["broker_sched_ms_per_mb"] if not vanished else res["broker_ms_per_mb"]
        return res

    def run(self, cell_id, rnd, label):
        cell = CELLS[cell_id]
        records = cell["records"]
        tag = "%s-%s-r%d" % (cell_id.lower(), label, rnd)
        topic = "ab-%s" % cell_id.lower()
        b = self.broker(label, tag)
        try:
            time.sleep(1.0)
            procs.create_topic(self.opts.tansu, b.bootstrap, topic)
            if cell["kind"] == "produce":
                res = self.measure(b, produce_args(topic, b.bootstrap, cell, records), cell["size"], records)
            else:
                load = CELLS["P2"]
                procs.run_generator(
                    self.opts.perf, produce_args(topic, b.bootstrap, load, records), b.pid, cell["size"], records
                )
                waited, _ = procs.wait_idle(b.pid)
                reads = []
                for _ in range(self.opts.reads):
                    procs.reset_peak_rss(b.pid)
                    reads.append(self.measure(b, consume_args(topic, b.bootstrap, records), cell["size"], records))
                figures = [r["figure"] for r in reads]
                res = reads[figures.index(statistics.median_low(figures))]
                res.update(
                    settle_s=waited,
                    reads_ms_per_mb=figures,
                    threads_stable=res["threads_stable"],
                    threads_vanished=sorted({n for r in reads for n in r["threads_vanished"]}),
                )
            res.update(cell=cell_id, label=label, round=rnd, peak_rss_mib=procs.proc_mem_kib(b.pid)[1] / 1024.0)
        finally:
            b.stop()
        self.results.append(res)
        print(
            "%-3s %s r%d  %7.1f MB/s  broker %.3f ms/MB (schedstat %.3f, ticks %.2f)%s %4.0f%% core  run-queue wait %3.0f%%  "
            "gen %4.0f%%  cores %3.0f%%/%3.0f%%  load %.2f%s"
            % (
                cell_id,
                label,
                rnd,
                res["mb_s"],
                res["figure"],
                res["broker_sched_ms_per_mb"],
                res["broker_ms_per_mb"],
                " [thread exited: %s%s]"
                % (",".join(res["threads_vanished"]), "" if res["threads_stable"] else "; ticks used")
                if res["threads_vanished"]
                else "",
                res["broker_core_pct"],
                res["broker_runq_wait_pct"],
                res["gen_cpu_pct"],
                res["core0_busy_pct"],
                res["core1_busy_pct"],
                os.getloadavg()[0],
                "  reads %s" % " ".join("%.3f" % x for x in res["reads_ms_per_mb"])
                if "reads_ms_per_mb" in res
                else "",
            ),
            flush=True,
        )


def verdict(results, cell_id):
    """The summary lines of one cell; the last one is the verdict."""
    rs = [r for r in results if r["cell"] == cell_id]
    ticked = sum(1 for r in rs if not r["threads_stable"])
    key = "figure"
    what = "fetch" if CELLS[cell_id]["kind"] == "consume" else "produce"
    runs = {lab: {r["round"]: r[key] for r in rs if r["label"] == lab} for lab in LABELS}
    if not runs["A"] or not runs["B"]:
        return ["%s: no complete runs" % cell_id]
    med = {lab: statistics.median(runs[lab].values()) for lab in LABELS}
    spread_a = max(runs["A"].values()) - min(runs["A"].values())
    spread_b = max(runs["B"].values()) - min(runs["B"].values())
    diff = med["B"] - med["A"]
    ratio = med["B"] / med["A"]
    per_round = [runs["B"][k] / runs["A"][k] for k in sorted(runs["A"]) if k in runs["B"] and runs["A"][k] > 0]
    within_pct = med["B"] <= TOLERANCE * med["A"]
    within_spread = abs(diff) <= spread_a
    lines = []
    for lab in LABELS:
        xs = [runs[lab][k] for k in sorted(runs[lab])]
        mbs = [r["mb_s"] for r in rs if r["label"] == lab]
        lines.append(
            "%s %s broker CPU-ms/MB (%s): median %s, spread %.3f; runs %s; MB/s %s"
            % (
                cell_id,
                lab,
                what,
                fmt(xs, 3),
                max(xs) - min(xs),
                " ".join("%.3f" % x for x in xs),
                fmt(mbs, 0),
            )
        )
    reason = []
    if within_pct:
        reason.append("median within %d%%" % round((TOLERANCE - 1) * 100))
    if within_spread:
        reason.append("|diff| within A's spread")
    lines.append(
        "VERDICT %s %s CPU/MB: %s; B/A of medians %.3f (%+.1f%%), per round %s; diff %+.3f ms/MB, A's spread %.3f, "
        "B's %.3f (figure: schedstat%s)"
        % (
            cell_id,
            what,
            "PASS (" + ", ".join(reason) + ")" if reason else "FAIL",
            ratio,
            100.0 * (ratio - 1),
            fmt(per_round, 3),
            diff,
            spread_a,
            spread_b,
            "; 10 ms ticks in %d of %d runs, where a broker thread exited" % (ticked, len(rs)) if ticked else "",
        )
    )
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ab", required=True, help="A_BIN,B_BIN: baseline and candidate skiff binaries")
    ap.add_argument("--tansu", required=True, help="tansu binary (its admin client creates the topics)")
    ap.add_argument("--perf", required=True, help="rdkafka_performance binary")
    ap.add_argument("--work", required=True, help="work dir (deleted at the end)")
    ap.add_argument("--runs", type=int, default=5, help="rounds (each runs every cell for A and B)")
    ap.add_argument("--cells", default="P2,C1")
    ap.add_argument(
        "--reads", type=int, default=3, help="C1 reads per loaded broker; the run's figure is their median (low)"
    )
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--label", action="append", default=[], help="KEY=VALUE printed in the header")
    opts = ap.parse_args()
    opts.ab = opts.ab.split(",")
    if len(opts.ab) != 2:
        sys.exit("--ab wants two binaries, A_BIN,B_BIN")
    for path in opts.ab:
        if not os.access(path, os.X_OK):
            sys.exit("not an executable: %s" % path)
    cells = [c for c in opts.cells.split(",") if c]
    for c in cells:
        if c not in CELLS:
            sys.exit("unknown cell %s (known: %s)" % (c, ",".join(CELLS)))
    os.makedirs(opts.work, exist_ok=True)
    ab = AB(opts)
    header = {"start": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "uptime_start": uptime()}
    header.update(broker_bench.machine_info(opts.work))
    header.update({lab: describe_binary(path) for lab, path in zip(LABELS, opts.ab)})
    header.update(dict(kv.split("=", 1) for kv in opts.label))
    for k, v in header.items():
        print("# %s: %s" % (k, v), flush=True)
    t_start = time.monotonic()
    try:
        for rnd in range(1, opts.runs + 1):
            order = LABELS if rnd % 2 else tuple(reversed(LABELS))
            for cell in cells:
                for label in order:
                    ab.run(cell, rnd, label)
    except BenchError as e:
        sys.exit("A/B aborted: %s" % e)
    finally:
        header["uptime_end"] = uptime()
        header["wall_s"] = round(time.monotonic() - t_start)
        shutil.rmtree(opts.work, ignore_errors=True)
    print()
    print("# uptime_end: %s" % header["uptime_end"])
    print("# wall: %d s for %d rounds of %s" % (header["wall_s"], opts.runs, ",".join(cells)))
    for cell in cells:
        print()
        for line in verdict(ab.results, cell):
            print(line)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"header": header, "results": ab.results}, f, indent=1)


if __name__ == "__main__":
    main()
