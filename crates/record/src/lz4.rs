//! Bounded LZ4 *frame* decompression straight into one output vector.
//!
//! Why not just `lz4_flex::frame::FrameDecoder`: it decodes each block into an internal
//! buffer and `Read` copies it out again, with fresh buffers per decoder; for a records
//! section that is most of the cost. Here the frame is parsed by hand and every block is
//! decoded with liblz4's `LZ4_decompress_safe` (the `lz4` crate) directly into its final
//! place; `lz4_flex` stays the encoder and the fallback decoder of unusual frames.
//!
//! Format (<https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md>, all little-endian):
//! `magic 0x184D2204 | FLG | BD | [content size u64] | [dict id u32] | HC |
//! { block size u32 (bit 31 = stored uncompressed) | data | [block xxh32] }* | 0u32 end mark |
//! [content xxh32]`. Only the first frame is read: bytes after it are ignored, as Kafka's
//! `KafkaLZ4BlockInputStream` and `FrameDecoder`'s `Read` (which reports end of stream at the
//! first end mark) do; the batch CRC covers them and the record walk needs none. FLG: version `01` (bits 7-6),
//! independent blocks (5), block checksums (4), content size (3), content checksum (2),
//! reserved (1), dict id (0). BD: block max size in bits 6-4 (4 = 64 KiB .. 7 = 4 MiB).
//! HC = second byte of xxh32(FLG..last descriptor byte).
//!
//! Fast path: frames with the standard magic, version 01, no reserved bits, a known block
//! size, independent blocks, no dictionary id and a correct header checksum (what Kafka's Java
//! client, librdkafka and lz4 writers produce). Everything else (linked blocks, legacy or
//! skippable frames, a bad descriptor) is decoded by `FrameDecoder` over the whole input, so
//! unusual frames behave exactly as before. The fast path verifies block checksums, the
//! content size and the content checksum when present (as `FrameDecoder` does; Kafka's Java
//! reader skips the checksums, but a batch that passed its CRC-32C has them right anyway).
//! It is stricter than `FrameDecoder` on one point: a frame with the standard magic must be
//! whole, descriptor to end mark (`FrameDecoder` accepts input cut at a block boundary or
//! right after the magic; Kafka's reader does not).
//!
//! Bounds: output never exceeds `max_bytes` ([`RecordError::DecompressedTooLarge`] as soon as
//! it would); the initial allocation is the declared content size or the frame's block count
//! times its block size, capped by `max_bytes` and by 256 times the input length (LZ4's
//! largest possible expansion). Pure functions, thread-safe.

use twox_hash::XxHash32;

use crate::compression::{Compression, decompress_err};
use crate::error::RecordError;

const MAGIC: u32 = 0x184D_2204;
const FLG_VERSION_MASK: u8 = 0b1100_0000;
const FLG_VERSION_01: u8 = 0b0100_0000;
const FLG_INDEPENDENT_BLOCKS: u8 = 0b0010_0000;
const FLG_BLOCK_CHECKSUMS: u8 = 0b0001_0000;
const FLG_CONTENT_SIZE: u8 = 0b0000_1000;
const FLG_CONTENT_CHECKSUM: u8 = 0b0000_0100;
const FLG_RESERVED: u8 = 0b0000_0010;
const FLG_DICT_ID: u8 = 0b0000_0001;
const BD_BLOCK_SIZE_MASK: u8 = 0b0111_0000;
const BLOCK_UNCOMPRESSED_BIT: u32 = 0x8000_0000;

/// Why the fast path stopped.
enum Stop {
    /// A frame the fast path does not handle: decode the whole input with `FrameDecoder`.
    Unusual,
    /// A definite error (corrupt, truncated, too large).
    Failed(RecordError),
}

impl From<RecordError> for Stop {
    fn from(e: RecordError) -> Self {
        Stop::Failed(e)
    }
}

fn corrupt(reason: impl std::fmt::Display) -> Stop {
    Stop::Failed(decompress_err(Compression::Lz4, reason))
}

/// A parsed frame descriptor the fast path handles.
struct FrameHeader {
    /// Bytes of magic + descriptor + HC.
    len: usize,
    block_max: usize,
    block_checksums: bool,
    content_checksum: bool,
    content_size: Option<u64>,
}

/// Decompresses the LZ4 frame at the start of a records section, at most `max_bytes`.
pub(crate) fn decompress_lz4(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, RecordError> {
    match decode_frame(data, max_bytes) {
        Ok(out) => Ok(out),
        Err(Stop::Failed(e)) => Err(e),
        Err(Stop::Unusual) => crate::compression::read_bounded(
            Compression::Lz4,
            lz4_flex::frame::FrameDecoder::new(data),
            data.len(),
            max_bytes,
        ),
    }
}

fn decode_frame(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, Stop> {
    let header = parse_header(data)?;
    let rest = &data[header.len..];
    let mut out = Vec::with_capacity(initial_capacity(&header, rest, data.len(), max_bytes));
    // `out[..filled]` is output; `out[filled..]` is zeroed scratch kept for the next block.
    let mut filled = 0usize;
    let rest = decode_blocks(rest, &header, max_bytes, &mut out, &mut filled)?;
    out.truncate(filled);
    if let Some(expected) = header.content_size
        && out.len() as u64 != expected
    {
        return Err(corrupt(format!(
            "frame declares {expected} content bytes, holds {}",
            out.len()
        )));
    }
    if header.content_checksum {
        let (stored, _) =
            take_u32(rest).ok_or_else(|| corrupt("frame truncated before its content checksum"))?;
        if XxHash32::oneshot(0, &out) != stored {
            return Err(corrupt("content checksum mismatch"));
        }
    }
    Ok(out)
}

/// The output reservation: the declared content size, else block count x block size; capped
/// by `max_bytes` and by 256 x the input length (LZ4 expands at most ~255:1, so a short input
/// cannot reserve much whatever it declares).
fn initial_capacity(
    header: &FrameHeader,
    blocks: &[u8],
    input_len: usize,
    max_bytes: usize,
) -> usize {
    let estimate = match header.content_size {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => count_blocks(blocks, header.block_checksums).saturating_mul(header.block_max),
    };
    estimate.min(input_len.saturating_mul(256)).min(max_bytes)
}

/// Parses magic + frame descriptor + header checksum; `Unusual` for anything but a standard
/// independent-block frame with a correct descriptor.
fn parse_header(data: &[u8]) -> Result<FrameHeader, Stop> {
    let Some((magic, _)) = take_u32(data) else {
        return Err(Stop::Unusual);
    };
    if magic != MAGIC {
        return Err(Stop::Unusual);
    }
    if data.len() < 7 {
        return Err(corrupt("frame truncated in its descriptor"));
    }
    let (flg, bd) = (data[4], data[5]);
    if flg & FLG_VERSION_MASK != FLG_VERSION_01
        || flg & (FLG_RESERVED | FLG_DICT_ID) != 0
        || flg & FLG_INDEPENDENT_BLOCKS == 0
        || bd & !BD_BLOCK_SIZE_MASK != 0
    {
        return Err(Stop::Unusual);
    }
    let block_max = match (bd & BD_BLOCK_SIZE_MASK) >> 4 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return Err(Stop::Unusual),
    };
    let mut at = 6;
    let content_size = if flg & FLG_CONTENT_SIZE != 0 {
        let Some(b) = data.get(6..14) else {
            return Err(corrupt("frame truncated in its descriptor"));
        };
        at = 14;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    } else {
        None
    };
    let Some(&hc) = data.get(at) else {
        return Err(corrupt("frame truncated in its descriptor"));
    };
    if (XxHash32::oneshot(0, &data[4..at]) >> 8) as u8 != hc {
        return Err(Stop::Unusual);
    }
    Ok(FrameHeader {
        len: at + 1,
        block_max,
        block_checksums: flg & FLG_BLOCK_CHECKSUMS != 0,
        content_checksum: flg & FLG_CONTENT_CHECKSUM != 0,
        content_size,
    })
}

#[inline]
fn take_u32(data: &[u8]) -> Option<(u32, &[u8])> {
    let (head, tail) = data.split_first_chunk::<4>()?;
    Some((u32::from_le_bytes(*head), tail))
}

/// Number of data blocks before the end mark, for sizing the output (stops early on damage;
/// the decoding loop reports it).
fn count_blocks(mut data: &[u8], block_checksums: bool) -> usize {
    let mut n = 0usize;
    while let Some((size, tail)) = take_u32(data) {
        if size == 0 {
            break;
        }
        let len = (size & !BLOCK_UNCOMPRESSED_BIT) as usize + if block_checksums { 4 } else { 0 };
        let Some(next) = tail.get(len..) else {
            break;
        };
        data = next;
        n += 1;
    }
    n.max(1)
}

/// Decodes the blocks of one frame up to and including its end mark into `out[*filled..]`;
/// returns the input after the end mark.
fn decode_blocks<'a>(
    mut data: &'a [u8],
    header: &FrameHeader,
    max_bytes: usize,
    out: &mut Vec<u8>,
    filled: &mut usize,
) -> Result<&'a [u8], Stop> {
    loop {
        let (size, tail) = take_u32(data).ok_or_else(|| corrupt("frame truncated: no end mark"))?;
        if size == 0 {
            return Ok(tail);
        }
        let uncompressed = size & BLOCK_UNCOMPRESSED_BIT != 0;
        let len = (size & !BLOCK_UNCOMPRESSED_BIT) as usize;
        if len > header.block_max {
            return Err(corrupt(format!(
                "block of {len} bytes exceeds the frame's {} byte blocks",
                header.block_max
            )));
        }
        let block = tail
            .get(..len)
            .ok_or_else(|| corrupt(format!("block of {len} bytes truncated")))?;
        data = &tail[len..];
        if header.block_checksums {
            let (stored, tail) =
                take_u32(data).ok_or_else(|| corrupt("block truncated before its checksum"))?;
            data = tail;
            if XxHash32::oneshot(0, block) != stored {
                return Err(corrupt("block checksum mismatch"));
            }
        }
        let room = max_bytes - *filled;
        if uncompressed {
            if len > room {
                return Err(RecordError::DecompressedTooLarge { limit: max_bytes }.into());
            }
            out.truncate(*filled);
            out.extend_from_slice(block);
            *filled += len;
            continue;
        }
        let room = room.min(header.block_max);
        let end = *filled + room;
        if out.len() < end {
            out.resize(end, 0);
        }
        match decode_block(block, &mut out[*filled..end]) {
            Ok(n) => *filled += n,
            // liblz4 reports "output too small" and "malformed" alike; when the room was cut
            // by `max_bytes`, decoding into a whole block's room tells them apart (error path
            // only).
            Err(()) if room < header.block_max => {
                let mut scratch = vec![0u8; header.block_max];
                return Err(match decode_block(block, &mut scratch) {
                    Ok(_) => RecordError::DecompressedTooLarge { limit: max_bytes }.into(),
                    Err(()) => corrupt("malformed lz4 block"),
                });
            }
            Err(()) => return Err(corrupt("malformed lz4 block")),
        }
    }
}

/// One block into `out` with liblz4's `LZ4_decompress_safe` (the reference C decoder, through
/// the `lz4` crate's safe wrapper): never writes past `out`, fails on malformed input or when
/// `out` is too small. It decodes this kind of text about 1.5x faster than `lz4_flex`'s safe
/// decoder (docs/performance.md). Kept out of line so the frame loop stays small.
#[inline(never)]
fn decode_block(block: &[u8], out: &mut [u8]) -> Result<usize, ()> {
    let cap = i32::try_from(out.len()).map_err(|_| ())?;
    lz4::block::decompress_to_buffer(block, Some(cap), out).map_err(|_| ())
}

/// `FrameDecoder` drained into a vector: the fallback, also used by tests as the reference.
#[cfg(test)]
fn frame_decoder(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, RecordError> {
    use std::io::Read;
    let mut out = Vec::new();
    lz4_flex::frame::FrameDecoder::new(data)
        .take((max_bytes as u64).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| decompress_err(Compression::Lz4, e))?;
    if out.len() > max_bytes {
        return Err(RecordError::DecompressedTooLarge { limit: max_bytes });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};

    use super::*;

    /// Log-line-like text: compresses about 2:1 to 4:1.
    fn text(len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 64);
        let mut i = 0u64;
        while out.len() < len {
            i = i
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let line = format!(
                "{{\"ts\":{},\"level\":\"{}\",\"user\":{},\"msg\":\"request {} took {} ms\"}}\n",
                1_700_000_000_000u64 + (i >> 40),
                ["INFO", "WARN", "DEBUG"][(i >> 20) as usize % 3],
                (i >> 33) % 5000,
                (i >> 17) % 100_000,
                (i >> 50) % 900
            );
            out.extend_from_slice(line.as_bytes());
        }
        out.truncate(len);
        out
    }

    /// Incompressible bytes: the encoder stores these blocks uncompressed.
    fn noise(len: usize) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    fn encode(info: FrameInfo, data: &[u8]) -> Vec<u8> {
        let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn independent(size: BlockSize) -> FrameInfo {
        FrameInfo::new()
            .block_size(size)
            .block_mode(BlockMode::Independent)
    }

    /// The fast path decodes `frame` (no fallback) to `want`, and agrees with FrameDecoder.
    fn assert_fast(frame: &[u8], want: &[u8]) {
        let got = match decode_frame(frame, usize::MAX) {
            Ok(v) => v,
            Err(Stop::Unusual) => panic!("fell back to FrameDecoder"),
            Err(Stop::Failed(e)) => panic!("fast path failed: {e}"),
        };
        assert!(got == want, "fast path output differs");
        assert!(frame_decoder(frame, usize::MAX).unwrap() == want);
        assert!(decompress_lz4(frame, want.len()).unwrap() == want);
    }

    #[test]
    fn fast_path_handles_every_standard_frame_option() {
        for len in [0, 1, 1000, 65_536, 65_537, 300_000, 1_100_000] {
            for data in [text(len), noise(len)] {
                for size in [
                    BlockSize::Max64KB,
                    BlockSize::Max256KB,
                    BlockSize::Max1MB,
                    BlockSize::Max4MB,
                ] {
                    let base = independent(size);
                    assert_fast(&encode(base.clone(), &data), &data);
                    let all = base
                        .content_size(Some(data.len() as u64))
                        .block_checksums(true)
                        .content_checksum(true);
                    assert_fast(&encode(all, &data), &data);
                }
            }
        }
    }

    #[test]
    fn content_size_and_checksums_are_verified() {
        let data = text(200_000);
        let info = independent(BlockSize::Max64KB)
            .content_size(Some(data.len() as u64))
            .block_checksums(true)
            .content_checksum(true);
        let good = encode(info, &data);
        assert_fast(&good, &data);
        // FLG has all three bits, the content size follows BD.
        assert_eq!(good[4], 0x40 | 0x20 | 0x10 | 0x08 | 0x04);
        assert_eq!(u64::from_le_bytes(good[6..14].try_into().unwrap()), 200_000);

        // Wrong content size (header checksum fixed so the descriptor stays valid).
        let mut wrong_size = good.clone();
        wrong_size[6..14].copy_from_slice(&199_999u64.to_le_bytes());
        wrong_size[14] = (XxHash32::oneshot(0, &wrong_size[4..14]) >> 8) as u8;
        let e = decompress_lz4(&wrong_size, usize::MAX).unwrap_err();
        assert!(e.to_string().contains("content bytes"), "{e}");
        assert!(frame_decoder(&wrong_size, usize::MAX).is_err());

        // A flipped byte in the first block's checksum.
        let first_block_len = u32::from_le_bytes(good[15..19].try_into().unwrap()) as usize;
        let mut bad_block = good.clone();
        bad_block[19 + first_block_len] ^= 1;
        let e = decompress_lz4(&bad_block, usize::MAX).unwrap_err();
        assert!(e.to_string().contains("block checksum"), "{e}");

        // A flipped byte in the content checksum (the last four bytes).
        let mut bad_content = good.clone();
        let n = bad_content.len();
        bad_content[n - 1] ^= 1;
        let e = decompress_lz4(&bad_content, usize::MAX).unwrap_err();
        assert!(e.to_string().contains("content checksum"), "{e}");

        // A bad header checksum goes to FrameDecoder, which refuses it too.
        let mut bad_hc = good.clone();
        bad_hc[14] ^= 1;
        assert!(matches!(
            decode_frame(&bad_hc, usize::MAX),
            Err(Stop::Unusual)
        ));
        assert!(decompress_lz4(&bad_hc, usize::MAX).is_err());
    }

    #[test]
    fn linked_blocks_fall_back_to_frame_decoder() {
        let data = text(300_000);
        let linked = FrameInfo::new()
            .block_size(BlockSize::Max64KB)
            .block_mode(BlockMode::Linked);
        let frame = encode(linked, &data);
        assert_eq!(frame[4] & FLG_INDEPENDENT_BLOCKS, 0);
        assert!(matches!(
            decode_frame(&frame, usize::MAX),
            Err(Stop::Unusual)
        ));
        assert_eq!(decompress_lz4(&frame, data.len()).unwrap(), data);
        assert_eq!(
            decompress_lz4(&frame, data.len() - 1),
            Err(RecordError::DecompressedTooLarge {
                limit: data.len() - 1
            })
        );
    }

    /// Builds a frame by hand from raw blocks: `(stored_uncompressed, bytes)`.
    fn hand_frame(blocks: &[(bool, &[u8])]) -> Vec<u8> {
        let mut f = MAGIC.to_le_bytes().to_vec();
        f.extend_from_slice(&[0x60, 0x40]);
        f.push((XxHash32::oneshot(0, &f[4..6]) >> 8) as u8);
        for (raw, b) in blocks {
            let bit = if *raw { BLOCK_UNCOMPRESSED_BIT } else { 0 };
            f.extend_from_slice(&(b.len() as u32 | bit).to_le_bytes());
            f.extend_from_slice(b);
        }
        f.extend_from_slice(&0u32.to_le_bytes());
        f
    }

    #[test]
    fn uncompressed_blocks_and_mixed_frames() {
        let a = text(40_000);
        let b = noise(30_000);
        let c = text(50_000);
        let ca = lz4_flex::block::compress(&a);
        let cc = lz4_flex::block::compress(&c);
        let frame = hand_frame(&[(false, &ca), (true, &b), (false, &cc), (true, b"")]);
        let want = [a.as_slice(), &b, &c].concat();
        assert_fast(&frame, &want);
        // The bound applies to stored blocks too.
        let limit = a.len() + b.len() - 1;
        assert_eq!(
            decompress_lz4(&frame, limit),
            Err(RecordError::DecompressedTooLarge { limit })
        );
        // A stored block larger than the block maximum is corrupt.
        let big = noise(65_537);
        let e = decompress_lz4(&hand_frame(&[(true, &big)]), usize::MAX).unwrap_err();
        assert!(e.to_string().contains("exceeds"), "{e}");
    }

    #[test]
    fn bytes_after_the_first_frame_are_ignored() {
        let (a, b) = (text(70_000), noise(5_000));
        let mut two = encode(independent(BlockSize::Max64KB), &a);
        two.extend(encode(
            independent(BlockSize::Max256KB).content_checksum(true),
            &b,
        ));
        // As Kafka's reader and FrameDecoder's Read: the first frame only.
        assert_fast(&two, &a);
        let mut trailing = encode(independent(BlockSize::Max64KB), &a);
        trailing.extend_from_slice(b"junk");
        assert_fast(&trailing, &a);
        // The content checksum is read right after the end mark, not from the tail.
        let mut checked = encode(independent(BlockSize::Max64KB).content_checksum(true), &a);
        checked.extend_from_slice(b"junk");
        assert_fast(&checked, &a);
    }

    #[test]
    fn truncated_frames_are_errors() {
        let data = text(150_000);
        for info in [
            independent(BlockSize::Max64KB),
            independent(BlockSize::Max64KB)
                .content_size(Some(data.len() as u64))
                .block_checksums(true)
                .content_checksum(true),
        ] {
            let frame = encode(info, &data);
            // Every proper non-empty prefix fails (the empty input is an empty section):
            // all cuts in the descriptor and the last 40 bytes, a sample elsewhere.
            let n = frame.len();
            let cuts = (1..40).chain((40..n - 40).step_by(97)).chain(n - 40..n);
            for cut in cuts {
                let r = decompress_lz4(&frame[..cut], usize::MAX);
                assert!(r.is_err(), "prefix of {cut} bytes accepted");
            }
        }
        // Cut exactly before the end mark: FrameDecoder accepts it, the fast path does not.
        let frame = encode(independent(BlockSize::Max64KB), &data);
        let no_end = &frame[..frame.len() - 4];
        assert_eq!(frame_decoder(no_end, usize::MAX).unwrap(), data);
        let e = decompress_lz4(no_end, usize::MAX).unwrap_err();
        assert!(e.to_string().contains("no end mark"), "{e}");
        assert_eq!(decompress_lz4(&[], 10).unwrap(), b"");
    }

    #[test]
    fn bombs_are_bounded() {
        let zeros = vec![0u8; 8 << 20];
        for size in [BlockSize::Max64KB, BlockSize::Max4MB] {
            let frame = encode(independent(size), &zeros);
            assert!(frame.len() < 100_000);
            for limit in [0, 1, 65_535, (1 << 20) - 1, zeros.len() - 1] {
                assert_eq!(
                    decompress_lz4(&frame, limit),
                    Err(RecordError::DecompressedTooLarge { limit }),
                    "{size:?} {limit}"
                );
            }
            assert_eq!(
                decompress_lz4(&frame, zeros.len()).unwrap().len(),
                zeros.len()
            );
        }
        // A declared content size far beyond the limit allocates nothing big.
        let mut lying = encode(
            independent(BlockSize::Max64KB).content_size(Some(1000)),
            &text(1000),
        );
        lying[6..14].copy_from_slice(&u64::MAX.to_le_bytes());
        lying[14] = (XxHash32::oneshot(0, &lying[4..14]) >> 8) as u8;
        assert!(decompress_lz4(&lying, 1 << 20).is_err());
        let h = parse_header(&lying).ok().unwrap();
        let cap = initial_capacity(&h, &lying[h.len..], lying.len(), 256 << 20);
        assert_eq!(cap, lying.len() * 256);
        // Many empty stored blocks of a 4 MiB frame: the block count does not reserve 4 MiB
        // per block either.
        let empty: Vec<(bool, &[u8])> = vec![(true, b""); 100];
        let mut many = hand_frame(&empty);
        many[5] = 0x70; // BD: 4 MiB blocks
        many[6] = (XxHash32::oneshot(0, &many[4..6]) >> 8) as u8;
        let h = parse_header(&many).ok().unwrap();
        assert_eq!(h.block_max, 4 << 20);
        let cap = initial_capacity(&h, &many[h.len..], many.len(), 256 << 20);
        assert_eq!(cap, many.len() * 256);
        assert_eq!(decompress_lz4(&many, 256 << 20).unwrap(), b"");
    }

    #[test]
    fn mutated_frames_never_accepted_differently() {
        let data = text(20_000);
        let frames = [
            encode(independent(BlockSize::Max64KB), &data),
            encode(
                independent(BlockSize::Max64KB)
                    .content_size(Some(data.len() as u64))
                    .block_checksums(true)
                    .content_checksum(true),
                &data,
            ),
            hand_frame(&[
                (true, &data[..5000]),
                (false, &lz4_flex::block::compress(&data)),
            ]),
        ];
        for frame in frames {
            let step = (frame.len() / 400).max(1);
            for at in (0..frame.len()).step_by(step) {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut m = frame.clone();
                    m[at] ^= flip;
                    // Whatever the fast path accepts, FrameDecoder accepts identically.
                    if let Ok(out) = decompress_lz4(&m, 1 << 20) {
                        assert!(
                            frame_decoder(&m, 1 << 20).ok() == Some(out),
                            "byte {at} ^ {flip:#x}: outputs differ"
                        );
                    }
                }
            }
        }
    }
}
