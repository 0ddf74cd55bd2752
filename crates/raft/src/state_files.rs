//! The small files beside the Raft log in the partition dir, each replaced atomically
//! (`skiff_storage::checkpoint::write_atomic`: tmp + fsync + rename + dir fsync).
//!
//! - `quorum-state` (Kafka's `FileQuorumStateStore.DEFAULT_FILE_NAME`): the vote, as JSON in
//!   the shape of KRaft's `QuorumStateData` v1 plus Kafka's `data_version` field:
//!   `{"leaderId":L,"leaderEpoch":E,"votedId":V,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`.
//!   openraft's vote `(term, node, committed)` maps to `leaderEpoch = term`, `votedId = node`,
//!   and `leaderId = node` when the vote is committed (a known leader), else -1. Reading is the
//!   inverse; `leaderId` wins when both are set.
//! - `raft-committed`: the last committed log id, `{"term":T,"index":I}` or `null`. Only an
//!   optimisation (a restart re-applies up to it without waiting for the quorum), so it may lag.
//! - `raft-log-start`: where the entries on disk begin: `{"startIndex":I,"startOffset":O,
//!   "purged":{"term":T,"index":I}|null}`. The batch at or after Kafka offset `startOffset` is
//!   entry `startIndex`; `purged` is openraft's last purged log id. Written before the log start
//!   moves (purge) and when the first entry of an empty log does not follow the purged one.
//!
//! Invariant: a missing file is the initial state; a present file that does not parse is an
//! error (`InvalidData`), never silently the initial state: a lost vote could vote twice.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use skiff_storage::checkpoint::write_atomic;

use crate::codec::invalid;
use crate::types::{Epoch, LeaderId, LogId, NodeId, Vote, log_id};

pub const QUORUM_STATE_FILE: &str = "quorum-state";
pub const COMMITTED_FILE: &str = "raft-committed";
pub const LOG_START_FILE: &str = "raft-log-start";

/// Kafka's `Uuid.ZERO_UUID` in its base64 form (no directory id: Skiff has one log dir here).
const ZERO_UUID: &str = "AAAAAAAAAAAAAAAAAAAAAA";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct QuorumStateJson {
    leader_id: i32,
    leader_epoch: i32,
    voted_id: i32,
    #[serde(default)]
    voted_directory_id: Option<String>,
    #[serde(rename = "data_version", default)]
    data_version: i16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct LogIdJson {
    term: i32,
    index: u64,
}

impl From<&LogId> for LogIdJson {
    fn from(id: &LogId) -> Self {
        LogIdJson {
            term: id.leader_id.term.0,
            index: id.index,
        }
    }
}

/// Where the entries on disk begin (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogStart {
    pub start_index: u64,
    pub start_offset: i64,
    pub purged: Option<LogId>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogStartJson {
    start_index: u64,
    start_offset: i64,
    purged: Option<LogIdJson>,
}

fn read_opt(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, bytes: &[u8]) -> io::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| invalid(format!("{}: {e}", path.display())))
}

fn to_json<T: Serialize>(v: &T) -> io::Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| invalid(e.to_string()))
}

/// The three files of one partition dir.
#[derive(Clone, Debug)]
pub struct StateFiles {
    dir: PathBuf,
}

impl StateFiles {
    pub fn new(dir: &Path) -> Self {
        StateFiles {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn read_vote(&self) -> io::Result<Option<Vote>> {
        let path = self.path(QUORUM_STATE_FILE);
        let Some(bytes) = read_opt(&path)? else {
            return Ok(None);
        };
        let q: QuorumStateJson = parse(&path, &bytes)?;
        let (node, committed) = if q.leader_id >= 0 {
            (q.leader_id, true)
        } else if q.voted_id >= 0 {
            (q.voted_id, false)
        } else {
            return Err(invalid(format!(
                "{}: neither leaderId nor votedId is set",
                path.display()
            )));
        };
        Ok(Some(Vote {
            leader_id: LeaderId {
                term: Epoch(q.leader_epoch),
                voted_for: NodeId(node),
            },
            committed,
        }))
    }

    /// The JSON of `vote` (see the module docs).
    pub fn vote_json(vote: &Vote) -> io::Result<Vec<u8>> {
        let node = vote.leader_id.voted_for.0;
        to_json(&QuorumStateJson {
            leader_id: if vote.committed { node } else { -1 },
            leader_epoch: vote.leader_id.term.0,
            voted_id: node,
            voted_directory_id: Some(ZERO_UUID.to_string()),
            data_version: 1,
        })
    }

    /// Path and content for a `quorum-state` write (done by the caller off the async thread).
    pub fn vote_write(&self, vote: &Vote) -> io::Result<(PathBuf, Vec<u8>)> {
        Ok((self.path(QUORUM_STATE_FILE), Self::vote_json(vote)?))
    }

    pub fn read_committed(&self) -> io::Result<Option<LogId>> {
        let path = self.path(COMMITTED_FILE);
        let Some(bytes) = read_opt(&path)? else {
            return Ok(None);
        };
        let c: Option<LogIdJson> = parse(&path, &bytes)?;
        Ok(c.map(|c| log_id(c.term, c.index)))
    }

    pub fn committed_write(&self, committed: Option<&LogId>) -> io::Result<(PathBuf, Vec<u8>)> {
        let c: Option<LogIdJson> = committed.map(LogIdJson::from);
        Ok((self.path(COMMITTED_FILE), to_json(&c)?))
    }

    pub fn read_log_start(&self) -> io::Result<Option<LogStart>> {
        let path = self.path(LOG_START_FILE);
        let Some(bytes) = read_opt(&path)? else {
            return Ok(None);
        };
        let s: LogStartJson = parse(&path, &bytes)?;
        Ok(Some(LogStart {
            start_index: s.start_index,
            start_offset: s.start_offset,
            purged: s.purged.map(|p| log_id(p.term, p.index)),
        }))
    }

    /// Writes `raft-log-start` durably (inline: it is rare, at purge and first append).
    pub fn write_log_start(&self, s: &LogStart) -> io::Result<()> {
        let json = to_json(&LogStartJson {
            start_index: s.start_index,
            start_offset: s.start_offset,
            purged: s.purged.as_ref().map(LogIdJson::from),
        })?;
        write_atomic(&self.path(LOG_START_FILE), &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vote_is_quorum_state_shaped_and_roundtrips() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFiles::new(dir.path());
        assert_eq!(f.read_vote().unwrap(), None);
        for committed in [false, true] {
            let v = Vote {
                leader_id: LeaderId {
                    term: Epoch(7),
                    voted_for: NodeId(2),
                },
                committed,
            };
            let (path, json) = f.vote_write(&v).unwrap();
            write_atomic(&path, &json).unwrap();
            assert_eq!(f.read_vote().unwrap(), Some(v));
            let text = String::from_utf8(json).unwrap();
            let leader = if committed { 2 } else { -1 };
            assert_eq!(
                text,
                format!(
                    r#"{{"leaderId":{leader},"leaderEpoch":7,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}}"#
                )
            );
        }
        std::fs::write(dir.path().join(QUORUM_STATE_FILE), b"{").unwrap();
        assert!(f.read_vote().is_err(), "a torn vote file is an error");
    }

    #[test]
    fn committed_and_log_start_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFiles::new(dir.path());
        assert_eq!(f.read_committed().unwrap(), None);
        let (p, j) = f.committed_write(Some(&log_id(3, 9))).unwrap();
        write_atomic(&p, &j).unwrap();
        assert_eq!(f.read_committed().unwrap(), Some(log_id(3, 9)));
        let s = LogStart {
            start_index: 5,
            start_offset: 12,
            purged: Some(log_id(2, 4)),
        };
        f.write_log_start(&s).unwrap();
        assert_eq!(f.read_log_start().unwrap(), Some(s));
    }
}
