//! Fuzz-style properties: arbitrary bytes through every decoding entry point must return
//! `Ok` or `Err`, never panic, and never allocate beyond the given bounds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use proptest::prelude::*;
use skiff_record::{
    BatchBuilder, BatchOptions, BatchView, Compression, batches, decompress, peek_batch_size,
    recompress, recompute_crc, records, varint,
};

const LIMIT: usize = 1 << 20;

/// Runs every reader over a candidate batch; returns how far it got (for sanity asserts).
fn exercise(bytes: &[u8]) -> usize {
    let _ = peek_batch_size(bytes);
    for item in batches(bytes) {
        if item.is_err() {
            break;
        }
    }
    let Ok(v) = BatchView::new(bytes) else {
        return 0;
    };
    let _ = (
        v.last_offset(),
        v.next_offset(),
        v.timestamp_type(),
        v.verify_crc(),
    );
    let _ = recompress(&v, Compression::Lz4, None, LIMIT);
    let Ok(data) = v.records_data(LIMIT) else {
        return 1;
    };
    let mut n = 2;
    for r in records(&data, v.records_count()) {
        match r {
            Ok(r) => {
                let _ = v.record_timestamp(&r);
                n += 1;
            }
            Err(_) => break,
        }
    }
    n
}

fn codec_strategy() -> impl Strategy<Value = Compression> {
    proptest::sample::select(Compression::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        exercise(&bytes);
        let _ = records(&bytes, 3).count();
        let mut s = &bytes[..];
        let _ = varint::read_varint(&mut s);
        let _ = varint::read_varlong(&mut s);
        for codec in Compression::ALL {
            if let Ok(out) = decompress(codec, &bytes, 4096) {
                prop_assert!(out.len() <= 4096);
            }
        }
    }

    /// A valid header (right length, magic, CRC) around a random records section, so the
    /// record and codec parsers see the garbage.
    #[test]
    fn random_payload_behind_valid_header(payload in proptest::collection::vec(any::<u8>(), 0..300),
                                          codec in codec_strategy(), count in -2i32..6,
                                          xerial in any::<bool>()) {
        let mut bytes = BatchBuilder::new(BatchOptions { compression: codec, ..Default::default() })
            .build()
            .unwrap();
        bytes.truncate(61);
        if codec == Compression::Snappy && xerial {
            bytes.extend_from_slice(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01");
        }
        bytes.extend_from_slice(&payload);
        let len = (bytes.len() - 12) as i32;
        bytes[8..12].copy_from_slice(&len.to_be_bytes());
        bytes[57..61].copy_from_slice(&count.to_be_bytes());
        recompute_crc(&mut bytes);
        let v = BatchView::new(&bytes).unwrap();
        prop_assert!(v.verify_crc().is_ok());
        prop_assert!(exercise(&bytes) >= 1);
    }

    /// Valid batches with a few bytes overwritten (then the CRC fixed): deep structure damage.
    #[test]
    fn damaged_valid_batches_never_panic(recs in common::records(5), codec in codec_strategy(),
                                         edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let mut b = BatchBuilder::new(BatchOptions { compression: codec, ..Default::default() });
        for r in &recs {
            b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &[]);
        }
        let mut bytes = b.build().unwrap();
        for (idx, val) in edits {
            let i = 21 + idx.index(bytes.len() - 21);
            bytes[i] = val;
        }
        recompute_crc(&mut bytes);
        exercise(&bytes);
    }

    #[test]
    fn decompression_bombs_are_capped(len in 10_000usize..300_000, codec in codec_strategy()) {
        let zeros = vec![0u8; len];
        let c = skiff_record::compress(codec, None, &zeros).unwrap();
        prop_assert!(decompress(codec, &c, len / 10).is_err());
        prop_assert_eq!(decompress(codec, &c, len).unwrap().len(), len);
    }
}
