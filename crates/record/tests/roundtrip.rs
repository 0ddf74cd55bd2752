//! Builder -> bytes -> BatchView -> records round trips for every codec and timestamp type,
//! plus recompression between every codec pair.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{OwnedRecord, codec, records, ts_type};
use proptest::prelude::*;
use skiff_record::{
    BatchBuilder, BatchOptions, BatchView, Compression, Header, TimestampType, recompress,
};

const MAX: usize = 64 << 20;

fn build(recs: &[OwnedRecord], opts: BatchOptions) -> Vec<u8> {
    let mut b = BatchBuilder::new(opts);
    for r in recs {
        let hs: Vec<Header<'_>> = r
            .headers
            .iter()
            .map(|(k, v)| Header {
                key: k,
                value: v.as_deref(),
            })
            .collect();
        b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &hs);
    }
    assert_eq!(b.len(), recs.len());
    b.build().unwrap()
}

/// Decodes every record of a batch back into owned form, with reader-visible timestamps.
fn decode(bytes: &[u8]) -> Vec<OwnedRecord> {
    let v = BatchView::new(bytes).unwrap();
    v.verify_crc().unwrap();
    let data = v.records_data(MAX).unwrap();
    let mut out = Vec::new();
    for (i, r) in skiff_record::records(&data, v.records_count()).enumerate() {
        let r = r.unwrap();
        assert_eq!(r.offset_delta, i as i32);
        assert_eq!(r.attributes, 0);
        out.push(OwnedRecord {
            timestamp: v.record_timestamp(&r),
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            headers: r
                .headers
                .iter()
                .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                .collect(),
        });
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn builder_round_trip(recs in records(12), codec in codec(), ts in ts_type(),
                          base_offset in 0i64..1 << 40, pid in -1i64..5) {
        let opts = BatchOptions {
            base_offset,
            compression: codec,
            timestamp_type: ts,
            producer_id: pid,
            producer_epoch: if pid >= 0 { 1 } else { -1 },
            base_sequence: if pid >= 0 { 10 } else { -1 },
            ..BatchOptions::default()
        };
        let bytes = build(&recs, opts);
        let v = BatchView::new(&bytes).unwrap();
        prop_assert_eq!(v.compression().unwrap(), codec);
        prop_assert_eq!(v.timestamp_type(), ts);
        prop_assert_eq!(v.base_offset(), base_offset);
        prop_assert_eq!(v.records_count() as usize, recs.len());
        prop_assert_eq!(v.last_offset_delta() as usize, recs.len().saturating_sub(1));
        prop_assert_eq!(v.producer_id(), pid);
        let max_ts = recs.iter().map(|r| r.timestamp).max().unwrap_or(-1).max(-1);
        prop_assert_eq!(v.max_timestamp(), max_ts);
        prop_assert_eq!(v.base_timestamp(), recs.first().map_or(-1, |r| r.timestamp));

        let got = decode(&bytes);
        let mut expect = recs.clone();
        if ts == TimestampType::LogAppendTime {
            for r in &mut expect {
                r.timestamp = max_ts;
            }
        }
        prop_assert_eq!(got, expect);
    }

    #[test]
    fn recompress_preserves_records(recs in records(8), from in codec(), to in codec(),
                                    ts in ts_type()) {
        let opts = BatchOptions {
            compression: from,
            timestamp_type: ts,
            base_offset: 5,
            partition_leader_epoch: 4,
            ..BatchOptions::default()
        };
        let original = build(&recs, opts);
        let ov = BatchView::new(&original).unwrap();
        let re = recompress(&ov, to, None, MAX).unwrap();
        let rv = BatchView::new(&re).unwrap();
        rv.verify_crc().unwrap();
        prop_assert_eq!(rv.compression().unwrap(), to);
        prop_assert_eq!(rv.attributes() & !7, ov.attributes() & !7);
        for (a, b) in [
            (rv.base_offset(), ov.base_offset()),
            (rv.base_timestamp(), ov.base_timestamp()),
            (rv.max_timestamp(), ov.max_timestamp()),
            (rv.producer_id(), ov.producer_id()),
            (i64::from(rv.partition_leader_epoch()), i64::from(ov.partition_leader_epoch())),
            (i64::from(rv.last_offset_delta()), i64::from(ov.last_offset_delta())),
            (i64::from(rv.records_count()), i64::from(ov.records_count())),
        ] {
            prop_assert_eq!(a, b);
        }
        prop_assert_eq!(decode(&re), decode(&original));
        if from == to && from == Compression::None {
            prop_assert_eq!(re, original);
        }
    }
}

#[test]
fn recompress_every_codec_pair() {
    let recs: Vec<OwnedRecord> = (0..500)
        .map(|i| OwnedRecord {
            timestamp: 1_000 + i,
            key: Some(format!("key-{}", i % 17).into_bytes()),
            value: (i % 50 != 0).then(|| vec![i as u8; (i % 300) as usize]),
            headers: vec![(b"h".to_vec(), Some(b"x".to_vec())), (b"h".to_vec(), None)],
        })
        .collect();
    for from in Compression::ALL {
        let original = build(
            &recs,
            BatchOptions {
                compression: from,
                ..BatchOptions::default()
            },
        );
        let expect = decode(&original);
        assert_eq!(expect, recs);
        for to in Compression::ALL {
            let ov = BatchView::new(&original).unwrap();
            let re = recompress(&ov, to, None, MAX).unwrap();
            assert_eq!(BatchView::new(&re).unwrap().compression().unwrap(), to);
            assert_eq!(decode(&re), expect, "{from:?} -> {to:?}");
            // Bounded: a limit below the decompressed size fails.
            if from != Compression::None || to != Compression::None {
                assert!(recompress(&ov, to, None, 100).is_err());
            }
        }
    }
}
