//! `skiff produce TOPIC`: one record per input line (stdin or `--file`), optionally split into
//! key and value at `--key-delimiter`, with `-H k=v` headers on every record; or records laid
//! out as `--template FMT` says (key, value, partition and headers per record; see
//! [`template`]).
//!
//! Mental model: read all input, assign each record a partition (`--partition`; else a keyed
//! record goes where Kafka's Java client puts it, `(murmur2(key) & 0x7fffffff) % partitions`, and
//! unkeyed records go round-robin), build v2 batches per partition (split at
//! `--max-batch-bytes` of records) with the chosen codec, and send rounds of Produce requests:
//! each round sends every partition's next batch to the partition's leader, one request per
//! leader (Kafka takes one batch per partition per request). A retriable answer
//! (NOT_LEADER_OR_FOLLOWER, a timeout, a connection that broke) refreshes metadata and resends
//! that batch, up to [`MAX_ATTEMPTS`] times; any other error fails the batch's records. A
//! summary goes to stderr; `--format json|yaml` prints the result document on stdout.
//! Invariants: records of one partition are sent in input order and a partition's next batch
//! is sent only after the previous one was acknowledged or failed (no reordering by retries;
//! not idempotent, so a retry after a lost answer may duplicate a batch, as a non-idempotent
//! Kafka producer may); the exit code is non-zero when any record failed, and every failed
//! record is reported with its input line. With `--acks 0` the broker answers nothing: records
//! count as sent, their offsets are unknown.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use skiff_protocol::{
    ApiVersionsRequest, PartitionProduceData, ProduceRequest, Records, TopicProduceData,
};
use skiff_record::{BatchBuilder, BatchOptions, Compression, Header};
use skiff_types::{Clock, ErrorCode};

use super::client::{Cluster, call_as};
use super::consume::meta::{self, TopicInfo};
use super::{CliError, CliResult, ClientArgs, Format};

pub mod template;

/// Sends of one batch before its records are reported failed.
pub const MAX_ATTEMPTS: u32 = 6;

/// Batch codec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Codec {
    #[default]
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Codec {
    fn compression(self) -> Compression {
        match self {
            Codec::None => Compression::None,
            Codec::Gzip => Compression::Gzip,
            Codec::Snappy => Compression::Snappy,
            Codec::Lz4 => Compression::Lz4,
            Codec::Zstd => Compression::Zstd,
        }
    }
}

/// `skiff produce TOPIC [--key-delimiter D] [-H k=v]... [--partition P] [--acks A]`
#[derive(clap::Args, Debug)]
pub struct ProduceArgs {
    /// The topic to write to.
    pub topic: String,
    /// Read records from this file instead of stdin (one per line).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Split each line at the first occurrence of this string into key and value.
    #[arg(long, short = 'K', conflicts_with = "template")]
    pub key_delimiter: Option<String>,
    /// The input layout of each record: %k key, %v value, %p partition, %h headers
    /// (k=v,k2=v2), %% a %, literal text between fields as delimiters, \n \t \r \\ escapes;
    /// `\n` is appended when it ends in a field. E.g. '%k %v\n', '%p|%k|%v|%h\n'.
    #[arg(long, short = 'T')]
    pub template: Option<String>,
    /// A header `key=value` on every record (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// Write every record to this partition (default: a template's %p, else by key hash,
    /// round-robin when unkeyed).
    #[arg(long, short = 'p')]
    pub partition: Option<i32>,
    /// Acknowledgements: -1 (all in-sync replicas), 1 (the leader), 0 (none, fire and forget).
    #[arg(long, default_value = "-1", allow_hyphen_values = true, value_parser = parse_acks)]
    pub acks: i16,
    /// Batch compression.
    #[arg(long, value_enum, default_value_t = Codec::None)]
    pub compression: Codec,
    /// Largest records section of one batch before it is split (uncompressed bytes).
    #[arg(long, default_value_t = 512 * 1024)]
    pub max_batch_bytes: usize,
    #[command(flatten)]
    pub client: ClientArgs,
}

fn parse_acks(s: &str) -> Result<i16, String> {
    match s {
        "-1" | "all" => Ok(-1),
        "0" => Ok(0),
        "1" => Ok(1),
        _ => Err(format!("bad acks {s:?}: use -1 (all), 0 or 1")),
    }
}

/// One input record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRecord {
    /// 1-based input line.
    pub line: usize,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
    /// This record's own headers (`%h`), after the `-H` ones.
    pub headers: template::Headers,
    /// The partition the input named (`%p`).
    pub partition: Option<i32>,
}

/// Splits `input` into records: one per line (`\n`, a trailing `\r` kept), the final empty
/// line after a trailing newline dropped; with `delimiter`, key and value split at its first
/// occurrence (a line without it is an error naming the line).
pub fn parse_input(input: &[u8], delimiter: Option<&str>) -> Result<Vec<InputRecord>, CliError> {
    let mut lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.into_iter().enumerate() {
        let (key, value) = match delimiter.map(str::as_bytes) {
            None | Some(b"") => (None, line.to_vec()),
            Some(d) => match line.windows(d.len()).position(|w| w == d) {
                Some(at) => (Some(line[..at].to_vec()), line[at + d.len()..].to_vec()),
                None => {
                    return Err(CliError::Usage(format!(
                        "line {} has no key delimiter {:?} (every line must be KEY{}VALUE)",
                        i + 1,
                        delimiter.unwrap_or_default(),
                        delimiter.unwrap_or_default()
                    )));
                }
            },
        };
        out.push(InputRecord {
            line: i + 1,
            key,
            value,
            headers: Vec::new(),
            partition: None,
        });
    }
    Ok(out)
}

/// Parses `-H k=v` headers.
pub fn parse_headers(raw: &[String]) -> Result<Vec<(String, String)>, CliError> {
    raw.iter()
        .map(|h| match h.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(CliError::Usage(format!(
                "bad header {h:?}: use -H key=value"
            ))),
        })
        .collect()
}

/// Kafka's `Utils.murmur2` (the Java client's key hash), as an i32.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= u32::from(rest[2]) << 16;
    }
    if rest.len() >= 2 {
        h ^= u32::from(rest[1]) << 8;
    }
    if !rest.is_empty() {
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition Kafka's default partitioner picks for `key` among `partitions`.
pub fn key_partition(key: &[u8], partitions: i32) -> i32 {
    (murmur2(key) & 0x7fff_ffff) % partitions.max(1)
}

/// One batch waiting to be sent.
#[derive(Debug)]
struct Pending {
    /// Indexes into the input records.
    records: Vec<usize>,
    bytes: Vec<u8>,
    attempts: u32,
}

/// Per-partition outcome.
#[derive(Debug, Serialize, Default)]
pub struct PartitionResult {
    pub partition: i32,
    pub records: u64,
    /// Offset of the first record written (unknown with acks=0).
    pub base_offset: Option<i64>,
    pub last_offset: Option<i64>,
}

/// A record that was not written.
#[derive(Debug, Serialize)]
pub struct FailedRecord {
    pub line: usize,
    pub partition: i32,
    pub error: String,
}

/// `produce`'s document.
#[derive(Debug, Serialize, Default)]
pub struct ProduceResult {
    pub topic: String,
    /// Records written (sent, with acks=0).
    pub records: u64,
    /// Key and value bytes of the records written.
    pub bytes: u64,
    pub failed: u64,
    pub partitions: Vec<PartitionResult>,
    pub errors: Vec<FailedRecord>,
}

pub fn run(args: ProduceArgs) -> CliResult {
    let mut input = Vec::new();
    match &args.file {
        Some(path) => {
            input = std::fs::read(path)
                .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
        }
        None => {
            std::io::stdin()
                .lock()
                .read_to_end(&mut input)
                .map_err(|e| CliError::Other(format!("cannot read stdin: {e}")))?;
        }
    }
    let records = match &args.template {
        Some(t) => template::parse_with_template(&input, &template::parse_template(t)?)?,
        None => parse_input(&input, args.key_delimiter.as_deref())?,
    };
    let headers = parse_headers(&args.headers)?;
    if records.is_empty() {
        return Err(CliError::Usage(
            "no input: nothing was produced (give records on stdin or with --file)".into(),
        ));
    }
    let mut cluster = Cluster::connect(&args.client)?;
    let mut topic = meta::topic_info(&mut cluster, &args.topic)?;
    let n = i32::try_from(topic.partitions.len()).unwrap_or(i32::MAX);
    if n == 0 {
        return Err(CliError::Other(format!(
            "topic {} has no partitions",
            args.topic
        )));
    }
    if let Some(p) = args.partition
        && !topic.partitions.contains_key(&p)
    {
        return Err(CliError::Usage(format!(
            "topic {} has no partition {p} (it has {n})",
            args.topic
        )));
    }
    // Partition assignment, in input order.
    let mut by_partition: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    let mut round_robin = 0;
    for (i, r) in records.iter().enumerate() {
        if let Some(p) = r.partition
            && !topic.partitions.contains_key(&p)
        {
            return Err(CliError::Usage(format!(
                "line {}: topic {} has no partition {p} (it has {n})",
                r.line, args.topic
            )));
        }
        let p = match (args.partition.or(r.partition), &r.key) {
            (Some(p), _) => p,
            (None, Some(k)) => key_partition(k, n),
            (None, None) => {
                round_robin = (round_robin + 1) % n;
                round_robin
            }
        };
        by_partition.entry(p).or_default().push(i);
    }
    let now_ms = Clock::system().now_ms();
    let mut queues = build_batches(&args, &records, &headers, &by_partition, now_ms)?;

    let mut result = ProduceResult {
        topic: args.topic.clone(),
        ..Default::default()
    };
    let mut per_partition: BTreeMap<i32, PartitionResult> = BTreeMap::new();
    let fail = |result: &mut ProduceResult, partition: i32, batch: &Pending, error: &str| {
        for i in &batch.records {
            result.failed += 1;
            result.errors.push(FailedRecord {
                line: records[*i].line,
                partition,
                error: error.to_owned(),
            });
        }
    };
    let mut sent_oneway = Vec::new();
    while queues.values().any(|q| !q.is_empty()) {
        let ready: Vec<i32> = queues
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(p, _)| *p)
            .collect();
        let mut refresh = false;
        for (leader, parts) in leaders(&topic, &ready) {
            let Some(leader) = leader else {
                // No leader right now: count an attempt on each and refresh.
                for p in parts {
                    if let Some(batch) = queues.get_mut(&p).and_then(VecDeque::front_mut) {
                        batch.attempts += 1;
                        if batch.attempts >= MAX_ATTEMPTS {
                            let msg = format!("partition {p} has no leader");
                            fail(&mut result, p, batch, &msg);
                            queues.get_mut(&p).map(VecDeque::pop_front);
                        }
                    }
                }
                refresh = true;
                continue;
            };
            let request = produce_request(&args, &topic, &parts, &queues, &cluster);
            let answer = match cluster.node(leader) {
                Ok(conn) if args.acks == 0 => conn.send_oneway(request).map(|()| None),
                Ok(conn) => call_as!(conn, request, Produce).map(Some),
                Err(e) => Err(e),
            };
            let answer = match answer {
                Ok(a) => a,
                Err(
                    e @ (CliError::Connect { .. }
                    | CliError::Protocol { .. }
                    | CliError::Dns { .. }),
                ) => {
                    for p in &parts {
                        if let Some(batch) = queues.get_mut(p).and_then(VecDeque::front_mut) {
                            batch.attempts += 1;
                            if batch.attempts >= MAX_ATTEMPTS {
                                fail(&mut result, *p, batch, &e.to_string());
                                queues.get_mut(p).map(VecDeque::pop_front);
                            }
                        }
                    }
                    cluster.forget(leader);
                    refresh = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(answer) = answer else {
                // acks=0: every batch of the request counts as sent.
                sent_oneway.push(leader);
                for p in &parts {
                    if let Some(batch) = queues.get_mut(p).and_then(VecDeque::pop_front) {
                        account(&mut result, &mut per_partition, &records, *p, &batch, None);
                    }
                }
                continue;
            };
            for t in answer.responses {
                for pr in t.partition_responses {
                    let p = pr.index;
                    let Some(queue) = queues.get_mut(&p) else {
                        continue;
                    };
                    let Some(batch) = queue.front_mut() else {
                        continue;
                    };
                    if pr.error_code == 0 {
                        if let Some(batch) = queue.pop_front() {
                            account(
                                &mut result,
                                &mut per_partition,
                                &records,
                                p,
                                &batch,
                                Some(pr.base_offset),
                            );
                        }
                        continue;
                    }
                    let message = batch_error(
                        &topic.name,
                        p,
                        pr.error_code,
                        pr.error_message,
                        &pr.record_errors,
                    );
                    batch.attempts += 1;
                    if should_retry(pr.error_code, batch.attempts) {
                        refresh = true;
                        continue;
                    }
                    fail(&mut result, p, batch, &message);
                    queue.pop_front();
                }
            }
        }
        if refresh {
            std::thread::sleep(Duration::from_millis(200));
            topic = meta::topic_info(&mut cluster, &args.topic)?;
        }
    }
    // acks=0: one answered request per connection used makes sure the broker read the
    // produce requests before this process exits and closes the connections.
    sent_oneway.sort_unstable();
    sent_oneway.dedup();
    for id in sent_oneway {
        let conn = cluster.node(id)?;
        let _ = call_as!(conn, ApiVersionsRequest::default(), ApiVersions)?;
    }
    result.partitions = per_partition.into_values().collect();
    report(&args, &result)
}

/// Whether a batch answered with `code` after `attempts` sends is sent again (after a
/// metadata refresh): retriable errors (a moved leader, a timeout, too few in-sync replicas)
/// until [`MAX_ATTEMPTS`]; anything else fails its records at once.
pub fn should_retry(code: i16, attempts: u32) -> bool {
    attempts < MAX_ATTEMPTS && ErrorCode::from_code(code).is_some_and(ErrorCode::is_retriable)
}

/// `(leader, partitions)`; `None` for partitions without a leader.
fn leaders(topic: &TopicInfo, partitions: &[i32]) -> Vec<(Option<i32>, Vec<i32>)> {
    let mut out: BTreeMap<Option<i32>, Vec<i32>> = BTreeMap::new();
    for p in partitions {
        out.entry(topic.leader(*p).ok()).or_default().push(*p);
    }
    out.into_iter().collect()
}

fn build_batches(
    args: &ProduceArgs,
    records: &[InputRecord],
    headers: &[(String, String)],
    by_partition: &BTreeMap<i32, Vec<usize>>,
    now_ms: i64,
) -> Result<BTreeMap<i32, VecDeque<Pending>>, CliError> {
    let hdrs: Vec<Header<'_>> = headers
        .iter()
        .map(|(k, v)| Header {
            key: k.as_bytes(),
            value: Some(v.as_bytes()),
        })
        .collect();
    let options = || BatchOptions {
        compression: args.compression.compression(),
        ..Default::default()
    };
    let mut queues = BTreeMap::new();
    for (p, idxs) in by_partition {
        let mut queue = VecDeque::new();
        let mut builder = BatchBuilder::new(options());
        let mut members = Vec::new();
        for i in idxs {
            let r = &records[*i];
            if r.headers.is_empty() {
                builder.append(now_ms, r.key.as_deref(), Some(&r.value), &hdrs);
            } else {
                let mut all = hdrs.clone();
                all.extend(r.headers.iter().map(|(k, v)| Header {
                    key: k,
                    value: Some(v),
                }));
                builder.append(now_ms, r.key.as_deref(), Some(&r.value), &all);
            }
            members.push(*i);
            if builder.uncompressed_records_bytes() >= args.max_batch_bytes {
                let full = std::mem::replace(&mut builder, BatchBuilder::new(options()));
                queue.push_back(finish(full, std::mem::take(&mut members))?);
            }
        }
        if !builder.is_empty() {
            queue.push_back(finish(builder, members)?);
        }
        queues.insert(*p, queue);
    }
    Ok(queues)
}

fn finish(builder: BatchBuilder, records: Vec<usize>) -> Result<Pending, CliError> {
    let bytes = builder
        .build()
        .map_err(|e| CliError::Other(format!("cannot encode a record batch: {e}")))?;
    Ok(Pending {
        records,
        bytes,
        attempts: 0,
    })
}

fn produce_request(
    args: &ProduceArgs,
    topic: &TopicInfo,
    parts: &[i32],
    queues: &BTreeMap<i32, VecDeque<Pending>>,
    cluster: &Cluster,
) -> ProduceRequest {
    ProduceRequest {
        transactional_id: None,
        acks: args.acks,
        timeout_ms: i32::try_from(cluster.timeout().as_millis()).unwrap_or(i32::MAX),
        topic_data: vec![TopicProduceData {
            name: topic.name.clone(),
            partition_data: parts
                .iter()
                .filter_map(|p| {
                    let batch = queues.get(p)?.front()?;
                    Some(PartitionProduceData {
                        index: *p,
                        records: Some(Records::Bytes(bytes::Bytes::from(batch.bytes.clone()))),
                    })
                })
                .collect(),
        }],
    }
}

fn account(
    result: &mut ProduceResult,
    per_partition: &mut BTreeMap<i32, PartitionResult>,
    records: &[InputRecord],
    partition: i32,
    batch: &Pending,
    base_offset: Option<i64>,
) {
    let entry = per_partition.entry(partition).or_insert(PartitionResult {
        partition,
        ..Default::default()
    });
    let n = batch.records.len() as u64;
    if entry.base_offset.is_none() {
        entry.base_offset = base_offset;
    }
    if let Some(b) = base_offset {
        entry.last_offset = Some(b + n as i64 - 1);
    }
    entry.records += n;
    result.records += n;
    for i in &batch.records {
        let r = &records[*i];
        result.bytes += (r.value.len() + r.key.as_ref().map_or(0, Vec::len)) as u64;
    }
}

/// A sentence for a failed batch, with the broker's per-record errors when it sent them.
fn batch_error(
    topic: &str,
    partition: i32,
    code: i16,
    message: Option<String>,
    record_errors: &[skiff_protocol::BatchIndexAndErrorMessage],
) -> String {
    let mut s = CliError::from_code(format!("producing to {topic}-{partition}"), code, message)
        .map(|e| e.to_string())
        .unwrap_or_default();
    if code == ErrorCode::UnknownTopicOrPartition.code() {
        s.push_str(" (does the topic still exist? `skiff topic describe` shows it)");
    }
    for e in record_errors {
        s.push_str(&format!(
            "; record {} of the batch: {}",
            e.batch_index,
            e.batch_index_error_message.as_deref().unwrap_or("rejected")
        ));
    }
    s
}

fn report(args: &ProduceArgs, result: &ProduceResult) -> CliResult {
    let parts: Vec<String> = result
        .partitions
        .iter()
        .map(|p| p.partition.to_string())
        .collect();
    eprintln!(
        "skiff: produced {} records ({} bytes) to {} partition(s) of {}{}{}",
        result.records,
        result.bytes,
        parts.len(),
        result.topic,
        if parts.is_empty() {
            String::new()
        } else {
            format!(" [{}]", parts.join(","))
        },
        if args.acks == 0 {
            " (acks=0: not confirmed)"
        } else {
            ""
        }
    );
    for e in result.errors.iter().take(20) {
        eprintln!(
            "skiff: line {} (partition {}): {}",
            e.line, e.partition, e.error
        );
    }
    if result.errors.len() > 20 {
        eprintln!(
            "skiff: ... and {} more failed records",
            result.errors.len() - 20
        );
    }
    if args.client.format != Format::Text {
        super::output::emit(args.client.format, result, |_| String::new())?;
    }
    if result.failed > 0 {
        return Err(CliError::Other(format!(
            "{} of {} records were not produced",
            result.failed,
            result.failed + result.records
        )));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafka() {
        // Kafka's UtilsTest vectors.
        let cases: &[(&[u8], i32)] = &[
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (data, want) in cases {
            assert_eq!(murmur2(data), *want, "{:?}", String::from_utf8_lossy(data));
        }
        // `Utils.toPositive(murmur2(key)) % n`: a negative hash keeps its low 31 bits (never
        // `abs`, never a negative partition).
        let partitions: &[(&[u8], i32, i32)] = &[
            (b"a-little-bit-long-string", 3, 2),
            (b"foobar", 3, 0),
            (b"21", 7, (-973_932_308_i32 & 0x7fff_ffff) % 7),
            (b"abc", 10, 479_470_107 % 10),
            (b"foobar", 1, 0),
        ];
        for (key, n, want) in partitions {
            let got = key_partition(key, *n);
            assert_eq!(got, *want, "{:?} over {n}", String::from_utf8_lossy(key));
            assert!((0..*n).contains(&got));
        }
    }

    #[test]
    fn retries_only_retriable_errors_a_bounded_number_of_times() {
        let cases: &[(ErrorCode, u32, bool)] = &[
            (ErrorCode::NotLeaderOrFollower, 1, true),
            (ErrorCode::NotLeaderOrFollower, MAX_ATTEMPTS - 1, true),
            (ErrorCode::NotLeaderOrFollower, MAX_ATTEMPTS, false),
            (ErrorCode::LeaderNotAvailable, 1, true),
            (ErrorCode::RequestTimedOut, 2, true),
            (ErrorCode::NotEnoughReplicas, 1, true),
            (ErrorCode::UnknownTopicOrPartition, 1, true),
            (ErrorCode::MessageTooLarge, 1, false),
            (ErrorCode::CorruptMessage, MAX_ATTEMPTS, false),
            (ErrorCode::InvalidRecord, 1, false),
            (ErrorCode::TopicAuthorizationFailed, 1, false),
        ];
        for (code, attempts, want) in cases {
            assert_eq!(
                should_retry(code.code(), *attempts),
                *want,
                "{code} after {attempts}"
            );
        }
        assert!(!should_retry(9999, 1), "an unknown code is not retried");
    }

    #[test]
    fn input_lines_split_into_keys_and_values() {
        let recs = parse_input(b"k1:v1\nk2:a:b\n:empty-key\n", Some(":")).unwrap();
        let got: Vec<(Option<&[u8]>, &[u8])> = recs
            .iter()
            .map(|r| (r.key.as_deref(), r.value.as_slice()))
            .collect();
        assert_eq!(
            got,
            [
                (Some(&b"k1"[..]), &b"v1"[..]),
                (Some(&b"k2"[..]), &b"a:b"[..]),
                (Some(&b""[..]), &b"empty-key"[..]),
            ]
        );
        assert_eq!(parse_input(b"a\n\nb", None).unwrap().len(), 3);
        let err = parse_input(b"k:v\nnokey\n", Some(":")).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(parse_input(b"", None).unwrap().is_empty());
    }

    #[test]
    fn headers_need_a_key_and_an_equals_sign() {
        let ok = parse_headers(&["a=1".into(), "b=x=y".into(), "c=".into()]).unwrap();
        assert_eq!(
            ok,
            [
                ("a".into(), "1".into()),
                ("b".into(), "x=y".into()),
                ("c".into(), String::new())
            ]
        );
        assert!(parse_headers(&["novalue".into()]).is_err());
        assert!(parse_headers(&["=v".into()]).is_err());
    }
}
