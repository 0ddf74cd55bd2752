"""The machine's limits for the broker benchmark, measured in the same run as the brokers.

Mental model: figures no broker can beat on this machine, each measured with the same
core pinning as the brokers (the "broker" side on core 1, the "client" side on core 0):
  - raw write: `dd if=/dev/zero of=<dir>/raw bs=1M count=2048` (issue 2's limit) into the
    work dir, i.e. the filesystem Skiff's log dirs are on; after an untimed sync; MB/s =
    bytes / seconds as dd reports them; the file is deleted after each run;
  - sendfile floors (for C1): a file of the C1 size, written and read once so it is in the
    page cache, sent with sendfile(2) in 1 MiB calls over one loopback TCP connection to a
    reader doing read(2) of 1 MiB (`skiff-bench sendfile-floor`, Rust, blocking sockets; a
    Python stand-in cost more CPU per MB than Skiff itself); "stream" sends back to back,
    "fetch" waits for a 100-byte request from the reader before each 1 MiB, as a broker
    answering librdkafka's one-at-a-time 1 MiB fetches does. Both report their own CPU
    (CLOCK_PROCESS_CPUTIME_ID) and wall time around the transfer loop only, so start-up is not
    counted. The sender's CPU-ms/MB is the kernel's price of a zero-copy catch-up read
    on this machine: on loopback the receiver's TCP input path mostly runs in the sender's
    context (softirq on the sending core), so it lands in the sender's system time, exactly
    as it does for a broker.
  - latency floor (for the p99.9/p50 target): `skiff-bench latency-floor`, a bare relay with a
    log's writes and roll flushes between a paced client's two connections (see its module).
Owns only the files it creates in the work dir; single-threaded.
"""

import json
import os
import re
import subprocess

from procs import BROKER_CPU, GENERATOR_CPU, BenchError

CHUNK = 1 << 20

def dd_raw_write(directory):
    """One dd run on the broker core; MB/s."""
    return dd_write_cost(directory)[0]


def make_page_cache_file(directory, size):
    """A file of `size` bytes (a non-zero pattern) written and read back once."""
    path = os.path.join(directory, "sendfile-src")
    block = (b"skiff-bench-" * (CHUNK // 12 + 1))[:CHUNK]
    with open(path, "wb") as f:
        left = size
        while left > 0:
            f.write(block[: min(CHUNK, left)])
            left -= CHUNK
    with open(path, "rb") as f:
        while f.read(CHUNK):
            pass
    return path


def sendfile_floor(floor_bin, path, size, mode):
    """One transfer of `size` bytes of `path` with `skiff-bench sendfile-floor` (Rust, blocking
    sockets); returns sender/receiver CPU and MB/s.
    mode "stream": back-to-back 1 MiB sendfile calls, the reader just drains;
    mode "fetch": request/response like a Fetch: the reader sends 100 bytes and reads 1 MiB,
    the sender waits for the 100 bytes before each 1 MiB sendfile (one exchange in flight)."""
    common = ["sendfile-floor", "--mode", mode, "--size", str(size)]
    rx = subprocess.Popen(
        ["taskset", "-c", GENERATOR_CPU, floor_bin] + common + ["--role", "recv", "--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    port = rx.stdout.readline().strip()
    tx = subprocess.run(
        ["taskset", "-c", BROKER_CPU, floor_bin]
        + common
        + ["--role", "send", "--addr", "127.0.0.1:" + port, "--file", path],
        capture_output=True,
        text=True,
        timeout=300,
    )
    rx_out = rx.stdout.read()
    rx.wait()
    if tx.returncode != 0 or rx.returncode != 0:
        raise BenchError("sendfile floor failed: %s %s" % (tx.stderr, rx_out))
    s = json.loads(tx.stdout)
    r = json.loads(rx_out)
    if s["bytes"] != size or r["bytes"] != size:
        raise BenchError("sendfile floor moved %d/%d of %d bytes" % (s["bytes"], r["bytes"], size))
    mb = size / 1e6
    wall = max(r["wall_s"], 1e-6)
    return {
        "mode": mode,
        "mb_s": mb / wall,
        "sender_ms_per_mb": s["cpu_s"] * 1000.0 / mb,
        "sender_core_pct": 100.0 * s["cpu_s"] / wall,
        "receiver_ms_per_mb": r["cpu_s"] * 1000.0 / mb,
        "receiver_core_pct": 100.0 * r["cpu_s"] / wall,
    }


PAGE_REPORTING = "/sys/module/page_reporting/parameters/"
# (knob, value while the benchmark runs): hold freed pages 5 min (the kernel refuses 600000 ms
# and more), and let up to 20 GiB of them wait (the default 1024 MiB reports the rest at once).
PAGE_REPORTING_HOLD = (("min_free_ms", "300000"), ("max_waiting_mib", "20480"))


def hold_guest_memory():
    """This VM (Firecracker, free page reporting with `min_free_ms=0`) hands every freed page
    back to the host at once, so the next write into a new page-cache page pays a host fault
    inside the kernel's copy: `dd bs=1M` of 3 GiB measured 345-713 MB/s so, 4.0 GB/s into
    pages that were reused (2026-12-03). That cost lands in whichever process writes (2-3
    CPU-ms per MB, several times Skiff's own produce cost) and depends on the history of the
    machine's memory, not on the broker. Where the knobs exist and are writable (root), this
    keeps freed pages in the guest (PAGE_REPORTING_HOLD); with `touch_free_memory` before each
    broker's measurements most page-cache pages they write are then reused ones (best effort:
    dd still varied 1.4-5.1 GB/s so, against 0.35-0.7 GB/s without). Returns the knobs'
    previous values (for `release_guest_memory`), or None where there are no such knobs
    (nothing is changed; the figures carry the cost)."""
    old = []
    try:
        for knob, value in PAGE_REPORTING_HOLD:
            with open(PAGE_REPORTING + knob) as f:
                old.append((knob, f.read().strip()))
            with open(PAGE_REPORTING + knob, "w") as f:
                f.write(value)
    except OSError:
        release_guest_memory(old)
        return None
    return old


def touch_free_memory(keep_free_gib=3):
    """Writes once into all but `keep_free_gib` of the available memory and frees it: the
    pages are the host's again (held by `hold_guest_memory`). Returns the seconds it took."""
    import mmap
    import time

    t0 = time.monotonic()
    avail = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    size = max(0, avail - keep_free_gib * (1 << 30)) // CHUNK * CHUNK
    if size:
        m = mmap.mmap(-1, size)
        zero = bytes(CHUNK)
        for off in range(0, size, CHUNK):
            m[off : off + CHUNK] = zero
        m.close()
    return time.monotonic() - t0


def release_guest_memory(old):
    for knob, value in old or []:
        try:
            with open(PAGE_REPORTING + knob, "w") as f:
                f.write(value)
        except OSError:
            pass


def dd_write_cost(directory, mib=2048):
    """dd if=/dev/zero bs=1M of `mib` MiB into a new file, on the broker core: (MB/s, CPU-ms
    per MB of dd itself): the price of putting bytes into the page cache with write(2), the
    floor under every broker's produce cost on this machine."""
    path = os.path.join(directory, "raw")
    os.sync()
    p = subprocess.Popen(["taskset", "-c", BROKER_CPU, "dd", "if=/dev/zero", "of=" + path, "bs=1M",
                          "count=%d" % mib], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.path.exists(path):
        os.unlink(path)
    m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", err)
    if os.waitstatus_to_exitcode(status) != 0 or not m:
        raise BenchError("dd failed: %s" % err)
    mb = int(m.group(1)) / 1e6
    return mb / float(m.group(2)), (ru.ru_utime + ru.ru_stime) * 1000.0 / mb


def latency_floor(floor_bin, log_dir, rate, secs, size=1024):
    """The latency floor (`skiff-bench latency-floor`): the relay on the broker core, writing to
    segment files in `log_dir` (None: no disk), the paced client on the generator core; returns
    the client's JSON (p50/p99/p999/max ms, samples, achieved rec/s)."""
    relay_args = ["latency-floor", "--role", "relay", "--addr", "127.0.0.1:0"]
    if log_dir:
        relay_args += ["--log-dir", os.path.join(log_dir, "latency-floor")]
    relay = subprocess.Popen(["taskset", "-c", BROKER_CPU, floor_bin] + relay_args, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    port = relay.stdout.readline().strip()
    client = subprocess.run(
        ["taskset", "-c", GENERATOR_CPU, floor_bin, "latency-floor", "--role", "client", "--addr",
         "127.0.0.1:" + port, "--rate", str(int(rate)), "--size", str(size), "--secs", str(secs)],
        capture_output=True, text=True, timeout=secs * 4 + 60)
    _, relay_err = relay.communicate(timeout=120)
    if client.returncode != 0 or relay.returncode != 0:
        raise BenchError("latency floor failed: %s %s" % (client.stderr, relay_err))
    return json.loads(client.stdout)
