"""Broker processes for the three-way benchmark (issue 14 item 5): Skiff, Apache Kafka and
Tansu on fixed ports, pinned to the broker core, with data kept across restarts.

Mental model: a `Server` is one broker *installation* (a kind, a port, a data directory) that
may be started, stopped (SIGTERM), killed (SIGKILL) and started again on the same data, any
number of times; `destroy()` removes the data. Unlike procs.Broker (the Skiff-vs-Tansu bench,
which throws its log dir away on every stop) this is what restart-to-ready needs.
  - Skiff: `skiff serve` with `listeners` and `log.dirs` overridden, every other key at its
    default (the broker a user gets from the README's first command);
  - Kafka: `scripts/kafka-reference.sh format` with KAFKA_REF_PROFILE=bench (Kafka's default
    thread counts and buffers; single-node KRaft, combined broker+controller), then `java
    kafka.Kafka` with kafka-server-start.sh's JVM options (`kafka-reference.sh jvm-opts`);
  - Tansu: `tansu broker` with `memory://` storage (no data survives a restart; Tansu is not
    in the restart and retained-data measurements).
"Ready" is measured from the outside, never from a log line: `probe_ready` starts a
librdkafka consumer (rdkafka_performance, reconnect and retry backoffs of 10 ms) the moment the
broker is spawned and times until it has fetched the partition's last record. Ownership: a
Server signals only the process it spawned (its own pid).
"""

import functools
import os
import re
import shutil
import signal
import subprocess
import time

import procs
from procs import BROKER_CPU, GENERATOR_CPU, BenchError

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-reference.sh")
BENCH_ENV = dict(os.environ, KAFKA_REF_PROFILE="bench")


def kafka_libs():
    """The pinned Kafka's jar directory (fetched with Maven on first use)."""
    r = subprocess.run([KAFKA_REF, "fetch"], capture_output=True, text=True, env=BENCH_ENV)
    if r.returncode != 0:
        raise BenchError("kafka-reference.sh fetch failed: %s" % r.stderr[-2000:])
    return r.stdout.strip().splitlines()[-1]


@functools.lru_cache(maxsize=None)
def kafka_jvm_opts():
    r = subprocess.run([KAFKA_REF, "jvm-opts"], capture_output=True, text=True, env=BENCH_ENV, check=True)
    return tuple(r.stdout.split())


class Server:
    def __init__(self, kind, binary, work, port):
        self.kind = kind
        self.binary = binary  # skiff or tansu binary; for kafka the jar dir
        self.port = port
        self.dir = os.path.join(work, "%s-%d" % (kind, port))
        self.proc = None
        self.starts = 0
        self.bootstrap = "127.0.0.1:%d" % port
        self.formatted = False

    # -- lifecycle -------------------------------------------------------------------------

    def _format(self):
        os.makedirs(self.dir, exist_ok=True)
        if self.kind == "kafka":
            r = subprocess.run(
                ["taskset", "-c", GENERATOR_CPU, KAFKA_REF, "format", self.dir, str(self.port), str(self.port + 1)],
                capture_output=True,
                text=True,
                env=BENCH_ENV,
            )
            if r.returncode != 0:
                raise BenchError("formatting Kafka in %s failed: %s" % (self.dir, r.stderr[-2000:]))
        self.formatted = True

    def command(self):
        if self.kind == "skiff":
            return [
                self.binary,
                "serve",
                "--override",
                "listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
                "--override",
                "log.dirs=%s" % os.path.join(self.dir, "data"),
            ]
        if self.kind == "kafka":
            return (
                ["java"]
                + list(kafka_jvm_opts())
                + ["-Dlog4j2.level=WARN", "-cp", os.path.join(self.binary, "*"), "kafka.Kafka"]
                + [os.path.join(self.dir, "server.properties")]
            )
        url = "tcp://127.0.0.1:%d" % self.port
        return [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]

    def spawn(self):
        """Starts the broker on its data (formatting it first if new); returns the monotonic
        time just before the exec. Does not wait."""
        if self.proc is not None:
            raise BenchError("%s is already running" % self.kind)
        if not self.formatted:
            self._format()
        cmd = self.command()
        self.starts += 1
        out = open(os.path.join(self.dir, "out-%d.log" % self.starts), "w")
        env = dict(os.environ, RUST_LOG="warn")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            ["taskset", "-c", BROKER_CPU] + cmd, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env,
        )
        out.close()
        return t0

    def start(self, timeout=90):
        """spawn() and wait until a Metadata request is answered (kcat -L), for bench runs that
        do not time the start."""
        self.spawn()
        if self.kind == "tansu":
            # Tansu 0.6 cannot answer Debian kcat's ApiVersions; the bench's own
            # rdkafka_performance works with it: a TCP accept is its readiness here.
            procs.wait_connectable(self.port, self.proc, timeout)
            return self
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            r = subprocess.run(
                ["taskset", "-c", GENERATOR_CPU, "kcat", "-b", self.bootstrap, "-L", "-m", "1"],
                capture_output=True, text=True,
            )
            if r.returncode == 0 and " brokers:" in r.stdout:
                return self
            time.sleep(0.1)
        raise BenchError("%s did not answer Metadata within %ds; see %s" % (self.kind, timeout, self.dir))

    def check_alive(self):
        if self.proc is None or self.proc.poll() is not None:
            code = None if self.proc is None else self.proc.returncode
            raise BenchError("%s exited (%s); see %s" % (self.kind, code, self.dir))

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, grace=60):
        """SIGTERM and wait for the exit (a clean shutdown); returns its seconds."""
        if self.proc is None:
            return 0.0
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise BenchError("%s did not stop within %d s of SIGTERM" % (self.kind, grace))
        self.proc = None
        return time.monotonic() - t0

    def kill9(self):
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def destroy(self):
        if self.proc is not None:
            try:
                self.stop()
            except BenchError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        self.formatted = False

    def data_bytes(self):
        total = 0
        for base, _, files in os.walk(self.dir):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(base, f))
                except OSError:
                    pass
        return total


def wait_topic_ready(bootstrap, topic, partitions, timeout=30):
    """Polls Metadata (kcat -L) until every partition of `topic` has a leader (not for Tansu,
    see Server.start)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = subprocess.run(
            ["taskset", "-c", GENERATOR_CPU, "kcat", "-b", bootstrap, "-L", "-t", topic, "-m", "2"],
            capture_output=True, text=True,
        )
        led = re.findall(r"partition \d+, leader (\d+),", r.stdout)
        if r.returncode == 0 and len(led) >= partitions and "Err" not in r.stdout:
            return
        time.sleep(0.05)
    raise BenchError("topic %s on %s has no leader for all %d partitions after %ds" % (topic, bootstrap, partitions, timeout))


def probe_ready(server, perf, topic, last_offset, timeout=300, spawn=True):
    """Spawns `server` and times until a consumer started at the same moment has fetched the
    record at `last_offset` of `topic` partition 0: (seconds to ready, the probe's output).
    An absolute offset: librdkafka's logical offsets (-1 from the end, beginning) add ~0.5 s
    of their own. `spawn=False` probes a running broker: the probe's own floor (~50 ms:
    process start, connection, metadata)."""
    t0 = server.spawn() if spawn else time.monotonic()
    probe = subprocess.Popen(
        ["taskset", "-c", GENERATOR_CPU, perf, "-C", "-t", topic, "-p", "0", "-b", server.bootstrap,
         "-o", str(last_offset), "-c", "1", "-q",
         "-X", "reconnect.backoff.ms=10", "-X", "reconnect.backoff.max.ms=10",
         "-X", "retry.backoff.ms=10", "-X", "retry.backoff.max.ms=10",
         "-X", "topic.metadata.refresh.interval.ms=100", "-X", "fetch.error.backoff.ms=10",
         "-X", "socket.connection.setup.timeout.ms=1000", "-X", "log_level=0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )
    try:
        out, _ = probe.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        raise BenchError("%s was not ready within %ds of its start" % (server.kind, timeout))
    ready = time.monotonic() - t0
    server.check_alive()
    if probe.returncode != 0 or "1 messages" not in out:
        raise BenchError("the readiness probe of %s failed (%s): %s" % (server.kind, probe.returncode, out[-1500:]))
    return ready, out
