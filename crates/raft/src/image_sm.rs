//! [`ImageStateMachine`]: openraft's state machine for the metadata quorum (issue 16): every
//! committed entry, on every voter, in log order, goes into the metadata image through the
//! store's [`ImageSink`].
//!
//! Mental model: a normal entry is one atomic controller operation (its KRaft-framed records,
//! one v2 batch on disk at a known base offset); applying it decodes the records and hands
//! them to the sink with the offset after the batch, so the image and its applied end move
//! together. Blank (leader change) and membership entries are one control record each: they
//! move the applied end only. A watch channel carries the applied end to whoever follows the
//! image (the broker's partition reconciler).
//!
//! Nothing is persisted: after a restart openraft re-applies the log from its start (up to
//! the committed id it saved), which rebuilds the image. Snapshots (KRaft `.checkpoint`) are
//! not built yet: the quorum runs with `SnapshotPolicy::Never` and never purges, so a lagging
//! voter is always caught up from the log.
//!
//! Invariants: entries are applied in index order, each once (checked); an entry whose records
//! do not decode stops the state machine (openraft then stops the node) rather than applying
//! half of it.

use std::io;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend, SnapshotMeta};
use parking_lot::Mutex;
use skiff_metadata::{ImageSink, Record};
use tokio::sync::watch;

use crate::KafkaLogStore;
use crate::codec::invalid;
use crate::types::{Epoch, LogId, NodeId, SkiffRaft, StoredMembership};

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
}

/// The metadata quorum's state machine (see the module docs). Clones share the state.
#[derive(Clone, Debug)]
pub struct ImageStateMachine {
    sink: ImageSink,
    store: KafkaLogStore,
    state: Arc<Mutex<State>>,
    applied_tx: Arc<watch::Sender<i64>>,
}

impl ImageStateMachine {
    /// Applies into `sink`; `store` is the Raft log (for each entry's base offset).
    pub fn new(sink: ImageSink, store: KafkaLogStore) -> Self {
        let (applied_tx, _) = watch::channel(0);
        ImageStateMachine {
            sink,
            store,
            state: Arc::new(Mutex::new(State::default())),
            applied_tx: Arc::new(applied_tx),
        }
    }

    /// The applied end offset, as it moves.
    pub fn applied(&self) -> watch::Receiver<i64> {
        self.applied_tx.subscribe()
    }

    fn apply_one(&self, entry: &crate::types::Entry) -> io::Result<()> {
        let id = entry.log_id();
        let base = self
            .store
            .base_offset_of(id.index)
            .ok_or_else(|| invalid(format!("entry {id} applied but not in the log")))?;
        let mut s = self.state.lock();
        if s.last_applied.is_some_and(|l| l.index >= id.index) {
            return Err(invalid(format!(
                "entry {id} applied after {:?}",
                s.last_applied
            )));
        }
        match &entry.payload {
            EntryPayload::Blank => self.sink.apply(&[], base + 1),
            EntryPayload::Membership(m) => {
                s.membership = StoredMembership::new(Some(id), m.clone());
                self.sink.apply(&[], base + 1);
            }
            EntryPayload::Normal(op) => {
                let mut records = Vec::with_capacity(op.0.len());
                for value in &op.0 {
                    match Record::decode(value.clone()) {
                        Ok(Some(r)) => records.push(r),
                        // A record type this version does not know: skipped, as KRaft does.
                        Ok(None) => {}
                        Err(e) => return Err(invalid(format!("entry {id}: {e}"))),
                    }
                }
                self.sink.apply(&records, base + op.0.len() as i64);
            }
        }
        s.last_applied = Some(id);
        drop(s);
        self.applied_tx.send_replace(self.sink.applied_end());
        Ok(())
    }
}

impl RaftSnapshotBuilder<SkiffRaft> for ImageStateMachine {
    type SnapshotData = Vec<u8>;

    async fn build_snapshot(&mut self) -> Result<SkiffSnapshot, io::Error> {
        Err(invalid(
            "metadata snapshots are not built yet (SnapshotPolicy::Never)",
        ))
    }
}

impl RaftStateMachine<SkiffRaft> for ImageStateMachine {
    type SnapshotData = Vec<u8>;
    type SnapshotBuilder = ImageStateMachine;

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
            self.apply_one(&entry)?;
            if let Some(r) = responder {
                r.send(());
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        _meta: &Meta,
        _snapshot: Vec<u8>,
    ) -> Result<(), io::Error> {
        Err(invalid(
            "metadata snapshots are not installed yet (the leader never purges its log)",
        ))
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<SkiffSnapshot>, io::Error> {
        Ok(None)
    }
}
