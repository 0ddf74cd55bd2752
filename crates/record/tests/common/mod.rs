//! Shared proptest strategies for the integration tests (included with `mod common;`).
#![allow(dead_code)]

use proptest::prelude::*;
use skiff_record::{Compression, TimestampType};

/// An owned record to feed the builder and compare against decoders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRecord {
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

pub fn bytes_opt(max: usize) -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(Vec::new())),
        4 => proptest::collection::vec(any::<u8>(), 0..max).prop_map(Some),
    ]
}

/// Header keys: a small alphabet so duplicates are common; always UTF-8.
pub fn header_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![Just(""), Just("a"), Just("b"), Just("trace-id"), Just("é")]
        .prop_map(|s| s.as_bytes().to_vec())
}

pub fn record(ts_base: i64) -> impl Strategy<Value = OwnedRecord> {
    (
        -100_000i64..100_000,
        bytes_opt(40),
        bytes_opt(200),
        proptest::collection::vec((header_key(), bytes_opt(20)), 0..4),
    )
        .prop_map(move |(d, key, value, headers)| OwnedRecord {
            timestamp: ts_base + d,
            key,
            value,
            headers,
        })
}

pub fn records(max: usize) -> impl Strategy<Value = Vec<OwnedRecord>> {
    proptest::collection::vec(record(1_700_000_000_000), 0..max)
}

pub fn codec() -> impl Strategy<Value = Compression> {
    proptest::sample::select(Compression::ALL.to_vec())
}

pub fn ts_type() -> impl Strategy<Value = TimestampType> {
    prop_oneof![
        Just(TimestampType::CreateTime),
        Just(TimestampType::LogAppendTime)
    ]
}
