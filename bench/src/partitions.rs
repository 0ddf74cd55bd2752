//! `skiff-bench partitions` (issue 12 item 11): a broker with many partitions under produce
//! load, then its restart and shutdown times.
//!
//! Mental model: the benchmark owns the broker. It starts `skiff serve` (the `--skiff` binary,
//! a release build) on a fresh `--dir`, creates one topic of `--partitions` partitions, and
//! produces for `--seconds` over `--connections` connections, each keeping `--in-flight`
//! requests pipelined; every request carries one batch (10 records, `--batch-bytes` in all) for
//! the next partition of that connection's share, round-robin, so every partition is written
//! all the time (the load under which sparse index mappings zero-filled the page cache). It
//! counts answers per 1-s window since the start and records each request's latency. Then:
//! SIGKILL right after the load and the unclean restart's time (spawn to the `skiff ready`
//! line, i.e. every log loaded and the listeners bound), a SIGTERM shutdown's time (signal to
//! exit), a clean restart, SIGKILL of the idle broker, its unclean restart, a last SIGTERM.
//!
//! Output: the figures, one per line, `partitions: key=value`. Broker stderr goes to
//! `<dir>/broker.log`. Everything under `<dir>` is deleted at the start (not at the end, so the
//! log can be read).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use hdrhistogram::Histogram;
use skiff_protocol::{
    ApiKey, CreatableTopic, CreateTopicsRequest, PartitionProduceData, ProduceRequest, Records,
    ResponseBody, TopicProduceData,
};
use skiff_record::{BatchBuilder, BatchOptions};

use crate::produce_gen::Conn;

const TOPIC: &str = "many";
const PRODUCE_VERSION: i16 = 11;
const READY_DEADLINE: Duration = Duration::from_secs(300);

/// The `partitions` subcommand's arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The skiff binary to run (a release build).
    #[arg(long, default_value = "target/release/skiff")]
    pub skiff: PathBuf,
    /// Scratch directory for the broker's data (wiped first). Not a tmpfs.
    #[arg(long, default_value = "./bench-data/partitions")]
    pub dir: PathBuf,
    #[arg(long, default_value_t = 5000)]
    pub partitions: usize,
    /// Length of the produce run.
    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
    #[arg(long, default_value_t = 4)]
    pub connections: usize,
    /// Requests pipelined per connection.
    #[arg(long, default_value_t = 32)]
    pub in_flight: usize,
    /// Bytes of record values per request (one batch of 10 records).
    #[arg(long, default_value_t = 1000)]
    pub batch_bytes: usize,
}

struct Broker {
    child: Child,
    addr: String,
    /// Spawn to ready line.
    ready_after: Duration,
}

fn spawn(a: &Args, data: &Path, log: &Path) -> Result<Broker> {
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let started = Instant::now();
    let mut child = Command::new(&a.skiff)
        .arg("serve")
        .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .arg("--override")
        .arg(format!("log.dirs={}", data.display()))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("spawn {}", a.skiff.display()))?;
    let stdout = child.stdout.take().context("piped stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(READY_DEADLINE)
        .context("no ready line within 300 s (see broker.log)")?;
    let ready_after = started.elapsed();
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("bind="))
        .with_context(|| format!("unexpected ready line {line:?}"))?
        .to_string();
    Ok(Broker {
        child,
        addr,
        ready_after,
    })
}

fn wait_exit(child: &mut Child) -> Result<std::process::ExitStatus> {
    let deadline = Instant::now() + READY_DEADLINE;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(s);
        }
        if Instant::now() > deadline {
            bail!("the broker did not exit within 300 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGTERM to exit.
fn sigterm(b: &mut Broker) -> Result<Duration> {
    let t = Instant::now();
    let pid = rustix::process::Pid::from_child(&b.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
    let status = wait_exit(&mut b.child)?;
    let took = t.elapsed();
    if !status.success() {
        bail!("SIGTERM exit status {status:?}");
    }
    Ok(took)
}

/// One connection's share of the produce run.
#[derive(Default)]
struct Tally {
    per_second: Vec<u64>,
    errors: u64,
}

fn produce(a: &Args, addr: &str) -> Result<(Tally, Histogram<u64>)> {
    let value_len = (a.batch_bytes / 10).max(1);
    let mut b = BatchBuilder::new(BatchOptions::default());
    let value = vec![b'v'; value_len];
    for _ in 0..10 {
        b.append(1_700_000_000_000, None, Some(&value), &[]);
    }
    let batch = Bytes::from(b.build()?);
    let start = Instant::now();
    let end = start + Duration::from_secs(a.seconds);
    let results: Vec<Result<(Tally, Histogram<u64>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.connections.max(1))
            .map(|k| {
                let batch = batch.clone();
                s.spawn(move || run_connection(a, addr, k, &batch, start, end))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("thread panicked")))
            })
            .collect()
    });
    let mut total = Tally::default();
    let mut hist = Histogram::<u64>::new(3)?;
    for r in results {
        let (t, h) = r?;
        if total.per_second.len() < t.per_second.len() {
            total.per_second.resize(t.per_second.len(), 0);
        }
        for (i, n) in t.per_second.iter().enumerate() {
            total.per_second[i] += n;
        }
        total.errors += t.errors;
        hist.add(h)?;
    }
    Ok((total, hist))
}

fn run_connection(
    a: &Args,
    addr: &str,
    k: usize,
    batch: &Bytes,
    start: Instant,
    end: Instant,
) -> Result<(Tally, Histogram<u64>)> {
    let mut c = Conn::open(addr)?;
    let n = a.connections.max(1);
    let mine: Vec<i32> = (0..a.partitions)
        .filter(|p| p % n == k)
        .map(|p| p as i32)
        .collect();
    if mine.is_empty() {
        return Ok((Tally::default(), Histogram::new(3)?));
    }
    let mut next = 0usize;
    let mut in_flight = std::collections::VecDeque::new();
    let mut tally = Tally::default();
    let mut hist = Histogram::<u64>::new(3)?;
    loop {
        while in_flight.len() < a.in_flight.max(1) && Instant::now() < end {
            let p = mine[next % mine.len()];
            next += 1;
            let req = ProduceRequest {
                acks: -1,
                timeout_ms: 30_000,
                topic_data: vec![TopicProduceData {
                    name: TOPIC.into(),
                    partition_data: vec![PartitionProduceData {
                        index: p,
                        records: Some(Records::Bytes(batch.clone())),
                    }],
                }],
                ..ProduceRequest::default()
            };
            let cid = c.send(PRODUCE_VERSION, req.into())?;
            in_flight.push_back((cid, Instant::now()));
        }
        let Some((cid, sent)) = in_flight.pop_front() else {
            break;
        };
        let body = c.recv(ApiKey::Produce, PRODUCE_VERSION, cid)?;
        let now = Instant::now();
        let ResponseBody::Produce(r) = body else {
            bail!("not a Produce response");
        };
        let ok = r
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .all(|p| p.error_code == 0);
        if !ok {
            tally.errors += 1;
        }
        let _ = hist.record(now.duration_since(sent).as_micros() as u64);
        let second = now.duration_since(start).as_secs() as usize;
        if tally.per_second.len() <= second {
            tally.per_second.resize(second + 1, 0);
        }
        tally.per_second[second] += 1;
    }
    Ok((tally, hist))
}

/// Runs the benchmark and prints the figures.
pub fn main(a: Args) -> Result<()> {
    if a.dir.exists() {
        std::fs::remove_dir_all(&a.dir).with_context(|| format!("wipe {}", a.dir.display()))?;
    }
    std::fs::create_dir_all(&a.dir)?;
    let data = a.dir.join("data");
    let log = a.dir.join("broker.log");
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "partitions: skiff={} partitions={} seconds={} connections={} in_flight={} batch_bytes={} cores={cores}",
        a.skiff.display(),
        a.partitions,
        a.seconds,
        a.connections,
        a.in_flight,
        a.batch_bytes
    );

    let mut b = spawn(&a, &data, &log)?;
    println!(
        "partitions: first_start_ready_ms={}",
        b.ready_after.as_millis()
    );
    let t = Instant::now();
    let mut c = Conn::open(&b.addr)?;
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: TOPIC.into(),
            num_partitions: i32::try_from(a.partitions)?,
            replication_factor: 1,
            ..CreatableTopic::default()
        }],
        timeout_ms: 300_000,
        ..CreateTopicsRequest::default()
    };
    let ResponseBody::CreateTopics(r) = c.call(7, req.into())? else {
        bail!("not a CreateTopics response");
    };
    if let Some(t) = r.topics.first()
        && t.error_code != 0
    {
        bail!("CreateTopics: error {} {:?}", t.error_code, t.error_message);
    }
    let n = c.partitions(TOPIC)?;
    println!(
        "partitions: create_topic_ms={} partitions_with_leader={n}",
        t.elapsed().as_millis()
    );
    drop(c);

    let (tally, hist) = produce(&a, &b.addr)?;
    // Whole seconds only: the last window is cut short by the end of the run.
    let full = &tally.per_second[..tally.per_second.len().saturating_sub(1)];
    let total: u64 = tally.per_second.iter().sum();
    let min = full.iter().min().copied().unwrap_or(0);
    let max = full.iter().max().copied().unwrap_or(0);
    let below_half = full
        .iter()
        .filter(|w| (**w as f64) < 0.5 * (total as f64 / a.seconds.max(1) as f64))
        .count();
    println!(
        "partitions: produce_requests={total} req_per_s={:.0} min_1s_window={min} max_1s_window={max} windows_below_half_mean={below_half} errors={}",
        total as f64 / a.seconds.max(1) as f64,
        tally.errors
    );
    println!(
        "partitions: latency_us p50={} p99={} p999={} max={}",
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99),
        hist.value_at_quantile(0.999),
        hist.max()
    );
    println!(
        "partitions: per_second={}",
        tally
            .per_second
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );

    // Kill -9 right after the load, unclean restart, SIGTERM; clean restart; kill -9 while
    // idle, unclean restart, SIGTERM.
    b.child.kill()?;
    wait_exit(&mut b.child)?;
    let mut b = spawn(&a, &data, &log)?;
    println!(
        "partitions: unclean_restart_after_load_ready_ms={}",
        b.ready_after.as_millis()
    );
    let took = sigterm(&mut b)?;
    println!(
        "partitions: sigterm_after_unclean_restart_ms={}",
        took.as_millis()
    );
    let mut b = spawn(&a, &data, &log)?;
    println!(
        "partitions: clean_restart_ready_ms={}",
        b.ready_after.as_millis()
    );
    b.child.kill()?;
    wait_exit(&mut b.child)?;
    let mut b = spawn(&a, &data, &log)?;
    println!(
        "partitions: unclean_restart_idle_ready_ms={}",
        b.ready_after.as_millis()
    );
    let took = sigterm(&mut b)?;
    println!("partitions: sigterm_idle_ms={}", took.as_millis());
    Ok(())
}
