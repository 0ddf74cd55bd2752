//! Single-bit corruption: every bit of a batch is flipped in turn and the damage must be
//! caught exactly where the format says (CRC over bytes 21.., framing for length and magic,
//! nothing for base offset and leader epoch, which the CRC does not cover).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{codec, records, ts_type};
use proptest::prelude::*;
use skiff_record::{BatchBuilder, BatchOptions, BatchView, Header, RecordError};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_single_bit_flip_is_classified(recs in records(4), codec in codec(), ts in ts_type()) {
        let mut b = BatchBuilder::new(BatchOptions {
            compression: codec,
            timestamp_type: ts,
            ..BatchOptions::default()
        });
        for r in &recs {
            let hs: Vec<Header<'_>> =
                r.headers.iter().map(|(k, v)| Header { key: k, value: v.as_deref() }).collect();
            b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &hs);
        }
        let good = b.build().unwrap();
        BatchView::new(&good).unwrap().verify_crc().unwrap();
        let mut bad = good.clone();
        for bit in 0..good.len() * 8 {
            let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
            bad[byte] ^= mask;
            let view = BatchView::new(&bad);
            match byte {
                // baseOffset and partitionLeaderEpoch: not covered by the CRC.
                0..=7 | 12..=15 => {
                    let v = view.unwrap();
                    prop_assert!(v.verify_crc().is_ok(), "bit {}", bit);
                }
                // batchLength: framing no longer matches the buffer.
                8..=11 => {
                    let is_len_err = matches!(view, Err(RecordError::InvalidBatchLength(_)));
                    prop_assert!(is_len_err, "bit {}", bit);
                }
                // magic
                16 => {
                    let is_magic_err = matches!(view, Err(RecordError::UnsupportedMagic(_)));
                    prop_assert!(is_magic_err, "bit {}", bit);
                }
                // stored CRC, and everything it covers
                _ => {
                    let v = view.unwrap();
                    let is_crc_err = matches!(v.verify_crc(), Err(RecordError::CrcMismatch { .. }));
                    prop_assert!(is_crc_err, "bit {}", bit);
                }
            }
            bad[byte] ^= mask;
        }
        prop_assert_eq!(bad, good);
    }
}
