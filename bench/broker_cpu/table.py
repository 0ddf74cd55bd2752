#!/usr/bin/env python3
"""Markdown table of a broker_cpu_bench.py --json file (as pasted in docs/performance.md):
per mode median [min-max] of MB/s and of the CPU-ms/MB of the workers, the cleaner and the
process, the workers' and the process's ratio to the comparator (ratio of the medians, then
median [min-max] of the per-round ratios) and, for compaction, cleans and MB cleaned in the
windows and the cleaner's busy share of the window (cleaner CPU / window wall time).

Usage: python3 bench/broker_cpu/table.py RESULTS.json [COMPARATOR]"""

import json
import statistics
import sys


def fmt(v, d):
    return "%.*f [%.*f-%.*f]" % (d, statistics.median(v), d, min(v), d, max(v))


def main():
    rows = json.load(open(sys.argv[1]))
    suite = rows[0]["suite"]
    comp = sys.argv[2] if len(sys.argv) > 2 else {"delivery": "plain",
                                                  "compaction": "none"}[suite]
    modes = []
    for r in rows:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    by = {m: sorted((r for r in rows if r["mode"] == m), key=lambda r: r["round"])
          for m in modes}
    head = ["mode", "MB/s", "workers CPU-ms/MB", "cleaner CPU-ms/MB", "process CPU-ms/MB",
            "workers vs %s" % comp, "process vs %s" % comp]
    if suite == "compaction":
        head += ["cleans / MB cleaned per window", "cleaner busy"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for m in sorted(modes, key=lambda m: m != comp):
        rs = by[m]
        cells = [m, fmt([r["mb_per_s"] for r in rs], 0),
                 fmt([r["worker_cpu_ms_per_mb"] for r in rs], 2),
                 fmt([r["cleaner_cpu_ms_per_mb"] for r in rs], 2),
                 fmt([r["broker_cpu_ms_per_mb"] for r in rs], 2)]
        for k in ("worker_cpu_ms_per_mb", "broker_cpu_ms_per_mb"):
            if m == comp:
                cells.append("comparator")
                continue
            a = [r[k] for r in rs]
            b = [r[k] for r in by[comp]]
            per = [x / y for x, y in zip(a, b)]
            cells.append("%.0f%% (rounds %s)" % (
                100 * statistics.median(a) / statistics.median(b),
                fmt([100 * p for p in per], 0)))
        if suite == "compaction":
            cells.append("%s / %s" % (
                ",".join(str(r["cleans"]) for r in rs),
                ",".join("%.0f" % r["bytes_cleaned_mb"] for r in rs)))
            cells.append(fmt([100 * r["cleaner_cpu_ms"] / 1000 / r["seconds"] for r in rs], 0)
                         + " %")
        print("| " + " | ".join(cells) + " |")
    for m in modes:
        v = [r["mb_per_s"] for r in by[m]]
        print("\nrun-to-run spread of MB/s, %s: %.0f%%" % (
            m, 100 * (max(v) - min(v)) / statistics.median(v)), end="")
    print()


if __name__ == "__main__":
    main()
