#!/usr/bin/env python3
"""Replication benchmark (issue 17's performance point): a 3-node Skiff cluster and a 3-node
Apache Kafka cluster on localhost, measured in ONE run. One command, from the repository root:

    ./bench/replication/run.sh            # full: 1M records (~1 GB) per cell, 3 rounds, 1 GiB catch-up
    ./bench/replication/run.sh --quick    # smoke run (~5 min): figures mean nothing
    ./bench/replication/run.sh --records 400000 --runs 3 --catchup-mib 1024   # the 2026-12 run

run.sh builds what is missing (rdkafka_performance as bench/broker/run.sh does, the Skiff
release binary, Kafka's jars with Maven) and calls this driver; it can also be called directly:
`python3 bench/replication/repl_bench.py --skiff target/release/skiff --perf
bench/broker/.cache/bin/rdkafka_performance [--quick]`. Python 3 standard library only; it
reuses bench/broker (procs.py: /proc accounting; limits.py: dd and the guest-memory hold;
servers.py: the pinned Kafka's jars; broker_bench.py: median [min-max] formatting).

Mental model: both clusters are started once and stay up for the whole run (the idle one's CPU
is measured during every cell and printed, "other cluster"), so the rounds can alternate
between them (round r: Skiff then Kafka, round r+1 Kafka then Skiff) and slow drift of the
shared machine hits both. Each cluster is three combined broker+controller KRaft nodes with
static voters and every other key at its default (Skiff: the properties tests use in
crates/testkit/src/cluster.rs minus the short test timers; Kafka: `scripts/kafka-reference.sh
format-cluster` / `start-cluster` with KAFKA_REF_PROFILE=bench, i.e. Kafka as shipped: G1, 1 GiB
heap, default thread counts). Nothing is pinned: three nodes and the load generator share the
machine's cores, which is the point of a loopback cluster on 2 cores. Every figure comes from
the kernel: CPU = utime+stime of each node's process (/proc/PID/stat, all threads, JIT and GC
included) read just before the generator starts and just after it is reaped. MB = 10^6 bytes
of record payload. Topics use manual placement (CreateTopics with a replica assignment,
through Kafka's own TopicCommand): node 1 leads every partition, nodes 2 and 3 follow, so
"leader" and "follower" CPU are per process.

Phases (in this order):
  limits   dd bs=1M of --dd-mib MiB into the work dir, --dd-runs times: MB/s and dd's own
           CPU-ms/MB, the price of putting a MB into the page cache with write(2) (a
           follower's write of each MB costs at least that); then, as often, the follower
           floor (follower_floor): the same MiB sent over loopback TCP with sendfile(2) and
           received and written with write(2), each end's own CPU-ms/MB. Where the VM allows it (root),
           freed guest pages are held for the run and the free memory touched once
           (limits.hold_guest_memory, restored at the end).
  warm-up  per cluster, --warmup-records 1 KiB records acks=all to an RF=3 topic (Kafka's JIT;
           untimed).
  produce  per round, per cluster, cells in rotating order: "RF1 acks=1" (topic with one
           replica on node 1), "RF3 acks=all" (replicas 1,2,3, min.insync.replicas=2) and
           "RF3 acks=1" (the same topic with acks=1: replication's CPU without the producer
           waiting for it), each on a new topic deleted right after, --records 1 KiB records,
           one partition, rdkafka_performance -P, linger.ms=5, no compression, no idempotence
           (so the cells differ only in replication and acks). Throughput over the generator's
           own window (first produce to last delivery); CPU-ms/MB per node and summed over the
           three nodes, read once the followers' .log bytes have reached the leader's after the
           generator's exit ("settle", so replication trailing acks=1 is counted); the
           generator's CPU; the other cluster's CPU; and the rest of the machine ("rest": busy
           jiffies of all cores minus every process of the benchmark, % of one core, 200 =
           both cores).
  latency  per cluster, at one third of its own median "RF3 acks=all" peak (records/s): a paced
           producer (rdkafka_performance -r with bench/broker's absolute-schedule pacing patch,
           -l -A: each record's produce->delivery-report latency), acks=all to a new RF=3 topic
           for --latency-s seconds, the first 2 s dropped; p50/p99/p99.9/max. Then the same
           offered rate to an RF=1 topic with acks=1: what replication adds. Once per
           --latency-linger value: 5 (the clients' default, the peak cell's setting) and 0.
  catch-up per cluster: a new RF=3 topic (replicas 1,2,3, min.insync.replicas=2); SIGSTOP node 3
           (a follower); wait until the ISR no longer holds it (Kafka's and Skiff's default
           broker.session.timeout.ms of 9 s: fencing); produce --catchup-mib MiB of 1 KiB records
           acks=all through node 1 only; SIGCONT node 3 and time, polling every 50 ms, until its
           partition's .log bytes equal the leader's ("log end equal") and, with kcat every
           250 ms, until node 3 is back in the ISR. MB/s = payload MB / seconds to log end equal;
           node 3's CPU seconds (and node 1's, serving the fetches) over the same interval.
Targets (issue 17): follower CPU-ms/MB <= 0.5x the leader's produce CPU-ms/MB (printed against
both the RF=1 leader, the produce cost without replication, and the RF=3 leader in the same
cell); RF=3 total CPU-ms/MB <= 2x RF=1's; throughput is reported as a ratio only (three nodes
share two cores). --json FILE keeps every measurement. The work dir (default
/tmp/skiff-repl-bench-<pid>) and everything in it are deleted at the end. Each latency line also
prints the page cache's Dirty (at the start and the maximum) and Writeback (maximum) during the
run (DirtySampler, /proc/meminfo every 100 ms).

Environment, for experiments (figures of record use none): SKIFF_BENCH_LOG (the Skiff nodes'
RUST_LOG, default warn), SKIFF_BENCH_KEEP_LOGS=1 (copy the nodes' logs to
/tmp/skiff-repl-failure-<pid> at the end, as an aborted run does), SKIFF_BENCH_PROPS="k=v;k=v"
(extra Skiff server properties), SKIFF_BENCH_SYNC_BEFORE_LATENCY=1 (sync(2) before each latency
run).
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "broker"))

import limits  # noqa: E402
import procs  # noqa: E402
import servers  # noqa: E402
from broker_bench import fmt, machine_info, uptime  # noqa: E402
from procs import BenchError  # noqa: E402

KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-reference.sh")
BENCH_ENV = dict(os.environ, KAFKA_REF_PROFILE="bench")
# testkit's cluster id (crates/testkit/src/cluster.rs)
SKIFF_CLUSTER_ID = "c2tpZmYtY2x1c3Rlci0xNg"
# Below the ephemeral range (32768-60999); broker port, controller port = port + 1.
BASE_PORT = {"skiff": 29400, "kafka": 29500}
SYSTEMS = ("skiff", "kafka")
CELLS = ("RF1 acks=1", "RF3 acks=all", "RF3 acks=1")
ISR_RE = re.compile(r"partition 0, leader (-?\d+), replicas: ([\d,]*), isrs: ([\d,]*)")


def log(msg):
    print(msg, flush=True)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def percentile(sorted_xs, q):
    if not sorted_xs:
        return float("nan")
    k = min(len(sorted_xs) - 1, max(0, int(round(q * (len(sorted_xs) - 1)))))
    return sorted_xs[k]


def busy_ms_all_cores():
    """Busy time of every core (user+nice+system+irq+softirq+steal) in ms, from /proc/stat."""
    return sum(b for b, _ in procs.cpu_jiffies().values()) * 1000.0 / procs.CLK_TCK


def log_bytes(partition_dir):
    """Bytes of the .log segment files of one partition replica (index files excluded: Kafka
    preallocates them)."""
    total = 0
    for f in glob.glob(os.path.join(partition_dir, "*.log")):
        try:
            total += os.path.getsize(f)
        except OSError:
            pass
    return total


class Cluster:
    """Three combined KRaft nodes of one system, node i + 1 on broker port BASE + 2i."""

    def __init__(self, kind, opts):
        self.kind = kind
        self.opts = opts
        self.dir = os.path.join(opts.work, kind)
        base = BASE_PORT[kind]
        self.ports = [(base + 2 * i, base + 2 * i + 1) for i in range(3)]
        self.bootstrap = ",".join("127.0.0.1:%d" % p for p, _ in self.ports)
        self.procs = []  # skiff: Popen per node
        self.pids = []
        self.stopped = set()

    def node1(self):
        return "127.0.0.1:%d" % self.ports[0][0]

    def keep_logs(self):
        """Copies the nodes' logs (Skiff's out.log) out of the work dir, which is deleted."""
        dest = "/tmp/skiff-repl-failure-%d" % os.getpid()
        os.makedirs(dest, exist_ok=True)
        for i in range(3):
            src = os.path.join(self.dir, "node-%d" % (i + 1), "out.log")
            if os.path.exists(src):
                shutil.copy(src, os.path.join(dest, "%s-node-%d.log" % (self.kind, i + 1)))
        return dest

    def data_dir(self, i):
        return os.path.join(self.dir, "node-%d" % (i + 1), "data")

    def partition_dir(self, i, topic):
        return os.path.join(self.data_dir(i), "%s-0" % topic)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self):
        for p, c in self.ports:
            for port in (p, c):
                if not procs.port_free(port):
                    raise BenchError("port %d is in use (another run?)" % port)
        os.makedirs(self.dir, exist_ok=True)
        if self.kind == "skiff":
            self._start_skiff()
        else:
            self._start_kafka()
        self.wait_brokers()
        return self

    def _skiff_props(self, i):
        voters = ",".join("%d@127.0.0.1:%d" % (j + 1, c) for j, (_, c) in enumerate(self.ports))
        p, c = self.ports[i]
        lines = [
            "process.roles=broker,controller",
            "node.id=%d" % (i + 1),
            "controller.quorum.voters=" + voters,
            "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (p, c),
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=PLAINTEXT",
            "log.dirs=" + self.data_dir(i),
            # as kafka-reference.sh's format-cluster writes for Kafka
            "offsets.topic.replication.factor=3",
            "offsets.topic.num.partitions=4",
            "transaction.state.log.replication.factor=3",
            "transaction.state.log.min.isr=2",
        ]
        # SKIFF_BENCH_PROPS: extra server properties for experiments, "k=v;k=v"
        lines += [kv for kv in os.environ.get("SKIFF_BENCH_PROPS", "").split(";") if kv]
        return "\n".join(lines) + "\n"

    def _start_skiff(self):
        # SKIFF_BENCH_LOG: the nodes' RUST_LOG (default warn); their out.log files are copied
        # aside when a run aborts, or always with SKIFF_BENCH_KEEP_LOGS=1 (see `keep_logs`).
        env = dict(os.environ, RUST_LOG=os.environ.get("SKIFF_BENCH_LOG", "warn"))
        outs = []
        for i in range(3):
            nd = os.path.join(self.dir, "node-%d" % (i + 1))
            os.makedirs(nd, exist_ok=True)
            props = os.path.join(nd, "server.properties")
            with open(props, "w") as f:
                f.write(self._skiff_props(i))
            r = subprocess.run([self.opts.skiff, "format", "-t", SKIFF_CLUSTER_ID, "-c", props],
                               capture_output=True, text=True, env=env)
            if r.returncode != 0:
                raise BenchError("skiff format node %d: %s" % (i + 1, r.stderr[-2000:]))
            out_path = os.path.join(nd, "out.log")
            out = open(out_path, "w")
            self.procs.append(subprocess.Popen([self.opts.skiff, "serve", "--config", props], stdout=out,
                                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env))
            out.close()
            outs.append(out_path)
        self.pids = [p.pid for p in self.procs]
        deadline = time.monotonic() + 60
        for i, path in enumerate(outs):
            while True:
                with open(path) as f:
                    if "skiff ready listener=PLAINTEXT" in f.read():
                        break
                if self.procs[i].poll() is not None:
                    raise BenchError("skiff node %d exited (%s); see %s" % (i + 1, self.procs[i].returncode, path))
                if time.monotonic() > deadline:
                    raise BenchError("skiff node %d printed no ready line in 60 s; see %s" % (i + 1, path))
                time.sleep(0.05)

    def _start_kafka(self):
        ports = ",".join(str(p) for p, _ in self.ports)
        cports = ",".join(str(c) for _, c in self.ports)
        for cmd in (["format-cluster", self.dir, ports, cports], ["start-cluster", self.dir]):
            r = subprocess.run([KAFKA_REF] + cmd, capture_output=True, text=True, env=BENCH_ENV)
            if r.returncode != 0:
                raise BenchError("kafka-reference.sh %s failed: %s" % (cmd[0], r.stderr[-2000:]))
        for i in range(3):
            with open(os.path.join(self.dir, "node-%d" % (i + 1), "kafka.pid")) as f:
                self.pids.append(int(f.read().strip()))

    def stop(self):
        for pid in list(self.stopped):
            self.cont(pid)
        if self.kind == "skiff":
            for p in self.procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in self.procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            self.procs = []
        elif self.pids:
            subprocess.run([KAFKA_REF, "stop-cluster", self.dir], capture_output=True, text=True, env=BENCH_ENV)
        self.pids = []

    def check_alive(self):
        for i, pid in enumerate(self.pids):
            if self.kind == "skiff":
                if self.procs[i].poll() is not None:
                    raise BenchError("skiff node %d exited (%s)" % (i + 1, self.procs[i].returncode))
            elif not os.path.exists("/proc/%d" % pid):
                raise BenchError("kafka node %d (pid %d) exited; see %s" % (i + 1, pid, self.dir))

    def sigstop(self, i):
        os.kill(self.pids[i], signal.SIGSTOP)
        self.stopped.add(self.pids[i])

    def cont(self, pid):
        os.kill(pid, signal.SIGCONT)
        self.stopped.discard(pid)

    # -- metadata and topics -------------------------------------------------------------------

    def kcat(self, args, via=None):
        return subprocess.run(["kcat", "-b", via or self.node1(), "-L", "-m", "3"] + args,
                              capture_output=True, text=True)

    def wait_brokers(self, timeout=90):
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            self.check_alive()
            r = self.kcat([])
            out = r.stdout
            if r.returncode == 0 and re.search(r"^ 3 brokers:", out, re.M):
                return
            time.sleep(0.2)
        raise BenchError("%s cluster did not show 3 brokers within %d s:\n%s" % (self.kind, timeout, out))

    def controller(self):
        m = re.search(r"broker (\d+) at \S+ \(controller\)", self.kcat([]).stdout)
        return int(m.group(1)) if m else None

    def partition(self, topic, via=None):
        """(leader, replicas, isr) of partition 0 of `topic`, or None."""
        r = self.kcat(["-t", topic], via)
        m = ISR_RE.search(r.stdout)
        if r.returncode != 0 or not m or "Err" in r.stdout:
            return None
        ids = lambda s: sorted(int(x) for x in s.split(",") if x)  # noqa: E731
        return int(m.group(1)), ids(m.group(2)), ids(m.group(3))

    def topic_tool(self, args):
        r = subprocess.run([KAFKA_REF, "run", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                            self.node1()] + args, capture_output=True, text=True, env=BENCH_ENV, timeout=120)
        if r.returncode != 0:
            raise BenchError("TopicCommand %s on %s: %s %s" % (args, self.kind, r.stdout[-1000:], r.stderr[-2000:]))

    def create(self, topic, replicas, timeout=60):
        """Topic with one partition placed on `replicas` (node ids, the first leads); RF > 1 gets
        min.insync.replicas=2. Waits until the leader is the first replica and the ISR is full."""
        args = ["--create", "--topic", topic, "--replica-assignment", ":".join(str(r) for r in replicas)]
        if len(replicas) > 1:
            args += ["--config", "min.insync.replicas=2"]
        self.topic_tool(args)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = self.partition(topic)
            if p and p[0] == replicas[0] and p[2] == sorted(replicas):
                return
            time.sleep(0.1)
        raise BenchError("%s: topic %s not led by %d with a full ISR after %d s: %s"
                         % (self.kind, topic, replicas[0], timeout, self.partition(topic)))

    def delete(self, topic):
        self.topic_tool(["--delete", "--topic", topic])

    def cpu_ms(self):
        return [procs.proc_cpu_ms(pid) for pid in self.pids]


PRODUCED = procs.PRODUCED


def rdk_produce_args(topic, bootstrap, records, acks, linger, extra=()):
    return (["-P", "-t", topic, "-p", "0", "-b", bootstrap, "-s", "1024", "-c", str(records), "-z", "none", "-q",
             "-a", "-1" if acks == "all" else "1", "-X", "linger.ms=%d" % linger] + list(extra))


class Bench:
    def __init__(self, opts):
        self.opts = opts
        self.clusters = {}
        self.results = []
        self.lat = []
        self.catch = []
        self.dd = []
        # (MB/s, receive+write CPU-ms/MB, sendfile CPU-ms/MB) per run: follower_floor
        self.floor = []

    def others(self, kind):
        return [c for k, c in self.clusters.items() if k != kind]

    def produce(self, cluster, topic, records, acks, linger=5, via=None, extra=(), followers=()):
        """One generator run against `cluster`; per-node CPU, the other cluster's, the rest of
        the machine's. With `followers` (0-based node indexes), the CPU is read once their
        replicas' .log bytes have reached the leader's (node 1's) after the generator's exit,
        so replication that trails the acks (acks=1) is counted; `settle_ms` is that wait."""
        others = self.others(cluster.kind)
        os.sync()
        time.sleep(0.5)
        busy0 = busy_ms_all_cores()
        c0 = cluster.cpu_ms()
        o0 = [sum(o.cpu_ms()) for o in others]
        j0 = procs.cpu_jiffies()
        t0 = time.monotonic()
        p = subprocess.Popen([self.opts.perf] + rdk_produce_args(topic, via or cluster.bootstrap, records, acks, linger,
                                                                 extra),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        out = p.stdout.read()
        p.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        t_exit = time.monotonic()
        if followers:
            target = log_bytes(cluster.partition_dir(0, topic))
            deadline = t_exit + 120
            while any(log_bytes(cluster.partition_dir(i, topic)) < target for i in followers):
                if time.monotonic() > deadline:
                    sizes = [log_bytes(cluster.partition_dir(i, topic)) for i in range(3)]
                    raise BenchError("%s: followers %s of %s did not reach the leader's %d bytes in 120 s "
                                     "(node .log bytes %s; logs kept in %s)"
                                     % (cluster.kind, [i + 1 for i in followers], topic, target, sizes,
                                        cluster.keep_logs()))
                time.sleep(0.01)
        settle_ms = (time.monotonic() - t_exit) * 1000.0
        wall_ms = (time.monotonic() - t0) * 1000.0
        c1 = cluster.cpu_ms()
        o1 = [sum(o.cpu_ms()) for o in others]
        busy1 = busy_ms_all_cores()
        j1 = procs.cpu_jiffies()
        cluster.check_alive()
        m = PRODUCED.search(out)
        if not m:
            raise BenchError("rdkafka_performance exited %s:\n%s" % (os.waitstatus_to_exitcode(status), out[-2000:]))
        delivered, failed, window_ms = int(m.group(3)), int(m.group(5)), max(1, int(m.group(6)))
        if failed or delivered != records:
            raise BenchError("delivered %d of %d records, %d failed:\n%s" % (delivered, records, failed, out[-2000:]))
        mb = records * 1024 / 1e6
        node_ms = [b - a for a, b in zip(c0, c1)]
        gen_ms = (ru.ru_utime + ru.ru_stime) * 1000.0
        other_ms = sum(b - a for a, b in zip(o0, o1))
        rest_ms = (busy1 - busy0) - sum(node_ms) - gen_ms - other_ms
        return {
            "records": records, "payload_mb": mb, "window_ms": window_ms, "wall_ms": wall_ms, "settle_ms": settle_ms,
            "mb_s": mb / (window_ms / 1000.0), "rec_s": records / (window_ms / 1000.0),
            "node_cpu_ms": node_ms, "node_ms_per_mb": [x / mb for x in node_ms],
            "total_ms_per_mb": sum(node_ms) / mb,
            "nodes_pct": 100.0 * sum(node_ms) / wall_ms,
            "gen_ms_per_mb": gen_ms / mb, "gen_pct": 100.0 * gen_ms / wall_ms,
            "other_cluster_pct": 100.0 * other_ms / wall_ms,
            "others_pct": 100.0 * rest_ms / wall_ms,
            "cores_busy_pct": [procs.core_busy_pct(j0, j1, c) for c in sorted(j0)],
            "output": out[-400:],
        }

    # -- phases --------------------------------------------------------------------------------

    def warm_up(self, cluster):
        n = self.opts.warmup_records
        if n <= 0:
            return
        cluster.create("warmup", [1, 2, 3])
        r = self.produce(cluster, "warmup", n, "all", followers=(1, 2))
        log("warm-up %-5s %d records RF3 acks=all: %.1f MB/s, %.2f node CPU-ms/MB (untimed)"
            % (cluster.kind, n, r["mb_s"], r["total_ms_per_mb"]))
        cluster.delete("warmup")

    def cell(self, cluster, cell, rnd):
        replicas = [1] if cell.startswith("RF1") else [1, 2, 3]
        acks = cell.split("acks=")[1]
        topic = "p-rf%d-a%s-r%d" % (len(replicas), acks, rnd)
        cluster.create(topic, replicas)
        try:
            res = self.produce(cluster, topic, self.opts.records, acks, followers=range(1, len(replicas)))
        finally:
            cluster.delete(topic)
        res.update(system=cluster.kind, cell=cell, round=rnd)
        nm = res["node_ms_per_mb"]
        res["leader_ms_per_mb"] = nm[0]
        res["follower_ms_per_mb"] = (nm[1] + nm[2]) / 2.0
        self.results.append(res)
        log("%-13s %-5s r%d %7.1f MB/s %8.0f rec/s  CPU-ms/MB total %.2f = node1 (leader) %.2f + node2 %.2f + node3 "
            "%.2f  settle %.0f ms  nodes %3.0f%% gen %3.0f%% other cluster %2.0f%% others %3.0f%% (of 200%%)"
            % (cell, cluster.kind, rnd, res["mb_s"], res["rec_s"], res["total_ms_per_mb"], nm[0], nm[1], nm[2],
               res["settle_ms"], res["nodes_pct"], res["gen_pct"], res["other_cluster_pct"], res["others_pct"]))

    def latency(self, cluster, rate):
        secs = self.opts.latency_s
        n = int(rate * secs)
        runs = [(cell + " linger %d" % linger, replicas, acks, linger)
                for linger in (int(x) for x in self.opts.latency_linger.split(",") if x)
                for cell, replicas, acks in (("RF3 acks=all", [1, 2, 3], "all"), ("RF1 acks=1", [1], "1"))]
        for cell, replicas, acks, linger in runs:
            topic = "lat-rf%d-l%d" % (len(replicas), linger)
            cluster.create(topic, replicas)
            afile = os.path.join(self.opts.work, "lat-%s-%s.txt" % (cluster.kind, topic))
            if os.environ.get("SKIFF_BENCH_SYNC_BEFORE_LATENCY"):
                os.sync()  # experiment: no dirty page cache left by the cells before
            dirty = DirtySampler()
            try:
                r = self.produce(cluster, topic, n, acks, linger=linger, extra=["-r", str(int(rate)), "-l", "-A", afile],
                                 followers=range(1, len(replicas)))
            finally:
                dirty.stop()
                cluster.delete(topic)
            if os.environ.get("SKIFF_BENCH_KEEP_LOGS"):
                keep = "/tmp/skiff-repl-failure-%d" % os.getpid()
                os.makedirs(keep, exist_ok=True)
                shutil.copy(afile, keep)
            with open(afile) as f:
                xs = [int(x) for x in f.read().split()]
            kept = sorted(x / 1000.0 for x in xs[int(rate * 2):])
            res = {"system": cluster.kind, "cell": cell, "rate": rate, "achieved_rec_s": r["rec_s"],
                   "samples": len(kept), "p50_ms": percentile(kept, 0.5), "p99_ms": percentile(kept, 0.99),
                   "p999_ms": percentile(kept, 0.999), "max_ms": kept[-1] if kept else float("nan"),
                   "total_ms_per_mb": r["total_ms_per_mb"], "node_ms_per_mb": r["node_ms_per_mb"],
                   "others_pct": r["others_pct"], "dirty_mb_start": dirty.start_mb, "dirty_mb_max": dirty.max_mb,
                   "writeback_mb_max": dirty.writeback_max_mb}
            self.lat.append(res)
            log("latency %-5s %-22s %7.0f rec/s offered (%7.0f achieved): p50 %.2f p99 %.2f p99.9 %.2f max %.1f ms "
                "(%d samples), nodes %.2f CPU-ms/MB, others %.0f%%, dirty page cache %.0f MB at start, max %.0f, "
                "writeback max %.0f MB"
                % (cluster.kind, cell, rate, r["rec_s"], res["p50_ms"], res["p99_ms"], res["p999_ms"], res["max_ms"],
                   len(kept), r["total_ms_per_mb"], r["others_pct"], dirty.start_mb, dirty.max_mb,
                   dirty.writeback_max_mb))

    def catch_up(self, cluster, rnd):
        topic = "catch-r%d" % rnd
        f = 2  # node 3, 0-based
        cluster.create(topic, [1, 2, 3])
        ctrl = cluster.controller()
        records = int(self.opts.catchup_mib * (1 << 20)) // 1024
        t_stop = time.monotonic()
        cluster.sigstop(f)
        try:
            deadline = t_stop + 120
            while True:
                p = cluster.partition(topic)
                if p and 3 not in p[2]:
                    break
                if time.monotonic() > deadline:
                    raise BenchError("%s: node 3 still in the ISR of %s 120 s after SIGSTOP: %s"
                                     % (cluster.kind, topic, p))
                time.sleep(0.2)
            shrink_s = time.monotonic() - t_stop
            load = self.produce(cluster, topic, records, "all", via=cluster.node1(), followers=(1,))
            lead_bytes = log_bytes(cluster.partition_dir(0, topic))
            f_bytes0 = log_bytes(cluster.partition_dir(f, topic))
            cf0, cl0 = procs.proc_cpu_ms(cluster.pids[f]), procs.proc_cpu_ms(cluster.pids[0])
            t0 = time.monotonic()
            cluster.cont(cluster.pids[f])
            t_equal = t_isr = None
            cf_equal = cl_equal = cf_isr = None
            next_kcat = t0
            while t_equal is None or t_isr is None:
                now = time.monotonic()
                if now - t0 > self.opts.catchup_timeout:
                    raise BenchError("%s: node 3 not caught up %d s after SIGCONT (log %d of %d bytes, isr %s)"
                                     % (cluster.kind, self.opts.catchup_timeout,
                                        log_bytes(cluster.partition_dir(f, topic)), lead_bytes,
                                        cluster.partition(topic)))
                if t_equal is None and log_bytes(cluster.partition_dir(f, topic)) >= lead_bytes:
                    t_equal = now - t0
                    cf_equal, cl_equal = procs.proc_cpu_ms(cluster.pids[f]), procs.proc_cpu_ms(cluster.pids[0])
                if t_isr is None and now >= next_kcat:
                    next_kcat = now + 0.25
                    p = cluster.partition(topic)
                    if p and 3 in p[2]:
                        t_isr = time.monotonic() - t0
                        cf_isr = procs.proc_cpu_ms(cluster.pids[f])
                time.sleep(0.05)
        finally:
            for pid in list(cluster.stopped):
                cluster.cont(pid)
        cluster.check_alive()
        mb = records * 1024 / 1e6
        res = {"system": cluster.kind, "round": rnd, "records": records, "payload_mb": mb,
               "log_bytes_behind": lead_bytes - f_bytes0, "controller_before": ctrl,
               "isr_shrink_s": shrink_s, "load_mb_s": load["mb_s"], "load_ms_per_mb": load["total_ms_per_mb"],
               "equal_s": t_equal, "isr_s": t_isr, "mb_s": mb / max(t_equal, 1e-3),
               "follower_cpu_s": (cf_equal - cf0) / 1000.0, "follower_ms_per_mb": (cf_equal - cf0) / mb,
               "follower_cpu_isr_s": (cf_isr - cf0) / 1000.0,
               "leader_cpu_s": (cl_equal - cl0) / 1000.0, "leader_ms_per_mb": (cl_equal - cl0) / mb}
        self.catch.append(res)
        log("catch-up %-5s r%d: %.0f MB (%.0f MB of log) behind; ISR shrank %.1f s after SIGSTOP; log end equal "
            "%.2f s after SIGCONT (%.0f MB/s), back in the ISR after %.2f s; follower CPU %.2f s (%.2f ms/MB), "
            "leader %.2f s (%.2f ms/MB); controller was node %s"
            % (cluster.kind, rnd, mb, res["log_bytes_behind"] / 1e6, shrink_s, t_equal, res["mb_s"], t_isr,
               res["follower_cpu_s"], res["follower_ms_per_mb"], res["leader_cpu_s"], res["leader_ms_per_mb"], ctrl))
        cluster.delete(topic)


# -- report --------------------------------------------------------------------------------------


def rows(b, system, cell):
    return [r for r in b.results if r["system"] == system and r["cell"] == cell]


def per_round_ratio(b, system, num, den):
    """{round: num(r) / den(r)} where num/den are (cell, fn)."""
    out = []
    for rnd in sorted({r["round"] for r in b.results}):
        n = [num[1](r) for r in rows(b, system, num[0]) if r["round"] == rnd]
        d = [den[1](r) for r in rows(b, system, den[0]) if r["round"] == rnd]
        if n and d and d[0] > 0:
            out.append(n[0] / d[0])
    return out


def report(b):
    out = []
    cols = (("mb_s", "MB/s", 1), ("rec_s", "records/s", 0), ("total_ms_per_mb", "nodes CPU-ms/MB (sum of 3)", 2),
            ("leader_ms_per_mb", "node 1 (leader)", 2), ("n2", "node 2", 2), ("n3", "node 3", 2),
            ("gen_ms_per_mb", "generator CPU-ms/MB", 2), ("nodes_pct", "nodes % of a core", 0),
            ("other_cluster_pct", "other cluster %", 1), ("others_pct", "rest of machine % (of 200)", 0))
    get = {"n2": lambda r: r["node_ms_per_mb"][1], "n3": lambda r: r["node_ms_per_mb"][2]}
    out.append("| cell | system | " + " | ".join(c[1] for c in cols) + " |")
    out.append("|---|---|" + "---|" * len(cols))
    for cell in CELLS:
        for s in SYSTEMS:
            rs = rows(b, s, cell)
            if rs:
                out.append("| %s | %s | " % (cell, s) + " | ".join(
                    fmt([get[k](r) if k in get else r[k] for r in rs], d) for k, _, d in cols) + " |")
    out.append("")
    out.append("| ratio (per round, median [min-max]) | skiff | kafka | target |")
    out.append("|---|---|---|---|")
    ratios = (
        ("RF3 total CPU-ms/MB / RF1 total", ("RF3 acks=all", lambda r: r["total_ms_per_mb"]),
         ("RF1 acks=1", lambda r: r["total_ms_per_mb"]), "<= 2x"),
        ("follower CPU-ms/MB (mean of nodes 2, 3) / RF1 leader's", ("RF3 acks=all", lambda r: r["follower_ms_per_mb"]),
         ("RF1 acks=1", lambda r: r["leader_ms_per_mb"]), "<= 0.5x"),
        ("follower CPU-ms/MB / RF3 leader's (same cell)", ("RF3 acks=all", lambda r: r["follower_ms_per_mb"]),
         ("RF3 acks=all", lambda r: r["leader_ms_per_mb"]), "<= 0.5x"),
        ("RF3 leader CPU-ms/MB / RF1 leader's", ("RF3 acks=all", lambda r: r["leader_ms_per_mb"]),
         ("RF1 acks=1", lambda r: r["leader_ms_per_mb"]), "-"),
        ("RF3 acks=all MB/s / RF1 acks=1 MB/s", ("RF3 acks=all", lambda r: r["mb_s"]),
         ("RF1 acks=1", lambda r: r["mb_s"]), "reported only"),
        ("RF3 acks=1 total CPU-ms/MB / RF1 total", ("RF3 acks=1", lambda r: r["total_ms_per_mb"]),
         ("RF1 acks=1", lambda r: r["total_ms_per_mb"]), "(<= 2x)"),
        ("RF3 acks=1 follower CPU-ms/MB / RF1 leader's", ("RF3 acks=1", lambda r: r["follower_ms_per_mb"]),
         ("RF1 acks=1", lambda r: r["leader_ms_per_mb"]), "(<= 0.5x)"),
        ("RF3 acks=1 MB/s / RF1 acks=1 MB/s", ("RF3 acks=1", lambda r: r["mb_s"]),
         ("RF1 acks=1", lambda r: r["mb_s"]), "reported only"),
    )
    for name, num, den, target in ratios:
        out.append("| %s | %s | %s | %s |" % (name, fmt(per_round_ratio(b, "skiff", num, den), 2),
                                             fmt(per_round_ratio(b, "kafka", num, den), 2), target))
    out.append("")
    out.append("| Skiff / Kafka (ratio of medians) | " + " | ".join(CELLS) + " |")
    out.append("|---|" + "---|" * len(CELLS))
    for key, name in (("mb_s", "MB/s"), ("total_ms_per_mb", "nodes CPU-ms/MB"), ("leader_ms_per_mb", "leader CPU-ms/MB"),
                      ("follower_ms_per_mb", "follower CPU-ms/MB")):
        cells = []
        for cell in CELLS:
            s, k = med([r[key] for r in rows(b, "skiff", cell)]), med([r[key] for r in rows(b, "kafka", cell)])
            cells.append("%.2f" % (s / k) if s and k else "-")
        out.append("| %s | %s |" % (name, " | ".join(cells)))
    if b.lat:
        out.append("")
        out.append("| latency | system | offered rec/s | achieved | p50 ms | p99 ms | p99.9 ms | max ms | nodes "
                   "CPU-ms/MB | rest of machine % |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for x in b.lat:
            out.append("| %s | %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.1f | %.2f | %.0f |" % (
                x["cell"], x["system"], x["rate"], x["achieved_rec_s"], x["p50_ms"], x["p99_ms"], x["p999_ms"],
                x["max_ms"], x["total_ms_per_mb"], x["others_pct"]))
    if b.catch:
        out.append("")
        out.append("| catch-up | system | payload MB | ISR shrink after SIGSTOP s | log end equal after SIGCONT s | "
                   "MB/s | back in ISR s | follower CPU s | follower CPU-ms/MB | leader CPU s (serving) |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for x in b.catch:
            out.append("| r%d | %s | %.0f | %.1f | %.2f | %.0f | %.2f | %.2f | %.2f | %.2f |" % (
                x["round"], x["system"], x["payload_mb"], x["isr_shrink_s"], x["equal_s"], x["mb_s"], x["isr_s"],
                x["follower_cpu_s"], x["follower_ms_per_mb"], x["leader_cpu_s"]))
    return out


def verdicts(b):
    out = []
    for s in SYSTEMS:
        if not rows(b, s, "RF3 acks=all"):
            continue
        tot = per_round_ratio(b, s, ("RF3 acks=all", lambda r: r["total_ms_per_mb"]),
                              ("RF1 acks=1", lambda r: r["total_ms_per_mb"]))
        fol = per_round_ratio(b, s, ("RF3 acks=all", lambda r: r["follower_ms_per_mb"]),
                              ("RF1 acks=1", lambda r: r["leader_ms_per_mb"]))
        fol3 = per_round_ratio(b, s, ("RF3 acks=all", lambda r: r["follower_ms_per_mb"]),
                               ("RF3 acks=all", lambda r: r["leader_ms_per_mb"]))
        if tot:
            out.append("%s: RF3 total CPU/MB = %.2fx RF1's -> %s (target <= 2x)"
                       % (s, med(tot), "met" if med(tot) <= 2 else "MISSED"))
        if fol:
            out.append("%s: follower CPU/MB = %.2fx the RF1 leader's produce CPU/MB, %.2fx the RF3 leader's -> %s "
                       "(target <= 0.5x, against the RF1 leader)" % (s, med(fol), med(fol3) if fol3 else float("nan"),
                                                                       "met" if med(fol) <= 0.5 else "MISSED"))
    for cell in sorted({x["cell"] for x in b.lat if x["cell"].startswith("RF3")}):
        sk = [x for x in b.lat if x["system"] == "skiff" and x["cell"] == cell]
        ka = [x for x in b.lat if x["system"] == "kafka" and x["cell"] == cell]
        if sk and ka:
            out.append("p99 produce latency %s at a third of each one's own RF3 acks=all peak: Skiff %.2f ms at %.0f "
                       "rec/s, Kafka %.2f ms at %.0f rec/s offered (%.0f achieved); ratio %.2f"
                       % (cell, sk[0]["p99_ms"], sk[0]["rate"], ka[0]["p99_ms"], ka[0]["rate"],
                          ka[0]["achieved_rec_s"], sk[0]["p99_ms"] / ka[0]["p99_ms"]))
    cs = [x for x in b.catch if x["system"] == "skiff"]
    ck = [x for x in b.catch if x["system"] == "kafka"]
    if cs and ck:
        out.append("catch-up: Skiff %.0f MB/s at %.2f follower CPU-ms/MB, Kafka %.0f MB/s at %.2f (Skiff/Kafka: "
                   "%.2fx the speed, %.2fx the CPU per MB)"
                   % (med([x["mb_s"] for x in cs]), med([x["follower_ms_per_mb"] for x in cs]),
                      med([x["mb_s"] for x in ck]), med([x["follower_ms_per_mb"] for x in ck]),
                      med([x["mb_s"] for x in cs]) / med([x["mb_s"] for x in ck]),
                      med([x["follower_ms_per_mb"] for x in cs]) / med([x["follower_ms_per_mb"] for x in ck])))
    if b.dd:
        out.append("page-cache write price (dd bs=1M): %s CPU-ms/MB, %s MB/s: the floor under a follower's CPU-ms/MB"
                   % (fmt([x[1] for x in b.dd], 2), fmt([x[0] for x in b.dd], 0)))
    if b.floor:
        out.append("follower floor (loopback TCP receive + write(2), 1 MiB buffers): %s CPU-ms/MB at %s MB/s; "
                   "the sender's sendfile(2): %s CPU-ms/MB (a leader's floor per follower)"
                   % (fmt([x[1] for x in b.floor], 2), fmt([x[0] for x in b.floor], 0),
                      fmt([x[2] for x in b.floor], 2)))
    return out


# The follower floor (limits phase): the least a follower can do per byte is receive it from a
# TCP socket and write(2) it to a file; the least a leader can do is sendfile(2) it from the page
# cache. Both ends measure their own CPU (getrusage) from the accept/connect to the last byte, so
# the interpreter's start is not counted; 1 MiB buffers keep the per-call costs out of the figure.
class DirtySampler:
    """Samples /proc/meminfo's Dirty and Writeback every 100 ms until `stop` (MB): how much
    unwritten page cache the kernel was flushing, and so throttling writers for, during a run."""

    def __init__(self):
        self.start_mb = self._read()[0]
        self.max_mb, self.writeback_max_mb = self.start_mb, 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    @staticmethod
    def _read():
        got = {}
        with open("/proc/meminfo") as f:
            for line in f:
                k, v = line.split(":", 1)
                if k in ("Dirty", "Writeback"):
                    got[k] = int(v.split()[0]) / 1024.0
        return got.get("Dirty", 0.0), got.get("Writeback", 0.0)

    def _run(self):
        while not self._stop.wait(0.1):
            d, w = self._read()
            self.max_mb, self.writeback_max_mb = max(self.max_mb, d), max(self.writeback_max_mb, w)

    def stop(self):
        self._stop.set()
        self._t.join()


FLOOR_RECEIVER = r"""
import os, resource, socket, sys
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
print(ls.getsockname()[1], flush=True)
c, _ = ls.accept()
r0 = resource.getrusage(resource.RUSAGE_SELF)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
buf = bytearray(1 << 20); mv = memoryview(buf); total = 0
while True:
    n = c.recv_into(buf)
    if n == 0:
        break
    done = 0
    while done < n:
        done += os.write(fd, mv[done:n])
    total += n
os.close(fd)
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(total, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000.0, flush=True)
"""

FLOOR_SENDER = r"""
import os, resource, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
r0 = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[1], "rb") as f:
    s.sendfile(f)
s.shutdown(socket.SHUT_WR); s.recv(1); s.close()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000.0, flush=True)
"""


def follower_floor(directory, mib):
    """(MB/s, receiver CPU-ms/MB, sender CPU-ms/MB) of `mib` MiB sent over loopback TCP with
    sendfile(2) from a page-cached file and written to a new file with write(2): the floor of a
    follower's (receive + write) and a leader's (sendfile to one follower) price per MB."""
    src, dst = os.path.join(directory, "floor-src"), os.path.join(directory, "floor-dst")
    subprocess.run(["dd", "if=/dev/zero", "of=" + src, "bs=1M", "count=%d" % mib], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.sync()
    try:
        recv = subprocess.Popen([sys.executable, "-c", FLOOR_RECEIVER, dst], stdout=subprocess.PIPE, text=True)
        port = recv.stdout.readline().strip()
        t0 = time.monotonic()
        send = subprocess.run([sys.executable, "-c", FLOOR_SENDER, src, port], capture_output=True, text=True,
                              timeout=600)
        out = recv.stdout.readline().split()
        wall = time.monotonic() - t0
        recv.wait(timeout=60)
        if send.returncode != 0 or len(out) != 2:
            raise BenchError("follower floor failed: %s %s" % (send.stderr, out))
        mb = int(out[0]) / 1e6
        return mb / wall, float(out[1]) / mb, float(send.stdout.strip()) / mb
    finally:
        for f in (src, dst):
            if os.path.exists(f):
                os.unlink(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skiff", default=os.path.join(ROOT, "target", "release", "skiff"))
    ap.add_argument("--perf", default=os.path.join(ROOT, "bench", "broker", ".cache", "bin", "rdkafka_performance"))
    ap.add_argument("--work", default="/tmp/skiff-repl-bench-%d" % os.getpid())
    ap.add_argument("--systems", default="skiff,kafka")
    ap.add_argument("--phases", default="produce,latency,catchup")
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--latency-linger", default="5,0", help="linger.ms values of the latency runs")
    ap.add_argument("--records", type=int, default=None, help="1 KiB records per produce cell (1000000; quick 50000)")
    ap.add_argument("--runs", type=int, default=None, help="produce rounds (3; quick 1)")
    ap.add_argument("--warmup-records", type=int, default=None, help="(300000; quick 20000)")
    ap.add_argument("--latency-s", type=int, default=None, help="seconds per latency run (20; quick 6)")
    ap.add_argument("--rates", default="", help="latency rates instead of peak/3, e.g. skiff=40000,kafka=20000")
    ap.add_argument("--catchup-mib", type=float, default=None, help="MiB behind (1024; quick 64)")
    ap.add_argument("--catchup-runs", type=int, default=1)
    ap.add_argument("--catchup-timeout", type=int, default=600)
    ap.add_argument("--dd-runs", type=int, default=3)
    ap.add_argument("--dd-mib", type=int, default=1024)
    ap.add_argument("--no-memory-hold", action="store_true", help="do not hold freed guest pages (limits.py)")
    ap.add_argument("--quick", action="store_true", help="smoke run: small volumes, 1 round")
    ap.add_argument("--json")
    ap.add_argument("--label", action="append", default=[])
    opts = ap.parse_args()
    q = opts.quick
    for k, full, quick in (("records", 1_000_000, 50_000), ("runs", 3, 1), ("warmup_records", 300_000, 20_000),
                           ("latency_s", 20, 6), ("catchup_mib", 1024, 64)):
        if getattr(opts, k) is None:
            setattr(opts, k, quick if q else full)
    systems = [s for s in opts.systems.split(",") if s]
    phases = set(opts.phases.split(","))
    for path, what in ((opts.perf, "rdkafka_performance (bench/replication/run.sh builds it)"),
                       (opts.skiff if "skiff" in systems else "/", "skiff (cargo build --release -p skiff --bin skiff)")):
        if not os.access(path, os.X_OK):
            sys.exit("%s not found: %s" % (what, path))
    if shutil.which("kcat") is None:
        sys.exit("kcat not found (apt-get install kcat)")
    # both systems, 3 replicas, two produce cells' topics (Kafka deletes a topic's files 60 s late) and the
    # catch-up topic, dd's file
    need = (len(systems) * 3 * (2 * opts.records + opts.catchup_mib * 1024) * 1024 + opts.dd_mib * (1 << 20)) * 1.2
    free = shutil.disk_usage(os.path.dirname(opts.work.rstrip("/")) or "/").free
    if free - need < 10e9:
        sys.exit("only %.1f GB free where the work dir goes; this run needs about %.1f GB and 10 GB must stay free"
                 % (free / 1e9, need / 1e9))
    os.makedirs(opts.work, exist_ok=True)
    b = Bench(opts)
    header = {"start": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "uptime_start": uptime(), "argv": " ".join(sys.argv[1:])}
    header.update(machine_info(opts.work))
    header.update(dict(kv.split("=", 1) for kv in opts.label))
    for k, v in header.items():
        log("# %s: %s" % (k, v))
    held = None
    t_start = time.monotonic()
    try:
        if "kafka" in systems:
            servers.kafka_libs()
        if not opts.no_memory_hold:
            held = limits.hold_guest_memory()
            if held is None:
                log("# freed guest pages are not held (no page_reporting knobs or not root): page-cache writes may "
                    "carry the host's faults (see bench/broker/limits.py)")
            else:
                log("# freed guest pages held (%s), free memory touched in %.0f s"
                    % (dict(limits.PAGE_REPORTING_HOLD), limits.touch_free_memory()))
        for i in range(opts.dd_runs):
            b.dd.append(limits.dd_write_cost(opts.work, opts.dd_mib))
            log("limit dd bs=1M %d MiB run %d: %.0f MB/s, dd %.2f CPU-ms/MB" % (opts.dd_mib, i + 1, *b.dd[-1]))
            b.floor.append(follower_floor(opts.work, opts.dd_mib))
            log("limit follower floor %d MiB run %d: %.0f MB/s, receive+write %.2f CPU-ms/MB, sendfile %.2f "
                "CPU-ms/MB" % (opts.dd_mib, i + 1, *b.floor[-1]))
        for s in systems:
            t0 = time.monotonic()
            b.clusters[s] = Cluster(s, opts)
            b.clusters[s].start()
            log("%s cluster up in %.1f s (pids %s, controller node %s)"
                % (s, time.monotonic() - t0, b.clusters[s].pids, b.clusters[s].controller()))
        for s in systems:
            b.warm_up(b.clusters[s])
        if "produce" in phases:
            for rnd in range(1, opts.runs + 1):
                order = systems if rnd % 2 else list(reversed(systems))
                for s in order:
                    cells = CELLS if (rnd + systems.index(s)) % 2 else tuple(reversed(CELLS))
                    cells = [c for c in cells if c in opts.cells.split(",")]
                    for cell in cells:
                        b.cell(b.clusters[s], cell, rnd)
        if "latency" in phases:
            given = dict(kv.split("=") for kv in opts.rates.split(",") if "=" in kv)
            for s in systems:
                rate = float(given[s]) if s in given else None
                if rate is None:
                    peak = med([r["rec_s"] for r in rows(b, s, "RF3 acks=all")])
                    if peak is None:
                        log("latency %s: no RF3 peak measured and no --rates; skipped" % s)
                        continue
                    rate = peak / 3.0
                b.latency(b.clusters[s], rate)
        if "catchup" in phases:
            for rnd in range(1, opts.catchup_runs + 1):
                for s in systems if rnd % 2 else list(reversed(systems)):
                    b.catch_up(b.clusters[s], rnd)
    except BenchError as e:
        sys.exit("benchmark aborted: %s" % e)
    finally:
        for c in b.clusters.values():
            c.stop()
            if os.environ.get("SKIFF_BENCH_KEEP_LOGS"):
                log("# %s nodes' logs kept in %s" % (c.kind, c.keep_logs()))
        limits.release_guest_memory(held)
        header["uptime_end"] = uptime()
        header["wall_s"] = round(time.monotonic() - t_start)
        shutil.rmtree(opts.work, ignore_errors=True)
    log("")
    log("# uptime_end: %s" % header["uptime_end"])
    log("# wall: %d s" % header["wall_s"])
    log("")
    for line in report(b):
        log(line)
    log("")
    for line in verdicts(b):
        log("- " + line)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"header": header, "dd": b.dd, "floor": b.floor, "results": b.results, "latency": b.lat, "catchup": b.catch}, f,
                      indent=1)


if __name__ == "__main__":
    main()
