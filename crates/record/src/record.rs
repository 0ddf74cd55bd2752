//! Records inside a (decompressed) v2 records section: borrowed parsing and encoding.
//!
//! Format of one record (varints are zig-zag, see [`crate::varint`]):
//! `length varint | attributes i8 | timestampDelta varlong | offsetDelta varint |
//! keyLength varint | key | valueLength varint | value | headersCount varint |
//! headers[ keyLength varint | key | valueLength varint | value ]`.
//! `length` counts everything after itself. A length of -1 means null (key, value, header
//! value); header keys are never null.
//!
//! Strictness: every record must be exactly as long as its prefix says; lengths below -1,
//! lengths beyond the bytes remaining, a negative header count or more than
//! `HEADERS_PER_RECORD_MAX` headers are [`RecordError::MalformedRecord`]. The iterator yields
//! exactly `count` records and then fails if bytes remain; a short section fails with
//! [`RecordError::RecordCountMismatch`]. After the first error the iterator is exhausted.
//! Nothing is allocated from a count read off the wire beyond what the remaining bytes could
//! hold. Records borrow the section; the section's owner decides its lifetime.

use bytes::BufMut;
use skiff_types::limits::{HEADERS_PER_RECORD_MAX, RECORDS_PER_BATCH_MAX};

use crate::error::RecordError;
use crate::varint::{
    read_varint, read_varlong, varint_size, varlong_size, write_varint, write_varlong,
};

/// One record inside a (decompressed) records section. Zero-copy over that section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// In wire order, duplicate keys preserved.
    pub headers: Vec<Header<'a>>,
}

/// One record header. Keys are UTF-8 by convention but not checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

/// Iterator over the records of a section, see [`records`].
#[derive(Clone, Debug)]
pub struct RecordIter<'a> {
    data: &'a [u8],
    count: i32,
    read: i32,
    done: bool,
}

/// Parses `count` records from a decompressed records section.
pub fn records(data: &[u8], count: i32) -> RecordIter<'_> {
    RecordIter {
        data,
        count,
        read: 0,
        done: false,
    }
}

impl<'a> RecordIter<'a> {
    /// Number of records successfully yielded so far.
    pub fn records_read(&self) -> i32 {
        self.read
    }

    fn step(&mut self) -> Option<Result<Record<'a>, RecordError>> {
        if self.count < 0 || self.count as usize > RECORDS_PER_BATCH_MAX {
            return Some(Err(RecordError::MalformedRecord(format!(
                "invalid record count {}",
                self.count
            ))));
        }
        if self.read == self.count {
            if self.data.is_empty() {
                return None;
            }
            return Some(Err(RecordError::MalformedRecord(format!(
                "{} trailing bytes after {} records",
                self.data.len(),
                self.count
            ))));
        }
        if self.data.is_empty() {
            return Some(Err(RecordError::RecordCountMismatch {
                header: self.count,
                found: self.read,
            }));
        }
        Some(parse_record(&mut self.data))
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Record<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.step();
        match &item {
            Some(Ok(_)) => self.read += 1,
            _ => self.done = true,
        }
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let left = usize::try_from(self.count.saturating_sub(self.read)).unwrap_or(0);
        (0, Some(left.saturating_add(1)))
    }
}

impl std::iter::FusedIterator for RecordIter<'_> {}

fn malformed(what: impl Into<String>) -> RecordError {
    RecordError::MalformedRecord(what.into())
}

/// Reads a `-1 = null` length-prefixed byte string.
fn read_nullable<'a>(buf: &mut &'a [u8], what: &str) -> Result<Option<&'a [u8]>, RecordError> {
    let len = read_varint(buf)?;
    if len == -1 {
        return Ok(None);
    }
    read_bytes(buf, len, what).map(Some)
}

fn read_bytes<'a>(buf: &mut &'a [u8], len: i32, what: &str) -> Result<&'a [u8], RecordError> {
    let n = usize::try_from(len).map_err(|_| malformed(format!("{what} length {len}")))?;
    if n > buf.len() {
        return Err(malformed(format!(
            "{what} length {len} exceeds the {} bytes left in the record",
            buf.len()
        )));
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

fn parse_record<'a>(data: &mut &'a [u8]) -> Result<Record<'a>, RecordError> {
    let len = read_varint(data)?;
    let mut body = read_bytes(data, len, "record")?;
    let buf = &mut body;
    let Some((&attributes, rest)) = buf.split_first() else {
        return Err(malformed("empty record"));
    };
    *buf = rest;
    let timestamp_delta = read_varlong(buf)?;
    let offset_delta = read_varint(buf)?;
    let key = read_nullable(buf, "key")?;
    let value = read_nullable(buf, "value")?;
    let header_count = read_varint(buf)?;
    let header_count = usize::try_from(header_count)
        .ok()
        .filter(|&n| n <= HEADERS_PER_RECORD_MAX)
        .ok_or_else(|| malformed(format!("header count {header_count}")))?;
    // Each header needs at least two bytes (two one-byte varints).
    let mut headers = Vec::with_capacity(header_count.min(buf.len() / 2));
    for _ in 0..header_count {
        let key_len = read_varint(buf)?;
        let key = read_bytes(buf, key_len, "header key")?;
        let value = read_nullable(buf, "header value")?;
        headers.push(Header { key, value });
    }
    if !buf.is_empty() {
        return Err(malformed(format!(
            "record length {len} leaves {} unread bytes",
            buf.len()
        )));
    }
    Ok(Record {
        attributes: attributes as i8,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}

fn len_i32(n: usize, what: &str) -> Result<i32, RecordError> {
    i32::try_from(n).map_err(|_| malformed(format!("{what} of {n} bytes is too long to encode")))
}

fn nullable_size(v: Option<&[u8]>) -> Result<usize, RecordError> {
    Ok(match v {
        None => varint_size(-1),
        Some(b) => varint_size(len_i32(b.len(), "field")?) + b.len(),
    })
}

fn put_nullable<B: BufMut>(out: &mut B, v: Option<&[u8]>) {
    match v {
        None => write_varint(out, -1),
        Some(b) => {
            // Lengths were checked by `encoded_body_size`.
            write_varint(out, b.len() as i32);
            out.put_slice(b);
        }
    }
}

/// Size of a record's body (everything after the length prefix).
fn encoded_body_size(
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header<'_>],
) -> Result<usize, RecordError> {
    let mut n = 1 + varlong_size(timestamp_delta) + varint_size(offset_delta);
    n += nullable_size(key)? + nullable_size(value)?;
    n += varint_size(len_i32(headers.len(), "header list")?);
    for h in headers {
        n += varint_size(len_i32(h.key.len(), "header key")?) + h.key.len();
        n += nullable_size(h.value)?;
    }
    Ok(n)
}

/// Appends one encoded record (attributes 0) to `out`; returns the bytes written.
pub(crate) fn encode_record<B: BufMut>(
    out: &mut B,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header<'_>],
) -> Result<usize, RecordError> {
    let body = encoded_body_size(timestamp_delta, offset_delta, key, value, headers)?;
    let body_i32 = len_i32(body, "record")?;
    write_varint(out, body_i32);
    out.put_u8(0);
    write_varlong(out, timestamp_delta);
    write_varint(out, offset_delta);
    put_nullable(out, key);
    put_nullable(out, value);
    // Header count and lengths were checked by `encoded_body_size`.
    write_varint(out, headers.len() as i32);
    for h in headers {
        write_varint(out, h.key.len() as i32);
        out.put_slice(h.key);
        put_nullable(out, h.value);
    }
    Ok(varint_size(body_i32) + body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(
        ts: i64,
        od: i32,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let n = encode_record(&mut out, ts, od, key, value, headers).unwrap();
        assert_eq!(n, out.len());
        out
    }

    #[test]
    fn known_encoding() {
        // length 11, attrs 0, tsDelta 1, offsetDelta 2, key "k", value null, 1 header "h" -> "v".
        let bytes = enc(
            1,
            2,
            Some(b"k"),
            None,
            &[Header {
                key: b"h",
                value: Some(b"v"),
            }],
        );
        assert_eq!(
            bytes,
            [
                0x16, 0x00, 0x02, 0x04, 0x02, b'k', 0x01, 0x02, 0x02, b'h', 0x02, b'v'
            ]
        );
        let recs: Vec<_> = records(&bytes, 1).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            recs,
            vec![Record {
                attributes: 0,
                timestamp_delta: 1,
                offset_delta: 2,
                key: Some(&b"k"[..]),
                value: None,
                headers: vec![Header {
                    key: b"h",
                    value: Some(b"v")
                }],
            }]
        );
    }

    #[test]
    fn count_mismatches() {
        let mut two = enc(0, 0, None, Some(b"a"), &[]);
        two.extend(enc(0, 1, None, Some(b"b"), &[]));
        assert_eq!(records(&two, 2).count(), 2);
        let mut it = records(&two, 3);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_ok());
        assert_eq!(
            it.next().unwrap().unwrap_err(),
            RecordError::RecordCountMismatch {
                header: 3,
                found: 2
            }
        );
        assert!(it.next().is_none());
        let mut it = records(&two, 1);
        assert!(it.next().unwrap().is_ok());
        assert!(matches!(
            it.next(),
            Some(Err(RecordError::MalformedRecord(_)))
        ));
        assert!(it.next().is_none());
        assert!(matches!(records(&two, -1).next(), Some(Err(_))));
        assert!(records(&[], 0).next().is_none());
    }

    fn first_err(bytes: &[u8]) -> RecordError {
        records(bytes, 1).next().unwrap().unwrap_err()
    }

    #[test]
    fn malformed_records_rejected() {
        // key length -2
        assert!(matches!(
            first_err(&[0x08, 0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00]),
            RecordError::MalformedRecord(_)
        ));
        // record length says 5, body has 4 fields of 1 byte and a missing header count
        assert!(matches!(
            first_err(&[0x0a, 0x00, 0x00, 0x00, 0x01, 0x01]),
            RecordError::MalformedRecord(_)
        ));
        // record length longer than the data
        assert!(matches!(
            first_err(&[0x7e, 0x00]),
            RecordError::MalformedRecord(_)
        ));
        // negative record length
        assert!(matches!(
            first_err(&[0x01]),
            RecordError::MalformedRecord(_)
        ));
        // record length covers more than the fields (one spare byte)
        let mut ok = enc(0, 0, None, None, &[]);
        ok[0] += 2;
        ok.push(0);
        assert!(matches!(first_err(&ok), RecordError::MalformedRecord(_)));
        // header count negative / absurd
        let mut body = vec![0x00, 0x00, 0x00, 0x01, 0x01];
        let mut absurd = Vec::new();
        write_varint(&mut absurd, i32::MAX);
        body.extend(&absurd);
        let mut rec = Vec::new();
        write_varint(&mut rec, body.len() as i32);
        rec.extend(&body);
        assert!(matches!(first_err(&rec), RecordError::MalformedRecord(_)));
        // header count within limit but more than the bytes can hold
        let mut body = vec![0x00, 0x00, 0x00, 0x01, 0x01];
        write_varint(&mut body, 1000);
        let mut rec = Vec::new();
        write_varint(&mut rec, body.len() as i32);
        rec.extend(&body);
        assert!(matches!(first_err(&rec), RecordError::MalformedRecord(_)));
        // null header key
        let mut body = vec![0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x01];
        let mut rec = Vec::new();
        write_varint(&mut rec, body.len() as i32);
        rec.append(&mut body);
        assert!(matches!(first_err(&rec), RecordError::MalformedRecord(_)));
        // varint overflow in the offset delta
        let body = [
            0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x01, 0x00,
        ];
        let mut rec = Vec::new();
        write_varint(&mut rec, body.len() as i32);
        rec.extend(body);
        assert!(matches!(first_err(&rec), RecordError::MalformedRecord(_)));
    }

    #[test]
    fn duplicate_and_null_headers_preserved() {
        let hs = [
            Header {
                key: b"a",
                value: Some(b"1"),
            },
            Header {
                key: b"a",
                value: None,
            },
            Header {
                key: b"",
                value: Some(b""),
            },
        ];
        let bytes = enc(-5, 0, Some(b""), Some(b""), &hs);
        let r = records(&bytes, 1).next().unwrap().unwrap();
        assert_eq!(r.headers, hs);
        assert_eq!(r.key, Some(&b""[..]));
        assert_eq!(r.timestamp_delta, -5);
    }
}
