//! `request_decoder` harness: arbitrary bytes as one request frame (the bytes after the 4-byte
//! size prefix, exactly what a connection hands to `skiff_protocol::decode_request`).
//!
//! Checks: decoding returns `Ok`/`Err`, never panics, and allocates nothing the input cannot
//! justify (the libFuzzer run adds `-malloc_limit_mb`). Oracle on accepted frames: the decoded
//! header and body re-encode with `encode_request` at the same version, the size prefix it
//! writes equals the bytes written (so `encoded_size` is exact), and decoding those bytes gives
//! back an equal header and body. A frame that decodes but cannot be written back, or that
//! changes meaning on the way, is a codec bug (asymmetric read/write of a field).

use bytes::{Bytes, BytesMut};
use skiff_protocol::{DecodeError, decode_request, encode_request};

use crate::Outcome;

/// Runs the harness on one input; panics on a broken invariant.
pub fn check_request_frame(data: &[u8]) -> Outcome {
    let (header, body) = match decode_request(Bytes::copy_from_slice(data)) {
        Ok(decoded) => decoded,
        Err(e) => {
            // Display must not panic either (it is what the server logs).
            let _ = e.to_string();
            return decode_error_kind(&e);
        }
    };
    let mut out = BytesMut::new();
    if let Err(e) = encode_request(&header, &body, &mut out) {
        panic!("a decoded request does not re-encode: {e}\nheader: {header:?}\nbody: {body:?}");
    }
    assert!(out.len() >= 4, "encode_request wrote no size prefix");
    let declared = i32::from_be_bytes([out[0], out[1], out[2], out[3]]);
    assert_eq!(
        usize::try_from(declared).ok(),
        Some(out.len() - 4),
        "size prefix disagrees with the bytes written (encoded_size is wrong)\nheader: {header:?}"
    );
    let again = decode_request(out.freeze().slice(4..));
    match again {
        Ok((h2, b2)) => {
            assert_eq!(h2, header, "header changed across encode/decode");
            assert_eq!(b2, body, "body changed across encode/decode");
        }
        Err(e) => panic!("a re-encoded request does not decode: {e}\nheader: {header:?}"),
    }
    "accepted"
}

/// A short label for an error (corpus statistics).
pub fn decode_error_kind(e: &DecodeError) -> Outcome {
    match e {
        DecodeError::Truncated { .. } => "truncated",
        DecodeError::VarintTooLong { .. } => "varint_too_long",
        DecodeError::InvalidLength { .. } => "invalid_length",
        DecodeError::LengthExceedsInput { .. } => "length_exceeds_input",
        DecodeError::UnexpectedNull { .. } => "unexpected_null",
        DecodeError::InvalidUtf8 { .. } => "invalid_utf8",
        DecodeError::TaggedFieldSize { .. } => "tagged_field_size",
        DecodeError::UnsupportedVersion { .. } => "unsupported_version",
        DecodeError::UnknownApiKey { .. } => "unknown_api_key",
        DecodeError::UnsupportedApiVersion { .. } => "unsupported_api_version",
        DecodeError::MalformedRequest { source, .. } => match source.as_ref() {
            DecodeError::Truncated { .. } => "malformed/truncated",
            DecodeError::VarintTooLong { .. } => "malformed/varint_too_long",
            DecodeError::InvalidLength { .. } => "malformed/invalid_length",
            DecodeError::LengthExceedsInput { .. } => "malformed/length_exceeds_input",
            DecodeError::UnexpectedNull { .. } => "malformed/unexpected_null",
            DecodeError::InvalidUtf8 { .. } => "malformed/invalid_utf8",
            DecodeError::TaggedFieldSize { .. } => "malformed/tagged_field_size",
            _ => "malformed/other",
        },
    }
}
