"""confluent-kafka (PyPI, pinned in compat/requirements.txt) AdminClient commands for the admin
compatibility tests: describe (every config of TOPIC/BROKER resources with source, flags and
synonyms; GROUP resources too), alter (legacy AlterConfigs), incremental (IncrementalAlterConfigs), create_topic,
create_partitions, delete_records, describe_cluster, partitions (metadata partition count) and
list_offsets (earliest/latest per partition).

Usage: admin_ck.py COMMAND JSON; prints one JSON line (see _common.py). Broker-side refusals
are data ({"error": NAME, "message": ...}), not a failed exit.
"""

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from _common import main

TIMEOUT = 20


def admin(p):
    return AdminClient({"bootstrap.servers": p["bootstrap"]})


def restype(name):
    return {
        "topic": ConfigResource.Type.TOPIC,
        "broker": ConfigResource.Type.BROKER,
        "group": ConfigResource.Type.GROUP,
    }[name]


def failure(e):
    """A KafkaException from a future -> {"error": NAME, "message": text}."""
    err = e.args[0] if e.args else None
    if hasattr(err, "name"):
        return {"error": err.name(), "message": err.str()}
    return {"error": type(e).__name__, "message": str(e)}


def source_name(s):
    """Kafka's ConfigSource name (the binding hands out the enum or its int id)."""
    try:
        return ConfigSource(s).name
    except ValueError:
        return str(s)


def entry_json(e):
    return {
        "value": e.value,
        "source": source_name(e.source),
        "read_only": e.is_read_only,
        "sensitive": e.is_sensitive,
        "default": e.is_default,
        "synonyms": [
            [s.name, s.value, source_name(s.source)]
            for s in (e.synonyms or {}).values()
        ],
    }


def describe(p):
    """p.type ("topic" | "broker" | "group"), p.name -> {"configs": {name: entry}} or a failure."""
    a = admin(p)
    res = ConfigResource(restype(p["type"]), p["name"])
    try:
        configs = a.describe_configs([res], request_timeout=TIMEOUT)[res].result(TIMEOUT)
    except KafkaException as e:
        return failure(e)
    return {"error": None, "configs": {n: entry_json(e) for n, e in configs.items()}}


def alter(p):
    """Legacy AlterConfigs: p.configs {key: value} replaces the resource's whole set."""
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    a = admin(p)
    res = ConfigResource(restype(p["type"]), p["name"], set_config=p["configs"])
    try:
        a.alter_configs([res], request_timeout=TIMEOUT, validate_only=p.get("validate_only", False))[
            res
        ].result(TIMEOUT)
    except KafkaException as e:
        return failure(e)
    return {"error": None}


OPS = {
    "SET": AlterConfigOpType.SET,
    "DELETE": AlterConfigOpType.DELETE,
    "APPEND": AlterConfigOpType.APPEND,
    "SUBTRACT": AlterConfigOpType.SUBTRACT,
}


def incremental(p):
    """IncrementalAlterConfigs: p.ops [[key, "SET"|"DELETE"|"APPEND"|"SUBTRACT", value]]."""
    a = admin(p)
    entries = [
        ConfigEntry(k, v, incremental_operation=OPS[op]) for k, op, v in p["ops"]
    ]
    res = ConfigResource(restype(p["type"]), p["name"], incremental_configs=entries)
    try:
        a.incremental_alter_configs([res], request_timeout=TIMEOUT)[res].result(TIMEOUT)
    except KafkaException as e:
        return failure(e)
    return {"error": None}


def create_topic(p):
    a = admin(p)
    t = NewTopic(
        p["topic"],
        p.get("partitions", 1),
        p.get("replication_factor", 1),
        config=p.get("configs", {}),
    )
    try:
        a.create_topics([t], request_timeout=TIMEOUT)[p["topic"]].result(TIMEOUT)
    except KafkaException as e:
        return failure(e)
    return {"error": None}


def create_partitions(p):
    a = admin(p)
    try:
        a.create_partitions(
            [NewPartitions(p["topic"], p["count"])],
            request_timeout=TIMEOUT,
            validate_only=p.get("validate_only", False),
        )[p["topic"]].result(TIMEOUT)
    except KafkaException as e:
        return failure(e)
    return {"error": None}


def delete_records(p):
    """p.partition, p.offset (-1 = the high watermark) -> {"low_watermark": n} or a failure."""
    a = admin(p)
    tp = TopicPartition(p["topic"], p["partition"], p["offset"])
    try:
        futures = a.delete_records([tp], request_timeout=TIMEOUT)
        (fut,) = futures.values()
        r = fut.result(TIMEOUT)
    except KafkaException as e:
        return failure(e)
    return {"error": None, "low_watermark": r.low_watermark}


def describe_cluster(p):
    a = admin(p)
    r = a.describe_cluster(request_timeout=TIMEOUT, include_authorized_operations=True).result(TIMEOUT)
    return {
        "cluster_id": r.cluster_id,
        "controller": None if r.controller is None else r.controller.id,
        "nodes": [[n.id, n.host, n.port] for n in r.nodes],
        "authorized_operations": sorted(op.name for op in (r.authorized_operations or [])),
    }


def partitions(p):
    a = admin(p)
    md = a.list_topics(p["topic"], timeout=TIMEOUT)
    t = md.topics[p["topic"]]
    return {"partitions": sorted(t.partitions.keys()), "error": None if t.error is None else t.error.name()}


def list_offsets(p):
    """p.partitions -> {"earliest": {partition: offset}, "latest": {...}}."""
    a = admin(p)
    out = {}
    for name, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest())):
        req = {TopicPartition(p["topic"], part): spec for part in p["partitions"]}
        res = a.list_offsets(req, request_timeout=TIMEOUT)
        out[name] = {str(tp.partition): f.result(TIMEOUT).offset for tp, f in res.items()}
    return out


main(
    {
        "describe": describe,
        "alter": alter,
        "incremental": incremental,
        "create_topic": create_topic,
        "create_partitions": create_partitions,
        "delete_records": delete_records,
        "describe_cluster": describe_cluster,
        "partitions": partitions,
        "list_offsets": list_offsets,
    }
)
