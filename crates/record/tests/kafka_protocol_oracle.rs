//! Differential tests against an independent implementation: the `kafka-protocol` crate's
//! record batch encoder/decoder. Ours -> theirs and theirs -> ours, every codec.
//! kafka-protocol keeps headers in an IndexMap (duplicate keys collapse: the first position
//! keeps the last value) and ignores the LogAppendTime bit when decoding timestamps
//! (always base + delta); comparisons account for both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::{Bytes, BytesMut};
use common::{OwnedRecord, codec, records, ts_type};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records as kp;
use proptest::prelude::*;
use skiff_record::{BatchBuilder, BatchOptions, BatchView, Compression, Header, TimestampType};

fn kp_codec(c: Compression) -> kp::Compression {
    match c {
        Compression::None => kp::Compression::None,
        Compression::Gzip => kp::Compression::Gzip,
        Compression::Snappy => kp::Compression::Snappy,
        Compression::Lz4 => kp::Compression::Lz4,
        Compression::Zstd => kp::Compression::Zstd,
    }
}

fn collapse(headers: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut m: IndexMap<Vec<u8>, Option<Vec<u8>>> = IndexMap::new();
    for (k, v) in headers {
        m.insert(k.clone(), v.clone());
    }
    m.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn ours_decoded_by_kafka_protocol(recs in records(10), codec in codec(), ts in ts_type(),
                                      base_offset in 0i64..1 << 40, pid in -1i64..3,
                                      txn in any::<bool>()) {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset,
            partition_leader_epoch: 7,
            compression: codec,
            timestamp_type: ts,
            is_transactional: txn && pid >= 0,
            producer_id: pid,
            producer_epoch: if pid >= 0 { 3 } else { -1 },
            base_sequence: if pid >= 0 { 100 } else { -1 },
            ..BatchOptions::default()
        });
        for r in &recs {
            let hs: Vec<Header<'_>> =
                r.headers.iter().map(|(k, v)| Header { key: k, value: v.as_deref() }).collect();
            b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &hs);
        }
        let bytes = b.build().unwrap();
        let mut buf = Bytes::from(bytes);
        let set = kp::RecordBatchDecoder::decode(&mut buf).unwrap();
        prop_assert!(buf.is_empty());
        prop_assert_eq!(set.compression, kp_codec(codec));
        prop_assert_eq!(set.version, 2);
        prop_assert_eq!(set.records.len(), recs.len());
        for (i, (theirs, ours)) in set.records.iter().zip(&recs).enumerate() {
            prop_assert_eq!(theirs.offset, base_offset + i as i64);
            prop_assert_eq!(theirs.timestamp, ours.timestamp);
            prop_assert_eq!(
                theirs.timestamp_type,
                if ts == TimestampType::LogAppendTime { kp::TimestampType::LogAppend } else { kp::TimestampType::Creation }
            );
            prop_assert_eq!(theirs.key.as_deref(), ours.key.as_deref());
            prop_assert_eq!(theirs.value.as_deref(), ours.value.as_deref());
            let their_headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = theirs
                .headers
                .iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.as_ref().map(|b| b.to_vec())))
                .collect();
            prop_assert_eq!(their_headers, collapse(&ours.headers));
            prop_assert_eq!(theirs.producer_id, pid);
            prop_assert_eq!(theirs.partition_leader_epoch, 7);
            prop_assert_eq!(theirs.transactional, txn && pid >= 0);
            if pid >= 0 {
                prop_assert_eq!(theirs.sequence, 100 + i as i32);
            }
        }
    }

    #[test]
    fn kafka_protocol_decoded_by_ours(recs in records(10), codec in codec(),
                                      base_offset in 0i64..1 << 40) {
        prop_assume!(!recs.is_empty());
        let theirs: Vec<kp::Record> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut headers = IndexMap::new();
                for (k, v) in &r.headers {
                    let k = StrBytes::from_string(String::from_utf8(k.clone()).unwrap());
                    headers.insert(k, v.clone().map(Bytes::from));
                }
                kp::Record {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: 5,
                    producer_id: 9,
                    producer_epoch: 1,
                    timestamp_type: kp::TimestampType::Creation,
                    offset: base_offset + i as i64,
                    sequence: 40 + i as i32,
                    timestamp: r.timestamp,
                    key: r.key.clone().map(Bytes::from),
                    value: r.value.clone().map(Bytes::from),
                    headers,
                }
            })
            .collect();
        let mut buf = BytesMut::new();
        kp::RecordBatchEncoder::encode(
            &mut buf,
            &theirs,
            &kp::RecordEncodeOptions { version: 2, compression: kp_codec(codec) },
        )
        .unwrap();

        let v = BatchView::new(&buf).unwrap();
        v.verify_crc().unwrap();
        prop_assert_eq!(v.compression().unwrap(), codec);
        prop_assert_eq!(v.base_offset(), base_offset);
        prop_assert_eq!(v.records_count() as usize, recs.len());
        prop_assert_eq!(v.last_offset_delta() as usize, recs.len() - 1);
        prop_assert_eq!((v.producer_id(), v.producer_epoch(), v.base_sequence()), (9, 1, 40));
        prop_assert_eq!(v.partition_leader_epoch(), 5);
        prop_assert_eq!(v.max_timestamp(), recs.iter().map(|r| r.timestamp).max().unwrap());
        let data = v.records_data(1 << 24).unwrap();
        let ours: Vec<_> = skiff_record::records(&data, v.records_count())
            .collect::<Result<_, _>>()
            .unwrap();
        for (i, (r, expect)) in ours.iter().zip(&recs).enumerate() {
            let got = OwnedRecord {
                timestamp: v.record_timestamp(r),
                key: r.key.map(<[u8]>::to_vec),
                value: r.value.map(<[u8]>::to_vec),
                headers: r.headers.iter().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect(),
            };
            prop_assert_eq!(v.record_offset(r), base_offset + i as i64);
            let want = OwnedRecord { headers: collapse(&expect.headers), ..expect.clone() };
            prop_assert_eq!(got, want);
        }
    }
}

/// An end-transaction marker built by us is byte-identical to the same control batch encoded
/// by kafka-protocol (key `0 | type`, value `0 | coordinator epoch` as Kafka's
/// `EndTransactionMarker`), and kafka-protocol decodes ours as a transactional control record.
#[test]
fn end_txn_marker_matches_kafka_protocol() {
    use kafka_protocol::messages::EndTxnMarker as KpMarker;
    use kafka_protocol::protocol::Encodable;
    use skiff_record::{ControlType, build_end_txn_marker};
    for (t, type_id, epoch) in [
        (ControlType::Abort, 0i16, 0i32),
        (ControlType::Commit, 1, 77),
    ] {
        let ours = build_end_txn_marker(4_242, 5, epoch, t, 1_700_000_000_123).unwrap();
        let mut value = BytesMut::new();
        value.extend_from_slice(&0i16.to_be_bytes());
        KpMarker::default()
            .with_coordinator_epoch(epoch)
            .encode(&mut value, 0)
            .unwrap();
        let mut key = Vec::new();
        key.extend_from_slice(&0i16.to_be_bytes());
        key.extend_from_slice(&type_id.to_be_bytes());
        let rec = kp::Record {
            transactional: true,
            control: true,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: 4_242,
            producer_epoch: 5,
            timestamp_type: kp::TimestampType::Creation,
            offset: 0,
            sequence: -1,
            timestamp: 1_700_000_000_123,
            key: Some(Bytes::from(key)),
            value: Some(value.freeze()),
            headers: IndexMap::new(),
        };
        let mut theirs = BytesMut::new();
        kp::RecordBatchEncoder::encode(
            &mut theirs,
            &[rec],
            &kp::RecordEncodeOptions {
                version: 2,
                compression: kp::Compression::None,
            },
        )
        .unwrap();
        assert_eq!(ours, theirs.to_vec(), "{t:?}");
        let mut buf = Bytes::from(ours);
        let set = kp::RecordBatchDecoder::decode(&mut buf).unwrap();
        assert!(set.records[0].control && set.records[0].transactional);
    }
}
