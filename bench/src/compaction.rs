//! `skiff-bench compaction` (issue 7): cleaner throughput and its cost to producers.
//!
//! Mental model: everything runs in-process on real `Log`s in the scratch dir.
//! 1. Cleaner throughput: a log of 1 KiB keyed records (16 per batch) where 10% or 90% of the
//!    records repeat an earlier key, uncompressed and lz4, all segments cleanable; one
//!    `clean_log` pass is timed; MB/s = log bytes before the clean / time. The comparator is
//!    the raw limit measured in the same run on the same files: read every segment file and
//!    write the same bytes to a new file with one fdatasync at the end (what a clean that
//!    removes nothing would have to do at least). Files are in the page cache in both cases.
//! 2. Producer cost: the same appending thread (the broker's `append_as_leader` path, 16 KiB
//!    batches of 1 KiB records, 50% duplicate keys, 8 MiB segments) with and without a cleaner
//!    thread cleaning the same log every 100 ms (the test brokers' backoff). CPU of the
//!    producing thread comes from `/proc/thread-self/schedstat` (ns on CPU), per MB appended.
//!
//! Single-threaded except the cleaner thread of part 2.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use parking_lot::Mutex;
use skiff_compaction::{CleanParams, Throttle, clean_log};
use skiff_record::{BatchBuilder, BatchOptions, Compression};
use skiff_storage::{Log, LogConfig, LogOpenOptions, SharedLog};
use skiff_types::TopicPartition;

use crate::machine::{self, MachineInfo};
use crate::payload::{Rng, text_value};
use crate::report::{MB, Report, Summary, pct};

/// Options of the compaction benchmark.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
}

const RECORD_BYTES: usize = 1024;
const RECORDS_PER_BATCH: usize = 16;

fn config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        retention_ms: -1,
        cleanup_policy_compact: true,
        cleanup_policy_delete: false,
        min_cleanable_dirty_ratio: 0.0,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, c: LogConfig) -> Result<SharedLog> {
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: 0,
        high_watermark: 0,
        clean_shutdown: true,
        now_ms: skiff_types::Clock::system().now_ms(),
    };
    let (log, _) = Log::open(dir, TopicPartition::new("bench", 0), c, opts)?;
    Ok(Arc::new(Mutex::new(log)))
}

/// Keys: a record repeats a random earlier key with probability `dup`.
struct Keys {
    rng: Rng,
    dup_per_mille: u64,
    next: u64,
}

impl Keys {
    fn next_key(&mut self) -> String {
        let id = if self.next > 0 && self.rng.below(1000) < self.dup_per_mille {
            self.rng.below(self.next)
        } else {
            self.next += 1;
            self.next - 1
        };
        format!("key-{id:010}")
    }
}

fn batch(
    keys: &mut Keys,
    rng: &mut Rng,
    codec: Compression,
    value: &mut Vec<u8>,
) -> Result<Vec<u8>> {
    let mut b = BatchBuilder::new(BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    });
    let ts = skiff_types::Clock::system().now_ms();
    for _ in 0..RECORDS_PER_BATCH {
        let k = keys.next_key();
        text_value(rng, ts, RECORD_BYTES - k.len(), value);
        b.append(ts, Some(k.as_bytes()), Some(value), &[]);
    }
    Ok(b.build()?)
}

fn append(log: &SharedLog, mut bytes: Vec<u8>) -> Result<()> {
    let mut l = log.lock();
    l.append_as_leader(&mut bytes, 0, skiff_types::Clock::system().now_ms())?;
    let end = l.log_end_offset();
    l.set_high_watermark(end);
    Ok(())
}

/// Builds a fully cleanable log of about `total` bytes; returns its size.
fn build_log(
    dir: &Path,
    codec: Compression,
    dup_per_mille: u64,
    total: u64,
) -> Result<(SharedLog, u64)> {
    let log = open(dir, config(32 << 20))?;
    let mut keys = Keys {
        rng: Rng::new(7),
        dup_per_mille,
        next: 0,
    };
    let mut rng = Rng::new(11);
    let mut value = Vec::new();
    while log.lock().size_bytes() < total {
        append(&log, batch(&mut keys, &mut rng, codec, &mut value)?)?;
    }
    log.lock().roll(skiff_types::Clock::system().now_ms())?;
    let size = log.lock().size_bytes();
    Ok((log, size))
}

fn params() -> CleanParams {
    CleanParams {
        map_bytes: 128 << 20,
        load_factor: 0.9,
        now_ms: skiff_types::Clock::system().now_ms(),
        extra_bound: i64::MAX,
        seed: 1,
    }
}

/// Read every segment file and write the bytes to a new file, one fdatasync: MB/s of log.
fn raw_read_write(log: &SharedLog, scratch: &Path) -> Result<f64> {
    let paths: Vec<_> = log
        .lock()
        .segments()
        .map(|s| s.log_path().to_path_buf())
        .collect();
    let out_path = scratch.join("raw-rw");
    let start = Instant::now();
    let mut out = std::fs::File::create(&out_path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    for p in paths {
        let mut f = std::fs::File::open(&p)?;
        loop {
            let r = f.read(&mut buf)?;
            if r == 0 {
                break;
            }
            out.write_all(&buf[..r])?;
            n += r as u64;
        }
    }
    out.sync_data()?;
    let secs = start.elapsed().as_secs_f64();
    std::fs::remove_file(&out_path)?;
    Ok(n as f64 / MB / secs)
}

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// What the cleaner thread of [`produce_cpu`] did.
#[derive(Clone, Copy, Debug, Default)]
struct CleanerLoad {
    cleans: u64,
    cpu_ns: u64,
    busy_ns: u64,
}

/// Producer CPU-ms per MB appended, with or without a cleaner thread on the same log (it
/// cleans whenever a segment rolled, else checks again after 10 ms), and the cleaner's load.
fn produce_cpu(dir: &Path, total: u64, with_cleaner: bool) -> Result<(f64, f64, CleanerLoad)> {
    let log = open(dir, config(8 << 20))?;
    let stop = Arc::new(AtomicBool::new(false));
    let cleaner = with_cleaner.then(|| {
        let log = Arc::clone(&log);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut ckpt = None;
            let mut load = CleanerLoad::default();
            let cpu0 = thread_cpu_ns();
            let never = AtomicBool::new(false);
            while !stop.load(Ordering::Relaxed) {
                let mut t = Throttle::new(f64::MAX, &skiff_types::Clock::system());
                let started = Instant::now();
                match clean_log(&log, ckpt, &params(), &mut t, &never) {
                    Ok(Some(o)) => {
                        ckpt = Some(o.end);
                        load.cleans += 1;
                        load.busy_ns += started.elapsed().as_nanos() as u64;
                    }
                    _ => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
            load.cpu_ns = thread_cpu_ns() - cpu0;
            load
        })
    });
    let mut keys = Keys {
        rng: Rng::new(3),
        dup_per_mille: 500,
        next: 0,
    };
    let mut rng = Rng::new(5);
    let mut value = Vec::new();
    // Batches are built before the clock starts; appending copies one (as a request would).
    let pool: Vec<Vec<u8>> = (0..256)
        .map(|_| batch(&mut keys, &mut rng, Compression::None, &mut value))
        .collect::<Result<_>>()?;
    let cpu0 = thread_cpu_ns();
    let wall = Instant::now();
    let mut appended = 0u64;
    let mut i = 0;
    while appended < total {
        let b = pool[i % pool.len()].clone();
        appended += b.len() as u64;
        append(&log, b)?;
        i += 1;
    }
    let cpu = thread_cpu_ns() - cpu0;
    let wall_ns = wall.elapsed().as_nanos() as f64;
    stop.store(true, Ordering::Relaxed);
    let load = cleaner.map_or(CleanerLoad::default(), |t| t.join().unwrap_or_default());
    drop(log);
    std::fs::remove_dir_all(dir)?;
    let mb = appended as f64 / MB;
    Ok((cpu as f64 / 1e6 / mb, load.busy_ns as f64 / wall_ns, load))
}

pub fn run(dir: &Path, opts: &Options) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let scratch = tempfile::tempdir_in(dir)?;
    let info = MachineInfo::probe(dir);
    let load_start = machine::load_average();
    let (log_bytes, runs, produce_bytes) = if opts.quick {
        (8u64 << 20, 1usize, 16u64 << 20)
    } else {
        (128 << 20, 3, 1 << 30)
    };
    let mut rep = Report::default();
    eprintln!(
        "skiff-bench compaction in {} ({})",
        dir.display(),
        info.filesystem
    );
    for (codec, cname) in [
        (Compression::None, "uncompressed"),
        (Compression::Lz4, "lz4"),
    ] {
        for dup in [100u64, 900] {
            let mut clean = Vec::new();
            let mut raw = Vec::new();
            let mut removed = 0;
            let mut size = 0;
            for r in 0..runs {
                let d = scratch.path().join(format!("clean-{cname}-{dup}-{r}"));
                let (log, s) = build_log(&d, codec, dup, log_bytes)?;
                size = s;
                raw.push(raw_read_write(&log, scratch.path())?);
                let start = Instant::now();
                let o = clean_log(
                    &log,
                    None,
                    &params(),
                    &mut Throttle::new(f64::MAX, &skiff_types::Clock::system()),
                    &AtomicBool::new(false),
                )?
                .context("nothing cleanable")?;
                clean.push(size as f64 / MB / start.elapsed().as_secs_f64());
                removed = o.records_removed;
                drop(log);
                std::fs::remove_dir_all(&d)?;
            }
            let c = Summary::of(&clean);
            let rw = Summary::of(&raw);
            rep.row(
                "clean",
                format!("{cname}, {}% duplicate keys, {:.0} MB log, {removed} records removed, MB/s of log", dup / 10, size as f64 / MB),
                c.fmt(1),
                format!("{} of raw read+write {} MB/s", pct(c.median, rw.median), rw.fmt(0)),
                "-",
            );
        }
    }
    let mut without = Vec::new();
    let mut with = Vec::new();
    let mut busy = Vec::new();
    let mut cleaner_cpu = Vec::new();
    let mut cleans = 0;
    for r in 0..runs {
        without.push(produce_cpu(&scratch.path().join(format!("p-{r}")), produce_bytes, false)?.0);
        let (w, b, load) =
            produce_cpu(&scratch.path().join(format!("pc-{r}")), produce_bytes, true)?;
        with.push(w);
        busy.push(100.0 * b);
        cleaner_cpu.push(load.cpu_ns as f64 / 1e6 / (produce_bytes as f64 / MB));
        cleans += load.cleans;
    }
    let (wo, wi) = (Summary::of(&without), Summary::of(&with));
    let mb = produce_bytes as f64 / MB;
    rep.row(
        "produce",
        format!(
            "producer thread CPU-ms/MB, no cleaner ({mb:.0} MB, 16 KiB batches, 50% duplicate keys)"
        ),
        wo.fmt(2),
        "-",
        "-",
    );
    rep.row(
        "produce",
        format!(
            "producer thread CPU-ms/MB, cleaner running ({cleans} cleans in {runs} runs, busy {} % of the produce time)",
            Summary::of(&busy).fmt(0)
        ),
        wi.fmt(2),
        format!("{} of without", pct(wi.median, wo.median)),
        "within 120%",
    );
    rep.row(
        "produce",
        "cleaner thread CPU-ms per MB produced (the cleaner's own cost, on the other core)",
        Summary::of(&cleaner_cpu).fmt(2),
        "-",
        "-",
    );
    let load_end = machine::load_average();
    if opts.quick {
        rep.note("--quick: smoke run, volumes shrunk; the figures mean nothing.");
    }
    println!(
        "# skiff-bench compaction{}\n\nmachine: {} cores, {} RAM, {}, kernel {}; load average {} at start, {} at end\n",
        if opts.quick { " --quick" } else { "" },
        info.nproc,
        info.mem_total,
        info.filesystem,
        info.kernel,
        load_start,
        load_end
    );
    println!("{}", rep.markdown());
    Ok(())
}
