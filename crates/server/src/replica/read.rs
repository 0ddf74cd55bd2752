//! Reads: Fetch, ListOffsets and OffsetForLeaderEpoch, all bounded by the core's one rule
//! (`Partition::read_bound`): a consumer reads to min(HW, DSO), or min(LSO, DSO) with
//! read_committed; a follower to the log end (a Fetch from a replica id that is not one is
//! refused, NOT_LEADER_OR_FOLLOWER; ListOffsets from one reads to the HW). A follower's fetch
//! first reports its log end to the core (which may move the HW and complete parked acks),
//! unless its log diverges from this leader's (KIP-320: `DivergingEpoch` instead of records). The reported high watermark is always the
//! real one (lag counts records still waiting for delivery); the reported LSO is capped by the
//! DSO for consumers.
//!
//! Before deciding, the core hears the log's current start offset (retention and DeleteRecords
//! move it in storage) so the reported log start is never stale.

use skiff_metadata::TopicInfo;
use skiff_replication::{BoundInputs, Isolation, ReadBound, Reader};
use skiff_storage::AbortedTxnRef;
use skiff_storage::{FileSlice, Log, StorageError, TimestampOffset};
use skiff_types::ErrorCode;

use super::{Hosted, ReplicaManager};

/// What a follower's fetch found before any read.
enum FollowerFetch {
    /// Its log end was taken; read as usual.
    Proceed,
    /// Its log diverges: `(epoch, end offset)` to answer.
    Diverging(i32, i64),
    /// Its fetch offset (or last fetched epoch) is outside this log.
    OutOfRange { log_start: i64, log_end: i64 },
}

/// One partition read of a Fetch.
#[derive(Clone, Copy, Debug)]
pub struct ReadParams {
    pub fetch_offset: i64,
    pub max_bytes: usize,
    pub min_one_message: bool,
    pub reader: Reader,
    /// The request's `CurrentLeaderEpoch` (-1: not given).
    pub current_leader_epoch: i32,
    /// A follower's `LastFetchedEpoch` (-1: not given; Fetch v12+).
    pub last_fetched_epoch: i32,
}

/// A Fetch read's answer: the bound it was read under (what the response reports) and the
/// bytes, or storage's refusal (OFFSET_OUT_OF_RANGE, a quarantined range, I/O).
#[derive(Debug)]
pub struct PartitionRead {
    pub bound: ReadBound,
    pub result: Result<Option<FileSlice>, StorageError>,
    /// A follower's log diverges from this leader's: `(epoch, end offset)` of the largest
    /// epoch at or below its `LastFetchedEpoch` (KIP-320); no records then.
    pub diverging: Option<(i32, i64)>,
    /// A read_committed consumer's read: the aborted transactions of the range read
    /// (Kafka's `collectAbortedTransactions`, from the `.txnindex` files; issue 18).
    pub aborted: Vec<AbortedTxnRef>,
}

impl ReplicaManager {
    /// Locks `h`, checks the leader epoch, refreshes the log start and computes the bound.
    fn bounded<T>(
        &self,
        h: &Hosted,
        reader: Reader,
        current_leader_epoch: i32,
        f: impl FnOnce(&mut Log, ReadBound) -> T,
    ) -> Result<T, ErrorCode> {
        let mut l = h.log.lock();
        let mut st = h.state.lock();
        let check = st.check_leader_epoch(current_leader_epoch);
        if check != ErrorCode::None {
            return Err(check);
        }
        let start = l.log_start_offset();
        if start > st.log_start_offset() {
            let fx = st.on_log_start_advanced(start);
            self.apply(&mut l, fx);
        }
        let delivery_stable_offset = match reader {
            Reader::Consumer(_) => l.delivery_stable_offset(self.clock.now_ms()),
            Reader::Replica(_) => None,
        };
        let inputs = BoundInputs {
            first_unstable_offset: l.first_unstable_offset(),
            delivery_stable_offset,
        };
        let bound = st.read_bound(reader, inputs)?;
        drop(st);
        Ok(f(&mut l, bound))
    }

    /// Fetch: one partition's records under the read bound. `Err` is a partition-level error
    /// with nothing to report (unknown, not hosted, fenced epoch).
    pub fn read(
        &self,
        info: &TopicInfo,
        partition: i32,
        p: &ReadParams,
    ) -> Result<PartitionRead, ErrorCode> {
        let h = self.hosted(info, partition)?;
        if let Reader::Replica(id) = p.reader {
            let (result, diverging) = match self.follower_fetch(&h, id, p)? {
                FollowerFetch::Proceed => (Ok(None), None),
                FollowerFetch::Diverging(epoch, end) => (Ok(None), Some((epoch, end))),
                FollowerFetch::OutOfRange { log_start, log_end } => (
                    Err(StorageError::OffsetOutOfRange {
                        offset: p.fetch_offset,
                        log_start,
                        log_end,
                    }),
                    None,
                ),
            };
            if result.is_err() || diverging.is_some() {
                let bound = self.bounded(&h, p.reader, p.current_leader_epoch, |_, b| b)?;
                return Ok(PartitionRead {
                    bound,
                    result,
                    diverging,
                    aborted: Vec::new(),
                });
            }
        }
        self.bounded(&h, p.reader, p.current_leader_epoch, |l, bound| {
            let result = l
                .read(
                    p.fetch_offset,
                    p.max_bytes,
                    bound.max_offset,
                    p.min_one_message,
                )
                .map(|r| r.slice);
            let aborted = if p.reader == Reader::Consumer(Isolation::ReadCommitted)
                && matches!(result, Ok(Some(_)))
            {
                l.collect_aborted_txns(p.fetch_offset, bound.max_offset)
            } else {
                Vec::new()
            };
            PartitionRead {
                bound,
                result,
                diverging: None,
                aborted,
            }
        })
    }

    /// A fetch from replica `id` on this leader (Kafka's `Partition.fetchRecords` for a
    /// follower): a diverging log is answered with its epoch end (and its fetch offset is
    /// not taken as its log end); otherwise its fetch offset is its log end, which may move
    /// the HW and complete parked acks. A replica id that is not a follower of this partition
    /// on this leader is refused with NOT_LEADER_OR_FOLLOWER, as Kafka does.
    fn follower_fetch(
        &self,
        h: &Hosted,
        id: i32,
        p: &ReadParams,
    ) -> Result<FollowerFetch, ErrorCode> {
        let mut l = h.log.lock();
        let mut st = h.state.lock();
        if !st.followers().iter().any(|f| f.id == id) {
            // Kafka's `followerReplicaOrThrow`: a replica fetch from a broker that is not a
            // follower of this partition here (or to a node that does not lead it).
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        let check = st.check_leader_epoch(p.current_leader_epoch);
        if check != ErrorCode::None {
            return Err(check);
        }
        let leo = l.log_end_offset();
        let out_of_range = FollowerFetch::OutOfRange {
            log_start: l.log_start_offset(),
            log_end: leo,
        };
        // Kafka's order: below the log start is OFFSET_OUT_OF_RANGE first; then the
        // divergence check; then the read (past the log end: OFFSET_OUT_OF_RANGE). An
        // out-of-range fetch changes nothing here (the follower resets and asks again).
        if p.fetch_offset < l.log_start_offset() {
            return Ok(out_of_range);
        }
        if p.last_fetched_epoch >= 0 {
            let (epoch, end) = l.leader_epochs().end_offset_for(p.last_fetched_epoch, leo);
            if epoch < 0 || end < 0 {
                // An epoch this leader cannot place (above its own): Kafka's answer.
                return Ok(out_of_range);
            }
            if epoch < p.last_fetched_epoch || end < p.fetch_offset {
                return Ok(FollowerFetch::Diverging(epoch, end));
            }
        }
        if p.fetch_offset > leo {
            return Ok(out_of_range);
        }
        let fx = st.on_follower_fetch(id, p.fetch_offset, self.clock.now_ms())?;
        drop(st);
        self.apply(&mut l, fx);
        Ok(FollowerFetch::Proceed)
    }

    /// ListOffsets: the offset for `timestamp` (Kafka's special values included) below the
    /// reader's bound; `Ok(None)` is Kafka's "not found".
    pub fn offset_for_timestamp(
        &self,
        info: &TopicInfo,
        partition: i32,
        current_leader_epoch: i32,
        reader: Reader,
        timestamp: i64,
    ) -> Result<Option<TimestampOffset>, ErrorCode> {
        let h = self.hosted(info, partition)?;
        let (current, hw, epoch_start) = {
            let st = h.state.lock();
            (
                st.leader_epoch(),
                st.high_watermark(),
                st.leader_epoch_start(),
            )
        };
        // Kafka's `fetchOffsetForTimestamp`: a new leader whose HW has not reached the start
        // of its epoch does not know the committed end yet: "latest" is OFFSET_NOT_AVAILABLE
        // (retriable) for clients.
        if timestamp == -1
            && matches!(reader, Reader::Consumer(_))
            && hw < epoch_start
            && h.state.lock().role() == skiff_replication::Role::Leader
        {
            return Err(ErrorCode::OffsetNotAvailable);
        }
        self.bounded(&h, reader, current_leader_epoch, |l, bound| {
            let no_epochs = l.leader_epochs().latest_epoch().is_none();
            l.offset_for_timestamp(timestamp, bound.max_offset)
                .map(|found| {
                    // Kafka records the leader's epoch at the log end when it becomes leader,
                    // so earliest / latest of a log with nothing appended since answer the
                    // current epoch (checked against Kafka: kafka_wire_differential).
                    found.map(|mut f| {
                        if f.leader_epoch.is_none()
                            && no_epochs
                            && (timestamp == -1 || timestamp == -2)
                        {
                            f.leader_epoch = Some(current);
                        }
                        f
                    })
                })
        })?
        .map_err(|e| {
            tracing::error!(topic = %info.name, partition, error = %e, "ListOffsets lookup failed");
            e.error_code()
        })
    }

    /// OffsetForLeaderEpoch: (epoch, end offset) of the largest epoch <= `leader_epoch`, the
    /// log end for the current epoch (KIP-101 / KIP-279).
    pub fn end_offset_for_epoch(
        &self,
        info: &TopicInfo,
        partition: i32,
        current_leader_epoch: i32,
        leader_epoch: i32,
    ) -> Result<(i32, i64), ErrorCode> {
        let h = self.hosted(info, partition)?;
        let l = h.log.lock();
        let st = h.state.lock();
        let check = st.check_leader_epoch(current_leader_epoch);
        if check != ErrorCode::None {
            return Err(check);
        }
        let current = st.leader_epoch();
        let epochs = l.leader_epochs();
        let leo = l.log_end_offset();
        if leader_epoch == current && epochs.latest_epoch().is_none_or(|e| e <= current) {
            return Ok((current, leo));
        }
        Ok(epochs.end_offset_for(leader_epoch, leo))
    }
}

impl ReplicaManager {
    /// The group coordinator's replay: the leader's own log from `offset`, up to its log end
    /// (not the HW: a coordinator loads everything it wrote). Returns the slice and the
    /// log's (start, end) offsets at the read.
    pub fn read_local(
        &self,
        info: &TopicInfo,
        partition: i32,
        offset: Option<i64>,
        max_bytes: usize,
    ) -> Result<LocalRead, ErrorCode> {
        let h = self.hosted(info, partition)?;
        let l = h.log.lock();
        let (start, end) = (l.log_start_offset(), l.log_end_offset());
        let from = offset.unwrap_or(start);
        if from >= end {
            return Ok(LocalRead {
                start,
                end,
                slice: Ok(None),
            });
        }
        let slice = l.read(from, max_bytes, end, true).map(|r| r.slice);
        Ok(LocalRead { start, end, slice })
    }
}

impl ReplicaManager {
    /// A coordinator's replay (the group and transaction coordinators): every batch of this
    /// leader's own log of `partition`, from its start to its end as of the first read, in
    /// order, `read_bytes` at a time. `f` gets each batch not wholly below the offset the read
    /// resumed at, with that offset (records below it were already given). A trailing partial
    /// batch is read again next round; a read that makes no progress is an error.
    pub fn scan_local(
        &self,
        info: &TopicInfo,
        partition: i32,
        read_bytes: usize,
        mut f: impl FnMut(&skiff_record::BatchView<'_>, i64) -> Result<(), String>,
    ) -> Result<(), ScanError> {
        let read = |offset: Option<i64>| {
            self.read_local(info, partition, offset, read_bytes)
                .map_err(ScanError::Unavailable)
        };
        let first = read(None)?;
        let (mut offset, end) = (first.start, first.end);
        let mut next_read = Some(first);
        while offset < end {
            let r = match next_read.take() {
                Some(r) => r,
                None => read(Some(offset))?,
            };
            let slice = r.slice.map_err(|e| ScanError::Read(e.to_string()))?;
            let Some(slice) = slice else { break };
            let bytes = slice
                .read_to_vec()
                .map_err(|e| ScanError::Read(e.to_string()))?;
            let mut next = offset;
            for batch in skiff_record::batches(&bytes) {
                let Ok((_, view)) = batch else { break };
                next = next.max(view.next_offset());
                if view.last_offset() < offset {
                    continue;
                }
                f(&view, offset).map_err(ScanError::Read)?;
            }
            if next <= offset {
                return Err(ScanError::Read(format!(
                    "no progress reading at offset {offset}"
                )));
            }
            offset = next;
        }
        Ok(())
    }
}

/// Why [`ReplicaManager::scan_local`] stopped.
#[derive(Debug)]
pub enum ScanError {
    /// The partition is not readable here (its code).
    Unavailable(ErrorCode),
    /// A read failed or a batch could not be decoded.
    Read(String),
}

/// A read of the local log ([`ReplicaManager::read_local`]).
#[derive(Debug)]
pub struct LocalRead {
    pub start: i64,
    pub end: i64,
    pub slice: Result<Option<FileSlice>, StorageError>,
}
