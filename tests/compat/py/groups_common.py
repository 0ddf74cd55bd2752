"""Consumer-group scenarios shared by the client adapters (groups_ck.py for confluent-kafka,
groups_kp.py for kafka-python): members are threads, each owning one subscribed consumer that
polls, records what it consumed and commits after processing every record.

An adapter provides: produce(p, values) (value i goes to partition i % partitions),
new_member(p, name) -> consumer handle, poll(handle) -> [(partition, offset, value)],
commit(handle, partition, next_offset) (raises on failure), assignment(handle) ->
[partitions], close(handle), committed(p) -> {partition: offset} (read as a fresh group
member that does not join), end_offsets(p) -> {partition: offset}.

Scenario `members` (p: bootstrap, topic, group, partitions, per_phase, config): three members
share the topic, one leaves (close -> LeaveGroup), the other two take its partitions, a new
member joins and gets a share; records are produced before each phase and must all be
consumed. The result lists every assignment snapshot, every consumed record and the final
committed and end offsets, for the Rust test to judge.
"""

import threading
import time
import traceback

from _common import progress

WAIT_S = 25.0


class Member(threading.Thread):
    def __init__(self, adapter, p, name, consumed, lock):
        super().__init__(daemon=True)
        self.adapter = adapter
        self.p = p
        self.name = name
        self.consumed = consumed
        self.lock = lock
        self.stop_flag = threading.Event()
        self.assigned = []
        self.error = None
        self.commit_failures = 0
        self.ready = threading.Event()

    def run(self):
        try:
            h = self.adapter.new_member(self.p, self.name)
            self.ready.set()
            while not self.stop_flag.is_set():
                for partition, offset, value in self.adapter.poll(h):
                    with self.lock:
                        self.consumed.append([self.name, partition, offset, value])
                    try:
                        self.adapter.commit(h, partition, offset + 1)
                    except Exception as e:  # a rebalance fenced the commit: redelivered later
                        self.commit_failures += 1
                        progress({"member": self.name, "commit_failed": str(e)})
                self.assigned = sorted(self.adapter.assignment(h))
            self.adapter.close(h)
        except Exception:
            self.error = traceback.format_exc()
            self.ready.set()


def balanced(members, partitions):
    """The members' shares if every partition is owned by exactly one of them and each has at
    least one, else None."""
    shares = {m.name: list(m.assigned) for m in members}
    owned = [p for s in shares.values() for p in s]
    if sorted(owned) != list(range(partitions)):
        return None
    if any(not s for s in shares.values()):
        return None
    return shares


def wait_for(what, cond, errors):
    deadline = time.time() + WAIT_S
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    errors.append("timed out waiting for " + what)
    return None


def settled(members, partitions, settle_s):
    """A condition for wait_for: the members' shares once balanced() has returned the same
    shares for settle_s seconds (0: at once). KIP-848 members reconcile towards the target over
    several heartbeats, so a balanced snapshot may still be on its way there."""
    state = {"shares": None, "since": 0.0}

    def cond():
        shares = balanced(members, partitions)
        if shares is None or shares != state["shares"]:
            state["shares"], state["since"] = shares, time.time()
            return shares if shares is not None and settle_s <= 0 else None
        return shares if time.time() - state["since"] >= settle_s else None

    return cond


def members_scenario(adapter, p):
    """p.settle_ms (optional): how long each snapshot's shares must stay unchanged."""
    parts = p["partitions"]
    settle_s = p.get("settle_ms", 0) / 1000.0
    per_phase = p["per_phase"]
    consumed = []
    lock = threading.Lock()
    errors = []
    produced = []
    snapshots = {}

    def produce_phase(phase):
        values = ["%s-%d-%d" % (p["group"], phase, i) for i in range(per_phase)]
        adapter.produce(p, values)
        produced.extend(values)

    def all_consumed():
        with lock:
            seen = {c[3] for c in consumed}
        return all(v in seen for v in produced)

    def start(name):
        m = Member(adapter, p, name, consumed, lock)
        m.start()
        return m

    produce_phase(0)
    members = [start("m0"), start("m1"), start("m2")]
    snapshots["three"] = wait_for("three members to share", settled(members, parts, settle_s), errors)
    progress({"phase": "three", "shares": snapshots["three"]})
    wait_for("phase 0 consumed", all_consumed, errors)

    leaving = members.pop(1)
    t0 = time.time()
    leaving.stop_flag.set()
    leaving.join(WAIT_S)
    snapshots["two"] = wait_for("two members to take over", lambda: balanced(members, parts), errors)
    moved_ms = int((time.time() - t0) * 1000)
    if settle_s > 0:
        snapshots["two"] = wait_for("two members to settle", settled(members, parts, settle_s), errors)
    progress({"phase": "two", "shares": snapshots["two"], "moved_ms": moved_ms})
    produce_phase(1)
    wait_for("phase 1 consumed", all_consumed, errors)

    members.append(start("m3"))
    snapshots["rejoined"] = wait_for(
        "the new member to get a share", settled(members, parts, settle_s), errors
    )
    progress({"phase": "rejoined", "shares": snapshots["rejoined"]})
    produce_phase(2)
    wait_for("phase 2 consumed", all_consumed, errors)

    for m in members:
        m.stop_flag.set()
    for m in members:
        m.join(WAIT_S)
    all_members = members + [leaving]
    errors.extend("%s: %s" % (m.name, m.error) for m in all_members if m.error)
    return {
        "errors": errors,
        "snapshots": snapshots,
        "moved_ms": moved_ms,
        "produced": produced,
        "consumed": consumed,
        "commit_failures": sum(m.commit_failures for m in all_members),
        "committed": {str(k): v for k, v in adapter.committed(p).items()},
        "end_offsets": {str(k): v for k, v in adapter.end_offsets(p).items()},
    }


def consume_until(adapter, p):
    """One member consumes and commits until it has p.count records (or p.seconds pass);
    returns what it consumed. Used around broker restarts."""
    consumed = []
    errors = []
    h = adapter.new_member(p, "solo")
    deadline = time.time() + p.get("seconds", WAIT_S)
    while len(consumed) < p["count"] and time.time() < deadline:
        for partition, offset, value in adapter.poll(h):
            consumed.append([partition, offset, value])
            try:
                adapter.commit(h, partition, offset + 1)
            except Exception as e:
                errors.append(str(e))
    assignment = sorted(adapter.assignment(h))
    adapter.close(h)
    return {"consumed": consumed, "commit_errors": errors, "assignment": assignment}


class ChildMember:
    """A member running in a child process (`SCRIPT member JSON`), so it can be SIGKILLed: it
    reports its assignment and every record it consumed as JSON lines on stdout."""

    def __init__(self, script, p, name, consumed, lock):
        import json
        import subprocess
        import sys

        self.name = name
        self.assigned = []
        params = dict(p, member_name=name)
        self.proc = subprocess.Popen(
            [sys.executable, script, "member", json.dumps(params)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

        def read():
            for line in self.proc.stdout:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if "assigned" in msg:
                    self.assigned = msg["assigned"]
                elif "consumed" in msg:
                    with lock:
                        consumed.append([name] + msg["consumed"])

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()

    def kill(self):
        import signal

        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def member_process(adapter, p):
    """The child side of ChildMember: consumes and commits until killed (or stdin closes)."""
    import json
    import sys

    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    h = adapter.new_member(p, p["member_name"])
    last = None

    def say(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    while not stop.is_set():
        for partition, offset, value in adapter.poll(h):
            say({"consumed": [partition, offset, value]})
            try:
                adapter.commit(h, partition, offset + 1)
            except Exception:
                pass
        now = sorted(adapter.assignment(h))
        if now != last:
            say({"assigned": now})
            last = now
    adapter.close(h)
    return {"stopped": True}


def crash_scenario(adapter, p, script):
    """Three members, one of them a child process that is SIGKILLed (no LeaveGroup): the other
    two must take its partitions once its session times out. Records are produced before and
    after the crash and must all be consumed; commits must reach the end offsets."""
    parts = p["partitions"]
    per_phase = p["per_phase"]
    consumed = []
    lock = threading.Lock()
    errors = []
    produced = []

    def produce_phase(phase):
        values = ["%s-%d-%d" % (p["group"], phase, i) for i in range(per_phase)]
        adapter.produce(p, values)
        produced.extend(values)

    def all_consumed():
        with lock:
            seen = {c[3] for c in consumed}
        return all(v in seen for v in produced)

    produce_phase(0)
    threads = [Member(adapter, p, "m0", consumed, lock), Member(adapter, p, "m2", consumed, lock)]
    for m in threads:
        m.start()
    child = ChildMember(script, p, "m1", consumed, lock)
    three = wait_for("three members to share", lambda: balanced(threads + [child], parts), errors)
    wait_for("phase 0 consumed", all_consumed, errors)
    child.kill()
    t0 = time.time()
    two = wait_for("the survivors to take over", lambda: balanced(threads, parts), errors)
    moved_ms = int((time.time() - t0) * 1000)
    progress({"phase": "two", "shares": two, "moved_ms": moved_ms})
    produce_phase(1)
    wait_for("phase 1 consumed", all_consumed, errors)
    for m in threads:
        m.stop_flag.set()
    for m in threads:
        m.join(WAIT_S)
    errors.extend("%s: %s" % (m.name, m.error) for m in threads if m.error)
    return {
        "errors": errors,
        "snapshots": {"three": three, "two": two},
        "moved_ms": moved_ms,
        "produced": produced,
        "consumed": consumed,
        "committed": {str(k): v for k, v in adapter.committed(p).items()},
        "end_offsets": {str(k): v for k, v in adapter.end_offsets(p).items()},
    }
