//! [`MemStateMachine`]: a minimal in-memory state machine, for tests and until the controller
//! (design/replication.md §1.3) consumes committed entries itself.
//!
//! Mental model: applying a committed entry appends `(index, records)` to a list (normal
//! entries only) and moves `last_applied`; a membership entry also becomes the applied
//! membership. A snapshot is that list serialized (JSON), with openraft's meta beside it; nothing
//! is persisted, so after a restart openraft re-applies the log from its start.
//!
//! Invariant: entries are applied in index order, each once (openraft's contract; checked:
//! an entry at or below `last_applied` is an error).

use std::io;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend, SnapshotMeta};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::codec::invalid;
use crate::types::{Epoch, LogId, NodeId, Op, SkiffRaft, StoredMembership};

type Meta = SnapshotMeta<
    openraft::vote::leader_id_std::CommittedLeaderId<Epoch>,
    NodeId,
    openraft::impls::BasicNode,
>;
type SkiffSnapshot = Snapshot<
    openraft::vote::leader_id_std::CommittedLeaderId<Epoch>,
    NodeId,
    openraft::impls::BasicNode,
    Vec<u8>,
>;

#[derive(Debug, Default)]
struct State {
    last_applied: Option<LogId>,
    membership: StoredMembership,
    applied: Vec<(u64, Op)>,
    snapshot: Option<(Meta, Vec<u8>)>,
}

#[derive(Serialize, Deserialize)]
struct SnapshotBody {
    applied: Vec<(u64, Op)>,
}

/// The minimal state machine (see the module docs). Clones share the state, so a test keeps
/// one handle while openraft owns another.
#[derive(Clone, Debug, Default)]
pub struct MemStateMachine {
    state: Arc<Mutex<State>>,
}

impl MemStateMachine {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every applied normal entry, `(index, records)`, in order.
    pub fn applied(&self) -> Vec<(u64, Op)> {
        self.state.lock().applied.clone()
    }

    /// The last applied log id.
    pub fn last_applied(&self) -> Option<LogId> {
        self.state.lock().last_applied
    }
}

fn build(state: &mut State) -> io::Result<SkiffSnapshot> {
    let body = serde_json::to_vec(&SnapshotBody {
        applied: state.applied.clone(),
    })
    .map_err(|e| invalid(format!("snapshot: {e}")))?;
    let meta = Meta {
        last_log_id: state.last_applied,
        last_membership: state.membership.clone(),
    };
    state.snapshot = Some((meta.clone(), body.clone()));
    Ok(Snapshot {
        meta,
        snapshot: body,
    })
}

impl RaftSnapshotBuilder<SkiffRaft> for MemStateMachine {
    type SnapshotData = Vec<u8>;

    async fn build_snapshot(&mut self) -> Result<SkiffSnapshot, io::Error> {
        build(&mut self.state.lock())
    }
}

impl RaftStateMachine<SkiffRaft> for MemStateMachine {
    type SnapshotData = Vec<u8>;
    type SnapshotBuilder = MemStateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let s = self.state.lock();
        Ok((s.last_applied, s.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<SkiffRaft>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let id = entry.log_id();
            {
                let mut s = self.state.lock();
                if s.last_applied.is_some_and(|l| l.index >= id.index) {
                    return Err(invalid(format!(
                        "entry {id} applied after {:?}",
                        s.last_applied
                    )));
                }
                s.last_applied = Some(id);
                match entry.payload {
                    EntryPayload::Blank => {}
                    EntryPayload::Normal(op) => s.applied.push((id.index, op)),
                    EntryPayload::Membership(m) => {
                        s.membership = StoredMembership::new(Some(id), m);
                    }
                }
            }
            if let Some(r) = responder {
                r.send(());
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Vec<u8>) -> Result<(), io::Error> {
        let body: SnapshotBody =
            serde_json::from_slice(&snapshot).map_err(|e| invalid(format!("snapshot: {e}")))?;
        let mut s = self.state.lock();
        s.applied = body.applied;
        s.last_applied = meta.last_log_id;
        s.membership = meta.last_membership.clone();
        s.snapshot = Some((meta.clone(), snapshot));
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<SkiffSnapshot>, io::Error> {
        Ok(self
            .state
            .lock()
            .snapshot
            .clone()
            .map(|(meta, snapshot)| Snapshot { meta, snapshot }))
    }
}
