//! A validation-only walk over the records of a (decompressed) records section.
//!
//! Same format and the same strictness as [`crate::records`] (see `record.rs`): every length
//! is bounds-checked, header counts and header structure are checked, a record must be exactly
//! as long as its prefix says, the section must hold exactly `count` records. What differs is
//! what it hands out: a [`RecordSummary`] (attributes, timestamp delta, offset delta, key
//! length) instead of a [`crate::Record`], so nothing is sliced out for keys, values or
//! headers and no header vector is allocated; values and headers are skipped by their length.
//! Errors are a small `Copy` [`WalkError`] turned into text only when displayed (or converted
//! into the [`RecordError`] the full parser would have returned for the same bytes:
//! `RecordError::from(walk_error) == records(..)`'s error, a property the tests check).
//!
//! [`RecordWalk::next_with`] is the same step that also hands each header's key and value
//! (borrowed, `None` for a null value) to a callback, for callers that need to read a few
//! headers (delivery delay); the plain iterator passes a no-op, so it costs nothing there.
//!
//! After the first error the iterator is exhausted. Pure, allocation-free, thread-safe.

use skiff_types::limits::{HEADERS_PER_RECORD_MAX, RECORDS_PER_BATCH_MAX};

use crate::error::RecordError;

/// What validation needs from one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSummary {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    /// `-1` for a null key.
    pub key_length: i32,
}

impl RecordSummary {
    pub fn has_key(&self) -> bool {
        self.key_length >= 0
    }
}

/// Which length-prefixed field was wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Record,
    Key,
    Value,
    HeaderKey,
    HeaderValue,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Record => "record",
            Field::Key => "key",
            Field::Value => "value",
            Field::HeaderKey => "header key",
            Field::HeaderValue => "header value",
        }
    }
}

/// Why a records section is malformed (the walk's error; `Copy`, no text until displayed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkError {
    /// `count` is negative or above `RECORDS_PER_BATCH_MAX`.
    InvalidCount(i32),
    /// The section ended after `found` of `header` records.
    CountMismatch { header: i32, found: i32 },
    /// Bytes left after `count` records.
    Trailing { bytes: usize, count: i32 },
    /// A varint ran out of input after `after` bytes.
    TruncatedVarint { after: usize },
    /// A varint (`max_len` 5) or varlong (10) with a continuation bit in its last byte.
    VarintTooLong { max_len: usize },
    /// A varint whose last byte has bits beyond 32 (or 64) bits.
    VarintOverflow { bits: u32 },
    /// A length below -1 (or below 0 where null is not allowed).
    BadLength { field: Field, len: i32 },
    /// A length beyond the bytes left.
    LengthExceeds { field: Field, len: i32, left: usize },
    /// A record length of 0 (no attributes byte).
    EmptyRecord,
    /// A header count below 0 or above `HEADERS_PER_RECORD_MAX`.
    HeaderCount(i32),
    /// A record whose fields end before its length does.
    Unread { len: i32, left: usize },
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        RecordError::from(*self).fmt(f)
    }
}

impl From<WalkError> for RecordError {
    fn from(e: WalkError) -> Self {
        let m = |s: String| RecordError::MalformedRecord(s);
        match e {
            WalkError::InvalidCount(n) => m(format!("invalid record count {n}")),
            WalkError::CountMismatch { header, found } => {
                RecordError::RecordCountMismatch { header, found }
            }
            WalkError::Trailing { bytes, count } => {
                m(format!("{bytes} trailing bytes after {count} records"))
            }
            WalkError::TruncatedVarint { after } => {
                m(format!("truncated varint after {after} bytes"))
            }
            WalkError::VarintTooLong { max_len } => {
                m(format!("varint longer than {max_len} bytes"))
            }
            WalkError::VarintOverflow { bits } => m(format!("varint overflows {bits} bits")),
            WalkError::BadLength { field, len } => m(format!("{} length {len}", field.name())),
            WalkError::LengthExceeds { field, len, left } => m(format!(
                "{} length {len} exceeds the {left} bytes left in the record",
                field.name()
            )),
            WalkError::EmptyRecord => m("empty record".to_string()),
            WalkError::HeaderCount(n) => m(format!("header count {n}")),
            WalkError::Unread { len, left } => {
                m(format!("record length {len} leaves {left} unread bytes"))
            }
        }
    }
}

/// Iterator over the record summaries of a section, see [`walk_records`].
#[derive(Clone, Debug)]
pub struct RecordWalk<'a> {
    data: &'a [u8],
    count: i32,
    read: i32,
    done: bool,
}

/// Walks `count` records of a decompressed records section.
pub fn walk_records(data: &[u8], count: i32) -> RecordWalk<'_> {
    RecordWalk {
        data,
        count,
        read: 0,
        done: false,
    }
}

impl<'a> RecordWalk<'a> {
    /// Number of records successfully yielded so far.
    pub fn records_read(&self) -> i32 {
        self.read
    }

    /// The next record like [`Iterator::next`], calling `on_header(key, value)` for each of its
    /// headers (in order) before returning it. A record that fails may have reported some of
    /// its headers already.
    #[inline]
    pub fn next_with<F: FnMut(&'a [u8], Option<&'a [u8]>)>(
        &mut self,
        on_header: &mut F,
    ) -> Option<Result<RecordSummary, WalkError>> {
        if self.done {
            return None;
        }
        let item = self.step(on_header);
        match &item {
            Some(Ok(_)) => self.read += 1,
            _ => self.done = true,
        }
        item
    }

    #[inline]
    fn step<F: FnMut(&'a [u8], Option<&'a [u8]>)>(
        &mut self,
        on_header: &mut F,
    ) -> Option<Result<RecordSummary, WalkError>> {
        if self.count < 0 || self.count as usize > RECORDS_PER_BATCH_MAX {
            return Some(Err(WalkError::InvalidCount(self.count)));
        }
        if self.read == self.count {
            if self.data.is_empty() {
                return None;
            }
            return Some(Err(WalkError::Trailing {
                bytes: self.data.len(),
                count: self.count,
            }));
        }
        if self.data.is_empty() {
            return Some(Err(WalkError::CountMismatch {
                header: self.count,
                found: self.read,
            }));
        }
        Some(walk_one(&mut self.data, on_header))
    }
}

impl Iterator for RecordWalk<'_> {
    type Item = Result<RecordSummary, WalkError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_with(&mut |_, _| {})
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let left = usize::try_from(self.count.saturating_sub(self.read)).unwrap_or(0);
        (0, Some(left.saturating_add(1)))
    }
}

impl std::iter::FusedIterator for RecordWalk<'_> {}

/// Reads an unsigned LEB128 of at most `MAX` bytes whose last byte may only use `LAST_MASK`
/// (the rules of `crate::varint`), then zig-zag decodes it.
#[inline(always)]
fn zigzag<const MAX: usize, const LAST_MASK: u8>(buf: &mut &[u8]) -> Result<i64, WalkError> {
    // One- and two-byte varints (every length below 8 KiB) inline; MAX is at least 5, so
    // neither is a varint's last allowed byte and no overflow check applies to them.
    let bytes: &[u8] = buf;
    match *bytes {
        [b0, ref rest @ ..] if b0 < 0x80 => {
            *buf = rest;
            let n = u64::from(b0);
            Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
        }
        [b0, b1, ref rest @ ..] if b1 < 0x80 => {
            *buf = rest;
            let n = u64::from(b0 & 0x7f) | (u64::from(b1) << 7);
            Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
        }
        _ => zigzag_multi::<MAX, LAST_MASK>(buf),
    }
}

#[inline]
fn zigzag_multi<const MAX: usize, const LAST_MASK: u8>(buf: &mut &[u8]) -> Result<i64, WalkError> {
    let mut n = 0u64;
    for i in 0..MAX {
        let Some((&b, rest)) = buf.split_first() else {
            return Err(WalkError::TruncatedVarint { after: i });
        };
        *buf = rest;
        if i + 1 == MAX {
            if b & 0x80 != 0 {
                return Err(WalkError::VarintTooLong { max_len: MAX });
            }
            if b & !LAST_MASK != 0 {
                return Err(WalkError::VarintOverflow {
                    bits: if MAX == 5 { 32 } else { 64 },
                });
            }
        }
        n |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(((n >> 1) as i64) ^ -((n & 1) as i64));
        }
    }
    // The loop always returns: its last round either fails or has no continuation bit.
    Err(WalkError::VarintTooLong { max_len: MAX })
}

/// The value of a one-byte zig-zag varint (`b < 0x80`).
#[inline(always)]
fn unzigzag_byte(b: u8) -> i64 {
    let n = i64::from(b);
    (n >> 1) ^ -(n & 1)
}

/// A zig-zag varint (5 bytes, 32 bits).
#[inline(always)]
fn varint(buf: &mut &[u8]) -> Result<i32, WalkError> {
    // Five bytes with 4 bits in the last carry exactly 32 bits of zig-zag: always in range.
    zigzag::<5, 0x0f>(buf).map(|v| v as i32)
}

/// A zig-zag varlong (10 bytes, 64 bits).
#[inline(always)]
fn varlong(buf: &mut &[u8]) -> Result<i64, WalkError> {
    zigzag::<10, 0x01>(buf)
}

/// Skips `len` bytes (`len >= 0` required).
#[inline(always)]
fn skip(buf: &mut &[u8], len: i32, field: Field) -> Result<(), WalkError> {
    let Ok(n) = usize::try_from(len) else {
        return Err(WalkError::BadLength { field, len });
    };
    match buf.get(n..) {
        Some(rest) => {
            *buf = rest;
            Ok(())
        }
        None => Err(WalkError::LengthExceeds {
            field,
            len,
            left: buf.len(),
        }),
    }
}

/// Takes `len` bytes (`len >= 0` required).
#[inline(always)]
fn take<'a>(buf: &mut &'a [u8], len: i32, field: Field) -> Result<&'a [u8], WalkError> {
    let Ok(n) = usize::try_from(len) else {
        return Err(WalkError::BadLength { field, len });
    };
    match buf.split_at_checked(n) {
        Some((taken, rest)) => {
            *buf = rest;
            Ok(taken)
        }
        None => Err(WalkError::LengthExceeds {
            field,
            len,
            left: buf.len(),
        }),
    }
}

/// Skips a `-1 = null` length-prefixed field; returns its length.
#[inline(always)]
fn skip_nullable(buf: &mut &[u8], field: Field) -> Result<i32, WalkError> {
    let len = varint(buf)?;
    if len != -1 {
        skip(buf, len, field)?;
    }
    Ok(len)
}

/// One record: the same checks in the same order as `record::parse_record`.
#[inline]
fn walk_one<'a, F: FnMut(&'a [u8], Option<&'a [u8]>)>(
    data: &mut &'a [u8],
    on_header: &mut F,
) -> Result<RecordSummary, WalkError> {
    let len = varint(data)?;
    let Ok(n) = usize::try_from(len) else {
        return Err(WalkError::BadLength {
            field: Field::Record,
            len,
        });
    };
    let Some((mut body, rest)) = data.split_at_checked(n) else {
        return Err(WalkError::LengthExceeds {
            field: Field::Record,
            len,
            left: data.len(),
        });
    };
    *data = rest;
    let buf = &mut body;
    let (attributes, timestamp_delta, offset_delta, key_length) = match buf.first_chunk::<4>() {
        // The usual shape, one test instead of three: timestamp delta, offset delta and key
        // length each a one-byte varint (deltas within +-63, keys null or under 64 bytes).
        Some(&[attributes, ts, off, key]) if (ts | off | key) < 0x80 => {
            *buf = &buf[4..];
            let key_length = unzigzag_byte(key) as i32;
            if key_length != -1 {
                skip(buf, key_length, Field::Key)?;
            }
            let offset_delta = unzigzag_byte(off) as i32;
            (attributes, unzigzag_byte(ts), offset_delta, key_length)
        }
        _ => {
            let Some((&attributes, tail)) = buf.split_first() else {
                return Err(WalkError::EmptyRecord);
            };
            *buf = tail;
            let timestamp_delta = varlong(buf)?;
            let offset_delta = varint(buf)?;
            let key_length = skip_nullable(buf, Field::Key)?;
            (attributes, timestamp_delta, offset_delta, key_length)
        }
    };
    skip_nullable(buf, Field::Value)?;
    let header_count = varint(buf)?;
    let headers = usize::try_from(header_count)
        .ok()
        .filter(|&h| h <= HEADERS_PER_RECORD_MAX)
        .ok_or(WalkError::HeaderCount(header_count))?;
    for _ in 0..headers {
        let key_len = varint(buf)?;
        let key = take(buf, key_len, Field::HeaderKey)?;
        let value_len = varint(buf)?;
        let value = if value_len == -1 {
            None
        } else {
            Some(take(buf, value_len, Field::HeaderValue)?)
        };
        on_header(key, value);
    }
    if !buf.is_empty() {
        return Err(WalkError::Unread {
            len,
            left: buf.len(),
        });
    }
    Ok(RecordSummary {
        attributes: attributes as i8,
        timestamp_delta,
        offset_delta,
        key_length,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::record::{Header, encode_record, records};
    use crate::varint::write_varint;

    /// Both parsers over the same bytes: the same records, then the same error (or end).
    fn assert_same(data: &[u8], count: i32) {
        let full: Vec<Result<RecordSummary, RecordError>> = records(data, count)
            .map(|r| {
                r.map(|r| RecordSummary {
                    attributes: r.attributes,
                    timestamp_delta: r.timestamp_delta,
                    offset_delta: r.offset_delta,
                    key_length: r.key.map_or(-1, |k| k.len() as i32),
                })
            })
            .collect();
        let walked: Vec<Result<RecordSummary, RecordError>> = walk_records(data, count)
            .map(|r| r.map_err(RecordError::from))
            .collect();
        assert_eq!(walked, full, "count {count}, {} bytes", data.len());
    }

    type Rec = (
        i64,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Vec<(Vec<u8>, Option<Vec<u8>>)>,
    );

    fn section(recs: &[Rec]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, (ts, k, v, hs)) in recs.iter().enumerate() {
            let hs: Vec<Header<'_>> = hs
                .iter()
                .map(|(k, v)| Header {
                    key: k,
                    value: v.as_deref(),
                })
                .collect();
            encode_record(&mut out, *ts, i as i32, k.as_deref(), v.as_deref(), &hs).unwrap();
        }
        out
    }

    fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(any::<u8>(), 0..max)
    }

    fn rec() -> impl Strategy<Value = Rec> {
        (
            prop_oneof![Just(0i64), -1000i64..1000, any::<i64>()],
            prop::option::of(bytes(20)),
            prop::option::of(bytes(300)),
            prop::collection::vec((bytes(8), prop::option::of(bytes(8))), 0..4),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn walk_agrees_with_the_full_parser(recs in prop::collection::vec(rec(), 0..8),
                                            flips in prop::collection::vec((any::<usize>(), 1u8..), 0..3),
                                            cut in any::<usize>(), count_delta in -1i32..2) {
            let good = section(&recs);
            let n = recs.len() as i32;
            assert_same(&good, n);
            assert_same(&good, n + count_delta);
            let walked: Vec<_> = walk_records(&good, n).collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(walked.len(), recs.len());
            for (w, r) in walked.iter().zip(&recs) {
                prop_assert_eq!(w.has_key(), r.1.is_some());
            }
            if !good.is_empty() {
                let mut bad = good.clone();
                for (at, x) in &flips {
                    let i = at % bad.len();
                    bad[i] ^= x;
                }
                assert_same(&bad, n);
                assert_same(&good[..cut % good.len()], n);
            }
        }

        #[test]
        fn next_with_reports_every_header(recs in prop::collection::vec(rec(), 0..6)) {
            let good = section(&recs);
            let mut walk = walk_records(&good, recs.len() as i32);
            for r in &recs {
                let mut seen: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
                let got = walk.next_with(&mut |k: &[u8], v: Option<&[u8]>| {
                    seen.push((k.to_vec(), v.map(<[u8]>::to_vec)))
                });
                prop_assert!(matches!(got, Some(Ok(_))));
                prop_assert_eq!(&seen, &r.3);
            }
            let end = walk.next_with(&mut |_, _| ());
            prop_assert!(end.is_none());
        }

        #[test]
        fn walk_agrees_on_garbage(data in bytes(64), count in -2i32..6) {
            assert_same(&data, count);
        }
    }

    #[test]
    fn known_malformed_records() {
        let with_count = |body: &[u8]| {
            let mut rec = Vec::new();
            write_varint(&mut rec, body.len() as i32);
            rec.extend_from_slice(body);
            rec
        };
        let mut absurd = vec![0x00, 0x00, 0x00, 0x01, 0x01];
        write_varint(&mut absurd, i32::MAX);
        let mut many = vec![0x00, 0x00, 0x00, 0x01, 0x01];
        write_varint(&mut many, 1000);
        let cases: Vec<Vec<u8>> = vec![
            vec![0x08, 0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00], // key length -2
            vec![0x0a, 0x00, 0x00, 0x00, 0x01, 0x01],             // short body
            vec![0x7e, 0x00],                                     // longer than the data
            vec![0x01],                                           // negative record length
            vec![0x00],                                           // empty record
            with_count(&absurd),
            with_count(&many),
            with_count(&[0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x01]), // null header key
            with_count(&[
                0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x01, 0x00,
            ]),
            with_count(&[
                0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
            ]),
            with_count(&[0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x07]), // one unread byte
            vec![0x80, 0x80],                                        // truncated length varint
        ];
        for c in &cases {
            assert_same(c, 1);
            let e = walk_records(c, 1).next().unwrap().unwrap_err();
            assert!(
                matches!(RecordError::from(e), RecordError::MalformedRecord(_)),
                "{e}"
            );
        }
        assert_eq!(
            walk_records(&[], 2).next(),
            Some(Err(WalkError::CountMismatch {
                header: 2,
                found: 0
            }))
        );
        assert_eq!(
            walk_records(&[], -1).next(),
            Some(Err(WalkError::InvalidCount(-1)))
        );
        assert!(walk_records(&[], 0).next().is_none());
    }
}
