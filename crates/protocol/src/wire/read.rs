//! Decoding primitives over a `bytes::Bytes` cursor (consumed from the front).

use bytes::{Buf, Bytes};
use uuid::Uuid;

use crate::{DecodeError, Records};

/// The most bytes preallocated for a decoded array, whatever count the input claims; larger
/// arrays grow as their elements actually decode.
const MAX_PREALLOC_BYTES: usize = 1 << 20;

fn need(buf: &Bytes, n: usize) -> Result<(), DecodeError> {
    if buf.remaining() < n {
        Err(DecodeError::Truncated {
            needed: n,
            remaining: buf.remaining(),
        })
    } else {
        Ok(())
    }
}

pub fn read_bool(buf: &mut Bytes) -> Result<bool, DecodeError> {
    need(buf, 1)?;
    Ok(buf.get_u8() != 0)
}

pub fn read_i8(buf: &mut Bytes) -> Result<i8, DecodeError> {
    need(buf, 1)?;
    Ok(buf.get_i8())
}

pub fn read_i16(buf: &mut Bytes) -> Result<i16, DecodeError> {
    need(buf, 2)?;
    Ok(buf.get_i16())
}

pub fn read_u16(buf: &mut Bytes) -> Result<u16, DecodeError> {
    need(buf, 2)?;
    Ok(buf.get_u16())
}

pub fn read_i32(buf: &mut Bytes) -> Result<i32, DecodeError> {
    need(buf, 4)?;
    Ok(buf.get_i32())
}

pub fn read_u32(buf: &mut Bytes) -> Result<u32, DecodeError> {
    need(buf, 4)?;
    Ok(buf.get_u32())
}

pub fn read_i64(buf: &mut Bytes) -> Result<i64, DecodeError> {
    need(buf, 8)?;
    Ok(buf.get_i64())
}

pub fn read_f64(buf: &mut Bytes) -> Result<f64, DecodeError> {
    need(buf, 8)?;
    Ok(buf.get_f64())
}

pub fn read_uuid(buf: &mut Bytes) -> Result<Uuid, DecodeError> {
    need(buf, 16)?;
    let mut b = [0u8; 16];
    buf.copy_to_slice(&mut b);
    Ok(Uuid::from_bytes(b))
}

/// An unsigned LEB128 varint of at most `max_bytes` bytes whose value fits in `bits` bits.
fn read_unsigned(buf: &mut Bytes, max_bytes: usize, bits: u32) -> Result<u64, DecodeError> {
    let mut value: u64 = 0;
    for i in 0..max_bytes {
        need(buf, 1)?;
        let byte = buf.get_u8();
        let shift = 7 * i as u32;
        let chunk = u64::from(byte & 0x7f);
        if shift + 7 > bits && chunk >> (bits - shift) != 0 {
            return Err(DecodeError::VarintTooLong { max_bytes });
        }
        value |= chunk << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::VarintTooLong { max_bytes })
}

/// Unsigned varint (at most 5 bytes, value within `u32`).
pub fn read_uvarint(buf: &mut Bytes) -> Result<u32, DecodeError> {
    read_unsigned(buf, 5, 32).map(|v| v as u32)
}

/// Unsigned varlong (at most 10 bytes, value within `u64`).
pub fn read_uvarlong(buf: &mut Bytes) -> Result<u64, DecodeError> {
    read_unsigned(buf, 10, 64)
}

/// Zig-zag signed varint (`int32`).
pub fn read_varint(buf: &mut Bytes) -> Result<i32, DecodeError> {
    let v = read_uvarint(buf)?;
    Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
}

/// Zig-zag signed varlong (`int64`).
pub fn read_varlong(buf: &mut Bytes) -> Result<i64, DecodeError> {
    let v = read_uvarlong(buf)?;
    Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
}

/// A length prefix: `None` for null. `short` selects the classic `int16` (strings) over `int32`.
fn read_len(
    buf: &mut Bytes,
    compact: bool,
    short: bool,
    field: &'static str,
) -> Result<Option<usize>, DecodeError> {
    let len: i64 = if compact {
        i64::from(read_uvarint(buf)?) - 1
    } else if short {
        i64::from(read_i16(buf)?)
    } else {
        i64::from(read_i32(buf)?)
    };
    match len {
        -1 => Ok(None),
        l if l < 0 => Err(DecodeError::InvalidLength { field, length: l }),
        l => Ok(Some(l as usize)),
    }
}

/// Splits `len` bytes off the front, checking they are there.
fn take(buf: &mut Bytes, len: usize, field: &'static str) -> Result<Bytes, DecodeError> {
    if len > buf.remaining() {
        return Err(DecodeError::LengthExceedsInput {
            field,
            length: len,
            remaining: buf.remaining(),
        });
    }
    Ok(buf.split_to(len))
}

fn null_check<T>(
    v: Option<T>,
    nullable: bool,
    field: &'static str,
) -> Result<Option<T>, DecodeError> {
    if v.is_none() && !nullable {
        Err(DecodeError::UnexpectedNull { field })
    } else {
        Ok(v)
    }
}

pub fn read_nullable_string(
    buf: &mut Bytes,
    compact: bool,
    nullable: bool,
    field: &'static str,
) -> Result<Option<String>, DecodeError> {
    let Some(len) = null_check(read_len(buf, compact, true, field)?, nullable, field)? else {
        return Ok(None);
    };
    if len > i16::MAX as usize {
        return Err(DecodeError::InvalidLength {
            field,
            length: len as i64,
        });
    }
    let raw = take(buf, len, field)?;
    match std::str::from_utf8(&raw) {
        Ok(s) => Ok(Some(s.to_owned())),
        Err(_) => Err(DecodeError::InvalidUtf8 { field }),
    }
}

pub fn read_string(
    buf: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<String, DecodeError> {
    read_nullable_string(buf, compact, false, field)?.ok_or(DecodeError::UnexpectedNull { field })
}

pub fn read_nullable_bytes(
    buf: &mut Bytes,
    compact: bool,
    nullable: bool,
    field: &'static str,
) -> Result<Option<Bytes>, DecodeError> {
    match null_check(read_len(buf, compact, false, field)?, nullable, field)? {
        Some(len) => take(buf, len, field).map(Some),
        None => Ok(None),
    }
}

pub fn read_bytes(
    buf: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<Bytes, DecodeError> {
    read_nullable_bytes(buf, compact, false, field)?.ok_or(DecodeError::UnexpectedNull { field })
}

pub fn read_nullable_records(
    buf: &mut Bytes,
    compact: bool,
    nullable: bool,
    field: &'static str,
) -> Result<Option<Records>, DecodeError> {
    Ok(read_nullable_bytes(buf, compact, nullable, field)?.map(Records::Bytes))
}

pub fn read_records(
    buf: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<Records, DecodeError> {
    read_bytes(buf, compact, field).map(Records::Bytes)
}

/// An array whose elements are read by `elem`. The count must not exceed the bytes remaining
/// (every element takes at least one byte in every schema that can be large), and at most
/// `MAX_PREALLOC_BYTES` are reserved up front.
pub fn read_nullable_array<T>(
    buf: &mut Bytes,
    compact: bool,
    nullable: bool,
    field: &'static str,
    mut elem: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Option<Vec<T>>, DecodeError> {
    let Some(count) = null_check(read_len(buf, compact, false, field)?, nullable, field)? else {
        return Ok(None);
    };
    if count > buf.remaining() {
        return Err(DecodeError::LengthExceedsInput {
            field,
            length: count,
            remaining: buf.remaining(),
        });
    }
    let cap = count.min(MAX_PREALLOC_BYTES / std::mem::size_of::<T>().max(1));
    let mut items = Vec::with_capacity(cap);
    for _ in 0..count {
        items.push(elem(buf)?);
    }
    Ok(Some(items))
}

pub fn read_array<T>(
    buf: &mut Bytes,
    compact: bool,
    field: &'static str,
    elem: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    read_nullable_array(buf, compact, false, field, elem)?
        .ok_or(DecodeError::UnexpectedNull { field })
}

/// The presence marker of a nullable struct: `int8`, negative = null.
pub fn read_struct_marker(buf: &mut Bytes) -> Result<bool, DecodeError> {
    Ok(read_i8(buf)? >= 0)
}

/// The presence marker of a nullable struct inside a tagged field: varint, 0 = null.
pub fn read_tagged_struct_marker(buf: &mut Bytes) -> Result<bool, DecodeError> {
    Ok(read_uvarint(buf)? != 0)
}

/// One tagged field's header and value bytes: `(tag, value)`.
pub fn read_tagged_field(buf: &mut Bytes) -> Result<(u32, Bytes), DecodeError> {
    let tag = read_uvarint(buf)?;
    let size = read_uvarint(buf)? as usize;
    Ok((tag, take(buf, size, "tagged field")?))
}

/// A known tagged field's value must be exactly its declared size.
pub fn finish_tagged_field(data: &Bytes, field: &'static str) -> Result<(), DecodeError> {
    if data.is_empty() {
        Ok(())
    } else {
        Err(DecodeError::TaggedFieldSize {
            field,
            extra: data.len(),
        })
    }
}

/// Skips a tagged-field section none of whose tags are known.
pub fn skip_tagged_fields(buf: &mut Bytes) -> Result<(), DecodeError> {
    let count = read_uvarint(buf)?;
    for _ in 0..count {
        read_tagged_field(buf)?;
    }
    Ok(())
}
