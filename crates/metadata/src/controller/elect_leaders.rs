//! Leader elections asked for, or run periodically, at the active controller (Kafka 4.x's
//! `ReplicationControlManager.electLeaders` / `electLeader`, `maybeBalancePartitionLeaders`
//! and `maybeElectUncleanLeaders`, metadata version 4.0-IV0: no ELR).
//!
//! Mental model: each is a loop over partitions that runs one election per partition
//! (`election.rs`) against the committed image and collects the `PartitionChangeRecord`s;
//! the caller commits them as one batch. Who may lead is Kafka's `LeaderAcceptor`: an active
//! broker (registered, unfenced, not in controlled shutdown) whose replica's log dir is not
//! known to be offline.
//!
//! ElectLeaders (API 43), per partition, in Kafka's order: unknown topic ("No such topic as
//! t") or partition ("No such partition as t-p") -> UNKNOWN_TOPIC_OR_PARTITION; PREFERRED
//! with the first replica already leading, or UNCLEAN with a leader -> ELECTION_NOT_NEEDED;
//! else a PREFERRED (UNCLEAN) election that changes nothing -> PREFERRED_LEADER_NOT_AVAILABLE
//! (ELIGIBLE_LEADERS_NOT_AVAILABLE), one that changes the partition -> NONE. An election type
//! other than 0 or 1 fails the whole request (INVALID_REQUEST "Unknown election type N"); an
//! empty partition list answers nothing and writes nothing (Kafka's `QuorumController`); a
//! null list means every partition of every topic, each topic listed (name order) with the
//! partitions that were not ELECTION_NOT_NEEDED.
//!
//! Automatic leader balancing (`auto.leader.rebalance.enable`, every
//! `leader.imbalance.check.interval.seconds`): a PREFERRED election for every partition whose
//! leader is not its first replica (leaderless ones included), at most `max` records per
//! run; `more` tells the caller to run again at once. Kafka 4.x does not weigh brokers: its
//! `leader.imbalance.per.broker.percentage` was ZooKeeper-only and is gone (KAFKA-18743).
//!
//! Unclean sweep (Kafka's `unclean.leader.election.interval.ms`, 5 min): an UNCLEAN election
//! for every leaderless partition whose topic allows it (`election::unclean_enabled`), at
//! most `max` records per run. It catches partitions whose topic was allowed unclean
//! elections after they went offline (fencing and unfencing already elect uncleanly when
//! allowed).
//!
//! Invariants: the response describes exactly what replaying the records exposes; a
//! partition gets at most one record per request (a partition listed twice is elected
//! against the state its first entry left: ELECTION_NOT_NEEDED the second time, where Kafka
//! would write the same change twice); no record changes anything but the leader, the ISR
//! (unclean only) and the leader recovery state.
//!
//! Differences from Kafka: partitions are visited in topic-name then partition-id order
//! (Kafka's hash order), so the records are deterministic.

use std::collections::{BTreeMap, BTreeSet};

use skiff_types::ErrorCode;

use crate::MetadataError;
use crate::controller::Response;
use crate::controller::election::{Election, ElectionConfig, partition_change, unclean_enabled};
use crate::controller::leadership::is_active;
use crate::frame::Record;
use crate::image::{MetadataImage, NO_LEADER, PartitionInfo, TopicId};

/// `ElectionType.PREFERRED` on the wire.
pub const ELECTION_PREFERRED: i8 = 0;
/// `ElectionType.UNCLEAN` on the wire.
pub const ELECTION_UNCLEAN: i8 = 1;
/// Kafka's `MAX_ELECTIONS_PER_IMBALANCE`: records per balancing or unclean-sweep run.
pub const MAX_ELECTIONS_PER_RUN: usize = 1000;

/// Replicas known to be on an offline log dir: (topic, partition, broker id). They may not
/// lead, and a leader among them counts as no leader (Kafka's controller has moved it).
pub type OfflineReplicas = BTreeSet<(String, i32, i32)>;

/// One partition's answer to ElectLeaders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionElection {
    pub partition: i32,
    pub error: ErrorCode,
    /// Kafka's message: `None` on success.
    pub message: Option<String>,
}

/// One topic's answers, in request order (name order for a null request list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicElection {
    pub topic: String,
    pub partitions: Vec<PartitionElection>,
}

/// What a balancing or unclean-sweep run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElectionRun {
    /// Partitions whose leader changed.
    pub elected: usize,
    /// The run stopped at its bound: run again at once.
    pub more: bool,
}

/// Kafka's `ElectionType.valueOf`.
fn election_of(kind: i8) -> Result<Election, MetadataError> {
    match kind {
        ELECTION_PREFERRED => Ok(Election::Preferred),
        ELECTION_UNCLEAN => Ok(Election::Unclean),
        _ => Err(MetadataError::InvalidRequest(format!(
            "Unknown election type {kind}"
        ))),
    }
}

/// A partition's registration as elections see it: a leader on an offline dir is no leader.
fn effective(
    topic: &str,
    partition: i32,
    p: &PartitionInfo,
    offline: &OfflineReplicas,
) -> PartitionInfo {
    let mut p = p.clone();
    if offline.contains(&(topic.to_string(), partition, p.leader)) {
        p.leader = NO_LEADER;
    }
    p
}

/// The ElectLeaders request (module docs): the records and the per-topic answers.
pub(crate) fn elect_leaders(
    image: &MetadataImage,
    election_type: i8,
    partitions: Option<&[(String, Vec<i32>)]>,
    offline: &OfflineReplicas,
) -> Result<(Vec<Record>, Response), MetadataError> {
    let election = election_of(election_type)?;
    let mut state = Elections {
        image,
        offline,
        changed: BTreeMap::new(),
        records: Vec::new(),
    };
    let answers = match partitions {
        None => image
            .topics
            .values()
            .map(|t| TopicElection {
                topic: t.name.clone(),
                partitions: image
                    .partitions(&t.name)
                    .map(|(p, _)| state.elect(&t.name, p, election))
                    .filter(|r| r.error != ErrorCode::ElectionNotNeeded)
                    .collect(),
            })
            .collect(),
        Some(list) => list
            .iter()
            .map(|(topic, ps)| TopicElection {
                topic: topic.clone(),
                partitions: ps
                    .iter()
                    .map(|p| state.elect(topic, *p, election))
                    .collect(),
            })
            .collect(),
    };
    Ok((state.records, Response::ElectLeaders(answers)))
}

/// One ElectLeaders request's progress: the partitions it changed, as they will replay.
struct Elections<'a> {
    image: &'a MetadataImage,
    offline: &'a OfflineReplicas,
    changed: BTreeMap<(TopicId, i32), PartitionInfo>,
    records: Vec<Record>,
}

impl Elections<'_> {
    /// Kafka's `electLeader` for one partition.
    fn elect(&mut self, topic: &str, partition: i32, election: Election) -> PartitionElection {
        let answer = |error: ErrorCode, message: Option<String>| PartitionElection {
            partition,
            error,
            message,
        };
        let Some(t) = self.image.topic(topic) else {
            return answer(
                ErrorCode::UnknownTopicOrPartition,
                Some(format!("No such topic as {topic}")),
            );
        };
        let key = (t.id, partition);
        let Some(registered) = self
            .changed
            .get(&key)
            .or_else(|| self.image.partition(topic, partition))
            .cloned()
        else {
            return answer(
                ErrorCode::UnknownTopicOrPartition,
                Some(format!("No such partition as {topic}-{partition}")),
            );
        };
        let p = effective(topic, partition, &registered, self.offline);
        let not_needed = match election {
            Election::Preferred => p.leader != NO_LEADER && p.replicas.first() == Some(&p.leader),
            _ => p.leader != NO_LEADER,
        };
        if not_needed {
            return answer(
                ErrorCode::ElectionNotNeeded,
                Some("Leader election not needed for topic partition.".into()),
            );
        }
        let image = self.image;
        let offline = self.offline;
        let acceptable =
            |r: i32| is_active(image, r) && !offline.contains(&(topic.to_string(), partition, r));
        match partition_change(t.id, partition, &p, &p.isr, election, &acceptable) {
            Some(record) => {
                let mut next = registered;
                next.merge(&record);
                self.changed.insert(key, next);
                self.records.push(Record::PartitionChange(record));
                answer(ErrorCode::None, None)
            }
            None if election == Election::Preferred => answer(
                ErrorCode::PreferredLeaderNotAvailable,
                Some("The preferred leader was not available.".into()),
            ),
            None => answer(
                ErrorCode::EligibleLeadersNotAvailable,
                Some("Eligible topic partition leaders are not available.".into()),
            ),
        }
    }
}

/// Kafka's `maybeBalancePartitionLeaders` (module docs).
pub(crate) fn balance_partition_leaders(
    image: &MetadataImage,
    max: usize,
) -> (Vec<Record>, Response) {
    let acceptable = |r: i32| is_active(image, r);
    let mut records = Vec::new();
    'topics: for t in image.topics.values() {
        for (partition, p) in image.partitions(&t.name) {
            if records.len() >= max {
                break 'topics;
            }
            if p.leader != NO_LEADER && p.replicas.first() == Some(&p.leader) {
                continue;
            }
            if let Some(r) =
                partition_change(t.id, partition, p, &p.isr, Election::Preferred, &acceptable)
            {
                records.push(Record::PartitionChange(r));
            }
        }
    }
    let run = ElectionRun {
        elected: records.len(),
        more: records.len() >= max,
    };
    (records, Response::Elections(run))
}

/// Kafka's `maybeElectUncleanLeaders` (module docs).
pub(crate) fn elect_unclean_leaders(
    image: &MetadataImage,
    cfg: &ElectionConfig,
    max: usize,
) -> (Vec<Record>, Response) {
    let acceptable = |r: i32| is_active(image, r);
    let mut records = Vec::new();
    'topics: for t in image.topics.values() {
        if !unclean_enabled(image, t, cfg) {
            continue;
        }
        for (partition, p) in image.partitions(&t.name) {
            if records.len() >= max {
                break 'topics;
            }
            if p.leader != NO_LEADER {
                continue;
            }
            if let Some(r) =
                partition_change(t.id, partition, p, &p.isr, Election::Unclean, &acceptable)
            {
                records.push(Record::PartitionChange(r));
            }
        }
    }
    let run = ElectionRun {
        elected: records.len(),
        more: records.len() >= max,
    };
    (records, Response::Elections(run))
}
