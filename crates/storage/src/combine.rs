//! Flat combining of concurrent appends to one partition (issue 14): producers that queue on a
//! partition's lock have their batches written by whoever holds it, in one `pwritev`.
//!
//! Mental model: two halves.
//! - [`Log::append_validated_group`] appends several validated client batches in order, with
//!   exactly the per-batch answers (offsets, duplicates, refusals) that as many
//!   [`Log::append_validated`] calls would give, but writes every batch that lands in the same
//!   segment with one vectored write: each batch is *staged* (offsets assigned, producer state,
//!   epoch cache, indexes and log end updated in memory) and the staged bytes go out together
//!   before the lock is released; a roll flushes what is staged first. The group-commit state
//!   ([`crate::sync::SyncState`], read by fsyncs outside the lock) hears the new log end only
//!   after the write.
//! - [`Combiner`] is the queue in front of the log's lock: a caller enqueues its job and, if no
//!   one is combining, becomes the combiner: it takes every queued job (its own and those that
//!   arrive meanwhile), runs them as one group under the lock, hands each caller its answer and
//!   repeats until the queue is empty. Other callers spin on a counter of posted answers
//!   (without the lock) while groups keep being posted, up to about 50 µs without progress,
//!   then sleep until their answer is there: a group write
//!   takes microseconds, about what a futex sleep and wake costs on a VM. So the
//!   lock is never handed from thread to thread per batch (a futex wake each time), and a
//!   producer's validation overlaps the write of another's batch.
//!
//! Invariants: answers are per job and in queue order; a job is run exactly once; while
//! `combining` is set the combiner drains the queue until it finds it empty, and clears the
//! flag in the same critical section, so a job enqueued at any moment is run by the current
//! combiner or its own caller becomes the next (no lost wake-up). An I/O error of the group
//! write fails every batch staged in it and takes the log dir offline (the in-memory state ran
//! ahead of the file; the log manager re-opens the log from disk before the dir is online).

use std::collections::HashMap;

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex, MutexGuard};
use skiff_record::BATCH_HEADER_BYTES;

use crate::error::{Result, StorageError};
use crate::log::{AppendInfo, Log};
use crate::producer_state::Check;
use crate::segment::scan::BatchHeader;
use crate::validate::ValidatedBatch;

/// A validated client batch as a grouped append takes it: [`ValidatedBatch`] (borrowing the
/// request), or a caller's owned form of one (the broker's, holding the request's `Bytes`, so
/// that a job can wait in a long-lived [`Combiner`]).
pub trait GroupBatch {
    /// The 61-byte header as validation left it (offsets and epoch are stamped on a copy).
    fn header(&self) -> &[u8; BATCH_HEADER_BYTES];
    /// The records section.
    fn body(&self) -> &[u8];
    /// Delay-enabled topics: the batch's due time, if after the append (issue 8).
    fn deliver_after_ms(&self) -> Option<i64>;
    fn size(&self) -> usize {
        BATCH_HEADER_BYTES + self.body().len()
    }
}

impl GroupBatch for ValidatedBatch<'_> {
    fn header(&self) -> &[u8; BATCH_HEADER_BYTES] {
        &self.header
    }
    fn body(&self) -> &[u8] {
        &self.body
    }
    fn deliver_after_ms(&self) -> Option<i64> {
        self.deliver_after_ms
    }
}

/// Batches staged in the active segment and not yet written.
struct Staged {
    position: u64,
    /// (index into the group, stamped header copy)
    batches: Vec<(usize, [u8; BATCH_HEADER_BYTES])>,
}

impl Log {
    /// Appends `batches` in order as leader at `leader_epoch`, writing the batches that share
    /// a segment with one vectored write. Answer `i` is what
    /// [`Log::append_validated`]`(batches[i], ..)` would have answered after the ones before
    /// it (see the module doc).
    pub fn append_validated_group<B: GroupBatch>(
        &mut self,
        batches: &[&B],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Vec<Result<AppendInfo>> {
        let mut out: Vec<Option<Result<AppendInfo>>> = (0..batches.len()).map(|_| None).collect();
        let mut staged = Staged {
            position: self.active().size(),
            batches: Vec::with_capacity(batches.len()),
        };
        for (i, batch) in batches.iter().enumerate() {
            if let Err(e) = self.check_online() {
                out[i] = Some(Err(e));
                continue;
            }
            let r = self.stage_one(
                i,
                *batch,
                leader_epoch,
                now_ms,
                &mut staged,
                batches,
                &mut out,
            );
            if let Err(e) = &r
                && matches!(e, StorageError::Io { .. })
            {
                self.fail_dir(e);
            }
            out[i] = Some(r);
        }
        self.write_group(&mut staged, batches, &mut out);
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(StorageError::InvalidArgument(
                        "a grouped append produced no answer".into(),
                    ))
                })
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn stage_one<B: GroupBatch>(
        &mut self,
        i: usize,
        batch: &B,
        leader_epoch: i32,
        now_ms: i64,
        staged: &mut Staged,
        batches: &[&B],
        out: &mut [Option<Result<AppendInfo>>],
    ) -> Result<AppendInfo> {
        let mut bytes = *batch.header();
        let header = crate::log::validated_header(&bytes, batch.body().len())?;
        if let Check::Duplicate(d) = self.check_producer_header(&header)? {
            return Ok(self.duplicate(&d, header.records_count));
        }
        let base = self.log_end_offset;
        skiff_record::set_base_offset(&mut bytes, base);
        skiff_record::set_partition_leader_epoch(&mut bytes, leader_epoch);
        let header: BatchHeader = crate::log::rebased(&header, base, leader_epoch)?;
        let size = batch.size();
        self.check_append(&header, size)?;
        let (ts, last) = (header.max_timestamp, header.last_offset);
        if self.roll_needed(size as u64, ts, base, last, now_ms) {
            self.write_group(staged, batches, out);
            self.check_online()?;
            self.roll_at(base, now_ms)?;
            staged.position = self.active().size();
        }
        let position = self.active_mut().append_staged(size, last, ts)?;
        debug_assert_eq!(
            position,
            staged.position
                + staged
                    .batches
                    .iter()
                    .map(|(j, _)| batches[*j].size() as u64)
                    .sum::<u64>()
        );
        staged.batches.push((i, bytes));
        let info = self.finish_append(&header, size)?;
        if let Some(due) = batch.deliver_after_ms() {
            self.record_delayed_batch(&info, due)?;
        }
        Ok(info)
    }

    /// Writes the staged batches (one `pwritev`) and publishes the log end; on an I/O error
    /// every staged batch's answer becomes that error and the log dir goes offline.
    fn write_group<B: GroupBatch>(
        &mut self,
        staged: &mut Staged,
        batches: &[&B],
        out: &mut [Option<Result<AppendInfo>>],
    ) {
        if staged.batches.is_empty() {
            return;
        }
        let mut pieces: Vec<&[u8]> = Vec::with_capacity(staged.batches.len() * 2);
        for (j, header) in &staged.batches {
            pieces.push(header);
            pieces.push(batches[*j].body());
        }
        let written = self.active().write_staged(&pieces, staged.position);
        drop(pieces);
        match written {
            Ok(()) => self.publish_log_end(),
            Err(e) => {
                self.fail_dir(&e);
                let message = e.to_string();
                for (j, _) in &staged.batches {
                    out[*j] = Some(Err(StorageError::Io {
                        path: self.dir().display().to_string(),
                        source: std::io::Error::other(message.clone()),
                    }));
                }
            }
        }
        staged.position += staged
            .batches
            .drain(..)
            .map(|(j, _)| batches[j].size() as u64)
            .sum::<u64>();
    }
}

struct Queue<J, R> {
    jobs: Vec<(u64, J)>,
    answers: HashMap<u64, R>,
    next_ticket: u64,
    combining: bool,
}

/// The queue in front of one partition's lock (see the module doc). `J` is a caller's job,
/// `R` its answer; the group function runs a whole queue's worth of jobs at once.
pub struct Combiner<J, R> {
    queue: Mutex<Queue<J, R>>,
    answered: Condvar,
    /// Bumped (under the queue's lock) whenever answers are posted: a waiter spins on it
    /// without the lock before it parks.
    posted: AtomicU64,
}

/// How many `spin_loop` rounds a waiter spins for its answer before it parks on the condvar:
/// about 55 µs on the benchmark VM (AMD EPYC). A group write of a few batches takes
/// microseconds; a futex sleep and wake costs about as much again on a VM. Counted rather than
/// timed: the clock is read only through the broker's clock (tidy's rule).
const SPIN_ROUNDS: u32 = 2000;

/// How many spin windows a waiter may use per job. A window ends when any group's answers are
/// posted; that group need not hold this job (it was enqueued while the combiner was writing
/// an earlier group), so a waiter spins again while groups keep being posted, and parks only
/// after a window with no progress or when the windows are used up.
const SPIN_WINDOWS: u32 = 8;

impl<J, R> std::fmt::Debug for Combiner<J, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = self.queue.lock();
        f.debug_struct("Combiner")
            .field("queued", &q.jobs.len())
            .field("combining", &q.combining)
            .finish()
    }
}

impl<J, R> Default for Combiner<J, R> {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Queue {
                jobs: Vec::new(),
                answers: HashMap::new(),
                next_ticket: 0,
                combining: false,
            }),
            answered: Condvar::new(),
            posted: AtomicU64::new(0),
        }
    }
}

impl<J, R> Combiner<J, R> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `job` through `group` (which gets the queued jobs in order and must answer each,
    /// in order), either in this thread as the combiner or in the current combiner's.
    /// `group` must not panic: the jobs it took would never be answered.
    pub fn run(&self, job: J, group: impl Fn(Vec<J>) -> Vec<R>) -> R {
        let mut q = self.queue.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.jobs.push((ticket, job));
        let mut windows = SPIN_WINDOWS;
        loop {
            if let Some(r) = q.answers.remove(&ticket) {
                return r;
            }
            if !q.combining {
                q.combining = true;
                loop {
                    let jobs = std::mem::take(&mut q.jobs);
                    if jobs.is_empty() {
                        break;
                    }
                    drop(q);
                    let (tickets, jobs): (Vec<u64>, Vec<J>) = jobs.into_iter().unzip();
                    let n = tickets.len();
                    let answers = group(jobs);
                    assert_eq!(answers.len(), n, "a combining group must answer every job");
                    q = self.queue.lock();
                    q.answers.extend(tickets.into_iter().zip(answers));
                    self.posted.fetch_add(1, Ordering::Release);
                    self.answered.notify_all();
                }
                q.combining = false;
                continue;
            }
            if windows > 0 {
                windows -= 1;
                let seen = self.posted.load(Ordering::Acquire);
                let posted = MutexGuard::unlocked(&mut q, || {
                    (0..SPIN_ROUNDS).any(|_| {
                        std::hint::spin_loop();
                        self.posted.load(Ordering::Acquire) != seen
                    })
                });
                if posted {
                    continue;
                }
            }
            self.answered.wait(&mut q);
        }
    }
}
