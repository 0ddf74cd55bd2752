//! `skiff-bench produce`: a pipelining Produce load generator speaking the Kafka protocol
//! directly (issue 5's cell P4: an idempotent producer that keeps several requests in flight
//! per partition, as the Java client does, which librdkafka does not).
//!
//! Mental model: one blocking TCP connection to one broker, like a client's. Metadata (polled
//! until the topic has a leader for every partition), InitProducerId when idempotent, then one
//! warm-up request (one record per partition, untimed), then the timed run: requests planned by
//! [`Planner`] (full batches of `batch_size` bytes of random `record_bytes`-byte values,
//! `acks=-1`), at most `max_in_flight` unanswered at any time, answers read in order and each
//! checked by [`Checker`] (error 0, base offsets consecutive per partition). Linger does not
//! apply: a closed-loop producer always has full batches. The clock runs from the first timed
//! request to the last answer; CPU is this process's and, with `--broker-pid`, the broker's,
//! both from `/proc/<pid>/stat` over the same window; with `--broker-pid` also the broker's
//! threads by name from `/proc/<pid>/task/<tid>/stat` (`skiff-worker`: the tokio runtime, i.e.
//! the produce path; `skiff-cleaner-N`: the log cleaner), summed per class over the threads
//! alive at the end of the window (a thread that exits inside the window is only in the
//! process total).
//!
//! Record content (bench2): `--keys N` gives every record a key from a space of N
//! (compacted topics need keys); `--delay-percent P` puts a `__delay_ms: <--delay-ms>` header
//! on the first record of P% of the timed batches, evenly spread ([`DelaySpread`]);
//! `--rate-mb R` paces the run to R MB/s of values (a background load, e.g. one keeping a
//! compacted topic dirty while another generator measures).
//!
//! Transactions (issue 18): `--transactional-id ID --records-per-txn N` makes it a
//! transactional producer ([`crate::txn_gen`]): the run is cut into transactions of N records,
//! each AddPartitionsToTxn, pipelined transactional batches, EndTxn commit; the warm-up is a
//! transaction of its own. `--drain-every N --extra-round-trips K` measures the round-trip
//! limit of that shape without transactions: an idempotent run that, every N records, drains
//! and then makes K no-op round trips (`txn_gen`'s module doc).
//!
//! Output: one `produce: key=value ...` line (parsed by `bench/idempotence/`), then exit 0; any
//! unexpected answer is an error (exit 1). It is a benchmark tool, not a client: no retries,
//! no reconnects, no leader changes.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::{Bytes, BytesMut};
use skiff_protocol::{
    ApiKey, MetadataRequest, MetadataRequestTopic, PartitionProduceData, ProduceRequest, Records,
    RequestBody, RequestHeader, ResponseBody, TopicProduceData, decode_response, encode_request,
};
use skiff_record::{BatchBuilder, BatchOptions, Header};

use crate::fetch_gen::{sched_delta_ms, sched_ns};
use crate::payload::Rng;
use crate::produce_plan::{
    BatchPlan, Checker, DelaySpread, PartitionAnswer, Planner, pace_sleep, record_key,
};
use crate::txn_gen::{DrainStats, Feed, Next, Txn, TxnStats};

/// The delivery header (`skiff_storage::delivery::DELAY_HEADER`; the bench speaks the wire).
const DELAY_HEADER: &str = "__delay_ms";

const PRODUCE_VERSION: i16 = 11;
const METADATA_VERSION: i16 = 12;
/// Every blocking read or write, and the metadata wait, is bounded by this.
const DEADLINE: Duration = Duration::from_secs(30);
/// Distinct random values cycled through (so batches are not all one repeated value).
const VALUES: usize = 64;

/// The `produce` subcommand's arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Broker address host:port (one broker: the generator opens one connection).
    #[arg(long)]
    pub bootstrap: String,
    /// An existing topic (every partition is written, round-robin).
    #[arg(long)]
    pub topic: String,
    /// Records to produce in the timed run (after one warm-up record per partition).
    #[arg(long, default_value_t = 390_625)]
    pub records: u64,
    /// Value size of each record (random bytes, no key).
    #[arg(long, default_value_t = 1024)]
    pub record_bytes: usize,
    /// Maximum encoded size of one batch, as the Java client's batch.size.
    #[arg(long, default_value_t = 16_384)]
    pub batch_size: usize,
    /// Maximum size of one request's batches (max.request.size).
    #[arg(long, default_value_t = 1_048_576)]
    pub max_request_size: usize,
    /// Requests in flight on the connection (max.in.flight.requests.per.connection).
    #[arg(long, default_value_t = 5)]
    pub max_in_flight: usize,
    /// Idempotent producer: InitProducerId, then producer id, epoch 0 and sequences.
    #[arg(long)]
    pub idempotent: bool,
    /// Also reports this process's CPU (the broker's) over the timed window.
    #[arg(long)]
    pub broker_pid: Option<u32>,
    /// Size of the key space (record i has key `k%08d` of i mod N); 0 = no keys.
    #[arg(long, default_value_t = 0)]
    pub keys: u64,
    /// Share of timed batches (0-100) whose first record carries a `__delay_ms` header.
    #[arg(long, default_value_t = 0.0)]
    pub delay_percent: f64,
    /// The `__delay_ms` value (below the broker's `delivery.delay.max.ms`, 900000 by default;
    /// the default keeps every delayed batch pending for the whole run).
    #[arg(long, default_value_t = 600_000)]
    pub delay_ms: u64,
    /// Pace the run to this many MB/s of record values (default: as fast as answers come).
    #[arg(long)]
    pub rate_mb: Option<f64>,
    /// A transactional producer with this id (implies --idempotent): transactions of
    /// --records-per-txn records, each committed.
    #[arg(long)]
    pub transactional_id: Option<String>,
    #[arg(long, default_value_t = 1000)]
    pub records_per_txn: u64,
    /// Wait before retrying CONCURRENT_TRANSACTIONS (the previous commit's markers not yet
    /// written); the Java client waits 20 ms.
    #[arg(long, default_value_t = 1)]
    pub txn_retry_ms: u64,
    /// Round-trip limit: every N records, wait for every answer, then --extra-round-trips
    /// no-op round trips (ApiVersions) on the same connection.
    #[arg(long)]
    pub drain_every: Option<u64>,
    #[arg(long, default_value_t = 2)]
    pub extra_round_trips: u32,
}

/// Runs the subcommand: prints the `produce:` line.
pub fn main(a: Args) -> Result<()> {
    let opts = Options {
        bootstrap: a.bootstrap,
        topic: a.topic,
        records: a.records,
        record_bytes: a.record_bytes,
        batch_size: a.batch_size,
        max_request_size: a.max_request_size,
        max_in_flight: a.max_in_flight,
        idempotent: a.idempotent,
        broker_pid: a.broker_pid,
        keys: a.keys,
        delay_percent: a.delay_percent,
        delay_ms: a.delay_ms,
        rate_mb: a.rate_mb,
        transactional_id: a.transactional_id,
        records_per_txn: a.records_per_txn,
        txn_retry_ms: a.txn_retry_ms,
        drain: a.drain_every.map(|n| (n, a.extra_round_trips)),
    };
    println!(
        "{}",
        run(&opts)?.line(opts.idempotent || opts.transactional_id.is_some())
    );
    Ok(())
}

/// What to produce.
#[derive(Clone, Debug)]
pub struct Options {
    pub bootstrap: String,
    pub topic: String,
    pub records: u64,
    pub record_bytes: usize,
    pub batch_size: usize,
    pub max_request_size: usize,
    pub max_in_flight: usize,
    pub idempotent: bool,
    pub broker_pid: Option<u32>,
    pub keys: u64,
    pub delay_percent: f64,
    pub delay_ms: u64,
    pub rate_mb: Option<f64>,
    pub transactional_id: Option<String>,
    pub records_per_txn: u64,
    pub txn_retry_ms: u64,
    /// Round-trip limit: (records per drain, no-op round trips after each).
    pub drain: Option<(u64, u32)>,
}

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub producer_id: i64,
    pub partitions: usize,
    pub records: u64,
    pub requests: u64,
    pub seconds: f64,
    pub payload_mb: f64,
    pub mean_rtt_ms: f64,
    pub client_cpu_ms: f64,
    pub broker_cpu_ms: Option<f64>,
    /// CPU of the broker's threads named `skiff-worker` and `skiff-cleaner*` over the window.
    pub broker_threads_cpu_ms: Option<ThreadCpu>,
    /// The broker's CPU from its threads' schedstat (ns resolution; threads alive at the end).
    pub broker_sched_ms: Option<f64>,
    pub records_per_batch: usize,
    pub keys: u64,
    pub delayed_batches: u64,
    pub batches: u64,
    /// Transactional mode: records per transaction and the figures of [`TxnStats`].
    pub txn: Option<(u64, TxnStats)>,
    pub drain: Option<DrainStats>,
}

/// CPU of the broker's thread classes over a window, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadCpu {
    pub workers: f64,
    pub cleaners: f64,
}

impl Outcome {
    /// The `produce: key=value ...` line.
    pub fn line(&self, idempotent: bool) -> String {
        let mut s = format!(
            "produce: idempotent={} producer_id={} partitions={} records={} records_per_batch={} \
             requests={} seconds={:.4} mb={:.3} mb_per_s={:.2} records_per_s={:.0} \
             kib_per_request={:.1} rtt_ms={:.3} client_cpu_ms={:.0} client_cpu_ms_per_mb={:.3}",
            idempotent,
            self.producer_id,
            self.partitions,
            self.records,
            self.records_per_batch,
            self.requests,
            self.seconds,
            self.payload_mb,
            self.payload_mb / self.seconds,
            self.records as f64 / self.seconds,
            self.payload_mb * 1e6 / 1024.0 / self.requests.max(1) as f64,
            self.mean_rtt_ms,
            self.client_cpu_ms,
            self.client_cpu_ms / self.payload_mb,
        );
        s.push_str(&format!(
            " keys={} batches={} delayed_batches={}",
            self.keys, self.batches, self.delayed_batches
        ));
        if let Some((n, t)) = self.txn {
            s.push_str(&format!(
                " records_per_txn={n} txns={} txn_retries={} add_ms_per_txn={:.3} \
                 end_ms_per_txn={:.3}",
                t.committed,
                t.retries,
                t.add_ms / t.committed.max(1) as f64,
                t.end_ms / t.committed.max(1) as f64
            ));
        }
        s.push_str(&self.drain.map(|d| d.line()).unwrap_or_default());
        if let Some(b) = self.broker_cpu_ms {
            s.push_str(&format!(
                " broker_cpu_ms={b:.0} broker_cpu_ms_per_mb={:.3}",
                b / self.payload_mb
            ));
        }
        if let Some(b) = self.broker_sched_ms {
            let per_mb = b / self.payload_mb;
            s.push_str(&format!(
                " broker_sched_ms={b:.1} broker_sched_ms_per_mb={per_mb:.4}"
            ));
        }
        if let Some(t) = self.broker_threads_cpu_ms {
            s.push_str(&format!(
                " worker_cpu_ms={:.0} worker_cpu_ms_per_mb={:.3} cleaner_cpu_ms={:.0} \
                 cleaner_cpu_ms_per_mb={:.3}",
                t.workers,
                t.workers / self.payload_mb,
                t.cleaners,
                t.cleaners / self.payload_mb
            ));
        }
        s
    }
}

/// utime + stime of a process in ms (`/proc/<pid>/stat` fields 14 and 15, in USER_HZ = 100
/// ticks on Linux).
pub fn cpu_ms(pid: Option<u32>) -> Result<f64> {
    let path = pid.map_or_else(
        || "/proc/self/stat".to_string(),
        |p| format!("/proc/{p}/stat"),
    );
    let stat = std::fs::read_to_string(&path).with_context(|| path.clone())?;
    let rest = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .context("malformed stat")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Result<f64> {
        let v: u64 = f.get(i).context("short stat")?.parse()?;
        Ok(v as f64 * 10.0)
    };
    // After ")": state is field 3, utime field 14 -> index 11, stime index 12.
    Ok(tick(11)? + tick(12)?)
}

/// `(comm, utime + stime ms)` of one `/proc/.../stat` line (the name is between the first
/// `(` and the last `)`, and may contain spaces or parentheses).
pub fn parse_stat(stat: &str) -> Result<(String, f64)> {
    let open = stat.find('(').context("malformed stat")?;
    let close = stat.rfind(')').context("malformed stat")?;
    let comm = stat
        .get(open + 1..close)
        .context("malformed stat")?
        .to_string();
    let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    let tick = |i: usize| -> Result<f64> {
        let v: u64 = f.get(i).context("short stat")?.parse()?;
        Ok(v as f64 * 10.0)
    };
    Ok((comm, tick(11)? + tick(12)?))
}

/// Every thread of `pid`: `(tid, comm, cpu ms)`. Threads that exit while the directory is
/// read are skipped.
pub fn threads_cpu(pid: u32) -> Result<Vec<(u64, String, f64)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let e = e?;
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let (comm, ms) = parse_stat(&stat)?;
        out.push((tid, comm, ms));
    }
    Ok(out)
}

/// Per-class CPU between two [`threads_cpu`] snapshots (a thread new at the end counts from 0).
pub fn thread_cpu_delta(before: &[(u64, String, f64)], after: &[(u64, String, f64)]) -> ThreadCpu {
    let mut t = ThreadCpu::default();
    for (tid, comm, ms) in after {
        let was = before
            .iter()
            .find(|(b, _, _)| b == tid)
            .map_or(0.0, |(_, _, m)| *m);
        if comm == "skiff-worker" {
            t.workers += ms - was;
        } else if comm.starts_with("skiff-cleaner") {
            t.cleaners += ms - was;
        }
    }
    t
}

/// Records of `record_bytes` that fit one batch of at most `batch_size` bytes (at least 1),
/// and that batch's encoded size, measured with the real encoder (uncompressed: the batch is
/// its fixed header plus the records section).
#[cfg(test)]
pub fn records_per_batch(record_bytes: usize, batch_size: usize) -> Result<(usize, usize)> {
    records_per_batch_keyed(record_bytes, 0, batch_size)
}

/// [`records_per_batch`] with a `key_bytes`-byte key on every record (0: no key).
pub fn records_per_batch_keyed(
    record_bytes: usize,
    key_bytes: usize,
    batch_size: usize,
) -> Result<(usize, usize)> {
    let value = vec![0u8; record_bytes];
    let key_buf = vec![b'k'; key_bytes];
    let key = (key_bytes > 0).then_some(key_buf.as_slice());
    let mut one = BatchBuilder::new(idempotent_opts(0, 0));
    one.append(0, key, Some(&value), &[]);
    let header = one.uncompressed_records_bytes();
    let header = one.build()?.len() - header;
    let mut b = BatchBuilder::new(idempotent_opts(0, 0));
    let mut size = header;
    loop {
        b.append(0, key, Some(&value), &[]);
        let next = header + b.uncompressed_records_bytes();
        if next > batch_size {
            return Ok(if b.len() == 1 {
                (1, next)
            } else {
                (b.len() - 1, size)
            });
        }
        size = next;
    }
}

fn idempotent_opts(producer_id: i64, base_sequence: i32) -> BatchOptions {
    BatchOptions {
        producer_id,
        producer_epoch: 0,
        base_sequence,
        ..BatchOptions::default()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One blocking connection (also used by `partitions`).
pub(crate) struct Conn {
    stream: TcpStream,
    next_cid: i32,
}

impl Conn {
    pub(crate) fn open(addr: &str) -> Result<Conn> {
        let stream = TcpStream::connect(addr).with_context(|| format!("connect {addr}"))?;
        stream.set_read_timeout(Some(DEADLINE))?;
        stream.set_write_timeout(Some(DEADLINE))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            next_cid: 1,
        })
    }

    /// Sends a request; returns its correlation id.
    pub(crate) fn send(&mut self, version: i16, body: RequestBody) -> Result<i32> {
        let correlation_id = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some("skiff-bench-produce".into()),
        };
        let mut out = BytesMut::new();
        encode_request(&header, &body, &mut out)?;
        self.stream.write_all(&out)?;
        Ok(correlation_id)
    }

    /// Reads the next response, which must be for `cid`.
    pub(crate) fn recv(&mut self, key: ApiKey, version: i16, cid: i32) -> Result<ResponseBody> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).context("response size")?;
        let size = usize::try_from(i32::from_be_bytes(size)).context("negative frame size")?;
        let mut buf = vec![0u8; size];
        self.stream.read_exact(&mut buf).context("response body")?;
        let (h, body) = decode_response(key, version, Bytes::from(buf))?;
        if h.correlation_id != cid {
            bail!(
                "answer for correlation id {} while {cid} was next",
                h.correlation_id
            );
        }
        Ok(body)
    }

    pub(crate) fn call(&mut self, version: i16, body: RequestBody) -> Result<ResponseBody> {
        let key = body.api_key();
        let cid = self.send(version, body)?;
        self.recv(key, version, cid)
    }

    /// Partition count of `topic`, once every partition has a leader.
    pub(crate) fn partitions(&mut self, topic: &str) -> Result<usize> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let req = MetadataRequest {
                topics: Some(vec![MetadataRequestTopic {
                    name: Some(topic.into()),
                    ..MetadataRequestTopic::default()
                }]),
                allow_auto_topic_creation: false,
                ..MetadataRequest::default()
            };
            let ResponseBody::Metadata(r) = self.call(METADATA_VERSION, req.into())? else {
                bail!("not a Metadata response");
            };
            if let Some(t) = r.topics.first()
                && t.error_code == 0
                && !t.partitions.is_empty()
                && t.partitions
                    .iter()
                    .all(|p| p.error_code == 0 && p.leader_id >= 0)
            {
                return Ok(t.partitions.len());
            }
            if Instant::now() > deadline {
                bail!("topic {topic} has no leader for every partition within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Builds one request's batches.
struct Encoder {
    topic: String,
    producer_id: i64,
    producer_epoch: i16,
    transactional_id: Option<String>,
    values: Vec<Vec<u8>>,
    next_value: usize,
    keys: u64,
    next_record: u64,
    delays: DelaySpread,
    delay_value: Vec<u8>,
    batches: u64,
    delayed_batches: u64,
}

impl Encoder {
    /// `timed`: the batches count for `--delay-percent` (the warm-up's do not).
    fn request(&mut self, plan: &[BatchPlan], timed: bool) -> Result<RequestBody> {
        let ts = now_ms();
        let mut partition_data = Vec::with_capacity(plan.len());
        for b in plan {
            let mut builder = BatchBuilder::new(if self.producer_id >= 0 {
                BatchOptions {
                    producer_epoch: self.producer_epoch,
                    is_transactional: self.transactional_id.is_some(),
                    ..idempotent_opts(self.producer_id, b.base_sequence)
                }
            } else {
                BatchOptions::default()
            });
            let delayed = timed && self.delays.next_is_delayed();
            if timed {
                self.batches += 1;
                self.delayed_batches += u64::from(delayed);
            }
            for i in 0..b.records {
                let v = &self.values[self.next_value];
                self.next_value = (self.next_value + 1) % self.values.len();
                let key = record_key(self.next_record, self.keys);
                self.next_record += 1;
                let delay = [Header {
                    key: DELAY_HEADER.as_bytes(),
                    value: Some(self.delay_value.as_slice()),
                }];
                let headers: &[Header<'_>] = if delayed && i == 0 { &delay } else { &[] };
                builder.append(ts, key.as_deref(), Some(v), headers);
            }
            partition_data.push(PartitionProduceData {
                index: b.partition,
                records: Some(Records::Bytes(Bytes::from(builder.build()?))),
            });
        }
        Ok(ProduceRequest {
            transactional_id: self.transactional_id.clone(),
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: self.topic.clone(),
                partition_data,
            }],
        }
        .into())
    }
}

fn answers(body: ResponseBody) -> Result<Vec<PartitionAnswer>> {
    let ResponseBody::Produce(r) = body else {
        bail!("not a Produce response");
    };
    Ok(r.responses
        .iter()
        .flat_map(|t| t.partition_responses.iter())
        .map(|p| PartitionAnswer {
            partition: p.index,
            error_code: p.error_code,
            base_offset: p.base_offset,
        })
        .collect())
}

/// Runs the generator.
pub fn run(opts: &Options) -> Result<Outcome> {
    let key_bytes = record_key(0, opts.keys).map_or(0, |k| k.len());
    let (per_batch, batch_bytes) =
        records_per_batch_keyed(opts.record_bytes, key_bytes, opts.batch_size)?;
    let max_request_batches = (opts.max_request_size / batch_bytes.max(1)).max(1);
    let mut rng = Rng::new(0x5eed_1de0);
    let values = (0..VALUES)
        .map(|_| {
            (0..opts.record_bytes)
                .map(|_| rng.next_u64() as u8)
                .collect()
        })
        .collect();
    let mut conn = Conn::open(&opts.bootstrap)?;
    let partitions = conn.partitions(&opts.topic)?;
    let txn = match &opts.transactional_id {
        Some(id) => Some(Txn::init(
            &mut conn,
            id,
            &opts.topic,
            opts.records_per_txn,
            Duration::from_millis(opts.txn_retry_ms),
        )?),
        None => None,
    };
    let (producer_id, producer_epoch) = match (&txn, opts.idempotent) {
        (Some(t), _) => (t.producer_id, t.producer_epoch),
        (None, true) => crate::txn_gen::init_producer_id(&mut conn, None)?,
        (None, false) => (-1, -1),
    };
    let mut enc = Encoder {
        topic: opts.topic.clone(),
        producer_id,
        producer_epoch,
        transactional_id: txn.as_ref().map(|t| t.id().to_string()),
        values,
        next_value: 0,
        keys: opts.keys,
        next_record: 0,
        delays: DelaySpread::new(opts.delay_percent),
        delay_value: opts.delay_ms.to_string().into_bytes(),
        batches: 0,
        delayed_batches: 0,
    };
    let planner = Planner::new(
        partitions,
        per_batch,
        max_request_batches,
        producer_id >= 0,
        opts.records,
    );
    let mut feed = Feed::new(planner, txn, opts.drain)?;
    let mut checker = Checker::new(partitions);
    let warm = feed.warmup(&mut conn)?;
    let got = answers(conn.call(PRODUCE_VERSION, enc.request(&warm, false)?)?)?;
    checker
        .check(&warm, &got)
        .map_err(|e| anyhow::anyhow!("warm-up: {e}"))?;
    feed.warmup_done(&mut conn, &mut checker)?;

    let max_in_flight = opts.max_in_flight.max(1);
    let mut in_flight: VecDeque<(i32, Vec<BatchPlan>, Instant)> = VecDeque::new();
    let (mut requests, mut rtt_total) = (0u64, Duration::ZERO);
    let broker0 = opts.broker_pid.map(|p| cpu_ms(Some(p))).transpose()?;
    let threads0 = opts.broker_pid.map(threads_cpu).transpose()?;
    let sched0 = opts.broker_pid.map(sched_ns).transpose()?;
    let (self0, t0) = (cpu_ms(None)?, Instant::now());
    let mut sent_bytes = 0u64;
    loop {
        while in_flight.len() < max_in_flight
            && pace_sleep(opts.rate_mb, sent_bytes, t0.elapsed()).is_zero()
            && let Next::Send(plan) = feed.next(&mut conn, in_flight.is_empty(), &mut checker)?
        {
            sent_bytes +=
                plan.iter().map(|b| b.records as u64).sum::<u64>() * opts.record_bytes as u64;
            let req = enc.request(&plan, true)?;
            let cid = conn.send(PRODUCE_VERSION, req)?;
            in_flight.push_back((cid, plan, Instant::now()));
        }
        let Some((cid, plan, sent)) = in_flight.pop_front() else {
            let wait = pace_sleep(opts.rate_mb, sent_bytes, t0.elapsed());
            if wait.is_zero() {
                break;
            }
            std::thread::sleep(wait);
            continue;
        };
        let got = answers(conn.recv(ApiKey::Produce, PRODUCE_VERSION, cid)?)?;
        rtt_total += sent.elapsed();
        requests += 1;
        checker
            .check(&plan, &got)
            .map_err(|e| anyhow::anyhow!("request {requests}: {e}"))?;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let client_cpu_ms = cpu_ms(None)? - self0;
    let broker_cpu_ms = match (opts.broker_pid, broker0) {
        (Some(p), Some(b0)) => Some(cpu_ms(Some(p))? - b0),
        _ => None,
    };
    let broker_sched_ms = match (opts.broker_pid, sched0) {
        (Some(p), Some(s0)) => Some(sched_delta_ms(&s0, &sched_ns(p)?)),
        _ => None,
    };
    let broker_threads_cpu_ms = match (opts.broker_pid, threads0) {
        (Some(p), Some(t0)) => Some(thread_cpu_delta(&t0, &threads_cpu(p)?)),
        _ => None,
    };
    Ok(Outcome {
        producer_id,
        partitions,
        records: opts.records,
        requests,
        seconds,
        payload_mb: opts.records as f64 * opts.record_bytes as f64 / 1e6,
        mean_rtt_ms: rtt_total.as_secs_f64() * 1000.0 / requests.max(1) as f64,
        client_cpu_ms,
        broker_cpu_ms,
        broker_threads_cpu_ms,
        broker_sched_ms,
        records_per_batch: per_batch,
        keys: opts.keys,
        delayed_batches: enc.delayed_batches,
        batches: enc.batches,
        drain: feed.drain,
        txn: feed.txn.map(|t| (opts.records_per_txn, t.stats)),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn batch_size_counts_whole_encoded_batches() {
        // Java's and the brief's default: 15 records of 1 KiB fit 16384 bytes, 16 do not.
        let (n, size) = records_per_batch(1024, 16384).unwrap();
        assert_eq!(n, 15);
        let mut b = BatchBuilder::new(idempotent_opts(7, 0));
        for _ in 0..n {
            b.append(0, None, Some(&[1u8; 1024]), &[]);
        }
        assert_eq!(
            b.build().unwrap().len(),
            size,
            "the predicted batch size is exact"
        );
        assert!(size <= 16384);
        assert_eq!(records_per_batch(1024, 100).unwrap().0, 1, "at least one");
        let (n, size) = records_per_batch(1024, 1_000_000).unwrap();
        assert!((960..=970).contains(&n) && size <= 1_000_000, "{n} {size}");
    }

    #[test]
    fn own_cpu_is_readable() {
        assert!(cpu_ms(None).unwrap() >= 0.0);
        let me = threads_cpu(std::process::id()).unwrap();
        assert!(!me.is_empty());
        assert!(me.iter().all(|(_, _, ms)| *ms >= 0.0));
    }

    #[test]
    fn stat_lines_parse_with_odd_names() {
        let line = |comm: &str, u: u64, s: u64| {
            format!("42 ({comm}) S 1 42 42 0 -1 4194560 100 0 0 0 {u} {s} 0 0 20 0 3 0")
        };
        assert_eq!(
            parse_stat(&line("skiff-worker", 7, 3)).unwrap(),
            ("skiff-worker".to_string(), 100.0)
        );
        assert_eq!(parse_stat(&line("a) (b", 1, 0)).unwrap().0, "a) (b");
        assert!(parse_stat("42 (x) S 1").is_err(), "short");
        assert!(parse_stat("no parentheses").is_err());
    }

    #[test]
    fn thread_classes_sum_deltas() {
        let t = |tid, comm: &str, ms| (tid, comm.to_string(), ms);
        let before = vec![
            t(1, "skiff", 100.0),
            t(2, "skiff-worker", 50.0),
            t(3, "skiff-worker", 10.0),
            t(4, "skiff-cleaner-0", 5.0),
        ];
        let after = vec![
            t(1, "skiff", 900.0),
            t(2, "skiff-worker", 80.0),
            t(3, "skiff-worker", 10.0),
            t(4, "skiff-cleaner-0", 25.0),
            t(5, "skiff-worker", 7.0), // new: counted from 0
            t(6, "skiff-cleaner-1", 1.0),
        ];
        assert_eq!(
            thread_cpu_delta(&before, &after),
            ThreadCpu {
                workers: 37.0,
                cleaners: 21.0
            }
        );
    }

    #[test]
    fn keyed_batches_fit_the_batch_size() {
        let (n, size) = records_per_batch_keyed(1024, 9, 16384).unwrap();
        assert!(n >= 14 && size <= 16384, "{n} {size}");
        let mut b = BatchBuilder::new(idempotent_opts(7, 0));
        for i in 0..n {
            b.append(
                0,
                record_key(i as u64, 100).as_deref(),
                Some(&[1u8; 1024]),
                &[],
            );
        }
        assert_eq!(b.build().unwrap().len(), size);
    }
}
