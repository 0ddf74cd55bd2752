//! Shell tests: self-registration, failed proposals, logs written before the state machine,
//! and "handle then replay" equal to what the shell exposes after a reopen.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use skiff_protocol::{
    ConfigRecord, PartitionRecord, ProducerIdsRecord, RemoveTopicRecord, TopicRecord,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::{
    BrokerHeartbeats, Committed, Ctx, Heartbeat, LocalMetadataLog, MetadataError, MetadataImage,
    MetadataLog, MetadataStore, Record, Request, Response, handle, replay,
};

/// An in-memory [`MetadataLog`] whose batches outlive the store (a "disk" to reopen).
#[derive(Clone, Debug, Default)]
struct MemoryLog(Arc<Mutex<Shared>>);

#[derive(Debug, Default)]
struct Shared {
    batches: Vec<Vec<Record>>,
    fail: bool,
}

impl MetadataLog for MemoryLog {
    fn propose(&mut self, records: &[Record], _now_ms: i64) -> Result<Committed, MetadataError> {
        let mut s = self.0.lock();
        if s.fail {
            return Err(MetadataError::Storage("disk on fire".into()));
        }
        let base = s.batches.iter().map(Vec::len).sum::<usize>() as i64;
        s.batches.push(records.to_vec());
        Ok(Committed {
            base_offset: base,
            end_offset: base + records.len() as i64,
        })
    }

    fn replay(&mut self, apply: &mut dyn FnMut(Record)) -> Result<i64, MetadataError> {
        let s = self.0.lock();
        let mut n = 0;
        for r in s.batches.iter().flatten() {
            apply(r.clone());
            n += 1;
        }
        Ok(n)
    }

    fn close(&mut self, _now_ms: i64) -> Result<(), MetadataError> {
        Ok(())
    }

    fn quorum_state(&self) -> crate::meta_log::QuorumState {
        let end = self.0.lock().batches.iter().map(Vec::len).sum::<usize>() as i64;
        crate::meta_log::QuorumState {
            leader_epoch: 0,
            high_watermark: end,
            log_end_offset: end,
        }
    }
}

fn open_mem(log: &MemoryLog, node: i32) -> MetadataStore {
    MetadataStore::open_with_log(
        Box::new(log.clone()),
        "c".into(),
        node,
        skiff_types::Clock::manual(1_700_000_000_000),
    )
    .unwrap()
}

fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const CLUSTER: &str = "AAAAAAAAAAAAAAAAAAAAAA";

/// A formatted log dir and the metadata dir inside it.
fn formatted_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    crate::format_log_dir(t.path(), CLUSTER, 1, false).unwrap();
    let p = t.path().join("__cluster_metadata-0");
    (t, p)
}

#[test]
fn open_registers_this_node_once_and_durably() {
    let log = MemoryLog::default();
    let s = open_mem(&log, 3);
    let b = s.image().broker(3).cloned().expect("registered at open");
    // Epoch = the registration record's offset (0); registered fenced, then unfenced by its
    // own heartbeat (the controller's broker is caught up).
    assert_eq!((b.epoch, b.fenced), (0, false));
    assert_eq!(log.0.lock().batches.len(), 2, "register, unfence");
    assert!(matches!(
        log.0.lock().batches[0].as_slice(),
        [Record::RegisterBroker(r)] if r.broker_id == 3 && r.fenced && r.broker_epoch == 0
    ));
    assert!(matches!(
        log.0.lock().batches[1].as_slice(),
        [Record::BrokerRegistrationChange(c)]
            if (c.broker_id, c.broker_epoch, c.fenced) == (3, 0, -1)
    ));
    drop(s);
    let s = open_mem(&log, 3);
    assert_eq!(
        s.image().broker(3),
        Some(&b),
        "replayed, not registered again"
    );
    assert_eq!(log.0.lock().batches.len(), 2);
    // Another node id on the same log registers itself beside the first, with a new epoch
    // (the log's end offset, 2).
    let s = open_mem(&log, 4);
    assert_eq!(
        s.image().broker(4).map(|b| (b.epoch, b.fenced)),
        Some((2, false))
    );
    assert!(s.image().broker(3).is_some());

    // On disk: the registration survives a reopen (same incarnation, so not re-registered).
    let (_t, p) = formatted_dir();
    let first = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000))
        .unwrap()
        .image()
        .broker(1)
        .cloned();
    assert!(first.is_some());
    let again = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000))
        .unwrap()
        .image()
        .broker(1)
        .cloned();
    assert_eq!(again, first);
}

#[test]
fn a_failed_proposal_publishes_nothing() {
    let log = MemoryLog::default();
    let s = open_mem(&log, 1);
    let before = s.image();
    log.0.lock().fail = true;
    let e = s.create_topic("t", 1, BTreeMap::new()).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::KafkaStorageError);
    assert!(s.allocate_producer_id().is_err());
    assert!(s.set_broker_configs("", map(&[("a", "1")])).is_err());
    assert_eq!(*s.image(), *before, "the image is unchanged");
    // Validation errors come before the log: the same code whatever the log does.
    let e = s.delete_topic("t").unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::UnknownTopicOrPartition);
    log.0.lock().fail = false;
    assert_eq!(
        s.create_topic("t", 1, BTreeMap::new()).unwrap().partitions,
        1
    );
    assert_eq!(s.allocate_producer_id().unwrap(), 0, "no block was lost");
    assert_eq!(s.image().partition("t", 0).map(|p| p.leader), Some(1));
}

/// Batches as the store wrote them before the state machine (no RegisterBrokerRecord).
fn legacy_batches() -> Vec<Vec<Record>> {
    let orders = Uuid::from_u128(1);
    let gone = Uuid::from_u128(2);
    let part = |t, p| {
        Record::Partition(PartitionRecord {
            partition_id: p,
            topic_id: t,
            replicas: vec![1],
            isr: vec![1],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            ..PartitionRecord::default()
        })
    };
    let cfg = |rt, res: &str, k: &str, v: Option<&str>| {
        Record::Config(ConfigRecord {
            resource_type: rt,
            resource_name: res.into(),
            name: k.into(),
            value: v.map(str::to_string),
        })
    };
    let topic = |name: &str, id| {
        Record::Topic(TopicRecord {
            name: name.into(),
            topic_id: id,
        })
    };
    let pids = |next| {
        Record::ProducerIds(ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 0,
            next_producer_id: next,
        })
    };
    vec![
        vec![
            topic("orders", orders),
            part(orders, 0),
            part(orders, 1),
            cfg(2, "orders", "retention.ms", Some("1000")),
        ],
        vec![topic("gone", gone), part(gone, 0)],
        vec![Record::RemoveTopic(RemoveTopicRecord { topic_id: gone })],
        vec![part(orders, 2)],
        vec![
            cfg(2, "orders", "retention.ms", None),
            cfg(2, "orders", "segment.ms", Some("60000")),
        ],
        vec![cfg(4, "", "log.retention.ms", Some("6"))],
        vec![pids(1000)],
        vec![pids(2000)],
    ]
}

#[test]
fn a_log_written_before_the_state_machine_replays_the_same() {
    let (_t, p) = formatted_dir();
    {
        let mut log = LocalMetadataLog::open(&p, 0).unwrap();
        for b in legacy_batches() {
            log.propose(&b, 0).unwrap();
        }
        log.close(0).unwrap();
    }
    for round in 0..2 {
        let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
        assert_eq!(s.cluster_id(), CLUSTER);
        let img = s.image();
        let t = img.topic("orders").unwrap();
        assert_eq!(t.partitions, 3, "round {round}");
        assert_eq!(t.id, *Uuid::from_u128(1).as_bytes());
        assert_eq!(t.configs, map(&[("segment.ms", "60000")]));
        assert!(img.topic("gone").is_none());
        assert_eq!(img.topics.len(), 1);
        assert_eq!(
            img.broker_configs,
            BTreeMap::from([(String::new(), map(&[("log.retention.ms", "6")]))])
        );
        for (i, (p, reg)) in img.partitions("orders").enumerate() {
            assert_eq!(p, i as i32);
            assert_eq!(
                (&reg.replicas, &reg.isr, reg.leader),
                (&vec![1], &vec![1], 1)
            );
            assert_eq!((reg.leader_epoch, reg.partition_epoch), (0, 0));
        }
        assert_eq!(img.partitions("orders").count(), 3);
        // Registered at the first open (epoch = the offset after the 13 legacy records);
        // the second replays that registration.
        assert_eq!(
            img.broker(1).map(|b| (b.epoch, b.fenced)),
            Some((13, false)),
            "round {round}"
        );
        let pid = s.allocate_producer_id().unwrap();
        assert_eq!(pid, 2000 + round * crate::PRODUCER_ID_BLOCK_SIZE);
        s.close().unwrap();
    }
}

#[test]
fn handle_then_replay_equals_the_shell_after_reopen() {
    let (_t, p) = formatted_dir();
    let heartbeats = BrokerHeartbeats::new(1_000, 9_000);
    let requests = [
        Request::CreateTopic {
            name: "orders".into(),
            topic_id: Uuid::from_u128(1),
            partitions: 3,
            replication_factor: 1,
            assignments: vec![],
            configs: map(&[("retention.ms", "1000")]),
        },
        Request::CreateTopic {
            name: "gone".into(),
            topic_id: Uuid::from_u128(2),
            partitions: 1,
            replication_factor: 1,
            assignments: vec![],
            configs: BTreeMap::new(),
        },
        Request::DeleteTopic {
            name: "gone".into(),
        },
        Request::CreatePartitions {
            name: "orders".into(),
            total: 5,
            assignments: vec![],
        },
        Request::SetTopicConfigs {
            name: "orders".into(),
            configs: map(&[("segment.ms", "60000")]),
        },
        Request::SetBrokerConfigs {
            resource_name: "1".into(),
            configs: map(&[("max.connections", "9")]),
        },
        Request::AllocateProducerIds { floor: 0 },
    ];
    let mut image = MetadataImage::default();
    let mut last_block = 0..0;
    {
        let mut log = LocalMetadataLog::open(&p, 0).unwrap();
        let mut offset = 0;
        let ctx = |next_offset| Ctx {
            node_id: 1,
            now_ms: 1_000,
            cluster_id: CLUSTER,
            next_offset,
            placement_start: 0,
            heartbeats: &heartbeats,
        };
        // Register (fenced), then one heartbeat at the log end unfences broker 1.
        let register = Request::RegisterBroker {
            cluster_id: CLUSTER.into(),
            broker_id: 1,
            incarnation_id: Uuid::from_u128(9),
            endpoints: vec![],
            rack: None,
        };
        let (records, _) = handle(&image, &register, &ctx(offset)).unwrap();
        log.propose(&records, 1_000).unwrap();
        image = replay(&image, &records);
        offset += records.len() as i64;
        let hb = Heartbeat {
            broker_id: 1,
            broker_epoch: 0,
            current_metadata_offset: offset,
            want_fence: false,
            want_shut_down: false,
        };
        let (records, reply) = heartbeats
            .clone()
            .heartbeat(&image, &hb, 1_000, offset)
            .unwrap();
        assert!(!reply.is_fenced);
        log.propose(&records, 1_000).unwrap();
        image = replay(&image, &records);
        offset += records.len() as i64;
        for r in &requests {
            let ctx = ctx(offset);
            let (records, response) = handle(&image, r, &ctx).unwrap();
            log.propose(&records, ctx.now_ms).unwrap();
            image = replay(&image, &records);
            offset += records.len() as i64;
            if let Response::ProducerIds(b) = response {
                last_block = b;
            }
        }
        log.close(0).unwrap();
    }
    assert_eq!(last_block, 0..crate::PRODUCER_ID_BLOCK_SIZE);
    let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
    assert_eq!(*s.image(), image, "the shell's image is the pure replay");
    assert_eq!(s.allocate_producer_id().unwrap(), last_block.end);
}
