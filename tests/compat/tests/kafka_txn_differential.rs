//! Transactions at the wire level against Apache Kafka and Skiff (issue 18, issue 14 item 4):
//! the same raw requests (transactions v1: InitProducerId v4, AddPartitionsToTxn v3, EndTxn
//! v3, Produce v9, DescribeTransactions, ListTransactions) to the pinned Kafka KRaft node and
//! to Skiff; each answer is reduced to what must agree (error codes, per-partition codes,
//! states, normalised messages; never producer ids or timestamps) and compared case by case.
//! The cases are the ones no stock client sends on purpose: a timeout above
//! `transaction.max.timeout.ms`, a wrong producer id, a fenced or future epoch, an unknown
//! topic beside a known one, EndTxn with nothing to end, a transactional batch for a
//! partition never added (KIP-890 verification), the LSO while a transaction is open.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_compat::{Broker, KafkaNode};
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions};
use skiff_testkit::Conn;
use skiff_testkit::client::{create_topics_request, produce_request};

const TID: &str = "wire-tx";

fn connect(bootstrap: &str) -> Conn {
    let addr: SocketAddr = bootstrap.parse().unwrap();
    Conn::open_as(addr, "skiff-differential")
}

fn init(c: &mut Conn, tid: &str, timeout_ms: i32) -> InitProducerIdResponse {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let req = InitProducerIdRequest {
            transactional_id: Some(tid.into()),
            transaction_timeout_ms: timeout_ms,
            producer_id: -1,
            producer_epoch: -1,
        };
        let ResponseBody::InitProducerId(r) = c.call(4, req) else {
            panic!()
        };
        // Retriable while the coordinator loads or ends a previous transaction.
        if [14, 15, 16, 51].contains(&r.error_code) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        return r;
    }
}

fn find_coordinator(c: &mut Conn, tid: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let req = FindCoordinatorRequest {
            key: tid.into(),
            key_type: 1,
            ..FindCoordinatorRequest::default()
        };
        let ResponseBody::FindCoordinator(f) = c.call(3, req) else {
            panic!()
        };
        if f.error_code == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "FindCoordinator: {f:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn add(c: &mut Conn, pid: i64, epoch: i16, topics: &[(&str, i32)]) -> String {
    let mut ts: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (t, p) in topics {
        match ts.iter_mut().find(|x| x.name == *t) {
            Some(x) => x.partitions.push(*p),
            None => ts.push(AddPartitionsToTxnTopic {
                name: (*t).into(),
                partitions: vec![*p],
            }),
        }
    }
    let req = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: TID.into(),
        v3_and_below_producer_id: pid,
        v3_and_below_producer_epoch: epoch,
        v3_and_below_topics: ts,
        ..AddPartitionsToTxnRequest::default()
    };
    let ResponseBody::AddPartitionsToTxn(r) = c.call(3, req) else {
        panic!()
    };
    let mut codes: Vec<String> = r
        .results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition.iter().map(move |p| {
                format!(
                    "{}-{}={}",
                    t.name, p.partition_index, p.partition_error_code
                )
            })
        })
        .collect();
    codes.sort();
    codes.join(",")
}

fn end(c: &mut Conn, pid: i64, epoch: i16, commit: bool) -> i16 {
    let req = EndTxnRequest {
        transactional_id: TID.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: commit,
    };
    let ResponseBody::EndTxn(r) = c.call(3, req) else {
        panic!()
    };
    r.error_code
}

fn produce(c: &mut Conn, tid: Option<&str>, pid: i64, epoch: i16, seq: i32) -> String {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        is_transactional: true,
        ..BatchOptions::default()
    });
    b.append(
        skiff_types::Clock::system().now_ms(),
        Some(b"k"),
        Some(b"v"),
        &[],
    );
    let mut req = produce_request("wt", 0, Bytes::from(b.build().unwrap()), -1);
    req.transactional_id = tid.map(str::to_string);
    let ResponseBody::Produce(r) = c.call(9, req) else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    format!("{} {:?}", p.error_code, p.error_message)
}

/// (LSO from a read_committed Fetch, HW) of wt-0.
fn lso(c: &mut Conn) -> String {
    let mut req = skiff_testkit::client::fetch_request("wt", 0, 0, 1 << 20, -1);
    req.isolation_level = 1;
    req.max_wait_ms = 0;
    let ResponseBody::Fetch(r) = c.call(12, req) else {
        panic!()
    };
    let p = &r.responses[0].partitions[0];
    format!("lso {} hw {}", p.last_stable_offset, p.high_watermark)
}

/// The scenario against one broker: (case, answer) in order.
fn scenario(bootstrap: &str) -> Vec<(&'static str, String)> {
    let mut c = connect(bootstrap);
    let ResponseBody::CreateTopics(r) = c.call(7, create_topics_request("wt", 1, &[])) else {
        panic!()
    };
    assert_eq!(r.topics[0].error_code, 0);
    find_coordinator(&mut c, TID);
    let mut out = Vec::new();
    let too_long = init(&mut c, TID, 900_001);
    out.push((
        "init: timeout above the max",
        too_long.error_code.to_string(),
    ));
    let r = init(&mut c, TID, 60_000);
    out.push((
        "init",
        format!("{} epoch {}", r.error_code, r.producer_epoch),
    ));
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    out.push((
        "end: nothing to end",
        end(&mut c, pid, epoch, true).to_string(),
    ));
    out.push((
        "add: wrong producer id",
        add(&mut c, pid + 1000, epoch, &[("wt", 0)]),
    ));
    out.push((
        "add: future epoch",
        add(&mut c, pid, epoch + 1, &[("wt", 0)]),
    ));
    out.push((
        "add: unknown topic beside a known one",
        add(&mut c, pid, epoch, &[("wt", 0), ("nope", 0)]),
    ));
    out.push((
        "produce: partition never added",
        produce(&mut c, Some(TID), pid, epoch, 0),
    ));
    out.push(("lso: nothing open", lso(&mut c)));
    out.push(("add", add(&mut c, pid, epoch, &[("wt", 0)])));
    out.push(("add again", add(&mut c, pid, epoch, &[("wt", 0)])));
    out.push(("produce", produce(&mut c, Some(TID), pid, epoch, 0)));
    out.push(("lso: open transaction", lso(&mut c)));
    out.push((
        "end: wrong producer id",
        end(&mut c, pid + 1000, epoch, false).to_string(),
    ));
    out.push(("end: abort", end(&mut c, pid, epoch, false).to_string()));
    let deadline = Instant::now() + Duration::from_secs(20);
    while lso(&mut c) != "lso 2 hw 2" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    out.push(("lso: after the ABORT marker", lso(&mut c)));
    out.push((
        "produce: late batch",
        produce(&mut c, Some(TID), pid, epoch, 1),
    ));
    let r = init(&mut c, TID, 60_000);
    out.push((
        "init again: epoch bump",
        format!("{} epoch {}", r.error_code, r.producer_epoch - epoch),
    ));
    out.push((
        "end: fenced epoch",
        end(&mut c, pid, epoch, true).to_string(),
    ));
    let d = DescribeTransactionsRequest {
        transactional_ids: vec![TID.into(), "unknown-tx".into()],
    };
    let ResponseBody::DescribeTransactions(d) = c.call(0, d) else {
        panic!()
    };
    for s in &d.transaction_states {
        out.push((
            "describe",
            format!(
                "{} {} {} {:?}",
                s.transactional_id, s.error_code, s.transaction_state, s.topics
            ),
        ));
    }
    let l = ListTransactionsRequest {
        state_filters: vec!["Empty".into(), "Bogus".into()],
        producer_id_filters: vec![],
        duration_filter: -1,
    };
    let ResponseBody::ListTransactions(l) = c.call(1, l) else {
        panic!()
    };
    let mut listed: Vec<String> = l
        .transaction_states
        .iter()
        .filter(|s| s.transactional_id == TID)
        .map(|s| s.transaction_state.clone())
        .collect();
    listed.sort();
    out.push((
        "list: Empty and Bogus",
        format!("{} {:?} {listed:?}", l.error_code, l.unknown_state_filters),
    ));
    out
}

#[test]
fn kafka_txn_differential_wire_answers_match() {
    let t = Instant::now();
    let kafka = KafkaNode::start();
    eprintln!("[phase] apache kafka start: {:?}", t.elapsed());
    let skiff = Broker::start();
    let want = scenario(&kafka.bootstrap());
    eprintln!("[phase] kafka scenario: {:?}", t.elapsed());
    let got = scenario(&skiff.bootstrap());
    eprintln!("[phase] skiff scenario: {:?}", t.elapsed());
    let diffs: Vec<String> = want
        .iter()
        .zip(&got)
        .filter(|(w, g)| w != g)
        .map(|(w, g)| format!("{}:\n  kafka {}\n  skiff {}", w.0, w.1, g.1))
        .collect();
    for (case, answer) in &want {
        eprintln!("  {case}: {answer}");
    }
    assert_eq!(want.len(), got.len());
    // The scenario tests something: Kafka refuses the bad cases.
    assert_eq!(want[0].1, "50", "{want:?}");
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
