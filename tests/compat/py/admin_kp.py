"""kafka-python (PyPI, pinned in compat/requirements.txt) KafkaAdminClient commands for the admin
compatibility tests: describe (config_filter=all, with synonyms), alter (incremental or legacy,
chosen by p.incremental), create_partitions, delete_records, describe_cluster and
describe_log_dirs.

Usage: admin_kp.py COMMAND JSON; prints one JSON line (see _common.py). Broker-side refusals
are data ({"error": text}), not a failed exit.
"""

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


main(
    {
        "describe": describe,
        "alter": alter,
        "create_partitions": create_partitions,
        "delete_records": delete_records,
        "describe_cluster": describe_cluster,
        "describe_log_dirs": describe_log_dirs,
    }
)
