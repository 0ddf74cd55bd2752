//! The one error type of the record layer. Every failure to understand batch or record bytes,
//! or to (de)compress them, is a [`RecordError`]; mapping to Kafka error codes happens in the
//! callers (storage validation, handlers), never here.

use crate::compression::Compression;

/// Why some bytes are not a valid v2 batch / record section, or why a codec failed.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer bytes than a fixed-size structure or a declared length needs.
    #[error("truncated: needed {needed} bytes, {available} available")]
    Truncated { needed: usize, available: usize },
    /// `batchLength` is below the 49-byte minimum or disagrees with the buffer.
    #[error("invalid batch length {0}")]
    InvalidBatchLength(i32),
    /// Magic byte other than 2.
    #[error("unsupported magic {0} (only v2 record batches are supported)")]
    UnsupportedMagic(i8),
    /// Stored CRC-32C differs from the one computed over `attributes..end`.
    #[error("CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    /// Compression id 5, 6 or 7.
    #[error("unknown compression id {0}")]
    UnknownCompression(u8),
    /// The codec rejected the compressed bytes.
    #[error("{} decompression failed: {reason}", codec.name())]
    Decompress { codec: Compression, reason: String },
    /// Decompressed output would exceed the caller's limit (decompression-bomb guard).
    #[error("decompressed records exceed the limit of {limit} bytes")]
    DecompressedTooLarge { limit: usize },
    /// A record (or varint) inside the records section is malformed.
    #[error("malformed record: {0}")]
    MalformedRecord(String),
    /// The records section holds a different number of records than the header declares.
    #[error("record count mismatch: header says {header}, found {found}")]
    RecordCountMismatch { header: i32, found: i32 },
    /// The codec failed to compress, or an encoded batch would not fit the format.
    #[error("{} compression failed: {reason}", codec.name())]
    Compress { codec: Compression, reason: String },
}
