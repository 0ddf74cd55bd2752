"""kafka-python (PyPI, pinned in compat/requirements.txt) commands for the security tests
(issue 19). p.config holds kafka-python's own keyword arguments (security_protocol, ssl_cafile,
ssl_certfile, ssl_keyfile, sasl_mechanism, sasl_plain_username, sasl_plain_password; with
"oauth_token" a token provider for OAUTHBEARER is built).

kafka-python raises authentication failures inside its network layer and logs them at ERROR
("Connection failed: ..."); a handler on the `kafka` logger collects those records, so the
tests can assert the exception's class and text (e.g. SaslAuthenticationFailedError with the
broker's message) even where the public API only says NoBrokersAvailable.

Commands: roundtrip (produce, then read partition 0 back), consume (read partition 0 until
an exception such as TopicAuthorizationFailedError), probe (metadata or the first failure). Usage: security_kp.py COMMAND JSON; prints one JSON line (see _common.py).
"""

import logging
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.net.sasl.oauth import AbstractTokenProvider

from _common import main, to_bytes, to_str

TIMEOUT = 15


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        try:
            self.lines.append(record.getMessage())
        except Exception:  # a formatting failure must not hide the result
            self.lines.append(str(record.msg))


LOGS = Collect()
logging.getLogger("kafka").addHandler(LOGS)
logging.getLogger("kafka").setLevel(logging.INFO)


class Token(AbstractTokenProvider):
    def __init__(self, token):
        super().__init__()
        self.value = token

    def token(self):
        return self.value

    def extensions(self):
        return {}


def config(p):
    c = dict(p.get("config", {}))
    if "oauth_token" in c:
        c["sasl_oauth_token_provider"] = Token(c.pop("oauth_token"))
    return c


def failure(e):
    return {"error": type(e).__name__, "message": str(e)}


def error_lines():
    """The distinct warning/error lines, first 12 (reconnect loops repeat them)."""
    out = []
    for line in LOGS.lines:
        if line not in out and ("rror" in line or "fail" in line.lower()):
            out.append(line)
    return out[:12]


def roundtrip(p):
    """Produces p.messages (strings) to partition 0 of p.topic (which must exist) and reads
    the partition from the beginning until p.expect (default: as many as produced) records:
    {"reports": [error or null], "values": [...]}."""
    out = {}
    try:
        prod = KafkaProducer(bootstrap_servers=p["bootstrap"], acks="all", **config(p))
        futures = [prod.send(p["topic"], value=to_bytes(v), partition=0) for v in p["messages"]]
        prod.flush(timeout=TIMEOUT)
        reports = []
        for f in futures:
            try:
                f.get(timeout=TIMEOUT)
                reports.append(None)
            except KafkaError as e:
                reports.append(type(e).__name__)
        prod.close(timeout=5)
        out["reports"] = reports
        c = KafkaConsumer(
            bootstrap_servers=p["bootstrap"],
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **config(p)
        )
        tp = TopicPartition(p["topic"], 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        values = []
        deadline = time.time() + TIMEOUT
        expect = p.get("expect", len(p["messages"]))
        while len(values) < expect and time.time() < deadline:
            for records in c.poll(timeout_ms=200).values():
                values.extend(to_str(r.value) for r in records)
        c.close()
        out["values"] = values
    except Exception as e:  # the test reads the failure; its class and text are the data
        out["exception"] = failure(e)
    out["logs"] = error_lines()
    return out


def consume(p):
    """assign() partition 0 of p.topic, reads from the beginning for p.timeout_s or until the
    first exception: {"values": [...], "exception": {error, message} or null}."""
    out = {"values": [], "exception": None}
    try:
        c = KafkaConsumer(
            bootstrap_servers=p["bootstrap"],
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **config(p)
        )
        tp = TopicPartition(p["topic"], 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        deadline = time.time() + p.get("timeout_s", 8)
        try:
            while time.time() < deadline and len(out["values"]) < p.get("max", 1 << 30):
                for records in c.poll(timeout_ms=200).values():
                    out["values"].extend(to_str(r.value) for r in records)
        finally:
            c.close()
    except Exception as e:  # the failure's class and text are the data
        out["exception"] = failure(e)
    out["logs"] = error_lines()
    return out


def probe(p):
    """Fetches the topic list with p.config: {"ok": true, "topics": [...]} or {"ok": false,
    "exception": {...}, "logs": [kafka-python's warning/error lines]}."""
    try:
        c = KafkaConsumer(
            bootstrap_servers=p["bootstrap"],
            group_id=None,
            request_timeout_ms=p.get("timeout_s", 8) * 1000,
            bootstrap_timeout_ms=p.get("timeout_s", 8) * 1000,
            reconnect_backoff_max_ms=500,
            **config(p)
        )
        topics = sorted(c.topics())
        c.close()
        return {"ok": True, "topics": topics, "logs": error_lines()}
    except Exception as e:
        return {"ok": False, "exception": failure(e), "logs": error_lines()}


if __name__ == "__main__":
    main({"roundtrip": roundtrip, "probe": probe, "consume": consume})
