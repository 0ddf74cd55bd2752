"""Profile helper used for docs/performance.md (issue 5): one pinned release broker, one
fresh topic per mode (PARTS partitions, default 1), `perf record -F 997 -g` on the broker
while `skiff-bench produce` writes 1,000,000 x 1 KiB records (gon = idempotent, goff = not).
Run from the repo root:
  PARTS=1 .venv/bin/python bench/idempotence/results/perf_profile.py gon goff
  perf report -i /tmp/idb/perf-gon.data --no-children --sort symbol --stdio -g none
"""
import os, subprocess, sys, tempfile, time, shutil
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import idempotence_bench as ib
from confluent_kafka.admin import AdminClient
os.sched_setaffinity(0, {0})
data = tempfile.mkdtemp(prefix="skiff-perf-")
broker, bootstrap = ib.start_broker("target/release/skiff", os.path.join(data, "data"), True)
admin = AdminClient({"bootstrap.servers": bootstrap})
try:
    for mode in sys.argv[1:]:
        topic = "perf-" + mode
        ib.create_topic(admin, topic, int(os.environ.get("PARTS", "1")))
        perf = subprocess.Popen(["perf", "record", "-F", "997", "-g", "-p", str(broker.pid), "-o", os.path.join(os.environ.get("OUT", "/tmp/idb"), "perf-%s.data") % mode],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        cmd = ["taskset", "-c", "0", "target/release/skiff-bench", "produce", "--bootstrap", bootstrap,
               "--topic", topic, "--records", "1000000", "--broker-pid", str(broker.pid)]
        if mode == "gon":
            cmd.append("--idempotent")
        print(subprocess.run(cmd, capture_output=True, text=True).stdout.strip(), flush=True)
        perf.send_signal(2); perf.wait()
        ib.delete_topic(admin, topic)
finally:
    broker.terminate(); broker.wait(30); shutil.rmtree(data, ignore_errors=True)
