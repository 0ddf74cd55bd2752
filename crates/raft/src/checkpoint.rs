//! Metadata snapshots as KRaft `.checkpoint` files (issue 16 item 1): the file format both ways
//! and the files in the `__cluster_metadata-0` dir.
//!
//! Mental model: a snapshot is the metadata image at one applied Raft entry, written as the
//! records that rebuild it (`skiff_metadata::snapshot::image_records`) in Kafka's v2 batch
//! format, as KRaft writes `<endOffset:020>-<epoch:010>.checkpoint`: `endOffset` is the Kafka
//! offset after the last entry it covers (where the log continues), `epoch` that entry's term.
//! Batches are numbered from offset 0 and every batch carries the epoch as its
//! `partitionLeaderEpoch`:
//!
//! | batch | contents |
//! |---|---|
//! | control | one `SnapshotHeaderRecord` v0 (control type 3): version 0, the last contained timestamp |
//! | control | one Skiff record (control type [`SKIFF_SNAPSHOT_META_TYPE`]): JSON `{"lastLogId":…, "lastMembership":…, "endOffset":…}`, openraft's snapshot meta (the Raft index is not a Kafka offset, and openraft's membership has joint configs: see codec.rs) |
//! | data × n | the image's KRaft-framed records, at most [`RECORDS_PER_BATCH`] per batch |
//! | control | one `SnapshotFooterRecord` v0 (control type 4) |
//!
//! The whole file is what a leader sends a lagging voter (openraft's full snapshot) and what a
//! voter sends an observer whose next entry was purged; the receiver checks it exactly as a
//! file read from disk is checked.
//!
//! Invariants: [`decode`] is strict (every CRC, contiguous offsets from 0, one epoch, header
//! first, meta second, footer last and nothing after it, an end offset and epoch that agree
//! with the meta), so a torn or foreign file is an error, never a partial image; files are
//! written with `write_atomic` (tmp + fsync + rename + dir fsync) and only the newest
//! [`KEEP_FILES`] are kept.

use std::io;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use skiff_record::{BatchBuilder, BatchOptions, BatchView};
use skiff_storage::checkpoint::write_atomic;
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

use crate::codec::invalid;
use crate::types::{LogId, StoredMembership};

/// KRaft's `ControlRecordType.SNAPSHOT_HEADER`.
pub const SNAPSHOT_HEADER_TYPE: i16 = 3;
/// KRaft's `ControlRecordType.SNAPSHOT_FOOTER`.
pub const SNAPSHOT_FOOTER_TYPE: i16 = 4;
/// Skiff's control record type for openraft's snapshot meta (outside Kafka's 0-6).
pub const SKIFF_SNAPSHOT_META_TYPE: i16 = 0x5302;
/// Data records per batch.
pub const RECORDS_PER_BATCH: usize = 1000;
/// Snapshot files kept in the dir (the newest ones).
pub const KEEP_FILES: usize = 2;
/// A snapshot file's suffix, as in KRaft.
pub const SUFFIX: &str = ".checkpoint";

/// openraft's snapshot meta.
pub type Meta = openraft::SnapshotMeta<
    openraft::vote::leader_id_std::CommittedLeaderId<crate::types::Epoch>,
    crate::types::NodeId,
    openraft::impls::BasicNode,
>;

/// A snapshot's identity: KRaft's `OffsetAndEpoch` (the file name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SnapshotId {
    pub end_offset: i64,
    pub epoch: i32,
}

impl SnapshotId {
    /// `<endOffset:020>-<epoch:010>.checkpoint`
    pub fn file_name(&self) -> String {
        format!("{:020}-{:010}{SUFFIX}", self.end_offset, self.epoch)
    }

    /// The id a file name stands for; `None` for any other name.
    pub fn parse(name: &str) -> Option<SnapshotId> {
        let stem = name.strip_suffix(SUFFIX)?;
        let (end, epoch) = stem.split_once('-')?;
        if end.len() != 20 || epoch.len() != 10 {
            return None;
        }
        Some(SnapshotId {
            end_offset: end.parse().ok()?,
            epoch: epoch.parse().ok()?,
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaJson {
    last_log_id: LogId,
    last_membership: StoredMembership,
    end_offset: i64,
}

/// A decoded snapshot: openraft's meta, its id, and the image's KRaft-framed records.
#[derive(Debug)]
pub struct Decoded {
    pub meta: Meta,
    pub id: SnapshotId,
    pub records: Vec<Bytes>,
}

fn control_key(kind: i16) -> [u8; 4] {
    let t = kind.to_be_bytes();
    [0, 0, t[0], t[1]]
}

/// Encodes a snapshot of the entry `meta.last_log_id` (which must be set), whose log continues
/// at `end_offset`, holding `records`.
pub fn encode(
    meta: &Meta,
    end_offset: i64,
    records: &[Bytes],
    now_ms: i64,
) -> io::Result<(SnapshotId, Vec<u8>)> {
    let last = meta
        .last_log_id
        .ok_or_else(|| invalid("a snapshot of an empty state machine"))?;
    let epoch = last.leader_id.term.0;
    let id = SnapshotId { end_offset, epoch };
    let mut out = Vec::new();
    let mut offset = 0i64;
    let mut push = |control: bool, values: &[(Option<[u8; 4]>, &[u8])]| -> io::Result<()> {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset: offset,
            partition_leader_epoch: epoch,
            is_control: control,
            ..BatchOptions::default()
        });
        for (key, value) in values {
            b.append(now_ms, key.as_ref().map(|k| &k[..]), Some(value), &[]);
        }
        let bytes = b
            .build()
            .map_err(|e| invalid(format!("building a snapshot batch: {e}")))?;
        offset += values.len() as i64;
        out.extend_from_slice(&bytes);
        Ok(())
    };
    // SnapshotHeaderRecord v0 (flexible): Version, LastContainedLogTimestamp, no tagged fields.
    let mut header = Vec::with_capacity(11);
    header.extend_from_slice(&0i16.to_be_bytes());
    header.extend_from_slice(&now_ms.to_be_bytes());
    header.push(0);
    push(true, &[(Some(control_key(SNAPSHOT_HEADER_TYPE)), &header)])?;
    let meta_json = serde_json::to_vec(&MetaJson {
        last_log_id: last,
        last_membership: meta.last_membership.clone(),
        end_offset,
    })
    .map_err(|e| invalid(format!("snapshot meta: {e}")))?;
    push(
        true,
        &[(Some(control_key(SKIFF_SNAPSHOT_META_TYPE)), &meta_json)],
    )?;
    for chunk in records.chunks(RECORDS_PER_BATCH) {
        let values: Vec<(Option<[u8; 4]>, &[u8])> =
            chunk.iter().map(|r| (None, r.as_ref())).collect();
        push(false, &values)?;
    }
    // SnapshotFooterRecord v0 (flexible): Version, no tagged fields.
    let footer = [0u8, 0, 0];
    push(true, &[(Some(control_key(SNAPSHOT_FOOTER_TYPE)), &footer)])?;
    Ok((id, out))
}

/// One control batch's type and value (it must hold exactly one keyed record).
fn control_record(view: &BatchView<'_>) -> io::Result<(i16, Vec<u8>)> {
    let data = view
        .records_data(DECOMPRESSED_BATCH_BYTES_MAX)
        .map_err(|e| invalid(format!("snapshot control batch: {e}")))?;
    let mut it = skiff_record::records(&data, view.records_count());
    let rec = match (it.next(), it.next()) {
        (Some(Ok(r)), None) => r,
        _ => return Err(invalid("a snapshot control batch must hold one record")),
    };
    match (rec.key, rec.value) {
        (Some(k), Some(v)) if k.len() >= 4 => Ok((i16::from_be_bytes([k[2], k[3]]), v.to_vec())),
        _ => Err(invalid(
            "a snapshot control record without a key or a value",
        )),
    }
}

/// Decodes and checks a snapshot (see the module docs for what is checked).
pub fn decode(bytes: &[u8]) -> io::Result<Decoded> {
    let mut expect_offset = 0i64;
    let mut epoch: Option<i32> = None;
    let mut meta: Option<MetaJson> = None;
    let mut records = Vec::new();
    let mut stage = 0u8; // 0: header next, 1: meta next, 2: data or footer, 3: after the footer
    for batch in skiff_record::batches(bytes) {
        let (_, view) = batch.map_err(|e| invalid(format!("snapshot: {e}")))?;
        view.verify_crc().map_err(|e| {
            invalid(format!(
                "snapshot batch at offset {}: {e}",
                view.base_offset()
            ))
        })?;
        if view.base_offset() != expect_offset {
            return Err(invalid(format!(
                "snapshot batch at offset {} where {expect_offset} was expected",
                view.base_offset()
            )));
        }
        expect_offset = view.next_offset();
        if *epoch.get_or_insert(view.partition_leader_epoch()) != view.partition_leader_epoch() {
            return Err(invalid("snapshot batches of different epochs"));
        }
        match (stage, view.is_control()) {
            (3, _) => return Err(invalid("a batch after the snapshot footer")),
            (0 | 1, false) => return Err(invalid("snapshot data before its header and meta")),
            (0, true) => match control_record(&view)? {
                (SNAPSHOT_HEADER_TYPE, _) => stage = 1,
                (t, _) => return Err(invalid(format!("snapshot starts with control type {t}"))),
            },
            (1, true) => match control_record(&view)? {
                (SKIFF_SNAPSHOT_META_TYPE, v) => {
                    meta = Some(
                        serde_json::from_slice(&v)
                            .map_err(|e| invalid(format!("snapshot meta: {e}")))?,
                    );
                    stage = 2;
                }
                (t, _) => return Err(invalid(format!("snapshot meta expected, control type {t}"))),
            },
            (_, true) => match control_record(&view)? {
                (SNAPSHOT_FOOTER_TYPE, _) => stage = 3,
                (t, _) => return Err(invalid(format!("unexpected snapshot control type {t}"))),
            },
            (_, false) => {
                let data = view
                    .records_data(DECOMPRESSED_BATCH_BYTES_MAX)
                    .map_err(|e| invalid(format!("snapshot: {e}")))?;
                for rec in skiff_record::records(&data, view.records_count()) {
                    let rec = rec.map_err(|e| invalid(format!("snapshot record: {e}")))?;
                    let value = rec
                        .value
                        .ok_or_else(|| invalid("a snapshot record without a value"))?;
                    records.push(Bytes::copy_from_slice(value));
                }
            }
        }
    }
    if stage != 3 {
        return Err(invalid("the snapshot ends before its footer"));
    }
    let (Some(m), Some(epoch)) = (meta, epoch) else {
        return Err(invalid("the snapshot has no meta"));
    };
    if m.last_log_id.leader_id.term.0 != epoch {
        return Err(invalid(format!(
            "snapshot of epoch {epoch} whose last entry has term {}",
            m.last_log_id.leader_id.term.0
        )));
    }
    Ok(Decoded {
        id: SnapshotId {
            end_offset: m.end_offset,
            epoch,
        },
        meta: Meta {
            last_log_id: Some(m.last_log_id),
            last_membership: m.last_membership,
        },
        records,
    })
}

/// The snapshot files in `dir`, oldest first.
pub fn list(dir: &Path) -> io::Result<Vec<(SnapshotId, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if let Some(id) = name.to_str().and_then(SnapshotId::parse) {
            out.push((id, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Writes a snapshot (durably, atomically) unless a file of that id exists, then removes all
/// but the newest [`KEEP_FILES`].
pub fn write(dir: &Path, id: SnapshotId, bytes: &[u8]) -> io::Result<PathBuf> {
    let path = dir.join(id.file_name());
    if !path.exists() {
        write_atomic(&path, bytes)?;
    }
    let files = list(dir)?;
    let excess = files.len().saturating_sub(KEEP_FILES);
    for (old, p) in files.into_iter().take(excess) {
        if old != id {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(path)
}

/// The newest snapshot file in `dir`, read and checked; `None` when there is none.
pub fn latest(dir: &Path) -> io::Result<Option<(Decoded, Vec<u8>)>> {
    let Some((id, path)) = list(dir)?.pop() else {
        return Ok(None);
    };
    let bytes = std::fs::read(&path)?;
    let decoded = decode(&bytes).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    if decoded.id != id {
        return Err(invalid(format!(
            "{}: the file holds snapshot {:?}",
            path.display(),
            decoded.id
        )));
    }
    Ok(Some((decoded, bytes)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::types::{Membership, NodeId, log_id};

    fn meta(term: i32, index: u64) -> Meta {
        let voters: BTreeSet<NodeId> = [NodeId(1), NodeId(2), NodeId(3)].into();
        Meta {
            last_log_id: Some(log_id(term, index)),
            last_membership: StoredMembership::new(
                Some(log_id(1, 0)),
                Membership::new_with_defaults(vec![voters], []),
            ),
        }
    }

    #[test]
    fn a_snapshot_roundtrips_and_is_named_as_kraft_names_it() {
        let records: Vec<Bytes> = (0..2500u32)
            .map(|i| Bytes::from(i.to_be_bytes().to_vec()))
            .collect();
        let (id, bytes) = encode(&meta(7, 41), 1234, &records, 99).unwrap();
        assert_eq!(id.file_name(), "00000000000000001234-0000000007.checkpoint");
        assert_eq!(SnapshotId::parse(&id.file_name()), Some(id));
        let d = decode(&bytes).unwrap();
        assert_eq!(d.id, id);
        assert_eq!(d.meta, meta(7, 41));
        assert_eq!(d.records, records);
        // header, meta, 3 data batches, footer; offsets contiguous from 0.
        let views: Vec<_> = skiff_record::batches(&bytes)
            .map(|b| b.unwrap().1)
            .collect();
        assert_eq!(views.len(), 6);
        assert_eq!(views[0].base_offset(), 0);
        assert!(views[0].is_control() && views[5].is_control());
        assert_eq!(views[5].base_offset(), 2502);
        assert!(views.iter().all(|v| v.partition_leader_epoch() == 7));
        // The meta record's JSON, as docs/formats/raft-log.md shows it.
        let data = views[1].records_data(1 << 20).unwrap();
        let rec = skiff_record::records(&data, 1).next().unwrap().unwrap();
        let json = String::from_utf8(rec.value.unwrap().to_vec()).unwrap();
        assert!(
            json.starts_with(
                r#"{"lastLogId":{"leader_id":7,"index":41},"lastMembership":{"log_id":"#
            ) && json.ends_with(r#","endOffset":1234}"#),
            "{json}"
        );
    }

    #[test]
    fn a_damaged_snapshot_is_refused() {
        let records = vec![Bytes::from_static(b"abc"); 3];
        let (_, bytes) = encode(&meta(2, 5), 10, &records, 1).unwrap();
        // A torn file (footer missing), a flipped byte, trailing garbage.
        let mut flipped = bytes.clone();
        let at = flipped.len() / 2;
        flipped[at] ^= 0x40;
        let mut trailing = bytes.clone();
        trailing.extend_from_slice(&bytes[..80]);
        for (what, b) in [
            ("torn", &bytes[..bytes.len() - 10]),
            ("flipped", &flipped[..]),
            ("trailing", &trailing[..]),
        ] {
            assert!(decode(b).is_err(), "{what} accepted");
        }
    }

    #[test]
    fn only_the_newest_files_are_kept() {
        let tmp = tempfile::tempdir().unwrap();
        for (end, term) in [(10, 1), (20, 1), (30, 2)] {
            let (id, bytes) = encode(&meta(term, end as u64), end, &[], 0).unwrap();
            write(tmp.path(), id, &bytes).unwrap();
        }
        let ids: Vec<i64> = list(tmp.path())
            .unwrap()
            .iter()
            .map(|(id, _)| id.end_offset)
            .collect();
        assert_eq!(ids, vec![20, 30]);
        let (d, _) = latest(tmp.path()).unwrap().unwrap();
        assert_eq!(d.id.end_offset, 30);
        assert_eq!(d.meta.last_log_id, Some(log_id(2, 30)));
    }
}
