//! Named limits with units in their names. Relations between them are checked at compile time.

/// Size of the `baseOffset` + `batchLength` prefix of every batch (Kafka's `LOG_OVERHEAD`).
pub const LOG_OVERHEAD_BYTES: usize = 12;
/// Size of a v2 record batch header (Kafka's `RECORD_BATCH_OVERHEAD`).
pub const BATCH_HEADER_BYTES: usize = 61;
/// Largest decompressed size accepted for one batch's records (a decompression-bomb guard).
pub const DECOMPRESSED_BATCH_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Largest number of records in one batch we will iterate.
pub const RECORDS_PER_BATCH_MAX: usize = 64 * 1024 * 1024;
/// Largest number of headers on one record.
pub const HEADERS_PER_RECORD_MAX: usize = 1 << 20;
/// Kafka's `socket.request.max.bytes` default.
pub const SOCKET_REQUEST_BYTES_MAX: usize = 100 * 1024 * 1024;

const _: () = assert!(LOG_OVERHEAD_BYTES < BATCH_HEADER_BYTES);
const _: () = assert!(SOCKET_REQUEST_BYTES_MAX < DECOMPRESSED_BATCH_BYTES_MAX);
