//! The machine's limits, measured in the same run as the storage figures: the buffered-write
//! limit (`dd`, exactly as issue 2 quotes it) and an append + fdatasync loop per flush size.
//! Also the facts a reader needs to judge them (cores, RAM, filesystem, kernel, load, dirty
//! page settings).
//!
//! Mental model: nothing here can drop the page cache (no root assumptions), so every run
//! starts with a `sync()` (untimed) to flush what earlier runs left dirty, and files are
//! deleted right after each run so their dirty pages are discarded rather than written back
//! during the next measurement. Single-threaded.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;

use crate::payload::{Rng, text_value};
use crate::report::{MB, Summary};

/// Facts about the machine and the benchmark directory.
#[derive(Debug, Clone)]
pub struct MachineInfo {
    pub nproc: usize,
    pub mem_total: String,
    pub filesystem: String,
    pub kernel: String,
    pub dirty: String,
}

impl MachineInfo {
    pub fn probe(dir: &Path) -> MachineInfo {
        let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
        let mem_total = read_trim("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .map(|l| l.trim_start_matches("MemTotal:").trim().to_string())
            .unwrap_or_default();
        let kernel = read_trim("/proc/sys/kernel/osrelease");
        let dirty = format!(
            "vm.dirty_ratio={} dirty_background_ratio={} dirty_expire_centisecs={}",
            read_trim("/proc/sys/vm/dirty_ratio"),
            read_trim("/proc/sys/vm/dirty_background_ratio"),
            read_trim("/proc/sys/vm/dirty_expire_centisecs"),
        );
        MachineInfo {
            nproc,
            mem_total,
            filesystem: filesystem_of(dir),
            kernel,
            dirty,
        }
    }
}

/// The 1-minute load average now.
pub fn load_average() -> String {
    read_trim("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// `device type options` of the mount holding `dir` (longest mount-point prefix).
fn filesystem_of(dir: &Path) -> String {
    let Ok(dir) = dir.canonicalize() else {
        return "?".to_string();
    };
    let mounts = read_trim("/proc/mounts");
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let mp = Path::new(f[1]);
        if dir.starts_with(mp) && best.as_ref().is_none_or(|(l, _)| f[1].len() > *l) {
            best = Some((f[1].len(), format!("{} on {} ({})", f[2], f[1], f[0])));
        }
    }
    best.map_or_else(|| "?".to_string(), |(_, s)| s)
}

/// Flushes every dirty page of the system (untimed preparation of a run).
pub fn settle() {
    rustix::fs::sync();
}

/// One `dd if=/dev/zero of=<dir>/raw bs=1M count=<count_mib>` run: MB/s as dd measured it.
pub fn dd_once(dir: &Path, count_mib: usize) -> Result<f64> {
    let raw = dir.join("raw");
    let _ = std::fs::remove_file(&raw);
    settle();
    let started = Instant::now();
    let out = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", raw.display()))
        .arg("bs=1M")
        .arg(format!("count={count_mib}"))
        .env("LC_ALL", "C")
        .output()
        .context("running dd")?;
    let wall = started.elapsed().as_secs_f64();
    std::fs::remove_file(&raw).with_context(|| format!("removing {}", raw.display()))?;
    if !out.status.success() {
        bail!("dd failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let bytes = (count_mib as f64) * 1_048_576.0;
    // "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 1.23 s, 1.7 GB/s": use dd's own seconds.
    let secs = stderr
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once("copied, ")?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .unwrap_or(wall);
    Ok(bytes / secs / MB)
}

/// Result of the fdatasync loop at one write size.
#[derive(Debug, Clone, Copy)]
pub struct FsyncLoop {
    pub bytes_per_write: usize,
    pub mb_per_s: f64,
    pub syncs_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// Appends `b` bytes then `fdatasync`, repeated for `duration`, to a growing file (as a log
/// segment grows: no preallocation). Throughput is total bytes / total time.
pub fn fsync_loop(dir: &Path, b: usize, duration: Duration) -> Result<FsyncLoop> {
    let path: PathBuf = dir.join(format!("fsync-loop-{b}"));
    let _ = std::fs::remove_file(&path);
    let mut buf = Vec::with_capacity(b);
    let mut rng = Rng::new(0xF5_1C);
    let mut line = Vec::new();
    while buf.len() < b {
        text_value(&mut rng, 0, 1024, &mut line);
        buf.extend_from_slice(&line);
    }
    buf.truncate(b);
    let mut file: File = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    settle();
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut written = 0u64;
    let mut syncs = 0u64;
    let start = Instant::now();
    while start.elapsed() < duration {
        let t0 = Instant::now();
        file.write_all(&buf).context("fsync loop write")?;
        file.sync_data().context("fsync loop fdatasync")?;
        hist.saturating_record(t0.elapsed().as_micros() as u64);
        written += b as u64;
        syncs += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    drop(file);
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    Ok(FsyncLoop {
        bytes_per_write: b,
        mb_per_s: written as f64 / secs / MB,
        syncs_per_s: syncs as f64 / secs,
        p50_us: hist.value_at_quantile(0.5) as f64,
        p99_us: hist.value_at_quantile(0.99) as f64,
    })
}

/// `dd` run `runs` times, summarised.
pub fn raw_limit(dir: &Path, count_mib: usize, runs: usize) -> Result<Summary> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        samples.push(dd_once(dir, count_mib)?);
    }
    Ok(Summary::of(&samples))
}
