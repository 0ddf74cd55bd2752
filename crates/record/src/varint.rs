//! Kafka's variable-length integers (protobuf style), used inside v2 records and by the
//! flexible-version protocol encoding.
//!
//! Format: little-endian groups of 7 bits, high bit = "more bytes follow". Signed values are
//! zig-zag mapped first (`0,-1,1,-2,.. -> 0,1,2,3,..`), so small magnitudes stay short.
//! An `i32`/`u32` takes at most 5 bytes, an `i64` at most 10.
//!
//! Strictness: a sixth (eleventh) byte is rejected, and so are bits in the last allowed byte
//! that would not fit the target width (Kafka's Java reader silently drops those; no conforming
//! encoder writes them). Reads are generic over [`bytes::Buf`] (`&[u8]`, `Bytes`, ...) and
//! advance it; on error the reader may have been advanced partially. Writes are generic over
//! [`bytes::BufMut`] (`Vec<u8>`, `BytesMut`, ...). Pure functions, thread-safe.

use bytes::{Buf, BufMut};

use crate::error::RecordError;

/// Maximum encoded size of a 32-bit varint.
pub const VARINT_BYTES_MAX: usize = 5;
/// Maximum encoded size of a 64-bit varlong.
pub const VARLONG_BYTES_MAX: usize = 10;

/// Reads an unsigned LEB128 value of at most `max_len` bytes whose last byte may only use the
/// bits in `last_mask`.
fn read_raw<B: Buf>(buf: &mut B, max_len: usize, last_mask: u8) -> Result<u64, RecordError> {
    let mut value = 0u64;
    for i in 0..max_len {
        if !buf.has_remaining() {
            return Err(RecordError::MalformedRecord(format!(
                "truncated varint after {i} bytes"
            )));
        }
        let b = buf.get_u8();
        if i + 1 == max_len {
            if b & 0x80 != 0 {
                return Err(RecordError::MalformedRecord(format!(
                    "varint longer than {max_len} bytes"
                )));
            }
            if b & !last_mask != 0 {
                return Err(RecordError::MalformedRecord(format!(
                    "varint overflows {} bits",
                    if max_len == VARINT_BYTES_MAX { 32 } else { 64 }
                )));
            }
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    // The loop always returns: the last iteration either errors or has no continuation bit.
    Err(RecordError::MalformedRecord("varint too long".into()))
}

fn write_raw<B: BufMut>(buf: &mut B, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

fn raw_size(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// Reads an unsigned varint (at most 5 bytes, value < 2^32).
pub fn read_unsigned_varint<B: Buf>(buf: &mut B) -> Result<u32, RecordError> {
    // 5 bytes carry 35 bits; only the low 4 bits of the fifth byte fit in 32.
    read_raw(buf, VARINT_BYTES_MAX, 0x0f).map(|v| v as u32)
}

/// Reads a zig-zag varint (`sint32`).
pub fn read_varint<B: Buf>(buf: &mut B) -> Result<i32, RecordError> {
    let n = read_unsigned_varint(buf)?;
    Ok(((n >> 1) as i32) ^ -((n & 1) as i32))
}

/// Reads a zig-zag varlong (`sint64`, at most 10 bytes).
pub fn read_varlong<B: Buf>(buf: &mut B) -> Result<i64, RecordError> {
    // 10 bytes carry 70 bits; only the lowest bit of the tenth byte fits in 64.
    let n = read_raw(buf, VARLONG_BYTES_MAX, 0x01)?;
    Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
}

/// Writes an unsigned varint.
pub fn write_unsigned_varint<B: BufMut>(buf: &mut B, v: u32) {
    write_raw(buf, u64::from(v));
}

/// Writes a zig-zag varint.
pub fn write_varint<B: BufMut>(buf: &mut B, v: i32) {
    write_unsigned_varint(buf, zigzag32(v));
}

/// Writes a zig-zag varlong.
pub fn write_varlong<B: BufMut>(buf: &mut B, v: i64) {
    write_raw(buf, zigzag64(v));
}

/// Encoded size of an unsigned varint.
pub fn unsigned_varint_size(v: u32) -> usize {
    raw_size(u64::from(v))
}

/// Encoded size of a zig-zag varint.
pub fn varint_size(v: i32) -> usize {
    unsigned_varint_size(zigzag32(v))
}

/// Encoded size of a zig-zag varlong.
pub fn varlong_size(v: i64) -> usize {
    raw_size(zigzag64(v))
}

fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc32(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, v);
        out
    }

    fn enc64(v: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varlong(&mut out, v);
        out
    }

    #[test]
    fn varint_known_encodings() {
        let table: &[(i32, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-2, &[0x03]),
            (63, &[0x7e]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (300, &[0xd8, 0x04]),
            (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for (v, bytes) in table {
            assert_eq!(enc32(*v), *bytes, "encode {v}");
            assert_eq!(varint_size(*v), bytes.len(), "size {v}");
            let mut s: &[u8] = bytes;
            assert_eq!(read_varint(&mut s).unwrap(), *v, "decode {v}");
            assert!(s.is_empty());
        }
    }

    #[test]
    fn varlong_known_encodings() {
        let table: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (i64::from(i32::MAX), &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i64::from(i32::MIN), &[0xff, 0xff, 0xff, 0xff, 0x0f]),
            (
                i64::MAX,
                &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
            (
                i64::MIN,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for (v, bytes) in table {
            assert_eq!(enc64(*v), *bytes, "encode {v}");
            assert_eq!(varlong_size(*v), bytes.len(), "size {v}");
            let mut s: &[u8] = bytes;
            assert_eq!(read_varlong(&mut s).unwrap(), *v, "decode {v}");
            assert!(s.is_empty());
        }
    }

    #[test]
    fn unsigned_varint_known_encodings() {
        let table: &[(u32, &[u8])] = &[
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (16_383, &[0xff, 0x7f]),
            (16_384, &[0x80, 0x80, 0x01]),
            (u32::MAX, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for (v, bytes) in table {
            let mut out = Vec::new();
            write_unsigned_varint(&mut out, *v);
            assert_eq!(out, *bytes, "encode {v}");
            assert_eq!(unsigned_varint_size(*v), bytes.len());
            let mut s: &[u8] = bytes;
            assert_eq!(read_unsigned_varint(&mut s).unwrap(), *v);
        }
    }

    #[test]
    fn overflow_and_truncation_rejected() {
        // Six bytes for a varint.
        let mut s: &[u8] = &[0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert!(matches!(
            read_varint(&mut s),
            Err(RecordError::MalformedRecord(_))
        ));
        // Fifth byte carrying bits beyond 32.
        let mut s: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0x1f];
        assert!(read_varint(&mut s).is_err());
        let mut s: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0x10];
        assert!(read_unsigned_varint(&mut s).is_err());
        // Eleven bytes for a varlong.
        let mut s: &[u8] = &[
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
        ];
        assert!(read_varlong(&mut s).is_err());
        // Tenth byte carrying bits beyond 64.
        let mut s: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(read_varlong(&mut s).is_err());
        // A ten-byte varint is an overflow too.
        let mut s: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert!(read_varint(&mut s).is_err());
        // Truncated.
        for bytes in [&[][..], &[0x80][..], &[0xff, 0xff][..]] {
            let mut s = bytes;
            assert!(read_varint(&mut s).is_err());
            let mut s = bytes;
            assert!(read_varlong(&mut s).is_err());
        }
        // Non-canonical but in-range encodings are accepted (Kafka does too).
        let mut s: &[u8] = &[0x82, 0x00];
        assert_eq!(read_varint(&mut s).unwrap(), 1);
    }

    #[test]
    fn round_trip_ranges() {
        let samples32 = [
            0,
            1,
            -1,
            127,
            128,
            -129,
            1 << 20,
            -(1 << 27),
            i32::MAX,
            i32::MIN,
        ];
        for v in samples32 {
            let b = enc32(v);
            assert_eq!(read_varint(&mut &b[..]).unwrap(), v);
        }
        let samples64 = [0, -1, 1 << 35, -(1 << 50), i64::MAX - 1, i64::MIN + 1];
        for v in samples64 {
            let b = enc64(v);
            assert_eq!(b.len(), varlong_size(v));
            assert_eq!(read_varlong(&mut &b[..]).unwrap(), v);
        }
    }

    #[test]
    fn reads_from_bytes_and_advances() {
        let mut b = bytes::Bytes::from_static(&[0x02, 0xd8, 0x04, 0x07]);
        assert_eq!(read_varint(&mut b).unwrap(), 1);
        assert_eq!(read_varint(&mut b).unwrap(), 300);
        assert_eq!(b.len(), 1);
    }
}
