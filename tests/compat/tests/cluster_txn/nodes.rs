//! The cluster side of the transaction scenarios: a 3-node cluster whose `__transaction_state`
//! and `__consumer_offsets` are replicated three ways, topics created with RF=3, and the
//! questions the tests ask the nodes (who leads what, who coordinates a transactional id).
//!
//! Mental model: the test kills nodes, so every question goes to one node with short socket
//! timeouts and may get no answer ([`call`] returns `None`); the tests only ask nodes they left
//! running (`up[i]`). "Healthy" means every running node agrees that every partition of the
//! named topics is led by a running node with all three replicas in the ISR: only then is the
//! next kill one the cluster must survive (two of three replicas of every partition, including
//! the transaction log's, stay in sync).

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use skiff_protocol::{
    BlockingClient, FindCoordinatorRequest, MetadataRequest, RequestBody, ResponseBody,
};
use skiff_testkit::client::create_topics_request;
use skiff_testkit::cluster::Cluster;

/// The transaction log's topic.
pub const TXN_STATE: &str = "__transaction_state";

/// Broker keys of every scenario: the transaction and offsets logs on all three nodes, a quick
/// abort of timed-out transactions, followers quick to fetch and to drop out of the ISR.
pub const KEYS: &[(&str, &str)] = &[
    ("transaction.state.log.replication.factor", "3"),
    ("transaction.state.log.min.isr", "2"),
    ("transaction.state.log.num.partitions", "3"),
    ("offsets.topic.replication.factor", "3"),
    (
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "500",
    ),
    ("replica.fetch.backoff.ms", "100"),
    ("replica.lag.time.max.ms", "5000"),
];

/// Starts the three nodes and waits until each sees all three brokers.
pub fn start() -> Cluster {
    let cluster = Cluster::start(3, KEYS);
    cluster.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    cluster
}

/// One request to `127.0.0.1:port` on a fresh connection; `None` without an answer in ~3 s.
pub fn call(port: u16, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(3))).ok()?;
    BlockingClient::new(s, "cluster-txn")
        .call(version, body)
        .ok()
}

/// (partition, leader, ISR size) of `topic` as the node at `port` sees it (empty: unknown).
pub fn partitions(port: u16, topic: &str) -> Option<Vec<(i32, i32, usize)>> {
    let req = MetadataRequest {
        topics: None,
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(m) = call(port, 12, req)? else {
        return None;
    };
    let mut v: Vec<(i32, i32, usize)> = m
        .topics
        .iter()
        .filter(|t| t.name.as_deref() == Some(topic))
        .flat_map(|t| &t.partitions)
        .map(|p| (p.partition_index, p.leader_id, p.isr_nodes.len()))
        .collect();
    v.sort_unstable();
    Some(v)
}

/// Polls `f` every 50 ms until it returns `Some`; panics naming `what` after `within`.
pub fn wait_for<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < until, "never {what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every running node (`up`) sees every partition of each of `topics` led by a running node
/// with a full ISR, and they agree on the leaders: the leaders of `topics[0]`, by partition.
pub fn healthy(cluster: &Cluster, up: &[bool], topics: &[&str]) -> Option<Vec<i32>> {
    let mut first: Option<Vec<Vec<(i32, i32, usize)>>> = None;
    for i in (0..3).filter(|i| up[*i]) {
        let views: Vec<Vec<(i32, i32, usize)>> = topics
            .iter()
            .map(|t| partitions(cluster.ports[i].0, t))
            .collect::<Option<_>>()?;
        let ok = views.iter().all(|v| {
            !v.is_empty()
                && v.iter()
                    .all(|(_, l, isr)| *l > 0 && up[(*l - 1) as usize] && *isr == 3)
        });
        if !ok || first.as_ref().is_some_and(|f| *f != views) {
            return None;
        }
        first.get_or_insert(views);
    }
    first.map(|f| f[0].iter().map(|(_, l, _)| *l).collect())
}

/// [`healthy`] within `within`, or a panic with every running node's view.
pub fn wait_healthy(cluster: &Cluster, up: &[bool], topics: &[&str], within: Duration) -> Vec<i32> {
    let until = Instant::now() + within;
    loop {
        if let Some(l) = healthy(cluster, up, topics) {
            return l;
        }
        if Instant::now() >= until {
            let views: Vec<String> = (0..3)
                .filter(|i| up[*i])
                .map(|i| {
                    let v: Vec<_> = topics
                        .iter()
                        .map(|t| (t, partitions(cluster.ports[i].0, t)))
                        .collect();
                    format!("node {}: {v:?}", i + 1)
                })
                .collect();
            panic!("never healthy within {within:?} (up {up:?}): {views:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The transaction coordinator of `tid` as the node at `port` names it (FindCoordinator key
/// type 1); `None` while it has none (COORDINATOR_NOT_AVAILABLE) or does not answer.
pub fn txn_coordinator(port: u16, tid: &str) -> Option<i32> {
    let req = FindCoordinatorRequest {
        key: tid.into(),
        key_type: 1,
        ..Default::default()
    };
    match call(port, 3, req)? {
        ResponseBody::FindCoordinator(f) if f.error_code == 0 && f.node_id > 0 => Some(f.node_id),
        _ => None,
    }
}

/// The coordinator of `tid` as a running node other than `except` sees it, running and not
/// `except`, within `within` (panics otherwise).
pub fn wait_coordinator(
    cluster: &Cluster,
    up: &[bool],
    tid: &str,
    except: Option<i32>,
    within: Duration,
) -> i32 {
    wait_for(
        &format!("a running coordinator of {tid} other than {except:?}"),
        within,
        || {
            (0..3).filter(|i| up[*i]).find_map(|i| {
                let c = txn_coordinator(cluster.ports[i].0, tid)?;
                (up[(c - 1) as usize] && Some(c) != except).then_some(c)
            })
        },
    )
}

/// Creates `name` (`partitions` partitions, RF=3, `min.insync.replicas=2`) through node 1,
/// retrying until the controller takes it.
pub fn create_topic(cluster: &Cluster, name: &str, partitions: i32) {
    const TOPIC_ALREADY_EXISTS: i16 = 36;
    let mut req = create_topics_request(name, partitions, &[("min.insync.replicas", "2")]);
    req.topics[0].replication_factor = 3;
    let mut retried = false;
    wait_for(&format!("{name} created"), Duration::from_secs(20), || {
        let ResponseBody::CreateTopics(r) = call(cluster.ports[0].0, 7, req.clone())? else {
            return None;
        };
        let code = r.topics[0].error_code;
        let ok = code == 0 || (retried && code == TOPIC_ALREADY_EXISTS);
        retried = true;
        ok.then_some(())
    });
}

/// The leader of partition `p` of `topic` as the first running node that names a running
/// leader sees it.
pub fn leader_of(cluster: &Cluster, up: &[bool], topic: &str, p: i32) -> Option<i32> {
    (0..3).filter(|i| up[*i]).find_map(|i| {
        let (_, l, _) = partitions(cluster.ports[i].0, topic)?
            .into_iter()
            .find(|x| x.0 == p)?;
        (l > 0 && up[(l - 1) as usize]).then_some(l)
    })
}
