//! Broker lifecycle: registration, heartbeats, fencing and session expiry (Kafka 4.0's
//! `ClusterControlManager.registerBroker`, `BrokerHeartbeatManager` and
//! `ReplicationControlManager.handleBroker{Fenced,Unfenced,InControlledShutdown}`).
//!
//! Mental model: the image holds each broker's registration (epoch, fenced, in controlled
//! shutdown); [`BrokerHeartbeats`] holds what is not in the log: when each broker was last
//! heard from, the metadata offset it reported, and the offset it must see before leaving
//! controlled shutdown. It is soft state, rebuilt empty when a node becomes controller: a
//! fresh tracker treats every registered broker as heard from at its creation (Kafka's
//! `activate()`), so live brokers get a full session on the new controller.
//!
//! States, from the image and the tracker: FENCED (image), UNFENCED, CONTROLLED_SHUTDOWN
//! (tracker), SHUTDOWN_NOW (reply only). A heartbeat moves a broker:
//! - FENCED: `want_shut_down` -> SHUTDOWN_NOW; caught up (`current_metadata_offset` >= its
//!   registration's offset) and not `want_fence` -> UNFENCED; else stays.
//! - UNFENCED: `want_fence && want_shut_down` -> SHUTDOWN_NOW; `want_fence` -> FENCED;
//!   `want_shut_down` -> CONTROLLED_SHUTDOWN if it leads a partition, else SHUTDOWN_NOW.
//! - CONTROLLED_SHUTDOWN: once it leads nothing and every active broker has seen the offset
//!   of the change that started the shutdown -> SHUTDOWN_NOW.
//!
//! Records (always one atomic change): fencing = the leadership moves, then
//! `BrokerRegistrationChangeRecord{fenced: 1}`; unfencing = the change record
//! `{fenced: -1}`, then leaderless partitions regaining a leader; controlled shutdown = the
//! change record `{in_controlled_shutdown: 1}` (v1), then the broker's ISR removals and
//! leader moves.
//!
//! Differences from Kafka, on purpose: a broker's "registration offset" (what it must catch
//! up to) is its broker epoch, which is the offset of the record that began its incarnation;
//! Kafka also moves it to an amending registration's offset. FENCED -> SHUTDOWN_NOW writes no
//! record (Kafka writes a redundant fence record whose replay is a no-op). Any registration
//! counts as contact. No `REQUEST_TIMED_OUT` path (Skiff's caller has no event-queue deadline).
//! A new incarnation replacing an unfenced registration (session expired, expiry not yet
//! run) first moves the old incarnation's leaderships, in the same batch, so a fenced broker
//! never leads (Kafka 4.0-IV0 leaves them until the broker is back).
//!
//! Invariants: an error produces no records and leaves the tracker unchanged; a fenced broker
//! leads no partition once the fencing records are replayed; broker epochs only grow (a new
//! incarnation's epoch is the next log offset, larger than any earlier record's).
//!
//! The tracker also carries the controller's [`ElectionConfig`] (its static
//! `unclean.leader.election.enable` and node id): fencing, unfencing and controlled shutdown
//! elect with it, unclean where a topic allows it (`leadership.rs`). Like the session timeout
//! it is configuration of this controller, not state in the log.

use std::collections::BTreeMap;

use skiff_protocol::{BrokerRegistrationChangeRecord, RegisterBrokerRecord};
use uuid::Uuid;

use crate::MetadataError;
use crate::controller::election::ElectionConfig;
use crate::controller::leadership::{is_active, leader_and_isr_updates, leads_any};
use crate::controller::{Ctx, Response};
use crate::frame::Record;
use crate::image::{BrokerEndpoint, MetadataImage, NO_LEADER};

/// Kafka's `broker.session.timeout.ms` default.
pub const DEFAULT_SESSION_TIMEOUT_MS: i64 = 9000;

/// One broker heartbeat (Kafka's `BrokerHeartbeatRequest`, without directories).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// The highest metadata offset the broker has applied.
    pub current_metadata_offset: i64,
    pub want_fence: bool,
    pub want_shut_down: bool,
}

/// What a heartbeat answers (Kafka's `BrokerHeartbeatResponse` fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeartbeatReply {
    pub is_caught_up: bool,
    pub is_fenced: bool,
    pub should_shut_down: bool,
    /// Internal (not on the wire): the broker is now in controlled shutdown.
    pub in_controlled_shutdown: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Contact {
    last_ms: i64,
    metadata_offset: i64,
    /// Set while in controlled shutdown: the offset of the change that began it.
    controlled_shutdown_offset: Option<i64>,
}

/// Broker sessions: soft state beside the image (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerHeartbeats {
    session_timeout_ms: i64,
    /// When this tracker was created: the last contact of a broker not heard from since.
    activated_ms: i64,
    contacts: BTreeMap<i32, Contact>,
    /// How leaders are elected when brokers come and go (module docs).
    elections: ElectionConfig,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Fenced,
    Unfenced,
    ControlledShutdown,
    ShutdownNow,
}

impl BrokerHeartbeats {
    /// A tracker for a controller activated at `now_ms`.
    pub const fn new(now_ms: i64, session_timeout_ms: i64) -> Self {
        BrokerHeartbeats {
            session_timeout_ms,
            activated_ms: now_ms,
            contacts: BTreeMap::new(),
            elections: ElectionConfig::DEFAULT,
        }
    }

    /// This tracker electing with `elections` (module docs).
    pub const fn with_election_config(mut self, elections: ElectionConfig) -> Self {
        self.elections = elections;
        self
    }

    /// The election configuration fencing and unfencing use.
    pub fn election_config(&self) -> ElectionConfig {
        self.elections
    }

    pub fn session_timeout_ms(&self) -> i64 {
        self.session_timeout_ms
    }

    /// When `broker_id` was last heard from (the tracker's creation if never).
    pub fn last_contact_ms(&self, broker_id: i32) -> i64 {
        self.contact(broker_id).last_ms
    }

    fn contact(&self, broker_id: i32) -> Contact {
        self.contacts.get(&broker_id).copied().unwrap_or(Contact {
            last_ms: self.activated_ms,
            metadata_offset: -1,
            controlled_shutdown_offset: None,
        })
    }

    /// Kafka's `hasValidSession`: registered, unfenced and heard from within the timeout.
    pub fn has_valid_session(&self, image: &MetadataImage, broker_id: i32, now_ms: i64) -> bool {
        image.broker(broker_id).is_some_and(|b| !b.fenced)
            && self
                .last_contact_ms(broker_id)
                .saturating_add(self.session_timeout_ms)
                >= now_ms
    }

    /// Records that `broker_id` registered at `now_ms` (call once its record committed;
    /// `before` is the image the registration was handled against). A new incarnation
    /// starts a fresh session; an amendment only refreshes the contact time.
    pub fn registered(
        &mut self,
        before: &MetadataImage,
        broker_id: i32,
        incarnation_id: Uuid,
        now_ms: i64,
    ) {
        let same = before
            .broker(broker_id)
            .is_some_and(|b| b.incarnation_id == incarnation_id);
        let mut c = if same {
            self.contact(broker_id)
        } else {
            Contact {
                last_ms: now_ms,
                metadata_offset: -1,
                controlled_shutdown_offset: None,
            }
        };
        c.last_ms = now_ms;
        self.contacts.insert(broker_id, c);
    }

    /// Handles one heartbeat at `now_ms`; `next_offset` is the offset the first record of the
    /// change will get. Updates the contact (only on success).
    pub fn heartbeat(
        &mut self,
        image: &MetadataImage,
        hb: &Heartbeat,
        now_ms: i64,
        next_offset: i64,
    ) -> Result<(Vec<Record>, HeartbeatReply), MetadataError> {
        let id = hb.broker_id;
        let Some(reg) = image.broker(id) else {
            return Err(MetadataError::StaleBrokerEpoch(format!(
                "Receive a heartbeat from broker {id} before registration"
            )));
        };
        if reg.epoch != hb.broker_epoch {
            return Err(MetadataError::StaleBrokerEpoch(format!(
                "Expected broker epoch {}, but got broker epoch {}",
                reg.epoch, hb.broker_epoch
            )));
        }
        let registration_offset = reg.epoch;
        let caught_up = hb.current_metadata_offset >= registration_offset;
        let mut contact = self.contact(id);
        let current = if contact.controlled_shutdown_offset.is_some() {
            State::ControlledShutdown
        } else if reg.fenced {
            State::Fenced
        } else {
            State::Unfenced
        };
        let next = match current {
            State::Fenced if hb.want_shut_down => State::ShutdownNow,
            State::Fenced if !hb.want_fence && caught_up => State::Unfenced,
            State::Fenced => State::Fenced,
            State::Unfenced if hb.want_fence && hb.want_shut_down => State::ShutdownNow,
            State::Unfenced if hb.want_fence => State::Fenced,
            State::Unfenced if hb.want_shut_down => {
                if leads_any(image, id) {
                    State::ControlledShutdown
                } else {
                    State::ShutdownNow
                }
            }
            State::Unfenced => State::Unfenced,
            State::ControlledShutdown => {
                let cs = contact.controlled_shutdown_offset.unwrap_or(i64::MAX);
                if !leads_any(image, id) && cs <= self.lowest_active_offset(image) {
                    State::ShutdownNow
                } else {
                    State::ControlledShutdown
                }
            }
            State::ShutdownNow => State::ShutdownNow,
        };
        let records = match (current, next) {
            (State::Unfenced | State::ControlledShutdown, State::Fenced | State::ShutdownNow) => {
                fence_records(image, id, &self.elections)
            }
            (State::Fenced, State::Unfenced) => unfence_records(image, id, &self.elections),
            (State::Unfenced, State::ControlledShutdown) => {
                controlled_shutdown_records(image, id, &self.elections)
            }
            _ => Vec::new(),
        };
        contact.last_ms = now_ms;
        contact.metadata_offset = hb.current_metadata_offset;
        match next {
            State::Fenced | State::ShutdownNow | State::Unfenced => {
                contact.controlled_shutdown_offset = None;
            }
            State::ControlledShutdown => {
                if contact.controlled_shutdown_offset.is_none() {
                    // The batch's last offset (Kafka's processBatchEndOffset).
                    let n = records.len() as i64;
                    contact.controlled_shutdown_offset = Some(next_offset + n - 1);
                }
            }
        }
        self.contacts.insert(id, contact);
        let reply = HeartbeatReply {
            is_caught_up: caught_up,
            is_fenced: matches!(next, State::Fenced | State::ShutdownNow),
            should_shut_down: next == State::ShutdownNow,
            in_controlled_shutdown: next == State::ControlledShutdown,
        };
        Ok((records, reply))
    }

    /// The lowest metadata offset reported by an active broker not shutting down (`i64::MAX`
    /// if none): a broker leaves controlled shutdown once all of them saw its change.
    fn lowest_active_offset(&self, image: &MetadataImage) -> i64 {
        image
            .brokers()
            .filter(|b| is_active(image, b.id))
            .map(|b| self.contact(b.id))
            .filter(|c| c.controlled_shutdown_offset.is_none())
            .map(|c| c.metadata_offset)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// The broker to fence now, if any: the unfenced broker heard from longest ago (lowest
    /// id on a tie), if its session expired (last contact + timeout < `now_ms`). Kafka fences
    /// one broker per run; the caller runs again after committing.
    pub fn expired(&self, image: &MetadataImage, now_ms: i64) -> Option<i32> {
        let (id, last) = image
            .brokers()
            .filter(|b| !b.fenced)
            .map(|b| (b.id, self.last_contact_ms(b.id)))
            .min_by_key(|(id, last)| (*last, *id))?;
        (last.saturating_add(self.session_timeout_ms) < now_ms).then_some(id)
    }

    /// [`BrokerHeartbeats::expired`] and the records fencing that broker.
    pub fn fence_expired(
        &mut self,
        image: &MetadataImage,
        now_ms: i64,
    ) -> Option<(i32, Vec<Record>)> {
        let id = self.expired(image, now_ms)?;
        if let Some(c) = self.contacts.get_mut(&id) {
            c.controlled_shutdown_offset = None;
        }
        Some((id, fence_records(image, id, &self.elections)))
    }
}

fn change_record(image: &MetadataImage, id: i32, fenced: i8, cs: i8) -> Record {
    Record::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: id,
        broker_epoch: image.broker(id).map_or(-1, |b| b.epoch),
        fenced,
        in_controlled_shutdown: cs,
        ..BrokerRegistrationChangeRecord::default()
    })
}

/// Fencing `id`: its leaderships move (it leaves every ISR it is in, unless it is the last
/// member), then the fence record.
pub(crate) fn fence_records(image: &MetadataImage, id: i32, cfg: &ElectionConfig) -> Vec<Record> {
    let mut out = leader_and_isr_updates(image, Some(id), None, cfg, |p| p.isr.contains(&id));
    out.push(change_record(image, id, 1, 0));
    out
}

/// Unfencing `id`: the unfence record, then every leaderless partition that can elect a
/// leader now.
pub(crate) fn unfence_records(image: &MetadataImage, id: i32, cfg: &ElectionConfig) -> Vec<Record> {
    let mut out = vec![change_record(image, id, -1, 0)];
    out.extend(leader_and_isr_updates(image, None, Some(id), cfg, |p| {
        p.leader == NO_LEADER
    }));
    out
}

fn controlled_shutdown_records(
    image: &MetadataImage,
    id: i32,
    cfg: &ElectionConfig,
) -> Vec<Record> {
    let mut out = Vec::new();
    if image.broker(id).is_some_and(|b| !b.in_controlled_shutdown) {
        out.push(change_record(image, id, 0, 1));
    }
    out.extend(leader_and_isr_updates(image, Some(id), None, cfg, |p| {
        p.isr.contains(&id)
    }));
    out
}

/// Kafka's `registerBroker` (module docs of the controller; rules in the order Kafka checks).
pub(crate) fn register_broker(
    image: &MetadataImage,
    ctx: &Ctx<'_>,
    cluster_id: &str,
    broker_id: i32,
    incarnation_id: Uuid,
    endpoints: &[BrokerEndpoint],
    rack: &Option<String>,
) -> Result<(Vec<Record>, Response), MetadataError> {
    if broker_id < 0 {
        return Err(MetadataError::InvalidRequest(format!(
            "invalid broker id {broker_id}"
        )));
    }
    if cluster_id != ctx.cluster_id {
        return Err(MetadataError::InconsistentClusterId(format!(
            "Expected cluster ID {}, but got cluster ID {cluster_id}",
            ctx.cluster_id
        )));
    }
    let existing = image.broker(broker_id);
    if existing.is_some_and(|b| b.incarnation_id != incarnation_id)
        && ctx
            .heartbeats
            .has_valid_session(image, broker_id, ctx.now_ms)
    {
        return Err(MetadataError::DuplicateBrokerRegistration(
            "Another broker is registered with that broker id.".into(),
        ));
    }
    let mut names: Vec<&str> = endpoints.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(MetadataError::InvalidRequest(
            "duplicate listener name in the registration".into(),
        ));
    }
    let (broker_epoch, fenced, in_controlled_shutdown) = match existing {
        Some(b) if b.incarnation_id == incarnation_id => {
            (b.epoch, b.fenced, b.in_controlled_shutdown)
        }
        // A new incarnation: epoch = the offset of this record, fenced until caught up.
        _ => (ctx.next_offset, true, false),
    };
    let record = RegisterBrokerRecord {
        broker_id,
        incarnation_id,
        broker_epoch,
        end_points: endpoints
            .iter()
            .map(|e| skiff_protocol::BrokerEndpoint {
                name: e.name.clone(),
                host: e.host.clone(),
                port: e.port,
                security_protocol: e.security_protocol,
            })
            .collect(),
        rack: rack.clone(),
        fenced,
        in_controlled_shutdown,
        ..RegisterBrokerRecord::default()
    };
    // A new incarnation replacing an unfenced one (its session expired, the expiry not run
    // yet): the old incarnation's leaderships move first, as its fencing would have moved
    // them. Kafka 4.0-IV0 leaves them (its unclean-shutdown handler needs ELR).
    let mut records = match existing {
        Some(b) if b.incarnation_id != incarnation_id && !b.fenced => {
            let cfg = ctx.heartbeats.election_config();
            leader_and_isr_updates(image, Some(broker_id), None, &cfg, |p| {
                p.isr.contains(&broker_id)
            })
        }
        _ => Vec::new(),
    };
    records.push(Record::RegisterBroker(record));
    Ok((records, Response::Registered { broker_epoch }))
}
