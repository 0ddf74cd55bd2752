//! The four Kafka codecs, compress and bounded decompress of a whole records section.
//!
//! Formats (what Kafka clients put inside a batch):
//! - gzip: RFC 1952 stream (members may be concatenated), flate2.
//! - snappy: Java clients write xerial framing: a 16-byte header `0x82 "SNAPPY" 0x00`,
//!   int32 version, int32 compatible version, then repeated `[int32 BE length][raw snappy
//!   block]`; librdkafka writes one raw snappy block. We read both (a second xerial header
//!   between blocks, as written by concatenated streams, is skipped) and write xerial with
//!   32 KiB blocks, exactly what the Java client writes.
//! - lz4: the LZ4 frame format. We write what Java's `Lz4BlockOutputStream` writes: 64 KiB
//!   independent blocks, no block or content checksum, no content size. Levels are validated
//!   against Kafka's range (1..=17) but lz4_flex has a single level. Reading goes through
//!   [`crate::lz4`] (blocks decoded by liblz4 straight into the output; `lz4_flex`'s
//!   `FrameDecoder` for unusual frames).
//! - zstd: one or more zstd frames, zstd crate (libzstd).
//!
//! Bounds: decompression writes into one vector (lz4, snappy) or streams through a reader
//! (gzip, zstd, unusual lz4 frames) capped at `max_bytes + 1`, and fails with
//! [`RecordError::DecompressedTooLarge`] when more output appears; no allocation is sized
//! from a length declared in the input without checking it against `max_bytes` first.
//! Pure functions, thread-safe.

use std::io::{Read, Write};

use crate::error::RecordError;

/// Batch compression codec (attribute bits 0..2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    None = 0,
    Gzip = 1,
    Snappy = 2,
    Lz4 = 3,
    Zstd = 4,
}

impl Compression {
    /// All codecs, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec named by the low three bits of a batch's attributes.
    pub fn from_attributes(attrs: i16) -> Result<Self, RecordError> {
        Self::from_id((attrs & 0x07) as u8)
    }

    /// The codec with this id (0..=4).
    pub fn from_id(id: u8) -> Result<Self, RecordError> {
        match id {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            4 => Ok(Compression::Zstd),
            other => Err(RecordError::UnknownCompression(other)),
        }
    }

    /// Kafka's numeric id.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Kafka's name, as in `compression.type`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses Kafka's codec name (`none`, `gzip`, `snappy`, `lz4`, `zstd`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The xerial snappy stream header: magic, version 1, compatible version 1.
const XERIAL_HEADER: [u8; 16] = [
    0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
];
const XERIAL_MAGIC_LEN: usize = 8;
/// Block size the Java client's `SnappyOutputStream` uses.
const XERIAL_BLOCK_BYTES: usize = 32 * 1024;

/// Kafka's gzip level range (`Deflater.BEST_SPEED..=BEST_COMPRESSION`), -1 = default.
const GZIP_LEVELS: std::ops::RangeInclusive<i32> = 1..=9;
/// Kafka's lz4 level range.
const LZ4_LEVELS: std::ops::RangeInclusive<i32> = 1..=17;
/// Kafka's default zstd level.
const ZSTD_LEVEL_DEFAULT: i32 = 3;

fn compress_err(codec: Compression, reason: impl std::fmt::Display) -> RecordError {
    RecordError::Compress {
        codec,
        reason: reason.to_string(),
    }
}

pub(crate) fn decompress_err(codec: Compression, reason: impl std::fmt::Display) -> RecordError {
    RecordError::Decompress {
        codec,
        reason: reason.to_string(),
    }
}

/// Compresses a records section. `level = None` picks the codec's Kafka default.
pub fn compress(
    codec: Compression,
    level: Option<i32>,
    data: &[u8],
) -> Result<Vec<u8>, RecordError> {
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => {
            let level = match level {
                None | Some(-1) => flate2::Compression::default(),
                Some(l) if GZIP_LEVELS.contains(&l) => flate2::Compression::new(l as u32),
                Some(l) => return Err(compress_err(codec, format!("unsupported level {l}"))),
            };
            let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2), level);
            enc.write_all(data).map_err(|e| compress_err(codec, e))?;
            enc.finish().map_err(|e| compress_err(codec, e))
        }
        // Snappy has no levels; a level is ignored (Kafka has no snappy level config).
        Compression::Snappy => compress_xerial(data),
        Compression::Lz4 => {
            if let Some(l) = level
                && !LZ4_LEVELS.contains(&l)
            {
                return Err(compress_err(codec, format!("unsupported level {l}")));
            }
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(
                info,
                Vec::with_capacity(data.len() / 2 + 64),
            );
            enc.write_all(data).map_err(|e| compress_err(codec, e))?;
            enc.finish().map_err(|e| compress_err(codec, e))
        }
        Compression::Zstd => {
            let level = level.unwrap_or(ZSTD_LEVEL_DEFAULT);
            if !zstd::compression_level_range().contains(&level) {
                return Err(compress_err(codec, format!("unsupported level {level}")));
            }
            zstd::bulk::compress(data, level).map_err(|e| compress_err(codec, e))
        }
    }
}

fn compress_xerial(data: &[u8]) -> Result<Vec<u8>, RecordError> {
    let codec = Compression::Snappy;
    let blocks = data.len().div_ceil(XERIAL_BLOCK_BYTES);
    let mut out = Vec::with_capacity(
        XERIAL_HEADER.len() + blocks * (4 + snap::raw::max_compress_len(XERIAL_BLOCK_BYTES)),
    );
    out.extend_from_slice(&XERIAL_HEADER);
    let mut enc = snap::raw::Encoder::new();
    for chunk in data.chunks(XERIAL_BLOCK_BYTES) {
        let len_pos = out.len();
        out.extend_from_slice(&[0; 4]);
        let start = out.len();
        out.resize(start + snap::raw::max_compress_len(chunk.len()), 0);
        let n = enc
            .compress(chunk, &mut out[start..])
            .map_err(|e| compress_err(codec, e))?;
        out.truncate(start + n);
        let n = u32::try_from(n).map_err(|e| compress_err(codec, e))?;
        out[len_pos..len_pos + 4].copy_from_slice(&n.to_be_bytes());
    }
    Ok(out)
}

/// Decompresses a records section, failing with [`RecordError::DecompressedTooLarge`] as soon
/// as the output would exceed `max_bytes`.
pub fn decompress(
    codec: Compression,
    data: &[u8],
    max_bytes: usize,
) -> Result<Vec<u8>, RecordError> {
    match codec {
        Compression::None => {
            if data.len() > max_bytes {
                return Err(RecordError::DecompressedTooLarge { limit: max_bytes });
            }
            Ok(data.to_vec())
        }
        Compression::Gzip => read_bounded(
            codec,
            flate2::read::MultiGzDecoder::new(data),
            data.len(),
            max_bytes,
        ),
        Compression::Snappy => decompress_snappy(data, max_bytes),
        Compression::Lz4 => crate::lz4::decompress_lz4(data, max_bytes),
        Compression::Zstd => {
            let dec = zstd::stream::read::Decoder::with_buffer(data)
                .map_err(|e| decompress_err(codec, e))?;
            read_bounded(codec, dec, data.len(), max_bytes)
        }
    }
}

/// Drains `reader` into a vector, reading at most `max_bytes + 1` bytes.
pub(crate) fn read_bounded<R: Read>(
    codec: Compression,
    reader: R,
    compressed_len: usize,
    max_bytes: usize,
) -> Result<Vec<u8>, RecordError> {
    let cap = compressed_len.saturating_mul(4).min(max_bytes).min(1 << 20);
    let mut out = Vec::with_capacity(cap);
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| decompress_err(codec, e))?;
    if out.len() > max_bytes {
        return Err(RecordError::DecompressedTooLarge { limit: max_bytes });
    }
    Ok(out)
}

fn decompress_snappy(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, RecordError> {
    if data.len() >= XERIAL_MAGIC_LEN
        && data[..XERIAL_MAGIC_LEN] == XERIAL_HEADER[..XERIAL_MAGIC_LEN]
    {
        decompress_xerial(data, max_bytes)
    } else {
        let mut out = Vec::new();
        snappy_raw_into(data, max_bytes, &mut out)?;
        Ok(out)
    }
}

/// Appends one raw snappy block to `out`, keeping `out.len() <= max_bytes`.
fn snappy_raw_into(block: &[u8], max_bytes: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    let codec = Compression::Snappy;
    let len = snap::raw::decompress_len(block).map_err(|e| decompress_err(codec, e))?;
    if len > max_bytes.saturating_sub(out.len()) {
        return Err(RecordError::DecompressedTooLarge { limit: max_bytes });
    }
    let start = out.len();
    out.resize(start + len, 0);
    let n = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|e| decompress_err(codec, e))?;
    out.truncate(start + n);
    Ok(())
}

fn decompress_xerial(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, RecordError> {
    let codec = Compression::Snappy;
    if data.len() < XERIAL_HEADER.len() {
        return Err(decompress_err(codec, "truncated xerial header"));
    }
    let mut rest = &data[XERIAL_HEADER.len()..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        // Concatenated xerial streams: a new header may start at a block boundary.
        if rest.len() >= XERIAL_MAGIC_LEN
            && rest[..XERIAL_MAGIC_LEN] == XERIAL_HEADER[..XERIAL_MAGIC_LEN]
        {
            if rest.len() < XERIAL_HEADER.len() {
                return Err(decompress_err(codec, "truncated xerial header"));
            }
            rest = &rest[XERIAL_HEADER.len()..];
            continue;
        }
        if rest.len() < 4 {
            return Err(decompress_err(codec, "truncated xerial block length"));
        }
        let len = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let len = usize::try_from(len)
            .map_err(|_| decompress_err(codec, format!("negative xerial block length {len}")))?;
        rest = &rest[4..];
        if len > rest.len() {
            return Err(decompress_err(
                codec,
                format!("xerial block of {len} bytes, {} remain", rest.len()),
            ));
        }
        let (block, tail) = rest.split_at(len);
        snappy_raw_into(block, max_bytes, &mut out)?;
        rest = tail;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in Compression::ALL {
            for len in [
                0,
                1,
                100,
                XERIAL_BLOCK_BYTES,
                XERIAL_BLOCK_BYTES + 1,
                200_000,
            ] {
                let data = sample(len);
                let c = compress(codec, None, &data).unwrap();
                assert_eq!(decompress(codec, &c, len).unwrap(), data, "{codec:?} {len}");
            }
        }
    }

    #[test]
    fn levels_validated() {
        assert!(compress(Compression::Gzip, Some(9), b"x").is_ok());
        assert!(compress(Compression::Gzip, Some(-1), b"x").is_ok());
        assert!(compress(Compression::Gzip, Some(10), b"x").is_err());
        assert!(compress(Compression::Gzip, Some(0), b"x").is_err());
        assert!(compress(Compression::Lz4, Some(17), b"x").is_ok());
        assert!(compress(Compression::Lz4, Some(18), b"x").is_err());
        assert!(compress(Compression::Zstd, Some(22), b"x").is_ok());
        assert!(compress(Compression::Zstd, Some(23), b"x").is_err());
        assert!(compress(Compression::Snappy, Some(1), b"x").is_ok());
    }

    #[test]
    fn decompression_is_bounded() {
        let zeros = vec![0u8; 4 << 20];
        for codec in Compression::ALL {
            let c = compress(codec, None, &zeros).unwrap();
            assert_eq!(
                decompress(codec, &c, (1 << 20) - 1),
                Err(RecordError::DecompressedTooLarge {
                    limit: (1 << 20) - 1
                }),
                "{codec:?}"
            );
            assert_eq!(
                decompress(codec, &c, zeros.len()).unwrap().len(),
                zeros.len()
            );
            assert!(decompress(codec, &c, zeros.len() - 1).is_err());
        }
    }

    #[test]
    fn snappy_reads_raw_and_xerial() {
        let data = sample(100_000);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, data.len()).unwrap(),
            data
        );
        assert_eq!(
            decompress(Compression::Snappy, &raw, data.len() - 1),
            Err(RecordError::DecompressedTooLarge {
                limit: data.len() - 1
            })
        );

        let x = compress(Compression::Snappy, None, &data).unwrap();
        assert_eq!(x[..16], XERIAL_HEADER);
        // Header, then blocks of at most 32 KiB each: 100_000 bytes -> 4 blocks.
        let mut rest = &x[16..];
        let mut blocks = 0;
        while !rest.is_empty() {
            let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            rest = &rest[4 + n..];
            blocks += 1;
        }
        assert_eq!(blocks, 4);

        // Two concatenated xerial streams decode to the concatenation.
        let mut cat = x.clone();
        cat.extend_from_slice(&compress(Compression::Snappy, None, b"tail").unwrap());
        let mut expect = data.clone();
        expect.extend_from_slice(b"tail");
        assert_eq!(
            decompress(Compression::Snappy, &cat, usize::MAX).unwrap(),
            expect
        );

        // Header only = empty; truncated pieces are errors, not panics.
        assert_eq!(
            decompress(Compression::Snappy, &XERIAL_HEADER, 10).unwrap(),
            b""
        );
        assert!(decompress(Compression::Snappy, &XERIAL_HEADER[..12], 10).is_err());
        assert!(decompress(Compression::Snappy, &x[..x.len() - 1], usize::MAX).is_err());
        let mut neg = XERIAL_HEADER.to_vec();
        neg.extend_from_slice(&(-5i32).to_be_bytes());
        assert!(decompress(Compression::Snappy, &neg, 100).is_err());
    }

    #[test]
    fn lz4_frame_matches_java_layout() {
        let c = compress(Compression::Lz4, None, b"hello hello hello").unwrap();
        // Magic 0x184D2204 (LE), FLG = version 01 + block independence, BD = 64 KiB.
        assert_eq!(&c[..4], &[0x04, 0x22, 0x4d, 0x18]);
        assert_eq!(c[4], 0x60);
        assert_eq!(c[5], 0x40);
    }

    #[test]
    fn garbage_is_an_error() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert!(
                decompress(codec, b"\xff\xfe\xfd\xfc\xfb\xfa", 1000).is_err(),
                "{codec:?}"
            );
            let good = compress(codec, None, &sample(5000)).unwrap();
            // Cut in half: must fail cleanly.
            assert!(
                decompress(codec, &good[..good.len() / 2], 10_000).is_err(),
                "{codec:?}"
            );
        }
    }

    #[test]
    fn names_and_ids() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_id(c.id()).unwrap(), c);
            assert_eq!(Compression::from_name(c.name()), Some(c));
            assert_eq!(
                Compression::from_attributes(0x18 | i16::from(c.id())).unwrap(),
                c
            );
        }
        for id in 5..8 {
            assert_eq!(
                Compression::from_id(id),
                Err(RecordError::UnknownCompression(id))
            );
        }
    }
}
