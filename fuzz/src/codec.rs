//! Codec checks run by the `record_batch` harness: the records section of a batch is the only
//! place compressed bytes enter the broker, so the decompressors get fuzzed directly too.
//!
//! Checks, on the raw input and on the records section of every batch the harness sees:
//! - input that starts with a codec's magic (gzip `1f 8b`, xerial snappy `82 SNAPPY 00`, LZ4
//!   frame `04 22 4d 18`, zstd `28 b5 2f fd`) is decompressed with that codec, bounded;
//! - LZ4 differential: `skiff_record`'s hand-written frame decoder and `lz4_flex`'s
//!   `FrameDecoder` (the reference it falls back to) must produce the same bytes whenever both
//!   succeed;
//! - round trip: `decompress(compress(x)) == x` for one codec picked from the input length.

use std::io::Read;

use skiff_record::{Compression, compress, decompress};

use crate::batch::RECORDS_DATA_BOUND;

const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// The codec whose magic `data` starts with, if any.
pub fn sniff(data: &[u8]) -> Option<Compression> {
    if data.starts_with(&[0x1f, 0x8b]) {
        Some(Compression::Gzip)
    } else if data.starts_with(b"\x82SNAPPY\x00") {
        Some(Compression::Snappy)
    } else if data.starts_with(&LZ4_MAGIC) {
        Some(Compression::Lz4)
    } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(Compression::Zstd)
    } else {
        None
    }
}

/// Decompresses `data` as `codec` (bounded); for LZ4 also compares with the reference decoder.
pub fn check_compressed(codec: Compression, data: &[u8]) {
    let ours = decompress(codec, data, RECORDS_DATA_BOUND);
    if let Err(e) = &ours {
        let _ = e.to_string();
    }
    if codec == Compression::Lz4
        && let (Ok(ours), Some(reference)) = (&ours, lz4_reference(data, RECORDS_DATA_BOUND))
    {
        assert!(
            ours == &reference,
            "LZ4 decoders disagree: skiff_record gave {} bytes, lz4_flex FrameDecoder {} bytes",
            ours.len(),
            reference.len()
        );
    }
}

/// `lz4_flex`'s frame decoder over the first frame of `data`, at most `max` bytes.
fn lz4_reference(data: &[u8], max: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    lz4_flex::frame::FrameDecoder::new(data)
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() <= max).then_some(out)
}

/// The raw-input codec checks (magic sniffing and the compress/decompress round trip).
pub fn check_raw(data: &[u8]) {
    if let Some(codec) = sniff(data) {
        check_compressed(codec, data);
    }
    let codec = Compression::ALL[data.len() % Compression::ALL.len()];
    let packed = compress(codec, None, data)
        .unwrap_or_else(|e| panic!("{} cannot compress {} bytes: {e}", codec.name(), data.len()));
    let unpacked = decompress(codec, &packed, data.len())
        .unwrap_or_else(|e| panic!("{} cannot decompress its own output: {e}", codec.name()));
    assert!(
        unpacked == data,
        "{} round trip changed the bytes",
        codec.name()
    );
}
