//! `KafkaLogStore` across restarts: log state, vote, committed id and entries survive a reopen
//! of the same dir; a torn tail is truncated on open and never returned.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use bytes::Bytes;
use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, RaftLogReader, RaftLogStorage};
use skiff_raft::Epoch;
use skiff_raft::KafkaLogStore;
use skiff_raft::types::{Entry, LeaderId, Membership, NodeId, Op, Vote, log_id};
use skiff_types::clock::Clock;

fn open(dir: &Path) -> KafkaLogStore {
    KafkaLogStore::open(dir, Clock::manual(1_000)).unwrap()
}

fn op(i: u64) -> Op {
    Op(vec![
        Bytes::from(format!("rec-{i}-a")),
        Bytes::from(format!("rec-{i}-b")),
    ])
}

/// membership at 0 (term 1), blank at 1, normal entries 2..n (term 1, then term 2 from 5 on).
fn entries(n: u64) -> Vec<Entry> {
    let voters = [NodeId(1), NodeId(2), NodeId(3)].into();
    let mut out = vec![
        Entry::new_membership(
            log_id(1, 0),
            Membership::new_with_defaults(vec![voters], []),
        ),
        Entry::new_blank(log_id(1, 1)),
    ];
    for i in 2..n {
        let term = if i < 5 { 1 } else { 2 };
        out.push(Entry::new_normal(log_id(term, i), op(i)));
    }
    out
}

async fn append(store: &mut KafkaLogStore, entries: Vec<Entry>) {
    store.append(entries, IOFlushed::noop()).await.unwrap();
}

async fn all(store: &mut KafkaLogStore) -> Vec<Entry> {
    store.try_get_log_entries(..).await.unwrap()
}

fn segment_log(dir: &Path) -> PathBuf {
    dir.join(format!("{:020}.log", 0))
}

fn vote() -> Vote {
    Vote {
        leader_id: LeaderId {
            term: Epoch(2),
            voted_for: NodeId(3),
        },
        committed: true,
    }
}

#[tokio::test]
async fn state_survives_a_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("__cluster_metadata-0");
    let written = entries(10);
    {
        let mut s = open(&dir);
        append(&mut s, written.clone()).await;
        s.save_vote(&vote()).await.unwrap();
        s.save_committed(Some(log_id(2, 7))).await.unwrap();
        // Records are counted by Kafka offsets: 8 ops of 2 records after two control batches.
        assert_eq!(s.base_offset_of(9), Some(2 + 7 * 2));
        let (_, leo, hw) = s.offsets();
        assert_eq!(
            (leo, hw),
            (2 + 8 * 2, 2 + 6 * 2),
            "HW = end of committed entry 7"
        );
        // dropped without close: like a crash after the fsyncs
    }
    let mut s = open(&dir);
    let st = s.get_log_state().await.unwrap();
    assert_eq!(st.last_log_id, Some(log_id(2, 9)));
    assert_eq!(st.last_purged_log_id, None);
    assert_eq!(s.read_vote().await.unwrap(), Some(vote()));
    assert_eq!(s.read_committed().await.unwrap(), Some(log_id(2, 7)));
    assert_eq!(all(&mut s).await, written);
    assert_eq!(
        s.try_get_log_entries(3..5).await.unwrap(),
        written[3..5].to_vec()
    );
    assert_eq!(s.offsets().2, 2 + 6 * 2, "HW restored from raft-committed");
}

#[tokio::test]
async fn torn_tail_is_truncated_on_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("__cluster_metadata-0");
    let written = entries(8);
    {
        let mut s = open(&dir);
        append(&mut s, written.clone()).await;
        s.close().unwrap();
    }
    // Cut the last batch in half.
    let path = segment_log(&dir);
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 20).unwrap();
    drop(f);

    let mut s = open(&dir);
    let st = s.get_log_state().await.unwrap();
    assert_eq!(st.last_log_id, Some(log_id(2, 6)), "entry 7 was torn");
    assert_eq!(all(&mut s).await, written[..7].to_vec());
    // The log goes on from the cut, and the new entry reads back after another reopen.
    let next = Entry::new_normal(log_id(3, 7), op(70));
    append(&mut s, vec![next.clone()]).await;
    drop(s);
    let mut s = open(&dir);
    let mut want = written[..7].to_vec();
    want.push(next);
    assert_eq!(all(&mut s).await, want);
}

#[tokio::test]
async fn truncate_and_purge_survive_a_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("__cluster_metadata-0");
    let written = entries(10);
    {
        let mut s = open(&dir);
        append(&mut s, written.clone()).await;
        s.truncate_after(Some(log_id(2, 6))).await.unwrap();
        let replaced = Entry::new_normal(log_id(3, 7), op(77));
        append(&mut s, vec![replaced]).await;
        s.purge(log_id(1, 3)).await.unwrap();
        let st = s.get_log_state().await.unwrap();
        assert_eq!(st.last_purged_log_id, Some(log_id(1, 3)));
        assert_eq!(st.last_log_id, Some(log_id(3, 7)));
    }
    let mut s = open(&dir);
    let st = s.get_log_state().await.unwrap();
    assert_eq!(st.last_purged_log_id, Some(log_id(1, 3)));
    assert_eq!(st.last_log_id, Some(log_id(3, 7)));
    let got = all(&mut s).await;
    let mut want = written[4..7].to_vec();
    want.push(Entry::new_normal(log_id(3, 7), op(77)));
    assert_eq!(got, want);
    let (start, _, _) = s.offsets();
    assert_eq!(Some(start), s.base_offset_of(4), "log start at entry 4");

    // Purge past the end: the log is empty and the next entry follows the purged id.
    s.purge(log_id(3, 9)).await.unwrap();
    let next = Entry::new_normal(log_id(3, 10), op(10));
    append(&mut s, vec![next.clone()]).await;
    drop(s);
    let mut s = open(&dir);
    let st = s.get_log_state().await.unwrap();
    assert_eq!(st.last_purged_log_id, Some(log_id(3, 9)));
    assert_eq!(all(&mut s).await, vec![next]);
}
