#!/usr/bin/env python3
"""Broker-level produce CPU over TCP (bench2): issue 8 (delayed delivery) and issue 7
(compaction), each suite's modes interleaved in ONE run against ONE release broker.

Mental model: the broker is a `skiff serve` child (release build) on a loopback port with a
fresh temp log dir, pinned to core 1 (taskset); the load generator is the Rust
`skiff-bench produce` (bench/src/produce_gen.rs), pinned to core 0, one connection,
1 KiB records, acks=all, 16 KiB batches, 5 requests in flight, one partition, a fresh topic
per measurement (deleted after it). The generator times its own run (after a warm-up batch)
and reads, over that window, the broker's CPU from /proc: the whole process
(/proc/PID/stat) and per thread (/proc/PID/task/TID/stat): `skiff-worker` (the tokio
runtime: request decoding, validation, append, responses = the produce path) and
`skiff-cleaner-N` (the log cleaner). CPU-ms/MB = ms of CPU / MB (10^6 bytes) of values.

Suites (--suite delivery,compaction):
  delivery: "plain" (no delay settings, no delay headers) vs topics with
    delivery.delay.enable=true and 0% ("d0"), 1% ("d1") or 100% ("d100") of batches
    carrying `__delay_ms=600000` on their first record (every 100/P-th batch; nothing falls
    due during the run). Target: d0 and d1 within 10% of plain.
  compaction: one compacted topic "compacted" (cleanup.policy=compact, segment.bytes=1 MiB,
    min.cleanable.dirty.ratio=0.01) is pre-loaded once with --preload-mb of records over a
    key space of --keys (each key repeated), and left to settle. Modes, all producing to a
    fresh plain topic:
      "none":  nothing else happens (the compacted topic exists but is clean and idle: the
               cleaner does no clean in the window, checked);
      "clean": a second generator (core 0) writes to the compacted topic at --bg-rate MB/s
               with keys from the same space, which keeps it dirty above 1%, so the cleaner
               re-cleans it during the whole window (cleans and bytes counted from the admin
               HTTP port, GET /api/v1/partitions/compacted/0 "cleaner");
      "bg":    the same background load into a plain (keyed, not compacted) topic: no
               cleaner, so clean/bg isolates the cleaner from the background load's own
               produce cost, while clean/none is the brief's comparison.
    Before each measurement the cleaner is idle (its thread quiet); in "clean" the
    measurement starts once a clean has begun. Target: workers' CPU-ms/MB in "clean" within
    120% of the comparator.
Within each round the order of the modes rotates. Output: one line per measurement, then
per mode median [min-max], ratios of the medians to the comparator with the per-round
ratios, the run-to-run spread of MB/s; --json FILE keeps every measurement.

With --broker-cpus 0,1 the broker may use both cores (the cleaner then need not share the
workers' core; the generators stay on core 0): a diagnostic, not the pinned protocol.

Usage (repo root, after `cargo build --release -p skiff -p skiff-bench`):
  .venv/bin/python bench/broker_cpu/broker_cpu_bench.py --suite delivery --rounds 5
  .venv/bin/python bench/broker_cpu/broker_cpu_bench.py --suite compaction --rounds 5
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from confluent_kafka.admin import AdminClient, NewTopic

RECORD_BYTES = 1024
CLK_TCK = os.sysconf("SC_CLK_TCK")
SUITES = {
    "delivery": {
        "modes": ["plain", "d0", "d1", "d100"],
        "comparator": "plain",
    },
    "compaction": {
        "modes": ["none", "clean", "bg"],
        "comparator": "none",
        "extra_ratios": [("clean", "bg")],
    },
}
DELAY = {"plain": None, "d0": 0.0, "d1": 1.0, "d100": 100.0}
COMPACTED = "compacted"
COMPACTED_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "1048576",
    "min.cleanable.dirty.ratio": "0.01",
}
METRICS = (
    ("mb_per_s", "MB/s", 1),
    ("worker_cpu_ms_per_mb", "workers CPU-ms/MB", 3),
    ("cleaner_cpu_ms_per_mb", "cleaner CPU-ms/MB", 3),
    ("broker_cpu_ms_per_mb", "process CPU-ms/MB", 3),
    ("rtt_ms", "produce rtt ms", 2),
)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def thread_cpu_ms(pid, prefix):
    """Sum of utime+stime (ms) of the threads of `pid` whose name starts with `prefix`."""
    u, s = thread_user_sys_ms(pid, prefix)
    return u + s


def thread_user_sys_ms(pid, prefix):
    """(utime, stime) sums in ms of the threads of `pid` whose name starts with `prefix`."""
    user = system = 0.0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        if comm.startswith(prefix):
            fields = stat[stat.rindex(")") + 2 :].split()
            user += int(fields[11]) * 1000.0 / CLK_TCK
            system += int(fields[12]) * 1000.0 / CLK_TCK
    return user, system


def start_broker(binary, data_dir, pin, cpus="1", overrides=()):
    cmd = [binary, "serve"]
    for o in (
        "listeners=PLAINTEXT://127.0.0.1:0",
        "log.dirs=%s" % data_dir,
        "skiff.admin.listener=127.0.0.1:0",
        "log.cleaner.backoff.ms=100",
        "log.retention.check.interval.ms=1000",
    ) + tuple(overrides):
        cmd += ["--override", o]
    if pin:
        cmd = ["taskset", "-c", cpus] + cmd
    env = dict(os.environ, RUST_LOG="warn")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            text=True)
    bind = admin = None
    deadline = time.monotonic() + 30
    while (bind is None or admin is None) and time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        if not line:
            break
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if line.startswith("skiff ready admin"):
            admin = words["bind"]
        elif line.startswith("skiff ready listener"):
            bind = words["bind"]
    if bind is None or admin is None:
        proc.kill()
        sys.exit("broker did not start (listener %r, admin %r)" % (bind, admin))
    return proc, bind, admin


def create_topic(admin, name, config=None):
    fs = admin.create_topics(
        [NewTopic(name, num_partitions=1, replication_factor=1, config=config or {})],
        operation_timeout=10, request_timeout=20)
    for f in fs.values():
        f.result()


def delete_topic(admin, name):
    for f in admin.delete_topics([name], operation_timeout=10, request_timeout=20).values():
        f.result()


def cleaner_status(admin_bind, topic):
    """The "cleaner" section of the partition's admin view ({} before the first look)."""
    url = "http://%s/api/v1/partitions/%s/0" % (admin_bind, topic)
    with urllib.request.urlopen(url, timeout=10) as r:
        doc = json.load(r)

    def find(v):
        if isinstance(v, dict):
            if "cleaner" in v and isinstance(v["cleaner"], dict):
                return v["cleaner"]
            for x in v.values():
                got = find(x)
                if got is not None:
                    return got
        elif isinstance(v, list):
            for x in v:
                got = find(x)
                if got is not None:
                    return got
        return None

    return find(doc) or {}


def gen_cmd(args, bootstrap, topic, records, extra, pin_core="0"):
    cmd = [args.generator, "produce", "--bootstrap", bootstrap, "--topic", topic,
           "--records", str(records), "--record-bytes", str(RECORD_BYTES),
           "--batch-size", "16384", "--max-in-flight", "5"] + extra
    if args.pin:
        cmd = ["taskset", "-c", pin_core] + cmd
    return cmd


def parse_line(stdout, topic):
    line = [l for l in stdout.splitlines() if l.startswith("produce: ")]
    if not line:
        sys.exit("%s: no produce line in %r" % (topic, stdout))
    return dict(w.split("=", 1) for w in line[0][len("produce: "):].split())


def run_gen(args, bootstrap, topic, records, extra):
    out = subprocess.run(gen_cmd(args, bootstrap, topic, records, extra),
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit("%s: generator failed: %s" % (topic, out.stderr.strip()[-2000:]))
    return parse_line(out.stdout, topic)


def wait_cleaner_idle(pid, limit=300.0):
    """Until the cleaner threads used < 20 ms over 1 s; returns the seconds waited."""
    t0 = time.monotonic()
    last = thread_cpu_ms(pid, "skiff-cleaner")
    while time.monotonic() - t0 < limit:
        time.sleep(1.0)
        now = thread_cpu_ms(pid, "skiff-cleaner")
        if now - last < 20:
            return time.monotonic() - t0
        last = now
    sys.exit("the cleaner did not go idle within %.0f s" % limit)


def wait_cleaner_busy(pid, limit=30.0):
    """Until the cleaner threads used >= 20 ms over 0.2 s (a clean is running)."""
    t0 = time.monotonic()
    last = thread_cpu_ms(pid, "skiff-cleaner")
    while time.monotonic() - t0 < limit:
        time.sleep(0.2)
        now = thread_cpu_ms(pid, "skiff-cleaner")
        if now - last >= 20:
            return time.monotonic() - t0
        last = now
    sys.exit("the cleaner did not start within %.0f s" % limit)


def measure(args, ctx, suite, mode, rnd):
    pid, bootstrap, admin, admin_bind = ctx["pid"], ctx["bootstrap"], ctx["admin"], ctx["http"]
    topic = "%s-%s-%d" % (suite, mode, rnd)
    config = {}
    extra = ["--broker-pid", str(pid)]
    if suite == "delivery":
        if DELAY[mode] is not None:
            config["delivery.delay.enable"] = "true"
            extra += ["--delay-percent", str(DELAY[mode]), "--delay-ms", "600000"]
    create_topic(admin, topic, config)
    bg = None
    clean0 = None
    if suite == "compaction":
        wait_cleaner_idle(pid)
        if mode in ("clean", "bg"):
            target = COMPACTED if mode == "clean" else ctx["bg_topic"]
            bg = subprocess.Popen(
                gen_cmd(args, bootstrap, target, 10**9,
                        ["--keys", str(args.keys), "--rate-mb", str(args.bg_rate)]),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if mode == "clean":
                wait_cleaner_busy(pid)
            else:
                time.sleep(1.0)
        clean0 = cleaner_status(admin_bind, COMPACTED)
    n = int(args.mb * 1_000_000 // RECORD_BYTES)
    w0 = thread_user_sys_ms(pid, "skiff-worker")
    try:
        kv = run_gen(args, bootstrap, topic, n, extra)
    finally:
        if bg is not None:
            bg.terminate()
            bg.wait(30)
    w1 = thread_user_sys_ms(pid, "skiff-worker")
    r = {"suite": suite, "mode": mode, "round": rnd, "topic": topic}
    # The workers' user / system split, read by this script around the generator process
    # (so including its connect and warm-up: a diagnostic beside the generator's figures).
    r["worker_user_ms_per_mb"] = (w1[0] - w0[0]) / float(kv["mb"])
    r["worker_sys_ms_per_mb"] = (w1[1] - w0[1]) / float(kv["mb"])
    for k in ("mb", "seconds", "mb_per_s", "rtt_ms", "broker_cpu_ms", "broker_cpu_ms_per_mb",
              "worker_cpu_ms", "worker_cpu_ms_per_mb", "cleaner_cpu_ms",
              "cleaner_cpu_ms_per_mb"):
        r[k] = float(kv[k])
    r["batches"] = int(kv["batches"])
    r["delayed_batches"] = int(kv["delayed_batches"])
    if clean0 is not None:
        clean1 = cleaner_status(admin_bind, COMPACTED)
        r["cleans"] = clean1.get("cleans", 0) - clean0.get("cleans", 0)
        r["bytes_cleaned_mb"] = (clean1.get("bytes_cleaned", 0)
                                 - clean0.get("bytes_cleaned", 0)) / 1e6
        r["records_removed"] = (clean1.get("records_removed", 0)
                                - clean0.get("records_removed", 0))
        r["cleaner_error"] = clean1.get("last_error")
    delete_topic(admin, topic)
    return r


def fmt(values, digits):
    return "%.*f [%.*f-%.*f]" % (digits, statistics.median(values), digits, min(values),
                                 digits, max(values))


def report(results, suite, rounds):
    spec = SUITES[suite]
    modes, comp = spec["modes"], spec["comparator"]
    rows = {m: sorted((r for r in results if r["suite"] == suite and r["mode"] == m),
                      key=lambda r: r["round"]) for m in modes}
    pairs = [(m, comp) for m in modes if m != comp] + spec.get("extra_ratios", [])
    print("\n%s: median [min-max] over %d rounds; ratio of the medians (per-round ratios)"
          % (suite, rounds))
    for metric, label, digits in METRICS:
        print("  %s:" % label)
        for m in modes:
            print("    %-6s %s" % (m, fmt([r[metric] for r in rows[m]], digits)))
        for a, b in pairs:
            va = [r[metric] for r in rows[a]]
            vb = [r[metric] for r in rows[b]]
            if statistics.median(vb) == 0:
                continue
            per = [x / y for x, y in zip(va, vb) if y]
            print("    %s/%s %.3f (rounds %s)" % (a, b, statistics.median(va)
                                                 / statistics.median(vb), fmt(per, 3)))
    for m in modes:
        v = [r["mb_per_s"] for r in rows[m]]
        print("  run-to-run spread of MB/s, %-6s %.1f%%"
              % (m, 100 * (max(v) - min(v)) / statistics.median(v)))
    if suite == "compaction":
        for m in modes:
            print("  cleaner in the window, %-6s cleans %s, MB cleaned (read+written) %s" % (
                m, [r["cleans"] for r in rows[m]],
                [round(r["bytes_cleaned_mb"]) for r in rows[m]]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--broker", default="target/release/skiff")
    ap.add_argument("--generator", default="target/release/skiff-bench")
    ap.add_argument("--suite", default="delivery,compaction")
    ap.add_argument("--mb", type=float, default=300.0, help="payload MB per measurement")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-pin", dest="pin", action="store_false")
    ap.add_argument("--broker-cpus", default="1",
                    help="taskset list for the broker (default core 1; the generators stay "
                         "on core 0)")
    ap.add_argument("--keys", type=int, default=200_000, help="compacted topic key space")
    ap.add_argument("--preload-mb", type=float, default=400.0)
    ap.add_argument("--bg-rate", type=float, default=5.0,
                    help="MB/s of the background load in modes clean and bg")
    ap.add_argument("--broker-override", action="append", default=[], metavar="KEY=VALUE",
                    help="extra broker setting (repeatable), e.g. "
                         "log.cleaner.io.max.bytes.per.second=100000000")
    ap.add_argument("--json")
    args = ap.parse_args()
    suites = [s.strip() for s in args.suite.split(",") if s.strip()]
    for s in suites:
        if s not in SUITES:
            sys.exit("unknown suite %s" % s)
    if args.pin:
        os.sched_setaffinity(0, {0})
    data = tempfile.mkdtemp(prefix="skiff-bench2-")
    broker, bootstrap, http = start_broker(args.broker, os.path.join(data, "data"), args.pin,
                                           args.broker_cpus, args.broker_override)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ctx = {"pid": broker.pid, "bootstrap": bootstrap, "admin": admin, "http": http,
           "bg_topic": "bgplain"}
    results = []
    try:
        print("uptime: %s" % uptime())
        print("broker %s pid %d, generator %s, %s MB per measurement, %d rounds, pinned=%s "
              "(broker cores %s), overrides %s" % (args.broker, broker.pid, args.generator,
                                                   args.mb, args.rounds, args.pin,
                                                   args.broker_cpus, args.broker_override))
        for suite in suites:
            modes = SUITES[suite]["modes"]
            if suite == "compaction":
                create_topic(admin, COMPACTED, COMPACTED_CONFIG)
                create_topic(admin, ctx["bg_topic"])
                t0 = time.monotonic()
                kv = run_gen(args, bootstrap, COMPACTED,
                             int(args.preload_mb * 1_000_000 // RECORD_BYTES),
                             ["--keys", str(args.keys)])
                print("preloaded %s: %s MB over %d keys in %.1f s (%s MB/s)" % (
                    COMPACTED, kv["mb"], args.keys, time.monotonic() - t0, kv["mb_per_s"]))
                waited = wait_cleaner_idle(broker.pid)
                st = cleaner_status(http, COMPACTED)
                print("cleaner settled after %.1f s more: %s" % (waited, json.dumps(st)))
            print("%-10s %-6s %-5s %8s %9s %9s %9s %8s %6s %8s" % (
                "suite", "mode", "round", "MB/s", "workers", "cleaner", "process",
                "rtt ms", "cleans", "MBclean"))
            for rnd in range(args.rounds):
                shift = rnd % len(modes)
                for mode in modes[shift:] + modes[:shift]:
                    r = measure(args, ctx, suite, mode, rnd)
                    results.append(r)
                    print("%-10s %-6s %-5d %8.1f %9.3f %9.3f %9.3f %8.2f %6s %8s" % (
                        suite, mode, rnd, r["mb_per_s"], r["worker_cpu_ms_per_mb"],
                        r["cleaner_cpu_ms_per_mb"], r["broker_cpu_ms_per_mb"], r["rtt_ms"],
                        r.get("cleans", "-"),
                        "%.0f" % r["bytes_cleaned_mb"] if "bytes_cleaned_mb" in r else "-"),
                        flush=True)
                    if suite == "delivery" and DELAY[mode]:
                        want = int(r["batches"] * DELAY[mode] / 100)
                        if r["delayed_batches"] != want:
                            sys.exit("delayed batches %d, expected %d"
                                     % (r["delayed_batches"], want))
            if suite == "compaction":
                print("compacted topic at the end: %s"
                      % json.dumps(cleaner_status(http, COMPACTED)))
        print("uptime: %s" % uptime())
    finally:
        del ctx["admin"], admin
        broker.terminate()
        try:
            broker.wait(30)
        except subprocess.TimeoutExpired:
            broker.kill()
        shutil.rmtree(data, ignore_errors=True)
    for suite in suites:
        report(results, suite, args.rounds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
