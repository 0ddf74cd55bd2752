//! Three in-process openraft nodes over `KafkaLogStore` in temp dirs, connected by an in-memory
//! network (direct calls into the target `Raft`): election, replication of 10 ops in the same
//! order on all three, failover after the leader stops, and a restarted node replaying its log.
//! Every wait is openraft's metrics wait with a deadline, never a bare sleep.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::errors::{
    ClientWriteError, InitializeError, RPCError, RaftError, ReplicationClosed, StreamingError,
    Unreachable,
};
use openraft::impls::BasicNode;
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::storage::Snapshot;
use openraft::{Config, Raft};
use parking_lot::Mutex;
use skiff_raft::types::Vote;
use skiff_raft::{KafkaLogStore, MemStateMachine, NodeId, Op, SkiffRaft};
use skiff_types::clock::Clock;

type Node = Raft<SkiffRaft, MemStateMachine>;
type SkiffSnapshot = Snapshot<
    openraft::vote::leader_id_std::CommittedLeaderId<skiff_raft::Epoch>,
    NodeId,
    BasicNode,
    Vec<u8>,
>;

const WAIT: Duration = Duration::from_secs(10);

/// The nodes that are up, by id. A node not in the map is unreachable.
#[derive(Clone, Default)]
struct Router {
    nodes: Arc<Mutex<BTreeMap<NodeId, Node>>>,
}

struct Net {
    target: NodeId,
    router: Router,
}

impl Net {
    fn target(&self) -> Result<Node, Unreachable<SkiffRaft>> {
        self.router
            .nodes
            .lock()
            .get(&self.target)
            .cloned()
            .ok_or_else(|| Unreachable::new(&io::Error::other(format!("{} is down", self.target))))
    }
}

impl RaftNetworkFactory<SkiffRaft> for Router {
    type Network = Net;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Net {
        Net {
            target,
            router: self.clone(),
        }
    }
}

impl RaftNetworkV2<SkiffRaft> for Net {
    type SnapshotData = Vec<u8>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<SkiffRaft>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<SkiffRaft>, RPCError<SkiffRaft>> {
        let node = self.target()?;
        node.append_entries(rpc)
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<SkiffRaft>,
        _option: RPCOption,
    ) -> Result<VoteResponse<SkiffRaft>, RPCError<SkiffRaft>> {
        let node = self.target()?;
        node.vote(rpc)
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: SkiffSnapshot,
        _cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<SkiffRaft>, StreamingError<SkiffRaft>> {
        let node = self.target()?;
        node.install_full_snapshot(vote, snapshot)
            .await
            .map_err(|e| StreamingError::Unreachable(Unreachable::new(&e)))
    }
}

fn config() -> Arc<Config> {
    Arc::new(
        Config {
            heartbeat_interval: 50,
            election_timeout_min: 150,
            election_timeout_max: 300,
            ..Config::default()
        }
        .validate()
        .unwrap(),
    )
}

fn dir_of(root: &Path, id: NodeId) -> PathBuf {
    root.join(format!("node-{id}")).join("__cluster_metadata-0")
}

async fn start(router: &Router, root: &Path, id: NodeId) -> (Node, MemStateMachine) {
    let store = KafkaLogStore::open(&dir_of(root, id), Clock::system()).unwrap();
    let sm = MemStateMachine::new();
    let raft = Raft::new(id, config(), router.clone(), store, sm.clone())
        .await
        .unwrap();
    router.nodes.lock().insert(id, raft.clone());
    (raft, sm)
}

/// Waits until `raft` sees a leader other than `not`; returns it.
async fn leader_of(raft: &Node, not: Option<NodeId>) -> NodeId {
    let m = raft
        .wait(Some(WAIT))
        .metrics(
            |m| m.current_leader.is_some_and(|l| Some(l) != not),
            "a leader is known",
        )
        .await
        .unwrap();
    m.current_leader.unwrap()
}

/// Writes `op` through `leader`: waits for its lease (a quorum-acked leader), and retries a
/// refusal for an expired lease (refused before anything was appended), all within [`WAIT`].
async fn write(leader: &Node, op: Op) -> u64 {
    let attempt = async {
        loop {
            leader
                .wait(Some(WAIT))
                .leader_with_quorum_acked(None, "writable leader")
                .await
                .unwrap();
            match leader.client_write(op.clone()).await {
                Ok(resp) => return resp.log_id.index,
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))
                    if f.leader_id.is_none() =>
                {
                    continue;
                }
                Err(e) => panic!("client_write: {e}"),
            }
        }
    };
    tokio::time::timeout(WAIT, attempt).await.unwrap()
}

fn op(i: usize) -> Op {
    Op(vec![
        Bytes::from(format!("op-{i}-topic-record")),
        Bytes::from(format!("op-{i}-partition-record")),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_elect_replicate_fail_over_and_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let router = Router::default();
    let ids = [NodeId(1), NodeId(2), NodeId(3)];
    let mut nodes = BTreeMap::new();
    for id in ids {
        nodes.insert(id, start(&router, tmp.path(), id).await);
    }
    let members: BTreeMap<NodeId, BasicNode> = ids
        .iter()
        .map(|id| (*id, BasicNode::new(format!("node-{id}"))))
        .collect();
    // All voters initialize with the same membership on an empty log (design §1.3); whoever is
    // second may already have the first's membership entry, which openraft refuses.
    for (raft, _) in nodes.values() {
        match raft.initialize(members.clone()).await {
            Ok(()) | Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {}
            Err(e) => panic!("initialize: {e}"),
        }
    }

    let leader = leader_of(&nodes[&ids[0]].0, None).await;
    let mut last = None;
    for i in 0..10 {
        last = Some(write(&nodes[&leader].0, op(i)).await);
    }
    for (raft, _) in nodes.values() {
        raft.wait(Some(WAIT))
            .applied_index_at_least(last, "10 ops applied")
            .await
            .unwrap();
    }
    let want: Vec<Op> = (0..10).map(op).collect();
    let applied = nodes[&leader].1.applied();
    assert_eq!(
        applied.iter().map(|(_, o)| o.clone()).collect::<Vec<_>>(),
        want
    );
    for (_, sm) in nodes.values() {
        assert_eq!(
            sm.applied(),
            applied,
            "same ops at the same indexes everywhere"
        );
    }

    // The leader stops: the other two elect a new one, and a write commits on them.
    router.nodes.lock().remove(&leader);
    let (old, _) = nodes.remove(&leader).unwrap();
    old.shutdown().await.unwrap();
    drop(old);
    let survivor = nodes.values().next().unwrap().0.clone();
    let new_leader = leader_of(&survivor, Some(leader)).await;
    assert_ne!(new_leader, leader);
    let index = write(&nodes[&new_leader].0, op(10)).await;
    for (raft, _) in nodes.values() {
        raft.wait(Some(WAIT))
            .applied_index_at_least(Some(index), "op 10 applied")
            .await
            .unwrap();
    }
    for (_, sm) in nodes.values() {
        let got: Vec<Op> = sm.applied().into_iter().map(|(_, o)| o).collect();
        assert_eq!(got, (0..11).map(op).collect::<Vec<_>>());
    }

    // The old leader restarts from its dir with an empty state machine: it replays its own
    // log and catches up with the op committed while it was down.
    let (back, back_sm) = start(&router, tmp.path(), leader).await;
    back.wait(Some(WAIT))
        .applied_index_at_least(Some(index), "restarted node caught up")
        .await
        .unwrap();
    let got: Vec<Op> = back_sm.applied().into_iter().map(|(_, o)| o).collect();
    assert_eq!(got, (0..11).map(op).collect::<Vec<_>>());

    back.shutdown().await.unwrap();
    for (raft, _) in nodes.values() {
        raft.shutdown().await.unwrap();
    }
}
