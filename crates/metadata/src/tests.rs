//! Store tests: every mutation survives a reopen; ids are never reused.

use std::collections::BTreeMap;

use crate::{MetadataError, MetadataStore, validate_topic_name};

fn dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("__cluster_metadata-0");
    (t, p)
}

#[test]
fn topics_configs_partitions_survive_reopen() {
    let (_t, p) = dir();
    let cluster;
    let id;
    {
        let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
        cluster = s.cluster_id();
        assert_eq!(cluster.len(), 22);
        let cfg = BTreeMap::from([("retention.ms".to_string(), "1000".to_string())]);
        id = s.create_topic("orders", 3, cfg).unwrap().id;
        s.create_topic("gone", 1, BTreeMap::new()).unwrap();
        assert!(matches!(
            s.create_topic("orders", 1, BTreeMap::new()),
            Err(MetadataError::TopicAlreadyExists(_))
        ));
        s.delete_topic("gone").unwrap();
        s.create_partitions("orders", 5).unwrap();
        assert!(matches!(
            s.create_partitions("orders", 4),
            Err(MetadataError::InvalidPartitions(_))
        ));
        s.set_topic_configs(
            "orders",
            BTreeMap::from([("segment.ms".to_string(), "60000".to_string())]),
        )
        .unwrap();
    }
    let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
    assert_eq!(s.cluster_id(), cluster);
    let img = s.image();
    let t = img.topic("orders").unwrap();
    assert_eq!(t.partitions, 5);
    assert_eq!(t.id, id);
    assert_eq!(
        t.configs,
        BTreeMap::from([("segment.ms".to_string(), "60000".to_string())])
    );
    assert!(img.topic("gone").is_none());
    assert_eq!(img.topic_by_id(&id).unwrap().name, "orders");
}

#[test]
fn broker_config_layers_survive_reopen() {
    let (_t, p) = dir();
    let map = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    {
        let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
        s.set_broker_configs("", map(&[("log.retention.ms", "5"), ("a", "1")]))
            .unwrap();
        s.set_broker_configs("1", map(&[("max.connections", "9")]))
            .unwrap();
        // Replacing a layer removes the keys it no longer has.
        s.set_broker_configs("", map(&[("log.retention.ms", "6")]))
            .unwrap();
        s.set_broker_configs("1", BTreeMap::new()).unwrap();
        // Topic configs with the same resource name are a different resource.
        s.create_topic("t", 1, map(&[("retention.ms", "7")]))
            .unwrap();
        // So are group configs, even for a group named like the broker.
        s.set_group_configs("1", map(&[("consumer.session.timeout.ms", "50000")]))
            .unwrap();
        s.set_group_configs(
            "g",
            map(&[("consumer.heartbeat.interval.ms", "6000"), ("x", "1")]),
        )
        .unwrap();
        s.set_group_configs("g", map(&[("consumer.heartbeat.interval.ms", "7000")]))
            .unwrap();
        s.set_group_configs("gone", map(&[("x", "1")])).unwrap();
        s.set_group_configs("gone", BTreeMap::new()).unwrap();
    }
    let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
    let img = s.image();
    assert_eq!(
        img.broker_configs,
        BTreeMap::from([("".to_string(), map(&[("log.retention.ms", "6")]))])
    );
    assert_eq!(
        img.topic("t").unwrap().configs,
        map(&[("retention.ms", "7")])
    );
    assert_eq!(
        img.group_configs,
        BTreeMap::from([
            (
                "1".to_string(),
                map(&[("consumer.session.timeout.ms", "50000")])
            ),
            (
                "g".to_string(),
                map(&[("consumer.heartbeat.interval.ms", "7000")])
            ),
        ])
    );
}

#[test]
fn producer_ids_never_reused_across_restarts() {
    let (_t, p) = dir();
    let first: Vec<i64> = {
        let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
        (0..3).map(|_| s.allocate_producer_id().unwrap()).collect()
    };
    assert_eq!(first, vec![0, 1, 2]);
    let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
    let next = s.allocate_producer_id().unwrap();
    assert!(
        next >= crate::PRODUCER_ID_BLOCK_SIZE,
        "restart starts a new block, got {next}"
    );
}

/// issue 12 item 10: after a reservation no id at or below the reserved one is issued, even
/// when the log's blocks are behind it (a lost tail), and the new block is durable.
#[test]
fn reserved_producer_ids_are_never_issued() {
    let (_t, p) = dir();
    let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
    // The log has no block yet (as after losing its tail): ids start above the reservation.
    s.reserve_producer_ids_above(41);
    assert_eq!(s.allocate_producer_id().unwrap(), 42);
    assert_eq!(s.allocate_producer_id().unwrap(), 43);
    // A reservation below what is issued already changes nothing.
    s.reserve_producer_ids_above(5);
    assert_eq!(s.allocate_producer_id().unwrap(), 44);
    // One inside the current block (42..1042) drops the rest of it.
    s.reserve_producer_ids_above(100);
    assert_eq!(s.allocate_producer_id().unwrap(), 1042);
    s.close().unwrap();
    drop(s);
    let s = MetadataStore::open(&p, 1, skiff_types::Clock::manual(1_700_000_000_000)).unwrap();
    let next = s.allocate_producer_id().unwrap();
    assert_eq!(
        next,
        1042 + crate::PRODUCER_ID_BLOCK_SIZE,
        "the blocks were recorded"
    );
}

#[test]
fn topic_names() {
    for (name, ok) in [
        ("a", true),
        ("a.b_c-D9", true),
        ("", false),
        (".", false),
        ("..", false),
        ("a b", false),
        ("ä", false),
    ] {
        assert_eq!(validate_topic_name(name).is_ok(), ok, "{name:?}");
    }
    assert!(validate_topic_name(&"x".repeat(249)).is_ok());
    assert!(validate_topic_name(&"x".repeat(250)).is_err());
}
