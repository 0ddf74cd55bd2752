"""kafka-python (PyPI, pinned in compat/requirements.txt) KafkaAdminClient commands for the admin
compatibility tests: describe (config_filter=all, with synonyms), alter (incremental or legacy,
chosen by p.incremental), create_partitions, delete_records, describe_cluster and
describe_log_dirs, and topics: create_topics, delete_topics (by name or topic id) and
list_topics.

Usage: admin_kp.py COMMAND JSON; prints one JSON line (see _common.py). Broker-side refusals
are data ({"error": text}), not a failed exit.
"""

import uuid

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions
from kafka.errors import KafkaError

from _common import main

TYPES = {"topic": ConfigResourceType.TOPIC, "broker": ConfigResourceType.BROKER}


def admin(p):
    return KafkaAdminClient(bootstrap_servers=p["bootstrap"], request_timeout_ms=20000)


def describe(p):
    """p.type, p.name -> {"configs": {name: {value, config_source, read_only, ...}}}."""
    a = admin(p)
    r = a.describe_configs(
        [ConfigResource(TYPES[p["type"]], p["name"])], include_synonyms=True, config_filter="all"
    )
    a.close()
    (by_name,) = r.values()
    return {"configs": by_name[p["name"]]}


def alter(p):
    """p.configs {key: value | [op, value]} on one resource; p.incremental picks the API
    (IncrementalAlterConfigs when true, the legacy AlterConfigs when false)."""
    a = admin(p)
    configs = {k: tuple(v) if isinstance(v, list) else v for k, v in p["configs"].items()}
    try:
        r = a.alter_configs(
            [ConfigResource(TYPES[p["type"]], p["name"], configs=configs)],
            incremental=p["incremental"],
            raise_on_unknown=False,
        )
    except KafkaError as e:
        a.close()
        return {"error": str(e)}
    a.close()
    (by_name,) = r.values()
    result = by_name[p["name"]]
    return {"error": None if result == "OK" else str(result)}


def create_partitions(p):
    a = admin(p)
    try:
        a.create_partitions({p["topic"]: NewPartitions(p["count"])})
    except KafkaError as e:
        a.close()
        return {"error": str(e)}
    a.close()
    return {"error": None}


def delete_records(p):
    a = admin(p)
    try:
        r = a.delete_records({TopicPartition(p["topic"], p["partition"]): p["offset"]})
    except KafkaError as e:
        a.close()
        return {"error": str(e)}
    a.close()
    (res,) = r.values()
    return {"error": None if res["error_code"] == 0 else res["error_code"], "low_watermark": res["low_watermark"]}


def describe_cluster(p):
    a = admin(p)
    r = a.describe_cluster()
    a.close()
    return r


def describe_log_dirs(p):
    a = admin(p)
    r = a.describe_log_dirs()
    a.close()
    return {"brokers": r}


def create_topics(p):
    """p.topics: [{name, partitions, replication_factor?, config}], p.validate_only ->
    {"topics": {name: {error_code, error_message, num_partitions, replication_factor,
    topic_id, configs: {key: {value, config_source}}}}} (errors are data: raise_errors=False)."""
    a = admin(p)
    new = {
        t["name"]: {
            "num_partitions": t.get("partitions", -1),
            "replication_factor": t.get("replication_factor", -1),
            "configs": t.get("config", {}),
        }
        for t in p["topics"]
    }
    r = a.create_topics(new, validate_only=p.get("validate_only", False), raise_errors=False)
    a.close()
    out = {}
    for t in r["topics"]:
        configs = t.get("configs") or {}
        out[t["name"]] = {
            "error_code": t["error_code"],
            "error_message": t.get("error_message"),
            "num_partitions": t.get("num_partitions"),
            "replication_factor": t.get("replication_factor"),
            "topic_id": str(t["topic_id"]) if t.get("topic_id") is not None else None,
            "configs": {
                k: {"value": c.get("value"), "config_source": c.get("config_source")}
                for k, c in configs.items()
            },
        }
    return {"topics": out}


def delete_topics(p):
    """p.topics: names, p.topic_ids: UUID strings (DeleteTopics v6 by id) -> {"topics":
    [{name, topic_id, error_code}]} in request order."""
    a = admin(p)
    targets = list(p.get("topics", [])) + [uuid.UUID(i) for i in p.get("topic_ids", [])]
    r = a.delete_topics(targets, raise_errors=False)
    a.close()
    return {
        "topics": [
            {
                "name": t.get("name"),
                "topic_id": str(t["topic_id"]) if t.get("topic_id") is not None else None,
                "error_code": t["error_code"],
            }
            for t in r["topics"]
        ]
    }


def list_topics(p):
    """{"topics": {name: {"partitions": n, "topic_id": uuid}}} from a Metadata request."""
    a = admin(p)
    r = a.describe_topics()
    a.close()
    return {
        "topics": {
            t["name"]: {
                "partitions": len(t.get("partitions") or []),
                "topic_id": str(t["topic_id"]) if t.get("topic_id") is not None else None,
            }
            for t in r
            if t.get("error_code", 0) == 0
        }
    }


main(
    {
        "describe": describe,
        "alter": alter,
        "create_partitions": create_partitions,
        "delete_records": delete_records,
        "describe_cluster": describe_cluster,
        "describe_log_dirs": describe_log_dirs,
        "create_topics": create_topics,
        "delete_topics": delete_topics,
        "list_topics": list_topics,
    }
)
