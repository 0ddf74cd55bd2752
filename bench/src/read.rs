//! Catch-up read throughput and full offset-for-timestamp latency on a log written by the
//! append benchmark.
//!
//! Mental model: a consumer that starts at offset 0 and fetches until the high watermark with
//! `max_bytes` 1 MiB, `min_one_message` set, as a Fetch handler would call `Log::read`. Two
//! transports: `pread` of the returned slice into a reusable buffer (the TLS / copy path), and
//! `sendfile` of the slice into `/dev/null` (the zero-copy path; the kernel discards the pages,
//! so this is the broker-side cost only). The next fetch offset is what a client computes: the
//! offset after the last whole batch in the slice (a slice may end in a partial batch). The
//! sendfile pass reuses the offsets the pread pass found. The log was just written, so it is in
//! the page cache: these are page-cache reads (the design's C1 case), not disk reads.
//!
//! Offset-for-timestamp: random `T` between the first and last record timestamps; the log's
//! records carry `ts0 + offset`, so the right answer is known and every answer is checked.
//! Single-threaded; borrows the log.

use std::fs::OpenOptions;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use hdrhistogram::Histogram;
use skiff_record::{BatchView, peek_batch_size};
use skiff_storage::Log;

use crate::append::AppendRun;
use crate::payload::Rng;
use crate::report::MB;

/// Fetch size of the catch-up reader.
pub const FETCH_MAX_BYTES: usize = 1 << 20;

/// Result of one full catch-up pass.
#[derive(Debug)]
pub struct ReadPass {
    pub mb_per_s: f64,
    pub bytes: u64,
    pub fetches: usize,
}

/// The offset after the last whole batch in `buf`, or `None` if it holds no whole batch.
fn next_fetch_offset(buf: &[u8]) -> Result<Option<i64>> {
    let mut pos = 0;
    let mut next = None;
    while pos < buf.len() {
        let Some(size) = peek_batch_size(&buf[pos..])? else {
            break;
        };
        if pos + size > buf.len() {
            break;
        }
        let view = BatchView::new(&buf[pos..pos + size])?;
        next = Some(view.next_offset());
        pos += size;
    }
    Ok(next)
}

/// The limit for the read figures: every segment file of the log read sequentially with
/// 1 MiB `pread`s into one buffer, no log logic at all.
pub fn raw_pread_pass(log: &Log) -> Result<f64> {
    let mut buf = vec![0u8; FETCH_MAX_BYTES];
    let mut bytes = 0u64;
    let start = Instant::now();
    for seg in log.segments() {
        let file = std::fs::File::open(seg.log_path())
            .with_context(|| format!("opening {}", seg.log_path().display()))?;
        let size = seg.size();
        let mut pos = 0u64;
        while pos < size {
            let n = (size - pos).min(FETCH_MAX_BYTES as u64) as usize;
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut buf[..n], pos)
                .context("raw pread")?;
            pos += n as u64;
        }
        bytes += size;
    }
    Ok(bytes as f64 / start.elapsed().as_secs_f64() / MB)
}

/// Catch-up read from offset 0 to the high watermark, pread into a buffer. Also returns the
/// fetch offsets it used (for [`sendfile_pass`]).
pub fn pread_pass(log: &Log) -> Result<(ReadPass, Vec<i64>)> {
    let hw = log.high_watermark();
    let mut buf = vec![0u8; FETCH_MAX_BYTES * 2];
    let mut offsets = Vec::new();
    let mut offset = log.log_start_offset();
    let mut bytes = 0u64;
    let start = Instant::now();
    while offset < hw {
        let r = log.read(offset, FETCH_MAX_BYTES, hw, true)?;
        let Some(slice) = r.slice else {
            bail!("empty read at offset {offset} below the high watermark {hw}");
        };
        let len = slice.len as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        std::os::unix::fs::FileExt::read_exact_at(&*slice.file, &mut buf[..len], slice.position)
            .context("pread of a fetch slice")?;
        bytes += len as u64;
        offsets.push(offset);
        offset = match next_fetch_offset(&buf[..len])? {
            Some(n) if n > offset => n,
            _ => bail!("fetch at {offset} returned no whole batch"),
        };
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((
        ReadPass {
            mb_per_s: bytes as f64 / secs / MB,
            bytes,
            fetches: offsets.len(),
        },
        offsets,
    ))
}

/// The same fetches, each slice `sendfile`d into `/dev/null`.
pub fn sendfile_pass(log: &Log, offsets: &[i64]) -> Result<ReadPass> {
    let hw = log.high_watermark();
    let null = OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .context("opening /dev/null")?;
    let mut bytes = 0u64;
    let start = Instant::now();
    for &offset in offsets {
        let r = log.read(offset, FETCH_MAX_BYTES, hw, true)?;
        let Some(slice) = r.slice else {
            bail!("empty read at offset {offset}");
        };
        let mut pos = slice.position;
        let end = slice.position + slice.len;
        while pos < end {
            let want = (end - pos) as usize;
            let n = rustix::fs::sendfile(&null, &*slice.file, Some(&mut pos), want)
                .context("sendfile to /dev/null")?;
            if n == 0 {
                bail!("sendfile made no progress at {pos}");
            }
        }
        bytes += slice.len;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(ReadPass {
        mb_per_s: bytes as f64 / secs / MB,
        bytes,
        fetches: offsets.len(),
    })
}

/// p50 and p99 of `offset_for_timestamp(T, hw)` over `lookups` random `T`, in µs.
pub fn offset_for_timestamp_latency(
    log: &Log,
    run: &AppendRun,
    lookups: usize,
) -> Result<(f64, f64)> {
    let hw = log.high_watermark();
    let mut rng = Rng::new(0x7153);
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    for _ in 0..lookups {
        let want = rng.below(run.records as u64) as i64;
        let t = run.ts0 + want;
        let t0 = Instant::now();
        let got = log.offset_for_timestamp(t, hw)?;
        hist.saturating_record(t0.elapsed().as_nanos() as u64);
        let Some(got) = got else {
            bail!("offset_for_timestamp({t}) found nothing; expected offset {want}");
        };
        ensure!(
            got.offset == want && got.timestamp == t,
            "offset_for_timestamp({t}) = {got:?}, expected offset {want}"
        );
    }
    Ok((
        hist.value_at_quantile(0.5) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0,
    ))
}
