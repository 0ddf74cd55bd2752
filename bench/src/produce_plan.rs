//! The pure half of the produce load generator ([`crate::produce_gen`]): which batches each
//! Produce request carries, with which sequence numbers, and whether a response is the one
//! those batches must get.
//!
//! Mental model: a closed-loop producer always has full batches ready, so, like the Java
//! client's sender draining its accumulator, every request carries one full batch (of
//! `per_batch` records) for each of as many partitions as fit in `max_request_batches`,
//! partitions taken round-robin; the last batches of a run may be short. [`Planner`] owns the
//! per-partition next sequence: with idempotence each batch's base sequence is the previous
//! batch's base plus its record count (wrapping from `i32::MAX` to 0, as Kafka), the warm-up
//! batch included; without it every base sequence is -1 (no producer id). [`Checker`] owns the
//! per-partition next offset: a partition's first answer fixes it, every later answer must be
//! error 0 at exactly that offset (a single producer on a fresh topic, so any gap or repeat is
//! a lost or duplicated batch). Requests are answered in order on one connection, so the
//! in-flight queue is a FIFO and the checker sees answers in the order the planner made them.
//!
//! Invariants: sequences of a partition are gap-free across batches and requests; a request
//! never names a partition twice; the planner hands out exactly `total` records after the
//! warm-up.
//!
//! Transactions (issue 18): [`plan_txn`] cuts the same stream into transactions of
//! `per_txn` records, planned whole ([`TxnPlan`]: its requests and the partitions they write,
//! which AddPartitionsToTxn needs before the first batch); the last batch of a transaction is
//! short when `per_txn` is not a multiple of the batch, so every transaction holds exactly
//! `per_txn` records (the run's last may hold fewer) and sequences continue across them. A
//! commit's marker takes one offset in each of the transaction's partitions, before the next
//! transaction may add them: [`Checker::skip_markers`] expects that gap.
//!
//! The round-trip limit (issue 18): [`Drained`] cuts the same stream into segments of
//! `every` records exactly as [`plan_txn`] cuts transactions (same requests, same batches, same
//! sequences), but for an idempotent producer: a segment's requests are pipelined, then
//! [`DrainStep::Wait`] until every one is answered, then [`DrainStep::RoundTrips`] (the caller
//! makes its K no-op round trips on the idle connection), then the next segment. One segment
//! thus has the serial round-trip shape of a v1 transaction (drain, EndTxn, the next
//! AddPartitionsToTxn) without any transaction work; no markers, so the checker's offsets stay
//! consecutive. Invariants: `RoundTrips` comes exactly once per segment (the last included),
//! only when idle, and never before the segment's last request was handed out.
//!
//! Record content helpers (bench2, issues 7 and 8), pure as well: [`DelaySpread`] says which
//! timed batches carry a `__delay_ms` header on their first record (`percent` of them, evenly
//! spread: batch `i` is delayed when `floor((i+1)·p/100) > floor(i·p/100)`, so 1% is every
//! 100th batch and 100% every batch, exactly `floor(n·p/100)` of the first `n`); [`record_key`]
//! gives record `i` of the run the key `k%08d` with `k = i mod keys` (a key space of `keys`
//! cycled in order, so with `n` records each key repeats `n/keys` times); [`pace_sleep`] is the
//! optional rate limit (how long to wait before the next request).

/// One batch of a planned request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchPlan {
    pub partition: i32,
    /// -1 without idempotence.
    pub base_sequence: i32,
    pub records: usize,
}

/// Kafka's sequence increment: wraps from `i32::MAX` to 0.
pub fn add_sequence(seq: i32, n: usize) -> i32 {
    let n = (n % (1usize << 31)) as i64;
    ((i64::from(seq) + n) % (1i64 << 31)) as i32
}

/// Hands out the batches of each request.
#[derive(Clone, Debug)]
pub struct Planner {
    idempotent: bool,
    per_batch: usize,
    max_request_batches: usize,
    next_sequence: Vec<i32>,
    next_partition: usize,
    remaining: u64,
}

impl Planner {
    /// `partitions` >= 1, `per_batch` >= 1 and `max_request_batches` >= 1 (clamped).
    pub fn new(
        partitions: usize,
        per_batch: usize,
        max_request_batches: usize,
        idempotent: bool,
        total: u64,
    ) -> Planner {
        Planner {
            idempotent,
            per_batch: per_batch.max(1),
            max_request_batches: max_request_batches.max(1),
            next_sequence: vec![0; partitions.max(1)],
            next_partition: 0,
            remaining: total,
        }
    }

    /// Records not yet handed out.
    #[cfg(test)]
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    fn take(&mut self, partition: usize, records: usize) -> BatchPlan {
        let base_sequence = if self.idempotent {
            let s = self.next_sequence[partition];
            self.next_sequence[partition] = add_sequence(s, records);
            s
        } else {
            -1
        };
        BatchPlan {
            partition: partition as i32,
            base_sequence,
            records,
        }
    }

    /// One single-record batch per partition (not counted in `total`): connection, producer id
    /// and partition state exist before the clock starts.
    pub fn warmup(&mut self) -> Vec<BatchPlan> {
        (0..self.next_sequence.len())
            .map(|p| self.take(p, 1))
            .collect()
    }

    /// The next request's batches, or `None` once every record was handed out.
    pub fn next_request(&mut self) -> Option<Vec<BatchPlan>> {
        self.next_request_upto(u64::MAX)
    }

    /// [`Planner::next_request`] carrying at most `cap` records (a transaction's remainder:
    /// its last batch is short so the next transaction starts with a full one).
    pub fn next_request_upto(&mut self, cap: u64) -> Option<Vec<BatchPlan>> {
        let partitions = self.next_sequence.len();
        let mut out = Vec::new();
        let mut cap = cap;
        while self.remaining > 0 && cap > 0 && out.len() < self.max_request_batches.min(partitions)
        {
            let records = self.remaining.min(cap).min(self.per_batch as u64) as usize;
            let p = self.next_partition;
            self.next_partition = (p + 1) % partitions;
            out.push(self.take(p, records));
            self.remaining -= records as u64;
            cap -= records as u64;
        }
        (!out.is_empty()).then_some(out)
    }
}

/// One transaction of the transactional mode, planned whole before it starts: its partitions
/// go to AddPartitionsToTxn before any of its batches is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnPlan {
    /// The Produce requests, in order (pipelined inside the transaction).
    pub requests: Vec<Vec<BatchPlan>>,
    /// Every partition the requests write, ascending, each once.
    pub partitions: Vec<i32>,
    pub records: u64,
}

impl TxnPlan {
    /// A transaction of these requests (the warm-up's is one request).
    pub fn of(requests: Vec<Vec<BatchPlan>>) -> TxnPlan {
        let mut partitions: Vec<i32> = requests.iter().flatten().map(|b| b.partition).collect();
        partitions.sort_unstable();
        partitions.dedup();
        let records = requests.iter().flatten().map(|b| b.records as u64).sum();
        TxnPlan {
            requests,
            partitions,
            records,
        }
    }
}

/// The next transaction: the planner's next `per_txn` records (>= 1; fewer for the last), or
/// `None` once every record was handed out. Sequences continue across transactions.
pub fn plan_txn(planner: &mut Planner, per_txn: u64) -> Option<TxnPlan> {
    let mut left = per_txn.max(1);
    let mut requests = Vec::new();
    while left > 0
        && let Some(r) = planner.next_request_upto(left)
    {
        left -= r.iter().map(|b| b.records as u64).sum::<u64>();
        requests.push(r);
    }
    (!requests.is_empty()).then(|| TxnPlan::of(requests))
}

/// What the round-trip-limit mode does next (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrainStep {
    Send(Vec<BatchPlan>),
    /// The segment's requests are all sent: wait for their answers.
    Wait,
    /// The segment is drained (no request in flight): make the no-op round trips now.
    RoundTrips,
    Done,
}

/// Segments of `every` records, each drained and followed by round trips.
#[derive(Clone, Debug)]
pub struct Drained {
    every: u64,
    queue: std::collections::VecDeque<Vec<BatchPlan>>,
    /// A segment was begun and its round trips are not made yet.
    open: bool,
}

impl Drained {
    /// `every` >= 1 (clamped).
    pub fn new(every: u64) -> Drained {
        Drained {
            every: every.max(1),
            queue: std::collections::VecDeque::new(),
            open: false,
        }
    }

    /// The next step; `idle`: no request is in flight. After [`DrainStep::RoundTrips`] the
    /// caller asks again (still idle) for the next segment's first request.
    pub fn next(&mut self, planner: &mut Planner, idle: bool) -> DrainStep {
        if let Some(r) = self.queue.pop_front() {
            return DrainStep::Send(r);
        }
        if self.open {
            if !idle {
                return DrainStep::Wait;
            }
            self.open = false;
            return DrainStep::RoundTrips;
        }
        match plan_txn(planner, self.every) {
            None => DrainStep::Done,
            Some(seg) => {
                self.queue = seg.requests.into();
                self.open = true;
                self.queue
                    .pop_front()
                    .map_or(DrainStep::Done, DrainStep::Send)
            }
        }
    }
}

/// Which batches carry a `__delay_ms` header (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct DelaySpread {
    /// Share of batches delayed, 0..=100 (clamped).
    percent: f64,
    next_batch: u64,
}

impl DelaySpread {
    pub fn new(percent: f64) -> DelaySpread {
        DelaySpread {
            percent: if percent.is_nan() {
                0.0
            } else {
                percent.clamp(0.0, 100.0)
            },
            next_batch: 0,
        }
    }

    /// Whether the next batch (counted from 0) is delayed; advances the count.
    pub fn next_is_delayed(&mut self) -> bool {
        let i = self.next_batch as f64;
        self.next_batch += 1;
        ((i + 1.0) * self.percent / 100.0).floor() > (i * self.percent / 100.0).floor()
    }
}

/// The key of record `index` of the run with a key space of `keys` (`None` when 0: no keys).
pub fn record_key(index: u64, keys: u64) -> Option<Vec<u8>> {
    (keys > 0).then(|| format!("k{:08}", index % keys).into_bytes())
}

/// With a rate limit of `mb_per_s` (10^6 bytes) and `sent_bytes` sent `elapsed` after the
/// start, how long to wait before sending more (zero when behind schedule or unlimited).
pub fn pace_sleep(
    mb_per_s: Option<f64>,
    sent_bytes: u64,
    elapsed: std::time::Duration,
) -> std::time::Duration {
    match mb_per_s {
        Some(r) if r > 0.0 => {
            let due = sent_bytes as f64 / (r * 1e6);
            std::time::Duration::from_secs_f64((due - elapsed.as_secs_f64()).max(0.0))
        }
        _ => std::time::Duration::ZERO,
    }
}

/// One partition's answer in a Produce response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionAnswer {
    pub partition: i32,
    pub error_code: i16,
    pub base_offset: i64,
}

/// Checks every answer against the batches sent.
#[derive(Clone, Debug)]
pub struct Checker {
    next_offset: Vec<Option<i64>>,
}

impl Checker {
    pub fn new(partitions: usize) -> Checker {
        Checker {
            next_offset: vec![None; partitions.max(1)],
        }
    }

    /// A transaction committed: its marker took one offset in each of `partitions` (written
    /// before the next transaction may add them, so before any later batch of theirs).
    pub fn skip_markers(&mut self, partitions: &[i32]) {
        for p in partitions {
            if let Some(Some(next)) = usize::try_from(*p)
                .ok()
                .and_then(|i| self.next_offset.get_mut(i))
            {
                *next += 1;
            }
        }
    }

    /// `sent`'s batches must each be answered exactly once, with error 0, at the partition's
    /// next offset (any offset >= 0 for a partition's first answer).
    pub fn check(&mut self, sent: &[BatchPlan], got: &[PartitionAnswer]) -> Result<(), String> {
        if got.len() != sent.len() {
            return Err(format!(
                "{} partition answers for {} batches",
                got.len(),
                sent.len()
            ));
        }
        for b in sent {
            let mut answers = got.iter().filter(|a| a.partition == b.partition);
            let (Some(a), None) = (answers.next(), answers.next()) else {
                return Err(format!(
                    "partition {} not answered exactly once",
                    b.partition
                ));
            };
            if a.error_code != 0 {
                return Err(format!(
                    "partition {}: error code {}",
                    b.partition, a.error_code
                ));
            }
            let slot = usize::try_from(b.partition)
                .ok()
                .and_then(|p| self.next_offset.get_mut(p))
                .ok_or_else(|| format!("partition {} out of range", b.partition))?;
            match *slot {
                Some(want) if a.base_offset != want => {
                    return Err(format!(
                        "partition {}: base offset {} but {} expected (gap or duplicate)",
                        b.partition, a.base_offset, want
                    ));
                }
                None if a.base_offset < 0 => {
                    return Err(format!(
                        "partition {}: base offset {}",
                        b.partition, a.base_offset
                    ));
                }
                _ => {}
            }
            *slot = Some(a.base_offset + b.records as i64);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn answers(plan: &[BatchPlan], bases: &[i64]) -> Vec<PartitionAnswer> {
        plan.iter()
            .zip(bases)
            .map(|(b, &base_offset)| PartitionAnswer {
                partition: b.partition,
                error_code: 0,
                base_offset,
            })
            .collect()
    }

    #[test]
    fn sequence_wraps_like_kafka() {
        for (seq, n, want) in [
            (0, 5, 5),
            (i32::MAX, 1, 0),
            (i32::MAX - 2, 5, 2),
            (10, 0, 10),
        ] {
            assert_eq!(add_sequence(seq, n), want, "{seq} + {n}");
        }
    }

    #[test]
    fn one_partition_sequences_continue_from_the_warmup() {
        let mut p = Planner::new(1, 15, 8, true, 40);
        assert_eq!(
            p.warmup(),
            vec![BatchPlan {
                partition: 0,
                base_sequence: 0,
                records: 1
            }]
        );
        let mut got = Vec::new();
        while let Some(r) = p.next_request() {
            assert_eq!(r.len(), 1, "one partition: one batch per request");
            got.push((r[0].base_sequence, r[0].records));
        }
        assert_eq!(got, vec![(1, 15), (16, 15), (31, 10)]);
        assert_eq!(p.remaining(), 0);
    }

    #[test]
    fn partitions_round_robin_with_gap_free_sequences_each() {
        let (parts, per_batch, total) = (3, 4, 50u64);
        let mut p = Planner::new(parts, per_batch, 2, true, total);
        p.warmup();
        let mut next = vec![1i32; parts];
        let mut handed = 0;
        let mut order = Vec::new();
        while let Some(r) = p.next_request() {
            assert!(r.len() <= 2);
            let mut seen: Vec<i32> = r.iter().map(|b| b.partition).collect();
            seen.dedup();
            assert_eq!(seen.len(), r.len(), "a partition twice in one request");
            for b in r {
                let i = b.partition as usize;
                assert_eq!(b.base_sequence, next[i], "partition {i}");
                next[i] += b.records as i32;
                handed += b.records as u64;
                order.push(b.partition);
            }
        }
        assert_eq!(handed, total);
        assert_eq!(&order[..6], &[0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn without_idempotence_every_sequence_is_minus_one() {
        let mut p = Planner::new(2, 3, 8, false, 10);
        let all: Vec<BatchPlan> = p
            .warmup()
            .into_iter()
            .chain(std::iter::from_fn(|| p.next_request()).flatten())
            .collect();
        assert!(all.iter().all(|b| b.base_sequence == -1));
        assert_eq!(all.iter().map(|b| b.records).sum::<usize>(), 12);
    }

    #[test]
    fn checker_accepts_consecutive_offsets_only() {
        let mut p = Planner::new(2, 5, 8, true, 20);
        let mut c = Checker::new(2);
        let w = p.warmup();
        c.check(&w, &answers(&w, &[0, 0])).unwrap();
        let r1 = p.next_request().unwrap();
        c.check(&r1, &answers(&r1, &[1, 1])).unwrap();
        let r2 = p.next_request().unwrap();
        // Partition 1 repeats the previous offset: a duplicate.
        let err = c.check(&r2, &answers(&r2, &[6, 1])).unwrap_err();
        assert!(err.contains("partition 1"), "{err}");
    }

    /// (per batch, request batches, partitions, total, per txn) -> records of each txn.
    #[test]
    fn transactions_cut_the_stream_exactly() {
        for (per_batch, req_batches, parts, total, per_txn, want) in [
            (15, 1, 1, 250, 100, vec![100, 100, 50]),
            (15, 1, 1, 2000, 1000, vec![1000, 1000]),
            (15, 8, 3, 100, 1000, vec![100]),
            (7, 2, 2, 30, 10, vec![10, 10, 10]),
            (4, 8, 1, 3, 0, vec![1, 1, 1]), // per_txn 0 is clamped to 1
        ] {
            let mut p = Planner::new(parts, per_batch, req_batches, true, total);
            p.warmup();
            let mut next = vec![1i32; parts];
            let mut got = Vec::new();
            while let Some(t) = plan_txn(&mut p, per_txn) {
                let batches: Vec<&BatchPlan> = t.requests.iter().flatten().collect();
                assert_eq!(
                    batches.iter().map(|b| b.records as u64).sum::<u64>(),
                    t.records
                );
                assert!(batches.iter().all(|b| b.records <= per_batch));
                for b in &batches {
                    let i = b.partition as usize;
                    assert_eq!(b.base_sequence, next[i], "sequences continue");
                    next[i] += b.records as i32;
                }
                let mut parts_of: Vec<i32> = batches.iter().map(|b| b.partition).collect();
                parts_of.sort_unstable();
                parts_of.dedup();
                assert_eq!(
                    t.partitions, parts_of,
                    "every written partition added, once"
                );
                got.push(t.records);
            }
            assert_eq!(
                got, want,
                "{per_batch} {req_batches} {parts} {total} {per_txn}"
            );
        }
    }

    #[test]
    fn a_transaction_of_100_records_in_15_record_batches() {
        let mut p = Planner::new(1, 15, 8, true, 200);
        p.warmup();
        let t = plan_txn(&mut p, 100).unwrap();
        let sizes: Vec<usize> = t.requests.iter().map(|r| r[0].records).collect();
        assert_eq!(sizes, vec![15, 15, 15, 15, 15, 15, 10], "last batch short");
        let t2 = plan_txn(&mut p, 100).unwrap();
        assert_eq!(t2.requests[0][0].records, 15, "next starts full");
        assert_eq!(t2.requests[0][0].base_sequence, 101);
        assert_eq!(
            TxnPlan::of(p.warmup().into_iter().map(|b| vec![b]).collect()).records,
            1
        );
    }

    #[test]
    fn a_commit_marker_takes_one_offset_per_partition() {
        let mut p = Planner::new(2, 5, 8, true, 20);
        let mut c = Checker::new(2);
        let w = p.warmup();
        c.check(&w, &answers(&w, &[0, 0])).unwrap();
        c.skip_markers(&[0, 1]);
        let r1 = p.next_request().unwrap();
        let err = c.check(&r1, &answers(&r1, &[1, 1])).unwrap_err();
        assert!(err.contains("1 but 2 expected"), "{err}");
        let mut c = Checker::new(2);
        c.check(&w, &answers(&w, &[0, 0])).unwrap();
        c.skip_markers(&[1, 9]); // an unknown partition is ignored
        c.check(&r1, &answers(&r1, &[1, 2])).unwrap();
    }

    /// (per batch, request batches, total, every, in flight) -> requests per segment; every
    /// segment ends with exactly one RoundTrips, made idle, after its last request.
    #[test]
    fn drained_segments_have_the_transaction_shape() {
        for (per_batch, req_batches, total, every, max_in_flight, want) in [
            (15, 1, 2000, 1000, 5, vec![67, 67]),
            (15, 1, 250, 100, 5, vec![7, 7, 4]),
            (15, 1, 250, 100, 1, vec![7, 7, 4]),
            (15, 8, 100, 1000, 5, vec![7]),
            (4, 8, 3, 0, 2, vec![1, 1, 1]), // every 0 is clamped to 1
        ] {
            let mut p = Planner::new(1, per_batch, req_batches, true, total);
            p.warmup();
            // The transactional cut of the same stream, for comparison.
            let mut q = p.clone();
            let mut txn_requests = Vec::new();
            while let Some(t) = plan_txn(&mut q, every) {
                txn_requests.extend(t.requests);
            }
            let mut d = Drained::new(every);
            let (mut in_flight, mut sent, mut segments) = (0usize, Vec::new(), Vec::new());
            let mut this_segment = 0;
            loop {
                match d.next(&mut p, in_flight == 0) {
                    DrainStep::Send(r) => {
                        assert!(in_flight < max_in_flight, "the caller's window");
                        sent.push(r);
                        in_flight += 1;
                        this_segment += 1;
                        if in_flight == max_in_flight {
                            in_flight -= 1; // the caller reads an answer
                        }
                    }
                    DrainStep::Wait => {
                        assert!(in_flight > 0, "Wait only with requests in flight");
                        in_flight -= 1;
                    }
                    DrainStep::RoundTrips => {
                        assert_eq!(in_flight, 0, "round trips only when drained");
                        segments.push(this_segment);
                        this_segment = 0;
                    }
                    DrainStep::Done => break,
                }
            }
            assert_eq!(this_segment, 0, "the last segment has its round trips too");
            assert_eq!(segments, want, "{per_batch} {req_batches} {total} {every}");
            assert_eq!(
                sent, txn_requests,
                "the same requests as transactions of {every}"
            );
        }
    }

    fn delayed_of(percent: f64, n: usize) -> Vec<usize> {
        let mut d = DelaySpread::new(percent);
        (0..n).filter(|_| d.next_is_delayed()).collect()
    }

    #[test]
    fn delay_spread_is_even_and_exact() {
        assert!(delayed_of(0.0, 1000).is_empty());
        assert_eq!(delayed_of(100.0, 7), vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(
            delayed_of(1.0, 350),
            vec![99, 199, 299],
            "every 100th batch"
        );
        assert_eq!(delayed_of(50.0, 6), vec![1, 3, 5]);
        assert_eq!(delayed_of(25.0, 8), vec![3, 7]);
        for p in [0.5, 1.0, 3.0, 10.0, 33.0, 99.0] {
            let n = 10_000;
            let want = (n as f64 * p / 100.0).floor() as usize;
            assert_eq!(delayed_of(p, n).len(), want, "{p}%");
        }
        assert!(delayed_of(-5.0, 100).is_empty(), "clamped to 0");
        assert_eq!(delayed_of(250.0, 10).len(), 10, "clamped to 100");
        assert!(delayed_of(f64::NAN, 10).is_empty());
    }

    #[test]
    fn keys_cycle_through_the_key_space() {
        assert_eq!(record_key(5, 0), None);
        assert_eq!(record_key(0, 3), Some(b"k00000000".to_vec()));
        assert_eq!(record_key(4, 3), Some(b"k00000001".to_vec()));
        assert_eq!(record_key(3, 3), record_key(0, 3), "a repeat");
        let distinct: std::collections::BTreeSet<_> =
            (0..1000).map(|i| record_key(i, 100)).collect();
        assert_eq!(distinct.len(), 100);
    }

    #[test]
    fn pacing_waits_only_when_ahead() {
        use std::time::Duration;
        let s = Duration::from_secs;
        assert_eq!(pace_sleep(None, 1 << 30, s(0)), Duration::ZERO);
        assert_eq!(pace_sleep(Some(0.0), 1 << 30, s(0)), Duration::ZERO);
        // 10 MB at 5 MB/s is due at 2 s: at 0.5 s wait 1.5 s, at 3 s do not wait.
        let w = pace_sleep(Some(5.0), 10_000_000, Duration::from_millis(500));
        assert!((w.as_secs_f64() - 1.5).abs() < 1e-9, "{w:?}");
        assert_eq!(pace_sleep(Some(5.0), 10_000_000, s(3)), Duration::ZERO);
    }

    #[test]
    fn checker_table_of_bad_answers() {
        let sent = vec![
            BatchPlan {
                partition: 0,
                base_sequence: 0,
                records: 3,
            },
            BatchPlan {
                partition: 1,
                base_sequence: 0,
                records: 3,
            },
        ];
        let ok = |p, o| PartitionAnswer {
            partition: p,
            error_code: 0,
            base_offset: o,
        };
        let cases: Vec<(&str, Vec<PartitionAnswer>)> = vec![
            ("missing", vec![ok(0, 0)]),
            ("twice", vec![ok(0, 0), ok(0, 0)]),
            (
                "error",
                vec![
                    ok(0, 0),
                    PartitionAnswer {
                        error_code: 45,
                        ..ok(1, 0)
                    },
                ],
            ),
            ("negative", vec![ok(0, -1), ok(1, 0)]),
            ("unknown partition", vec![ok(0, 0), ok(7, 0)]),
        ];
        for (name, got) in cases {
            assert!(Checker::new(2).check(&sent, &got).is_err(), "{name}");
        }
        assert!(Checker::new(2).check(&sent, &[ok(1, 4), ok(0, 9)]).is_ok());
    }
}
