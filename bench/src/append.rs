//! Append throughput: the leader's produce path on one partition log, in a tight loop.
//!
//! Mental model: a cell is (nominal batch size, codec, with/without validation). A run opens a
//! fresh log with the default `LogConfig` (segment.bytes 1 GiB, so a 2 GiB run rolls twice),
//! then appends `batches` client batches from a [`BatchPool`]. The timed region of each
//! iteration is exactly what a broker does per produce batch:
//! `validate_client_batch` + `append_validated` (the batch is not copied: the header and the
//! borrowed records section go out in one `pwritev`), or only `append_as_leader` of the
//! pooled batch, to show the validation cost. Re-stamping the pooled batch's timestamps/CRC (the client's work) is outside it.
//! Throughput = batch bytes (or record payload bytes) / summed timed seconds.
//!
//! Timestamps: record `j` of a run (offset `j`) carries `ts0 + j` ms, so the log written by a
//! run has a known offset <-> timestamp mapping that the offset-for-timestamp check relies on.
//! Each run starts after `sync()` with the previous run's files deleted, like the `dd` runs.
//! Single-threaded; the returned `Log` is owned by the caller.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use skiff_storage::combine::Combiner;
use skiff_storage::validate::{ValidatedBatch, ValidationConfig, validate_client_batch};
use skiff_storage::{AppendInfo, Log, LogConfig, LogOpenOptions};
use skiff_types::TopicPartition;

use crate::machine::settle;
use crate::payload::BatchPool;

/// What one append run measured.
#[derive(Debug, Clone)]
pub struct AppendRun {
    pub timed: Duration,
    pub batch_bytes: u64,
    pub payload_bytes: u64,
    pub records: i64,
    /// Timestamp of record 0 (offset 0); record `j` has `ts0 + j`.
    pub ts0: i64,
}

impl AppendRun {
    pub fn batch_mb_s(&self) -> f64 {
        self.batch_bytes as f64 / self.timed.as_secs_f64() / crate::report::MB
    }
    pub fn payload_mb_s(&self) -> f64 {
        self.payload_bytes as f64 / self.timed.as_secs_f64() / crate::report::MB
    }
}

/// A fresh, empty control file at `path` (a leftover one is removed), opened for appending.
fn new_control_file(path: &Path) -> Result<std::fs::File> {
    let _ = std::fs::remove_file(path);
    OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}

/// The control for a run, measured just before it: the same prepared batches, in the same
/// order and sizes, written with plain `write(2)` to a fresh file (no log logic). Timed the
/// same way as the log's appends; the file is deleted afterwards. Returns MB/s of batch bytes.
pub fn raw_write_once(path: &Path, pool: &mut BatchPool, batches: u64) -> Result<f64> {
    let mut file = new_control_file(path)?;
    let n = pool.records_per_batch;
    let mut next_ts = now_ms() - 3_600_000;
    settle();
    let mut timed = Duration::ZERO;
    let mut bytes = 0u64;
    for i in 0..batches {
        let batch = pool.prepare(i as usize, next_ts);
        next_ts += n;
        let t0 = Instant::now();
        file.write_all(batch).context("raw write")?;
        timed += t0.elapsed();
        bytes += batch.len() as u64;
    }
    drop(file);
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    Ok(bytes as f64 / timed.as_secs_f64() / crate::report::MB)
}

/// The machine's control for the N-producer cells: the same batches written with plain
/// `write(2)` to one fresh file by `writers` threads, each taking the next batch and writing it
/// under one lock (no log logic, no validation), timed by the wall clock like
/// [`run_concurrent`]. What it shows: what moving one file's writes between threads (and
/// vCPUs) costs here, against [`raw_write_once`]'s single writer. Returns MB/s of batch bytes.
/// `validate`: each thread first validates its batch as a producer does (no lock held), so the
/// control does the producers' whole work except the log's: the machine's limit for it.
pub fn raw_write_concurrent(
    path: &Path,
    pool: &BatchPool,
    batches: u64,
    writers: usize,
    validate: bool,
) -> Result<f64> {
    use parking_lot::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};

    let file = Mutex::new(new_control_file(path)?);
    let next = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let vcfg = validate.then(|| LogConfig::default().validation_config());
    settle();
    let start = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..writers)
            .map(|_| {
                let (file, next, bytes, vcfg) = (&file, &next, &bytes, &vcfg);
                s.spawn(move || -> Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= batches {
                            return Ok(());
                        }
                        let src = &pool.batches[i as usize % pool.batches.len()];
                        if let Some(vcfg) = &vcfg {
                            let v = validate_client_batch(src, vcfg, now_ms()).map_err(|e| {
                                anyhow!("validation rejected a benchmark batch: {e:?}")
                            })?;
                            std::hint::black_box(&v);
                        }
                        file.lock().write_all(src).context("raw write")?;
                        bytes.fetch_add(src.len() as u64, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        join_all(handles, "a raw writer")
    })?;
    let timed = start.elapsed();
    drop(file);
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    Ok(bytes.into_inner() as f64 / timed.as_secs_f64() / crate::report::MB)
}

/// `validate_client_batch` alone over the same batch sequence (CPU only, no I/O): the
/// validation share of the produce path. Returns MB/s of batch bytes.
pub fn validate_only(pool: &mut BatchPool, batches: u64) -> Result<f64> {
    let vcfg = LogConfig::default().validation_config();
    let n = pool.records_per_batch;
    let mut next_ts = now_ms() - 3_600_000;
    let mut timed = Duration::ZERO;
    let mut bytes = 0u64;
    for i in 0..batches {
        let batch = pool.prepare(i as usize, next_ts);
        let now = next_ts + n - 1;
        next_ts += n;
        let t0 = Instant::now();
        let v = validate_client_batch(batch, &vcfg, now)
            .map_err(|e| anyhow!("validation rejected a benchmark batch: {e:?}"))?;
        std::hint::black_box(v);
        timed += t0.elapsed();
        bytes += batch.len() as u64;
    }
    Ok(bytes as f64 / timed.as_secs_f64() / crate::report::MB)
}

/// The CRC-32C pass alone (the part of validation no broker may skip: Kafka checks every
/// produce batch's CRC too) over the same prepared batches: MB/s of batch bytes, timed per call.
pub fn crc_only(pool: &mut BatchPool, batches: u64) -> Result<f64> {
    const CRC_FROM: usize = 21; // attributes onwards (spec §0.2): what the batch CRC covers
    let mut next_ts = now_ms() - 3_600_000;
    let mut timed = Duration::ZERO;
    let mut bytes = 0u64;
    let n = pool.records_per_batch;
    for i in 0..batches {
        let batch = pool.prepare(i as usize, next_ts);
        next_ts += n;
        let t0 = Instant::now();
        std::hint::black_box(skiff_record::crc32c(&batch[CRC_FROM.min(batch.len())..]));
        timed += t0.elapsed();
        bytes += batch.len() as u64;
    }
    Ok(bytes as f64 / timed.as_secs_f64() / crate::report::MB)
}

/// Opens (creating) a log in `dir` as a fresh partition would be.
pub fn open_log(dir: &Path, cfg: LogConfig, now_ms: i64) -> Result<Log> {
    let (log, _report) = Log::open(
        dir,
        TopicPartition::new("bench", 0),
        cfg,
        LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: true,
            now_ms,
        },
    )
    .with_context(|| format!("opening a log in {}", dir.display()))?;
    Ok(log)
}

/// Wall-clock milliseconds (the bench is outside the broker: it reads the system clock).
pub fn now_ms() -> i64 {
    skiff_types::Clock::system().now_ms()
}

/// Validates (if `validate`) and appends one pooled batch; `now` is the batch's max timestamp.
pub fn append_one(
    log: &mut Log,
    batch: &mut [u8],
    validate: Option<&ValidationConfig>,
    now: i64,
) -> Result<skiff_storage::AppendInfo> {
    let info = match validate {
        Some(cfg) => {
            let v = validate_client_batch(batch, cfg, now)
                .map_err(|e| anyhow!("validation rejected a benchmark batch: {e:?}"))?;
            log.append_validated(&v, 0, now)?
        }
        None => log.append_as_leader(batch, 0, now)?,
    };
    Ok(info)
}

/// How many bytes of batches one side of [`run_paired`] writes before the other side's turn.
pub const PAIRED_CHUNK_BYTES: usize = 64 << 20;

/// One run (a fresh log in `dir`, which must not exist; `batches` appends from `pool`) and its
/// paired control ([`raw_write_once`]'s work) in one pass, interleaved: the
/// batch sequence goes in chunks of about [`PAIRED_CHUNK_BYTES`]; each chunk is written with
/// plain `write(2)` to the control file `control` and appended to the log (validated first if
/// `validate`), the side that goes first alternating from chunk to chunk. Each side is timed
/// per call as in the separate runs. So both sides see the same machine state (the host's
/// load, the page cache's history) within seconds instead of a run apart, and neither is
/// always first: drift that spread a separate pair's ratio over 83-133% here (2026-12-07)
/// cancels out. The control file is emptied after each of its chunks (untimed), so at most a
/// chunk of its dirty pages sits beside the log's 2 GiB, as in the separate runs: two files
/// growing to 2 GiB together pass the kernel's dirty-background threshold (10% of memory,
/// 2.4 GB here) that one never reaches, and the writeback and throttling that follow slowed
/// whichever side was writing (the 1 MiB control came out at 0.75x the log's append-only).
/// Returns the log run, the control's MB/s and the log (still open, high watermark at its end);
/// the control file is deleted.
pub fn run_paired(
    dir: &Path,
    control: &Path,
    pool: &mut BatchPool,
    batches: u64,
    validate: bool,
) -> Result<(AppendRun, f64, Log)> {
    let mut file = new_control_file(control)?;
    let cfg = LogConfig::default();
    let vcfg = cfg.validation_config();
    let ts0 = now_ms() - 3_600_000;
    let mut log = open_log(dir, cfg, ts0)?;
    let n = pool.records_per_batch;
    let chunk = (PAIRED_CHUNK_BYTES as f64 / pool.mean_batch_bytes())
        .ceil()
        .max(1.0) as u64;
    settle();
    let (mut timed, mut control_timed) = (Duration::ZERO, Duration::ZERO);
    let (mut batch_bytes, mut control_bytes) = (0u64, 0u64);
    let (mut next_ts, mut control_ts) = (ts0, ts0);
    let mut start = 0u64;
    let mut control_first = true;
    while start < batches {
        let end = batches.min(start + chunk);
        for side in [control_first, !control_first] {
            for i in start..end {
                if side {
                    let batch = pool.prepare(i as usize, control_ts);
                    control_ts += n;
                    let t0 = Instant::now();
                    file.write_all(batch).context("raw write")?;
                    control_timed += t0.elapsed();
                    control_bytes += batch.len() as u64;
                    if i + 1 == end {
                        // Empty the control file (untimed): see the doc comment.
                        file.set_len(0).context("emptying the control file")?;
                    }
                } else {
                    let batch = pool.prepare(i as usize, next_ts);
                    let now = next_ts + n - 1;
                    next_ts += n;
                    let len = batch.len() as u64;
                    let t0 = Instant::now();
                    append_one(&mut log, batch, validate.then_some(&vcfg), now)?;
                    timed += t0.elapsed();
                    batch_bytes += len;
                }
            }
        }
        control_first = !control_first;
        start = end;
    }
    drop(file);
    std::fs::remove_file(control).with_context(|| format!("removing {}", control.display()))?;
    let records = batches as i64 * n;
    ensure!(
        log.log_end_offset() == records,
        "log end offset {} after appending {records} records",
        log.log_end_offset()
    );
    log.set_high_watermark(log.log_end_offset());
    let control_mb_s = control_bytes as f64 / control_timed.as_secs_f64() / crate::report::MB;
    Ok((
        AppendRun {
            timed,
            batch_bytes,
            payload_bytes: batches * pool.payload_bytes_per_batch(),
            records,
            ts0,
        },
        control_mb_s,
        log,
    ))
}

/// The broker's shape with several producer connections on one partition: `writers` threads
/// each validate a batch with no lock held (as a connection task does), then lock the shared
/// log for `append_validated` only. Together they append `batches` batches from the pool (read
/// only: its client fields must be reset first; CreateTime is checked against the clock).
/// Timed by the wall clock from the start of the threads to the last append, so validation
/// of one batch overlaps the write of another. The log is dropped at the end.
/// `combine`: the appends go through a [`Combiner`] (flat combining: whoever holds the lock
/// writes every queued batch in one `pwritev`, `Log::append_validated_group`), as the broker's
/// produce path does; else each thread locks the log for its own `append_validated`.
pub fn run_concurrent(
    dir: &Path,
    pool: &BatchPool,
    batches: u64,
    writers: usize,
    combine: bool,
) -> Result<AppendRun> {
    use parking_lot::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};

    let cfg = LogConfig::default();
    let vcfg = cfg.validation_config();
    let ts0 = now_ms();
    let log = Mutex::new(open_log(dir, cfg, ts0)?);
    let combiner: Combiner<(ValidatedBatch<'_>, i64), skiff_storage::error::Result<AppendInfo>> =
        Combiner::new();
    let next = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    settle();
    let start = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..writers)
            .map(|_| {
                let (log, next, bytes, vcfg, combiner) = (&log, &next, &bytes, &vcfg, &combiner);
                s.spawn(move || -> Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= batches {
                            return Ok(());
                        }
                        let src = &pool.batches[i as usize % pool.batches.len()];
                        let now = now_ms();
                        let v = validate_client_batch(src, vcfg, now)
                            .map_err(|e| anyhow!("validation rejected a benchmark batch: {e:?}"))?;
                        if combine {
                            combiner.run((v, now), |jobs| {
                                let now = jobs.last().map_or(now, |(_, t)| *t);
                                let group: Vec<&ValidatedBatch<'_>> =
                                    jobs.iter().map(|(v, _)| v).collect();
                                log.lock().append_validated_group(&group, 0, now)
                            })?;
                        } else {
                            log.lock().append_validated(&v, 0, now)?;
                        }
                        bytes.fetch_add(src.len() as u64, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        join_all(handles, "an append writer")
    })?;
    let timed = start.elapsed();
    let log = log.into_inner();
    let records = batches as i64 * pool.records_per_batch;
    ensure!(
        log.log_end_offset() == records,
        "log end offset {} after appending {records} records",
        log.log_end_offset()
    );
    Ok(AppendRun {
        timed,
        batch_bytes: bytes.into_inner(),
        payload_bytes: batches * pool.payload_bytes_per_batch(),
        records,
        ts0,
    })
}

/// Joins scoped worker threads, the first error (or panic, named `what`) first.
fn join_all(handles: Vec<std::thread::ScopedJoinHandle<'_, Result<()>>>, what: &str) -> Result<()> {
    for h in handles {
        h.join().map_err(|_| anyhow!("{what} thread panicked"))??;
    }
    Ok(())
}
