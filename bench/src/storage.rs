//! `skiff-bench storage`: the storage engine benchmark of issue 2, in one run, one table.
//!
//! Order (limits first, so every ratio is against a limit measured minutes earlier):
//! 1. machine facts; raw limit: `dd if=/dev/zero of=<dir>/raw bs=1M count=2048`, 5 runs;
//! 2. fdatasync loop at 4 KiB, 16 KiB, 256 KiB, 1 MiB;
//! 3. append matrix: {16 KiB, 256 KiB, 1 MiB} x {none, lz4} x {validate+append, append only},
//!    3 runs of 2 GiB (uncompressed batch bytes; lz4 cells append the same records);
//! 4. on the log of the last uncompressed 16 KiB validate+append run: catch-up read (pread,
//!    sendfile) vs a raw sequential pread of the same files, offset-for-timestamp latency;
//! 5. index lookup latency: full 10 MiB offset / time indexes, and the real segment's indexes;
//! 6. durable mode at each batch size, 1 and 4 writers, vs the fsync loop at that batch size.
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
        }
    }
}

const BATCH_SIZES: [usize; 3] = [16 << 10, 256 << 10, 1 << 20];
const FSYNC_SIZES: [usize; 4] = [4 << 10, 16 << 10, 256 << 10, 1 << 20];
const DURABLE_WRITERS: [usize; 2] = [1, 4];
/// Non-durable append target: this share of the raw `dd` limit.
const APPEND_TARGET: f64 = 0.8;
/// Durable target: this share of the fsync loop at the same flush size.
const DURABLE_TARGET: f64 = 0.8;
/// In-memory index lookup target, p50.
const INDEX_P50_TARGET_NS: f64 = 2000.0;

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// Runs the whole storage benchmark in `dir` and prints the table.
pub fn run(dir: &Path, quick: bool) -> Result<()> {
    let scale = if quick { Scale::quick() } else { Scale::full() };
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

    let result = run_all(dir, &scale, &mut rep);
    cleanup(dir, created);
    result?;

    let load_end = machine::load_average();
    if info.filesystem.starts_with("tmpfs") {
        rep.note("WARNING: the benchmark directory is on tmpfs: the disk is not measured.");
    }
    if quick {
        rep.note("--quick: smoke run, volumes shrunk; the figures mean nothing.");
    }
    println!(
        "# skiff-bench storage{}",
        if quick { " --quick" } else { "" }
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
    for name in ["raw", "read-log", "bench.index", "bench.timeindex"] {
        let p = dir.join(name);
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("append-")
                || name.starts_with("durable-")
                || name.starts_with("fsync-loop-")
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

fn run_all(dir: &Path, s: &Scale, rep: &mut Report) -> Result<()> {
    // 1. Raw limit.
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

    // 2. fsync loop.
    let mut loops = Vec::new();
    for b in FSYNC_SIZES {
        eprintln!("fsync loop {}", size_name(b));
        let l = machine::fsync_loop(dir, b, s.fsync_duration)?;
        row_fsync(rep, &l, "");
        loops.push(l);
    }

    // 3. Append matrix (and keep the read log).
    let mut read_log: Option<(AppendRun, Log, PathBuf)> = None;
    let mut durable_pools = Vec::new();
    for b in BATCH_SIZES {
        let ts_base = append::now_ms();
        let plain = BatchPool::build(b, Compression::None, s.pool_bytes, ts_base, b as u64)?;
        plain.check()?;
        let batches = (s.append_bytes as f64 / plain.mean_batch_bytes()).ceil() as u64;
        let mut lz4 = BatchPool::build(b, Compression::Lz4, s.pool_bytes, ts_base, b as u64)?;
        lz4.check()?;
        let mut plain = plain;
        for (pool, codec) in [(&mut plain, "none"), (&mut lz4, "lz4")] {
            for validate in [true, false] {
                let keep = b == BATCH_SIZES[0] && codec == "none" && validate;
                let runs = append_cell(dir, pool, batches, validate, s.append_runs, keep)?;
                row_append(rep, pool, codec, validate, &runs.0, raw.median);
                if let Some(kept) = runs.1 {
                    read_log = Some(kept);
                }
            }
        }
        durable_pools.push(plain);
    }

    // 4. Read and offset-for-timestamp on the kept log.
    if let Some((run, log, path)) = read_log {
        settle();
        read_section(rep, s, &run, &log)?;
        // 5b. The real segment's indexes (first segment: rolled, trimmed, as a consumer finds it).
        if let Some(seg) = log.segments().next() {
            let oi = index::existing_offset_index(seg.offset_index(), s.index_lookups)?;
            row_index(rep, "offset index of segment 0 of the read log", &oi);
            let ti = index::existing_time_index(seg.time_index(), s.index_lookups)?;
            row_index(rep, "time index of segment 0 of the read log", &ti);
        }
        drop(log);
        std::fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
    }

    // 5. Index lookups on full default-size indexes.
    eprintln!("index lookups");
    let oi = index::offset_index(dir, s.index_bytes, s.index_lookups)?;
    row_index(rep, "OffsetIndex::lookup, full 10 MiB index", &oi);
    let ti = index::time_index(dir, s.index_bytes, s.index_lookups)?;
    row_index(rep, "TimeIndex::lookup, full 10 MiB index", &ti);

    // 6. Durable mode vs the fsync loop at the same bytes per flush.
    for pool in &mut durable_pools {
        pool.reset_client_fields();
        let pool = &*pool;
        let bytes = pool.batches.first().map_or(0, Vec::len);
        eprintln!(
            "durable {} ({bytes} B)",
            size_name(pool.nominal_batch_bytes)
        );
        let same = machine::fsync_loop(dir, bytes, s.fsync_duration)?;
        row_fsync(rep, &same, " (durable batch size)");
        for w in DURABLE_WRITERS {
            let d = dir.join(format!("durable-{bytes}-{w}"));
            let _ = std::fs::remove_dir_all(&d);
            let r = durable::run(&d, pool, w, s.durable_duration)?;
            std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
            let ratio = r.mb_per_s / same.mb_per_s;
            rep.row(
                "durable",
                format!(
                    "flush.messages=1, {} batches ({bytes} B), {w} writer{}: validate+append+sync_to",
                    size_name(pool.nominal_batch_bytes),
                    if w == 1 { "" } else { "s" }
                ),
                format!(
                    "{:.1} MB/s, {:.0} appends/s, {:.0} fsyncs/s ({:.2} appends/fsync)",
                    r.mb_per_s,
                    r.appends_per_s,
                    r.fsyncs_per_s,
                    r.appends_per_s / r.fsyncs_per_s.max(f64::MIN_POSITIVE)
                ),
                format!("{} of fsync loop at {bytes} B", pct(r.mb_per_s, same.mb_per_s)),
                format!(">= 80%: {}", verdict(ratio >= DURABLE_TARGET)),
            );
        }
    }
    Ok(())
}

/// Runs one append cell `runs` times. The last run's log is kept (returned) if `keep`.
#[allow(clippy::type_complexity)]
fn append_cell(
    dir: &Path,
    pool: &mut BatchPool,
    batches: u64,
    validate: bool,
    runs: usize,
    keep: bool,
) -> Result<(Vec<AppendRun>, Option<(AppendRun, Log, PathBuf)>)> {
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
        let (run, log) = append::run_once(&d, pool, batches, validate)?;
        if keep && r + 1 == runs {
            out.push(run.clone());
            kept = Some((run, log, d));
        } else {
            drop(log);
            std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
            out.push(run);
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

fn row_append(
    rep: &mut Report,
    pool: &BatchPool,
    codec: &str,
    validate: bool,
    runs: &[AppendRun],
    raw: f64,
) {
    let batch = Summary::of(&runs.iter().map(AppendRun::batch_mb_s).collect::<Vec<_>>());
    let payload = Summary::of(&runs.iter().map(AppendRun::payload_mb_s).collect::<Vec<_>>());
    let total: u64 = runs.first().map_or(0, |r| r.batch_bytes);
    let ratio = batch.median / raw;
    let target = if codec == "none" && validate {
        format!(">= 80% of dd: {}", verdict(ratio >= APPEND_TARGET))
    } else {
        "-".to_string()
    };
    rep.row(
        "append",
        format!(
            "{} batches ({} x 1 KiB records, {:.0} B avg), {codec}, {}, {:.2} GiB/run x{}",
            size_name(pool.nominal_batch_bytes),
            pool.records_per_batch,
            pool.mean_batch_bytes(),
            if validate {
                "validate+append"
            } else {
                "append only"
            },
            total as f64 / f64::from(1u32 << 30),
            runs.len()
        ),
        format!(
            "{} MB/s batch bytes; payload {} MB/s",
            batch.fmt(0),
            payload.fmt(0)
        ),
        format!("{} of dd", pct(batch.median, raw)),
        target,
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
    let raw = Summary::of(&raw);
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
        format!("{} of pread", pct(pread.median, raw.median)),
        "-",
    );
    rep.row(
        "read",
        format!("log.read + sendfile to /dev/null, {what}"),
        format!("{} MB/s", sendfile.fmt(0)),
        format!("{} of pread", pct(sendfile.median, raw.median)),
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
