//! [`GroupCoordinatorShard`]: the coordinator for the groups of one `__consumer_offsets`
//! partition, as a pure state machine.
//!
//! Mental model (architecture.md: state + input + now -> effects): the shard owns the groups
//! and committed offsets of one partition. Every entry point takes `now_ms` (the caller's
//! clock) and returns [`Effects`]; nothing happens between calls. Each call first fires the
//! timers that are due at `now_ms`, each *at its own deadline* (a discrete-event clock: a
//! timer re-armed by another is re-armed from that deadline, however late the call comes;
//! and a heartbeat arriving after its session deadline finds the member already gone), then
//! handles its input at `now_ms`, then fires timers made due by it (a zero
//! `group.initial.rebalance.delay.ms`). Internally time never goes backwards: `now_ms` is
//! clamped to the largest value seen.
//!
//! Loading: a new shard is empty; the runtime feeds every record of the partition to
//! [`GroupCoordinatorShard::replay`] (answering COORDINATOR_LOAD_IN_PROGRESS meanwhile), then
//! calls [`GroupCoordinatorShard::on_loaded`] once, which arms the loaded members' session
//! timers. After that the shard applies its own changes directly and emits the records that
//! make them durable: the runtime must not replay them back.
//!
//! Ownership: one shard per partition, driven by one task at a time (`&mut self`); it is
//! `Send`. Member ids come from a PRNG seeded by the caller, so a run is reproducible.

use std::collections::BTreeMap;

use skiff_protocol::{GroupMetadataKey, GroupMetadataValue, MemberMetadata};
use uuid::Uuid;

use crate::classic::group::{ClassicGroup, ClassicGroupState};
use crate::config::GroupConfig;
use crate::consumer::ConsumerGroup;
use crate::consumer::{GroupOverrides, TopicInfo};
use crate::effects::{Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::offsets::OffsetStore;
use crate::records::CoordinatorRecord;
use crate::timer::{TimerKey, TimerTask, Timers};

/// A group of either protocol.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // groups live in a map; boxing buys nothing here
pub(crate) enum Group {
    Classic(ClassicGroup),
    Consumer(ConsumerGroup),
}

/// The part of the shard that group logic borrows alongside one group: config, clock, timers,
/// the effects being built, and the id generator.
#[derive(Debug)]
pub(crate) struct Core {
    pub config: GroupConfig,
    pub timers: Timers,
    pub out: Effects,
    pub now: i64,
    rng: SplitMix64,
}

/// The coordinator for the groups of one `__consumer_offsets` partition.
#[derive(Debug)]
pub struct GroupCoordinatorShard {
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) offsets: OffsetStore,
    /// Cluster topics by name, as last given to [`GroupCoordinatorShard::set_topics`].
    pub(crate) topics: BTreeMap<String, TopicInfo>,
    /// Per-group configs, as last given to [`GroupCoordinatorShard::set_group_overrides`].
    pub(crate) group_overrides: BTreeMap<String, GroupOverrides>,
    pub(crate) core: Core,
}

/// A group's externally visible summary (tests, metrics, the simulation's checkers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSummary {
    /// `"classic"` or `"consumer"`.
    pub group_type: &'static str,
    /// Kafka's state name (`Stable`, `PreparingRebalance`, `Assigning`, ...).
    pub state: &'static str,
    /// Classic: the generation; consumer: the group epoch.
    pub generation: i32,
    pub protocol_type: String,
    pub protocol_name: Option<String>,
    pub leader: Option<String>,
    /// Member ids, sorted.
    pub members: Vec<String>,
}

#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The longest client id / instance id prefix kept in a generated member id, so generated ids
/// always fit Kafka's 32767-byte strings.
const MEMBER_ID_PREFIX_CHARS_MAX: usize = 255;

impl Core {
    /// A random (v4) UUID from the seeded generator.
    pub fn new_uuid(&mut self) -> Uuid {
        let hi = self.rng.next().to_be_bytes();
        let lo = self.rng.next().to_be_bytes();
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&hi);
        bytes[8..].copy_from_slice(&lo);
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }

    /// Kafka's member id: `<group.instance.id or client.id>-<uuid>`.
    pub fn generate_member_id(&mut self, client_id: &str, instance_id: Option<&str>) -> String {
        let prefix: String = instance_id
            .unwrap_or(client_id)
            .chars()
            .take(MEMBER_ID_PREFIX_CHARS_MAX)
            .collect();
        format!("{prefix}-{}", self.new_uuid())
    }

    pub fn respond(&mut self, token: RequestToken, response: Response) {
        self.out.responses.push((token, response));
    }

    /// Queues a record; one that cannot be encoded (impossible for values the shard builds
    /// from decoded input) is dropped rather than panicking.
    pub fn record(&mut self, record: CoordinatorRecord) {
        match record.encode() {
            Ok(raw) => self.out.records.push(raw),
            Err(e) => debug_assert!(false, "unencodable coordinator record: {e}"),
        }
    }

    /// The GroupMetadata record for a classic group as it is now (members' current
    /// assignments), as Kafka's `newGroupMetadataRecord` writes it.
    pub fn record_group_metadata(&mut self, g: &ClassicGroup) {
        let protocol = g.protocol_name.clone().unwrap_or_default();
        let members = g
            .members
            .values()
            .map(|m| MemberMetadata {
                member_id: m.member_id.clone(),
                group_instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout: m.rebalance_timeout_ms,
                session_timeout: m.session_timeout_ms,
                subscription: m.metadata(&protocol),
                assignment: m.assignment.clone(),
            })
            .collect();
        let value = GroupMetadataValue {
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            generation: g.generation,
            protocol: g.protocol_name.clone(),
            leader: g.leader.clone(),
            current_state_timestamp: g.state_timestamp_ms.unwrap_or(-1),
            members,
        };
        self.record(CoordinatorRecord::GroupMetadata(
            GroupMetadataKey {
                group: g.group_id.clone(),
            },
            Some(value),
        ));
    }

    pub fn record_group_tombstone(&mut self, group_id: &str) {
        self.record(CoordinatorRecord::GroupMetadata(
            GroupMetadataKey {
                group: group_id.to_string(),
            },
            None,
        ));
    }

    pub fn schedule(&mut self, key: TimerKey, delay_ms: i64, task: TimerTask) {
        let deadline = self.now.saturating_add(delay_ms.max(0));
        self.timers.schedule(key, deadline, task);
    }
}

/// How many timers one call may fire before it yields (a guard; deadlines are re-armed with a
/// positive delay, so a call never needs this many).
const TIMER_FIRINGS_PER_CALL_MAX: usize = 100_000;

impl GroupCoordinatorShard {
    /// An empty shard. `seed` drives member-id generation (use a random seed in production and
    /// a fixed one in tests). The config should have passed [`GroupConfig::validate`].
    pub fn new(config: GroupConfig, seed: u64) -> Self {
        Self {
            groups: BTreeMap::new(),
            offsets: OffsetStore::default(),
            topics: BTreeMap::new(),
            group_overrides: BTreeMap::new(),
            core: Core {
                config,
                timers: Timers::default(),
                out: Effects::default(),
                now: i64::MIN,
                rng: SplitMix64(seed),
            },
        }
    }

    pub fn config(&self) -> &GroupConfig {
        &self.core.config
    }

    /// Replaces the config (a dynamic change); takes effect for later decisions.
    pub fn set_config(&mut self, config: GroupConfig) {
        self.core.config = config;
    }

    /// Applies one record of the partition while loading. Records of unknown type are an
    /// error the caller may log and skip; a malformed record is an error too.
    pub fn replay(
        &mut self,
        key: &bytes::Bytes,
        value: Option<&bytes::Bytes>,
    ) -> Result<(), GroupError> {
        let record = CoordinatorRecord::decode(key, value)?;
        self.apply_replayed(record);
        Ok(())
    }

    /// Arms the timers of everything replayed (session timeouts restart from `now_ms`) and
    /// starts rebalances of loaded groups that are over `group.max.size`.
    pub fn on_loaded(&mut self, now_ms: i64) -> Effects {
        self.begin(now_ms);
        self.on_loaded_classic();
        self.on_loaded_consumer();
        self.finish()
    }

    /// Fires every timer due at `now_ms`.
    pub fn tick(&mut self, now_ms: i64) -> Effects {
        self.begin(now_ms);
        self.finish()
    }

    /// The earliest pending timer deadline.
    pub fn next_deadline(&self) -> Option<i64> {
        self.core.timers.next_deadline()
    }

    /// The ids of the groups this shard holds, sorted.
    pub fn group_ids(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }

    /// A summary of one group, `None` if the shard does not hold it.
    pub fn group_summary(&self, group_id: &str) -> Option<GroupSummary> {
        match self.groups.get(group_id)? {
            Group::Classic(g) => Some(GroupSummary {
                group_type: "classic",
                state: g.state.as_str(),
                generation: g.generation,
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                protocol_name: g.protocol_name.clone(),
                leader: g.leader.clone(),
                members: g.members.keys().cloned().collect(),
            }),
            Group::Consumer(g) => Some(g.summary()),
        }
    }

    pub(crate) fn begin(&mut self, now_ms: i64) {
        if !self.core.timers.is_scheduled(&TimerKey::Expiration) {
            self.core.now = self.core.now.max(now_ms);
            let interval = self.core.config.offsets_retention_check_interval_ms;
            self.core
                .schedule(TimerKey::Expiration, interval, TimerTask::CleanupExpired);
        }
        self.run_timers(now_ms);
        self.core.now = self.core.now.max(now_ms);
    }

    pub(crate) fn finish(&mut self) -> Effects {
        self.run_timers(self.core.now);
        let mut effects = std::mem::take(&mut self.core.out);
        effects.next_deadline = self.core.timers.next_deadline();
        effects
    }

    /// Fires the timers due at `until_ms` in deadline order, moving the clock to each one's
    /// deadline as it fires.
    fn run_timers(&mut self, until_ms: i64) {
        for _ in 0..TIMER_FIRINGS_PER_CALL_MAX {
            let Some((deadline, key, task)) = self.core.timers.pop_expired(until_ms) else {
                return;
            };
            self.core.now = self.core.now.max(deadline);
            self.fire(key, task);
        }
    }

    fn fire(&mut self, key: TimerKey, task: TimerTask) {
        match (key, task) {
            (TimerKey::Expiration, _) => {
                self.cleanup_expired();
                let interval = self.core.config.offsets_retention_check_interval_ms;
                self.core
                    .schedule(TimerKey::Expiration, interval, TimerTask::CleanupExpired);
            }
            (TimerKey::Heartbeat { group, member }, _) => {
                if let Some(Group::Classic(g)) = self.groups.get_mut(&group) {
                    self.core.expire_heartbeat(g, &member);
                }
            }
            (TimerKey::Join { group }, task) => {
                if let Some(Group::Classic(g)) = self.groups.get_mut(&group)
                    && g.is(ClassicGroupState::PreparingRebalance)
                {
                    match task {
                        TimerTask::InitialRebalance {
                            delay_ms,
                            remaining_ms,
                        } => self
                            .core
                            .try_complete_initial_rebalance(g, delay_ms, remaining_ms),
                        _ => self.core.complete_join(g),
                    }
                }
            }
            (TimerKey::Sync { group }, TimerTask::ExpireSync { generation }) => {
                if let Some(Group::Classic(g)) = self.groups.get_mut(&group) {
                    self.core.expire_pending_sync(g, generation);
                }
            }
            (TimerKey::Sync { .. }, _) => {}
            (TimerKey::ConsumerSession { group, member }, _) => {
                self.expire_consumer_session(&group, &member);
            }
            (TimerKey::ClassicJoin { group, member }, _)
            | (TimerKey::ClassicSync { group, member }, _) => {
                self.fence_consumer_member(&group, &member);
            }
            (TimerKey::ConsumerRebalance { group, member }, task) => {
                if let TimerTask::ExpireConsumerRebalance { member_epoch } = task {
                    self.expire_consumer_rebalance(&group, &member, member_epoch);
                }
            }
        }
    }

    pub(crate) fn apply_replayed(&mut self, record: CoordinatorRecord) {
        match record {
            CoordinatorRecord::OffsetCommit(key, value) => {
                if value.is_some() && !self.groups.contains_key(&key.group) {
                    // Offsets without a group belong to a "simple" group (Kafka does the same).
                    let g = ClassicGroup::new(&key.group, self.core.now.max(0));
                    self.groups.insert(key.group.clone(), Group::Classic(g));
                }
                self.offsets.apply(&key, value.as_ref());
            }
            CoordinatorRecord::GroupMetadata(key, None) => {
                if matches!(self.groups.get(&key.group), Some(Group::Classic(_))) {
                    self.groups.remove(&key.group);
                }
            }
            CoordinatorRecord::GroupMetadata(key, Some(value)) => {
                let g = crate::classic::replay::group_from_record(&key.group, value);
                self.groups.insert(key.group, Group::Classic(g));
            }
            other => self.replay_consumer(other),
        }
    }
}
