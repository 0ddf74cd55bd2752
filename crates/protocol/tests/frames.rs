//! Headers and frames: header versions, client id encoding, ApiVersions' v0 response header,
//! and the zero-copy records path through `ChunkedWriter`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use skiff_protocol::*;

#[test]
fn header_versions_follow_flexibility() {
    assert_eq!(request_header_version(ApiKey::Metadata as i16, 8), 1);
    assert_eq!(request_header_version(ApiKey::Metadata as i16, 9), 2);
    assert_eq!(request_header_version(ApiKey::ApiVersions as i16, 3), 2);
    assert_eq!(request_header_version(ApiKey::ApiVersions as i16, 2), 1);
    assert_eq!(response_header_version(ApiKey::Fetch as i16, 12), 1);
    assert_eq!(response_header_version(ApiKey::Fetch as i16, 11), 0);
    for v in 0..=4 {
        assert_eq!(response_header_version(ApiKey::ApiVersions as i16, v), 0);
    }
}

#[test]
fn request_header_v2_has_a_classic_client_id_then_tagged_fields() {
    // Metadata v12: header v2. Hand-built bytes, with an unknown tagged field in the header.
    let mut frame = BytesMut::new();
    frame.put_i16(3);
    frame.put_i16(12);
    frame.put_i32(0x0102_0304);
    frame.put_i16(5);
    frame.extend_from_slice(b"skiff"); // int16 length, not compact
    frame.put_u8(1); // one tagged field
    frame.put_u8(9); // tag 9 (unknown: skipped)
    frame.put_u8(2); // size
    frame.extend_from_slice(&[0xaa, 0xbb]);
    // MetadataRequest v12 body: topics (compact, null), allow_auto_topic_creation,
    // include_topic_authorized_operations, tagged fields.
    frame.put_u8(0);
    frame.put_u8(1);
    frame.put_u8(0);
    frame.put_u8(0);
    let (header, body) = decode_request(frame.freeze()).unwrap();
    assert_eq!(header.correlation_id, 0x0102_0304);
    assert_eq!(header.client_id.as_deref(), Some("skiff"));
    let RequestBody::Metadata(m) = body else {
        panic!("wrong body")
    };
    assert_eq!(m.topics, None);
    assert!(m.allow_auto_topic_creation);

    // Our encoder writes the same header layout (minus the unknown tag).
    let mut out = BytesMut::new();
    header.encode(&mut out, 2).unwrap();
    assert_eq!(
        &out[..],
        &[
            0, 3, 0, 12, 1, 2, 3, 4, 0, 5, b's', b'k', b'i', b'f', b'f', 0
        ]
    );
}

#[test]
fn request_header_v1_null_client_id() {
    let header = RequestHeader {
        request_api_key: 0,
        request_api_version: 3,
        correlation_id: 1,
        client_id: None,
    };
    let mut out = BytesMut::new();
    header.encode(&mut out, 1).unwrap();
    assert_eq!(&out[..], &[0, 0, 0, 3, 0, 0, 0, 1, 0xff, 0xff]);
}

#[test]
fn api_versions_responses_use_header_v0_even_when_flexible() {
    for version in [0i16, 3, 4] {
        let body = ResponseBody::ApiVersions(ApiVersionsResponse {
            error_code: 35,
            api_keys: vec![ApiVersion {
                api_key: 18,
                min_version: 0,
                max_version: 4,
            }],
            ..Default::default()
        });
        let mut out = BytesMut::new();
        encode_response(42, ApiKey::ApiVersions, version, &body, &mut out).unwrap();
        let mut frame = out.freeze();
        let size = frame.get_i32() as usize;
        assert_eq!(size, frame.len());
        assert_eq!(frame.get_i32(), 42);
        // Header v0 has no tagged-field byte: the body's int16 error code follows directly.
        assert_eq!(frame.get_i16(), 35);
        let (header, decoded) = decode_response(ApiKey::ApiVersions, version, {
            let mut again = BytesMut::new();
            encode_response(42, ApiKey::ApiVersions, version, &body, &mut again).unwrap();
            again.freeze().slice(4..)
        })
        .unwrap();
        assert_eq!(header.correlation_id, 42);
        assert_eq!(decoded, body);
    }
}

#[test]
fn flexible_responses_use_header_v1() {
    let body = ResponseBody::Heartbeat(HeartbeatResponse {
        error_code: 27,
        ..Default::default()
    });
    let mut out = BytesMut::new();
    encode_response(9, ApiKey::Heartbeat, 4, &body, &mut out).unwrap();
    // size, correlation id, header tagged fields (0), throttle, error code, body tagged fields.
    assert_eq!(
        &out[..],
        &[0, 0, 0, 12, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 27, 0]
    );
    let err = encode_response(9, ApiKey::Fetch, 4, &body, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, EncodeError::ApiKeyMismatch { .. }));
}

#[test]
fn request_round_trip_through_frames() {
    let header = RequestHeader {
        request_api_key: ApiKey::Produce as i16,
        request_api_version: 9,
        correlation_id: 3,
        client_id: Some("producer-1".into()),
    };
    let records = Bytes::from_static(b"pretend this is a record batch");
    let body = RequestBody::Produce(ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: "orders".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Records::Bytes(records.clone())),
            }],
        }],
        ..Default::default()
    });
    let mut out = BytesMut::new();
    encode_request(&header, &body, &mut out).unwrap();
    let frame = out.freeze();
    let (h, b) = decode_request(frame.slice(4..)).unwrap();
    assert_eq!(h, header);
    assert_eq!(b, body);
    // Decoded records are a zero-copy slice of the frame.
    let RequestBody::Produce(p) = b else {
        unreachable!()
    };
    let Some(Records::Bytes(got)) = &p.topic_data[0].partition_data[0].records else {
        panic!()
    };
    let frame_range = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
    assert!(frame_range.contains(&(got.as_ptr() as usize)));
}

#[test]
fn fetch_response_with_a_file_region_becomes_chunks() {
    let file = Arc::new(tempfile_like());
    let region = FileRegion {
        file: file.clone(),
        position: 4096,
        len: 100,
    };
    let body = ResponseBody::Fetch(FetchResponse {
        responses: vec![FetchableTopicResponse {
            topic: String::new(),
            topic_id: uuid::Uuid::from_u128(7),
            partitions: vec![
                FetchResponsePartitionData {
                    partition_index: 0,
                    records: Some(Records::File(region.clone())),
                    ..Default::default()
                },
                FetchResponsePartitionData {
                    partition_index: 1,
                    records: Some(Records::Bytes(Bytes::from_static(b"xyz"))),
                    ..Default::default()
                },
            ],
        }],
        ..Default::default()
    });
    let mut chunked = ChunkedWriter::new();
    encode_response(1, ApiKey::Fetch, 16, &body, &mut chunked).unwrap();
    let total = chunked.len();
    let chunks = chunked.into_chunks();
    assert_eq!(chunks.len(), 3, "{chunks:?}");
    assert!(matches!(&chunks[0], Chunk::Bytes(_)));
    assert_eq!(chunks[1], Chunk::File(region));
    assert!(matches!(&chunks[2], Chunk::Bytes(_)));
    assert_eq!(chunks.iter().map(Chunk::len).sum::<usize>(), total);
    // The size prefix counts the file region.
    let Chunk::Bytes(first) = &chunks[0] else {
        unreachable!()
    };
    assert_eq!(
        i32::from_be_bytes(first[..4].try_into().unwrap()) as usize,
        total - 4
    );

    // An in-memory encoder refuses file regions.
    let err = encode_response(1, ApiKey::Fetch, 16, &body, &mut BytesMut::new()).unwrap_err();
    assert_eq!(err, EncodeError::FileRegionInMemoryEncoder);
}

fn tempfile_like() -> std::fs::File {
    std::fs::File::open("/dev/null").unwrap()
}

#[test]
fn non_default_field_absent_from_version_is_an_error_unless_ignorable() {
    // FetchResponse.session_id is 7+ and not ignorable.
    let r = FetchResponse {
        session_id: 5,
        ..Default::default()
    };
    assert!(matches!(
        r.encode(&mut BytesMut::new(), 6),
        Err(EncodeError::UnsupportedField { .. })
    ));
    assert!(r.encode(&mut BytesMut::new(), 7).is_ok());
    // error_code is 7+ but ignorable: silently dropped at v6.
    let r = FetchResponse {
        error_code: 5,
        ..Default::default()
    };
    let mut out = BytesMut::new();
    r.encode(&mut out, 6).unwrap();
    let back = FetchResponse::decode(&mut out.freeze(), 6).unwrap();
    assert_eq!(back.error_code, 0);
}

#[test]
fn defaults_honour_the_json() {
    let p = FetchResponsePartitionData::default();
    assert_eq!(p.last_stable_offset, -1);
    assert_eq!(p.preferred_read_replica, -1);
    assert_eq!(p.records, None);
    let r = FetchRequest::default();
    assert_eq!(r.replica_id, -1);
    assert_eq!(r.max_bytes, 0x7fff_ffff);
    assert_eq!(r.isolation_level, 0);
    let m = MetadataRequest::default();
    assert!(m.allow_auto_topic_creation);
    let c = ConsumerGroupHeartbeatRequest::default();
    assert_eq!(c.rack_id, None);
    assert_eq!(c.rebalance_timeout_ms, -1);
}

#[test]
fn tagged_fields_are_written_only_when_not_default() {
    let mut p = FetchResponsePartitionData::default();
    let mut out = BytesMut::new();
    p.write_probe(&mut out);
    let plain = out.len();
    p.current_leader.leader_id = 3;
    let mut out2 = BytesMut::new();
    p.write_probe(&mut out2);
    assert!(out2.len() > plain);
}

trait Probe {
    fn write_probe(&self, out: &mut BytesMut);
}

impl Probe for FetchResponsePartitionData {
    fn write_probe(&self, out: &mut BytesMut) {
        let r = FetchResponse {
            responses: vec![FetchableTopicResponse {
                partitions: vec![self.clone()],
                ..Default::default()
            }],
            ..Default::default()
        };
        r.encode(out, 12).unwrap();
    }
}

#[test]
fn supported_api_versions_lists_the_table() {
    let list = supported_api_versions();
    assert_eq!(list.len(), 57);
    for key in [56, 62, 63, 67, 24, 25, 26, 27, 28, 65, 66, 17, 36, 58] {
        // AlterPartition, BrokerRegistration, BrokerHeartbeat, AllocateProducerIds: the
        // cluster's controller RPCs; AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
        // WriteTxnMarkers, TxnOffsetCommit, DescribeTransactions, ListTransactions (issue 18);
        // SaslHandshake, SaslAuthenticate, Envelope (issue 19).
        assert!(
            list.iter().any(|a| a.api_key == key),
            "api key {key} listed"
        );
    }
    let fetch = list.iter().find(|a| a.api_key == 1).unwrap();
    assert_eq!((fetch.min_version, fetch.max_version), (4, 17));
    let produce = list.iter().find(|a| a.api_key == 0).unwrap();
    assert_eq!((produce.min_version, produce.max_version), (0, 11));
    assert!(list.windows(2).all(|w| w[0].api_key < w[1].api_key));
    for a in &list {
        let key = ApiKey::from_i16(a.api_key).unwrap();
        assert_eq!(key as i16, a.api_key);
        assert!(!key.name().is_empty());
    }
    assert_eq!(ApiKey::from_i16(1000), None);
}

/// Issue 19: the ACL and SCRAM-credential admin APIs round-trip through frames at every
/// supported version (v2+ of the ACL APIs and v0 of the SCRAM ones are flexible), with the
/// nullable fields both null and set.
#[test]
fn acl_and_scram_credential_apis_round_trip_through_frames() {
    let requests = [
        RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![AclCreation {
                resource_type: 2,
                resource_name: "orders".into(),
                resource_pattern_type: 4,
                principal: "User:alice".into(),
                host: "*".into(),
                operation: 3,
                permission_type: 3,
            }],
        }),
        RequestBody::DescribeAcls(DescribeAclsRequest {
            resource_type_filter: 1,
            resource_name_filter: None,
            pattern_type_filter: 2,
            principal_filter: Some("User:bob".into()),
            host_filter: None,
            operation: 1,
            permission_type: 1,
        }),
        RequestBody::DeleteAcls(DeleteAclsRequest {
            filters: vec![DeleteAclsFilter {
                resource_type_filter: 2,
                resource_name_filter: Some("t".into()),
                pattern_type_filter: 3,
                principal_filter: None,
                host_filter: Some("10.0.0.1".into()),
                operation: 4,
                permission_type: 2,
            }],
        }),
        RequestBody::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest {
            users: None,
        }),
        RequestBody::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest {
            users: Some(vec![UserName {
                name: "alice".into(),
            }]),
        }),
        RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
            deletions: vec![ScramCredentialDeletion {
                name: "bob".into(),
                mechanism: 2,
            }],
            upsertions: vec![ScramCredentialUpsertion {
                name: "alice".into(),
                mechanism: 1,
                iterations: 8192,
                salt: Bytes::from_static(b"salt"),
                salted_password: Bytes::from_static(&[7; 32]),
            }],
        }),
    ];
    for body in requests {
        let key = body.api_key();
        let (min, max) = key.supported_versions();
        for version in min..=max {
            let header = RequestHeader {
                request_api_key: key as i16,
                request_api_version: version,
                correlation_id: 5,
                client_id: Some("admin".into()),
            };
            let mut out = BytesMut::new();
            encode_request(&header, &body, &mut out).unwrap();
            let (h, b) = decode_request(out.freeze().slice(4..)).unwrap();
            assert_eq!((h, &b), (header, &body), "{key:?} v{version}");
        }
    }
    let responses = [
        ResponseBody::CreateAcls(CreateAclsResponse {
            throttle_time_ms: 0,
            results: vec![
                AclCreationResult {
                    error_code: 42,
                    error_message: Some("Invalid empty resource name".into()),
                },
                AclCreationResult {
                    error_code: 0,
                    error_message: None,
                },
            ],
        }),
        ResponseBody::DescribeAcls(DescribeAclsResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            resources: vec![DescribeAclsResource {
                resource_type: 2,
                resource_name: "ord".into(),
                pattern_type: 4,
                acls: vec![AclDescription {
                    principal: "User:alice".into(),
                    host: "*".into(),
                    operation: 3,
                    permission_type: 3,
                }],
            }],
        }),
        ResponseBody::DeleteAcls(DeleteAclsResponse {
            throttle_time_ms: 0,
            filter_results: vec![DeleteAclsFilterResult {
                error_code: 0,
                error_message: None,
                matching_acls: vec![DeleteAclsMatchingAcl {
                    error_code: 0,
                    error_message: None,
                    resource_type: 2,
                    resource_name: "t".into(),
                    pattern_type: 3,
                    principal: "User:bob".into(),
                    host: "*".into(),
                    operation: 4,
                    permission_type: 2,
                }],
            }],
        }),
        ResponseBody::DescribeUserScramCredentials(DescribeUserScramCredentialsResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            results: vec![DescribeUserScramCredentialsResult {
                user: "alice".into(),
                error_code: 0,
                error_message: None,
                credential_infos: vec![CredentialInfo {
                    mechanism: 1,
                    iterations: 4096,
                }],
            }],
        }),
        ResponseBody::AlterUserScramCredentials(AlterUserScramCredentialsResponse {
            throttle_time_ms: 0,
            results: vec![AlterUserScramCredentialsResult {
                user: "alice".into(),
                error_code: 93,
                error_message: Some("Too few iterations".into()),
            }],
        }),
    ];
    for body in responses {
        let key = body.api_key();
        let (min, max) = key.supported_versions();
        for version in min..=max {
            let mut out = BytesMut::new();
            encode_response(8, key, version, &body, &mut out).unwrap();
            let (h, b) = decode_response(key, version, out.freeze().slice(4..)).unwrap();
            assert_eq!((h.correlation_id, &b), (8, &body), "{key:?} v{version}");
        }
    }
    let listed = supported_api_versions();
    for (key, range) in [
        (29, (1, 3)),
        (30, (1, 3)),
        (31, (1, 3)),
        (50, (0, 0)),
        (51, (0, 0)),
    ] {
        let a = listed.iter().find(|a| a.api_key == key).unwrap();
        assert_eq!((a.min_version, a.max_version), range, "api key {key}");
    }
}
