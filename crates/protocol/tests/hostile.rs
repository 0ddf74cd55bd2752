//! Hostile input: `decode_request` must fail cleanly (never panic, never over-allocate) on
//! random bytes, truncations, absurd counts and overlong varints.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use skiff_protocol::*;

/// Records the largest single allocation made by the current thread, to prove that hostile
/// counts are rejected before anything is reserved for them.
struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(layout.size())));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(new_size)));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// Runs `f` and returns the largest single allocation it made on this thread.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|m| m.set(0));
    f();
    LARGEST.with(Cell::get)
}

/// A valid Fetch v17 request frame (without the size prefix) to mutate.
fn valid_fetch_frame() -> Bytes {
    let header = RequestHeader {
        request_api_key: ApiKey::Fetch as i16,
        request_api_version: 17,
        correlation_id: 7,
        client_id: Some("hostile".into()),
    };
    let body = FetchRequest {
        max_wait_ms: 500,
        topics: vec![FetchTopic {
            topic_id: uuid::Uuid::from_u128(42),
            partitions: vec![FetchPartition {
                partition: 3,
                fetch_offset: 100,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut out = BytesMut::new();
    encode_request(&header, &RequestBody::Fetch(body), &mut out).unwrap();
    out.freeze().slice(4..)
}

#[test]
fn every_truncation_of_a_valid_frame_fails_cleanly() {
    let frame = valid_fetch_frame();
    assert!(decode_request(frame.clone()).is_ok());
    for len in 0..frame.len() {
        let cut = frame.slice(..len);
        let err = decode_request(cut).expect_err("a truncated frame must not decode");
        if len >= 8 {
            assert_eq!(err.correlation_id(), Some(7), "len {len}: {err}");
        }
    }
}

#[test]
fn an_array_claiming_i32_max_elements_fails_fast() {
    // DeleteGroups v1 (non-flexible): header v1, then groups_names: int32 count.
    let mut frame = BytesMut::new();
    frame.put_i16(ApiKey::DeleteGroups as i16);
    frame.put_i16(1);
    frame.put_i32(99);
    frame.put_i16(-1); // null client id
    frame.put_i32(i32::MAX);
    frame.extend_from_slice(b"only a few bytes follow");
    let frame = frame.freeze();
    let mut result = None;
    let largest = largest_allocation(|| result = Some(decode_request(frame)));
    assert!(largest < 4096, "decoding allocated {largest} bytes at once");
    let err = result.unwrap().unwrap_err();
    match err {
        DecodeError::MalformedRequest {
            correlation_id: 99,
            source,
            ..
        } => {
            assert!(
                matches!(*source, DecodeError::LengthExceedsInput { length, .. } if length == i32::MAX as usize),
                "{source}"
            );
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn a_compact_array_claiming_u32_max_elements_fails_fast() {
    // Metadata v12 (flexible): header v2 with empty tagged fields, then topics: compact array.
    let mut frame = BytesMut::new();
    frame.put_i16(ApiKey::Metadata as i16);
    frame.put_i16(12);
    frame.put_i32(5);
    frame.put_i16(-1);
    frame.put_u8(0); // header tagged fields
    frame.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]); // count + 1 = u32::MAX
    let frame = frame.freeze();
    let mut result = None;
    let largest = largest_allocation(|| result = Some(decode_request(frame)));
    assert!(largest < 4096, "decoding allocated {largest} bytes at once");
    let err = result.unwrap().unwrap_err();
    assert!(matches!(err, DecodeError::MalformedRequest { .. }), "{err}");
}

#[test]
fn a_large_but_plausible_count_preallocates_at_most_a_mebibyte() {
    // 3 MB of input claiming 3M topic entries of a ~100-byte struct: the count is within the
    // bytes remaining, so it is not rejected up front, but only 1 MiB is reserved before the
    // entries actually decode (here the first one fails).
    let mut frame = BytesMut::new();
    frame.put_i16(ApiKey::Metadata as i16);
    frame.put_i16(4);
    frame.put_i32(1);
    frame.put_i16(-1);
    frame.put_i32(3_000_000);
    frame.extend_from_slice(&[0xff; 3_000_000]);
    let frame = frame.freeze();
    let mut result = None;
    let largest = largest_allocation(|| result = Some(decode_request(frame)));
    assert!(
        largest <= 1 << 20,
        "decoding allocated {largest} bytes at once"
    );
    assert!(result.unwrap().is_err());
}

#[test]
fn a_six_byte_varint_is_rejected() {
    let mut buf = Bytes::from_static(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
    assert_eq!(
        wire::read_uvarint(&mut buf),
        Err(DecodeError::VarintTooLong { max_bytes: 5 })
    );
    // A five-byte varint whose value needs more than 32 bits is rejected too.
    let mut buf = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x1f]);
    assert!(wire::read_uvarint(&mut buf).is_err());
    // The largest u32 is fine.
    let mut buf = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(wire::read_uvarint(&mut buf), Ok(u32::MAX));
    // Varlongs stop at 10 bytes.
    let mut buf = Bytes::from_static(&[0xff; 11]);
    assert_eq!(
        wire::read_uvarlong(&mut buf),
        Err(DecodeError::VarintTooLong { max_bytes: 10 })
    );
}

#[test]
fn unknown_api_and_version_errors_carry_the_request_identity() {
    let mut frame = BytesMut::new();
    frame.put_i16(ApiKey::ApiVersions as i16);
    frame.put_i16(99);
    frame.put_i32(1234);
    let err = decode_request(frame.freeze()).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnsupportedApiVersion {
            api_key: 18,
            api_version: 99,
            correlation_id: 1234
        }
    );

    let mut frame = BytesMut::new();
    frame.put_i16(1000);
    frame.put_i16(0);
    frame.put_i32(77);
    let err = decode_request(frame.freeze()).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnknownApiKey {
            api_key: 1000,
            api_version: 0,
            correlation_id: 77
        }
    );
    assert_eq!(err.correlation_id(), Some(77));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_request(Bytes::from(bytes));
    }

    /// Random bodies behind a valid header for every API and version: decode fails or succeeds,
    /// never panics.
    #[test]
    fn random_bodies_never_panic(
        api in 0usize..ApiKey::ALL.len(),
        version_pick in any::<u16>(),
        body in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let key = ApiKey::ALL[api];
        let (min, max) = key.supported_versions();
        let version = min + (version_pick % (max - min + 1) as u16) as i16;
        let mut frame = BytesMut::new();
        frame.put_i16(key as i16);
        frame.put_i16(version);
        frame.put_i32(1);
        frame.put_i16(-1);
        if request_header_version(key as i16, version) >= 2 {
            frame.put_u8(0);
        }
        frame.extend_from_slice(&body);
        let _ = decode_request(frame.freeze());
    }

    /// Single-byte corruptions of a valid frame never panic.
    #[test]
    fn corrupted_frames_never_panic(pos in any::<usize>(), byte in any::<u8>()) {
        let mut frame = valid_fetch_frame().to_vec();
        let i = pos % frame.len();
        frame[i] = byte;
        let _ = decode_request(Bytes::from(frame));
    }
}
