//! Test harness: a shard plus the log its records went to, and one-line request helpers.
//!
//! Mental model: every call's records are appended to `log` (an always-successful runtime) and
//! its markers collected in `markers`; helpers return the response's error codes.

#![allow(dead_code)]

use bytes::Bytes;
use skiff_protocol::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction, EndTxnRequest, InitProducerIdRequest,
};
use skiff_txn::{Effects, MarkerJob, RequestContext, Response, TxnConfig, TxnShard, TxnView};

pub const COORDINATOR_EPOCH: i32 = 7;

pub struct Harness {
    pub shard: TxnShard,
    pub log: Vec<(Bytes, Option<Bytes>)>,
    pub markers: Vec<MarkerJob>,
    pub next_pid: i64,
    pub token: u64,
    pub now: i64,
    pub last: Effects,
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(TxnConfig::default())
    }

    pub fn with_config(config: TxnConfig) -> Self {
        Self {
            shard: TxnShard::new(config, COORDINATOR_EPOCH),
            log: Vec::new(),
            markers: Vec::new(),
            next_pid: 1000,
            token: 0,
            now: 1_000_000,
            last: Effects::default(),
        }
    }

    fn ctx(&mut self, version: i16) -> RequestContext {
        self.token += 1;
        RequestContext::new(self.token, version)
    }

    pub fn absorb(&mut self, e: Effects) -> Effects {
        self.log.extend(e.records.iter().cloned());
        self.markers.extend(e.markers.iter().cloned());
        self.last = e.clone();
        e
    }

    fn only_response(e: &Effects) -> Response {
        assert_eq!(e.responses.len(), 1, "{e:?}");
        e.responses[0].1.clone()
    }

    /// InitProducerId at `version` with KIP-360 fields `expected` (v3+): (error, pid, epoch).
    pub fn init_v(
        &mut self,
        id: &str,
        timeout_ms: i32,
        version: i16,
        expected: (i64, i16),
    ) -> (i16, i64, i16) {
        let ctx = self.ctx(version);
        let req = InitProducerIdRequest {
            transactional_id: Some(id.to_string()),
            transaction_timeout_ms: timeout_ms,
            producer_id: expected.0,
            producer_epoch: expected.1,
        };
        let mut next = self.next_pid;
        let e = self.shard.init_producer_id(&ctx, &req, self.now, &mut || {
            next += 1;
            Ok(next)
        });
        self.next_pid = next;
        let e = self.absorb(e);
        match Self::only_response(&e) {
            Response::InitProducerId(r) => (r.error_code, r.producer_id, r.producer_epoch),
            other => panic!("{other:?}"),
        }
    }

    pub fn init(&mut self, id: &str) -> (i16, i64, i16) {
        self.init_v(id, 60_000, 4, (-1, -1))
    }

    /// AddPartitionsToTxn v0-3: the error code of every partition, in request order.
    pub fn add_v(
        &mut self,
        id: &str,
        pid: i64,
        epoch: i16,
        parts: &[(&str, i32)],
        version: i16,
    ) -> Vec<i16> {
        let ctx = self.ctx(version);
        let req = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: id.to_string(),
            v3_and_below_producer_id: pid,
            v3_and_below_producer_epoch: epoch,
            v3_and_below_topics: topics(parts),
            ..Default::default()
        };
        let e = self.shard.add_partitions(&ctx, &req, self.now);
        let e = self.absorb(e);
        match Self::only_response(&e) {
            Response::AddPartitionsToTxn(r) => {
                assert!(r.results_by_transaction.is_empty());
                Response::AddPartitionsToTxn(r).error_codes()
            }
            other => panic!("{other:?}"),
        }
    }

    pub fn add(&mut self, id: &str, pid: i64, epoch: i16, parts: &[(&str, i32)]) -> Vec<i16> {
        self.add_v(id, pid, epoch, parts, 3)
    }

    /// AddPartitionsToTxn v4+ with one transaction.
    pub fn add_batched(
        &mut self,
        id: &str,
        pid: i64,
        epoch: i16,
        parts: &[(&str, i32)],
        verify_only: bool,
        version: i16,
    ) -> Vec<i16> {
        let ctx = self.ctx(version);
        let req = AddPartitionsToTxnRequest {
            transactions: vec![AddPartitionsToTxnTransaction {
                transactional_id: id.to_string(),
                producer_id: pid,
                producer_epoch: epoch,
                verify_only,
                topics: topics(parts),
            }],
            ..Default::default()
        };
        let e = self.shard.add_partitions(&ctx, &req, self.now);
        let e = self.absorb(e);
        match Self::only_response(&e) {
            Response::AddPartitionsToTxn(r) => {
                assert!(r.results_by_topic_v3_and_below.is_empty());
                assert_eq!(r.results_by_transaction.len(), 1);
                assert_eq!(r.results_by_transaction[0].transactional_id, id);
                Response::AddPartitionsToTxn(r).error_codes()
            }
            other => panic!("{other:?}"),
        }
    }

    pub fn add_offsets_v(&mut self, id: &str, pid: i64, epoch: i16, p: i32, version: i16) -> i16 {
        let ctx = self.ctx(version);
        let req = AddOffsetsToTxnRequest {
            transactional_id: id.to_string(),
            producer_id: pid,
            producer_epoch: epoch,
            group_id: "g".into(),
        };
        let e = self.shard.add_offsets(&ctx, &req, p, self.now);
        let e = self.absorb(e);
        match Self::only_response(&e) {
            Response::AddOffsetsToTxn(r) => r.error_code,
            other => panic!("{other:?}"),
        }
    }

    pub fn end_v(&mut self, id: &str, pid: i64, epoch: i16, commit: bool, version: i16) -> i16 {
        let ctx = self.ctx(version);
        let req = EndTxnRequest {
            transactional_id: id.to_string(),
            producer_id: pid,
            producer_epoch: epoch,
            committed: commit,
        };
        let e = self.shard.end_txn(&ctx, &req, self.now);
        let e = self.absorb(e);
        match Self::only_response(&e) {
            Response::EndTxn(r) => r.error_code,
            other => panic!("{other:?}"),
        }
    }

    pub fn end(&mut self, id: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
        self.end_v(id, pid, epoch, commit, 3)
    }

    /// Completes every collected marker job (in order); returns how many completed something.
    pub fn write_markers(&mut self) -> usize {
        let jobs = std::mem::take(&mut self.markers);
        let mut completed = 0;
        for j in jobs {
            let e = self.shard.markers_written(
                &j.transactional_id,
                j.producer_id,
                j.producer_epoch,
                self.now,
            );
            if !e.records.is_empty() {
                completed += 1;
            }
            self.absorb(e);
        }
        completed
    }

    pub fn tick(&mut self, now: i64) -> Effects {
        self.now = now;
        let e = self.shard.tick(now);
        self.absorb(e)
    }

    pub fn view(&self, id: &str) -> TxnView {
        self.shard.describe(id).expect("id known")
    }

    pub fn state(&self, id: &str) -> &'static str {
        self.view(id).state.name()
    }

    /// A fresh shard rebuilt from `log`, after `on_loaded(now)`; returns it and the load's
    /// effects.
    pub fn reload(&self) -> (TxnShard, Effects) {
        let mut s = TxnShard::new(self.shard.config().clone(), COORDINATOR_EPOCH + 1);
        for (k, v) in &self.log {
            s.replay(k, v.as_deref()).expect("own records replay");
        }
        let e = s.on_loaded(self.now);
        (s, e)
    }
}

pub fn topics(parts: &[(&str, i32)]) -> Vec<AddPartitionsToTxnTopic> {
    let mut out: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (t, p) in parts {
        match out.iter_mut().find(|x| x.name == *t) {
            Some(x) => x.partitions.push(*p),
            None => out.push(AddPartitionsToTxnTopic {
                name: t.to_string(),
                partitions: vec![*p],
            }),
        }
    }
    out
}
