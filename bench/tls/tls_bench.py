#!/usr/bin/env python3
"""TLS cost (issue 19): produce and catch-up fetch over an SSL listener against a PLAINTEXT
listener of the same broker process, interleaved in one run.

Mental model: bench/tls/run.sh prepares a release `skiff`, an `rdkafka_performance` linked
to Debian's librdkafka (built with OpenSSL: the bench/broker static build has no SSL, and
skiff-bench speaks no TLS) and a CA + server certificate made with the openssl CLI. Each
round starts a fresh broker (taskset core 1, temp log dir, RUST_LOG=warn) with two listeners,
`PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0`, the PEM keystore (key + chain) and PEM
truststore, creates one topic of one partition per protocol, then on that one process:
  produce: cell P2 of bench/broker (--records records of 1 KiB, acks=1, linger.ms=5, one
           producer, no compression) into the protocol's own topic, once over each listener;
  fetch:   catch-up consumption of the PLAINTEXT-produced topic from offset 0 to its end,
           once over each listener (the same bytes on disk; page-cache hot for both: the
           topic was just written and the machine has 24 GiB), --passes times;
and stops the broker. The log dirs live in /dev/shm (--data-root): a round holds 2 GB of log
(1 GB per topic at the defaults) and this machine's disk is shared and nearly full; in RAM the
produce path has no writeback and no disk I/O in it, for both listeners alike, so the
difference between them is the TLS work. The generator runs on core 0 and is bench/broker/procs.run_generator:
broker CPU is utime+stime of /proc/PID/stat (all threads) around the generator's life,
generator CPU its rusage, MB/s over rdkafka_performance's own window, MB = 10^6 bytes of
record values. Which protocol goes first alternates per round and per phase. `uptime`'s
1-minute load is recorded with every measurement: other engineers compile on this machine.

Output: one line per measurement, then per protocol and phase median [min-max] of MB/s,
broker CPU-ms/MB, broker and generator CPU as % of a core, the TLS/plain ratios of the
medians and per round, the extra broker CPU per MB that TLS costs, and the verdict line
(TLS produce MB/s >= 70% of plaintext). --json FILE keeps every measurement.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "broker"))
import procs  # noqa: E402  (bench/broker: pinning, /proc accounting, rdkafka_performance runs)
from broker_bench import CELLS, consume_args, produce_args  # noqa: E402

PROTOCOLS = ("plain", "tls")
KEYS = (
    ("mb_s", "MB/s", 1),
    ("broker_ms_per_mb", "broker CPU-ms/MB", 3),
    ("broker_core_pct", "broker CPU % of core", 0),
    ("gen_cpu_pct", "generator CPU % of core", 0),
    ("gen_ms_per_mb", "generator CPU-ms/MB", 3),
    ("broker_runq_wait_pct", "broker run-queue wait %", 0),
    ("gen_runq_wait_pct", "generator run-queue wait %", 0),
)


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class Broker:
    """One skiff process with a PLAINTEXT and an SSL listener, pinned to procs.BROKER_CPU."""

    def __init__(self, binary, certs, data_root):
        self.data = tempfile.mkdtemp(prefix="skiff-tls-bench-", dir=data_root)
        overrides = [
            "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "log.dirs=%s" % self.data,
            "ssl.keystore.type=PEM",
            "ssl.keystore.location=%s" % os.path.join(certs, "server.pem"),
            "ssl.truststore.type=PEM",
            "ssl.truststore.location=%s" % os.path.join(certs, "ca.crt"),
        ]
        cmd = ["taskset", "-c", procs.BROKER_CPU, binary, "serve"]
        for o in overrides:
            cmd += ["--override", o]
        self.log = open(os.path.join(self.data, "broker.out"), "w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log,
                                     stdin=subprocess.DEVNULL, text=True,
                                     env=dict(os.environ, RUST_LOG="warn"))
        self.bind = {}
        deadline = time.monotonic() + 60
        while len(self.bind) < 2 and time.monotonic() < deadline:
            line = self.proc.stdout.readline().strip()
            if not line:
                break
            if line.startswith("skiff ready listener"):
                w = dict(x.split("=", 1) for x in line.split() if "=" in x)
                self.bind["plain" if w["listener"] == "PLAINTEXT" else "tls"] = w["bind"]
        if len(self.bind) < 2:
            self.stop()
            sys.exit("the broker did not report both listeners (%r); its stderr:\n%s"
                     % (self.bind, self.stderr_tail()))

    @property
    def pid(self):
        return self.proc.pid

    def stderr_tail(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


def ssl_args(certs):
    return ["-X", "security.protocol=ssl", "-X", "ssl.ca.location=%s" % os.path.join(certs, "ca.crt")]


def create_topic(args, bootstrap, topic):
    r = subprocess.run(["taskset", "-c", procs.GENERATOR_CPU, args.skiff, "topic", "create",
                        "--brokers", bootstrap, "--partitions", "1",
                        "--replication-factor", "1", topic],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit("creating %s failed: %s %s" % (topic, r.stdout, r.stderr))


def measure(args, broker, rnd, phase, proto, topic):
    bootstrap = broker.bind[proto]
    if phase == "produce":
        cell = dict(CELLS["P2"])
        gen_args = produce_args(topic, bootstrap, cell, args.records)
    else:
        gen_args = consume_args(topic, bootstrap, args.records)
    if proto == "tls":
        gen_args += ssl_args(args.certs)
    procs.wait_idle(broker.pid, quiet_ms=20, interval=0.5, limit=20)
    load = load1()
    try:
        res = procs.run_generator(args.perf, gen_args, broker.pid, 1024, args.records)
    except procs.BenchError as e:
        sys.exit("%s %s round %d: %s\nbroker stderr:\n%s" % (phase, proto, rnd, e, broker.stderr_tail()))
    res.update(round=rnd, phase=phase, proto=proto, load1_before=load, load1_after=load1())
    print("round=%d %-7s %-5s %7.1f MB/s  broker %.3f CPU-ms/MB %3.0f%% core  generator %3.0f%% core "
          "(%.3f ms/MB)  run-queue wait broker %2.0f%% gen %2.0f%%  load1 %.2f" % (
              rnd, phase, proto, res["mb_s"], res["broker_ms_per_mb"], res["broker_core_pct"],
              res["gen_cpu_pct"], res["gen_ms_per_mb"], res["broker_runq_wait_pct"],
              res["gen_runq_wait_pct"], load), flush=True)
    return res


def run_round(args, rnd):
    broker = Broker(args.skiff, args.certs, args.data_root)
    out = []
    try:
        topics = {p: "tls-bench-%d-%s" % (rnd, p) for p in PROTOCOLS}
        for p in PROTOCOLS:
            create_topic(args, broker.bind["plain"], topics[p])
        order = list(PROTOCOLS) if rnd % 2 == 0 else list(reversed(PROTOCOLS))
        for proto in order:
            out.append(measure(args, broker, rnd, "produce", proto, topics[proto]))
        for n in range(args.passes):
            for proto in (order if n % 2 else list(reversed(order))):
                out.append(measure(args, broker, rnd, "fetch", proto, topics["plain"]))
    finally:
        broker.stop()
    return out


def med(results, phase, proto, key):
    xs = [r[key] for r in results if r["phase"] == phase and r["proto"] == proto]
    return statistics.median(xs), min(xs), max(xs)


def report(results, rounds):
    for phase in ("produce", "fetch"):
        print("\n%s (median [min-max] of %d rounds)" % (phase, rounds))
        for key, label, digits in KEYS:
            cells = []
            for proto in PROTOCOLS:
                m, lo, hi = med(results, phase, proto, key)
                cells.append("%s %.*f [%.*f-%.*f]" % (proto, digits, m, digits, lo, digits, hi))
            print("  %-28s %s" % (label, "   ".join(cells)))
        for key, label in (("mb_s", "MB/s"), ("broker_ms_per_mb", "CPU-ms/MB")):
            plain = med(results, phase, "plain", key)[0]
            tls = med(results, phase, "tls", key)[0]
            per_round = []
            for rnd in range(rounds):
                by = {r["proto"]: r[key] for r in results if r["round"] == rnd and r["phase"] == phase}
                if len(by) == 2 and by["plain"] > 0:
                    per_round.append(by["tls"] / by["plain"])
            print("  tls/plain %-10s %.3f (per round: %s)" % (
                label, tls / plain, " ".join("%.3f" % x for x in per_round)))
        extra = med(results, phase, "tls", "broker_ms_per_mb")[0] - med(results, phase, "plain", "broker_ms_per_mb")[0]
        print("  TLS extra broker CPU: %+.3f ms per MB (%+.0f ns per KiB record)" % (extra, extra * 1024))
        cap = {p: 1000.0 / med(results, phase, p, "broker_ms_per_mb")[0] for p in PROTOCOLS}
        print("  broker-core capacity (1000 / CPU-ms/MB): plain %.0f MB/s, tls %.0f MB/s, tls/plain %.3f"
              % (cap["plain"], cap["tls"], cap["tls"] / cap["plain"]))
        for p in PROTOCOLS:
            # A process that was on its core or waiting for it all the window long was the limit.
            busy = {w: med(results, phase, p, "%s_core_pct" % w if w == "broker" else "gen_cpu_pct")[0]
                    + med(results, phase, p, "%s_runq_wait_pct" % w)[0] for w in ("broker", "gen")}
            limit = [w for w, v in busy.items() if v >= 90]
            print("  %-5s on-core + run-queue wait: broker %.0f%%, generator %.0f%% -> %s" % (
                p, busy["broker"], busy["gen"],
                " and ".join("broker" if w == "broker" else "generator" for w in limit) + " saturated"
                if limit else "neither saturated"))
    ratio = med(results, "produce", "tls", "mb_s")[0] / med(results, "produce", "plain", "mb_s")[0]
    print("\nverdict: TLS produce >= 70%% of plaintext throughput: %s (%.1f%%: %.1f vs %.1f MB/s, medians)" % (
        "PASS" if ratio >= 0.70 else "FAIL", 100 * ratio,
        med(results, "produce", "tls", "mb_s")[0], med(results, "produce", "plain", "mb_s")[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skiff", required=True, help="skiff release binary")
    ap.add_argument("--perf", required=True, help="rdkafka_performance with SSL support")
    ap.add_argument("--certs", required=True, help="dir with ca.crt and server.pem (key + chain)")
    ap.add_argument("--records", type=int, default=CELLS["P2"]["records"], help="1 KiB records")
    ap.add_argument("--passes", type=int, default=1, help="catch-up fetch passes per listener")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data-root", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the per-round log dirs go (default /dev/shm: RAM, see the docstring)")
    ap.add_argument("--json")
    args = ap.parse_args()
    # SIGTERM ends the run through the `finally`s: the broker is stopped, its log dir deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    print("uptime before: %s" % uptime(), flush=True)
    print("broker on core %s, generator on core %s (taskset); %d records of 1 KiB per measurement; "
          "log dirs under %s" % (procs.BROKER_CPU, procs.GENERATOR_CPU, args.records,
                                 args.data_root or tempfile.gettempdir()), flush=True)
    results = []
    for rnd in range(args.rounds):
        results += run_round(args, rnd)
    report(results, args.rounds)
    print("uptime after: %s" % uptime())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
