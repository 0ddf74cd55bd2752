//! KRaft's metadata record framing (`MetadataRecordSerde`): unsigned varints frame version (1),
//! record type and record version, then the record body.
//!
//! Invariant: every record the controller ([`crate::controller`]) emits is a variant here and
//! encodes at one fixed version (per record shape); decoding accepts every version the generated code knows, and
//! skips record types Skiff does not use yet (so a newer log still opens).

use bytes::{Buf, Bytes, BytesMut};
use skiff_protocol::{
    AccessControlEntryRecord, BrokerRegistrationChangeRecord, Codec, ConfigRecord, MetadataRecord,
    PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord,
    RemoveAccessControlEntryRecord, RemoveTopicRecord, RemoveUserScramCredentialRecord,
    TopicRecord, UserScramCredentialRecord, WireWrite,
};

use crate::MetadataError;

const FRAME_VERSION: u32 = 1;

/// The metadata records Skiff writes and replays (the unit a [`crate::MetadataLog`] commits).
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    Topic(TopicRecord),
    Partition(PartitionRecord),
    /// Replayed with Kafka's merge rules (absent fields unchanged); emitted by the
    /// controller when fencing, unfencing or a controlled shutdown moves leaders and ISRs,
    /// and for a leader's AlterPartition (its new ISR).
    PartitionChange(PartitionChangeRecord),
    Config(ConfigRecord),
    RemoveTopic(RemoveTopicRecord),
    ProducerIds(ProducerIdsRecord),
    RegisterBroker(RegisterBrokerRecord),
    /// Fencing, unfencing, controlled shutdown of a registered broker (v0; v1 when it
    /// carries `in_controlled_shutdown`).
    BrokerRegistrationChange(BrokerRegistrationChangeRecord),
    /// Issue 19: one ACL, by id (CreateAcls).
    AccessControlEntry(AccessControlEntryRecord),
    /// Issue 19: removes the ACL with this id (DeleteAcls).
    RemoveAccessControlEntry(RemoveAccessControlEntryRecord),
    /// Issue 19: one user's SCRAM credential for one mechanism (AlterUserScramCredentials).
    UserScramCredential(UserScramCredentialRecord),
    /// Issue 19: removes one user's credential for one mechanism.
    RemoveUserScramCredential(RemoveUserScramCredentialRecord),
}

fn frame<R: MetadataRecord>(r: &R, version: i16) -> Result<Bytes, MetadataError> {
    let mut out = BytesMut::new();
    out.put_uvarint(FRAME_VERSION);
    out.put_uvarint(R::RECORD_TYPE as u32);
    out.put_uvarint(version as u32);
    r.encode(&mut out, version)
        .map_err(|e| MetadataError::Storage(e.to_string()))?;
    Ok(out.freeze())
}

impl Record {
    /// The framed bytes of this record (a record value in the metadata log).
    pub fn encode(&self) -> Result<Bytes, MetadataError> {
        match self {
            Record::Topic(r) => frame(r, 0),
            Record::Partition(r) => frame(r, 0),
            Record::PartitionChange(r) => frame(r, 0),
            Record::RegisterBroker(r) => frame(r, 3),
            Record::BrokerRegistrationChange(r) => {
                frame(r, if r.in_controlled_shutdown != 0 { 1 } else { 0 })
            }
            Record::Config(r) => frame(r, 0),
            Record::RemoveTopic(r) => frame(r, 0),
            Record::ProducerIds(r) => frame(r, 0),
            Record::AccessControlEntry(r) => frame(r, 0),
            Record::RemoveAccessControlEntry(r) => frame(r, 0),
            Record::UserScramCredential(r) => frame(r, 0),
            Record::RemoveUserScramCredential(r) => frame(r, 0),
        }
    }

    /// Decodes one framed record; unknown record types are `Ok(None)` (skipped on replay).
    pub fn decode(mut buf: Bytes) -> Result<Option<Record>, MetadataError> {
        let bad = |what: &str| MetadataError::Storage(format!("malformed metadata record: {what}"));
        let frame_version = read_uvarint(&mut buf).ok_or_else(|| bad("frame version"))?;
        if frame_version != FRAME_VERSION {
            return Err(bad("unknown frame version"));
        }
        let kind = read_uvarint(&mut buf).ok_or_else(|| bad("record type"))?;
        let version = read_uvarint(&mut buf).ok_or_else(|| bad("record version"))?;
        let version = i16::try_from(version).map_err(|_| bad("record version"))?;
        let err = |e: skiff_protocol::DecodeError| MetadataError::Storage(e.to_string());
        let rec = match i16::try_from(kind).map_err(|_| bad("record type"))? {
            TopicRecord::RECORD_TYPE => {
                Record::Topic(TopicRecord::decode(&mut buf, version).map_err(err)?)
            }
            PartitionRecord::RECORD_TYPE => {
                Record::Partition(PartitionRecord::decode(&mut buf, version).map_err(err)?)
            }
            PartitionChangeRecord::RECORD_TYPE => Record::PartitionChange(
                PartitionChangeRecord::decode(&mut buf, version).map_err(err)?,
            ),
            RegisterBrokerRecord::RECORD_TYPE => Record::RegisterBroker(
                RegisterBrokerRecord::decode(&mut buf, version).map_err(err)?,
            ),
            BrokerRegistrationChangeRecord::RECORD_TYPE => Record::BrokerRegistrationChange(
                BrokerRegistrationChangeRecord::decode(&mut buf, version).map_err(err)?,
            ),
            ConfigRecord::RECORD_TYPE => {
                Record::Config(ConfigRecord::decode(&mut buf, version).map_err(err)?)
            }
            RemoveTopicRecord::RECORD_TYPE => {
                Record::RemoveTopic(RemoveTopicRecord::decode(&mut buf, version).map_err(err)?)
            }
            ProducerIdsRecord::RECORD_TYPE => {
                Record::ProducerIds(ProducerIdsRecord::decode(&mut buf, version).map_err(err)?)
            }
            AccessControlEntryRecord::RECORD_TYPE => Record::AccessControlEntry(
                AccessControlEntryRecord::decode(&mut buf, version).map_err(err)?,
            ),
            RemoveAccessControlEntryRecord::RECORD_TYPE => Record::RemoveAccessControlEntry(
                RemoveAccessControlEntryRecord::decode(&mut buf, version).map_err(err)?,
            ),
            UserScramCredentialRecord::RECORD_TYPE => Record::UserScramCredential(
                UserScramCredentialRecord::decode(&mut buf, version).map_err(err)?,
            ),
            RemoveUserScramCredentialRecord::RECORD_TYPE => Record::RemoveUserScramCredential(
                RemoveUserScramCredentialRecord::decode(&mut buf, version).map_err(err)?,
            ),
            _ => return Ok(None),
        };
        Ok(Some(rec))
    }
}

fn read_uvarint(buf: &mut Bytes) -> Option<u32> {
    let mut value: u32 = 0;
    for i in 0..5 {
        if !buf.has_remaining() {
            return None;
        }
        let b = buf.get_u8();
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}
