//! Delayed delivery (issue 8): produce-path CPU on delay-enabled topics, and the memory of
//! pending delayed batches.
//!
//! Mental model: the broker's produce path for one partition is `validate_client_batch` +
//! `Log::append_validated` (what `handlers/produce.rs` runs under the partition lock); this
//! benchmark runs exactly that in-process, on a fresh log per run, and charges it the thread's
//! CPU time (`/proc/thread-self/schedstat`, ns on CPU, user + kernel: the pwrite copy into the
//! page cache is included). No network: the Kafka request decoding and the socket are the
//! same for every cell, so the cells differ only by what delay does. Cells, interleaved run by
//! run so machine drift hits all alike:
//! - `plain`: `delivery.delay.enable=false` (the comparator);
//! - `0%`, `1%`, `100%`: enabled, with that share of batches delayed (every record of a delayed
//!   batch carries `__delay_ms=60000`, so batches stay pending and get index entries).
//!
//! Every record of every cell carries one ordinary 16-byte header (`trace-id`), so the enabled
//! cells really inspect headers. Batches: 100 records of ~150-byte text values, uncompressed
//! (the codec's cost would hide the header scan) and zstd. CPU-ms/MB = CPU ms / batch MB.
//!
//! Memory: 1,000,000 one-record delayed batches appended to one log; reported are the pending
//! FIFO's heap bytes per pending batch (capacity, so including the deque's slack), the process
//! RSS growth per batch (includes allocator and page-cache-independent overhead), and the
//! `.deliverafter` bytes on disk per batch.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, ensure};
use skiff_record::{BatchBuilder, BatchOptions, Compression, Header};
use skiff_storage::LogConfig;
use skiff_storage::validate::validate_client_batch;

use crate::append::{now_ms, open_log};
use crate::machine::{load_average, settle};
use crate::payload::{Rng, text_value};
use crate::report::{MB, Report, Summary, pct};

/// Options of `skiff-bench delivery`.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
}

const RECORDS_PER_BATCH: usize = 100;
const VALUE_BYTES: usize = 150;
const DELAY_MS: &[u8] = b"60000";

/// CPU nanoseconds of this thread so far.
fn thread_cpu_ns() -> Result<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat")
        .context("reading /proc/thread-self/schedstat")?;
    s.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("unexpected schedstat: {s}"))
}

/// Resident set size of the process in bytes.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// One client batch: `n` records, each with a `trace-id` header and, if `delayed`, a
/// `__delay_ms` header.
fn build_batch(rng: &mut Rng, n: usize, delayed: bool, codec: Compression, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    });
    let mut value = Vec::new();
    for i in 0..n {
        value.clear();
        text_value(rng, ts, VALUE_BYTES, &mut value);
        let trace = format!("{:016x}", rng.next_u64());
        let plain = [Header {
            key: b"trace-id",
            value: Some(trace.as_bytes()),
        }];
        let with_delay = [
            plain[0].clone(),
            Header {
                key: b"__delay_ms",
                value: Some(DELAY_MS),
            },
        ];
        let key = format!("key-{i}");
        let hs: &[Header<'_>] = if delayed { &with_delay } else { &plain };
        b.append(ts, Some(key.as_bytes()), Some(&value), hs);
    }
    b.build().unwrap_or_default()
}

#[derive(Clone, Copy, Debug)]
enum Cell {
    Plain,
    Enabled { delayed_per_mille: u32 },
}

impl Cell {
    fn name(self) -> String {
        match self {
            Cell::Plain => "plain topic".to_string(),
            Cell::Enabled { delayed_per_mille } => {
                format!(
                    "delay-enabled, {}% delayed",
                    delayed_per_mille as f64 / 10.0
                )
            }
        }
    }
}

/// One run of a cell: CPU ms per MB of batch bytes.
fn produce_run(
    dir: &Path,
    cell: Cell,
    codec: Compression,
    batches: usize,
    seed: u64,
) -> Result<f64> {
    let _ = std::fs::remove_dir_all(dir);
    let cfg = LogConfig {
        delivery_delay_enable: matches!(cell, Cell::Enabled { .. }),
        ..LogConfig::default()
    };
    let vcfg = cfg.validation_config();
    let now = now_ms();
    let mut log = open_log(dir, cfg, now)?;
    let mut rng = Rng::new(seed);
    // Prepared outside the timed region (the client's work); which batches are delayed is
    // spread evenly (every 1000/per_mille-th).
    let pool: Vec<Vec<u8>> = (0..batches)
        .map(|i| {
            let delayed = match cell {
                Cell::Plain => i % 100 == 0, // headers present, but opaque on this topic
                Cell::Enabled { delayed_per_mille } => {
                    delayed_per_mille > 0
                        && (i as u64 * u64::from(delayed_per_mille)) % 1000
                            < u64::from(delayed_per_mille)
                }
            };
            build_batch(&mut rng, RECORDS_PER_BATCH, delayed, codec, now)
        })
        .collect();
    let bytes: u64 = pool.iter().map(|b| b.len() as u64).sum();
    settle();
    let cpu0 = thread_cpu_ns()?;
    for batch in &pool {
        let v = validate_client_batch(batch, &vcfg, now)
            .map_err(|e| anyhow!("validation rejected a benchmark batch: {e:?}"))?;
        log.append_validated(&v, 0, now)?;
    }
    let cpu = thread_cpu_ns()? - cpu0;
    let want_pending = match cell {
        Cell::Plain
        | Cell::Enabled {
            delayed_per_mille: 0,
        } => 0,
        Cell::Enabled { .. } => 1,
    };
    ensure!(
        (log.delivery_status(now).pending_batches > 0) == (want_pending > 0),
        "unexpected pending state in {}",
        cell.name()
    );
    drop(log);
    std::fs::remove_dir_all(dir).ok();
    Ok(cpu as f64 / 1e6 / (bytes as f64 / MB))
}

/// 1M (or fewer with `quick`) pending one-record delayed batches in one log.
fn pending_memory(dir: &Path, n: usize, report: &mut Report) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    let cfg = LogConfig {
        delivery_delay_enable: true,
        ..LogConfig::default()
    };
    let vcfg = cfg.validation_config();
    let now = now_ms();
    let mut log = open_log(dir, cfg, now)?;
    let mut rng = Rng::new(7);
    let batch = build_batch(&mut rng, 1, true, Compression::None, now);
    let rss0 = rss_bytes();
    let t0 = Instant::now();
    for _ in 0..n {
        let v = validate_client_batch(&batch, &vcfg, now)
            .map_err(|e| anyhow!("validation rejected a benchmark batch: {e:?}"))?;
        log.append_validated(&v, 0, now)?;
    }
    let secs = t0.elapsed().as_secs_f64();
    let rss1 = rss_bytes();
    let status = log.delivery_status(now);
    ensure!(
        status.pending_batches == n,
        "{} pending",
        status.pending_batches
    );
    let heap = log.delivery_pending_heap_bytes();
    let index_bytes: u64 = log
        .segments()
        .filter_map(|s| std::fs::metadata(s.deliver_after().path()).ok())
        .map(|m| m.len())
        .sum();
    let sec = "pending memory";
    report.row(
        sec,
        format!("{n} pending delayed batches: FIFO heap bytes / batch"),
        format!("{:.1}", heap as f64 / n as f64),
        "-",
        "16-32 B",
    );
    report.row(
        sec,
        "process RSS growth / pending batch (everything the append path kept)",
        format!("{:.1}", rss1.saturating_sub(rss0) as f64 / n as f64),
        "-",
        "bounded",
    );
    report.row(
        sec,
        ".deliverafter bytes on disk / delayed batch",
        format!("{:.1}", index_bytes as f64 / n as f64),
        "-",
        "16 B",
    );
    report.row(
        sec,
        "append rate of one-record delayed batches (validate + append + index entry)",
        format!("{:.0} batches/s", n as f64 / secs),
        "-",
        "-",
    );
    // Delivering them all frees the memory again.
    let dso = log.delivery_stable_offset(i64::MAX);
    ensure!(dso.is_none(), "still pending after the due time");
    report.row(
        sec,
        "FIFO heap bytes after all are due",
        format!("{}", log.delivery_pending_heap_bytes()),
        "-",
        "small",
    );
    drop(log);
    std::fs::remove_dir_all(dir).ok();
    Ok(())
}

/// `skiff-bench delivery`.
pub fn run(dir: &Path, opts: &Options) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut report = Report::default();
    report.note(format!("load average at start: {}", load_average()));
    let (runs, batches, pending) = if opts.quick {
        (3, 300, 20_000)
    } else {
        (7, 3_000, 1_000_000)
    };
    let cells = [
        Cell::Plain,
        Cell::Enabled {
            delayed_per_mille: 0,
        },
        Cell::Enabled {
            delayed_per_mille: 10,
        },
        Cell::Enabled {
            delayed_per_mille: 1000,
        },
    ];
    // First, while the process has allocated little: the RSS growth is then this section's.
    pending_memory(&dir.join("delivery-pending"), pending, &mut report)?;
    for codec in [Compression::None, Compression::Zstd] {
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); cells.len()];
        for r in 0..runs {
            for (c, cell) in cells.iter().enumerate() {
                let d = dir.join(format!("delivery-{c}"));
                samples[c].push(produce_run(&d, *cell, codec, batches, 1000 + r as u64)?);
            }
        }
        let plain = Summary::of(&samples[0]);
        let sec = match codec {
            Compression::None => "produce CPU, uncompressed",
            _ => "produce CPU, zstd",
        };
        for (c, cell) in cells.iter().enumerate() {
            let s = Summary::of(&samples[c]);
            let target = match cell {
                Cell::Plain => "comparator".to_string(),
                Cell::Enabled {
                    delayed_per_mille: 1000,
                } => "-".to_string(),
                Cell::Enabled { .. } => {
                    let verdict = if s.median <= plain.median * 1.10 {
                        "met"
                    } else {
                        "MISSED"
                    };
                    format!("<= 110% of plain: {verdict}")
                }
            };
            report.row(
                sec,
                format!("{} (CPU-ms/MB)", cell.name()),
                s.fmt(2),
                pct(s.median, plain.median),
                target,
            );
        }
    }
    report.note(format!(
        "{runs} runs per cell, {batches} batches of {RECORDS_PER_BATCH} records (~{VALUE_BYTES} B values, one 16 B header each) per run; cells interleaved; load average at end: {}",
        load_average()
    ));
    println!("{}", report.markdown());
    Ok(())
}
