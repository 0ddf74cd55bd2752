"""confluent-kafka (librdkafka) commands for the security tests (issue 19), for Debian's 1.7.0
(librdkafka 2.0.2) and PyPI's 2.x alike where the API exists: every command takes p.config, the
librdkafka security properties (security.protocol, ssl.*, sasl.*), merged into the client's
configuration, and reports what the client saw, including the errors librdkafka hands to
error_cb (name, code and text: the SASL / TLS failure texts the tests assert on).

Commands: roundtrip (create the topic, produce, read back), probe (can this configuration
fetch metadata? else the first errors), metadata (all-topics and named topics), consume
(assign() without a group, the errors a denied Fetch gives), commit (a group offset commit),
scram_alter / scram_describe (PyPI >= 2.2), acl_create / acl_describe / acl_delete
(AdminClient, >= 1.9), create_topics.

Usage: security_ck.py COMMAND JSON; prints one JSON line (see _common.py). Refusals are data
({"error": NAME, "message": ...}), not a failed exit.
"""

import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from _common import main, to_bytes, to_str

TIMEOUT = 15


class Errors:
    """error_cb collector: every error librdkafka reports outside a request's own result."""

    def __init__(self):
        self.seen = []

    def __call__(self, err):
        self.seen.append({"name": err.name(), "code": err.code(), "str": err.str()})


def placeholder_group_error(err, errors):
    """Python's Consumer requires a group.id, and librdkafka looks its coordinator up even
    with assign() only; under ACLs a user without DESCRIBE on that placeholder group gets
    GROUP_AUTHORIZATION_FAILED for it (Kafka's semantics, unrelated to the topic being read).
    Such an error is kept in the error_cb list and otherwise ignored."""
    if err.code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED:
        errors.seen.append({"name": err.name(), "code": err.code(), "str": err.str()})
        return True
    return False


def conf(p, errors, **extra):
    c = {"bootstrap.servers": p["bootstrap"], "error_cb": errors}
    c.update(extra)
    c.update(p.get("config", {}))
    return c


def failure(e):
    """A KafkaException -> {"error": NAME, "message": text}."""
    err = e.args[0] if e.args else None
    if hasattr(err, "name"):
        return {"error": err.name(), "message": err.str()}
    return {"error": type(e).__name__, "message": str(e)}


def create_topics(p):
    """p.topics: [name] (1 partition each) -> {"results": {name: error name or null}}."""
    errors = Errors()
    a = AdminClient(conf(p, errors))
    futures = a.create_topics(
        [NewTopic(t, num_partitions=1, replication_factor=1) for t in p["topics"]],
        request_timeout=TIMEOUT,
    )
    results = {}
    for name, f in futures.items():
        try:
            f.result(timeout=TIMEOUT)
            results[name] = None
        except ck.KafkaException as e:
            results[name] = failure(e)["error"]
    return {"results": results, "cb_errors": errors.seen}


def roundtrip(p):
    """Creates p.topic (already existing is fine), produces p.messages (strings) to partition
    0 and reads partition 0 from the beginning: {"reports": [error or null], "values": [...],
    "cb_errors": [...]}."""
    errors = Errors()
    if p.get("create", True):
        a = AdminClient(conf(p, errors))
        f = a.create_topics([NewTopic(p["topic"], num_partitions=1, replication_factor=1)],
                            request_timeout=TIMEOUT)[p["topic"]]
        try:
            f.result(timeout=TIMEOUT)
        except ck.KafkaException as e:
            if failure(e)["error"] != "TOPIC_ALREADY_EXISTS":
                return {"create_error": failure(e), "cb_errors": errors.seen}
    prod = ck.Producer(conf(p, errors, **{"message.timeout.ms": 15000}))
    reports = [None] * len(p["messages"])

    def on_delivery(i):
        def cb(err, _msg):
            reports[i] = None if err is None else err.name()

        return cb

    for i, v in enumerate(p["messages"]):
        prod.produce(p["topic"], value=to_bytes(v), partition=0, on_delivery=on_delivery(i))
        prod.poll(0)
    unflushed = prod.flush(TIMEOUT + 5)
    if any(r is not None for r in reports):
        # A refused produce (e.g. TOPIC_AUTHORIZATION_FAILED): nothing to read back.
        return {"reports": reports, "unflushed": unflushed, "values": [],
                "consume_errors": [], "cb_errors": errors.seen}
    c = ck.Consumer(
        conf(
            p,
            errors,
            **{
                "group.id": "skiff-security-unused",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "error",
            }
        )
    )
    c.assign([ck.TopicPartition(p["topic"], 0, ck.OFFSET_BEGINNING)])
    values, consume_errors = [], []
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == ck.KafkaError._PARTITION_EOF:
                if len(values) >= len(p["messages"]):
                    break
                continue
            if not placeholder_group_error(m.error(), errors):
                consume_errors.append(m.error().name())
                break
            continue
        values.append(to_str(m.value()))
    c.close()
    return {
        "reports": reports,
        "unflushed": unflushed,
        "values": values,
        "consume_errors": consume_errors,
        "cb_errors": errors.seen,
    }


def probe(p):
    """Asks for metadata until it works or p.timeout_s passes; stops at the first error_cb
    error unless p.wait_full. {"ok": bool, "topics": [...], "cb_errors": [...],
    "last_error": ...}."""
    errors = Errors()
    prod = ck.Producer(conf(p, errors))
    deadline = time.time() + p.get("timeout_s", 10)
    last = None
    while time.time() < deadline:
        try:
            md = prod.list_topics(timeout=1.0)
            return {"ok": True, "topics": sorted(md.topics), "cb_errors": errors.seen}
        except ck.KafkaException as e:
            last = failure(e)
        prod.poll(0.1)
        if errors.seen and not p.get("wait_full"):
            break
    return {"ok": False, "last_error": last, "cb_errors": errors.seen}


def metadata(p):
    """All-topics metadata, then one named request per p.named: {"all": [names], "named":
    {name: error name or null}} (a Consumer handle: no auto-creation)."""
    errors = Errors()
    c = ck.Consumer(
        conf(p, errors, **{"group.id": "skiff-security-unused", "allow.auto.create.topics": False})
    )
    md = c.list_topics(timeout=TIMEOUT)
    named = {}
    for t in p.get("named", []):
        tm = c.list_topics(topic=t, timeout=TIMEOUT).topics.get(t)
        named[t] = None if tm is None or tm.error is None else tm.error.name()
    c.close()
    return {"all": sorted(md.topics), "named": named, "cb_errors": errors.seen}


def consume(p):
    """assign() partition 0 of p.topic from the beginning without a group; reads until EOF,
    p.max messages, the first error or p.timeout_s: {"values": [...], "errors": [names]}."""
    errors = Errors()
    c = ck.Consumer(
        conf(
            p,
            errors,
            **{
                "group.id": "skiff-security-unused",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            }
        )
    )
    c.assign([ck.TopicPartition(p["topic"], 0, ck.OFFSET_BEGINNING)])
    values, errs = [], []
    deadline = time.time() + p.get("timeout_s", 10)
    while time.time() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == ck.KafkaError._PARTITION_EOF:
                break
            if not placeholder_group_error(m.error(), errors):
                errs.append(m.error().name())
                break
            continue
        values.append(to_str(m.value()))
    c.close()
    return {"values": values, "errors": errs, "cb_errors": errors.seen}


def commit(p):
    """Commits offset p.offset of p.topic partition 0 for group p.group, synchronously:
    {"error": NAME or null, "message": ...}."""
    errors = Errors()
    c = ck.Consumer(
        conf(p, errors, **{"group.id": p["group"], "enable.auto.commit": False})
    )
    out = {"error": None}
    try:
        res = c.commit(offsets=[ck.TopicPartition(p["topic"], 0, p["offset"])],
                       asynchronous=False)
        errs = [tp.error.name() for tp in res or [] if tp.error is not None]
        if errs:
            out = {"error": errs[0], "message": "partition error"}
    except ck.KafkaException as e:
        out = failure(e)
    c.close()
    out["cb_errors"] = errors.seen
    return out


def scram_mechanism(name):
    from confluent_kafka.admin import ScramMechanism

    return {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
            "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}[name]


def scram_alter(p):
    """p.upserts: [{user, mechanism, iterations, password}], p.deletions: [{user, mechanism}]
    -> {"results": {user: error name or null}, "messages": {user: text}}."""
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    errors = Errors()
    a = AdminClient(conf(p, errors))
    alterations = []
    for u in p.get("upserts", []):
        info = ScramCredentialInfo(scram_mechanism(u["mechanism"]), u["iterations"])
        alterations.append(
            UserScramCredentialUpsertion(u["user"], info, u["password"].encode("utf-8"))
        )
    for d in p.get("deletions", []):
        alterations.append(UserScramCredentialDeletion(d["user"], scram_mechanism(d["mechanism"])))
    futures = a.alter_user_scram_credentials(alterations, request_timeout=TIMEOUT)
    results, messages = {}, {}
    for user, f in futures.items():
        try:
            f.result(timeout=TIMEOUT)
            results[user] = None
        except ck.KafkaException as e:
            fl = failure(e)
            results[user] = fl["error"]
            messages[user] = fl["message"]
    return {"results": results, "messages": messages, "cb_errors": errors.seen}


def scram_describe(p):
    """p.users: [user] -> {"users": {user: [[mechanism, iterations]] | {"error": NAME}}}."""
    errors = Errors()
    a = AdminClient(conf(p, errors))
    futures = a.describe_user_scram_credentials(p["users"], request_timeout=TIMEOUT)
    out = {}
    for user, f in futures.items():
        try:
            d = f.result(timeout=TIMEOUT)
            out[user] = sorted(
                [[i.mechanism.name.replace("_", "-"), i.iterations]
                 for i in d.scram_credential_infos]
            )
        except ck.KafkaException as e:
            out[user] = failure(e)
    return {"users": out, "cb_errors": errors.seen}


def acl_enum(cls, name):
    return getattr(cls, name.upper())


def binding(b, filt):
    """A JSON binding {resource_type, name, pattern, principal, host, operation, permission}
    -> AclBinding (or AclBindingFilter with `filt`; null fields match any)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    cls = AclBindingFilter if filt else AclBinding
    any_or = lambda enum, v: enum.ANY if v is None else acl_enum(enum, v)  # noqa: E731
    return cls(
        any_or(ResourceType, b.get("resource_type")),
        b.get("name"),
        any_or(ResourcePatternType, b.get("pattern")),
        b.get("principal"),
        b.get("host") if not filt or b.get("host") is not None else None,
        any_or(AclOperation, b.get("operation")),
        any_or(AclPermissionType, b.get("permission")),
    )


def binding_json(b):
    return {
        "resource_type": b.restype.name,
        "name": b.name,
        "pattern": b.resource_pattern_type.name,
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation.name,
        "permission": b.permission_type.name,
    }


def acl_create(p):
    """p.acls: [binding] (host defaults to "*") -> {"results": [error name or null],
    "messages": [...]} in order."""
    errors = Errors()
    a = AdminClient(conf(p, errors))
    bindings = []
    for b in p["acls"]:
        b = dict(b)
        b.setdefault("host", "*")
        bindings.append(binding(b, False))
    futures = a.create_acls(bindings, request_timeout=TIMEOUT)
    results, messages = [], []
    for b in bindings:
        try:
            futures[b].result(timeout=TIMEOUT)
            results.append(None)
            messages.append(None)
        except ck.KafkaException as e:
            fl = failure(e)
            results.append(fl["error"])
            messages.append(fl["message"])
    return {"results": results, "messages": messages, "cb_errors": errors.seen}


def acl_describe(p):
    """p.filter: a binding filter -> {"acls": [binding]} or {"error": NAME}."""
    errors = Errors()
    a = AdminClient(conf(p, errors))
    try:
        got = a.describe_acls(binding(p["filter"], True), request_timeout=TIMEOUT).result(
            timeout=TIMEOUT
        )
        out = {"acls": sorted([binding_json(b) for b in got], key=lambda b: sorted(b.items()))}
    except ck.KafkaException as e:
        out = failure(e)
    out["cb_errors"] = errors.seen
    return out


def acl_delete(p):
    """p.filters: [filter] -> {"deleted": [[binding]] | {"error": NAME}} per filter."""
    errors = Errors()
    a = AdminClient(conf(p, errors))
    filters = [binding(f, True) for f in p["filters"]]
    futures = a.delete_acls(filters, request_timeout=TIMEOUT)
    out = []
    for f in filters:
        try:
            out.append([binding_json(b) for b in futures[f].result(timeout=TIMEOUT)])
        except ck.KafkaException as e:
            out.append(failure(e))
    return {"deleted": out, "cb_errors": errors.seen}


def produce_for(p):
    """One long-lived producer: p.count messages to p.topic partition 0, one every
    p.interval_ms (so the connection outlives several SASL sessions when the broker sets
    connections.max.reauth.ms): {"reports": [error or null], "cb_errors": [...]}."""
    errors = Errors()
    prod = ck.Producer(conf(p, errors, **{"message.timeout.ms": 15000}))
    reports = [None] * p["count"]

    def on_delivery(i):
        def cb(err, _msg):
            reports[i] = "delivered" if err is None else err.name()

        return cb

    for i in range(p["count"]):
        prod.produce(p["topic"], value=("m-%d" % i).encode(), partition=0,
                     on_delivery=on_delivery(i))
        end = time.time() + p["interval_ms"] / 1000.0
        while time.time() < end:
            prod.poll(0.05)
    prod.flush(TIMEOUT)
    return {"reports": reports, "cb_errors": errors.seen}


def version(_p):
    return {"version": ck.version()[0], "librdkafka": ck.libversion()[0]}


if __name__ == "__main__":
    main(
        {
            "create_topics": create_topics,
            "roundtrip": roundtrip,
            "probe": probe,
            "metadata": metadata,
            "consume": consume,
            "commit": commit,
            "scram_alter": scram_alter,
            "scram_describe": scram_describe,
            "acl_create": acl_create,
            "acl_describe": acl_describe,
            "acl_delete": acl_delete,
            "produce_for": produce_for,
            "version": version,
        }
    )
