//! `skiff-bench storage`: the storage engine benchmark of issue 2, in one run, one table.
//!
//! Order (limits first, then the figures; `--only` selects sections):
//! 1. machine facts; raw limit: `dd if=/dev/zero of=<dir>/raw bs=1M count=2048`, 5 runs;
//!    fdatasync loop at 4 KiB, 16 KiB, 256 KiB, 1 MiB;
//! 2. append matrix: {16 KiB, 256 KiB, 1 MiB} x {none, lz4} x {validate+append, append only},
//!    3 runs of 2 GiB (uncompressed batch bytes; lz4 cells append the same records). Each
//!    one-thread run is paired with a control interleaved with it in 64 MiB chunks
//!    (`append::run_paired`): the same batches written with plain `write(2)` to a file, so a
//!    ratio survives the load drifts of a shared machine; the N-thread runs get a control
//!    run just before them;
//! 3. on the log of the last uncompressed 16 KiB validate+append run: catch-up read (pread,
//!    sendfile) vs a raw sequential pread of the same files in the same pass,
//!    offset-for-timestamp latency, and the lookup latency of that log's real indexes;
//! 4. index lookup latency on full 10 MiB offset / time indexes;
//! 5. durable mode per batch size: 3 rounds of [fsync loop at that exact batch size, 1
//!    writer, 4 writers], each durable figure compared with the loop of its round.
//!
//! Everything is created under `<dir>` and deleted at the end (the directory itself only if
//! this run created it). Single-threaded except the durable writers.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use skiff_record::Compression;
use skiff_storage::Log;

use crate::append::{self, AppendRun};
use crate::machine::{self, FsyncLoop, MachineInfo, settle};
use crate::payload::BatchPool;
use crate::report::{Report, Summary, pct, size_name};
use crate::{durable, index, read};

/// Volumes and durations of one run.
#[derive(Debug, Clone)]
struct Scale {
    dd_count_mib: usize,
    dd_runs: usize,
    fsync_duration: Duration,
    append_bytes: u64,
    append_runs: usize,
    pool_bytes: usize,
    read_passes: usize,
    ts_lookups: usize,
    index_bytes: usize,
    index_lookups: usize,
    durable_duration: Duration,
    durable_rounds: usize,
}

impl Scale {
    fn full() -> Scale {
        Scale {
            dd_count_mib: 2048,
            dd_runs: 5,
            fsync_duration: Duration::from_secs(5),
            append_bytes: 2 << 30,
            append_runs: 3,
            pool_bytes: 64 << 20,
            read_passes: 3,
            ts_lookups: 10_000,
            index_bytes: 10 << 20,
            index_lookups: 1_000_000,
            durable_duration: Duration::from_secs(5),
            durable_rounds: 3,
        }
    }

    fn quick() -> Scale {
        Scale {
            dd_count_mib: 64,
            dd_runs: 2,
            fsync_duration: Duration::from_millis(300),
            append_bytes: 64 << 20,
            append_runs: 1,
            pool_bytes: 4 << 20,
            read_passes: 1,
            ts_lookups: 300,
            index_bytes: 10 << 20,
            index_lookups: 64_000,
            durable_duration: Duration::from_millis(300),
            durable_rounds: 1,
        }
    }
}

/// Parts of the benchmark `--only` can select.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Section {
    /// dd and the fdatasync loop.
    Limits,
    /// The append matrix.
    Append,
    /// Catch-up read and offset-for-timestamp (writes one 16 KiB log if `append` is not run).
    Read,
    /// Index lookup latency.
    Index,
    /// Durable mode with its paired fsync loops.
    Durable,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    /// Empty = everything.
    pub only: Vec<Section>,
    /// Empty = 16 KiB, 256 KiB, 1 MiB.
    pub batch_sizes: Vec<usize>,
}

impl Options {
    fn wants(&self, s: Section) -> bool {
        self.only.is_empty() || self.only.contains(&s)
    }
}

const BATCH_SIZES: [usize; 3] = [16 << 10, 256 << 10, 1 << 20];
const FSYNC_SIZES: [usize; 4] = [4 << 10, 16 << 10, 256 << 10, 1 << 20];
const DURABLE_WRITERS: [usize; 2] = [1, 4];
/// Non-durable append target: this share of the paired write(2) control (issue 14).
const APPEND_TARGET: f64 = 0.9;
/// Durable target: this share of the fsync loop at the same flush size.
const DURABLE_TARGET: f64 = 0.8;
/// In-memory index lookup target, p50.
const INDEX_P50_TARGET_NS: f64 = 2000.0;

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// Runs the storage benchmark in `dir` and prints the table.
pub fn run(dir: &Path, opts: &Options) -> Result<()> {
    let scale = if opts.quick {
        Scale::quick()
    } else {
        Scale::full()
    };
    let created = !dir.exists();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();
    let info = MachineInfo::probe(dir);
    let load_start = machine::load_average();
    let mut rep = Report::default();
    eprintln!(
        "skiff-bench storage in {} ({})",
        dir.display(),
        info.filesystem
    );

    let result = run_all(dir, &scale, opts, &mut rep);
    cleanup(dir, created);
    result?;

    let load_end = machine::load_average();
    if info.filesystem.starts_with("tmpfs") {
        rep.note("WARNING: the benchmark directory is on tmpfs: the disk is not measured.");
    }
    if opts.quick {
        rep.note("--quick: smoke run, volumes shrunk; the figures mean nothing.");
    }
    println!(
        "# skiff-bench storage{}",
        if opts.quick { " --quick" } else { "" }
    );
    println!();
    println!("- dir: {} on {}", dir.display(), info.filesystem);
    println!(
        "- machine: {} cpus, MemTotal {}, kernel {}, {}",
        info.nproc, info.mem_total, info.kernel, info.dirty
    );
    println!("- load average (1/5/15 min): start {load_start}, end {load_end}");
    println!("- wall time: {:.0} s", started.elapsed().as_secs_f64());
    println!();
    print!("{}", rep.markdown());
    Ok(())
}

fn cleanup(dir: &Path, created: bool) {
    for name in ["raw", "bench.index", "bench.timeindex"] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if ["append-", "durable-", "fsync-loop-", "raw-write-"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                let _ = std::fs::remove_dir_all(e.path());
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    if created {
        let _ = std::fs::remove_dir(dir);
    }
}

/// The log the read section measures, kept from an append run.
type ReadLog = (AppendRun, Log, PathBuf);

/// An append run and the MB/s of its paired raw-write control.
type PairedRun = (AppendRun, f64);

fn run_all(dir: &Path, s: &Scale, opts: &Options, rep: &mut Report) -> Result<()> {
    let sizes: Vec<usize> = if opts.batch_sizes.is_empty() {
        BATCH_SIZES.to_vec()
    } else {
        opts.batch_sizes.clone()
    };

    // 1. Limits.
    let mut dd = None;
    if opts.wants(Section::Limits) {
        eprintln!("raw limit: dd x{}", s.dd_runs);
        let raw = machine::raw_limit(dir, s.dd_count_mib, s.dd_runs)?;
        rep.row(
            "limit",
            format!(
                "dd if=/dev/zero of=<dir>/raw bs=1M count={} (no fsync), x{}",
                s.dd_count_mib, s.dd_runs
            ),
            format!("{} MB/s", raw.fmt(0)),
            "100%",
            "",
        );
        dd = Some(raw.median);
        for b in FSYNC_SIZES {
            eprintln!("fsync loop {}", size_name(b));
            let l = machine::fsync_loop(dir, b, s.fsync_duration)?;
            row_fsync(rep, &l, "");
        }
    }

    // 2. Append matrix (keeping the read log), or just the read log.
    let mut read_log: Option<ReadLog> = None;
    let wants_read = opts.wants(Section::Read) || opts.wants(Section::Index);
    if opts.wants(Section::Append) {
        for &b in &sizes {
            let ts_base = append::now_ms();
            let mut plain =
                BatchPool::build(b, Compression::None, s.pool_bytes, ts_base, b as u64)?;
            plain.check()?;
            let batches = (s.append_bytes as f64 / plain.mean_batch_bytes()).ceil() as u64;
            let mut lz4 = BatchPool::build(b, Compression::Lz4, s.pool_bytes, ts_base, b as u64)?;
            lz4.check()?;
            for pool in [&mut plain, &mut lz4] {
                let mut single = None;
                // Validation's own speed first: with the paired write(2) it bounds what
                // validate+append can reach on this machine (1 / (1/write + 1/validate)).
                let mut v = Vec::with_capacity(s.append_runs);
                let mut crc = Vec::with_capacity(s.append_runs);
                for _ in 0..s.append_runs {
                    v.push(append::validate_only(pool, batches)?);
                    crc.push(append::crc_only(pool, batches)?);
                }
                let validate_mb_s = Summary::of(&v).median;
                for validate in [true, false] {
                    let keep = wants_read
                        && read_log.is_none()
                        && pool.compression == Compression::None
                        && validate;
                    let (runs, kept) =
                        append_cell(dir, pool, batches, validate, s.append_runs, keep)?;
                    let mode = if validate {
                        Mode::Validate
                    } else {
                        Mode::AppendOnly
                    };
                    row_append(rep, pool, mode, &runs, dd, single, validate_mb_s);
                    if validate {
                        single = Some(median_batch_mb_s(&runs));
                    }
                    if kept.is_some() {
                        read_log = kept;
                    }
                }
                for combine in [true, false] {
                    let (runs, multi, work) =
                        concurrent_cell(dir, pool, batches, s.append_runs, combine)?;
                    let mode = Mode::Concurrent(PRODUCER_THREADS, combine);
                    row_append(rep, pool, mode, &runs, dd, single, validate_mb_s);
                    row_multi_control(rep, pool, &runs, &multi, single, false);
                    row_multi_control(rep, pool, &runs, &work, single, true);
                }
                rep.row(
                    "append",
                    format!(
                        "{} batches, {}: validate_client_batch only (CPU, no I/O), x{}",
                        size_name(pool.nominal_batch_bytes),
                        pool.compression.name(),
                        v.len()
                    ),
                    format!("{} MB/s batch bytes", Summary::of(&v).fmt(0)),
                    "-",
                    "-",
                );
                rep.row(
                    "append",
                    format!(
                        "{} batches, {}: CRC-32C of each batch only (skiff_record::crc32c, the \
                         part of validation every broker does), x{}",
                        size_name(pool.nominal_batch_bytes),
                        pool.compression.name(),
                        crc.len()
                    ),
                    format!("{} MB/s batch bytes", Summary::of(&crc).fmt(0)),
                    "-",
                    "-",
                );
            }
        }
    } else if wants_read {
        let b = sizes.first().copied().unwrap_or(BATCH_SIZES[0]);
        let mut plain = BatchPool::build(
            b,
            Compression::None,
            s.pool_bytes,
            append::now_ms(),
            b as u64,
        )?;
        let batches = (s.append_bytes as f64 / plain.mean_batch_bytes()).ceil() as u64;
        let (runs, kept) = append_cell(dir, &mut plain, batches, true, 1, true)?;
        row_append(rep, &plain, Mode::Validate, &runs, dd, None, f64::INFINITY);
        read_log = kept;
    }

    // 3. Read, offset-for-timestamp and the real segment's indexes on the kept log.
    if let Some((run, log, path)) = read_log {
        settle();
        if opts.wants(Section::Read) {
            read_section(rep, s, &run, &log)?;
        }
        if opts.wants(Section::Index) {
            // The first segment: rolled and trimmed, as a catching-up consumer finds it.
            if let Some(seg) = log.segments().next() {
                let oi = index::existing_offset_index(seg.offset_index(), s.index_lookups)?;
                row_index(rep, "OffsetIndex::lookup, segment 0 of the read log", &oi);
                let ti = index::existing_time_index(seg.time_index(), s.index_lookups)?;
                row_index(rep, "TimeIndex::lookup, segment 0 of the read log", &ti);
            }
        }
        drop(log);
        std::fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
    }

    // 4. Index lookups on full default-size indexes.
    if opts.wants(Section::Index) {
        eprintln!("index lookups");
        let oi = index::offset_index(dir, s.index_bytes, s.index_lookups)?;
        row_index(rep, "OffsetIndex::lookup, full 10 MiB index", &oi);
        let ti = index::time_index(dir, s.index_bytes, s.index_lookups)?;
        row_index(rep, "TimeIndex::lookup, full 10 MiB index", &ti);
    }

    // 5. Durable mode, interleaved with the fsync loop at the same bytes per flush.
    if opts.wants(Section::Durable) {
        for &b in &sizes {
            let mut pool = BatchPool::build(
                b,
                Compression::None,
                s.pool_bytes,
                append::now_ms(),
                b as u64,
            )?;
            pool.reset_client_fields();
            durable_cell(dir, s, &pool, rep)?;
        }
    }
    Ok(())
}

/// `durable_rounds` rounds of [fsync loop at the batch size, 1 writer, 4 writers]; each
/// durable figure is compared with the loop of its own round, so slow drifts of the shared
/// machine hit both sides of a ratio alike.
fn durable_cell(dir: &Path, s: &Scale, pool: &BatchPool, rep: &mut Report) -> Result<()> {
    let bytes = pool.batches.first().map_or(0, Vec::len);
    let mut loops: Vec<FsyncLoop> = Vec::new();
    let mut runs: Vec<Vec<durable::DurableRun>> = vec![Vec::new(); DURABLE_WRITERS.len()];
    for round in 0..s.durable_rounds {
        eprintln!(
            "durable {} ({bytes} B), round {round}",
            size_name(pool.nominal_batch_bytes)
        );
        loops.push(machine::fsync_loop(dir, bytes, s.fsync_duration)?);
        for (k, &w) in DURABLE_WRITERS.iter().enumerate() {
            let d = dir.join(format!("durable-{bytes}-{w}"));
            let _ = std::fs::remove_dir_all(&d);
            runs[k].push(durable::run(&d, pool, w, s.durable_duration)?);
            std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    let of = |f: &dyn Fn(&FsyncLoop) -> f64| Summary::of(&loops.iter().map(f).collect::<Vec<_>>());
    rep.row(
        "limit",
        format!(
            "write {bytes} B + fdatasync loop (durable batch size), x{}",
            loops.len()
        ),
        format!(
            "{} MB/s, {} fsyncs/s, p50 {} µs, p99 {} µs",
            of(&|l| l.mb_per_s).fmt(1),
            of(&|l| l.syncs_per_s).fmt(0),
            of(&|l| l.p50_us).fmt(0),
            of(&|l| l.p99_us).fmt(0)
        ),
        "100%",
        "",
    );
    for (k, &w) in DURABLE_WRITERS.iter().enumerate() {
        let rs = &runs[k];
        let col = |f: &dyn Fn(&durable::DurableRun) -> f64| {
            Summary::of(&rs.iter().map(f).collect::<Vec<_>>())
        };
        let ratios = Summary::of(
            &rs.iter()
                .zip(&loops)
                .map(|(r, l)| r.mb_per_s / l.mb_per_s)
                .collect::<Vec<_>>(),
        );
        let per_fsync = col(&|r| r.appends_per_s / r.fsyncs_per_s.max(f64::MIN_POSITIVE));
        rep.row(
            "durable",
            format!(
                "flush.messages=1, {} batches ({bytes} B), {w} writer{}: validate+append+sync_to, x{}",
                size_name(pool.nominal_batch_bytes),
                if w == 1 { "" } else { "s" },
                rs.len()
            ),
            format!(
                "{} MB/s, {} appends/s, {} fsyncs/s, {} appends/fsync",
                col(&|r| r.mb_per_s).fmt(1),
                col(&|r| r.appends_per_s).fmt(0),
                col(&|r| r.fsyncs_per_s).fmt(0),
                per_fsync.fmt(2)
            ),
            format!(
                "{} of the loop at {bytes} B (per-round ratios {})",
                pct(ratios.median, 1.0),
                Summary {
                    median: ratios.median * 100.0,
                    min: ratios.min * 100.0,
                    max: ratios.max * 100.0,
                    n: ratios.n
                }
                .fmt(0)
            ),
            format!(">= 80%: {}", verdict(ratios.median >= DURABLE_TARGET)),
        );
    }
    Ok(())
}

/// One append cell, `runs` times; each run is preceded by its paired raw-write control.
/// Returns (log run, control MB/s) pairs; the last run's log is kept if `keep`.
fn append_cell(
    dir: &Path,
    pool: &mut BatchPool,
    batches: u64,
    validate: bool,
    runs: usize,
    keep: bool,
) -> Result<(Vec<PairedRun>, Option<ReadLog>)> {
    let mut out = Vec::with_capacity(runs);
    let mut kept = None;
    for r in 0..runs {
        let d = dir.join(format!(
            "append-{}-{}-{}-{r}",
            pool.nominal_batch_bytes,
            pool.compression.name(),
            if validate { "validate" } else { "append" }
        ));
        let _ = std::fs::remove_dir_all(&d);
        eprintln!("append {}", d.display());
        let (run, control, log) =
            append::run_paired(&d, &dir.join("raw-write-control"), pool, batches, validate)?;
        if keep && r + 1 == runs {
            out.push((run.clone(), control));
            kept = Some((run, log, d));
        } else {
            drop(log);
            std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
            out.push((run, control));
        }
    }
    Ok((out, kept))
}

fn row_fsync(rep: &mut Report, l: &FsyncLoop, suffix: &str) {
    rep.row(
        "limit",
        format!("write {} B + fdatasync loop{suffix}", l.bytes_per_write),
        format!(
            "{:.1} MB/s, {:.0} fsyncs/s, p50 {:.0} µs, p99 {:.0} µs",
            l.mb_per_s, l.syncs_per_s, l.p50_us, l.p99_us
        ),
        "100%",
        "",
    );
}

/// Producer threads of the concurrent append cell: one per core of the 2-vCPU machine.
const PRODUCER_THREADS: usize = 2;

/// What an append row timed.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// One thread: validate + append per batch (the produce path).
    Validate,
    /// One thread: append only (no validation).
    AppendOnly,
    /// N producer threads: validate without the lock, append under it (wall clock); `true`:
    /// through the flat combiner (the broker's path), `false`: each locks for its own batch.
    Concurrent(usize, bool),
}

/// `runs` x [paired raw-write control, N-thread raw-write control, N-thread validate +
/// raw-write control, N-thread validate+append run]; the logs are deleted. The second and
/// third elements: the two N-thread controls' MB/s.
fn concurrent_cell(
    dir: &Path,
    pool: &mut BatchPool,
    batches: u64,
    runs: usize,
    combine: bool,
) -> Result<(Vec<PairedRun>, Vec<f64>, Vec<f64>)> {
    let mut out = Vec::with_capacity(runs);
    let mut multi = Vec::with_capacity(runs);
    let mut work = Vec::with_capacity(runs);
    for r in 0..runs {
        let d = dir.join(format!(
            "append-{}-{}-concurrent-{r}",
            pool.nominal_batch_bytes,
            pool.compression.name()
        ));
        let _ = std::fs::remove_dir_all(&d);
        eprintln!("append {}", d.display());
        let control = append::raw_write_once(&dir.join("raw-write-control"), pool, batches)?;
        for (validate, into) in [(false, &mut multi), (true, &mut work)] {
            let control = dir.join("raw-write-control");
            into.push(append::raw_write_concurrent(
                &control,
                pool,
                batches,
                PRODUCER_THREADS,
                validate,
            )?);
            pool.reset_client_fields();
        }
        let run = append::run_concurrent(&d, pool, batches, PRODUCER_THREADS, combine)?;
        std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
        out.push((run, control));
    }
    Ok((out, multi, work))
}

fn median_batch_mb_s(runs: &[PairedRun]) -> f64 {
    Summary::of(&runs.iter().map(|(r, _)| r.batch_mb_s()).collect::<Vec<_>>()).median
}

/// `single`: the median of the same cell's one-thread validate+append runs (the concurrent
/// rows' target is >= 1.0x it).
fn row_append(
    rep: &mut Report,
    pool: &BatchPool,
    mode: Mode,
    runs: &[PairedRun],
    dd: Option<f64>,
    single: Option<f64>,
    validate_mb_s: f64,
) {
    let batch = Summary::of(&runs.iter().map(|(r, _)| r.batch_mb_s()).collect::<Vec<_>>());
    let payload = Summary::of(
        &runs
            .iter()
            .map(|(r, _)| r.payload_mb_s())
            .collect::<Vec<_>>(),
    );
    let control = Summary::of(
        &runs
            .iter()
            .map(|(r, c)| 100.0 * r.batch_mb_s() / c)
            .collect::<Vec<_>>(),
    );
    let total: u64 = runs.first().map_or(0, |(r, _)| r.batch_bytes);
    let control_mb = Summary::of(&runs.iter().map(|(_, c)| *c).collect::<Vec<_>>());
    // Issue 14's targets: the produce path (validate+append) at >= 90% of the paired write(2)
    // of the same batches; N producers at >= 1.0x one producer of the same cell.
    let target = match (mode, single) {
        (Mode::Validate, _) => {
            // The machine's bound: the paired write(2) plus validation at its own speed.
            let bound = 100.0 / (1.0 + control_mb.median / validate_mb_s);
            format!(
                ">= {:.0}% of paired write(2): {} (bound here: write(2) + validation at {:.0} \
                 MB/s = {:.0}%; reached {:.0}% of it)",
                APPEND_TARGET * 100.0,
                verdict(control.median / 100.0 >= APPEND_TARGET),
                validate_mb_s,
                bound,
                100.0 * control.median / bound
            )
        }
        (Mode::Concurrent(_, _), Some(one)) => format!(
            "{:.2}x one producer; >= 1.0x: {}",
            batch.median / one,
            verdict(batch.median >= one)
        ),
        _ => "-".to_string(),
    };
    rep.row(
        "append",
        format!(
            "{} batches ({} x 1 KiB records, {:.0} B avg), {}, {}, {:.2} GiB/run x{}",
            size_name(pool.nominal_batch_bytes),
            pool.records_per_batch,
            pool.mean_batch_bytes(),
            pool.compression.name(),
            match mode {
                Mode::Validate => "validate+append".to_string(),
                Mode::AppendOnly => "append only".to_string(),
                Mode::Concurrent(n, true) => {
                    format!("{n} producer threads, validate+append, flat combining")
                }
                Mode::Concurrent(n, false) => {
                    format!("{n} producer threads, validate+append, lock per batch")
                }
            },
            total as f64 / f64::from(1u32 << 30),
            runs.len()
        ),
        format!(
            "{} MB/s batch bytes; payload {} MB/s; paired write(2) {} MB/s",
            batch.fmt(0),
            payload.fmt(0),
            control_mb.fmt(0)
        ),
        format!(
            "{} of dd; {}% of paired write(2)",
            dd.map_or_else(|| "-".to_string(), |dd| pct(batch.median, dd)),
            control.fmt(0)
        ),
        target,
    );
}

/// The N-writer `write(2)` control beside an N-producer row: its MB/s, its ratio to the
/// paired single-writer `write(2)` and to one producer. When N bare writers reach less than one
/// producer, ">= 1.0x one producer" is out of reach for a write-bound cell on this machine.
fn row_multi_control(
    rep: &mut Report,
    pool: &BatchPool,
    runs: &[PairedRun],
    multi: &[f64],
    single: Option<f64>,
    validated: bool,
) {
    let m = Summary::of(multi);
    let work = if validated {
        "validate + bare write(2)"
    } else {
        "bare write(2)"
    };
    let ratio = Summary::of(
        &runs
            .iter()
            .zip(multi)
            .map(|((_, c), m)| m / c)
            .collect::<Vec<_>>(),
    );
    rep.row(
        "append",
        format!(
            "{} batches, {}: control, {PRODUCER_THREADS} threads of {work} under one lock, x{}",
            size_name(pool.nominal_batch_bytes),
            pool.compression.name(),
            multi.len()
        ),
        format!("{} MB/s batch bytes", m.fmt(0)),
        format!("{}x the paired 1-thread write(2)", ratio.fmt(2)),
        match single {
            Some(one) => format!(
                "{:.2}x one producer: {}",
                m.median / one,
                if m.median < one {
                    "these threads alone fall short of one producer (machine limit)"
                } else {
                    "the machine allows >= 1.0x"
                }
            ),
            None => "-".to_string(),
        },
    );
}

fn read_section(rep: &mut Report, s: &Scale, run: &AppendRun, log: &Log) -> Result<()> {
    eprintln!("read");
    let mut raw = Vec::new();
    let mut pread = Vec::new();
    let mut sendfile = Vec::new();
    let mut fetches = 0;
    let mut bytes = 0;
    for _ in 0..s.read_passes {
        raw.push(read::raw_pread_pass(log)?);
        let (p, offsets) = read::pread_pass(log)?;
        fetches = p.fetches;
        bytes = p.bytes;
        pread.push(p.mb_per_s);
        sendfile.push(read::sendfile_pass(log, &offsets)?.mb_per_s);
    }
    let raw_samples = raw;
    let raw = Summary::of(&raw_samples);
    rep.row(
        "limit",
        format!(
            "sequential pread of the read log's segment files, 1 MiB reads, x{}",
            s.read_passes
        ),
        format!("{} MB/s", raw.fmt(0)),
        "100%",
        "",
    );
    let pread_ratio = Summary::of(
        &pread
            .iter()
            .zip(&raw_samples)
            .map(|(p, r)| 100.0 * p / r)
            .collect::<Vec<_>>(),
    );
    let sendfile_ratio = Summary::of(
        &sendfile
            .iter()
            .zip(&raw_samples)
            .map(|(p, r)| 100.0 * p / r)
            .collect::<Vec<_>>(),
    );
    let pread = Summary::of(&pread);
    let sendfile = Summary::of(&sendfile);
    let what = format!(
        "{:.2} GiB in {fetches} fetches of 1 MiB, page cache, x{}",
        bytes as f64 / f64::from(1u32 << 30),
        s.read_passes
    );
    rep.row(
        "read",
        format!("log.read + pread into a buffer, {what}"),
        format!("{} MB/s", pread.fmt(0)),
        format!("{}% of raw pread (per pass)", pread_ratio.fmt(0)),
        "-",
    );
    rep.row(
        "read",
        format!("log.read + sendfile to /dev/null, {what}"),
        format!("{} MB/s", sendfile.fmt(0)),
        format!("{}% of raw pread (per pass)", sendfile_ratio.fmt(0)),
        "-",
    );
    let (p50, p99) = read::offset_for_timestamp_latency(log, run, s.ts_lookups)?;
    rep.row(
        "lookup",
        format!(
            "log.offset_for_timestamp(T, hw), random T, {} segments, {} lookups (answers checked)",
            log.segment_count(),
            s.ts_lookups
        ),
        format!("p50 {p50:.1} µs, p99 {p99:.1} µs"),
        "-",
        "-",
    );
    Ok(())
}

fn row_index(rep: &mut Report, what: &str, l: &index::LookupLatency) {
    rep.row(
        "lookup",
        format!(
            "{what} ({} entries), means of {} lookups",
            l.entries,
            index::GROUP
        ),
        format!("p50 {:.0} ns, p99 {:.0} ns", l.p50_ns, l.p99_ns),
        "-",
        format!("p50 < 2 µs: {}", verdict(l.p50_ns < INDEX_P50_TARGET_NS)),
    );
}
