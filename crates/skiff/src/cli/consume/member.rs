//! `skiff consume --group G` as a real group member (the classic protocol, as the Java
//! consumer speaks it): FindCoordinator, JoinGroup (protocol type `consumer`, one protocol
//! `range` whose metadata is a `ConsumerProtocolSubscription` v3 blob), SyncGroup (the leader
//! computes the range assignment of every member's subscription), Heartbeat between fetches,
//! OffsetCommit with the generation and member id, LeaveGroup on exit.
//!
//! Mental model: a [`Membership`] is one generation of this member: its id, the generation id
//! and the partitions of the topic it was assigned. [`Membership::heartbeat`] is due every
//! [`HEARTBEAT_INTERVAL`] (a third of [`SESSION_TIMEOUT_MS`] or less); an answer of
//! REBALANCE_IN_PROGRESS (or a fenced generation) tells the caller to commit what it printed
//! and [`Membership::rejoin`], after which it resumes from the committed offsets of its new
//! partitions. The leader's assignment is [`range_assign`], Kafka's RangeAssignor: per topic,
//! the subscribed members sorted by id, each given a contiguous run of partitions, the first
//! `partitions % members` one partition more.
//! Invariants: every blob starts with its int16 version; assignments are written in the
//! version of the member's own subscription (never newer than it can read); a member id the
//! coordinator hands out with MEMBER_ID_REQUIRED is used for the next JoinGroup; join and sync
//! retries are bounded; LeaveGroup is best-effort (its failure is a warning, the session
//! timeout removes the member anyway). [`watch_interrupts`]: the first Ctrl-C (SIGINT) or
//! SIGTERM only raises a flag the fetch loop checks each round (so the member commits and
//! leaves); a second one exits at once with 130.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use skiff_protocol::{ApiKey, ResponseBody};
use skiff_protocol::{
    Codec, ConsumerProtocolAssignment, ConsumerProtocolAssignmentTopicPartition,
    ConsumerProtocolSubscription, ConsumerProtocolSubscriptionTopicPartition, HeartbeatRequest,
    JoinGroupRequest, JoinGroupRequestProtocol, LeaveGroupRequest, MemberIdentity,
    SyncGroupRequest, SyncGroupRequestAssignment,
};
use skiff_types::{Clock, ErrorCode};

use super::meta;
use crate::cli::CliError;
use crate::cli::client::{Cluster, call_as};
use crate::cli::group::offsets::{self, Offsets};

/// The member's session timeout (the coordinator drops it after this long without a heartbeat).
pub const SESSION_TIMEOUT_MS: i32 = 30_000;
/// How long the coordinator waits for every member to rejoin during a rebalance.
pub const REBALANCE_TIMEOUT_MS: i32 = 60_000;
/// Time between heartbeats (well within a third of the session timeout).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(3_000);
/// The one assignor this member offers.
pub const ASSIGNOR: &str = "range";
/// The subscription version written (the Java client's newest).
const SUBSCRIPTION_VERSION: i16 = 3;
/// JoinGroup/SyncGroup rounds before giving up.
const JOIN_ATTEMPTS: u32 = 20;

/// Raised by the first SIGINT/SIGTERM once [`watch_interrupts`] runs.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether a Ctrl-C (or SIGTERM) asked the member to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Catches SIGINT and SIGTERM on a helper thread: the first raises [`interrupted`], the
/// second exits with 130. Without a signal runtime the default (exit at once) stays.
pub fn watch_interrupts() {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    std::thread::spawn(move || {
        rt.block_on(async {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                if INTERRUPTED.swap(true, Ordering::Relaxed) {
                    std::process::exit(130);
                }
                eprintln!("skiff: stopping: committing and leaving the group (again to quit now)");
            }
        });
    });
}

/// What a heartbeat said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beat {
    /// Still a member of this generation.
    Member,
    /// The group is rebalancing (or this generation is gone): commit and rejoin.
    Rejoin,
}

/// This member of one generation.
#[derive(Debug)]
pub struct Membership {
    group: String,
    topic: String,
    member_id: String,
    generation: i32,
    assigned: Vec<i32>,
    clock: Clock,
    last_beat: Instant,
}

impl Membership {
    /// Joins `group` subscribed to `topic` and returns once an assignment was received.
    pub fn join(cluster: &mut Cluster, group: &str, topic: &str) -> Result<Membership, CliError> {
        let clock = Clock::system();
        let mut m = Membership {
            group: group.to_owned(),
            topic: topic.to_owned(),
            member_id: String::new(),
            generation: -1,
            assigned: Vec::new(),
            last_beat: clock.now(),
            clock,
        };
        m.rejoin(cluster)?;
        Ok(m)
    }

    /// The partitions of the topic this generation assigned to this member, ascending.
    pub fn assigned(&self) -> &[i32] {
        &self.assigned
    }

    pub fn generation(&self) -> i32 {
        self.generation
    }

    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// Whether a heartbeat is due.
    pub fn heartbeat_due(&self) -> bool {
        self.clock.now().saturating_duration_since(self.last_beat) >= HEARTBEAT_INTERVAL
    }

    /// Sends a Heartbeat for this generation.
    pub fn heartbeat(&mut self, cluster: &mut Cluster) -> Result<Beat, CliError> {
        let request = HeartbeatRequest {
            group_id: self.group.clone(),
            generation_id: self.generation,
            member_id: self.member_id.clone(),
            group_instance_id: None,
        };
        let conn = cluster.coordinator(0, &self.group)?;
        let r = call_as!(conn, request, Heartbeat)?;
        self.last_beat = self.clock.now();
        match ErrorCode::from_code(r.error_code) {
            Some(ErrorCode::None) => Ok(Beat::Member),
            Some(
                ErrorCode::RebalanceInProgress
                | ErrorCode::IllegalGeneration
                | ErrorCode::UnknownMemberId
                | ErrorCode::NotCoordinator
                | ErrorCode::CoordinatorNotAvailable,
            ) => {
                if r.error_code == ErrorCode::UnknownMemberId.code() {
                    self.member_id.clear();
                }
                Ok(Beat::Rejoin)
            }
            _ => Err(CliError::from_code(
                format!("heartbeat in group {}", self.group),
                r.error_code,
                None,
            )
            .unwrap_or_else(|| CliError::Other("heartbeat failed".into()))),
        }
    }

    /// Commits `offsets` as this member of this generation.
    pub fn commit(&self, cluster: &mut Cluster, offsets: &Offsets) -> Result<(), CliError> {
        offsets::commit_as(
            cluster,
            &self.group,
            self.generation,
            &self.member_id,
            offsets,
        )
    }

    /// Leaves the group (best-effort: a failure is printed, not returned).
    pub fn leave(self, cluster: &mut Cluster) {
        let result = (|| {
            let conn = cluster.coordinator(0, &self.group)?;
            let v3 = conn.version(ApiKey::LeaveGroup).is_some_and(|v| v >= 3);
            // v0-2 name one member at the top level, v3+ a list: the other stays default.
            let request = LeaveGroupRequest {
                group_id: self.group.clone(),
                member_id: if v3 {
                    String::new()
                } else {
                    self.member_id.clone()
                },
                members: if v3 {
                    vec![MemberIdentity {
                        member_id: self.member_id.clone(),
                        group_instance_id: None,
                        reason: Some("skiff consume finished".into()),
                    }]
                } else {
                    Vec::new()
                },
            };
            let r = call_as!(conn, request, LeaveGroup)?;
            let code = r
                .members
                .first()
                .map_or(r.error_code, |m| m.error_code)
                .max(r.error_code);
            match CliError::from_code(format!("leaving group {}", self.group), code, None) {
                Some(e) => Err(e),
                None => Ok(()),
            }
        })();
        if let Err(e) = result {
            eprintln!(
                "skiff: {e}; the coordinator removes this member after its session timeout \
                 ({} s)",
                SESSION_TIMEOUT_MS / 1000
            );
        }
    }

    /// Joins (again): JoinGroup until a generation is formed, then SyncGroup (as leader with
    /// the range assignment of every member) until this member's assignment arrives.
    pub fn rejoin(&mut self, cluster: &mut Cluster) -> Result<(), CliError> {
        let normal = cluster.timeout();
        let wait = Duration::from_millis(u64::try_from(REBALANCE_TIMEOUT_MS).unwrap_or(0)) + normal;
        let mut attempt = 0;
        loop {
            attempt += 1;
            if attempt > JOIN_ATTEMPTS {
                return Err(CliError::Other(format!(
                    "could not join group {} ({JOIN_ATTEMPTS} attempts); see `skiff group \
                     describe {}`",
                    self.group, self.group
                )));
            }
            let subscription = encode_subscription(
                std::slice::from_ref(&self.topic),
                &self.topic,
                &self.assigned,
                self.generation,
            )?;
            let request = JoinGroupRequest {
                group_id: self.group.clone(),
                session_timeout_ms: SESSION_TIMEOUT_MS,
                rebalance_timeout_ms: REBALANCE_TIMEOUT_MS,
                member_id: self.member_id.clone(),
                group_instance_id: None,
                protocol_type: "consumer".into(),
                protocols: vec![JoinGroupRequestProtocol {
                    name: ASSIGNOR.into(),
                    metadata: subscription,
                }],
                reason: None,
            };
            let conn = cluster.coordinator(0, &self.group)?;
            // JoinGroup waits at the coordinator for every member (up to the rebalance timeout).
            conn.set_read_timeout(wait)?;
            let answer = conn.call(request);
            conn.set_read_timeout(normal)?;
            let r = match answer? {
                ResponseBody::JoinGroup(r) => r,
                other => return Err(unexpected(&self.group, "JoinGroup", &other)),
            };
            match ErrorCode::from_code(r.error_code) {
                Some(ErrorCode::None) => {}
                Some(ErrorCode::MemberIdRequired) => {
                    self.member_id = r.member_id;
                    continue;
                }
                Some(ErrorCode::UnknownMemberId) => {
                    self.member_id.clear();
                    continue;
                }
                Some(
                    ErrorCode::RebalanceInProgress
                    | ErrorCode::CoordinatorLoadInProgress
                    | ErrorCode::CoordinatorNotAvailable
                    | ErrorCode::NotCoordinator,
                ) => {
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                }
                _ => {
                    return Err(CliError::from_code(
                        format!("joining group {}", self.group),
                        r.error_code,
                        None,
                    )
                    .unwrap_or_else(|| CliError::Other("JoinGroup failed".into())));
                }
            }
            self.member_id = r.member_id.clone();
            self.generation = r.generation_id;
            let assignments = if r.leader == r.member_id && !r.skip_assignment {
                self.leader_assignments(cluster, &r.members)?
            } else {
                Vec::new()
            };
            let request = SyncGroupRequest {
                group_id: self.group.clone(),
                generation_id: self.generation,
                member_id: self.member_id.clone(),
                group_instance_id: None,
                protocol_type: Some("consumer".into()),
                protocol_name: Some(r.protocol_name.clone().unwrap_or_else(|| ASSIGNOR.into())),
                assignments,
            };
            let conn = cluster.coordinator(0, &self.group)?;
            conn.set_read_timeout(wait)?;
            let answer = conn.call(request);
            conn.set_read_timeout(normal)?;
            let s = match answer? {
                ResponseBody::SyncGroup(s) => s,
                other => return Err(unexpected(&self.group, "SyncGroup", &other)),
            };
            match ErrorCode::from_code(s.error_code) {
                Some(ErrorCode::None) => {}
                Some(ErrorCode::UnknownMemberId) => {
                    self.member_id.clear();
                    continue;
                }
                Some(ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration) => continue,
                _ => {
                    return Err(CliError::from_code(
                        format!("syncing group {}", self.group),
                        s.error_code,
                        None,
                    )
                    .unwrap_or_else(|| CliError::Other("SyncGroup failed".into())));
                }
            }
            let mine = decode_assignment(&s.assignment).ok_or_else(|| {
                CliError::Other(format!(
                    "group {}: the leader sent an assignment this client cannot read",
                    self.group
                ))
            })?;
            self.assigned = mine.get(&self.topic).cloned().unwrap_or_default();
            self.last_beat = self.clock.now();
            return Ok(());
        }
    }

    /// The leader's SyncGroup assignments: the range assignment of every member's subscription.
    fn leader_assignments(
        &self,
        cluster: &mut Cluster,
        members: &[skiff_protocol::JoinGroupResponseMember],
    ) -> Result<Vec<SyncGroupRequestAssignment>, CliError> {
        let mut subs: Vec<(String, i16, Vec<String>)> = Vec::new();
        for m in members {
            let (version, topics) = decode_subscription(&m.metadata).ok_or_else(|| {
                CliError::Other(format!(
                    "group {}: member {} sent a subscription this client cannot read",
                    self.group, m.member_id
                ))
            })?;
            subs.push((m.member_id.clone(), version, topics));
        }
        let topics: BTreeSet<String> = subs.iter().flat_map(|s| s.2.iter().cloned()).collect();
        let mut counts = BTreeMap::new();
        for t in topics {
            // A topic that does not exist (yet) has no partitions to assign.
            if let Ok(info) = meta::topic_info(cluster, &t) {
                counts.insert(t, i32::try_from(info.partitions.len()).unwrap_or(0));
            }
        }
        let plan = range_assign(
            &subs
                .iter()
                .map(|(id, _, t)| (id.clone(), t.clone()))
                .collect::<Vec<_>>(),
            &counts,
        );
        subs.iter()
            .map(|(id, version, _)| {
                let empty = BTreeMap::new();
                Ok(SyncGroupRequestAssignment {
                    member_id: id.clone(),
                    assignment: encode_assignment(*version, plan.get(id).unwrap_or(&empty))?,
                })
            })
            .collect()
    }
}

fn unexpected(group: &str, api: &str, other: &ResponseBody) -> CliError {
    CliError::Other(format!(
        "group {group}: expected a {api} response, got {}",
        other.api_key().name()
    ))
}

/// Kafka's RangeAssignor: `members` are `(member id, subscribed topics)`, `partitions` the
/// partition count of each topic. Returns `member -> topic -> partitions` (every member
/// present, possibly with nothing).
pub fn range_assign(
    members: &[(String, Vec<String>)],
    partitions: &BTreeMap<String, i32>,
) -> BTreeMap<String, BTreeMap<String, Vec<i32>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<i32>>> = members
        .iter()
        .map(|(id, _)| (id.clone(), BTreeMap::new()))
        .collect();
    for (topic, &count) in partitions {
        let mut subscribed: Vec<&String> = members
            .iter()
            .filter(|(_, ts)| ts.contains(topic))
            .map(|(id, _)| id)
            .collect();
        subscribed.sort();
        subscribed.dedup();
        let n = i32::try_from(subscribed.len()).unwrap_or(i32::MAX);
        if n == 0 || count <= 0 {
            continue;
        }
        let (per, extra) = (count / n, count % n);
        for (i, id) in (0..).zip(subscribed) {
            let start = per * i + i.min(extra);
            let len = per + i32::from(i < extra);
            if len > 0
                && let Some(m) = out.get_mut(id)
            {
                m.insert(topic.clone(), (start..start + len).collect());
            }
        }
    }
    out
}

/// A `ConsumerProtocolSubscription` v3 blob (version prefix included): `topics`, the
/// partitions of `topic` owned in `generation`.
pub fn encode_subscription(
    topics: &[String],
    topic: &str,
    owned: &[i32],
    generation: i32,
) -> Result<Bytes, CliError> {
    let sub = ConsumerProtocolSubscription {
        topics: topics.to_vec(),
        user_data: None,
        owned_partitions: if owned.is_empty() {
            Vec::new()
        } else {
            vec![ConsumerProtocolSubscriptionTopicPartition {
                topic: topic.to_owned(),
                partitions: owned.to_vec(),
            }]
        },
        generation_id: generation,
        rack_id: None,
    };
    blob(SUBSCRIPTION_VERSION, |out| {
        sub.encode(out, SUBSCRIPTION_VERSION)
    })
}

/// A subscription blob's version and topics; `None` when malformed.
pub fn decode_subscription(blob: &Bytes) -> Option<(i16, Vec<String>)> {
    let (version, mut body) = split_version(blob)?;
    let max = <ConsumerProtocolSubscription as Codec>::MAX_VERSION;
    let sub = ConsumerProtocolSubscription::decode(&mut body, version.min(max)).ok()?;
    Some((version, sub.topics))
}

/// An assignment blob in `version` (capped at what Skiff writes).
pub fn encode_assignment(
    version: i16,
    parts: &BTreeMap<String, Vec<i32>>,
) -> Result<Bytes, CliError> {
    let version = version.clamp(0, <ConsumerProtocolAssignment as Codec>::MAX_VERSION);
    let a = ConsumerProtocolAssignment {
        assigned_partitions: parts
            .iter()
            .map(|(t, ps)| ConsumerProtocolAssignmentTopicPartition {
                topic: t.clone(),
                partitions: ps.clone(),
            })
            .collect(),
        user_data: None,
    };
    blob(version, |out| a.encode(out, version))
}

/// An assignment blob as partitions by topic (sorted); empty blob = nothing; `None` malformed.
pub fn decode_assignment(blob: &Bytes) -> Option<BTreeMap<String, Vec<i32>>> {
    if blob.is_empty() {
        return Some(BTreeMap::new());
    }
    let (version, mut body) = split_version(blob)?;
    let max = <ConsumerProtocolAssignment as Codec>::MAX_VERSION;
    let a = ConsumerProtocolAssignment::decode(&mut body, version.min(max)).ok()?;
    let mut out: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for tp in a.assigned_partitions {
        out.entry(tp.topic).or_default().extend(tp.partitions);
    }
    Some(
        out.into_iter()
            .map(|(t, ps)| (t, ps.into_iter().collect()))
            .collect(),
    )
}

/// A `consumer` protocol blob's leading version and the body after it; `None` when the blob
/// is shorter than the version or the version is negative (not a `consumer` protocol blob).
pub(crate) fn split_version(blob: &Bytes) -> Option<(i16, Bytes)> {
    if blob.len() < 2 {
        return None;
    }
    let version = i16::from_be_bytes([blob[0], blob[1]]);
    (version >= 0).then(|| (version, blob.slice(2..)))
}

fn blob(
    version: i16,
    write: impl FnOnce(&mut BytesMut) -> Result<(), skiff_protocol::EncodeError>,
) -> Result<Bytes, CliError> {
    let mut out = BytesMut::new();
    out.put_i16(version);
    write(&mut out)
        .map_err(|e| CliError::Other(format!("cannot encode the consumer protocol: {e}")))?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(spec: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        spec.iter()
            .map(|(id, ts)| {
                (
                    (*id).to_owned(),
                    ts.iter().map(|t| (*t).to_owned()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn range_assignment_matches_kafka() {
        type Want = &'static [(&'static str, &'static [(&'static str, &'static [i32])])];
        type Members = &'static [(&'static str, &'static [&'static str])];
        type Counts = &'static [(&'static str, i32)];
        let cases: &[(Members, Counts, Want)] = &[
            // 4 partitions, 2 members: 2 each, in member id order.
            (
                &[("b", &["t"]), ("a", &["t"])],
                &[("t", 4)],
                &[("a", &[("t", &[0, 1])]), ("b", &[("t", &[2, 3])])],
            ),
            // 5 partitions, 3 members: the first 5 % 3 = 2 get one more.
            (
                &[("m1", &["t"]), ("m2", &["t"]), ("m3", &["t"])],
                &[("t", 5)],
                &[
                    ("m1", &[("t", &[0, 1])]),
                    ("m2", &[("t", &[2, 3])]),
                    ("m3", &[("t", &[4])]),
                ],
            ),
            // more members than partitions: the last get nothing.
            (
                &[("a", &["t"]), ("b", &["t"]), ("c", &["t"])],
                &[("t", 2)],
                &[("a", &[("t", &[0])]), ("b", &[("t", &[1])]), ("c", &[])],
            ),
            // per topic: only the subscribers of a topic share it.
            (
                &[("a", &["t", "u"]), ("b", &["u"])],
                &[("t", 2), ("u", 3)],
                &[
                    ("a", &[("t", &[0, 1]), ("u", &[0, 1])]),
                    ("b", &[("u", &[2])]),
                ],
            ),
            // a topic without partitions (unknown) assigns nothing.
            (&[("a", &["x"])], &[("x", 0)], &[("a", &[])]),
        ];
        for (ms, counts, want) in cases {
            let counts: BTreeMap<String, i32> =
                counts.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect();
            let got = range_assign(&members(ms), &counts);
            let want: BTreeMap<String, BTreeMap<String, Vec<i32>>> = want
                .iter()
                .map(|(id, ts)| {
                    (
                        (*id).to_owned(),
                        ts.iter()
                            .map(|(t, ps)| ((*t).to_owned(), ps.to_vec()))
                            .collect(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{ms:?} {counts:?}");
        }
    }

    #[test]
    fn blobs_round_trip_with_their_version() {
        let sub = encode_subscription(&["t".into()], "t", &[1, 2], 7).unwrap();
        assert_eq!(&sub[..2], &[0, 3]);
        assert_eq!(decode_subscription(&sub), Some((3, vec!["t".to_owned()])));
        for version in 0..=3 {
            let parts = BTreeMap::from([("t".to_owned(), vec![0, 2])]);
            let a = encode_assignment(version, &parts).unwrap();
            assert_eq!(i16::from_be_bytes([a[0], a[1]]), version);
            assert_eq!(decode_assignment(&a), Some(parts));
        }
        // a newer version than Skiff knows is read as the newest it knows
        let mut newer = encode_assignment(3, &BTreeMap::new()).unwrap().to_vec();
        newer[1] = 9;
        assert_eq!(
            decode_assignment(&Bytes::from(newer)),
            Some(BTreeMap::new())
        );
        assert_eq!(decode_assignment(&Bytes::new()), Some(BTreeMap::new()));
        assert_eq!(decode_assignment(&Bytes::from_static(&[0xff, 0xff])), None);
        assert_eq!(decode_subscription(&Bytes::from_static(&[0])), None);
    }
}
