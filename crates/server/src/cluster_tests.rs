//! Which metadata log a node opens: [`keeps_local_metadata_log`] over role sets and the files
//! found in the metadata dir, one row each.

use super::*;
use crate::settings::{ElectionSettings, SnapshotSettings};

fn quorum(broker: bool, voter: bool, voters: usize) -> QuorumSettings {
    QuorumSettings {
        voters: (1..=voters)
            .map(|i| (i as i32, "127.0.0.1".to_string(), 9093))
            .collect(),
        election_timeout_ms: 1000,
        heartbeat_interval_ms: 2000,
        session_timeout_ms: 9000,
        broker,
        voter,
        snapshots: SnapshotSettings::default(),
        fetcher: crate::replica::fetcher::FetcherSettings::default(),
        elections: ElectionSettings::default(),
    }
}

const SEGMENT: &str = "00000000000000000000.log";

/// (what, broker, voter, voters, files in the metadata dir as (name, bytes), keeps local).
type Row = (
    &'static str,
    bool,
    bool,
    usize,
    &'static [(&'static str, usize)],
    bool,
);

#[test]
fn a_single_combined_voter_keeps_only_an_earlier_local_log() {
    let rows: &[Row] = &[
        ("fresh dir", true, true, 1, &[], false),
        ("empty segment", true, true, 1, &[(SEGMENT, 0)], false),
        ("local log", true, true, 1, &[(SEGMENT, 80)], true),
        (
            "raft log (vote)",
            true,
            true,
            1,
            &[(SEGMENT, 80), ("quorum-state", 10)],
            false,
        ),
        (
            "raft log (log start)",
            true,
            true,
            1,
            &[(SEGMENT, 80), ("raft-log-start", 10)],
            false,
        ),
        (
            "raft log (committed)",
            true,
            true,
            1,
            &[(SEGMENT, 80), ("raft-committed", 10)],
            false,
        ),
        ("several voters", true, true, 3, &[(SEGMENT, 80)], false),
        ("controller-only", false, true, 1, &[(SEGMENT, 80)], false),
        ("broker-only", true, false, 1, &[(SEGMENT, 80)], false),
    ];
    for (what, broker, voter, voters, files, want) in rows {
        let dir = tempfile::tempdir().unwrap();
        for (name, len) in *files {
            std::fs::write(dir.path().join(name), vec![0u8; *len]).unwrap();
        }
        let q = quorum(*broker, *voter, *voters);
        assert_eq!(keeps_local_metadata_log(&q, dir.path()), *want, "{what}");
    }
    let missing = std::path::Path::new("/nonexistent/__cluster_metadata-0");
    assert!(!keeps_local_metadata_log(&quorum(true, true, 1), missing));
}
