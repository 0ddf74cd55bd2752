//! Shared pieces of the client tests: the canonical record model ([`Rec`], [`Got`]), JSON to and
//! from the scripts, and the `rdkafka` crate used in-process as producer and as an independent
//! reader of what other clients stored.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, Timestamp};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{Value, json};

/// One record as produced: key, value, headers (a `None` is a null on the wire).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    pub key: Option<String>,
    pub value: Option<String>,
    pub headers: Vec<(String, Option<String>)>,
}

/// Builds a [`Rec`].
pub fn rec(key: Option<&str>, value: Option<&str>, headers: &[(&str, Option<&str>)]) -> Rec {
    Rec {
        key: key.map(str::to_owned),
        value: value.map(str::to_owned),
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned)))
            .collect(),
    }
}

/// The records every client round-trips: keys, null keys, null values, empty (non-null) key
/// and value, non-ASCII bytes, duplicate header keys (adjacent and interleaved), null header
/// values. Clients that cannot *produce* some of these filter them (see each test).
pub fn standard_records() -> Vec<Rec> {
    vec![
        rec(
            Some("k0"),
            Some("v0"),
            &[("h", Some("1")), ("h", Some("2")), ("n", None)],
        ),
        rec(None, Some("no key"), &[]),
        rec(Some("tombstone"), None, &[]),
        rec(Some(""), Some(""), &[("empty", Some(""))]),
        rec(
            Some("ключ"),
            Some("värde ✓ 🚀"),
            &[("trace-id", Some("abc-123")), ("ü", Some("ß"))],
        ),
        rec(
            Some("interleaved"),
            Some("dups"),
            &[("a", Some("1")), ("b", Some("2")), ("a", Some("3"))],
        ),
        rec(Some("last"), Some("end"), &[]),
    ]
}

/// Script message specs for `recs`, all to `partition`.
pub fn specs(recs: &[Rec], partition: i32) -> Value {
    Value::Array(
        recs.iter()
            .map(|r| {
                json!({
                    "key": r.key,
                    "value": r.value,
                    "headers": r.headers.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                    "partition": partition,
                })
            })
            .collect(),
    )
}

/// A consumed record with its position and timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Got {
    pub partition: i32,
    pub offset: i64,
    pub rec: Rec,
    /// "CreateTime" / "LogAppendTime" / "NotAvailable", when the client says.
    pub timestamp_type: Option<String>,
    pub timestamp: i64,
}

fn opt_str(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

/// Parses a script's `messages` array.
pub fn parse_messages(result: &Value) -> Vec<Got> {
    let Some(msgs) = result["messages"].as_array() else {
        panic!("no messages array in {result}")
    };
    msgs.iter()
        .map(|m| Got {
            partition: m["partition"].as_i64().map_or(-1, |p| p as i32),
            offset: m["offset"].as_i64().unwrap_or(-1),
            rec: Rec {
                key: opt_str(&m["key"]),
                value: opt_str(&m["value"]),
                headers: m["headers"]
                    .as_array()
                    .map(|hs| {
                        hs.iter()
                            .map(|h| (opt_str(&h[0]).unwrap_or_default(), opt_str(&h[1])))
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            timestamp_type: opt_str(&m["timestamp_type"]),
            timestamp: m["timestamp"].as_i64().unwrap_or(-1),
        })
        .collect()
}

/// Asserts that `got` is exactly `expected` at offsets `first..` of one partition.
pub fn assert_read_back(who: &str, got: &[Got], expected: &[Rec], first: i64) {
    let got_recs: Vec<(i64, &Rec)> = got.iter().map(|g| (g.offset, &g.rec)).collect();
    let want: Vec<(i64, &Rec)> = expected.iter().zip(first..).map(|(r, o)| (o, r)).collect();
    assert_eq!(got_recs, want, "{who}: records read back differ");
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

// ---------------------------------------------------------------------------------------------
// The rdkafka crate (librdkafka bundled by rdkafka-sys) in-process.

/// A delivery report from the rdkafka crate.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub result: Result<(i32, i64), RDKafkaErrorCode>,
    pub timestamp: Timestamp,
}

/// Collects delivery reports by message index.
#[derive(Debug, Default)]
pub struct Reports(Mutex<Vec<Option<Delivery>>>);

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = Box<usize>;

    fn delivery(&self, r: &DeliveryResult<'_>, index: Box<usize>) {
        let d = match r {
            Ok(m) => Delivery {
                result: Ok((m.partition(), m.offset())),
                timestamp: m.timestamp(),
            },
            Err((e, m)) => Delivery {
                result: Err(e.rdkafka_error_code().unwrap_or(RDKafkaErrorCode::Unknown)),
                timestamp: m.timestamp(),
            },
        };
        let mut v = self.0.lock().unwrap();
        if v.len() <= *index {
            v.resize(*index + 1, None);
        }
        v[*index] = Some(d);
    }
}

/// A client config for `bootstrap` with `extra` settings.
pub fn rd_config(bootstrap: &str, extra: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c
}

/// One record to produce with the rdkafka crate.
#[derive(Clone, Debug)]
pub struct Out {
    pub rec: Rec,
    pub partition: i32,
    pub timestamp: Option<i64>,
    /// Overrides `rec.value` with this many bytes of b'x'.
    pub value_len: Option<usize>,
}

impl Out {
    pub fn new(rec: Rec, partition: i32) -> Out {
        Out {
            rec,
            partition,
            timestamp: None,
            value_len: None,
        }
    }
}

/// Produces `outs` in order with a fresh rdkafka producer and returns every delivery report
/// (in message order) once all are in.
pub fn rd_produce(
    bootstrap: &str,
    topic: &str,
    outs: &[Out],
    extra: &[(&str, &str)],
) -> Vec<Delivery> {
    let producer: BaseProducer<Reports> = rd_config(bootstrap, extra)
        .create_with_context(Reports::default())
        .expect("rdkafka producer");
    let mut bodies = Vec::new();
    for o in outs {
        bodies.push(o.value_len.map(|n| vec![b'x'; n]));
    }
    for (i, o) in outs.iter().enumerate() {
        let mut headers = OwnedHeaders::new();
        for (k, v) in &o.rec.headers {
            headers = headers.insert(Header {
                key: k,
                value: v.as_deref(),
            });
        }
        let mut record: BaseRecord<'_, str, [u8], Box<usize>> =
            BaseRecord::with_opaque_to(topic, Box::new(i))
                .partition(o.partition)
                .headers(headers);
        if let Some(k) = &o.rec.key {
            record = record.key(k.as_str());
        }
        let value: Option<&[u8]> = match &bodies[i] {
            Some(b) => Some(b.as_slice()),
            None => o.rec.value.as_deref().map(str::as_bytes),
        };
        if let Some(v) = value {
            record = record.payload(v);
        }
        if let Some(ts) = o.timestamp {
            record = record.timestamp(ts);
        }
        if let Err((e, _)) = producer.send(record) {
            panic!("rdkafka send of record {i} failed locally: {e}");
        }
        producer.poll(Duration::ZERO);
    }
    producer
        .flush(Duration::from_secs(30))
        .expect("rdkafka flush");
    let reports = producer.context().0.lock().unwrap().clone();
    assert_eq!(reports.len(), outs.len(), "one delivery report per record");
    reports
        .into_iter()
        .enumerate()
        .map(|(i, d)| d.unwrap_or_else(|| panic!("no delivery report for record {i}")))
        .collect()
}

fn timestamp_parts(ts: Timestamp) -> (Option<String>, i64) {
    match ts {
        Timestamp::NotAvailable => (Some("NotAvailable".into()), -1),
        Timestamp::CreateTime(t) => (Some("CreateTime".into()), t),
        Timestamp::LogAppendTime(t) => (Some("LogAppendTime".into()), t),
    }
}

fn consumer(bootstrap: &str, extra: &[(&str, &str)]) -> BaseConsumer {
    let mut cfg = rd_config(
        bootstrap,
        &[
            ("group.id", "skiff-compat-unused"),
            ("enable.auto.commit", "false"),
            ("enable.auto.offset.store", "false"),
            ("enable.partition.eof", "true"),
            ("auto.offset.reset", "error"),
        ],
    );
    for (k, v) in extra {
        cfg.set(*k, *v);
    }
    cfg.create().expect("rdkafka consumer")
}

/// Reads `topic`/`partition` from `from` until partition EOF with the rdkafka crate (assign,
/// no group, no commits). Panics on consumer errors or after 30 s.
pub fn rd_read(bootstrap: &str, topic: &str, partition: i32, from: Offset) -> Vec<Got> {
    rd_read_with(bootstrap, topic, partition, from, &[])
}

/// [`rd_read`] with extra consumer settings.
pub fn rd_read_with(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    from: Offset,
    extra: &[(&str, &str)],
) -> Vec<Got> {
    let c = consumer(bootstrap, extra);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, from)
        .expect("partition offset");
    c.assign(&tpl).expect("assign");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "rdkafka read of {topic}-{partition} did not reach EOF in 30 s ({} records so far)",
            out.len()
        );
        match c.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(KafkaError::PartitionEOF(_))) => return out,
            Some(Err(e)) => panic!("rdkafka consumer error on {topic}-{partition}: {e}"),
            Some(Ok(m)) => {
                let headers = m
                    .headers()
                    .map(|hs| {
                        hs.iter()
                            .map(|h| {
                                (
                                    h.key.to_owned(),
                                    h.value.map(|v| String::from_utf8_lossy(v).into_owned()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let (timestamp_type, timestamp) = timestamp_parts(m.timestamp());
                out.push(Got {
                    partition: m.partition(),
                    offset: m.offset(),
                    rec: Rec {
                        key: m.key().map(|k| String::from_utf8_lossy(k).into_owned()),
                        value: m.payload().map(|v| String::from_utf8_lossy(v).into_owned()),
                        headers,
                    },
                    timestamp_type,
                    timestamp,
                });
            }
        }
    }
}

/// Low and high watermarks of one partition, from the rdkafka crate (ListOffsets -2 / -1).
pub fn rd_watermarks(bootstrap: &str, topic: &str, partition: i32) -> (i64, i64) {
    consumer(bootstrap, &[])
        .fetch_watermarks(topic, partition, Duration::from_secs(10))
        .expect("fetch_watermarks")
}

/// The rdkafka crate's `offsets_for_times` (ListOffsets by timestamp) for each of
/// `timestamps` on `topic`/`partition`, one query each: `Offset::Offset(o)`, or `Offset::End`
/// where no record is at or after the time.
pub fn rd_offsets_for_times(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    timestamps: &[i64],
) -> Vec<Offset> {
    let c = consumer(bootstrap, &[]);
    timestamps
        .iter()
        .map(|ts| {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(topic, partition, Offset::Offset(*ts))
                .expect("partition offset");
            let r = c
                .offsets_for_times(tpl, Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("offsets_for_times({ts}): {e}"));
            let elems = r.elements();
            assert_eq!(elems.len(), 1, "offsets_for_times({ts}): {r:?}");
            if let Err(e) = elems[0].error() {
                panic!("offsets_for_times({ts}): partition error {e}");
            }
            elems[0].offset()
        })
        .collect()
}

/// Partition count of `topic` from a Metadata request for all topics (no auto-create), or
/// `None` if the topic is not listed.
pub fn rd_partition_count(bootstrap: &str, topic: &str) -> Option<usize> {
    let c = consumer(bootstrap, &[]);
    let md = c
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("metadata");
    md.topics()
        .iter()
        .find(|t| t.name() == topic)
        .map(|t| t.partitions().len())
}

/// Creates `name` with `partitions` and topic `config` through PyPI confluent-kafka's
/// AdminClient (CreateTopics) and asserts it succeeded.
pub fn create_topic(
    b: &skiff_compat::Broker,
    name: &str,
    partitions: i32,
    config: &[(&str, &str)],
) {
    let config: serde_json::Map<String, Value> = config
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    let r = skiff_compat::python(
        skiff_compat::Python::PyPi,
        "ck.py",
        "admin_create",
        &json!({"bootstrap": b.bootstrap(), "topics": [{"name": name, "partitions": partitions, "config": config}]}),
    );
    assert_eq!(r["results"][name], Value::Null, "creating {name}: {r}");
}
