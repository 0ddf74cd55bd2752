//! `skiff-bench fetch`: a consumer's Fetch loop over one topic, for the broker's fetch CPU per
//! MB (issue 18: read_committed against read_uncommitted); and `skiff-bench topic`, the
//! CreateTopics / DeleteTopics the transaction benchmark's cells need.
//!
//! Mental model: one blocking connection, like a consumer's one fetch in flight per broker.
//! Each pass reads every partition of the topic from offset 0 to its end: the high watermark
//! (isolation level 0, read_uncommitted) or the last stable offset (1, read_committed) of the
//! partition's first answer in the pass (the topic is not written meanwhile). Fetch v11
//! without a fetch session (session id 0, epoch -1: every request a full fetch, as the Java
//! consumer's first), `max_wait_ms` 500, `min_bytes` 1, the consumer's default sizes
//! (`fetch.max.bytes` 50 MiB, `max.partition.fetch.bytes` 1 MiB). Each answer is scanned by
//! [`scan`]: complete batches only (a trailing partial batch is dropped, as consumers do), the
//! next fetch offset is the last complete batch's next offset. The clock and the CPU window
//! run from the first request of the first pass to the last answer of the last: the broker's
//! process CPU (`/proc/<pid>/stat`, all threads, in 10 ms ticks), the same from the threads'
//! `schedstat` (ns: [`sched_ns`], the threads alive at the end; the precise figure for short
//! windows) and its `skiff-worker` threads (as `produce`), this process's CPU. MB = 10^6 bytes of complete batches received (headers,
//! records and control batches: what the broker sent).
//!
//! Output: one `fetch: key=value ...` line; any error code, or an answer that makes no
//! progress below the end, is an error (exit 1).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use skiff_protocol::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest, DeleteTopicsRequest, FetchPartition,
    FetchRequest, FetchTopic, Records, ResponseBody,
};
use skiff_record::{BatchView, peek_batch_size};

use crate::produce_gen::{Conn, cpu_ms, thread_cpu_delta, threads_cpu};

const FETCH_VERSION: i16 = 11;
const CREATE_TOPICS_VERSION: i16 = 5;
const DELETE_TOPICS_VERSION: i16 = 5;
/// Answers in a row without progress below the end before the pass fails.
const STALL_LIMIT: u32 = 20;

/// The `fetch` subcommand's arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long)]
    pub bootstrap: String,
    #[arg(long)]
    pub topic: String,
    /// 0: read_uncommitted (to the high watermark); 1: read_committed (to the LSO).
    #[arg(long, default_value_t = 0)]
    pub isolation_level: i8,
    /// Times the whole topic is read in the timed window.
    #[arg(long, default_value_t = 1)]
    pub passes: u32,
    #[arg(long, default_value_t = 52_428_800)]
    pub max_bytes: i32,
    #[arg(long, default_value_t = 1_048_576)]
    pub partition_max_bytes: i32,
    /// The broker's pid: its CPU over the window.
    #[arg(long)]
    pub broker_pid: Option<u32>,
}

/// The `topic` subcommand's arguments.
#[derive(clap::Args, Debug)]
pub struct TopicArgs {
    #[arg(long)]
    pub bootstrap: String,
    /// Creates this topic (replication factor 1) and waits for its leaders.
    #[arg(long)]
    pub create: Option<String>,
    #[arg(long, default_value_t = 1)]
    pub partitions: i32,
    /// Topic configs of the created topic, `key=value` (repeatable).
    #[arg(long)]
    pub config: Vec<String>,
    /// Deletes this topic.
    #[arg(long)]
    pub delete: Option<String>,
}

/// On-CPU ns of every live thread of `pid`: `(tid, ns)` from `/proc/<pid>/task/<tid>/schedstat`
/// (first field). Threads that exit while the directory is read are skipped.
pub fn sched_ns(pid: u32) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let e = e?;
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("schedstat")) else {
            continue;
        };
        let ns = stat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse().ok())
            .context("malformed schedstat")?;
        out.push((tid, ns));
    }
    Ok(out)
}

/// ms of CPU between two [`sched_ns`] snapshots (a thread new at the end counts from 0).
pub fn sched_delta_ms(before: &[(u64, u64)], after: &[(u64, u64)]) -> f64 {
    after
        .iter()
        .map(|(tid, ns)| {
            let was = before.iter().find(|(b, _)| b == tid).map_or(0, |(_, n)| *n);
            ns.saturating_sub(was) as f64 / 1e6
        })
        .sum()
}

/// What [`scan`] found in one partition's records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// The last complete batch's next offset (`None`: no complete batch at or after `from`).
    pub next_offset: Option<i64>,
    /// Bytes of the complete batches counted.
    pub bytes: u64,
    pub batches: u64,
    pub control_batches: u64,
    pub transactional_batches: u64,
    /// Offsets covered by the data batches (last offset delta + 1 each).
    pub records: u64,
}

/// Walks the complete v2 batches of `buf`, skipping any that ends before `from`.
pub fn scan(buf: &[u8], from: i64) -> Result<Scan> {
    let mut s = Scan::default();
    let mut pos = 0;
    while let Some(size) = peek_batch_size(&buf[pos..])? {
        let Some(bytes) = buf.get(pos..pos + size) else {
            break; // a partial batch at the end
        };
        pos += size;
        let v = BatchView::new(bytes)?;
        if v.next_offset() <= from {
            continue;
        }
        s.next_offset = Some(v.next_offset());
        s.bytes += size as u64;
        s.batches += 1;
        s.transactional_batches += u64::from(v.is_transactional());
        if v.is_control() {
            s.control_batches += 1;
        } else {
            s.records += u64::from(v.last_offset_delta().unsigned_abs()) + 1;
        }
    }
    Ok(s)
}

fn add(total: &mut Scan, s: &Scan) {
    total.bytes += s.bytes;
    total.batches += s.batches;
    total.control_batches += s.control_batches;
    total.transactional_batches += s.transactional_batches;
    total.records += s.records;
}

/// Reads the topic `passes` times; prints the `fetch:` line.
pub fn main(a: Args) -> Result<()> {
    let mut conn = Conn::open(&a.bootstrap)?;
    let partitions = conn.partitions(&a.topic)?;
    let mut total = Scan::default();
    let mut requests = 0u64;
    let broker0 = a.broker_pid.map(|p| cpu_ms(Some(p))).transpose()?;
    let threads0 = a.broker_pid.map(threads_cpu).transpose()?;
    let sched0 = a.broker_pid.map(sched_ns).transpose()?;
    let (self0, t0) = (cpu_ms(None)?, Instant::now());
    for _ in 0..a.passes.max(1) {
        requests += pass(&mut conn, &a, partitions, &mut total)?;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let client_ms = cpu_ms(None)? - self0;
    let mb = total.bytes as f64 / 1e6;
    let mut line = format!(
        "fetch: topic={} isolation_level={} partitions={partitions} passes={} requests={requests} \
         batches={} control_batches={} transactional_batches={} records={} seconds={seconds:.4} \
         mb={mb:.3} mb_per_s={:.1} client_cpu_ms={client_ms:.0} client_cpu_ms_per_mb={:.4}",
        a.topic,
        a.isolation_level,
        a.passes.max(1),
        total.batches,
        total.control_batches,
        total.transactional_batches,
        total.records,
        mb / seconds,
        client_ms / mb,
    );
    if let (Some(p), Some(b0), Some(t0), Some(s0)) = (a.broker_pid, broker0, threads0, sched0) {
        let b = cpu_ms(Some(p))? - b0;
        let w = thread_cpu_delta(&t0, &threads_cpu(p)?).workers;
        let sched = sched_delta_ms(&s0, &sched_ns(p)?);
        line.push_str(&format!(
            " broker_cpu_ms={b:.0} broker_cpu_ms_per_mb={:.4} broker_sched_ms={sched:.1} \
             broker_sched_ms_per_mb={:.4} worker_cpu_ms={w:.0} worker_cpu_ms_per_mb={:.4}",
            b / mb,
            sched / mb,
            w / mb
        ));
    }
    println!("{line}");
    Ok(())
}

/// One pass over every partition; returns the requests it took.
fn pass(conn: &mut Conn, a: &Args, partitions: usize, total: &mut Scan) -> Result<u64> {
    let mut offset = vec![0i64; partitions];
    let mut end: Vec<Option<i64>> = vec![None; partitions];
    let (mut requests, mut stalls) = (0u64, 0u32);
    loop {
        let wanted: Vec<i32> = (0..partitions)
            .filter(|&p| end[p].is_none_or(|e| offset[p] < e))
            .map(|p| p as i32)
            .collect();
        if wanted.is_empty() {
            return Ok(requests);
        }
        let req = FetchRequest {
            replica_id: -1,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: a.max_bytes,
            isolation_level: a.isolation_level,
            session_id: 0,
            session_epoch: -1,
            topics: vec![FetchTopic {
                topic: a.topic.clone(),
                partitions: wanted
                    .iter()
                    .map(|&p| FetchPartition {
                        partition: p,
                        current_leader_epoch: -1,
                        fetch_offset: offset[p as usize],
                        last_fetched_epoch: -1,
                        log_start_offset: -1,
                        partition_max_bytes: a.partition_max_bytes,
                        ..FetchPartition::default()
                    })
                    .collect(),
                ..FetchTopic::default()
            }],
            ..FetchRequest::default()
        };
        let ResponseBody::Fetch(r) = conn.call(FETCH_VERSION, req.into())? else {
            bail!("not a Fetch response");
        };
        requests += 1;
        if r.error_code != 0 {
            bail!("Fetch: error {}", r.error_code);
        }
        let mut progress = false;
        for p in r.responses.iter().flat_map(|t| t.partitions.iter()) {
            let i = usize::try_from(p.partition_index)
                .ok()
                .filter(|&i| i < partitions)
                .context("answer for an unknown partition")?;
            if p.error_code != 0 {
                bail!("Fetch partition {i}: error {}", p.error_code);
            }
            let e = *end[i].get_or_insert(if a.isolation_level == 1 {
                p.last_stable_offset
            } else {
                p.high_watermark
            });
            let s = match &p.records {
                Some(Records::Bytes(b)) => scan(b, offset[i])?,
                Some(_) => bail!("records not in memory"),
                None => Scan::default(),
            };
            if let Some(n) = s.next_offset {
                offset[i] = n.min(e.max(n));
                progress = true;
            }
            add(total, &s);
        }
        stalls = if progress { 0 } else { stalls + 1 };
        if stalls >= STALL_LIMIT {
            bail!("no progress in {STALL_LIMIT} answers at offsets {offset:?}, ends {end:?}");
        }
    }
}

/// Runs the `topic` subcommand.
pub fn topic_main(a: TopicArgs) -> Result<()> {
    let mut conn = Conn::open(&a.bootstrap)?;
    if let Some(name) = &a.delete {
        let req = DeleteTopicsRequest {
            topic_names: vec![name.clone()],
            timeout_ms: 30_000,
            ..DeleteTopicsRequest::default()
        };
        let ResponseBody::DeleteTopics(r) = conn.call(DELETE_TOPICS_VERSION, req.into())? else {
            bail!("not a DeleteTopics response");
        };
        if let Some(t) = r.responses.iter().find(|t| t.error_code != 0) {
            bail!("DeleteTopics {name}: error {}", t.error_code);
        }
    }
    if let Some(name) = &a.create {
        let configs = a
            .config
            .iter()
            .map(|kv| {
                let (k, v) = kv.split_once('=').context("--config key=value")?;
                Ok(CreatableTopicConfig {
                    name: k.into(),
                    value: Some(v.into()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let req = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.clone(),
                num_partitions: a.partitions,
                replication_factor: 1,
                configs,
                ..CreatableTopic::default()
            }],
            timeout_ms: 30_000,
            ..CreateTopicsRequest::default()
        };
        let ResponseBody::CreateTopics(r) = conn.call(CREATE_TOPICS_VERSION, req.into())? else {
            bail!("not a CreateTopics response");
        };
        if let Some(t) = r.topics.iter().find(|t| t.error_code != 0) {
            bail!(
                "CreateTopics {name}: error {} {:?}",
                t.error_code,
                t.error_message
            );
        }
        conn.partitions(name)?;
        // Kafka answers Metadata with leaders a moment before a produce is accepted.
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use skiff_record::{BatchBuilder, BatchOptions, ControlType, build_end_txn_marker};

    fn batch(base: i64, n: usize, transactional: bool) -> Vec<u8> {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset: base,
            is_transactional: transactional,
            producer_id: if transactional { 7 } else { -1 },
            producer_epoch: if transactional { 0 } else { -1 },
            base_sequence: if transactional { 0 } else { -1 },
            ..BatchOptions::default()
        });
        for _ in 0..n {
            b.append(0, None, Some(&[1u8; 100]), &[]);
        }
        b.build().unwrap()
    }

    #[test]
    fn sched_deltas_count_new_threads_from_zero() {
        let before = vec![(1, 5_000_000), (2, 1_000_000)];
        let after = vec![(1, 7_500_000), (3, 2_000_000)];
        assert!((sched_delta_ms(&before, &after) - 4.5).abs() < 1e-9);
        let me = sched_ns(std::process::id()).unwrap();
        assert!(!me.is_empty() && me.iter().any(|(_, ns)| *ns > 0));
    }

    #[test]
    fn scan_counts_complete_batches_and_markers() {
        let mut marker = build_end_txn_marker(7, 0, 0, ControlType::Commit, 0).unwrap();
        marker[..8].copy_from_slice(&20i64.to_be_bytes()); // its offset (outside the CRC)
        let (a, b) = (batch(10, 5, true), batch(15, 5, true));
        let mut buf = [a.clone(), b.clone(), marker.clone()].concat();
        let s = scan(&buf, 10).unwrap();
        assert_eq!(s.next_offset, Some(21));
        assert_eq!(
            (s.batches, s.control_batches, s.transactional_batches),
            (3, 1, 3)
        );
        assert_eq!(s.records, 10, "the marker's offset is not a record");
        assert_eq!(s.bytes, (a.len() + b.len() + marker.len()) as u64);
        // A partial batch at the end is dropped; the next fetch starts at its offset.
        let c = batch(21, 5, false);
        buf.extend_from_slice(&c[..c.len() - 1]);
        assert_eq!(scan(&buf, 10).unwrap().next_offset, Some(21));
        // Batches ending before the fetch offset are skipped.
        let s = scan(&buf, 15).unwrap();
        assert_eq!((s.batches, s.records), (2, 5));
        assert_eq!(scan(&buf, 21).unwrap(), Scan::default());
        assert_eq!(scan(&[], 0).unwrap(), Scan::default());
        assert!(
            scan(&[0u8; 12], 0).is_err(),
            "batch length below the minimum"
        );
    }
}
