#!/usr/bin/env python3
"""Idempotent-producer overhead benchmark (issue 5, "Performance"): cells P4 and P5 of
/work/shared/design/performance.md (1 KiB records, acks=all, linger.ms=5, no compression,
RF=1; 1 and 8 partitions), each with enable.idempotence on and off, as N interleaved pairs in
ONE run against ONE broker process.

Mental model: the load generator is this process (PyPI confluent-kafka, librdkafka); the broker
is a `skiff serve` child on a loopback port with a fresh temp log dir. Each measurement creates
a fresh topic, produces one warm-up record per partition and flushes it (connection, metadata
and, with idempotence, the producer id: librdkafka's PID state machine retries on a 500 ms
timer), then produces a fixed payload volume as fast as the client can (closed loop: produce()
until the local queue is full, then poll), flushes, deletes the topic, and records:
  - throughput: payload MB (10^6 bytes of record values) / wall seconds (first produce() to
    flush() returning), and records/s;
  - broker CPU-ms/MB: delta of utime+stime from /proc/<broker pid>/stat over the same window
    (clock ticks of 10 ms: keep the broker CPU per measurement well above 100 ticks);
  - client CPU-ms/MB (getrusage of this process, librdkafka threads included);
  - KiB of payload per Produce request, the mean Produce round trip (rtt: request sent to
    response read, i.e. broker time plus loopback) and the mean time a record waits in the
    client's queue before its request is sent (int_latency), all from librdkafka statistics.
Modes: "on" (enable.idempotence=true), "off" (false; librdkafka then pipelines up to 10^6
requests), and with --control "off1" (false, max.in.flight=1). librdkafka's idempotent
producer sends ONE Produce request at a time per partition whatever max.in.flight says
(confluentinc/librdkafka PR #4989, still open), so "off1" has the request pattern of "on"
without idempotence: the pair on/off1 isolates the broker's idempotence cost from that client
behaviour. With --generator SKIFF_BENCH two more modes run the Rust generator `skiff-bench produce`
(bench/src/produce_gen.rs, pinned to core 0 like this process): "gon" (idempotent) and
"goff" (not), both pipelining up to --gen-in-flight (5) requests on one connection with
batches of --gen-batch-size (16384) bytes, like the Java client; the two differ only in the
producer id / epoch / sequence fields of the batches, so gon/goff is the broker's idempotence
cost at an equal request pattern. The generator times its own run (after its warm-up) and
reads the broker's /proc stat over that window; --no-librdkafka leaves out on/off.
Within each pair the order of the modes rotates, so no mode always runs first. With
--pin the broker runs on core 1 and this generator on core 0 (taskset), as the design asks.

Output: one line per measurement, then per cell: median [min-max] of each mode, the ratio of
the medians and the per-pair ratios gon/goff, on/off and on/off1 (those present), and the
run-to-run spread of each mode ((max-min)/median of MB/s). A JSON copy of every measurement
goes to --json if given; the runs reported in docs/performance.md are in results/.

Usage (from the repo root, after `cargo build --release -p skiff -p skiff-bench`):
  .venv/bin/python bench/idempotence/idempotence_bench.py --pin --control
  .venv/bin/python bench/idempotence/idempotence_bench.py --pin \
      --generator target/release/skiff-bench
Options: --broker PATH (default target/release/skiff), --mb 400, --pairs 5, --cells P4,P5,
--control, --generator PATH, --no-librdkafka, --gen-batch-size, --gen-in-flight, --json FILE.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

CELLS = {"P4": 1, "P5": 8}
RECORD_BYTES = 1024
CLK_TCK = os.sysconf("SC_CLK_TCK")
MODES = {
    "on": {"enable.idempotence": True},
    "off": {"enable.idempotence": False},
    "off1": {"enable.idempotence": False, "max.in.flight": 1},
}
# Modes run by the Rust generator (`skiff-bench produce`): idempotent or not, same pipelining.
GEN_MODES = {"gon": True, "goff": False}
# (idempotent mode, its comparator): the ratios reported.
RATIOS = (("gon", "goff"), ("on", "off"), ("on", "off1"))
METRICS = (
    ("mb_per_s", "MB/s"),
    ("broker_cpu_ms_per_mb", "broker CPU-ms/MB"),
    ("client_cpu_ms_per_mb", "client CPU-ms/MB"),
    ("kib_per_request", "KiB per request"),
    ("rtt_ms", "produce rtt ms"),
    ("queue_ms", "client queue ms"),
)


def broker_cpu_ms(pid):
    """utime + stime of a process in ms (fields 14 and 15 of /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / CLK_TCK


def self_cpu_ms():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1000.0


def vm_hwm(pid):
    """Peak resident set of a process (VmHWM of /proc/PID/status)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return line.split(":", 1)[1].strip()
    return "?"


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def start_broker(binary, data_dir, pin):
    cmd = [
        binary,
        "serve",
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0",
        "--override",
        "log.dirs=%s" % data_dir,
    ]
    if pin:
        cmd = ["taskset", "-c", "1"] + cmd
    env = dict(os.environ, RUST_LOG="warn")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("skiff ready"):
        proc.kill()
        sys.exit("broker did not start: %r" % line)
    bind = [w for w in line.split() if w.startswith("bind=")][0][len("bind=") :]
    return proc, bind


def create_topic(admin, name, partitions):
    fs = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)],
        operation_timeout=10,
        request_timeout=20,
    )
    for f in fs.values():
        f.result()


def delete_topic(admin, name):
    for f in admin.delete_topics([name], operation_timeout=10, request_timeout=20).values():
        f.result()


def produce_requests(prod, stats):
    """Produce requests sent so far (from a statistics report emitted after this call)."""
    seen = len(stats)
    deadline = time.monotonic() + 5
    while len(stats) == seen and time.monotonic() < deadline:
        prod.poll(0.05)
    if len(stats) == seen:
        sys.exit("no librdkafka statistics report within 5 s")
    brokers = json.loads(stats[-1])["brokers"].values()
    return sum(b["req"].get("Produce", 0) for b in brokers if b["nodeid"] >= 0)


def window_means(reports):
    """Produce round trip (rtt) and in-queue time (int_latency) as seen by librdkafka, in ms:
    the means over every statistics window in `reports`, weighted by each window's count."""
    sums = {"rtt": [0.0, 0], "int_latency": [0.0, 0]}
    for raw in reports:
        for b in json.loads(raw)["brokers"].values():
            if b["nodeid"] < 0:
                continue
            for key, acc in sums.items():
                w = b[key]
                acc[0] += w["avg"] * w["cnt"]
                acc[1] += w["cnt"]
    return {k: (v[0] / v[1] / 1000.0 if v[1] else float("nan")) for k, v in sums.items()}


def measure(bootstrap, broker_pid, admin, topic, partitions, mode, total_mb):
    create_topic(admin, topic, partitions)
    stats = []
    conf = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "compression.type": "none",
        "statistics.interval.ms": 100,
        "stats_cb": stats.append,
    }
    conf.update(MODES[mode])
    prod = ck.Producer(conf)
    payload = os.urandom(RECORD_BYTES)
    for p in range(partitions):
        prod.produce(topic, payload, partition=p)
    if prod.flush(30):
        sys.exit("%s: warm-up records not delivered" % topic)
    n = int(total_mb * 1_000_000 // RECORD_BYTES)
    errors = []

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err.name())

    req0 = produce_requests(prod, stats)
    first_report = len(stats)
    cpu0, self0, t0 = broker_cpu_ms(broker_pid), self_cpu_ms(), time.monotonic()
    i = 0
    while i < n:
        try:
            prod.produce(topic, payload, partition=i % partitions, on_delivery=on_delivery)
            i += 1
        except BufferError:
            prod.poll(0.001)
    left = prod.flush(120)
    t1, cpu1, self1 = time.monotonic(), broker_cpu_ms(broker_pid), self_cpu_ms()
    requests = produce_requests(prod, stats) - req0
    lat = window_means(stats[first_report:])
    delete_topic(admin, topic)
    if left or errors:
        sys.exit("%s: %d unflushed, %d errors (%s)" % (topic, left, len(errors), errors[:3]))
    mb = n * RECORD_BYTES / 1e6
    secs = t1 - t0
    return {
        "topic": topic,
        "records": n,
        "mb": mb,
        "seconds": secs,
        "mb_per_s": mb / secs,
        "records_per_s": n / secs,
        "broker_cpu_ms_per_mb": (cpu1 - cpu0) / mb,
        "broker_cpu_util": (cpu1 - cpu0) / 1000.0 / secs,
        "client_cpu_ms_per_mb": (self1 - self0) / mb,
        "produce_requests": requests,
        "kib_per_request": n * RECORD_BYTES / 1024 / max(requests, 1),
        "rtt_ms": lat["rtt"],
        "queue_ms": lat["int_latency"],
    }


def measure_gen(gen, bootstrap, broker_pid, admin, topic, partitions, mode, total_mb, args):
    """One measurement with the Rust generator (pinned to core 0 with --pin): it does its own
    warm-up, times its run and reads the broker's CPU over that window itself."""
    create_topic(admin, topic, partitions)
    n = int(total_mb * 1_000_000 // RECORD_BYTES)
    cmd = [gen, "produce", "--bootstrap", bootstrap, "--topic", topic, "--records", str(n),
           "--record-bytes", str(RECORD_BYTES), "--batch-size", str(args.gen_batch_size),
           "--max-in-flight", str(args.gen_in_flight), "--broker-pid", str(broker_pid)]
    if GEN_MODES[mode]:
        cmd.append("--idempotent")
    if args.pin:
        cmd = ["taskset", "-c", "0"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    delete_topic(admin, topic)
    if out.returncode != 0:
        sys.exit("%s: generator failed: %s" % (topic, out.stderr.strip()[-2000:]))
    line = [l for l in out.stdout.splitlines() if l.startswith("produce: ")]
    if not line:
        sys.exit("%s: no produce line in %r" % (topic, out.stdout))
    kv = dict(w.split("=", 1) for w in line[0][len("produce: "):].split())
    f = lambda k: float(kv[k])
    return {
        "topic": topic,
        "records": int(kv["records"]),
        "mb": f("mb"),
        "seconds": f("seconds"),
        "mb_per_s": f("mb_per_s"),
        "records_per_s": f("records_per_s"),
        "broker_cpu_ms_per_mb": f("broker_cpu_ms_per_mb"),
        "broker_cpu_util": f("broker_cpu_ms") / 1000.0 / f("seconds"),
        "client_cpu_ms_per_mb": f("client_cpu_ms_per_mb"),
        "produce_requests": int(kv["requests"]),
        "kib_per_request": f("kib_per_request"),
        "rtt_ms": f("rtt_ms"),
        "queue_ms": float("nan"),
        "producer_id": int(kv["producer_id"]),
        "records_per_batch": int(kv["records_per_batch"]),
    }


def fmt(values, digits):
    return "%.*f [%.*f-%.*f]" % (
        digits, statistics.median(values), digits, min(values), digits, max(values))


def report(results, cells, modes, pairs):
    print()
    print("median [min-max] over %d pairs; ratios A/B of the medians, then per pair" % pairs)
    for cell in cells:
        rows = {
            m: sorted((r for r in results if r["cell"] == cell and r["mode"] == m),
                      key=lambda r: r["pair"])
            for m in modes
        }
        parts = CELLS[cell]
        print("%s (%d partition%s):" % (cell, parts, "" if parts == 1 else "s"))
        for metric, label in METRICS:
            line = "  %-17s" % label
            for m in modes:
                line += " %s %-23s" % (m, fmt([r[metric] for r in rows[m]], 2))
            print(line)
            for a, b in RATIOS:
                if a not in modes or b not in modes:
                    continue
                va = [r[metric] for r in rows[a]]
                vb = [r[metric] for r in rows[b]]
                per_pair = [x / y for x, y in zip(va, vb)]
                print("  %-17s %s/%s %.3f (pairs %s)" % (
                    "", a, b, statistics.median(va) / statistics.median(vb), fmt(per_pair, 3)))
        for m in modes:
            v = [r["mb_per_s"] for r in rows[m]]
            print("  run-to-run spread of MB/s, %-4s: %.1f%%" % (
                m, 100 * (max(v) - min(v)) / statistics.median(v)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--broker", default="target/release/skiff")
    ap.add_argument("--mb", type=float, default=400.0, help="payload MB per measurement")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--cells", default="P4,P5")
    ap.add_argument("--pin", action="store_true", help="broker on core 1, generator on core 0")
    ap.add_argument("--control", action="store_true",
                    help='add "off1" (idempotence off, max.in.flight=1) to every pair')
    ap.add_argument("--json", help="write all measurements here")
    ap.add_argument("--generator",
                    help="skiff-bench binary: adds modes gon/goff (the Rust pipelining "
                         "generator, idempotent or not) to every pair")
    ap.add_argument("--no-librdkafka", action="store_true",
                    help="with --generator: only the generator modes")
    ap.add_argument("--gen-batch-size", type=int, default=16384)
    ap.add_argument("--gen-in-flight", type=int, default=5)
    args = ap.parse_args()
    cells = [c.strip() for c in args.cells.split(",") if c.strip()]
    for c in cells:
        if c not in CELLS:
            sys.exit("unknown cell %s (known: %s)" % (c, ", ".join(CELLS)))
    modes = [] if (args.generator and args.no_librdkafka) else ["on", "off"]
    modes += ["off1"] if args.control else []
    modes += list(GEN_MODES) if args.generator else []
    if args.pin:
        os.sched_setaffinity(0, {0})

    data = tempfile.mkdtemp(prefix="skiff-idem-bench-")
    broker, bootstrap = start_broker(args.broker, os.path.join(data, "data"), args.pin)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    results = []
    try:
        print("uptime: %s" % uptime())
        print("broker %s pid %d, %s MB per measurement, %d pairs, cells %s, modes %s, pinned=%s"
              % (args.broker, broker.pid, args.mb, args.pairs, ",".join(cells),
                 ",".join(modes), args.pin))
        if args.generator:
            print("generator %s: batch.size %d, %d requests in flight"
                  % (args.generator, args.gen_batch_size, args.gen_in_flight))
        print("%-4s %-4s %-4s %9s %9s %12s %12s %9s %9s %8s %8s" % (
            "pair", "cell", "mode", "MB/s", "krec/s", "brokerms/MB", "clientms/MB",
            "brokerCPU", "KiB/req", "rtt ms", "queue ms"))
        for pair in range(args.pairs):
            for cell in cells:
                shift = pair % len(modes)
                for mode in modes[shift:] + modes[:shift]:
                    topic = "%s-%s-%d" % (cell.lower(), mode, pair)
                    if mode in GEN_MODES:
                        r = measure_gen(args.generator, bootstrap, broker.pid, admin, topic,
                                        CELLS[cell], mode, args.mb, args)
                    else:
                        r = measure(bootstrap, broker.pid, admin, topic, CELLS[cell], mode,
                                    args.mb)
                    r.update(pair=pair, cell=cell, mode=mode)
                    results.append(r)
                    print("%-4d %-4s %-4s %9.1f %9.1f %12.2f %12.2f %8.0f%% %9.0f %8.2f %8.1f" % (
                        pair, cell, mode, r["mb_per_s"], r["records_per_s"] / 1000,
                        r["broker_cpu_ms_per_mb"], r["client_cpu_ms_per_mb"],
                        100 * r["broker_cpu_util"], r["kib_per_request"], r["rtt_ms"],
                        r["queue_ms"]), flush=True)
        print("uptime: %s" % uptime())
        print("broker peak RSS (VmHWM): %s" % vm_hwm(broker.pid))
    finally:
        broker.terminate()
        try:
            broker.wait(30)
        except subprocess.TimeoutExpired:
            broker.kill()
        shutil.rmtree(data, ignore_errors=True)
    report(results, cells, modes, args.pairs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
