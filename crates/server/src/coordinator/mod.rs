//! The group coordinator runtime: drives the pure [`GroupCoordinatorShard`]s of `skiff-group`
//! with real time, the `__consumer_offsets` log and the connections waiting for answers.
//!
//! Mental model: one [`Slot`] per `__consumer_offsets` partition, each a mutex around its shard
//! (or "loading"), the senders of the requests it still owes an answer, and the metadata image
//! its KIP-848 topic view was built from. A group lives on slot
//! `partition_for(group_id, partitions)`. A handler call ([`GroupCoordinator::call`]) takes
//! the slot's lock, registers a oneshot sender under a fresh [`RequestToken`], runs the shard
//! method and applies the [`Effects`]: the records are appended to the slot's partition as one
//! batch *first* (fsynced before answering if the topic is durable), *then* the responses are
//! sent to their tokens' senders -- which may answer JoinGroup/SyncGroup requests parked by
//! earlier calls. A call whose own answer came back at once is [`Answer::Ready`]; otherwise
//! the handler returns a `Reply::Later` on the receiver ([`Answer::Parked`]).
//!
//! Transactions (issue 18): a TxnOffsetCommit ([`GroupCoordinator::call_transactional`]) is
//! appended as a transactional batch of its producer and stays pending in the shard; the
//! WriteTxnMarkers path ([`GroupCoordinator::write_txn_marker`]) appends the producer's marker
//! and completes the transaction in the shard under the same lock, so the shard's order is the
//! log's; replay feeds transactional batches and markers back the same way (`offsets_log`).
//! Timers: every apply records the shard's next deadline; the driver task (`driver`) sleeps
//! until the earliest one (woken early when a deadline changes) and calls `tick`.
//! Loading: at start every partition of an existing `__consumer_offsets` is replayed on the
//! blocking pool (calls meanwhile answer COORDINATOR_LOAD_IN_PROGRESS); if an append fails,
//! the shard's memory is ahead of its log, so the slot answers NOT_COORDINATOR to everything
//! it owed, drops the shard and replays the partition again.
//! Ownership (issue 16): on one node every slot is this node's. In a cluster a slot is loaded
//! only while this node leads its partition (`reconcile`, after every metadata change) and
//! answers NOT_COORDINATOR otherwise, so a client follows FindCoordinator to the leader.
//! Shutdown: the driver answers every parked request NOT_COORDINATOR so connections drain;
//! calls made after the shutdown signal are refused the same way.
//!
//! Thread-safety: slots are independent `parking_lot` mutexes, held only for one shard call
//! plus one in-memory log append (never across an `.await`). `Send + Sync`.

mod driver;
mod offsets_log;
mod settings;

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use parking_lot::Mutex;
use skiff_group::{
    Effects, GroupCoordinatorShard, GroupOverrides, RequestContext, RequestToken, Response,
    TopicInfo,
};
use skiff_metadata::MetadataImage;
use skiff_protocol::ResponseBody;
use skiff_types::ErrorCode;
use tokio::sync::{Notify, oneshot};
use uuid::Uuid;

use crate::broker::Broker;
use crate::handlers::Reply;
use crate::replica::append::AckWait;

pub use offsets_log::OffsetsLogError;
pub use settings::{GroupSettings, OFFSETS_TOPIC};
pub use skiff_group::MigrationPolicy;

/// What a shard owes one request: its response, or an error code the handler shapes itself.
pub type ShardResult = Result<Response, ErrorCode>;

/// The outcome of a coordinator call.
#[derive(Debug)]
pub enum Answer {
    /// Answered during the call.
    Ready(Response),
    /// Parked (JoinGroup/SyncGroup waiting for the rebalance) or waiting for an fsync.
    Parked(oneshot::Receiver<ShardResult>),
}

/// Who is calling, as the shard needs to know it.
#[derive(Clone, Copy, Debug)]
pub struct Caller<'a> {
    pub api_version: i16,
    pub client_id: &'a str,
    pub peer: SocketAddr,
}

impl<'a> Caller<'a> {
    /// The caller of a request as the connection saw it.
    pub fn of(ctx: &'a crate::handlers::RequestContext<'_>) -> Self {
        Caller {
            api_version: ctx.api_version,
            client_id: ctx.client_id.unwrap_or(""),
            peer: ctx.peer,
        }
    }
}

/// No pending timer.
const NO_DEADLINE: i64 = i64::MAX;
/// How long a failed load waits before it is tried again.
const LOAD_RETRY_MS: u64 = 1000;

enum Phase {
    /// In a cluster, this node does not lead the slot's partition: NOT_COORDINATOR.
    NotOwned,
    Loading,
    Ready(Box<GroupCoordinatorShard>),
}

struct SlotState {
    phase: Phase,
    /// Requests this slot still owes an answer, by token.
    pending: HashMap<RequestToken, oneshot::Sender<ShardResult>>,
    /// The metadata image the shard's topic view was last built from.
    image: Option<Arc<MetadataImage>>,
    /// Bumped on every (re)load, so a stale load does not install its shard.
    load_generation: u64,
}

/// One `__consumer_offsets` partition's shard.
struct Slot {
    partition: i32,
    state: Mutex<SlotState>,
    /// The shard's next timer deadline (wall ms), [`NO_DEADLINE`] if none.
    deadline: AtomicI64,
}

/// The broker's group coordinator (one per broker, inside [`Broker`]).
pub struct GroupCoordinator {
    settings: GroupSettings,
    /// Partition count of `__consumer_offsets`, fixed for the broker's lifetime.
    partitions: i32,
    slots: Vec<Slot>,
    next_token: AtomicU64,
    /// Woken whenever a slot's deadline changes.
    wake: Notify,
    seeds: RandomState,
}

impl std::fmt::Debug for GroupCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCoordinator")
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

impl GroupCoordinator {
    /// A coordinator for the topic as `image` has it: if `__consumer_offsets` exists, its
    /// partition count wins and every slot starts loading ([`GroupCoordinator::start`] loads
    /// them); otherwise every slot starts with an empty shard. In a cluster (`clustered`)
    /// every slot starts not owned: [`GroupCoordinator::reconcile`] loads the slots whose
    /// partition this node leads, as Kafka's coordinator loads on election.
    pub fn new(settings: GroupSettings, image: &MetadataImage, clustered: bool) -> Self {
        let existing = image.topic(OFFSETS_TOPIC).map(|t| t.partitions);
        let partitions = existing.unwrap_or(settings.offsets_topic_partitions).max(1);
        if let Some(n) = existing
            && n != settings.offsets_topic_partitions
        {
            tracing::warn!(
                existing = n,
                configured = settings.offsets_topic_partitions,
                "{OFFSETS_TOPIC} exists with another partition count than offsets.topic.num.partitions; keeping {n}"
            );
        }
        let mut c = GroupCoordinator {
            settings,
            partitions,
            slots: Vec::new(),
            next_token: AtomicU64::new(1),
            wake: Notify::new(),
            seeds: RandomState::new(),
        };
        c.slots = (0..partitions)
            .map(|p| Slot {
                partition: p,
                state: Mutex::new(SlotState {
                    phase: if clustered {
                        Phase::NotOwned
                    } else if existing.is_some() {
                        Phase::Loading
                    } else {
                        Phase::Ready(Box::new(c.new_shard(p, 0)))
                    },
                    pending: HashMap::new(),
                    image: None,
                    load_generation: 0,
                }),
                deadline: AtomicI64::new(NO_DEADLINE),
            })
            .collect();
        c
    }

    /// A fresh shard; its member-id seed mixes `now_ms` (the load time) into the random state.
    fn new_shard(&self, partition: i32, now_ms: i64) -> GroupCoordinatorShard {
        let seed = self.seeds.hash_one((partition, now_ms, std::process::id()));
        GroupCoordinatorShard::new(self.settings.config.clone(), seed)
    }

    pub fn settings(&self) -> &GroupSettings {
        &self.settings
    }

    /// The partition count of `__consumer_offsets` used for placement.
    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    /// The `__consumer_offsets` partition owning `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        skiff_group::partition_for(group_id, self.partitions)
    }

    fn slot(&self, partition: i32) -> Option<&Slot> {
        usize::try_from(partition)
            .ok()
            .and_then(|i| self.slots.get(i))
    }

    fn slot_for(&self, group_id: &str) -> Option<&Slot> {
        self.slot(self.partition_for(group_id))
    }

    /// Creates `__consumer_offsets` if needed (FindCoordinator does this, as Kafka does).
    pub fn ensure_topic(&self, broker: &Broker) -> Result<(), OffsetsLogError> {
        offsets_log::ensure_topic(broker, &self.settings, self.partitions)
    }

    /// Starts loading every slot that is loading and the timer driver (call once, inside
    /// the tokio runtime, after the broker is open).
    pub fn start(broker: &Arc<Broker>) {
        let c = &broker.groups;
        for slot in &c.slots {
            let generation = {
                let st = slot.state.lock();
                if !matches!(st.phase, Phase::Loading) {
                    continue;
                }
                st.load_generation
            };
            spawn_load(broker, slot.partition, generation, 0);
        }
        tokio::spawn(driver::run(Arc::clone(broker)));
    }

    /// Runs a shard method for `group_id`'s shard and applies its effects. `Err` is the code
    /// the whole request answers with (COORDINATOR_LOAD_IN_PROGRESS while loading,
    /// NOT_COORDINATOR during shutdown or after a failed append).
    pub fn call(
        &self,
        broker: &Arc<Broker>,
        group_id: &str,
        caller: Caller<'_>,
        f: impl FnOnce(&mut GroupCoordinatorShard, &RequestContext, i64) -> Effects,
    ) -> Result<Answer, ErrorCode> {
        self.call_inner(broker, group_id, caller, None, f)
    }

    /// [`GroupCoordinator::call`] for a TxnOffsetCommit of `(producer_id, producer_epoch)`:
    /// under the slot's lock, a producer the partition's producer state knows at a higher
    /// epoch is fenced (INVALID_PRODUCER_EPOCH, as the log's append would answer, before the
    /// shard changes anything); due timers fire first (their records are a plain batch), so
    /// `f`'s records are the transaction's alone.
    pub fn call_transactional(
        &self,
        broker: &Arc<Broker>,
        group_id: &str,
        caller: Caller<'_>,
        producer: (i64, i16),
        f: impl FnOnce(&mut GroupCoordinatorShard, &RequestContext, i64) -> Effects,
    ) -> Result<Answer, ErrorCode> {
        self.call_inner(broker, group_id, caller, Some(producer), f)
    }

    fn call_inner(
        &self,
        broker: &Arc<Broker>,
        group_id: &str,
        caller: Caller<'_>,
        producer: Option<(i64, i16)>,
        f: impl FnOnce(&mut GroupCoordinatorShard, &RequestContext, i64) -> Effects,
    ) -> Result<Answer, ErrorCode> {
        let slot = self.slot_for(group_id).ok_or(ErrorCode::NotCoordinator)?;
        let token = RequestToken(self.next_token.fetch_add(1, Ordering::Relaxed));
        let (tx, mut rx) = oneshot::channel();
        {
            let mut guard = slot.state.lock();
            let st = &mut *guard;
            if broker.is_shutting_down() {
                return Err(ErrorCode::NotCoordinator);
            }
            if let Some((producer_id, producer_epoch)) = producer {
                ready_shard(st)?;
                if offsets_log::producer_epoch(broker, slot.partition, producer_id)
                    .is_some_and(|e| e > producer_epoch)
                {
                    return Err(ErrorCode::InvalidProducerEpoch);
                }
                let now = broker.now_ms();
                let effects = ready_shard(st)?.tick(now);
                self.apply(broker, slot, st, effects);
            }
            let shard = match &mut st.phase {
                Phase::Ready(shard) => shard,
                Phase::Loading => return Err(ErrorCode::CoordinatorLoadInProgress),
                Phase::NotOwned => return Err(ErrorCode::NotCoordinator),
            };
            refresh_metadata_view(shard, &mut st.image, broker);
            let ctx = RequestContext {
                token,
                api_version: caller.api_version,
                client_id: caller.client_id.to_string(),
                client_host: format!("/{}", caller.peer.ip()),
            };
            st.pending.insert(token, tx);
            let effects = f(shard, &ctx, broker.now_ms());
            self.apply(broker, slot, st, effects);
        }
        match rx.try_recv() {
            Ok(Ok(r)) => Ok(Answer::Ready(r)),
            Ok(Err(code)) => Err(code),
            Err(oneshot::error::TryRecvError::Empty) => Ok(Answer::Parked(rx)),
            Err(oneshot::error::TryRecvError::Closed) => Err(ErrorCode::NotCoordinator),
        }
    }

    /// Runs a read-only question against `group_id`'s shard.
    pub fn read<T>(
        &self,
        broker: &Arc<Broker>,
        group_id: &str,
        f: impl FnOnce(&GroupCoordinatorShard) -> T,
    ) -> Result<T, ErrorCode> {
        let slot = self.slot_for(group_id).ok_or(ErrorCode::NotCoordinator)?;
        self.read_slot(broker, slot, f)
    }

    fn read_slot<T>(
        &self,
        broker: &Arc<Broker>,
        slot: &Slot,
        f: impl FnOnce(&GroupCoordinatorShard) -> T,
    ) -> Result<T, ErrorCode> {
        let mut guard = slot.state.lock();
        let st = &mut *guard;
        let shard = match &mut st.phase {
            Phase::Ready(shard) => shard,
            Phase::Loading => return Err(ErrorCode::CoordinatorLoadInProgress),
            Phase::NotOwned => return Err(ErrorCode::NotCoordinator),
        };
        refresh_metadata_view(shard, &mut st.image, broker);
        Ok(f(shard))
    }

    /// Runs `f` on every loaded shard; the flag says whether some shard is still loading
    /// (slots this node does not own are skipped).
    pub fn read_all<T>(
        &self,
        broker: &Arc<Broker>,
        mut f: impl FnMut(&GroupCoordinatorShard) -> T,
    ) -> (Vec<T>, bool) {
        let mut out = Vec::new();
        let mut loading = false;
        for slot in &self.slots {
            match self.read_slot(broker, slot, &mut f) {
                Ok(t) => out.push(t),
                Err(ErrorCode::NotCoordinator) => {}
                Err(_) => loading = true,
            }
        }
        (out, loading)
    }

    /// Writes `producer_id`'s end-transaction marker to `__consumer_offsets-<partition>` and
    /// completes the transaction in the partition's shard (the WriteTxnMarkers path for this
    /// topic). Under the slot's lock the marker is appended (acks=-1) and only then does the
    /// shard materialise (commit) or drop (abort) the producer's pending offsets, so the log
    /// order is the shard's order. `Ok(Some(_))`: the marker's acks=-1 answer to await.
    ///
    /// While the slot is not ready nothing is written and the answer is NOT_LEADER_OR_FOLLOWER
    /// (Kafka's coordinator answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS /
    /// COORDINATOR_NOT_AVAILABLE and `KafkaApis` puts NOT_LEADER_OR_FOLLOWER on the wire so
    /// the transaction coordinator retries): a marker appended during a load could land after
    /// the replay's end and be missed by the shard. The log's own refusals (e.g.
    /// INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED) are returned as they are, with
    /// nothing written and the shard unchanged.
    pub fn write_txn_marker(
        &self,
        broker: &Arc<Broker>,
        partition: i32,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<Option<AckWait>, ErrorCode> {
        let slot = self
            .slot(partition)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        let mut guard = slot.state.lock();
        let st = &mut *guard;
        if broker.is_shutting_down() || ready_shard(st).is_err() {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        let ack = offsets_log::append_marker(
            broker,
            partition,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
        )?;
        let effects = ready_shard(st)?.complete_transaction(producer_id, commit, broker.now_ms());
        self.apply(broker, slot, st, effects);
        Ok(ack)
    }

    /// Appends the effects' records, then sends their responses (see the module doc).
    fn apply(&self, broker: &Arc<Broker>, slot: &Slot, st: &mut SlotState, effects: Effects) {
        let Effects {
            responses,
            records,
            next_deadline,
            transactional,
        } = effects;
        let mut pending_sync = None;
        if !records.is_empty() {
            match offsets_log::append(
                broker,
                &self.settings,
                self.partitions,
                slot.partition,
                &records,
                transactional,
            ) {
                Ok(p) => pending_sync = p,
                Err(e) => {
                    tracing::error!(partition = slot.partition, error = %e, "coordinator append failed; reloading the shard");
                    for (token, r) in responses {
                        deliver(st, token, Ok(r.with_error(ErrorCode::NotCoordinator)));
                    }
                    fail_pending(st, ErrorCode::NotCoordinator);
                    st.phase = Phase::Loading;
                    st.image = None;
                    st.load_generation += 1;
                    slot.deadline.store(NO_DEADLINE, Ordering::Release);
                    spawn_load(broker, slot.partition, st.load_generation, 0);
                    return;
                }
            }
        }
        match pending_sync {
            None => {
                for (token, r) in responses {
                    deliver(st, token, Ok(r));
                }
            }
            Some(p) => {
                let owed: Vec<_> = responses
                    .into_iter()
                    .filter_map(|(t, r)| st.pending.remove(&t).map(|tx| (tx, r)))
                    .collect();
                tokio::spawn(async move {
                    // The replica manager's group commit answers once the batch is durable.
                    let ok = matches!(p.await, Ok(ErrorCode::None));
                    if !ok {
                        tracing::error!("fsync of coordinator records failed");
                    }
                    for (tx, r) in owed {
                        let r = if ok {
                            r
                        } else {
                            r.with_error(ErrorCode::NotCoordinator)
                        };
                        let _ = tx.send(Ok(r));
                    }
                });
            }
        }
        st.pending.retain(|_, tx| !tx.is_closed());
        let deadline = next_deadline.unwrap_or(NO_DEADLINE);
        if slot.deadline.swap(deadline, Ordering::AcqRel) != deadline {
            self.wake.notify_one();
        }
    }

    /// The earliest timer deadline of any shard.
    fn earliest_deadline(&self) -> Option<i64> {
        self.slots
            .iter()
            .map(|s| s.deadline.load(Ordering::Acquire))
            .filter(|d| *d != NO_DEADLINE)
            .min()
    }

    /// Fires the timers of every shard whose deadline is due at `now`.
    fn tick_due(&self, broker: &Arc<Broker>, now: i64) {
        for slot in &self.slots {
            if slot.deadline.load(Ordering::Acquire) > now {
                continue;
            }
            let mut guard = slot.state.lock();
            let st = &mut *guard;
            let Phase::Ready(shard) = &mut st.phase else {
                continue;
            };
            let effects = shard.tick(now);
            self.apply(broker, slot, st, effects);
        }
    }

    /// In a cluster, after every metadata change: loads the slots whose `__consumer_offsets`
    /// partition this node now leads and unloads (NOT_COORDINATOR to what they owed) the
    /// ones it no longer leads. A stale load is dropped by its generation.
    pub fn reconcile(&self, broker: &Arc<Broker>, image: &MetadataImage) {
        let me = broker.node_id();
        for slot in &self.slots {
            let owned = image
                .partition(OFFSETS_TOPIC, slot.partition)
                .is_some_and(|p| p.leader == me);
            let mut guard = slot.state.lock();
            let st = &mut *guard;
            match (&st.phase, owned) {
                (Phase::NotOwned, true) => {
                    st.phase = Phase::Loading;
                    st.load_generation += 1;
                    tracing::info!(
                        partition = slot.partition,
                        "leading {OFFSETS_TOPIC}: loading its groups"
                    );
                    spawn_load(broker, slot.partition, st.load_generation, 0);
                }
                (Phase::Loading | Phase::Ready(_), false) => {
                    fail_pending(st, ErrorCode::NotCoordinator);
                    st.phase = Phase::NotOwned;
                    st.image = None;
                    st.load_generation += 1;
                    slot.deadline.store(NO_DEADLINE, Ordering::Release);
                    tracing::info!(
                        partition = slot.partition,
                        "no longer leading {OFFSETS_TOPIC}: groups unloaded"
                    );
                }
                _ => {}
            }
        }
    }

    /// Answers every parked request with `code` (shutdown).
    fn fail_all_pending(&self, code: ErrorCode) {
        for slot in &self.slots {
            fail_pending(&mut slot.state.lock(), code);
        }
    }

    /// Replays one partition into a fresh shard and installs it (blocking).
    fn load(
        &self,
        broker: &Arc<Broker>,
        partition: i32,
        generation: u64,
    ) -> Result<(), OffsetsLogError> {
        let Some(slot) = self.slot(partition) else {
            return Ok(());
        };
        {
            let st = slot.state.lock();
            if !matches!(st.phase, Phase::Loading) || st.load_generation != generation {
                return Ok(()); // unloaded (or reloaded) meanwhile
            }
        }
        let mut shard = self.new_shard(partition, broker.now_ms());
        let started = broker.clock.now();
        let applied = offsets_log::replay(broker, partition, &mut shard)?;
        let mut guard = slot.state.lock();
        let st = &mut *guard;
        if !matches!(st.phase, Phase::Loading) || st.load_generation != generation {
            return Ok(());
        }
        let effects = shard.on_loaded(broker.now_ms());
        st.phase = Phase::Ready(Box::new(shard));
        if applied > 0 {
            tracing::info!(
                partition,
                records = applied,
                elapsed_ms = broker
                    .clock
                    .now()
                    .saturating_duration_since(started)
                    .as_millis() as u64,
                "group coordinator partition loaded"
            );
        }
        self.apply(broker, slot, st, effects);
        Ok(())
    }
}

/// The slot's shard, or the code a request answers while there is none.
fn ready_shard(st: &mut SlotState) -> Result<&mut GroupCoordinatorShard, ErrorCode> {
    match &mut st.phase {
        Phase::Ready(shard) => Ok(shard),
        Phase::Loading => Err(ErrorCode::CoordinatorLoadInProgress),
        Phase::NotOwned => Err(ErrorCode::NotCoordinator),
    }
}

/// Loads a partition on the blocking pool after `delay_ms`, retrying while it fails.
fn spawn_load(broker: &Arc<Broker>, partition: i32, generation: u64, delay_ms: u64) {
    let broker = Arc::clone(broker);
    tokio::spawn(async move {
        if delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
        }
        if broker.is_shutting_down() {
            return;
        }
        let b = Arc::clone(&broker);
        let result =
            tokio::task::spawn_blocking(move || b.groups.load(&b, partition, generation)).await;
        let failed = match result {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("load task failed: {e}"),
        };
        tracing::error!(partition, error = %failed, "cannot load group coordinator partition; retrying");
        spawn_load(&broker, partition, generation, LOAD_RETRY_MS);
    });
}

fn deliver(st: &mut SlotState, token: RequestToken, result: ShardResult) {
    if let Some(tx) = st.pending.remove(&token) {
        let _ = tx.send(result);
    }
}

fn fail_pending(st: &mut SlotState, code: ErrorCode) {
    for (_, tx) in st.pending.drain() {
        let _ = tx.send(Err(code));
    }
}

/// Gives the shard the cluster's topics and the groups' own configs if metadata changed since
/// it last saw them (KIP-848 assignments need topic ids and partition counts; internal topics
/// are left out; group configs set session timeouts and heartbeat intervals).
fn refresh_metadata_view(
    shard: &mut GroupCoordinatorShard,
    seen: &mut Option<Arc<MetadataImage>>,
    broker: &Broker,
) {
    let image = broker.image();
    if seen.as_ref().is_some_and(|s| Arc::ptr_eq(s, &image)) {
        return;
    }
    shard.set_topics(
        image
            .topics
            .values()
            .filter(|t| !t.name.starts_with("__"))
            .map(|t| TopicInfo {
                topic_id: Uuid::from_bytes(t.id),
                name: t.name.clone(),
                partitions: t.partitions,
            }),
    );
    shard.set_group_overrides(
        image
            .group_configs
            .iter()
            .map(|(group, set)| (group.clone(), group_overrides(set))),
    );
    *seen = Some(image);
}

/// The configs of one group the coordinator acts on (values were validated when set).
fn group_overrides(set: &std::collections::BTreeMap<String, String>) -> GroupOverrides {
    let int = |k: &str| set.get(k).and_then(|v| v.trim().parse::<i32>().ok());
    GroupOverrides {
        consumer_session_timeout_ms: int("consumer.session.timeout.ms"),
        consumer_heartbeat_interval_ms: int("consumer.heartbeat.interval.ms"),
    }
}

/// Turns a call's outcome into a handler reply: `on_error` shapes a whole-request error for
/// the request's version.
pub fn reply(
    answer: Result<Answer, ErrorCode>,
    on_error: impl FnOnce(ErrorCode) -> ResponseBody + Send + 'static,
) -> Reply {
    match answer {
        Err(code) => Reply::Now(on_error(code)),
        Ok(Answer::Ready(r)) => Reply::Now(to_body(r)),
        Ok(Answer::Parked(rx)) => Reply::Later(Box::pin(async move {
            match rx.await {
                Ok(Ok(r)) => to_body(r),
                Ok(Err(code)) => on_error(code),
                Err(_) => on_error(ErrorCode::NotCoordinator),
            }
        })),
    }
}

/// A shard response as the connection's response body.
pub fn to_body(r: Response) -> ResponseBody {
    match r {
        Response::JoinGroup(r) => ResponseBody::JoinGroup(r),
        Response::SyncGroup(r) => ResponseBody::SyncGroup(r),
        Response::Heartbeat(r) => ResponseBody::Heartbeat(r),
        Response::LeaveGroup(r) => ResponseBody::LeaveGroup(r),
        Response::OffsetCommit(r) => ResponseBody::OffsetCommit(r),
        Response::OffsetDelete(r) => ResponseBody::OffsetDelete(r),
        Response::DeleteGroups(r) => ResponseBody::DeleteGroups(r),
        Response::ConsumerGroupHeartbeat(r) => ResponseBody::ConsumerGroupHeartbeat(r),
        Response::TxnOffsetCommit(r) => ResponseBody::TxnOffsetCommit(r),
    }
}

#[cfg(test)]
mod tests;
