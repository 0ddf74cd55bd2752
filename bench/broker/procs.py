"""Process plumbing for the broker benchmark (issue 4 item 4): starting and stopping the two
brokers pinned to one core, running the load generator pinned to the other, and reading the
kernel's accounting for all three.

Mental model: every figure comes from the kernel, never from the brokers themselves.
  - broker CPU: utime+stime of the broker process (all its threads, fields 14+15 of
    /proc/PID/stat, clock ticks of 1/SC_CLK_TCK s) read just before the generator starts and
    just after it has been reaped;
  - broker memory: VmRSS and VmHWM of /proc/PID/status (KiB); VmHWM is reset by writing "5" to
    /proc/PID/clear_refs where the kernel allows it (Linux >= 4.0, same user or root);
  - generator CPU: the rusage of the reaped generator (os.wait4), all its threads;
  - core load: the per-CPU lines of /proc/stat (busy = all - idle - iowait), which include
    every process on that core, not just ours (the machine is shared);
  - contention: run-queue wait (runnable, but another task had the core) summed over the
    threads of the broker and of the generator, from /proc/PID/task/TID/schedstat, as % of
    the measured window (threads add up: it can exceed 100%). A process that used 45% of a core and waited 55% was starved,
    not idle.
Ownership: this module starts every process it measures and stops them by their own pid
(SIGTERM, then SIGKILL after a grace period); it never signals anything else. Not thread-safe:
the benchmark is one sequential script.
"""

import os
import re
import signal
import socket
import subprocess
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
BROKER_CPU = "1"
GENERATOR_CPU = "0"


class BenchError(Exception):
    """Anything that makes a measurement meaningless: the run is aborted with this message."""


def proc_cpu_ms(pid):
    """utime + stime of a live process in ms (fields 14 and 15 of /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / CLK_TCK


def proc_mem_kib(pid):
    """(VmRSS, VmHWM) of a live process in KiB."""
    vals = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                vals[key] = int(rest.split()[0])
    return vals.get("VmRSS", 0), vals.get("VmHWM", 0)


def wait_idle(pid, quiet_ms=20, interval=1.0, limit=60.0):
    """Waits until a process used less than `quiet_ms` of CPU over `interval` seconds (at most
    `limit` seconds); returns (seconds waited, CPU ms used meanwhile)."""
    t0, c0 = time.monotonic(), proc_cpu_ms(pid)
    last = c0
    while time.monotonic() - t0 < limit:
        time.sleep(interval)
        now = proc_cpu_ms(pid)
        if now - last < quiet_ms:
            break
        last = now
    return time.monotonic() - t0, proc_cpu_ms(pid) - c0


def reset_peak_rss(pid):
    """Resets VmHWM to the current RSS; False if the kernel refused (then VmHWM is cumulative)."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def tasks_schedstat_ns(pid):
    """{tid: (on-cpu ns, run-queue wait ns)} of the live threads of a process
    (/proc/PID/task/TID/schedstat: time on the cpu, time runnable but waiting for it)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                v = f.read().split()
            out[tid] = (int(v[0]), int(v[1]))
        except (OSError, IndexError, ValueError):
            continue
    return out


def runq_wait_ms(pid):
    """Run-queue wait summed over the live threads of a process, in ms."""
    return sum(w for _, w in tasks_schedstat_ns(pid).values()) / 1e6


class ThreadWaitWatcher:
    """Samples a short-lived process's per-thread run-queue wait every 50 ms (a thread's
    figures vanish when it exits); total() is the sum of the last sample of every thread
    seen, so up to 50 ms per thread may be missing."""

    def __init__(self, pid):
        self.pid = pid
        self.seen = {}
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_flag.is_set():
            self.seen.update(tasks_schedstat_ns(self.pid))
            self.stop_flag.wait(0.05)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        self.seen.update(tasks_schedstat_ns(self.pid))

    def total_wait_ms(self):
        return sum(w for _, w in self.seen.values()) / 1e6


def cpu_jiffies():
    """{cpu index: (busy, total)} jiffies from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+) (.*)", line)
            if not m:
                continue
            v = [int(x) for x in m.group(2).split()]
            total = sum(v[:8])  # user nice system idle iowait irq softirq steal
            out[int(m.group(1))] = (total - v[3] - v[4], total)
    return out


def core_busy_pct(before, after, cpu):
    busy = after[cpu][0] - before[cpu][0]
    total = after[cpu][1] - before[cpu][1]
    return 100.0 * busy / total if total > 0 else float("nan")


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def wait_connectable(port, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError("broker exited with %s before accepting connections" % proc.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchError("broker did not accept connections on port %d within %ds" % (port, timeout))


class Broker:
    """One broker process pinned to BROKER_CPU. `kind` is "skiff" or "tansu"."""

    def __init__(self, kind, binary, work_dir, tansu_port):
        self.kind = kind
        self.binary = binary
        self.work_dir = work_dir
        self.tansu_port = tansu_port
        self.proc = None
        self.bootstrap = None
        self.data_dir = None

    def start(self, tag):
        os.makedirs(self.work_dir, exist_ok=True)
        out_path = os.path.join(self.work_dir, "%s-%s.out" % (self.kind, tag))
        out = open(out_path, "w")
        if self.kind == "skiff":
            self.data_dir = os.path.join(self.work_dir, "skiff-log-%s" % tag)
            os.makedirs(self.data_dir)
            cmd = [
                self.binary,
                "serve",
                "--override",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "--override",
                "log.dirs=%s" % self.data_dir,
            ]
        else:
            if not port_free(self.tansu_port):
                raise BenchError("port %d is in use: Tansu cannot listen there" % self.tansu_port)
            url = "tcp://127.0.0.1:%d" % self.tansu_port
            cmd = [
                self.binary,
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ]
        env = dict(os.environ, RUST_LOG="warn")
        self.proc = subprocess.Popen(
            ["taskset", "-c", BROKER_CPU] + cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        out.close()
        if self.kind == "skiff":
            self.bootstrap = self._skiff_bind(out_path, 20)
        else:
            wait_connectable(self.tansu_port, self.proc, 20)
            self.bootstrap = "127.0.0.1:%d" % self.tansu_port
        return self

    def _skiff_bind(self, out_path, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(out_path) as f:
                for line in f:
                    if line.startswith("skiff ready"):
                        for word in line.split():
                            if word.startswith("bind="):
                                return word[len("bind=") :]
            if self.proc.poll() is not None:
                raise BenchError("skiff exited with %s; see %s" % (self.proc.returncode, out_path))
            time.sleep(0.05)
        raise BenchError("skiff did not print its ready line within %ds" % timeout)

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.data_dir:
            subprocess.run(["rm", "-rf", self.data_dir], check=False)
            self.data_dir = None


def create_topic(tansu_binary, bootstrap, topic, partitions=1):
    """CreateTopics (RF 1) through Tansu's own Kafka-protocol admin client, for every broker
    benchmarked, from the generator core."""
    r = subprocess.run(
        [
            "taskset",
            "-c",
            GENERATOR_CPU,
            tansu_binary,
            "topic",
            "create",
            "--broker",
            "tcp://" + bootstrap,
            "--partitions",
            str(partitions),
            topic,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if r.returncode != 0:
        raise BenchError("creating %s on %s failed: %s %s" % (topic, bootstrap, r.stdout, r.stderr))


PRODUCED = re.compile(
    r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset (-?\d+), (\d+) failed\)"
    r" in (\d+)ms"
)
CONSUMED = re.compile(r"% (\d+) messages \((\d+) bytes\) consumed in (\d+)ms")


def run_generator(perf, args, broker_pid, size, expect_records):
    """Runs rdkafka_performance pinned to GENERATOR_CPU and returns the figures of one run.

    The window is the generator's own (producer: first produce() to the last delivery report;
    consumer: first message received to the last). Throughput and every "% of core" use it;
    the CPU and wait figures are counted over the generator's whole life (also connecting,
    metadata, and for a consumer its first fetch: a few ms of CPU), so the shares slightly
    overstate the CPU spent inside the window."""
    jiffies0 = cpu_jiffies()
    broker0 = proc_cpu_ms(broker_pid)
    bwait0 = runq_wait_ms(broker_pid)
    t0 = time.monotonic()
    p = subprocess.Popen(
        ["taskset", "-c", GENERATOR_CPU, perf] + args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    watcher = ThreadWaitWatcher(p.pid)
    out = p.stdout.read()
    p.stdout.close()
    # Wait for the exit without reaping, so the pid cannot be reused under the watcher.
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    watcher.stop()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall_ms = (time.monotonic() - t0) * 1000.0
    broker1 = proc_cpu_ms(broker_pid)
    bwait1 = runq_wait_ms(broker_pid)
    jiffies1 = cpu_jiffies()
    # The producer's exit code is not used: it compares delivered with "produced minus
    # rd_kafka_outq_len()", and outq_len also counts non-message work still queued (an
    # in-flight metadata request), so a complete run can exit 1. Delivered and failed
    # counts from the summary decide instead.
    m = PRODUCED.search(out)
    if m:
        records, failed, window_ms = int(m.group(3)), int(m.group(5)), int(m.group(6))
        if failed or records != expect_records:
            raise BenchError("produced %d of %d, %d failed:\n%s" % (records, expect_records, failed, out[-2000:]))
    else:
        m = CONSUMED.search(out)
        if not m or p.returncode != 0:
            raise BenchError("rdkafka_performance %s exited %s:\n%s" % (args, p.returncode, out[-2000:]))
        records, window_ms = int(m.group(1)), int(m.group(3))
        if records != expect_records:
            raise BenchError("consumed %d of %d records:\n%s" % (records, expect_records, out[-2000:]))
    payload_mb = records * size / 1e6
    broker_ms = broker1 - broker0
    gen_ms = (ru.ru_utime + ru.ru_stime) * 1000.0
    window_ms = max(window_ms, 1)
    window_s = window_ms / 1000.0
    return {
        "records": records,
        "payload_mb": payload_mb,
        "window_ms": window_ms,
        "wall_ms": wall_ms,
        "mb_s": payload_mb / window_s,
        "rec_s": records / window_s,
        "broker_cpu_ms": broker_ms,
        "broker_ms_per_mb": broker_ms / payload_mb,
        "broker_core_pct": 100.0 * broker_ms / window_ms,
        "gen_cpu_ms": gen_ms,
        "gen_cpu_pct": 100.0 * gen_ms / window_ms,
        "gen_ms_per_mb": gen_ms / payload_mb,
        "broker_runq_wait_pct": 100.0 * (bwait1 - bwait0) / window_ms,
        "gen_runq_wait_pct": 100.0 * watcher.total_wait_ms() / window_ms,
        "core0_busy_pct": core_busy_pct(jiffies0, jiffies1, int(GENERATOR_CPU)),
        "core1_busy_pct": core_busy_pct(jiffies0, jiffies1, int(BROKER_CPU)),
    }
