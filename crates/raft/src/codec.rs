//! One openraft entry = one Kafka v2 batch: the encoding both ways.
//!
//! Mental model: the Raft log *is* the `__cluster_metadata-0` partition log, in Kafka's batch
//! format, so Kafka's file tools can read it. Every entry is exactly one batch; the entry's term
//! is the batch's `partitionLeaderEpoch`. The entry's index is not stored: indexes are dense and
//! follow the batch order (see [`crate::log_store`]).
//!
//! | entry payload | batch |
//! |---|---|
//! | `Normal(op)`, op non-empty | plain batch, one record per op value (the KRaft-framed record), no key |
//! | `Normal(vec![])` | plain batch with one record whose value is null (a batch cannot be empty; ops never hold a null value) |
//! | `Blank` | control batch, one record: key `(version 0, type 2 = LeaderChange)`, value a `LeaderChangeMessage` v0 (`leaderId` when known, else -1; empty voter lists), as KRaft writes at each epoch start |
//! | `Membership(m)` | control batch, one record: key `(version 0, type` [`SKIFF_MEMBERSHIP_TYPE`]`)`, value the JSON of openraft's `Membership` (joint configs and nodes) |
//!
//! Membership uses a Skiff control type rather than KRaft's `VotersRecord` (type 6) because
//! openraft has joint configs, which `VotersRecord` cannot say; see docs/formats/raft-log.md.
//!
//! Invariants: decoding is strict (unknown control types, a key-less control record, a null
//! value beside other records, or a bad JSON value is `InvalidData`, never a silent skip);
//! `decode(encode(e))` gives `e` back with the index supplied by the caller.

use std::io;

use bytes::Bytes;
use openraft::EntryPayload;
use openraft::entry::RaftEntry;
use skiff_record::{BatchBuilder, BatchOptions, BatchView};
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

use crate::types::{Entry, Membership, Op, log_id};

/// KRaft's `ControlRecordType.LEADER_CHANGE`.
pub const LEADER_CHANGE_TYPE: i16 = 2;
/// Skiff's control record type for an openraft membership entry (outside Kafka's 0-6).
pub const SKIFF_MEMBERSHIP_TYPE: i16 = 0x5301;
/// The control record key version (Kafka's `ControlRecordType` key schema, version 0).
const CONTROL_KEY_VERSION: i16 = 0;

pub(crate) fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn control_key(kind: i16) -> [u8; 4] {
    let v = CONTROL_KEY_VERSION.to_be_bytes();
    let t = kind.to_be_bytes();
    [v[0], v[1], t[0], t[1]]
}

/// `LeaderChangeMessage` v0 (flexible): version, leaderId, voters and grantingVoters as empty
/// compact arrays, no tagged fields.
fn leader_change_v0(leader_id: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    out.extend_from_slice(&0i16.to_be_bytes()); // Version
    out.extend_from_slice(&leader_id.to_be_bytes()); // LeaderId
    out.push(1); // Voters: compact array of length 0 (uvarint 0 + 1)
    out.push(1); // GrantingVoters: likewise
    out.push(0); // no tagged fields
    out
}

/// Encodes `entry` as one v2 batch (base offset 0; the log assigns it). `leader_hint` is the
/// node id written in a blank entry's `LeaderChangeMessage` (`None` = -1). The batch carries
/// `now_ms` as its timestamp.
pub fn encode(entry: &Entry, leader_hint: Option<i32>, now_ms: i64) -> io::Result<Vec<u8>> {
    let term = entry.log_id.leader_id.term.0;
    let is_control = !matches!(entry.payload, EntryPayload::Normal(_));
    let mut b = BatchBuilder::new(BatchOptions {
        partition_leader_epoch: term,
        is_control,
        ..BatchOptions::default()
    });
    match &entry.payload {
        EntryPayload::Normal(op) if op.0.is_empty() => b.append(now_ms, None, None, &[]),
        EntryPayload::Normal(op) => {
            for v in &op.0 {
                b.append(now_ms, None, Some(v), &[]);
            }
        }
        EntryPayload::Blank => {
            let value = leader_change_v0(leader_hint.unwrap_or(-1));
            b.append(
                now_ms,
                Some(&control_key(LEADER_CHANGE_TYPE)),
                Some(&value),
                &[],
            );
        }
        EntryPayload::Membership(m) => {
            let value = serde_json::to_vec(m).map_err(|e| invalid(format!("membership: {e}")))?;
            b.append(
                now_ms,
                Some(&control_key(SKIFF_MEMBERSHIP_TYPE)),
                Some(&value),
                &[],
            );
        }
    }
    b.build()
        .map_err(|e| invalid(format!("building an entry batch: {e}")))
}

/// Decodes one batch as the entry at `index`.
pub fn decode(view: &BatchView<'_>, index: u64) -> io::Result<Entry> {
    let id = log_id(view.partition_leader_epoch(), index);
    let data = view
        .records_data(DECOMPRESSED_BATCH_BYTES_MAX)
        .map_err(|e| invalid(format!("entry {index}: {e}")))?;
    let count = view.records_count();
    let mut values: Vec<Option<Bytes>> = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut first_key: Option<Vec<u8>> = None;
    for (i, rec) in skiff_record::records(&data, count).enumerate() {
        let rec = rec.map_err(|e| invalid(format!("entry {index}: {e}")))?;
        if i == 0 {
            first_key = rec.key.map(<[u8]>::to_vec);
        }
        values.push(rec.value.map(Bytes::copy_from_slice));
    }
    if view.is_control() {
        let (Some(key), [Some(value)]) = (first_key, values.as_slice()) else {
            return Err(invalid(format!(
                "entry {index}: a control batch must hold one keyed record with a value"
            )));
        };
        if key.len() < 4 {
            return Err(invalid(format!("entry {index}: short control key")));
        }
        let kind = i16::from_be_bytes([key[2], key[3]]);
        return match kind {
            LEADER_CHANGE_TYPE => Ok(Entry::new_blank(id)),
            SKIFF_MEMBERSHIP_TYPE => {
                let m: Membership = serde_json::from_slice(value)
                    .map_err(|e| invalid(format!("entry {index}: membership: {e}")))?;
                Ok(Entry::new_membership(id, m))
            }
            other => Err(invalid(format!(
                "entry {index}: unknown control record type {other}"
            ))),
        };
    }
    if let [None] = values.as_slice() {
        return Ok(Entry::new_normal(id, Op(Vec::new())));
    }
    let op = values
        .into_iter()
        .map(|v| v.ok_or_else(|| invalid(format!("entry {index}: a null record value"))))
        .collect::<io::Result<Vec<Bytes>>>()?;
    if op.is_empty() {
        return Err(invalid(format!("entry {index}: an empty batch")));
    }
    Ok(Entry::new_normal(id, Op(op)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::types::NodeId;

    fn roundtrip(e: &Entry) -> Entry {
        let bytes = encode(e, Some(3), 1_000).unwrap();
        let view = BatchView::new(&bytes).unwrap();
        view.verify_crc().unwrap();
        decode(&view, e.log_id.index).unwrap()
    }

    #[test]
    fn every_payload_roundtrips() {
        let normal = Entry::new_normal(
            log_id(4, 7),
            Op(vec![Bytes::from_static(b"a"), Bytes::from_static(b"bc")]),
        );
        let empty = Entry::new_normal(log_id(4, 8), Op(vec![]));
        let blank = Entry::new_blank(log_id(5, 9));
        let voters: BTreeSet<NodeId> = [NodeId(1), NodeId(2), NodeId(3)].into();
        let joint = Membership::new_with_defaults(vec![voters.clone(), [NodeId(4)].into()], []);
        let member = Entry::new_membership(log_id(5, 10), joint);
        for e in [normal, empty, blank, member] {
            assert_eq!(roundtrip(&e), e);
        }
    }

    #[test]
    fn blank_is_a_kraft_leader_change_control_batch() {
        let bytes = encode(&Entry::new_blank(log_id(6, 0)), Some(3), 0).unwrap();
        let view = BatchView::new(&bytes).unwrap();
        assert!(view.is_control());
        assert_eq!(view.partition_leader_epoch(), 6);
        let data = view.records_data(1 << 20).unwrap();
        let rec = skiff_record::records(&data, 1).next().unwrap().unwrap();
        assert_eq!(rec.key, Some(&[0u8, 0, 0, 2][..]));
        assert_eq!(rec.value, Some(&[0u8, 0, 0, 0, 0, 3, 1, 1, 0][..]));
    }
}
