//! `skiff consume TOPIC`: read records and print them (values one per line by default, a
//! kcat-like `--template`, or JSON lines with `--format json`).
//!
//! Mental model: an assign-style consumer. The partitions (all, or `--partition`s) start at
//! the offset `--offset` names (resolved with ListOffsets: earliest, latest, a time, end-N),
//! or with `--group` at the group's committed offset where it has one. Each round sends one
//! sessionless Fetch per leader for its partitions that are not finished, decodes the answers
//! (every codec; control batches skipped; aborted transactions dropped at read_committed) and
//! prints in offset order per partition. Without `--follow` a partition is finished at the end
//! offset seen at start (records at or past it are not printed); `--num N` stops after N
//! records. `--group G` joins the group as a member (see [`member`]: JoinGroup/SyncGroup with
//! the range assignor, a heartbeat between fetches when due): the partitions are the ones the
//! group assigns, each starting at its committed offset (`--offset` only where none is
//! committed, as `auto.offset.reset`); a rebalance commits what was printed, rejoins and
//! resumes from the committed offsets of the new assignment; at the end it commits (as the
//! member of its generation) and leaves the group, also after a Ctrl-C. With `--no-join` or
//! `--partition` it is a *simple consumer* instead: it reads the chosen partitions from the
//! committed offsets and commits with generation -1, which the coordinator accepts only while
//! the group has no members. `--no-commit` skips committing in both modes.
//! Invariants: a record is printed at most once per generation (a rebalance may hand a
//! partition to another member from the last commit, as with any Kafka consumer); the
//! committed position is one past the last printed record of the partition (never past a
//! record that was not printed); a leader change (NOT_LEADER_OR_FOLLOWER and friends)
//! refreshes metadata and is retried a bounded number of times without progress before giving
//! up; a member leaves the group on every exit path that returns (not when killed).

pub mod member;
pub mod meta;
pub mod records;
pub mod spec;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use skiff_protocol::{FetchPartition, FetchRequest, FetchTopic, ResponseBody};
use skiff_types::ErrorCode;

use self::member::{Beat, Membership};
use self::meta::TopicInfo;
use self::records::{JsonRecord, decode, render_template};
use self::spec::{OffsetSpec, resolve};
use super::client::Cluster;
use super::group::offsets as group_offsets;
use super::{CliError, CliResult, ClientArgs, Format};

/// Leader changes survived in a row (with no record of progress) before giving up.
const MAX_REFRESHES: u32 = 20;
/// Empty answers in a row (about `FETCH_WAIT_MS` each) after which a partition whose end is
/// still ahead is given up on without --follow (its records are gone or not readable).
const MAX_STALLS: u32 = 20;
/// How long a fetch waits at the broker for data.
const FETCH_WAIT_MS: i32 = 500;
/// Per-partition fetch size (the broker returns at least one whole batch regardless).
const PARTITION_MAX_BYTES: i32 = 1024 * 1024;
/// `--num` from which a progress bar is drawn on a terminal.
const PROGRESS_MIN: u64 = 1000;

/// Transaction visibility.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Isolation {
    /// Every record, including open and aborted transactions.
    #[default]
    #[value(alias = "read_uncommitted")]
    ReadUncommitted,
    /// Only committed records, up to the last stable offset.
    #[value(alias = "read_committed")]
    ReadCommitted,
}

impl Isolation {
    fn level(self) -> i8 {
        match self {
            Isolation::ReadUncommitted => 0,
            Isolation::ReadCommitted => 1,
        }
    }
}

/// `skiff consume TOPIC [--offset ...] [--num N] [--partition P]... [--follow] [--group G]`
#[derive(clap::Args, Debug)]
pub struct ConsumeArgs {
    /// The topic to read.
    pub topic: String,
    /// Where to start: beginning|end|N (an offset)|@timestamp_ms|-N (N before the end).
    /// With --group, only for partitions the group has no committed offset for.
    #[arg(
        long,
        short = 'o',
        default_value = "beginning",
        allow_hyphen_values = true
    )]
    pub offset: OffsetSpec,
    /// Stop after this many records.
    #[arg(long, short = 'n')]
    pub num: Option<u64>,
    /// Read only these partitions (repeatable; default: all). With --group: without joining.
    #[arg(long, short = 'p')]
    pub partition: Vec<i32>,
    /// Keep waiting for new records instead of stopping at the end offsets seen at start.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Join this consumer group (range assignor): read the partitions it assigns from their
    /// committed offsets, commit after printing, leave at the end. With --partition: read
    /// those partitions from the group's offsets without joining (as --no-join).
    #[arg(long, short = 'g')]
    pub group: Option<String>,
    /// With --group: do not join; read the chosen partitions from the group's committed
    /// offsets as a simple consumer (committing then needs the group Empty).
    #[arg(long, requires = "group")]
    pub no_join: bool,
    /// With --group: do not commit.
    #[arg(long)]
    pub no_commit: bool,
    /// Print each record with this layout: %t topic, %p partition, %o offset, %k key, %v value,
    /// %T timestamp, %h headers (k=v,...), %K/%S key/value size; \n \t escapes.
    /// Default: the value and a newline. Ignored with --format json|yaml.
    #[arg(long)]
    pub template: Option<String>,
    /// Transaction visibility.
    #[arg(long, value_enum, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// One partition's reading state.
#[derive(Debug)]
struct Position {
    /// The next offset to print.
    next: i64,
    /// Where it started (commits only when it moved).
    start: i64,
    /// The end offset seen at start (not used with --follow).
    end: i64,
    /// Fetch answers in a row that moved nothing although the end is ahead.
    stalls: u32,
}

pub fn run(args: ConsumeArgs) -> CliResult {
    let mut cluster = Cluster::connect(&args.client)?;
    let topic = meta::topic_info(&mut cluster, &args.topic)?;
    // Chosen partitions are read as an assign-style client of the group (no join).
    let joining = args
        .group
        .as_ref()
        .filter(|_| !args.no_join && args.partition.is_empty());
    let mut member = match joining {
        Some(g) => {
            member::watch_interrupts();
            let m = Membership::join(&mut cluster, g, &topic.name)?;
            eprintln!(
                "skiff: joined group {g} as {} (generation {}): partitions {:?}",
                m.member_id(),
                m.generation(),
                m.assigned()
            );
            Some(m)
        }
        None => None,
    };
    let partitions = match &member {
        Some(m) => m.assigned().to_vec(),
        None => chosen_partitions(&args, &topic)?,
    };
    let result = consume(&args, &mut cluster, topic, member.as_mut(), &partitions);
    if let Some(m) = member {
        m.leave(&mut cluster);
    }
    result
}

/// `--partition`s (checked), or every partition.
fn chosen_partitions(args: &ConsumeArgs, topic: &TopicInfo) -> Result<Vec<i32>, CliError> {
    Ok(if args.partition.is_empty() {
        topic.partitions.keys().copied().collect()
    } else {
        for p in &args.partition {
            if !topic.partitions.contains_key(p) {
                return Err(CliError::Usage(format!(
                    "topic {} has no partition {p} (it has {})",
                    topic.name,
                    topic.partitions.len()
                )));
            }
        }
        let mut ps = args.partition.clone();
        ps.sort_unstable();
        ps.dedup();
        ps
    })
}

/// The fetch loop over `partitions` (re-assigned by the group's rebalances when a member).
fn consume(
    args: &ConsumeArgs,
    cluster: &mut Cluster,
    mut topic: TopicInfo,
    mut member: Option<&mut Membership>,
    partitions: &[i32],
) -> CliResult {
    let isolation = args.isolation.level();
    let mut positions = start_positions(args, cluster, &topic, partitions, isolation)?;

    let mut sink = Sink::new(args);
    let progress = progress_bar(args, &positions);
    let mut printed = 0u64;
    let mut refreshes = 0u32;
    let limit = args.num.unwrap_or(u64::MAX);
    'outer: while printed < limit {
        if member.is_some() && member::interrupted() {
            break;
        }
        if let Some(m) = member.as_deref_mut()
            && m.heartbeat_due()
            && m.heartbeat(cluster)? == Beat::Rejoin
        {
            if let Err(e) = commit_moved(args, cluster, &topic, &positions, Some(m)) {
                eprintln!("skiff: {e}");
            }
            m.rejoin(cluster)?;
            eprintln!(
                "skiff: group rebalanced: generation {}, partitions {:?}",
                m.generation(),
                m.assigned()
            );
            let assigned = m.assigned().to_vec();
            positions = start_positions(args, cluster, &topic, &assigned, isolation)?;
            continue;
        }
        let active: Vec<i32> = positions
            .iter()
            .filter(|(_, pos)| args.follow || pos.next < pos.end)
            .map(|(p, _)| *p)
            .collect();
        if active.is_empty() {
            if member.is_some() && args.follow {
                // Nothing assigned right now: stay a member until a rebalance gives some.
                std::thread::sleep(Duration::from_millis(FETCH_WAIT_MS.unsigned_abs().into()));
                continue;
            }
            break;
        }
        let mut refresh = false;
        for (leader, parts) in meta::by_leader(&topic, active)? {
            let answer = match fetch(cluster, &topic, leader, &parts, &positions, isolation) {
                Ok(a) => a,
                Err(e @ (CliError::Connect { .. } | CliError::Protocol { .. })) => {
                    eprintln!("skiff: fetching from node {leader}: {e}; refreshing metadata");
                    cluster.forget(leader);
                    refresh = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            for part in answer {
                let Some(pos) = positions.get_mut(&part.partition) else {
                    continue;
                };
                match part.error_code {
                    0 => {}
                    c if c == ErrorCode::OffsetOutOfRange.code() => {
                        let (earliest, latest) =
                            meta::watermarks(cluster, &topic, &[part.partition], isolation)?
                                .get(&part.partition)
                                .copied()
                                .unwrap_or((pos.next, pos.next));
                        let to = if pos.next < earliest {
                            earliest
                        } else {
                            latest
                        };
                        eprintln!(
                            "skiff: {}-{}: offset {} is out of range [{earliest}, {latest}]; \
                             continuing at {to}",
                            topic.name, part.partition, pos.next
                        );
                        pos.next = to;
                        continue;
                    }
                    c if ErrorCode::from_code(c).is_some_and(ErrorCode::is_retriable) => {
                        refresh = true;
                        continue;
                    }
                    c => {
                        let context = format!("fetching {}-{}", topic.name, part.partition);
                        return Err(CliError::from_code(context, c, None)
                            .unwrap_or_else(|| CliError::Other("fetch failed".into())));
                    }
                }
                let decoded = decode(
                    &part.records,
                    part.partition,
                    pos.next,
                    &part.aborted,
                    isolation == 1,
                )
                .map_err(|e| CliError::Other(format!("topic {}: {e}", topic.name)))?;
                if decoded.next_offset > pos.next {
                    refreshes = 0;
                    pos.stalls = 0;
                } else if !args.follow {
                    pos.stalls += 1;
                    if pos.stalls > MAX_STALLS {
                        eprintln!(
                            "skiff: {}-{}: no records between {} and the end offset {} seen at \
                             start (deleted or not yet readable); stopping this partition",
                            topic.name, part.partition, pos.next, pos.end
                        );
                        pos.end = pos.next;
                    }
                }
                let stop_at = if args.follow { i64::MAX } else { pos.end };
                for r in &decoded.records {
                    if r.offset >= stop_at || printed >= limit {
                        break;
                    }
                    if !sink.print(&topic.name, r)? {
                        break 'outer; // stdout closed (`| head`)
                    }
                    printed += 1;
                    pos.next = r.offset + 1;
                    if let Some(pb) = &progress {
                        pb.inc(1);
                    }
                }
                if printed < limit {
                    pos.next = pos.next.max(decoded.next_offset.min(stop_at));
                }
            }
            if !sink.flush()? {
                break 'outer;
            }
            if printed >= limit {
                break 'outer;
            }
        }
        if refresh {
            refreshes += 1;
            if refreshes > MAX_REFRESHES {
                return Err(CliError::Other(format!(
                    "topic {}: partition leaders kept changing or were unavailable ({} metadata \
                     refreshes without progress); check `skiff cluster health`",
                    topic.name, MAX_REFRESHES
                )));
            }
            std::thread::sleep(Duration::from_millis(100 * u64::from(refreshes.min(10))));
            topic = meta::topic_info(cluster, &args.topic)?;
        }
    }
    sink.flush()?;
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }
    commit_moved(args, cluster, &topic, &positions, member)?;
    Ok(ExitCode::SUCCESS)
}

/// With --group (and without --no-commit): commits the positions that moved, as `member` of
/// its generation or as a simple client.
fn commit_moved(
    args: &ConsumeArgs,
    cluster: &mut Cluster,
    topic: &TopicInfo,
    positions: &BTreeMap<i32, Position>,
    member: Option<&mut Membership>,
) -> Result<(), CliError> {
    let Some(group) = &args.group else {
        return Ok(());
    };
    if args.no_commit {
        return Ok(());
    }
    let moved: group_offsets::Offsets = positions
        .iter()
        .filter(|(_, pos)| pos.next != pos.start)
        .map(|(p, pos)| ((topic.name.clone(), *p), pos.next))
        .collect();
    if moved.is_empty() {
        return Ok(());
    }
    match member {
        Some(m) => m.commit(cluster, &moved)?,
        None => group_offsets::commit(cluster, group, &moved)?,
    }
    eprintln!(
        "skiff: committed group {group}: {}",
        moved
            .iter()
            .map(|((_, p), o)| format!("{}-{p}={o}", topic.name))
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}

/// Where each partition starts and (without --follow) ends.
fn start_positions(
    args: &ConsumeArgs,
    cluster: &mut Cluster,
    topic: &TopicInfo,
    partitions: &[i32],
    isolation: i8,
) -> Result<BTreeMap<i32, Position>, CliError> {
    let marks = meta::watermarks(cluster, topic, partitions, isolation)?;
    let committed = match &args.group {
        Some(g) => {
            let wanted = BTreeMap::from([(topic.name.clone(), partitions.to_vec())]);
            group_offsets::fetch_committed(cluster, g, Some(&wanted))?
        }
        None => group_offsets::Offsets::new(),
    };
    let by_time = match spec::lookup_timestamp(args.offset) {
        Some(ts) => {
            let specs: Vec<(i32, i64)> = partitions.iter().map(|p| (*p, ts)).collect();
            meta::list_offsets(cluster, topic, &specs, isolation)?
        }
        None => BTreeMap::new(),
    };
    let mut out = BTreeMap::new();
    for p in partitions {
        let (earliest, latest) = marks.get(p).copied().unwrap_or((0, 0));
        let start = match committed.get(&(topic.name.clone(), *p)) {
            Some(c) => (*c).clamp(earliest, latest.max(earliest)),
            None => {
                let (o, clamped) = resolve(
                    args.offset,
                    earliest,
                    latest,
                    by_time.get(p).map(|a| a.offset),
                );
                if clamped {
                    eprintln!(
                        "skiff: {}-{p}: offset {} is outside [{earliest}, {latest}]; starting at {o}",
                        topic.name, args.offset
                    );
                }
                o
            }
        };
        out.insert(
            *p,
            Position {
                next: start,
                start,
                end: latest,
                stalls: 0,
            },
        );
    }
    Ok(out)
}

/// One partition's part of a Fetch answer.
#[derive(Debug)]
struct PartAnswer {
    partition: i32,
    error_code: i16,
    records: bytes::Bytes,
    aborted: Vec<(i64, i64)>,
}

fn fetch(
    cluster: &mut Cluster,
    topic: &TopicInfo,
    leader: i32,
    parts: &[i32],
    positions: &BTreeMap<i32, Position>,
    isolation: i8,
) -> Result<Vec<PartAnswer>, CliError> {
    let conn = cluster.node(leader)?;
    let mut version =
        conn.version(skiff_protocol::ApiKey::Fetch)
            .ok_or_else(|| CliError::Unsupported {
                addr: conn.addr().to_owned(),
                api: "Fetch",
            })?;
    if topic.meta.topic_id.is_nil() {
        version = version.min(12); // no topic id known: name the topic
    }
    // v0-12 name the topic, v13+ give its id: the field the version lacks stays default.
    let by_id = version >= 13;
    let request = FetchRequest {
        max_wait_ms: FETCH_WAIT_MS,
        min_bytes: 1,
        max_bytes: 50 * 1024 * 1024,
        isolation_level: isolation,
        topics: vec![FetchTopic {
            topic: if by_id {
                String::new()
            } else {
                topic.name.clone()
            },
            topic_id: if by_id {
                topic.meta.topic_id
            } else {
                FetchTopic::default().topic_id
            },
            partitions: parts
                .iter()
                .map(|p| FetchPartition {
                    partition: *p,
                    current_leader_epoch: topic
                        .partitions
                        .get(p)
                        .filter(|_| version >= 9)
                        .map_or(-1, |i| i.leader_epoch),
                    fetch_offset: positions.get(p).map_or(0, |pos| pos.next),
                    partition_max_bytes: PARTITION_MAX_BYTES,
                    ..Default::default()
                })
                .collect(),
        }],
        ..Default::default()
    };
    let response = match conn.call_at(version, request)? {
        ResponseBody::Fetch(r) => r,
        other => {
            return Err(CliError::Protocol {
                addr: conn.addr().to_owned(),
                reason: format!("expected a Fetch response, got {}", other.api_key().name()),
            });
        }
    };
    if let Some(e) = CliError::from_code(
        format!("fetching from {}", conn.addr()),
        response.error_code,
        None,
    ) {
        return Err(e);
    }
    Ok(response
        .responses
        .into_iter()
        .flat_map(|t| t.partitions)
        .map(|p| PartAnswer {
            partition: p.partition_index,
            error_code: p.error_code,
            records: p
                .records
                .and_then(|r| r.as_bytes().cloned())
                .unwrap_or_default(),
            aborted: p
                .aborted_transactions
                .unwrap_or_default()
                .iter()
                .map(|a| (a.producer_id, a.first_offset))
                .collect(),
        })
        .collect())
}

fn progress_bar(
    args: &ConsumeArgs,
    positions: &BTreeMap<i32, Position>,
) -> Option<indicatif::ProgressBar> {
    let total = match args.num {
        Some(n) => n,
        None if !args.follow => positions
            .values()
            .map(|p| u64::try_from(p.end - p.next).unwrap_or(0))
            .sum(),
        None => return None,
    };
    (total >= PROGRESS_MIN && std::io::stderr().is_terminal())
        .then(|| indicatif::ProgressBar::new(total))
}

/// Where records are printed: stdout, buffered per fetch round.
#[derive(Debug)]
struct Sink {
    format: Format,
    template: String,
    buf: Vec<u8>,
}

impl Sink {
    fn new(args: &ConsumeArgs) -> Sink {
        Sink {
            format: args.client.format,
            template: args.template.clone().unwrap_or_else(|| "%v\\n".into()),
            buf: Vec::new(),
        }
    }

    /// Adds a record; `false` once stdout is closed.
    fn print(&mut self, topic: &str, r: &records::Consumed) -> Result<bool, CliError> {
        match self.format {
            Format::Text => render_template(&self.template, topic, r, &mut self.buf),
            Format::Json => {
                let line = super::output::json_line(&JsonRecord::new(topic, r))?;
                self.buf.extend_from_slice(line.as_bytes());
                self.buf.push(b'\n');
            }
            Format::Yaml => {
                let doc = serde_norway::to_string(&JsonRecord::new(topic, r))
                    .map_err(|e| CliError::Other(format!("cannot write YAML: {e}")))?;
                self.buf.extend_from_slice(b"---\n");
                self.buf.extend_from_slice(doc.as_bytes());
            }
        }
        if self.buf.len() >= 64 * 1024 {
            return self.flush();
        }
        Ok(true)
    }

    /// Writes what is buffered; `false` when stdout is closed.
    fn flush(&mut self) -> Result<bool, CliError> {
        if self.buf.is_empty() {
            return Ok(true);
        }
        let mut out = std::io::stdout().lock();
        let written = out.write_all(&self.buf).and_then(|()| out.flush());
        self.buf.clear();
        match written {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(CliError::Other(format!("cannot write to stdout: {e}"))),
        }
    }
}
