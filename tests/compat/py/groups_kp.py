"""kafka-python (PyPI) consumer-group commands (ONE JSON line out, see _common.py):
- members: the three-member scenario of groups_common.members_scenario;
- consume: one member consumes and commits until p.count records (consume_until);
- zombie: a member commits as a generation that a rebalance has since replaced (see zombie());
- offset_delete: KafkaAdminClient.delete_group_offsets (OffsetDelete) on an empty group, on a
  group whose live member is subscribed to the topic, and on an unknown group;
- remove_members: KafkaAdminClient.remove_group_members (a batch LeaveGroup) of two live
  static members and one unknown instance id;
- initial_delay: three members start together on a broker with a
  group.initial.rebalance.delay.ms; returns each one's generation and how long the join took.

Usage: groups_kp.py COMMAND JSON.
"""

import logging
import sys
import threading
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import MemberToRemove
from kafka.structs import OffsetAndMetadata
import kafka.errors as kafka_errors

from _common import main, progress
import groups_common

# kafka-python's own account of coordinator lookups, joins and commits goes to stderr, which a
# failing test prints: a hung client call is then diagnosable from the CI log alone.
logging.basicConfig(
    stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s"
)
logging.getLogger("kafka.coordinator").setLevel(logging.INFO)


def poll(c, timeout_ms):
    """`c.poll(timeout_ms)` for a subscribed consumer, then the recovery of a join kafka-python
    lost. Every poll of a subscribed kafka-python consumer goes through here.

    kafka-python 3.0.12 can lose a rejoin (seen against Apache Kafka 4.1.1 as against Skiff):
    `ensure_active_group` runs while `need_rejoin()` is true and, when the poll's timeout
    expires first, leaves its JoinGroup/SyncGroup task in flight for the next poll to await.
    When the rejoin was started by a metadata change (the leader assigned before it had the
    topic's partitions: "No partition metadata for topic"), `need_rejoin()` is true only
    because the assignment snapshot differs from the metadata snapshot, and the leader's own
    assignment, inside that task, makes them equal. The next polls see `need_rejoin()` false and
    never await the task: the SyncGroup answer is received but never applied, the member stays
    REBALANCING with heartbeats off (commits fail "not part of an active group") and the broker
    expires it after session.timeout.ms. A poll that ends in that state (rebalancing, nothing
    left to rejoin for) asks for the rejoin kafka-python forgot; the next poll completes it."""
    records = c.poll(timeout_ms=timeout_ms)
    coordinator = c._coordinator
    if coordinator.rebalance_in_progress() and not coordinator.need_rejoin():
        progress({"kafka-python": "lost join task; rejoining", "client": c.config["client_id"]})
        coordinator.request_rejoin()
    return records


def offset_and_metadata(offset, metadata=""):
    try:
        return OffsetAndMetadata(offset, metadata, -1)
    except TypeError:  # kafka-python < 2.1 has no leader epoch
        return OffsetAndMetadata(offset, metadata)


class Adapter:
    def produce(self, p, values):
        prod = KafkaProducer(bootstrap_servers=p["bootstrap"], linger_ms=5)
        futures = [
            prod.send(p["topic"], v.encode(), partition=i % p["partitions"])
            for i, v in enumerate(values)
        ]
        prod.flush(timeout=30)
        for f in futures:
            f.get(timeout=30)
        prod.close(timeout=10)

    def conf(self, p, extra=None):
        conf = {
            "bootstrap_servers": p["bootstrap"],
            "group_id": p["group"],
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 500,
        }
        conf.update(p.get("config", {}))
        conf.update(extra or {})
        return conf

    def new_member(self, p, name):
        c = KafkaConsumer(**self.conf(p, {"client_id": name}))
        c.subscribe([p["topic"]])
        return (c, p["topic"], {"joined": False})

    def poll(self, h):
        # The first poll is long, it spans the join (see Joining): kafka-python polled with
        # short timeouts while its JoinGroup is parked can re-send it after the join completed,
        # and every re-sent JoinGroup from a leader starts another generation, so three such
        # members can keep a group rebalancing past the test's deadline (seen twice in CI).
        first = not h[2]["joined"]
        h[2]["joined"] = True
        batches = poll(h[0], 6000 if first else 100)
        out = []
        for tp, records in batches.items():
            for r in records:
                out.append((tp.partition, r.offset, r.value.decode()))
        return out

    def commit(self, h, partition, next_offset):
        c, topic = h[0], h[1]
        c.commit({TopicPartition(topic, partition): offset_and_metadata(next_offset)})

    def assignment(self, h):
        return [tp.partition for tp in h[0].assignment()]

    def close(self, h):
        h[0].close()

    def committed(self, p):
        c = KafkaConsumer(**self.conf(p))
        out = {}
        for i in range(p["partitions"]):
            v = c.committed(TopicPartition(p["topic"], i))
            out[i] = -1 if v is None else v
        c.close()
        return out

    def end_offsets(self, p):
        c = KafkaConsumer(bootstrap_servers=p["bootstrap"])
        tps = [TopicPartition(p["topic"], i) for i in range(p["partitions"])]
        ends = c.end_offsets(tps)
        c.close()
        return {tp.partition: off for tp, off in ends.items()}


ADAPTER = Adapter()


def members(p):
    return groups_common.members_scenario(ADAPTER, p)


def consume(p):
    return groups_common.consume_until(ADAPTER, p)


def zombie(p):
    """A zombie from an old generation: member A consumes and commits in generation N; member B
    joins, so both move to generation N+1; A then commits as generation N (kafka-python would
    refuse locally, so its coordinator is told the old generation is still current and the
    broker judges). Returns the error, both generations and the committed offsets after."""
    topic = p["topic"]
    a = KafkaConsumer(**ADAPTER.conf(p, {"client_id": "zombie"}))
    a.subscribe([topic])
    deadline = time.time() + groups_common.WAIT_S
    while not a.assignment() and time.time() < deadline:
        poll(a, 100)
    old = a._coordinator.generation_if_stable()
    a_before = sorted(tp.partition for tp in a.assignment())
    a.commit({TopicPartition(topic, pp): offset_and_metadata(1, "alive") for pp in a_before})
    b = KafkaConsumer(**ADAPTER.conf(p, {"client_id": "successor"}))
    b.subscribe([topic])
    deadline = time.time() + groups_common.WAIT_S
    while time.time() < deadline:
        poll(a, 50)
        poll(b, 50)
        shares = [len(a.assignment()), len(b.assignment())]
        if all(shares) and sum(shares) == p["partitions"]:
            break
    new_gen = a._coordinator.generation_if_stable()
    a_after = sorted(tp.partition for tp in a.assignment())
    b_after = sorted(tp.partition for tp in b.assignment())
    error = None
    live = a._coordinator.generation_if_stable
    try:
        a._coordinator.generation_if_stable = lambda: old
        a.commit({TopicPartition(topic, pp): offset_and_metadata(999, "zombie") for pp in a_before})
    except Exception as e:
        error = type(e).__name__ + ": " + str(e)
    finally:
        a._coordinator.generation_if_stable = live
    committed = {str(pp): b.committed(TopicPartition(topic, pp)) for pp in range(p["partitions"])}
    b.close()
    a.close()
    return {
        "old_generation": old.generation_id if old else None,
        "new_generation": new_gen.generation_id if new_gen else None,
        "same_member": bool(old and new_gen and old.member_id == new_gen.member_id),
        "zombie_before": a_before,
        "shares_after": [a_after, b_after],
        "zombie_commit_error": error,
        "committed": committed,
    }


def wait_assigned(consumers, partitions):
    """Polls until the consumers' assignments cover every partition (each has one)."""
    deadline = time.time() + groups_common.WAIT_S
    while time.time() < deadline:
        for c in consumers:
            poll(c, 50)
        owned = sorted(tp.partition for c in consumers for tp in c.assignment())
        if owned == list(range(partitions)) and all(c.assignment() for c in consumers):
            return True
    return False


def commit_settled(c, offsets):
    """Commits once the member is out of any rebalance: while kafka-python is rebalancing it
    refuses the commit itself (RebalanceInProgressError, nothing sent). Poll to finish that
    rebalance (see poll()) and retry, until the deadline."""
    deadline = time.time() + groups_common.WAIT_S
    while True:
        try:
            return c.commit(offsets, timeout_ms=10000)
        except (kafka_errors.RebalanceInProgressError, kafka_errors.KafkaTimeoutError):
            if time.time() >= deadline:
                raise
            poll(c, 200)


class Joining:
    """Consumers that subscribe and poll, each in its own thread, until stop(). The first poll
    is long (it spans the join): kafka-python polled with short timeouts while its JoinGroup
    is parked can re-send it after the join completed (a client-side race), and a leader's
    second JoinGroup rightly starts another generation, on Kafka too."""

    def __init__(self, consumers, topic):
        self.consumers = consumers
        self.stop_flag = threading.Event()
        self.threads = [
            threading.Thread(target=self.loop, args=(c, topic), daemon=True) for c in consumers
        ]
        for t in self.threads:
            t.start()

    def loop(self, c, topic):
        c.subscribe([topic])
        poll(c, 6000)
        while not self.stop_flag.is_set():
            poll(c, 50)

    def shares(self, partitions):
        """The members' shares once each has one and together they own every partition (polls
        until then, at most groups_common.WAIT_S), else None."""
        deadline = time.time() + groups_common.WAIT_S
        while time.time() < deadline:
            shares = [sorted(tp.partition for tp in c.assignment()) for c in self.consumers]
            if sorted(x for s in shares for x in s) == list(range(partitions)) and all(shares):
                return shares
            time.sleep(0.02)
        return None

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(10)


def committed_of(p, group, topic):
    """{partition: committed offset or -1} of `group`, read by a consumer that never joins."""
    c = KafkaConsumer(bootstrap_servers=p["bootstrap"], group_id=group, enable_auto_commit=False)
    out = {}
    for i in range(p["partitions"]):
        v = c.committed(TopicPartition(topic, i), timeout_ms=10000)
        out[str(i)] = -1 if v is None else v
    c.close()
    return out


def error_names(results):
    """{"topic/partition": error name} of a delete_group_offsets result."""
    return {"%s/%d" % (tp.topic, tp.partition): err.__name__ for tp, err in sorted(results.items())}


def offset_delete(p):
    """OffsetDelete (API 47) through KafkaAdminClient.delete_group_offsets:
    - p.group_empty commits p.topic's partitions and leaves (an Empty group); deleting
      partition 0 succeeds and its committed offset becomes -1, the others stay;
    - p.group_busy has a live member subscribed to p.topic that committed: deleting p.topic's
      partition 0 fails GROUP_SUBSCRIBED_TO_TOPIC (the offset stays) while p.other's partition 0
      (a topic it is not subscribed to) succeeds;
    - an unknown group raises GROUP_ID_NOT_FOUND."""
    topic, parts = p["topic"], p["partitions"]
    tps = [TopicPartition(topic, i) for i in range(parts)]
    out = {}
    c = KafkaConsumer(**ADAPTER.conf(dict(p, group=p["group_empty"]), {"client_id": "empty"}))
    c.subscribe([topic])
    progress({"phase": "empty: joining"})
    out["empty_assigned"] = wait_assigned([c], parts)
    progress({"phase": "empty: committing"})
    commit_settled(c, {tp: offset_and_metadata(1, "empty") for tp in tps})
    progress({"phase": "empty: leaving"})
    c.close()
    progress({"phase": "empty: reading committed"})
    out["empty_before"] = committed_of(p, p["group_empty"], topic)
    admin = KafkaAdminClient(bootstrap_servers=p["bootstrap"])
    progress({"phase": "empty: deleting"})
    out["empty_result"] = error_names(admin.delete_group_offsets(p["group_empty"], [tps[0]]))
    out["empty_after"] = committed_of(p, p["group_empty"], topic)

    busy = KafkaConsumer(**ADAPTER.conf(dict(p, group=p["group_busy"]), {"client_id": "busy"}))
    busy.subscribe([topic])
    progress({"phase": "busy: joining"})
    out["busy_assigned"] = wait_assigned([busy], parts)
    commit_settled(busy, {tp: offset_and_metadata(1, "busy") for tp in tps})
    progress({"phase": "busy: deleting"})
    # The member stays live through its heartbeat loop while the admin client works.
    try:
        out["busy_result"] = error_names(
            admin.delete_group_offsets(
                p["group_busy"], [tps[0], TopicPartition(p["other"], 0)]
            )
        )
        out["busy_after"] = committed_of(p, p["group_busy"], topic)
    finally:
        busy.close()

    progress({"phase": "unknown: deleting"})
    try:
        admin.delete_group_offsets(p["group_unknown"], [tps[0]])
        out["unknown_error"] = None
    except Exception as e:
        out["unknown_error"] = type(e).__name__
    admin.close()
    return out


def remove_members(p):
    """Two static members (group.instance.id p.instances) share p.topic; the admin client
    removes both and an unknown instance id in one batch LeaveGroup (KIP-345). Returns the
    per-member errors and the group's state and members before and after."""
    topic, parts = p["topic"], p["partitions"]
    consumers = []
    for instance in p["instances"]:
        consumers.append(
            KafkaConsumer(**ADAPTER.conf(p, {"client_id": instance, "group_instance_id": instance}))
        )
    joining = Joining(consumers, topic)
    out = {"assigned": joining.shares(parts) is not None}
    joining.stop()
    admin = KafkaAdminClient(bootstrap_servers=p["bootstrap"])

    def describe():
        d = admin.describe_groups([p["group"]])[p["group"]]
        return {
            "state": d["group_state"],
            "instances": sorted(m.get("group_instance_id") or "" for m in d["members"]),
        }

    # Not polled from here on: the heartbeat loops keep both members live, and a removed member
    # only rejoins from poll(), so the state after the removal is stable for describe().
    out["before"] = describe()
    try:
        removed = admin.remove_group_members(
            p["group"],
            [MemberToRemove(group_instance_id=i) for i in p["instances"] + [p["unknown"]]],
        )
        out["removed"] = sorted(err.__name__ for err in removed.values())
        out["after"] = describe()
    finally:
        for c in consumers:
            c.close()
    admin.close()
    return out


def initial_delay(p):
    """Three consumers subscribe at once, each polled by its own thread, until they share
    p.topic; with group.initial.rebalance.delay.ms the first rebalance waits for all of them,
    so they land in one generation (the first). Returns each member's generation id, the
    shares and the time from the subscribes to the shares."""
    consumers = [KafkaConsumer(**ADAPTER.conf(p, {"client_id": "m%d" % i})) for i in range(3)]
    started = time.time()
    joining = Joining(consumers, p["topic"])
    shares = joining.shares(p["partitions"])
    join_ms = int((time.time() - started) * 1000)
    generations = []
    for c in consumers:
        g = c._coordinator.generation_if_stable()
        generations.append(g.generation_id if g else None)
    joining.stop()
    for c in consumers:
        c.close()
    return {"generations": generations, "shares": shares, "join_ms": join_ms}


if __name__ == "__main__":
    main(
        {
            "members": members,
            "consume": consume,
            "zombie": zombie,
            "offset_delete": offset_delete,
            "remove_members": remove_members,
            "initial_delay": initial_delay,
        }
    )
