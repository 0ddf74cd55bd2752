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
//! Snapshots ([`crate::checkpoint`]): `build_snapshot` writes the image at the last applied
//! entry as a KRaft `.checkpoint` file beside the log (the quorum's trigger decides when, see
//! [`crate::quorum`]); `install_snapshot` checks such a file (sent by the leader, or read from
//! disk on restart), replays it into an empty image and replaces the sink's image with it.
//! Nothing else is persisted: after a restart openraft installs the newest snapshot (through
//! `get_current_snapshot`) and re-applies the log after it up to the committed id it saved.
//! The store is told where every snapshot ends ([`KafkaLogStore::note_snapshot`]) so a purge
//! past its log end (a follower that installed a snapshot) starts the log at that offset.
//!
//! Invariants: entries are applied in index order, each once (checked); an entry whose records
//! do not decode stops the state machine (openraft then stops the node) rather than applying
//! half of it.

use std::io;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend};
use parking_lot::Mutex;
use skiff_metadata::{ImageSink, MetadataImage, Record};
use tokio::sync::watch;

use crate::KafkaLogStore;
use crate::checkpoint::{self, Meta};
use crate::codec::invalid;
use crate::types::{Epoch, LogId, NodeId, SkiffRaft, StoredMembership};

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
    /// Approximate batch bytes and entries applied since the last snapshot (the trigger's
    /// measure of `metadata.log.max.record.bytes.between.snapshots`).
    bytes_since_snapshot: u64,
    entries_since_snapshot: u64,
}

/// A batch's fixed overhead (the v2 header) and a record's, roughly: what a batch adds to the
/// log beyond its values.
const BATCH_OVERHEAD: u64 = 61;
const RECORD_OVERHEAD: u64 = 8;

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

    /// `(bytes, entries)` applied since the last snapshot was built or installed.
    pub fn since_snapshot(&self) -> (u64, u64) {
        let s = self.state.lock();
        (s.bytes_since_snapshot, s.entries_since_snapshot)
    }

    /// The index of the last applied entry.
    pub fn last_applied_index(&self) -> Option<u64> {
        self.state.lock().last_applied.map(|l| l.index)
    }

    /// Decodes a snapshot's records into the image they rebuild.
    pub(crate) fn image_of(records: &[bytes::Bytes]) -> io::Result<MetadataImage> {
        let mut out = Vec::with_capacity(records.len());
        for v in records {
            match Record::decode(v.clone()) {
                Ok(Some(r)) => out.push(r),
                // A record type this version does not know: skipped, as KRaft does.
                Ok(None) => {}
                Err(e) => return Err(invalid(format!("snapshot record: {e}"))),
            }
        }
        Ok(skiff_metadata::replay(&MetadataImage::default(), &out))
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
        let bytes = match &entry.payload {
            EntryPayload::Normal(op) => {
                op.0.iter()
                    .map(|v| v.len() as u64 + RECORD_OVERHEAD)
                    .sum::<u64>()
            }
            _ => 2 * RECORD_OVERHEAD,
        };
        s.bytes_since_snapshot += BATCH_OVERHEAD + bytes;
        s.entries_since_snapshot += 1;
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
        // The image and the applied id move together under the state lock.
        let (meta, end, image) = {
            let mut s = self.state.lock();
            s.bytes_since_snapshot = 0;
            s.entries_since_snapshot = 0;
            let meta = Meta {
                last_log_id: s.last_applied,
                last_membership: s.membership.clone(),
            };
            (meta, self.sink.applied_end(), self.sink.image())
        };
        let now = self.store.now_ms();
        let dir = self.store.dir();
        let snapshot_meta = meta.clone();
        let bytes = tokio::task::spawn_blocking(move || -> io::Result<Vec<u8>> {
            let mut records = Vec::new();
            for r in skiff_metadata::snapshot::image_records(&image) {
                records.push(r.encode().map_err(|e| invalid(format!("snapshot record: {e}")))?);
            }
            let (id, bytes) = checkpoint::encode(&snapshot_meta, end, &records, now)?;
            checkpoint::write(&dir, id, &bytes)?;
            tracing::info!(file = %id.file_name(), records = records.len(), bytes = bytes.len(), "wrote a metadata snapshot");
            Ok(bytes)
        })
        .await
        .map_err(|e| io::Error::other(format!("snapshot task failed: {e}")))??;
        if let Some(last) = meta.last_log_id {
            self.store.note_snapshot(last, end);
        }
        Ok(Snapshot {
            meta,
            snapshot: bytes,
        })
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

    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Vec<u8>) -> Result<(), io::Error> {
        let dir = self.store.dir();
        let (decoded, image) = tokio::task::spawn_blocking(move || {
            let decoded = checkpoint::decode(&snapshot)?;
            let image = ImageStateMachine::image_of(&decoded.records)?;
            checkpoint::write(&dir, decoded.id, &snapshot)?;
            Ok::<_, io::Error>((decoded, image))
        })
        .await
        .map_err(|e| io::Error::other(format!("snapshot task failed: {e}")))??;
        if decoded.meta.last_log_id != meta.last_log_id {
            return Err(invalid(format!(
                "snapshot {} holds entry {:?}, sent as {:?}",
                decoded.id.file_name(),
                decoded.meta.last_log_id,
                meta.last_log_id
            )));
        }
        let end = decoded.id.end_offset;
        if let Some(last) = meta.last_log_id {
            self.store.note_snapshot(last, end);
        }
        {
            let mut s = self.state.lock();
            self.sink.reset(image, end);
            s.last_applied = meta.last_log_id;
            s.membership = meta.last_membership.clone();
            s.bytes_since_snapshot = 0;
            s.entries_since_snapshot = 0;
        }
        tracing::info!(file = %decoded.id.file_name(), "installed a metadata snapshot");
        self.applied_tx.send_replace(end);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<SkiffSnapshot>, io::Error> {
        let dir = self.store.dir();
        let latest = tokio::task::spawn_blocking(move || checkpoint::latest(&dir))
            .await
            .map_err(|e| io::Error::other(format!("snapshot task failed: {e}")))??;
        Ok(latest.map(|(decoded, bytes)| Snapshot {
            meta: decoded.meta,
            snapshot: bytes,
        }))
    }
}
