//! Reads the broker's stored record batches straight from a partition's `.log` segment files,
//! so tests can check what was *stored* (compression codec, timestamp type, producer id)
//! independently of what any client reports after decoding.
//!
//! Format (Kafka's RecordBatch v2, spec §0.2): files `NNNNNNNNNNNNNNNNNNNN.log` in
//! `<log.dirs>/<topic>-<partition>/`, in base-offset order, each a sequence of batches:
//! baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
//! attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
//! producerId i64 | producerEpoch i16 | baseSequence i32 | recordCount i32 | records...
//! `batchLength` counts the bytes after itself. Only the 61-byte headers are parsed; a
//! truncated tail (a file still being written) ends the scan of that file.

use std::path::Path;

/// Header of one stored batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchInfo {
    /// First offset of the batch.
    pub base_offset: i64,
    /// Last offset of the batch.
    pub last_offset: i64,
    /// Magic byte (2 for every batch Skiff stores).
    pub magic: i8,
    /// Raw attributes.
    pub attributes: i16,
    /// `maxTimestamp` field.
    pub max_timestamp: i64,
    /// Producer id (-1 when not idempotent).
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Base sequence (-1 when not idempotent).
    pub base_sequence: i32,
    /// Number of records.
    pub record_count: i32,
}

impl BatchInfo {
    /// The codec in attribute bits 0-2: none, gzip, snappy, lz4, zstd.
    pub fn codec(&self) -> &'static str {
        match self.attributes & 0x7 {
            0 => "none",
            1 => "gzip",
            2 => "snappy",
            3 => "lz4",
            4 => "zstd",
            _ => "invalid",
        }
    }

    /// Whether attribute bit 3 (LogAppendTime) is set.
    pub fn log_append_time(&self) -> bool {
        self.attributes & 0x8 != 0
    }
}

const HEADER: usize = 61;

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

/// Every batch stored in `partition_dir`, in offset order.
pub fn read_batches(partition_dir: &Path) -> Vec<BatchInfo> {
    let entries = std::fs::read_dir(partition_dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", partition_dir.display()));
    let mut logs: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    let mut out = Vec::new();
    for path in logs {
        let bytes =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let mut pos = 0usize;
        while pos + HEADER <= bytes.len() {
            let b = &bytes[pos..];
            let batch_len = be_i32(b, 8);
            // Preallocated or torn tail: stop at the first implausible length.
            let Ok(len) = usize::try_from(batch_len) else {
                break;
            };
            if len < HEADER - 12 || pos + 12 + len > bytes.len() {
                break;
            }
            let base_offset = be_i64(b, 0);
            out.push(BatchInfo {
                base_offset,
                last_offset: base_offset + i64::from(be_i32(b, 23)),
                magic: b[16] as i8,
                attributes: be_i16(b, 21),
                max_timestamp: be_i64(b, 35),
                producer_id: be_i64(b, 43),
                producer_epoch: be_i16(b, 51),
                base_sequence: be_i32(b, 53),
                record_count: be_i32(b, 57),
            });
            pos += 12 + len;
        }
    }
    out
}
