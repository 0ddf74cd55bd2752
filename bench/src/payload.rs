//! Realistic record payloads and pools of pre-built batches.
//!
//! Mental model: a record value is 1 KiB of log-line-like text (timestamp, level, service,
//! numbers, words drawn from a skewed vocabulary) produced by a seeded xorshift generator, so
//! runs are reproducible and lz4 sees text, not zeros. A [`BatchPool`] holds client batches
//! built up front with `skiff_record::BatchBuilder` (base offset 0, the client's shape), each
//! with as many 1 KiB records as fit the nominal batch size. The measured loops cycle through
//! the pool; a pool of tens of MiB is larger than any CPU cache, so reuse does not flatter.
//!
//! Batch timestamps: record `k` of a batch is built at `base + k`. [`BatchPool::prepare`]
//! re-stamps a batch (base/max timestamp, which sit inside the CRC, so the CRC is recomputed)
//! and resets base offset and leader epoch (outside the CRC) to what a client sends. The
//! driver does that outside the timed region: it stands for the client's work.
//!
//! Owned by one thread at a time (`&mut` to prepare); the batches are plain `Vec<u8>`s.

use anyhow::{Context, Result, ensure};
use skiff_record::{BatchBuilder, BatchOptions, BatchView, Compression};

/// Size of one record value in bytes.
pub const RECORD_VALUE_BYTES: usize = 1024;

/// Byte positions of the v2 batch header fields the pool rewrites (spec §0.2).
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;

/// Upper bound of one encoded record's overhead (attributes, varints, header count) over its
/// value, used to keep a batch within its nominal size.
const RECORD_OVERHEAD_MAX: usize = 16;

/// xorshift64*: tiny, seeded, good enough for payload text and random lookup targets.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0; modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "the",
    "request",
    "user",
    "order",
    "payment",
    "session",
    "completed",
    "failed",
    "retry",
    "timeout",
    "connection",
    "accepted",
    "service",
    "checkout",
    "inventory",
    "updated",
    "cache",
    "miss",
    "hit",
    "latency",
    "ms",
    "queue",
    "consumer",
    "producer",
    "partition",
    "offset",
    "commit",
    "batch",
    "record",
    "topic",
    "broker",
    "leader",
    "replica",
    "fetch",
    "produce",
    "metadata",
    "token",
    "expired",
    "refresh",
    "login",
    "logout",
    "cart",
    "item",
    "price",
    "currency",
    "EUR",
    "USD",
    "shipping",
    "address",
    "warehouse",
    "region",
    "eu-west-1",
    "us-east-2",
    "status",
    "OK",
    "ERROR",
    "WARN",
    "client",
    "server",
    "handler",
    "duration",
    "bytes",
    "read",
    "write",
    "closed",
    "opened",
    "scheduled",
    "job",
    "worker",
    "thread",
    "pool",
    "exhausted",
    "allocated",
    "released",
    "customer",
    "account",
    "balance",
    "credit",
    "debit",
    "invoice",
    "generated",
    "email",
    "sent",
    "notification",
    "delivered",
    "http",
    "GET",
    "POST",
    "PUT",
    "DELETE",
    "/api/v1/orders",
    "/api/v1/users",
    "/health",
    "200",
    "404",
    "500",
    "and",
    "with",
    "for",
    "from",
    "to",
    "in",
    "on",
    "after",
    "before",
    "because",
    "of",
];

const LEVELS: &[&str] = &["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];

/// Fills `out` with exactly `len` bytes of log-line-like text.
pub fn text_value(rng: &mut Rng, ts_ms: i64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    let level = LEVELS[rng.below(LEVELS.len() as u64) as usize];
    let line = format!(
        "{{\"ts\":{ts_ms},\"level\":\"{level}\",\"svc\":\"svc-{:02}\",\"trace\":\"{:016x}\",\"user\":{},\"msg\":\"",
        rng.below(40),
        rng.next_u64(),
        rng.below(1_000_000),
    );
    out.extend_from_slice(line.as_bytes());
    while out.len() < len {
        // Skewed choice: low indices (common words) are much more frequent.
        let u = rng.below(1 << 16) as f64 / 65536.0;
        let i = ((u * u * u) * WORDS.len() as f64) as usize;
        out.extend_from_slice(WORDS[i.min(WORDS.len() - 1)].as_bytes());
        if rng.below(9) == 0 {
            out.extend_from_slice(format!(" {}", rng.below(100_000)).as_bytes());
        }
        out.push(b' ');
    }
    out.truncate(len);
}

/// Pre-built client batches of one shape.
#[derive(Debug)]
pub struct BatchPool {
    pub batches: Vec<Vec<u8>>,
    pub records_per_batch: i64,
    pub compression: Compression,
    pub nominal_batch_bytes: usize,
}

impl BatchPool {
    /// Builds `pool_records_bytes` worth of records (rounded up to whole batches, at least 2)
    /// into batches of `records_per_batch(nominal)` records, compressed with `compression`.
    pub fn build(
        nominal_batch_bytes: usize,
        compression: Compression,
        pool_records_bytes: usize,
        base_ts: i64,
        seed: u64,
    ) -> Result<Self> {
        let n = records_per_batch(nominal_batch_bytes);
        let count = (pool_records_bytes / (n * RECORD_VALUE_BYTES)).max(2);
        let mut rng = Rng::new(seed);
        let mut value = Vec::with_capacity(RECORD_VALUE_BYTES);
        let mut batches = Vec::with_capacity(count);
        for _ in 0..count {
            let mut b = BatchBuilder::new(BatchOptions {
                compression,
                ..BatchOptions::default()
            });
            for k in 0..n {
                let ts = base_ts + k as i64;
                text_value(&mut rng, ts, RECORD_VALUE_BYTES, &mut value);
                b.append(ts, None, Some(&value), &[]);
            }
            let bytes = b.build().context("building a benchmark batch")?;
            if compression == Compression::None {
                ensure!(
                    bytes.len() <= nominal_batch_bytes,
                    "batch of {} bytes exceeds its nominal {nominal_batch_bytes}",
                    bytes.len()
                );
            }
            batches.push(bytes);
        }
        Ok(Self {
            batches,
            records_per_batch: n as i64,
            compression,
            nominal_batch_bytes,
        })
    }

    /// Mean bytes per batch in the pool.
    pub fn mean_batch_bytes(&self) -> f64 {
        let total: usize = self.batches.iter().map(Vec::len).sum();
        total as f64 / self.batches.len().max(1) as f64
    }

    /// Record payload (value) bytes per batch.
    pub fn payload_bytes_per_batch(&self) -> u64 {
        self.records_per_batch as u64 * RECORD_VALUE_BYTES as u64
    }

    /// Makes batch `i` (mod pool size) look freshly produced with first record timestamp
    /// `base_ts`, and returns it. Base offset 0 and leader epoch -1, as a client sends them.
    pub fn prepare(&mut self, i: usize, base_ts: i64) -> &mut Vec<u8> {
        let n = self.records_per_batch;
        let len = self.batches.len();
        let batch = &mut self.batches[i % len];
        batch[BASE_TIMESTAMP_AT..BASE_TIMESTAMP_AT + 8].copy_from_slice(&base_ts.to_be_bytes());
        batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8]
            .copy_from_slice(&(base_ts + n - 1).to_be_bytes());
        skiff_record::recompute_crc(batch);
        skiff_record::set_base_offset(batch, 0);
        skiff_record::set_partition_leader_epoch(batch, -1);
        batch
    }

    /// Resets every batch's base offset and leader epoch to what a client sends (appends
    /// without validation stamp them into the pooled bytes).
    pub fn reset_client_fields(&mut self) {
        for b in &mut self.batches {
            skiff_record::set_base_offset(b, 0);
            skiff_record::set_partition_leader_epoch(b, -1);
        }
    }

    /// Checks that the pool's batches parse and carry the expected record count.
    pub fn check(&self) -> Result<()> {
        for b in &self.batches {
            let v = BatchView::new(b).context("pool batch does not parse")?;
            v.verify_crc().context("pool batch CRC")?;
            ensure!(i64::from(v.records_count()) == self.records_per_batch);
        }
        Ok(())
    }
}

/// How many 1 KiB records fit a batch of `nominal` bytes (header included), at least 1.
pub fn records_per_batch(nominal: usize) -> usize {
    let header = skiff_record::BATCH_HEADER_BYTES;
    (nominal.saturating_sub(header) / (RECORD_VALUE_BYTES + RECORD_OVERHEAD_MAX)).max(1)
}
