//! The transactional mode of `skiff-bench produce` (issue 18's performance point): a
//! transactional producer of the v1 protocol (KIP-98), as the Java client is without
//! transactions v2.
//!
//! Mental model: before the first request, FindCoordinator with key type 1 (one node: the
//! broker itself; retried while the coordinator is not available, e.g. while Kafka creates
//! `__transaction_state`), then InitProducerId with the transactional id (retried while the
//! coordinator loads). The stream of [`Planner`] is cut into transactions of
//! `--records-per-txn` records ([`plan_txn`]); each transaction is: AddPartitionsToTxn v3 with
//! every partition it writes (answered before any of its batches is sent), its Produce
//! requests pipelined as in the idempotent mode (transactional batches: attributes bit 4, the
//! producer id and epoch, sequences continuing across transactions), then, once every one of
//! its requests is answered, EndTxn v3 commit. The coordinator answers EndTxn before its
//! markers are written; until they are, AddPartitionsToTxn of the next transaction is refused
//! with CONCURRENT_TRANSACTIONS (51), which is retried after `retry_backoff` (the Java client
//! waits 20 ms there; the bench default is 1 ms so the figure is the broker's, and the retries
//! are counted).
//!
//! [`Feed`] is what the run loop of [`crate::produce_gen`] asks for its next request: without
//! a transactional id it is the planner's next request; with one it is the open transaction's
//! next request, [`Next::Drain`] while the transaction's last requests are unanswered, and at
//! an idle connection the commit of that transaction and the start of the next. With
//! `--drain-every N --extra-round-trips K` (the round-trip limit, [`Drained`]) it is the
//! idempotent stream cut into segments of N records; at each segment's end, once drained, K
//! ApiVersions v3 round trips on the same connection (answered without any transaction work;
//! each must be error 0), timed into [`DrainStats`].
//!
//! Invariants: a transaction's batches are sent only after its AddPartitionsToTxn succeeded;
//! EndTxn is sent only with no Produce request in flight; every transaction is committed
//! (an error aborts the run, exit 1: a benchmark tool, not a client).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use skiff_protocol::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, ApiVersionsRequest, EndTxnRequest,
    FindCoordinatorRequest, InitProducerIdRequest, RequestBody, ResponseBody,
};

use crate::produce_gen::Conn;
use crate::produce_plan::{BatchPlan, Checker, DrainStep, Drained, Planner, TxnPlan, plan_txn};

const FIND_COORDINATOR_VERSION: i16 = 3;
const INIT_PRODUCER_ID_VERSION: i16 = 4;
const ADD_PARTITIONS_VERSION: i16 = 3;
const END_TXN_VERSION: i16 = 3;
const API_VERSIONS_VERSION: i16 = 3;
const KEY_TYPE_TRANSACTION: i8 = 1;
const TXN_TIMEOUT_MS: i32 = 60_000;
/// How long the coordinator may stay unavailable (Kafka creates 50 partitions first).
const SETUP_DEADLINE: Duration = Duration::from_secs(60);

/// Kafka's retriable answers of the transaction coordinator.
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const CONCURRENT_TRANSACTIONS: i16 = 51;

fn retriable(code: i16) -> bool {
    matches!(
        code,
        COORDINATOR_LOAD_IN_PROGRESS
            | COORDINATOR_NOT_AVAILABLE
            | NOT_COORDINATOR
            | CONCURRENT_TRANSACTIONS
    )
}

/// What the run loop does next.
#[derive(Debug)]
pub(crate) enum Next {
    Send(Vec<BatchPlan>),
    /// Nothing to send until the in-flight requests are answered (a transaction ends).
    Drain,
    Done,
}

/// Figures of the transactional mode over the timed run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxnStats {
    pub committed: u64,
    /// AddPartitionsToTxn / EndTxn answers retried (CONCURRENT_TRANSACTIONS, mostly).
    pub retries: u64,
    /// Wall time spent in AddPartitionsToTxn (retries included) and in EndTxn.
    pub add_ms: f64,
    pub end_ms: f64,
}

/// Figures of the round-trip-limit mode over the timed run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DrainStats {
    pub every: u64,
    pub extra_round_trips: u32,
    /// Segments drained (each followed by the round trips).
    pub drains: u64,
    /// Wall time of the no-op round trips.
    pub round_trip_ms: f64,
}

impl DrainStats {
    /// The fields it adds to the `produce:` line.
    pub fn line(&self) -> String {
        format!(
            " drain_every={} extra_round_trips={} drains={} extra_rtt_ms_per_drain={:.3}",
            self.every,
            self.extra_round_trips,
            self.drains,
            self.round_trip_ms / self.drains.max(1) as f64
        )
    }
}

/// One no-op round trip: ApiVersions v3, which must be answered with error 0.
fn api_versions(conn: &mut Conn) -> Result<()> {
    let req = ApiVersionsRequest {
        client_software_name: "skiff-bench".into(),
        client_software_version: "1".into(),
    };
    match conn.call(API_VERSIONS_VERSION, req.into())? {
        ResponseBody::ApiVersions(r) if r.error_code == 0 => Ok(()),
        ResponseBody::ApiVersions(r) => bail!("ApiVersions: error {}", r.error_code),
        _ => bail!("ApiVersions: unexpected response type"),
    }
}

/// A transactional producer's state on one connection.
pub(crate) struct Txn {
    id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    topic: String,
    per_txn: u64,
    retry_backoff: Duration,
    queue: VecDeque<Vec<BatchPlan>>,
    /// The open transaction's partitions (`None`: no transaction open).
    open: Option<Vec<i32>>,
    pub stats: TxnStats,
}

impl Txn {
    /// FindCoordinator (key type 1), then InitProducerId with `id`.
    pub fn init(
        conn: &mut Conn,
        id: &str,
        topic: &str,
        per_txn: u64,
        retry_backoff: Duration,
    ) -> Result<Txn> {
        let deadline = Instant::now() + SETUP_DEADLINE;
        let req = || FindCoordinatorRequest {
            key: id.to_string(),
            key_type: KEY_TYPE_TRANSACTION,
            ..FindCoordinatorRequest::default()
        };
        retry(conn, deadline, "FindCoordinator", req, |b| match b {
            ResponseBody::FindCoordinator(r) => Some(r.error_code),
            _ => None,
        })?;
        let got = init_producer_id(conn, Some(id))?;
        Ok(Txn {
            id: id.to_string(),
            producer_id: got.0,
            producer_epoch: got.1,
            topic: topic.to_string(),
            per_txn,
            retry_backoff,
            queue: VecDeque::new(),
            open: None,
            stats: TxnStats::default(),
        })
    }

    /// The transactional id (the Produce request carries it).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// AddPartitionsToTxn of `plan`'s partitions; its requests become the queue.
    pub fn begin(&mut self, conn: &mut Conn, plan: TxnPlan) -> Result<()> {
        let t0 = Instant::now();
        let req = || AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: self.id.clone(),
            v3_and_below_producer_id: self.producer_id,
            v3_and_below_producer_epoch: self.producer_epoch,
            v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                name: self.topic.clone(),
                partitions: plan.partitions.clone(),
            }],
            ..AddPartitionsToTxnRequest::default()
        };
        let n = self.call_retrying(conn, ADD_PARTITIONS_VERSION, req, |b| match b {
            ResponseBody::AddPartitionsToTxn(r) => Some(
                r.results_by_topic_v3_and_below
                    .iter()
                    .flat_map(|t| t.results_by_partition.iter())
                    .map(|p| p.partition_error_code)
                    .find(|c| *c != 0)
                    .unwrap_or(0),
            ),
            _ => None,
        })?;
        self.stats.retries += n;
        self.stats.add_ms += t0.elapsed().as_secs_f64() * 1000.0;
        self.queue = plan.requests.into();
        self.open = Some(plan.partitions);
        Ok(())
    }

    /// EndTxn commit of the open transaction (every one of its requests answered); the
    /// checker learns of its markers.
    pub fn commit(&mut self, conn: &mut Conn, checker: &mut Checker) -> Result<()> {
        let t0 = Instant::now();
        let req = || EndTxnRequest {
            transactional_id: self.id.clone(),
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            committed: true,
        };
        let n = self.call_retrying(conn, END_TXN_VERSION, req, |b| match b {
            ResponseBody::EndTxn(r) => Some(r.error_code),
            _ => None,
        })?;
        self.stats.retries += n;
        self.stats.end_ms += t0.elapsed().as_secs_f64() * 1000.0;
        self.stats.committed += 1;
        checker.skip_markers(&self.open.take().unwrap_or_default());
        Ok(())
    }

    /// Calls until the answer is not retriable; returns the number of retries.
    fn call_retrying<R: Into<RequestBody>>(
        &self,
        conn: &mut Conn,
        version: i16,
        req: impl Fn() -> R,
        code: impl FnMut(ResponseBody) -> Option<i16>,
    ) -> Result<u64> {
        let mut code = code;
        let mut retries = 0;
        let deadline = Instant::now() + SETUP_DEADLINE;
        loop {
            let body = req().into();
            let name = format!("{:?}", body.api_key());
            let Some(c) = code(conn.call(version, body)?) else {
                bail!("{name}: unexpected response type");
            };
            match c {
                0 => return Ok(retries),
                c if retriable(c) && Instant::now() < deadline => {
                    retries += 1;
                    std::thread::sleep(self.retry_backoff);
                }
                c => bail!("{name}: error {c} after {retries} retries"),
            }
        }
    }
}

/// InitProducerId, idempotent (`id` `None`) or transactional: (producer id, epoch). Retried
/// while the coordinator loads (Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its producer
/// id block is allocated, even without a transactional id).
pub(crate) fn init_producer_id(conn: &mut Conn, id: Option<&str>) -> Result<(i64, i16)> {
    let req = || InitProducerIdRequest {
        transactional_id: id.map(str::to_string),
        transaction_timeout_ms: TXN_TIMEOUT_MS,
        producer_id: -1,
        producer_epoch: -1,
    };
    let mut got = (-1, -1);
    let deadline = Instant::now() + SETUP_DEADLINE;
    retry(conn, deadline, "InitProducerId", req, |b| match b {
        ResponseBody::InitProducerId(r) => {
            got = (r.producer_id, r.producer_epoch);
            Some(r.error_code)
        }
        _ => None,
    })?;
    if got.0 < 0 || got.1 < 0 || (id.is_none() && got.1 != 0) {
        bail!("InitProducerId: producer id {} epoch {}", got.0, got.1);
    }
    Ok(got)
}

/// Setup calls: retried every 50 ms while retriable, until `deadline`.
fn retry<R: Into<RequestBody>>(
    conn: &mut Conn,
    deadline: Instant,
    name: &str,
    req: impl Fn() -> R,
    mut code: impl FnMut(ResponseBody) -> Option<i16>,
) -> Result<()> {
    loop {
        let body: RequestBody = req().into();
        let version = match body {
            RequestBody::FindCoordinator(_) => FIND_COORDINATOR_VERSION,
            _ => INIT_PRODUCER_ID_VERSION,
        };
        match code(conn.call(version, body)?) {
            None => bail!("{name}: unexpected response type"),
            Some(0) => return Ok(()),
            Some(c) if retriable(c) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Some(c) => bail!("{name}: error {c}"),
        }
    }
}

/// The requests of a run, with or without transactions.
pub(crate) struct Feed {
    planner: Planner,
    pub txn: Option<Txn>,
    /// The round-trip-limit mode (never with `txn`).
    drained: Option<Drained>,
    pub drain: Option<DrainStats>,
}

impl Feed {
    /// `drain`: `Some((every, round trips))` for the round-trip-limit mode.
    pub fn new(planner: Planner, txn: Option<Txn>, drain: Option<(u64, u32)>) -> Result<Feed> {
        if txn.is_some() && drain.is_some() {
            bail!("--drain-every is for an idempotent producer, not a transactional one");
        }
        Ok(Feed {
            planner,
            txn,
            drained: drain.map(|(every, _)| Drained::new(every)),
            drain: drain.map(|(every, extra_round_trips)| DrainStats {
                every,
                extra_round_trips,
                ..DrainStats::default()
            }),
        })
    }

    /// The warm-up request (untimed); in a transaction of its own, begun here.
    pub fn warmup(&mut self, conn: &mut Conn) -> Result<Vec<BatchPlan>> {
        let warm = self.planner.warmup();
        if let Some(t) = self.txn.as_mut() {
            t.begin(conn, TxnPlan::of(vec![warm.clone()]))?;
            t.queue.clear();
        }
        Ok(warm)
    }

    /// After the warm-up's answer: its commit; the statistics restart for the timed run.
    pub fn warmup_done(&mut self, conn: &mut Conn, checker: &mut Checker) -> Result<()> {
        if let Some(t) = self.txn.as_mut() {
            t.commit(conn, checker)?;
            t.stats = TxnStats::default();
        }
        Ok(())
    }

    /// The next step; `idle`: no request is in flight.
    pub fn next(&mut self, conn: &mut Conn, idle: bool, checker: &mut Checker) -> Result<Next> {
        if let (Some(d), Some(stats)) = (self.drained.as_mut(), self.drain.as_mut()) {
            loop {
                match d.next(&mut self.planner, idle) {
                    DrainStep::Send(r) => return Ok(Next::Send(r)),
                    DrainStep::Wait => return Ok(Next::Drain),
                    DrainStep::Done => return Ok(Next::Done),
                    DrainStep::RoundTrips => {
                        let t0 = Instant::now();
                        for _ in 0..stats.extra_round_trips {
                            api_versions(conn)?;
                        }
                        stats.round_trip_ms += t0.elapsed().as_secs_f64() * 1000.0;
                        stats.drains += 1;
                    }
                }
            }
        }
        let Some(t) = self.txn.as_mut() else {
            return Ok(self.planner.next_request().map_or(Next::Done, Next::Send));
        };
        if let Some(r) = t.queue.pop_front() {
            return Ok(Next::Send(r));
        }
        if !idle {
            return Ok(Next::Drain);
        }
        if t.open.is_some() {
            t.commit(conn, checker)?;
        }
        let Some(plan) = plan_txn(&mut self.planner, t.per_txn) else {
            return Ok(Next::Done);
        };
        t.begin(conn, plan)?;
        Ok(t.queue.pop_front().map_or(Next::Done, Next::Send))
    }
}
