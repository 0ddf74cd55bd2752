//! kafka-python 3's *default* producer is idempotent (KIP-679: InitProducerId, acks=all,
//! sequence numbers). Its records are read back exactly once, and the stored batches prove it
//! really ran idempotently (a producer id, sequences continuing batch to batch) rather than
//! silently falling back.

use std::collections::BTreeMap;

use rdkafka::Offset;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python, read_batches};

use crate::common::{create_topic, rd_read};

fn produce(b: &Broker, from: usize, n: usize) -> Value {
    let msgs: Vec<Value> = (from..from + n)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("r{i}"), "partition": i % 2}))
        .collect();
    python(
        Python::PyPi,
        "kp.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "idem", "messages": msgs, "config": {"linger_ms": 20, "batch_size": 400}}),
    )
}

#[test]
fn kafka_python_default_producer_is_idempotent_and_reads_back_exactly_once() {
    let b = Broker::start();
    create_topic(&b, "idem", 2, &[]);
    // Two producer sessions of 60 records each, over two partitions, in several batches.
    for (session, from) in [(0, 0), (1, 60)] {
        let r = produce(&b, from, 60);
        let reports = r["reports"].as_array().unwrap();
        assert_eq!(reports.len(), 60);
        for (i, rep) in reports.iter().enumerate() {
            let rec = from + i;
            assert_eq!(
                rep["error"],
                Value::Null,
                "session {session} record {rec}: {rep}"
            );
            assert_eq!(rep["partition"], json!(rec % 2), "{rep}");
            assert_eq!(rep["offset"], json!(rec / 2), "record {rec}: {rep}");
        }
    }
    // Exactly once, in order, per partition.
    for p in 0..2 {
        let got = rd_read(&b.bootstrap(), "idem", p, Offset::Beginning);
        let values: Vec<String> = got
            .iter()
            .map(|g| g.rec.value.clone().unwrap_or_default())
            .collect();
        let want: Vec<String> = (0..120)
            .filter(|i| i % 2 == p as usize)
            .map(|i| format!("r{i}"))
            .collect();
        assert_eq!(values, want, "partition {p}");
        let offsets: Vec<i64> = got.iter().map(|g| g.offset).collect();
        assert_eq!(offsets, (0..60).collect::<Vec<_>>(), "partition {p}");
    }
    // Stored batches: every one carries a producer id; per (producer, partition) the
    // sequences start at 0 and continue without gaps; the two sessions got distinct ids.
    let mut ids = BTreeMap::new();
    for p in 0..2 {
        let batches = read_batches(&b.partition_dir("idem", p));
        assert!(batches.len() >= 4, "expected several batches: {batches:?}");
        let mut next_seq: BTreeMap<i64, i32> = BTreeMap::new();
        for x in &batches {
            assert!(x.producer_id >= 0, "batch without a producer id: {x:?}");
            assert!(x.producer_epoch >= 0, "{x:?}");
            let want = next_seq.entry(x.producer_id).or_insert(0);
            assert_eq!(
                x.base_sequence, *want,
                "partition {p}: sequence gap or restart: {x:?}"
            );
            *want += x.record_count;
            *ids.entry(x.producer_id).or_insert(0) += x.record_count;
        }
    }
    assert_eq!(ids.len(), 2, "one producer id per session: {ids:?}");
    assert!(ids.values().all(|n| *n == 60), "{ids:?}");
}
