//! Seed inputs for the three harnesses, all made with Skiff's own encoders: request frames via
//! `skiff_protocol::encode_request`, batches via `skiff_record::BatchBuilder` (every codec), and
//! segment directories via `skiff_storage::Log` appends. `examples/gen_corpus.rs` writes them
//! to `fuzz/corpus/<target>/`; `cargo fuzz cmin` then keeps the ones that add coverage.

use bytes::{Bytes, BytesMut};
use skiff_protocol::*;
use skiff_record::{
    BatchBuilder, BatchOptions, Compression, Header, TimestampType, set_base_offset,
};
use skiff_storage::{Log, LogOpenOptions};
use skiff_types::TopicPartition;

use crate::segment::{SegmentInput, encode_input, harness_config};

/// One named seed.
pub type Seed = (String, Vec<u8>);

/// A batch timestamp the validator accepts for `crate::batch::NOW_MS`.
const TS: i64 = crate::batch::NOW_MS - 1_000;

// ---------------------------------------------------------------- request frames

/// A default (all fields at their defaults) body of `key`.
pub fn default_body(key: ApiKey) -> RequestBody {
    match key {
        ApiKey::Produce => RequestBody::Produce(Default::default()),
        ApiKey::Fetch => RequestBody::Fetch(Default::default()),
        ApiKey::ListOffsets => RequestBody::ListOffsets(Default::default()),
        ApiKey::Metadata => RequestBody::Metadata(Default::default()),
        ApiKey::OffsetCommit => RequestBody::OffsetCommit(Default::default()),
        ApiKey::OffsetFetch => RequestBody::OffsetFetch(Default::default()),
        ApiKey::FindCoordinator => RequestBody::FindCoordinator(Default::default()),
        ApiKey::JoinGroup => RequestBody::JoinGroup(Default::default()),
        ApiKey::Heartbeat => RequestBody::Heartbeat(Default::default()),
        ApiKey::LeaveGroup => RequestBody::LeaveGroup(Default::default()),
        ApiKey::SyncGroup => RequestBody::SyncGroup(Default::default()),
        ApiKey::DescribeGroups => RequestBody::DescribeGroups(Default::default()),
        ApiKey::ListGroups => RequestBody::ListGroups(Default::default()),
        ApiKey::ApiVersions => RequestBody::ApiVersions(Default::default()),
        ApiKey::CreateTopics => RequestBody::CreateTopics(Default::default()),
        ApiKey::DeleteTopics => RequestBody::DeleteTopics(Default::default()),
        ApiKey::DeleteRecords => RequestBody::DeleteRecords(Default::default()),
        ApiKey::InitProducerId => RequestBody::InitProducerId(Default::default()),
        ApiKey::OffsetForLeaderEpoch => RequestBody::OffsetForLeaderEpoch(Default::default()),
        ApiKey::DescribeConfigs => RequestBody::DescribeConfigs(Default::default()),
        ApiKey::AlterConfigs => RequestBody::AlterConfigs(Default::default()),
        ApiKey::DescribeLogDirs => RequestBody::DescribeLogDirs(Default::default()),
        ApiKey::CreatePartitions => RequestBody::CreatePartitions(Default::default()),
        ApiKey::DeleteGroups => RequestBody::DeleteGroups(Default::default()),
        ApiKey::IncrementalAlterConfigs => RequestBody::IncrementalAlterConfigs(Default::default()),
        ApiKey::OffsetDelete => RequestBody::OffsetDelete(Default::default()),
        ApiKey::DescribeCluster => RequestBody::DescribeCluster(Default::default()),
        ApiKey::DescribeProducers => RequestBody::DescribeProducers(Default::default()),
        ApiKey::ConsumerGroupHeartbeat => RequestBody::ConsumerGroupHeartbeat(Default::default()),
        ApiKey::ConsumerGroupDescribe => RequestBody::ConsumerGroupDescribe(Default::default()),
    }
}

/// Bodies with real content for the busiest APIs (some only encode at some versions).
fn rich_bodies() -> Vec<(&'static str, RequestBody)> {
    let batch = Bytes::from(sample_batch(Compression::Zstd, 3, false));
    let produce = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: "orders".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Records::Bytes(batch)),
            }],
        }],
    };
    let fetch_partition = FetchPartition {
        partition: 0,
        current_leader_epoch: 3,
        fetch_offset: 42,
        last_fetched_epoch: -1,
        log_start_offset: -1,
        partition_max_bytes: 1 << 20,
        ..Default::default()
    };
    let fetch = |topic: &str| FetchRequest {
        replica_id: -1,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 50 << 20,
        isolation_level: 1,
        session_id: 0,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![fetch_partition.clone()],
            ..Default::default()
        }],
        rack_id: String::new(),
        ..Default::default()
    };
    let metadata = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("orders".into()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: true,
        ..Default::default()
    };
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "orders".into(),
            num_partitions: 3,
            replication_factor: 1,
            assignments: vec![],
            configs: vec![CreatableTopicConfig {
                name: "cleanup.policy".into(),
                value: Some("compact".into()),
            }],
        }],
        timeout_ms: 30_000,
        validate_only: false,
    };
    let join = JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 45_000,
        rebalance_timeout_ms: 300_000,
        member_id: String::new(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(&[
                0, 1, 0, 0, 0, 1, 0, 6, b'o', b'r', b'd', b'e', b'r', b's',
            ]),
        }],
        ..Default::default()
    };
    let commit = OffsetCommitRequest {
        group_id: "g".into(),
        generation_id_or_member_epoch: 1,
        member_id: "m-1".into(),
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "orders".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 42,
                committed_leader_epoch: -1,
                committed_metadata: Some(String::new()),
            }],
        }],
        ..Default::default()
    };
    let list_offsets = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![ListOffsetsTopic {
            name: "orders".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: -2,
            }],
        }],
        ..Default::default()
    };
    let sync = SyncGroupRequest {
        group_id: "g".into(),
        generation_id: 1,
        member_id: "m-1".into(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: "m-1".into(),
            assignment: Bytes::from_static(&[0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
        }],
        ..Default::default()
    };
    let describe_configs = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: 2,
            resource_name: "orders".into(),
            configuration_keys: Some(vec!["retention.ms".into()]),
        }],
        include_synonyms: true,
        include_documentation: true,
    };
    let incremental = IncrementalAlterConfigsRequest {
        resources: vec![IncrementalAlterConfigsRequestAlterConfigsResource {
            resource_type: 2,
            resource_name: "orders".into(),
            configs: vec![IncrementalAlterConfigsRequestAlterableConfig {
                name: "retention.ms".into(),
                config_operation: 0,
                value: Some("1000".into()),
            }],
        }],
        validate_only: false,
    };
    vec![
        ("produce", RequestBody::Produce(produce)),
        ("fetch_by_name", RequestBody::Fetch(fetch("orders"))),
        ("fetch_by_id", RequestBody::Fetch(fetch(""))),
        ("metadata", RequestBody::Metadata(metadata)),
        ("create_topics", RequestBody::CreateTopics(create)),
        ("join_group", RequestBody::JoinGroup(join)),
        ("offset_commit", RequestBody::OffsetCommit(commit)),
        ("list_offsets", RequestBody::ListOffsets(list_offsets)),
        ("sync_group", RequestBody::SyncGroup(sync)),
        (
            "describe_configs",
            RequestBody::DescribeConfigs(describe_configs),
        ),
        (
            "incremental_alter_configs",
            RequestBody::IncrementalAlterConfigs(incremental),
        ),
    ]
}

/// A whole frame (without its size prefix) for `body` at `version`, if it encodes there.
pub fn request_frame(body: &RequestBody, version: i16, correlation_id: i32) -> Option<Vec<u8>> {
    let header = RequestHeader {
        request_api_key: body.api_key() as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some("skiff-seed".into()),
    };
    let mut out = BytesMut::new();
    encode_request(&header, body, &mut out).ok()?;
    Some(out[4..].to_vec())
}

/// Every API at every supported version with a default body, plus the rich bodies at every
/// version where they encode.
pub fn request_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for &key in ApiKey::ALL {
        let (min, max) = key.supported_versions();
        let body = default_body(key);
        for v in min..=max {
            if let Some(frame) = request_frame(&body, v, 7) {
                seeds.push((format!("default-{}-v{v}", key.name()), frame));
            }
        }
    }
    for (name, body) in rich_bodies() {
        let (min, max) = body.api_key().supported_versions();
        for v in min..=max {
            if let Some(frame) = request_frame(&body, v, 1_000) {
                seeds.push((format!("{name}-v{v}"), frame));
            }
        }
    }
    seeds
}

// ---------------------------------------------------------------- record batches

/// A batch of `n` records (keys, values, headers, a null value) with `codec`, timestamps the
/// validator accepts, base offset 0.
pub fn sample_batch(codec: Compression, n: i32, idempotent: bool) -> Vec<u8> {
    let mut opts = BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    };
    if idempotent {
        opts.producer_id = 1000;
        opts.producer_epoch = 0;
        opts.base_sequence = 0;
    }
    build(opts, n)
}

fn build(opts: BatchOptions, n: i32) -> Vec<u8> {
    let mut b = BatchBuilder::new(opts);
    for i in 0..n {
        let key = format!("key-{i}");
        let value = format!(
            "value-{i}-{}",
            "x".repeat(usize::try_from(i % 7).unwrap_or(0))
        );
        let headers = [
            Header {
                key: b"trace",
                value: Some(b"abc"),
            },
            Header {
                key: b"empty",
                value: None,
            },
        ];
        let h: &[Header<'_>] = if i % 2 == 0 { &headers } else { &[] };
        let value = (i % 5 != 4).then_some(value.as_bytes());
        b.append(TS + i64::from(i), Some(key.as_bytes()), value, h);
    }
    b.build().expect("sample batch builds")
}

/// Batches from `BatchBuilder` with every codec and the interesting header flags.
pub fn batch_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for codec in Compression::ALL {
        seeds.push((format!("{}-3", codec.name()), sample_batch(codec, 3, false)));
        seeds.push((
            format!("{}-40-idempotent", codec.name()),
            sample_batch(codec, 40, true),
        ));
    }
    let variants: Vec<(&str, BatchOptions)> = vec![
        (
            "transactional",
            BatchOptions {
                is_transactional: true,
                producer_id: 7,
                producer_epoch: 1,
                base_sequence: 0,
                ..BatchOptions::default()
            },
        ),
        (
            "log-append-time",
            BatchOptions {
                timestamp_type: TimestampType::LogAppendTime,
                ..BatchOptions::default()
            },
        ),
        (
            "delete-horizon-gzip",
            BatchOptions {
                delete_horizon_ms: Some(TS),
                compression: Compression::Gzip,
                ..BatchOptions::default()
            },
        ),
        (
            "offset-42-epoch-5-lz4",
            BatchOptions {
                base_offset: 42,
                partition_leader_epoch: 5,
                compression: Compression::Lz4,
                ..BatchOptions::default()
            },
        ),
    ];
    for (name, opts) in variants {
        seeds.push((name.to_string(), build(opts, 4)));
    }
    seeds.push(("empty".into(), build(BatchOptions::default(), 0)));
    // A control (transaction marker) batch: version 0, type 1 (commit).
    let mut marker = BatchBuilder::new(BatchOptions {
        is_transactional: true,
        is_control: true,
        producer_id: 7,
        producer_epoch: 1,
        ..BatchOptions::default()
    });
    marker.append(TS, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0]), &[]);
    seeds.push((
        "control-commit".into(),
        marker.build().expect("marker builds"),
    ));
    // Bare compressed payloads (the codec checks sniff the magic), including LZ4 frames with
    // the optional descriptor features and linked blocks (the decoder's fallback path).
    let text: Vec<u8> = (0..600u32)
        .flat_map(|i| format!("record-{i};").into_bytes())
        .collect();
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let packed = skiff_record::compress(codec, None, &text).expect("compress seed");
        seeds.push((format!("raw-{}", codec.name()), packed));
    }
    for (name, info) in [
        (
            "raw-lz4-checksums-size",
            lz4_flex::frame::FrameInfo::new()
                .block_checksums(true)
                .content_checksum(true)
                .content_size(Some(text.len() as u64)),
        ),
        (
            "raw-lz4-linked",
            lz4_flex::frame::FrameInfo::new().block_mode(lz4_flex::frame::BlockMode::Linked),
        ),
    ] {
        use std::io::Write;
        let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        enc.write_all(&text).expect("lz4 seed");
        seeds.push((name.to_string(), enc.finish().expect("lz4 seed")));
    }
    // Two batches back to back (a log region; validation refuses the trailing batch).
    let mut two = sample_batch(Compression::None, 2, false);
    let mut second = sample_batch(Compression::Snappy, 2, false);
    set_base_offset(&mut second, 2);
    two.extend_from_slice(&second);
    seeds.push(("two-batches".into(), two));
    seeds
}

// ---------------------------------------------------------------- segment directories

/// One segment's files: base offset, `.log`, `.index`, `.timeindex`.
type SegmentFiles = (u64, Vec<u8>, Vec<u8>, Vec<u8>);

/// Appends `batches` to a fresh log in a temp dir; returns the `.log`, `.index` and
/// `.timeindex` of every segment after a clean close, in base offset order.
fn build_log(
    scratch: &std::path::Path,
    dense_index: bool,
    batches: &[Vec<u8>],
    roll_after: Option<usize>,
) -> Vec<SegmentFiles> {
    let dir = scratch.join("t-0");
    let _ = std::fs::remove_dir_all(&dir);
    let (mut log, _) = Log::open(
        &dir,
        TopicPartition::new("t", 0),
        harness_config(dense_index),
        LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: true,
            now_ms: crate::segment::NOW_MS,
        },
    )
    .expect("open seed log");
    for (i, b) in batches.iter().enumerate() {
        if roll_after == Some(i) {
            log.roll(crate::segment::NOW_MS).expect("roll");
        }
        let mut bytes = b.clone();
        log.append_as_leader(
            &mut bytes,
            3 + i32::try_from(i / 3).unwrap_or(0),
            crate::segment::NOW_MS,
        )
        .expect("append seed batch");
    }
    log.close(crate::segment::NOW_MS).expect("close seed log");
    let bases: Vec<u64> = log.segments().map(|s| s.base_offset() as u64).collect();
    drop(log);
    let read = |base: u64, suffix: &str| {
        std::fs::read(dir.join(format!("{base:020}{suffix}"))).unwrap_or_default()
    };
    bases
        .into_iter()
        .map(|b| (b, read(b, ".log"), read(b, ".index"), read(b, ".timeindex")))
        .collect()
}

/// Segment directories built by `Log` appends: every codec, sparse and dense indexes, with
/// and without index files, two segments, plus a torn tail and a flipped CRC byte.
pub fn segment_seeds(scratch: &std::path::Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mixed: Vec<Vec<u8>> = Compression::ALL
        .iter()
        .enumerate()
        .map(|(i, &c)| sample_batch(c, 2 + i32::try_from(i).unwrap_or(0), false))
        .collect();
    let idempotent: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            build(
                BatchOptions {
                    producer_id: 1000,
                    producer_epoch: 0,
                    base_sequence: i * 3,
                    ..BatchOptions::default()
                },
                3,
            )
        })
        .collect();

    for dense in [false, true] {
        let segs = build_log(scratch, dense, &mixed, None);
        let (_, log, idx, tidx) = segs[0].clone();
        let tag = if dense { "dense" } else { "sparse" };
        seeds.push((
            format!("mixed-{tag}-no-index"),
            encode_input(&SegmentInput {
                dense_index: dense,
                log0: log.clone(),
                ..Default::default()
            }),
        ));
        seeds.push((
            format!("mixed-{tag}-with-index"),
            encode_input(&SegmentInput {
                dense_index: dense,
                indexes: Some((idx, tidx)),
                log0: log.clone(),
                ..Default::default()
            }),
        ));
        // Torn tail: the last batch loses its last 7 bytes.
        seeds.push((
            format!("mixed-{tag}-torn"),
            encode_input(&SegmentInput {
                dense_index: dense,
                log0: log[..log.len() - 7].to_vec(),
                ..Default::default()
            }),
        ));
        // A flipped byte inside the second batch's records (its CRC no longer matches).
        let mut flipped = log.clone();
        let second = mixed[0].len() + 70;
        if second < flipped.len() {
            flipped[second] ^= 0x5a;
        }
        // The second batch's base offset moved back onto the first batch's offsets, CRCs
        // recomputed by the harness: recovery must cut at the non-increasing offset.
        let mut rewound = log.clone();
        let at = mixed[0].len();
        rewound[at..at + 8].copy_from_slice(&0i64.to_be_bytes());
        seeds.push((
            format!("mixed-{tag}-rewound-offset-fixed-crc"),
            encode_input(&SegmentInput {
                dense_index: dense,
                fix_crcs: true,
                log0: rewound,
                ..Default::default()
            }),
        ));
        seeds.push((
            format!("mixed-{tag}-bad-crc"),
            encode_input(&SegmentInput {
                dense_index: dense,
                log0: flipped,
                ..Default::default()
            }),
        ));
    }

    let segs = build_log(scratch, true, &idempotent, Some(2));
    if let [(_, log0, idx, tidx), (base1, log1, _, _)] = segs.as_slice() {
        seeds.push((
            "idempotent-two-segments".into(),
            encode_input(&SegmentInput {
                dense_index: true,
                indexes: Some((idx.clone(), tidx.clone())),
                log0: log0.clone(),
                second: Some((u32::try_from(*base1).unwrap_or(1), log1.clone())),
                fix_crcs: false,
            }),
        ));
    }
    seeds.push(("empty".into(), encode_input(&SegmentInput::default())));
    seeds
}
