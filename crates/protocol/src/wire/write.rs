//! Encoding primitives: the [`WireWrite`] sink trait, length-prefixed writers and size helpers.
//!
//! Sizes are computed without writing (`*_size`), so a frame's length prefix can be written
//! before its body and tagged fields can be prefixed with their size.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use crate::{EncodeError, Records};

/// Where encoded bytes go. Implemented by `BytesMut` and `Vec<u8>` (in-memory; a file-backed
/// [`Records::File`] is an error there) and by [`crate::ChunkedWriter`] (keeps file regions and
/// large byte values as separate chunks).
pub trait WireWrite {
    fn put_slice(&mut self, b: &[u8]);

    /// A byte value; sinks that can hold shared `Bytes` without copying may override.
    fn put_bytes(&mut self, b: &Bytes) {
        self.put_slice(b);
    }

    /// The contents of a `records` field (its length prefix is already written).
    fn put_records(&mut self, r: &Records) -> Result<(), EncodeError>;

    fn put_bool(&mut self, v: bool) {
        self.put_slice(&[u8::from(v)]);
    }
    fn put_int8(&mut self, v: i8) {
        self.put_slice(&v.to_be_bytes());
    }
    fn put_int16(&mut self, v: i16) {
        self.put_slice(&v.to_be_bytes());
    }
    fn put_uint16(&mut self, v: u16) {
        self.put_slice(&v.to_be_bytes());
    }
    fn put_int32(&mut self, v: i32) {
        self.put_slice(&v.to_be_bytes());
    }
    fn put_uint32(&mut self, v: u32) {
        self.put_slice(&v.to_be_bytes());
    }
    fn put_int64(&mut self, v: i64) {
        self.put_slice(&v.to_be_bytes());
    }
    fn put_float64(&mut self, v: f64) {
        self.put_slice(&v.to_be_bytes());
    }
    fn put_uuid(&mut self, v: Uuid) {
        self.put_slice(v.as_bytes());
    }
    /// Unsigned LEB128 varint.
    fn put_uvarint(&mut self, v: u32) {
        let mut tmp = [0u8; 5];
        let n = encode_unsigned(u64::from(v), &mut tmp);
        self.put_slice(&tmp[..n]);
    }
    /// Unsigned LEB128 varlong.
    fn put_uvarlong(&mut self, v: u64) {
        let mut tmp = [0u8; 10];
        let n = encode_unsigned(v, &mut tmp);
        self.put_slice(&tmp[..n]);
    }
    /// Zig-zag signed varint.
    fn put_varint(&mut self, v: i32) {
        self.put_uvarint(((v << 1) ^ (v >> 31)) as u32);
    }
    /// Zig-zag signed varlong.
    fn put_varlong(&mut self, v: i64) {
        self.put_uvarlong(((v << 1) ^ (v >> 63)) as u64);
    }
}

fn encode_unsigned(mut v: u64, out: &mut [u8]) -> usize {
    let mut i = 0;
    while v >= 0x80 && i + 1 < out.len() {
        out[i] = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

impl WireWrite for BytesMut {
    fn put_slice(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
    fn put_records(&mut self, r: &Records) -> Result<(), EncodeError> {
        match r {
            Records::Bytes(b) => {
                BufMut::put_slice(self, b);
                Ok(())
            }
            Records::File(_) => Err(EncodeError::FileRegionInMemoryEncoder),
        }
    }
}

impl WireWrite for Vec<u8> {
    fn put_slice(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
    fn put_records(&mut self, r: &Records) -> Result<(), EncodeError> {
        match r {
            Records::Bytes(b) => {
                self.extend_from_slice(b);
                Ok(())
            }
            Records::File(_) => Err(EncodeError::FileRegionInMemoryEncoder),
        }
    }
}

/// Bytes taken by `v` as an unsigned varint.
pub fn uvarint_size(v: u32) -> usize {
    usize_uvarint_size(v as usize)
}

/// Bytes taken by `v` as an unsigned varint (sizes computed in `usize`).
pub fn usize_uvarint_size(v: usize) -> usize {
    let bits = usize::BITS - (v | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// `n` as a `u32` (a tagged field's size), or `TooLong`.
pub fn len_u32(n: usize, field: &'static str) -> Result<u32, EncodeError> {
    u32::try_from(n).map_err(|_| EncodeError::TooLong { field, length: n })
}

/// Writes a length prefix (`None` = null). `short`: classic `int16` (strings), else `int32`.
fn put_len<W: WireWrite + ?Sized>(
    out: &mut W,
    len: Option<usize>,
    compact: bool,
    short: bool,
    field: &'static str,
) -> Result<(), EncodeError> {
    let too_long = |length| EncodeError::TooLong { field, length };
    match (len, compact, short) {
        (None, true, _) => out.put_uvarint(0),
        (None, false, true) => out.put_int16(-1),
        (None, false, false) => out.put_int32(-1),
        (Some(n), true, _) => {
            let v = u32::try_from(n)
                .ok()
                .and_then(|v| v.checked_add(1))
                .ok_or(too_long(n))?;
            out.put_uvarint(v);
        }
        (Some(n), false, true) => out.put_int16(i16::try_from(n).map_err(|_| too_long(n))?),
        (Some(n), false, false) => out.put_int32(i32::try_from(n).map_err(|_| too_long(n))?),
    }
    Ok(())
}

fn len_prefix_size(len: Option<usize>, compact: bool, short: bool) -> usize {
    match (compact, short) {
        (true, _) => usize_uvarint_size(len.map_or(0, |n| n + 1)),
        (false, true) => 2,
        (false, false) => 4,
    }
}

fn null_value(nullable: bool, field: &'static str) -> Result<(), EncodeError> {
    if nullable {
        Ok(())
    } else {
        Err(EncodeError::NullNotAllowed { field })
    }
}

pub fn write_string<W: WireWrite + ?Sized>(
    out: &mut W,
    s: &str,
    compact: bool,
    field: &'static str,
) -> Result<(), EncodeError> {
    if s.len() > i16::MAX as usize {
        return Err(EncodeError::TooLong {
            field,
            length: s.len(),
        });
    }
    put_len(out, Some(s.len()), compact, true, field)?;
    out.put_slice(s.as_bytes());
    Ok(())
}

pub fn write_nullable_string<W: WireWrite + ?Sized>(
    out: &mut W,
    s: Option<&str>,
    compact: bool,
    nullable: bool,
    field: &'static str,
) -> Result<(), EncodeError> {
    match s {
        Some(s) => write_string(out, s, compact, field),
        None => {
            null_value(nullable, field)?;
            put_len(out, None, compact, true, field)
        }
    }
}

pub fn write_bytes<W: WireWrite + ?Sized>(
    out: &mut W,
    b: &Bytes,
    compact: bool,
    field: &'static str,
) -> Result<(), EncodeError> {
    put_len(out, Some(b.len()), compact, false, field)?;
    out.put_bytes(b);
    Ok(())
}

pub fn write_nullable_bytes<W: WireWrite + ?Sized>(
    out: &mut W,
    b: Option<&Bytes>,
    compact: bool,
    nullable: bool,
    field: &'static str,
) -> Result<(), EncodeError> {
    match b {
        Some(b) => write_bytes(out, b, compact, field),
        None => {
            null_value(nullable, field)?;
            put_len(out, None, compact, false, field)
        }
    }
}

pub fn write_records<W: WireWrite + ?Sized>(
    out: &mut W,
    r: &Records,
    compact: bool,
    field: &'static str,
) -> Result<(), EncodeError> {
    put_len(out, Some(r.len()), compact, false, field)?;
    out.put_records(r)
}

pub fn write_nullable_records<W: WireWrite + ?Sized>(
    out: &mut W,
    r: Option<&Records>,
    compact: bool,
    nullable: bool,
    field: &'static str,
) -> Result<(), EncodeError> {
    match r {
        Some(r) => write_records(out, r, compact, field),
        None => {
            null_value(nullable, field)?;
            put_len(out, None, compact, false, field)
        }
    }
}

pub fn write_array<W: WireWrite + ?Sized, T>(
    out: &mut W,
    items: &[T],
    compact: bool,
    field: &'static str,
    mut elem: impl FnMut(&mut W, &T) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    put_len(out, Some(items.len()), compact, false, field)?;
    for item in items {
        elem(out, item)?;
    }
    Ok(())
}

pub fn write_nullable_array<W: WireWrite + ?Sized, T>(
    out: &mut W,
    items: Option<&[T]>,
    compact: bool,
    nullable: bool,
    field: &'static str,
    elem: impl FnMut(&mut W, &T) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    match items {
        Some(items) => write_array(out, items, compact, field, elem),
        None => {
            null_value(nullable, field)?;
            put_len(out, None, compact, false, field)
        }
    }
}

pub fn string_size(s: &str, compact: bool) -> usize {
    len_prefix_size(Some(s.len()), compact, true) + s.len()
}

pub fn nullable_string_size(s: Option<&str>, compact: bool) -> usize {
    s.map_or(len_prefix_size(None, compact, true), |s| {
        string_size(s, compact)
    })
}

/// Size of a bytes/records value of `len` bytes, prefix included.
pub fn bytes_size(len: usize, compact: bool) -> usize {
    len_prefix_size(Some(len), compact, false) + len
}

pub fn nullable_bytes_size(len: Option<usize>, compact: bool) -> usize {
    len.map_or(len_prefix_size(None, compact, false), |n| {
        bytes_size(n, compact)
    })
}

pub fn array_size<T>(items: &[T], compact: bool, elem: impl Fn(&T) -> usize) -> usize {
    len_prefix_size(Some(items.len()), compact, false) + items.iter().map(elem).sum::<usize>()
}

pub fn nullable_array_size<T>(
    items: Option<&[T]>,
    compact: bool,
    elem: impl Fn(&T) -> usize,
) -> usize {
    items.map_or(len_prefix_size(None, compact, false), |i| {
        array_size(i, compact, elem)
    })
}

/// Size of an array of `len` fixed-size elements of `elem_size` bytes each.
pub fn array_size_fixed(len: usize, compact: bool, elem_size: usize) -> usize {
    len_prefix_size(Some(len), compact, false) + len * elem_size
}

pub fn nullable_array_size_fixed(len: Option<usize>, compact: bool, elem_size: usize) -> usize {
    len.map_or(len_prefix_size(None, compact, false), |n| {
        array_size_fixed(n, compact, elem_size)
    })
}
