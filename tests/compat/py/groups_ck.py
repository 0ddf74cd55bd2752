"""confluent-kafka (librdkafka) consumer-group commands, for PyPI's 2.x and Debian's 1.7.0
(librdkafka 2.0.2) alike; `group.protocol=consumer` (KIP-848) needs PyPI's.

Commands (ONE JSON line out, see _common.py):
- members: the three-member scenario of groups_common.members_scenario;
- crash: three members, one in a child process that is SIGKILLed (crash_scenario);
- member: one member in this process, reporting on stdout (the crash scenario's child);
- create_topic: creates p.topic with p.partitions partitions;
- produce: p.count records "0".."count-1", record i to partition i % partitions;
- consume: one member consumes and commits until p.count records (consume_until);
- static: a static member restarts within its session timeout next to a watcher member,
  whose rebalance events are reported (there must be none);
- admin: ListGroups / DescribeGroups / committed offsets / lag / DeleteGroups via AdminClient
  while a member of another group consumes;
- committed: the group's committed offsets;
- kip848_admin: AdminClient describe_consumer_groups of a KIP-848 group (type, members,
  assignments) and a classic one, and list_consumer_groups filtered by state and by type;
- commit_metadata: commits p.offsets with a metadata string per partition (TopicPartition
  metadata) as a member of p.group; committed_metadata reads offsets and metadata back;
- cooperative: cooperative-sticky members record every on_assign/on_revoke while one leaves
  and one joins (incremental rebalances);
- fenced: two live consumers with the same group.instance.id; the older must fail fatally;
- max_size: p.count members join a group on a broker with a small group.max.size;
- regex: a KIP-848 member with a regex subscription gets the matching topics, and a matching
  topic created later;
- migration: classic members and a group.protocol=consumer member in one group (online
  upgrade), then the consumer member leaves (online downgrade).

Usage: groups_ck.py COMMAND JSON.
"""

import threading
import time
import traceback

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from _common import main, progress
import groups_common

KIP848_FORBIDDEN = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")


class Adapter:
    def produce(self, p, values):
        prod = ck.Producer({"bootstrap.servers": p["bootstrap"], "linger.ms": 5})
        for i, v in enumerate(values):
            prod.produce(p["topic"], v.encode(), partition=i % p["partitions"])
        left = prod.flush(30)
        if left:
            raise RuntimeError("%d records not delivered" % left)

    def conf(self, p, extra=None):
        conf = {
            "bootstrap.servers": p["bootstrap"],
            "group.id": p["group"],
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
        conf.update(p.get("config", {}))
        conf.update(extra or {})
        if conf.get("group.protocol") == "consumer":
            for k in KIP848_FORBIDDEN:
                conf.pop(k, None)
        return conf

    def new_member(self, p, name):
        c = ck.Consumer(self.conf(p, {"client.id": name}))
        c.subscribe([p["topic"]])
        return (c, p["topic"])

    def poll(self, h):
        m = h[0].poll(0.1)
        if m is None:
            return []
        if m.error():
            if m.error().code() != ck.KafkaError._PARTITION_EOF:
                progress({"poll_error": str(m.error())})
            return []
        return [(m.partition(), m.offset(), m.value().decode())]

    def commit(self, h, partition, next_offset):
        """Commits exactly the processed record's next offset (not the consumer's position)."""
        c, topic = h
        c.commit(offsets=[ck.TopicPartition(topic, partition, next_offset)], asynchronous=False)

    def assignment(self, h):
        return [tp.partition for tp in h[0].assignment()]

    def close(self, h):
        h[0].close()

    def committed(self, p):
        c = ck.Consumer(self.conf(p))
        tps = [ck.TopicPartition(p["topic"], i) for i in range(p["partitions"])]
        got = c.committed(tps, timeout=15)
        c.close()
        return {tp.partition: tp.offset for tp in got}

    def end_offsets(self, p):
        c = ck.Consumer({"bootstrap.servers": p["bootstrap"], "group.id": "skiff-compat-unused"})
        out = {}
        for i in range(p["partitions"]):
            out[i] = c.get_watermark_offsets(ck.TopicPartition(p["topic"], i), timeout=15)[1]
        c.close()
        return out


ADAPTER = Adapter()


def members(p):
    return groups_common.members_scenario(ADAPTER, p)


def crash(p):
    return groups_common.crash_scenario(ADAPTER, p, __file__)


def member(p):
    return groups_common.member_process(ADAPTER, p)


def create_topic(p):
    a = AdminClient({"bootstrap.servers": p["bootstrap"]})
    for f in a.create_topics([NewTopic(p["topic"], p["partitions"], 1)]).values():
        f.result()
    return {"created": p["topic"]}


def produce(p):
    ADAPTER.produce(p, [str(i) for i in range(p["count"])])
    return {"produced": p["count"]}


def consume(p):
    return groups_common.consume_until(ADAPTER, p)


def committed(p):
    return {"committed": {str(k): v for k, v in ADAPTER.committed(p).items()}}


def static(p):
    """Static membership (KIP-345): a dynamic watcher W and a static member S (group.instance.id)
    share the topic; S stops (close() sends no LeaveGroup for a static member) and a new
    consumer with the same instance id starts at once, well within the session timeout. Returns
    W's rebalance events before and after the restart and S's partitions before and after."""
    events = []
    stop = threading.Event()

    def on_assign(c, parts):
        events.append(["assign", sorted(tp.partition for tp in parts), time.time()])

    def on_revoke(c, parts):
        events.append(["revoke", sorted(tp.partition for tp in parts), time.time()])

    w = ck.Consumer(ADAPTER.conf(p, {"client.id": "watcher"}))
    w.subscribe([p["topic"]], on_assign=on_assign, on_revoke=on_revoke)
    w_parts = []

    def watch():
        while not stop.is_set():
            w.poll(0.1)
            w_parts[:] = sorted(tp.partition for tp in w.assignment())

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    conf = ADAPTER.conf(p, {"group.instance.id": p["instance"], "client.id": p["instance"]})

    def run_static():
        c = ck.Consumer(conf)
        c.subscribe([p["topic"]])
        deadline = time.time() + groups_common.WAIT_S
        while time.time() < deadline:
            c.poll(0.1)
            mine = sorted(tp.partition for tp in c.assignment())
            # Settled: both members hold partitions and together hold them all. (S alone
            # holding all six before the watcher joins is not settled: the watcher's join
            # would rebalance after "before" was taken.)
            theirs = list(w_parts)
            if mine and theirs and sorted(mine + theirs) == list(range(p["partitions"])):
                return c, mine
        return c, []

    s1, before = run_static()
    # Let the watcher see the settled group for a few heartbeats.
    time.sleep(1.0)
    events_before = [e[:2] for e in events]
    s1.close()
    restarted = time.time()
    s2, after = run_static()
    rejoin_ms = int((time.time() - restarted) * 1000)
    # A rebalance would reach the watcher within a heartbeat interval or two.
    time.sleep(2.0)
    events_after = [e[:2] for e in events]
    s2.close()
    stop.set()
    t.join(10)
    w.close()
    return {
        "static_before": before,
        "static_after": after,
        "watcher_events_before": events_before,
        "watcher_events_after": events_after,
        "rejoin_ms": rejoin_ms,
    }


def admin(p):
    """Admin views of the groups through AdminClient while a member of p.busy consumes:
    ListGroups, DescribeGroups (p.describe), the committed offsets of p.lag_group and its lag
    (end offsets - committed), then DeleteGroups (p.delete) and ListGroups again."""
    busy_conf = ADAPTER.conf(dict(p, group=p["busy"]), {"client.id": "busy-member"})
    busy = ck.Consumer(busy_conf)
    busy.subscribe([p["topic"]])
    deadline = time.time() + groups_common.WAIT_S
    while len(busy.assignment()) < p["partitions"] and time.time() < deadline:
        busy.poll(0.1)
    stop = threading.Event()

    def keep_polling():
        while not stop.is_set():
            busy.poll(0.1)

    t = threading.Thread(target=keep_polling, daemon=True)
    t.start()
    a = AdminClient({"bootstrap.servers": p["bootstrap"]})

    def listed():
        r = a.list_consumer_groups(request_timeout=15).result()
        return sorted([g.group_id, str(g.state).split(".")[-1]] for g in r.valid), [
            str(e) for e in r.errors
        ]

    out = {}
    out["listed"], out["list_errors"] = listed()
    out["described"] = {}
    for gid, f in a.describe_consumer_groups(p["describe"], request_timeout=15).items():
        try:
            d = f.result()
            out["described"][gid] = {
                "state": str(d.state).split(".")[-1],
                "members": sorted(
                    [m.client_id, m.host, sorted(tp.partition for tp in m.assignment.topic_partitions)]
                    for m in d.members
                ),
                "partition_assignor": d.partition_assignor,
            }
        except Exception as e:
            out["described"][gid] = {"error": str(e)}
    offsets = a.list_consumer_group_offsets(
        [ck.ConsumerGroupTopicPartitions(p["lag_group"])], request_timeout=15
    )
    committed = {}
    for _, f in offsets.items():
        for tp in f.result().topic_partitions:
            committed[tp.partition] = tp.offset
    ends = ADAPTER.end_offsets(p)
    out["committed"] = {str(k): v for k, v in sorted(committed.items())}
    out["lag"] = {str(k): ends[k] - committed.get(k, 0) for k in sorted(ends)}
    out["deleted"] = {}
    for gid, f in a.delete_consumer_groups(p["delete"], request_timeout=15).items():
        try:
            f.result()
            out["deleted"][gid] = None
        except ck.KafkaException as e:
            out["deleted"][gid] = e.args[0].name()
    out["listed_after"], _ = listed()
    stop.set()
    t.join(10)
    busy.close()
    return out


def enum_name(v):
    return str(v).split(".")[-1]


def kip848_admin(p):
    """A KIP-848 member of p.group (group.protocol=consumer, p.assignor) owns p.topic; p.idle is
    an Empty classic group (a classic member committed and left). The AdminClient describes
    both (ConsumerGroupDescribe for the consumer group) and lists groups by state and type."""
    # PyPI's 2.x only (Debian's 1.7.0, which runs this script's other commands, has neither).
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType

    idle = ck.Consumer(ADAPTER.conf(dict(p, group=p["idle"]), {"client.id": "idle-member"}))
    idle.subscribe([p["topic"]])
    deadline = time.time() + groups_common.WAIT_S
    while len(idle.assignment()) < p["partitions"] and time.time() < deadline:
        idle.poll(0.1)
    idle.commit(
        offsets=[ck.TopicPartition(p["topic"], i, 0) for i in range(p["partitions"])],
        asynchronous=False,
    )
    idle.close()

    conf = ADAPTER.conf(
        p,
        {
            "client.id": "kip848-member",
            "group.protocol": "consumer",
            "group.remote.assignor": p["assignor"],
        },
    )
    member = ck.Consumer(conf)
    member.subscribe([p["topic"]])
    deadline = time.time() + groups_common.WAIT_S
    while len(member.assignment()) < p["partitions"] and time.time() < deadline:
        member.poll(0.1)
    # Read before the polling thread starts: assignment() blocks while another thread polls.
    out = {"assigned": sorted(tp.partition for tp in member.assignment())}
    stop = threading.Event()

    def keep_polling():
        while not stop.is_set():
            member.poll(0.1)

    t = threading.Thread(target=keep_polling, daemon=True)
    t.start()
    a = AdminClient({"bootstrap.servers": p["bootstrap"]})
    try:
        out["described"] = {}
        for gid, f in a.describe_consumer_groups([p["group"], p["idle"]], request_timeout=15).items():
            try:
                d = f.result()
            except Exception as e:
                out["described"][gid] = {"error": str(e)}
                continue
            out["described"][gid] = {
                "type": enum_name(d.type),
                "state": enum_name(d.state),
                "partition_assignor": d.partition_assignor,
                "members": [
                    {
                        "client_id": m.client_id,
                        "host": m.host,
                        "member_id_set": bool(m.member_id),
                        "assignment": sorted(
                            [tp.topic, tp.partition] for tp in m.assignment.topic_partitions
                        ),
                        "target_assignment": None
                        if m.target_assignment is None
                        else sorted(
                            [tp.topic, tp.partition]
                            for tp in m.target_assignment.topic_partitions
                        ),
                    }
                    for m in d.members
                ],
            }

        def listed(**kwargs):
            r = a.list_consumer_groups(request_timeout=15, **kwargs).result()
            return {
                "groups": sorted(
                    [g.group_id, enum_name(g.state), enum_name(g.type)] for g in r.valid
                ),
                "errors": [str(e) for e in r.errors],
            }

        out["all"] = listed()
        out["stable"] = listed(states={ConsumerGroupState.STABLE})
        out["empty"] = listed(states={ConsumerGroupState.EMPTY})
        out["consumer_type"] = listed(types={ConsumerGroupType.CONSUMER})
        out["classic_type"] = listed(types={ConsumerGroupType.CLASSIC})
    finally:
        stop.set()
        t.join(10)
        member.close()
    return out


def commit_metadata(p):
    """A member of p.group commits p.offsets ({partition: [offset, metadata]}) of p.topic."""
    c = ck.Consumer(ADAPTER.conf(p, {"client.id": "metadata-member"}))
    c.subscribe([p["topic"]])
    deadline = time.time() + groups_common.WAIT_S
    while len(c.assignment()) < p["partitions"] and time.time() < deadline:
        c.poll(0.1)
    tps = [
        ck.TopicPartition(p["topic"], int(k), v[0], metadata=v[1]) for k, v in p["offsets"].items()
    ]
    got = c.commit(offsets=tps, asynchronous=False)
    c.close()
    return {"committed": sorted([tp.partition, tp.offset, tp.metadata] for tp in got)}


def committed_metadata(p):
    """{partition: [offset, metadata]} of p.group, read without joining."""
    c = ck.Consumer(ADAPTER.conf(p))
    tps = [ck.TopicPartition(p["topic"], i) for i in range(p["partitions"])]
    got = c.committed(tps, timeout=15)
    c.close()
    return {"committed": {str(tp.partition): [tp.offset, tp.metadata] for tp in got}}


def commit_unknown(p):
    """Commits p.offsets ([[topic, partition, offset]]) for p.group without joining (an
    assign()-style consumer), then the same through AdminClient.alter_consumer_group_offsets for
    p.group + "-admin"; reports each partition's error name and what committed() reads back."""
    tps = [ck.TopicPartition(t, part, off) for t, part, off in p["offsets"]]

    def errors(parts):
        return [[tp.topic, tp.partition, tp.error.name() if tp.error else None] for tp in parts]

    out = {}
    c = ck.Consumer(ADAPTER.conf(p))
    try:
        out["commit"] = errors(c.commit(offsets=tps, asynchronous=False))
    except ck.KafkaException as e:
        out["commit"] = {"error": e.args[0].name(), "message": str(e)}
    got = c.committed([ck.TopicPartition(t, part) for t, part, _ in p["offsets"]], timeout=15)
    out["committed"] = [[tp.topic, tp.partition, tp.offset] for tp in got]
    c.close()
    from confluent_kafka import ConsumerGroupTopicPartitions

    a = AdminClient({"bootstrap.servers": p["bootstrap"]})
    group = p["group"] + "-admin"
    fut = a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])[group]
    try:
        out["alter"] = errors(fut.result(15).topic_partitions)
    except ck.KafkaException as e:
        out["alter"] = {"error": e.args[0].name(), "message": str(e)}
    return out


def regex(p):
    """A KIP-848 member subscribes with p.pattern (a librdkafka regex subscription, "^..."):
    records produced to p.matching topics must arrive, none of p.other's; then p.late is
    created and produced to, and its record must arrive too (the coordinator re-resolves the
    regex when topics are created). Reports what was consumed per phase and the member's
    final assignment; p.wait_s bounds each phase."""
    a = AdminClient({"bootstrap.servers": p["bootstrap"]})

    def create(names):
        for f in a.create_topics([NewTopic(t, 1, 1) for t in names]).values():
            f.result()

    create(p["matching"] + p["other"])
    prod = ck.Producer({"bootstrap.servers": p["bootstrap"]})
    for t in p["matching"] + p["other"]:
        prod.produce(t, t.encode())
    prod.flush(15)
    conf = ADAPTER.conf(p, {"group.protocol": "consumer", "topic.metadata.refresh.interval.ms": 1000})
    c = ck.Consumer(conf)
    c.subscribe([p["pattern"]])
    out = {"phases": {}, "errors": []}

    def consume_until(want, phase):
        got = set()
        deadline = time.time() + p["wait_s"]
        t0 = time.time()
        while time.time() < deadline and not want <= got:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() != ck.KafkaError._PARTITION_EOF:
                    out["errors"].append(str(m.error()))
                    if m.error().fatal():
                        break
                continue
            got.add(m.topic())
        # A little longer, to catch records that must not come.
        end = time.time() + 1.0
        while time.time() < end:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.add(m.topic())
        out["phases"][phase] = {"topics": sorted(got), "ms": int((time.time() - t0) * 1000)}

    consume_until(set(p["matching"]), "initial")
    create([p["late"]])
    prod.produce(p["late"], p["late"].encode())
    prod.flush(15)
    consume_until({p["late"]}, "late")
    out["assignment"] = sorted({tp.topic for tp in c.assignment()})
    c.close()
    return out


class Recording(threading.Thread):
    """A member thread whose rebalance callbacks append [name, "assign"|"revoke", partitions]
    to a shared event list (the same shape groups_common.balanced() reads: name, assigned)."""

    def __init__(self, p, name, events, lock, extra):
        super().__init__(daemon=True)
        self.p = p
        self.name = name
        self.events = events
        self.lock = lock
        self.extra = extra
        self.stop_flag = threading.Event()
        self.assigned = []
        self.errors = []
        self.error = None

    def note_error(self, e):
        """[name, fatal, text]: librdkafka reports a fatal error as code _FATAL (error_cb's
        KafkaError does not carry the fatal flag itself)."""
        self.errors.append([e.name(), e.fatal() or e.code() == ck.KafkaError._FATAL, str(e)])

    def record(self, kind, tps):
        with self.lock:
            self.events.append([self.name, kind, sorted(tp.partition for tp in tps)])

    def run(self):
        try:
            conf = ADAPTER.conf(self.p, dict(self.extra, **{"client.id": self.name}))
            conf["error_cb"] = self.note_error
            c = ck.Consumer(conf)
            c.subscribe(
                [self.p["topic"]],
                on_assign=lambda _c, tps: self.record("assign", tps),
                on_revoke=lambda _c, tps: self.record("revoke", tps),
            )
            while not self.stop_flag.is_set():
                m = c.poll(0.1)
                if m is not None and m.error() and m.error().code() != ck.KafkaError._PARTITION_EOF:
                    self.note_error(m.error())
                self.assigned = sorted(tp.partition for tp in c.assignment())
            c.close()
        except Exception:
            self.error = traceback.format_exc()


def cooperative(p):
    """cooperative-sticky (incremental) rebalances: three members share p.topic; m1 leaves;
    m3 joins. Returns the settled shares of each phase and the rebalance events each phase
    caused (the leaving member's own included), for the Rust test to check that survivors
    revoked nothing when m1 left and only the partitions m3 got when m3 joined."""
    parts = p["partitions"]
    events, lock, errors = [], threading.Lock(), []
    extra = {"partition.assignment.strategy": "cooperative-sticky"}

    def start(name):
        m = Recording(p, name, events, lock, extra)
        m.start()
        return m

    def since(mark):
        with lock:
            return [e for e in events[mark:] if e[2]]

    settle = p.get("settle_ms", 1500) / 1000.0
    members = [start("m0"), start("m1"), start("m2")]
    out = {"snapshots": {}}
    out["snapshots"]["three"] = groups_common.wait_for(
        "three members", groups_common.settled(members, parts, settle), errors
    )
    with lock:
        mark = len(events)
    leaving = members.pop(1)
    leaving.stop_flag.set()
    leaving.join(groups_common.WAIT_S)
    out["snapshots"]["two"] = groups_common.wait_for(
        "two members", groups_common.settled(members, parts, settle), errors
    )
    out["after_leave"] = since(mark)
    with lock:
        mark = len(events)
    members.append(start("m3"))
    out["snapshots"]["rejoined"] = groups_common.wait_for(
        "m3 to get a share", groups_common.settled(members, parts, settle), errors
    )
    out["after_join"] = since(mark)
    for m in members:
        m.stop_flag.set()
    for m in members:
        m.join(groups_common.WAIT_S)
    errors.extend("%s: %s" % (m.name, m.error) for m in members + [leaving] if m.error)
    out["errors"] = errors
    return out


def fenced(p):
    """KIP-345 fencing: A (group.instance.id p.instance) owns p.topic; B starts with the same
    instance id and replaces it. A's next coordinator request must fail with a fatal
    FENCED_INSTANCE_ID (librdkafka raises it as a fatal error) while B owns the partitions."""
    events, lock = [], threading.Lock()
    extra = {"group.instance.id": p["instance"]}
    a = Recording(p, "A", events, lock, extra)
    a.start()
    deadline = time.time() + groups_common.WAIT_S
    while len(a.assigned) < p["partitions"] and time.time() < deadline:
        time.sleep(0.05)
    out = {"a_before": list(a.assigned)}
    b = Recording(p, "B", events, lock, extra)
    b.start()
    deadline = time.time() + groups_common.WAIT_S
    while time.time() < deadline:
        if len(b.assigned) == p["partitions"] and any(e[1] for e in a.errors):
            break
        time.sleep(0.05)
    out["b_after"] = list(b.assigned)
    out["a_errors"] = list(a.errors)
    out["b_errors"] = list(b.errors)
    for m in (a, b):
        m.stop_flag.set()
    for m in (a, b):
        m.join(groups_common.WAIT_S)
    out["thread_errors"] = [m.error for m in (a, b) if m.error]
    return out


def max_size(p):
    """p.count members m0.. join one group: the first p.max share p.topic, the others' joins
    fail with GROUP_MAX_SIZE_REACHED. Members start one after another (each once the previous
    ones own every partition), so which ones are over the limit is deterministic."""
    events, lock = [], threading.Lock()
    members = []
    errors = []
    for i in range(p["count"]):
        m = Recording(p, "m%d" % i, events, lock, {})
        m.start()
        members.append(m)
        if i < p["max"]:
            groups_common.wait_for(
                "m%d to get a share" % i,
                groups_common.settled(members, p["partitions"], 0.5),
                errors,
            )
    over = members[p["max"] :]
    deadline = time.time() + groups_common.WAIT_S
    while time.time() < deadline and not all(m.errors for m in over):
        time.sleep(0.05)
    # The members within the limit keep their shares.
    shares = groups_common.wait_for(
        "the members within the limit to share",
        groups_common.settled(members[: p["max"]], p["partitions"], 1.0),
        errors,
    )
    out = {
        "errors": errors,
        "shares": shares,
        "over_assigned": [m.assigned for m in over],
        "over_errors": [m.errors for m in over],
        "within_errors": [m.errors for m in members[: p["max"]]],
    }
    for m in members:
        m.stop_flag.set()
    for m in members:
        m.join(groups_common.WAIT_S)
    out["thread_errors"] = [m.error for m in members if m.error]
    return out


class Committing(threading.Thread):
    """A member that consumes p.topic and commits each record synchronously (the commit
    carries its generation, i.e. its member epoch once the group is a consumer group);
    records consumed values, commit errors and fatal errors."""

    def __init__(self, p, name, extra):
        super().__init__(daemon=True)
        self.p, self.name, self.extra = p, name, extra
        self.stop_flag = threading.Event()
        self.assigned = []
        self.values = []
        self.commit_errors = []
        self.errors = []
        self.error = None

    def note_error(self, e):
        if e.fatal() or e.code() == ck.KafkaError._FATAL:
            self.errors.append(str(e))

    def run(self):
        try:
            conf = ADAPTER.conf(self.p, dict(self.extra, **{"client.id": self.name}))
            conf["error_cb"] = self.note_error
            c = ck.Consumer(conf)
            c.subscribe([self.p["topic"]])
            while not self.stop_flag.is_set():
                m = c.poll(0.1)
                self.assigned = sorted(tp.partition for tp in c.assignment())
                if m is None:
                    continue
                if m.error():
                    if m.error().code() != ck.KafkaError._PARTITION_EOF:
                        self.note_error(m.error())
                    continue
                self.values.append(m.value().decode())
                try:
                    c.commit(message=m, asynchronous=False)
                except ck.KafkaException as e:
                    # A commit racing a rebalance is refused (and retried by the next record).
                    code = e.args[0].code()
                    if code not in (ck.KafkaError.REBALANCE_IN_PROGRESS, ck.KafkaError.ILLEGAL_GENERATION):
                        self.commit_errors.append(str(e))
            c.close()
        except Exception:
            self.error = traceback.format_exc()


def migration(p):
    """Online migration with stock clients: two classic members (range) share p.topic; a
    group.protocol=consumer member joins the same group (the coordinator upgrades it to a
    consumer group); later it leaves (the group downgrades to classic). Every phase waits,
    up to p.wait_s, for the members' assignments to cover p.topic's partitions disjointly, and
    for every record produced so far to be consumed. Reports each phase's group type (from
    ListGroups), assignments and timing, plus fatal and commit errors."""
    parts = p["partitions"]
    a = AdminClient({"bootstrap.servers": p["bootstrap"]})
    prod = ck.Producer({"bootstrap.servers": p["bootstrap"], "linger.ms": 5})
    produced = []

    def produce(tag):
        for i in range(parts):
            v = "%s-%d" % (tag, i)
            prod.produce(p["topic"], v.encode(), partition=i)
            produced.append(v)
        prod.flush(15)

    def group_type():
        for g in a.list_consumer_groups(request_timeout=15).result().valid:
            if g.group_id == p["group"]:
                return str(g.type).split(".")[-1].lower()
        return None

    def settle(members, phase, want_type):
        t0 = time.time()
        deadline = t0 + p["wait_s"]
        seen = {}
        while time.time() < deadline:
            owned = [m.assigned for m in members]
            flat = sorted(x for o in owned for x in o)
            consumed = set(v for m in members for v in m.values)
            kind = group_type()
            if flat == list(range(parts)) and all(owned) and consumed >= set(produced) and kind == want_type:
                break
            time.sleep(0.2)
        seen = {
            "type": group_type(),
            "assigned": {m.name: m.assigned for m in members},
            "all_consumed": set(produced) <= set(v for m in members for v in m.values),
            "ms": int((time.time() - t0) * 1000),
        }
        progress({"phase": phase, "seen": seen})
        return seen

    classic = [Committing(p, "classic-%d" % i, {}) for i in range(2)]
    for m in classic:
        m.start()
    produce("a")
    out = {"phases": {}}
    out["phases"]["classic"] = settle(classic, "classic", "classic")
    modern = Committing(p, "modern", {"group.protocol": "consumer"})
    modern.start()
    produce("b")
    out["phases"]["mixed"] = settle(classic + [modern], "mixed", "consumer")
    modern.stop_flag.set()
    modern.join(groups_common.WAIT_S)
    produce("c")
    out["phases"]["downgraded"] = settle(classic, "downgraded", "classic")
    for m in classic:
        m.stop_flag.set()
    for m in classic:
        m.join(groups_common.WAIT_S)
    everyone = classic + [modern]
    out["fatal"] = [e for m in everyone for e in m.errors]
    out["commit_errors"] = [e for m in everyone for e in m.commit_errors]
    out["thread_errors"] = [m.error for m in everyone if m.error]
    return out


if __name__ == "__main__":
    main(
        {
            "members": members,
            "crash": crash,
            "member": member,
            "create_topic": create_topic,
            "produce": produce,
            "consume": consume,
            "committed": committed,
            "static": static,
            "admin": admin,
            "kip848_admin": kip848_admin,
            "commit_metadata": commit_metadata,
            "committed_metadata": committed_metadata,
            "commit_unknown": commit_unknown,
            "regex": regex,
            "cooperative": cooperative,
            "fenced": fenced,
            "max_size": max_size,
            "migration": migration,
        }
    )
