//! The transaction coordinator runtime (issue 18): drives the pure [`TxnShard`]s of
//! `skiff-txn` with real time, the `__transaction_state` log, the connections waiting for
//! answers and the transaction markers.
//!
//! Mental model (the group coordinator runtime's shape, `crate::coordinator`): one [`Slot`]
//! per `__transaction_state` partition, a mutex around its shard (or "loading" / "not
//! owned"), the senders of the requests it owes an answer. A transactional id lives on slot
//! `partition_for(id, partitions)`. A call takes the slot's lock, runs the shard method and
//! applies the [`Effects`]: the records are appended to the slot's partition as one batch
//! *first*; once they are replicated (acks=-1) the responses are sent and the marker jobs
//! start ([`markers`]). A marker job writes COMMIT/ABORT control batches to every partition
//! of the transaction (locally through the replica manager or the group coordinator for
//! `__consumer_offsets`, remotely with WriteTxnMarkers to the partition's leader), retrying
//! until each is written, then tells the shard (`markers_written`), whose CompleteCommit /
//! CompleteAbort record ends the transaction.
//!
//! The coordinator epoch is the leader epoch of the slot's partition (one node without a
//! quorum: 0). Ownership: one node owns every slot; in a cluster a slot is loaded while this
//! node leads its partition (`reconcile`) and answers NOT_COORDINATOR otherwise; a leader
//! epoch change reloads the slot. Loading replays the partition; `on_loaded` resumes the
//! markers of prepared transactions, so a coordinator crash mid-commit completes the
//! commit on the next leader. A failed append makes the shard's memory run ahead of its log:
//! the slot answers NOT_COORDINATOR to what it owed and reloads. A marker job whose slot was
//! reloaded (generation changed) stops: the reload resumes it.
//!
//! Thread-safety: slots are independent `parking_lot` mutexes, held for one shard call plus
//! one in-memory append (never across an `.await`). `Send + Sync`.

pub mod log;
pub mod markers;
pub mod settings;
pub mod verify;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use skiff_metadata::MetadataImage;
use skiff_txn::{Effects, RequestContext, RequestToken, Response, TxnShard};
use skiff_types::ErrorCode;
use tokio::sync::{Notify, oneshot};

use crate::broker::Broker;
use crate::handlers::Reply;
use skiff_protocol::ResponseBody;

pub use log::TxnLogError;
pub use settings::{TXN_TOPIC, TxnSettings};

/// What a shard owes one request: its response, or an error code the handler shapes itself.
pub type ShardResult = Result<Response, ErrorCode>;

/// The outcome of a coordinator call.
#[derive(Debug)]
pub enum Answer {
    Ready(Response),
    /// Waiting for the records to be replicated.
    Parked(oneshot::Receiver<ShardResult>),
}

const NO_DEADLINE: i64 = i64::MAX;
const LOAD_RETRY_MS: u64 = 1000;
const IDLE_SLEEP: Duration = Duration::from_secs(3600);

enum Phase {
    NotOwned,
    Loading,
    Ready(Box<TxnShard>),
}

struct SlotState {
    phase: Phase,
    pending: HashMap<RequestToken, oneshot::Sender<ShardResult>>,
    /// Bumped on every (re)load and unload: stale loads and marker jobs stop on it.
    generation: u64,
    /// The coordinator epoch the shard was loaded with.
    epoch: i32,
}

struct Slot {
    partition: i32,
    state: Mutex<SlotState>,
    deadline: AtomicI64,
}

/// The broker's transaction coordinator (one per broker, inside [`Broker`]).
pub struct TxnCoordinator {
    settings: TxnSettings,
    partitions: i32,
    slots: Vec<Slot>,
    next_token: AtomicU64,
    wake: Notify,
}

impl std::fmt::Debug for TxnCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnCoordinator")
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

impl TxnCoordinator {
    /// As the group coordinator: an existing topic's partition count wins; one node loads
    /// every slot (or starts empty ones), a cluster starts with none owned.
    pub fn new(settings: TxnSettings, image: &MetadataImage, clustered: bool) -> Self {
        let existing = image.topic(TXN_TOPIC).map(|t| t.partitions);
        let partitions = existing.unwrap_or(settings.topic_partitions).max(1);
        let slots = (0..partitions)
            .map(|p| {
                let epoch = image.partition(TXN_TOPIC, p).map_or(0, |x| x.leader_epoch);
                let phase = if clustered {
                    Phase::NotOwned
                } else if existing.is_some() {
                    Phase::Loading
                } else {
                    Phase::Ready(Box::new(TxnShard::new(settings.shard_config(), epoch)))
                };
                Slot {
                    partition: p,
                    state: Mutex::new(SlotState {
                        phase,
                        pending: HashMap::new(),
                        generation: 0,
                        epoch,
                    }),
                    deadline: AtomicI64::new(NO_DEADLINE),
                }
            })
            .collect();
        TxnCoordinator {
            settings,
            partitions,
            slots,
            next_token: AtomicU64::new(1),
            wake: Notify::new(),
        }
    }

    pub fn settings(&self) -> &TxnSettings {
        &self.settings
    }

    /// The `__transaction_state` partition owning `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        skiff_txn::partition_for(transactional_id, self.partitions)
    }

    fn slot(&self, partition: i32) -> Option<&Slot> {
        usize::try_from(partition)
            .ok()
            .and_then(|i| self.slots.get(i))
    }

    /// Creates `__transaction_state` if needed (FindCoordinator does this, as Kafka does).
    pub fn ensure_topic(&self, broker: &Broker) -> Result<(), TxnLogError> {
        log::ensure_topic(broker, &self.settings, self.partitions)
    }

    /// Starts loading the slots that are loading and the timer driver (once, in the runtime).
    pub fn start(broker: &Arc<Broker>) {
        let c = &broker.txns;
        for slot in &c.slots {
            let generation = {
                let st = slot.state.lock();
                if !matches!(st.phase, Phase::Loading) {
                    continue;
                }
                st.generation
            };
            spawn_load(broker, slot.partition, generation, 0);
        }
        tokio::spawn(driver(Arc::clone(broker)));
    }

    /// Runs a shard method for `transactional_id`'s shard and applies its effects. `Err` is
    /// the code the whole request answers with.
    pub fn call(
        &self,
        broker: &Arc<Broker>,
        transactional_id: &str,
        api_version: i16,
        f: impl FnOnce(&mut TxnShard, &RequestContext, i64) -> Effects,
    ) -> Result<Answer, ErrorCode> {
        let slot = self
            .slot(self.partition_for(transactional_id))
            .ok_or(ErrorCode::NotCoordinator)?;
        let token = RequestToken(self.next_token.fetch_add(1, Ordering::Relaxed));
        let (tx, mut rx) = oneshot::channel();
        {
            let mut guard = slot.state.lock();
            let st = &mut *guard;
            if broker.is_shutting_down() {
                return Err(ErrorCode::NotCoordinator);
            }
            let shard = match &mut st.phase {
                Phase::Ready(shard) => shard,
                Phase::Loading => return Err(ErrorCode::CoordinatorLoadInProgress),
                Phase::NotOwned => return Err(ErrorCode::NotCoordinator),
            };
            let ctx = RequestContext { token, api_version };
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

    /// A read-only question to `transactional_id`'s shard.
    pub fn read<T>(
        &self,
        transactional_id: &str,
        f: impl FnOnce(&TxnShard) -> T,
    ) -> Result<T, ErrorCode> {
        let slot = self
            .slot(self.partition_for(transactional_id))
            .ok_or(ErrorCode::NotCoordinator)?;
        read_slot(slot, f)
    }

    /// `f` on every loaded shard; the flag says whether some owned slot is still loading.
    pub fn read_all<T>(&self, mut f: impl FnMut(&TxnShard) -> T) -> (Vec<T>, bool) {
        let mut out = Vec::new();
        let mut loading = false;
        for slot in &self.slots {
            match read_slot(slot, &mut f) {
                Ok(t) => out.push(t),
                Err(ErrorCode::NotCoordinator) => {}
                Err(_) => loading = true,
            }
        }
        (out, loading)
    }

    /// Appends the effects' records, then (once replicated) sends the responses and starts
    /// the marker jobs.
    fn apply(&self, broker: &Arc<Broker>, slot: &Slot, st: &mut SlotState, effects: Effects) {
        let Effects {
            responses,
            records,
            markers: jobs,
            next_deadline,
        } = effects;
        let mut pending_ack = None;
        if !records.is_empty() {
            match log::append(
                broker,
                &self.settings,
                self.partitions,
                slot.partition,
                &records,
            ) {
                Ok(p) => pending_ack = p,
                Err(e) => {
                    tracing::error!(partition = slot.partition, error = %e, "transaction log append failed; reloading the shard");
                    for (token, r) in responses {
                        deliver(st, token, Ok(r.with_error(ErrorCode::NotCoordinator)));
                    }
                    self.unload(st, slot, true);
                    spawn_load(broker, slot.partition, st.generation, LOAD_RETRY_MS);
                    return;
                }
            }
        }
        let generation = st.generation;
        let owed: Vec<_> = responses
            .into_iter()
            .filter_map(|(t, r)| st.pending.remove(&t).map(|tx| (tx, r)))
            .collect();
        match pending_ack {
            None => {
                for (tx, r) in owed {
                    let _ = tx.send(Ok(r));
                }
                for job in jobs {
                    markers::spawn(broker, slot.partition, generation, job);
                }
            }
            Some(ack) => {
                let broker = Arc::clone(broker);
                let partition = slot.partition;
                tokio::spawn(async move {
                    let ok = matches!(ack.await, Ok(ErrorCode::None));
                    for (tx, r) in owed {
                        let r = if ok {
                            r
                        } else {
                            r.with_error(ErrorCode::NotCoordinator)
                        };
                        let _ = tx.send(Ok(r));
                    }
                    if ok {
                        for job in jobs {
                            markers::spawn(&broker, partition, generation, job);
                        }
                    } else {
                        tracing::error!(
                            partition,
                            "transaction log records not acknowledged; reloading"
                        );
                        broker.txns.reload(&broker, partition);
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

    /// Drops the shard (NOT_COORDINATOR to what it owed); `Loading` when `reload`, else
    /// `NotOwned`.
    fn unload(&self, st: &mut SlotState, slot: &Slot, reload: bool) {
        fail_pending(st, ErrorCode::NotCoordinator);
        st.phase = if reload {
            Phase::Loading
        } else {
            Phase::NotOwned
        };
        st.generation += 1;
        slot.deadline.store(NO_DEADLINE, Ordering::Release);
    }

    /// Reloads `partition`'s shard from its log (after a failed or unacknowledged append).
    fn reload(&self, broker: &Arc<Broker>, partition: i32) {
        let Some(slot) = self.slot(partition) else {
            return;
        };
        let mut st = slot.state.lock();
        if matches!(st.phase, Phase::NotOwned) {
            return;
        }
        self.unload(&mut st, slot, true);
        spawn_load(broker, partition, st.generation, LOAD_RETRY_MS);
    }

    /// A marker job of `generation` finished writing its markers: the shard completes the
    /// transaction. A stale job (the slot was reloaded or unloaded since) does nothing.
    pub(crate) fn markers_written(
        &self,
        broker: &Arc<Broker>,
        partition: i32,
        generation: u64,
        job: &skiff_txn::MarkerJob,
    ) -> bool {
        let Some(slot) = self.slot(partition) else {
            return false;
        };
        let mut guard = slot.state.lock();
        let st = &mut *guard;
        if st.generation != generation {
            return false;
        }
        let Phase::Ready(shard) = &mut st.phase else {
            return false;
        };
        let effects = shard.markers_written(
            &job.transactional_id,
            job.producer_id,
            job.producer_epoch,
            broker.now_ms(),
        );
        self.apply(broker, slot, st, effects);
        true
    }

    /// Whether a marker job of `generation` on `partition` is still current.
    pub(crate) fn is_current(&self, partition: i32, generation: u64) -> bool {
        self.slot(partition)
            .is_some_and(|s| s.state.lock().generation == generation)
    }

    fn earliest_deadline(&self) -> Option<i64> {
        self.slots
            .iter()
            .map(|s| s.deadline.load(Ordering::Acquire))
            .filter(|d| *d != NO_DEADLINE)
            .min()
    }

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

    /// In a cluster, after every metadata change: loads the slots whose partition this node
    /// now leads (or whose leader epoch changed) and unloads the others.
    pub fn reconcile(&self, broker: &Arc<Broker>, image: &MetadataImage) {
        let me = broker.node_id();
        for slot in &self.slots {
            let led = image
                .partition(TXN_TOPIC, slot.partition)
                .filter(|p| p.leader == me)
                .map(|p| p.leader_epoch);
            let mut guard = slot.state.lock();
            let st = &mut *guard;
            match (&st.phase, led) {
                (Phase::NotOwned, Some(epoch)) => {
                    st.epoch = epoch;
                    st.generation += 1;
                    st.phase = Phase::Loading;
                    tracing::info!(
                        partition = slot.partition,
                        epoch,
                        "leading {TXN_TOPIC}: loading its transactions"
                    );
                    spawn_load(broker, slot.partition, st.generation, 0);
                }
                (Phase::Loading | Phase::Ready(_), Some(epoch)) if epoch != st.epoch => {
                    self.unload(st, slot, true);
                    st.epoch = epoch;
                    spawn_load(broker, slot.partition, st.generation, 0);
                }
                (Phase::Loading | Phase::Ready(_), None) => {
                    self.unload(st, slot, false);
                    tracing::info!(
                        partition = slot.partition,
                        "no longer leading {TXN_TOPIC}: transactions unloaded"
                    );
                }
                _ => {}
            }
        }
    }

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
    ) -> Result<(), TxnLogError> {
        let Some(slot) = self.slot(partition) else {
            return Ok(());
        };
        let epoch = {
            let st = slot.state.lock();
            if !matches!(st.phase, Phase::Loading) || st.generation != generation {
                return Ok(());
            }
            st.epoch
        };
        let mut shard = TxnShard::new(self.settings.shard_config(), epoch);
        let applied = log::replay(broker, partition, &mut shard)?;
        let mut guard = slot.state.lock();
        let st = &mut *guard;
        if !matches!(st.phase, Phase::Loading) || st.generation != generation {
            return Ok(());
        }
        let effects = shard.on_loaded(broker.now_ms());
        st.phase = Phase::Ready(Box::new(shard));
        if applied > 0 {
            tracing::info!(
                partition,
                records = applied,
                epoch,
                "transaction coordinator partition loaded"
            );
        }
        self.apply(broker, slot, st, effects);
        Ok(())
    }
}

fn read_slot<T>(slot: &Slot, f: impl FnOnce(&TxnShard) -> T) -> Result<T, ErrorCode> {
    let st = slot.state.lock();
    match &st.phase {
        Phase::Ready(shard) => Ok(f(shard)),
        Phase::Loading => Err(ErrorCode::CoordinatorLoadInProgress),
        Phase::NotOwned => Err(ErrorCode::NotCoordinator),
    }
}

fn spawn_load(broker: &Arc<Broker>, partition: i32, generation: u64, delay_ms: u64) {
    let broker = Arc::clone(broker);
    tokio::spawn(async move {
        if delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        }
        if broker.is_shutting_down() {
            return;
        }
        let b = Arc::clone(&broker);
        let result =
            tokio::task::spawn_blocking(move || b.txns.load(&b, partition, generation)).await;
        let failed = match result {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("load task failed: {e}"),
        };
        tracing::error!(partition, error = %failed, "cannot load transaction coordinator partition; retrying");
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

/// The timer driver: sleeps until the earliest shard deadline, fires due timers; on
/// shutdown answers every parked request NOT_COORDINATOR.
async fn driver(broker: Arc<Broker>) {
    let mut shutdown = broker.shutdown_signal();
    let c = &broker.txns;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let sleep = match c.earliest_deadline() {
            Some(d) => {
                Duration::from_millis(u64::try_from(d.saturating_sub(broker.now_ms())).unwrap_or(0))
            }
            None => IDLE_SLEEP,
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = c.wake.notified() => continue,
            _ = shutdown.changed() => break,
        }
        c.tick_due(&broker, broker.now_ms());
    }
    c.fail_all_pending(ErrorCode::NotCoordinator);
}

/// Turns a call's outcome into a handler reply: `on_error` shapes a whole-request error.
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

/// The outcome of a call as a future (for handlers already inside a `Reply::Later`).
pub async fn settle(answer: Result<Answer, ErrorCode>) -> ShardResult {
    match answer? {
        Answer::Ready(r) => Ok(r),
        Answer::Parked(rx) => rx.await.unwrap_or(Err(ErrorCode::NotCoordinator)),
    }
}

/// A shard response as the connection's response body.
pub fn to_body(r: Response) -> ResponseBody {
    match r {
        Response::InitProducerId(r) => ResponseBody::InitProducerId(r),
        Response::AddPartitionsToTxn(r) => ResponseBody::AddPartitionsToTxn(r),
        Response::AddOffsetsToTxn(r) => ResponseBody::AddOffsetsToTxn(r),
        Response::EndTxn(r) => ResponseBody::EndTxn(r),
    }
}
