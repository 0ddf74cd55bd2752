//! Framing: header versions, and whole request/response frames.
//!
//! A frame on the wire is `int32 size` followed by `size` bytes: a header then a body.
//! Request header v1 = api key, api version, correlation id, nullable client id (classic
//! `int16` string even in v2); v2 adds a tagged-field section. Response header v0 = correlation
//! id; v1 adds tagged fields. Flexible API versions use request header v2 / response header v1,
//! except that ApiVersions responses always use header v0 (a client that does not yet know
//! which versions the broker speaks must be able to read it).
//!
//! [`decode_request`] takes the frame *without* its size prefix; the `encode_*` functions write
//! the size prefix. The first 8 bytes of every request header version are the same (api key,
//! version, correlation id), so errors for unknown APIs or versions always carry them.

use bytes::{Buf, Bytes};

use crate::{
    ApiKey, ApiVersion, Codec, DecodeError, EncodeError, RequestBody, RequestHeader, ResponseBody,
    ResponseHeader, WireWrite,
};

/// Request header version for an API version: 2 if flexible, else 1. Unknown APIs get 1.
pub fn request_header_version(api_key: i16, api_version: i16) -> i16 {
    match ApiKey::from_i16(api_key) {
        Some(k) if api_version >= k.request_flexible_min() => 2,
        _ => 1,
    }
}

/// Response header version: 1 if flexible, else 0; ApiVersions is always 0.
pub fn response_header_version(api_key: i16, api_version: i16) -> i16 {
    match ApiKey::from_i16(api_key) {
        Some(ApiKey::ApiVersions) | None => 0,
        Some(k) if api_version >= k.response_flexible_min() => 1,
        Some(_) => 0,
    }
}

/// Decodes a request frame (the bytes after the 4-byte size). Unknown api keys and versions
/// outside Skiff's range fail before the header's client id is read, carrying the api key,
/// version and correlation id; so do malformed headers and bodies. Trailing bytes after the
/// body are ignored, as Kafka does.
pub fn decode_request(frame: Bytes) -> Result<(RequestHeader, RequestBody), DecodeError> {
    if frame.len() < 8 {
        return Err(DecodeError::Truncated {
            needed: 8,
            remaining: frame.len(),
        });
    }
    let mut fixed = &frame[..8];
    let api_key = fixed.get_i16();
    let api_version = fixed.get_i16();
    let correlation_id = fixed.get_i32();
    let Some(key) = ApiKey::from_i16(api_key) else {
        return Err(DecodeError::UnknownApiKey {
            api_key,
            api_version,
            correlation_id,
        });
    };
    let (min, max) = key.supported_versions();
    if !(min..=max).contains(&api_version) {
        return Err(DecodeError::UnsupportedApiVersion {
            api_key,
            api_version,
            correlation_id,
        });
    }
    let wrap = |e: DecodeError| DecodeError::MalformedRequest {
        api_key,
        api_version,
        correlation_id,
        source: Box::new(e),
    };
    let mut buf = frame;
    let header = RequestHeader::decode(&mut buf, request_header_version(api_key, api_version))
        .map_err(wrap)?;
    let body = RequestBody::decode(key, &mut buf, api_version).map_err(wrap)?;
    Ok((header, body))
}

fn put_size<W: WireWrite + ?Sized>(out: &mut W, size: usize) -> Result<(), EncodeError> {
    let size = i32::try_from(size).map_err(|_| EncodeError::TooLong {
        field: "frame",
        length: size,
    })?;
    out.put_int32(size);
    Ok(())
}

/// Writes a whole response frame: size prefix, response header, body.
pub fn encode_response<W: WireWrite + ?Sized>(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseBody,
    out: &mut W,
) -> Result<(), EncodeError> {
    if body.api_key() != api_key {
        return Err(EncodeError::ApiKeyMismatch {
            header: api_key as i16,
            body: body.api_key() as i16,
        });
    }
    let header_version = response_header_version(api_key as i16, version);
    let header = ResponseHeader { correlation_id };
    put_size(
        out,
        header.encoded_size(header_version)? + body.encoded_size(version)?,
    )?;
    header.encode(out, header_version)?;
    body.encode(out, version)
}

/// Writes a whole request frame (for clients and tests): size prefix, header, body. The body's
/// API must match `header.request_api_key`; it is encoded at `header.request_api_version`.
pub fn encode_request<W: WireWrite + ?Sized>(
    header: &RequestHeader,
    body: &RequestBody,
    out: &mut W,
) -> Result<(), EncodeError> {
    if body.api_key() as i16 != header.request_api_key {
        return Err(EncodeError::ApiKeyMismatch {
            header: header.request_api_key,
            body: body.api_key() as i16,
        });
    }
    let version = header.request_api_version;
    let header_version = request_header_version(header.request_api_key, version);
    put_size(
        out,
        header.encoded_size(header_version)? + body.encoded_size(version)?,
    )?;
    header.encode(out, header_version)?;
    body.encode(out, version)
}

/// Decodes a response frame (without its size prefix) for a request of `api_key` at `version`.
pub fn decode_response(
    api_key: ApiKey,
    version: i16,
    frame: Bytes,
) -> Result<(ResponseHeader, ResponseBody), DecodeError> {
    let mut buf = frame;
    let header =
        ResponseHeader::decode(&mut buf, response_header_version(api_key as i16, version))?;
    let body = ResponseBody::decode(api_key, &mut buf, version)?;
    Ok((header, body))
}

/// The `api_keys` list of an ApiVersions response: every API Skiff implements, with the
/// version range it supports, in api key order.
pub fn supported_api_versions() -> Vec<ApiVersion> {
    ApiKey::ALL
        .iter()
        .map(|&key| {
            let (min_version, max_version) = key.supported_versions();
            ApiVersion {
                api_key: key as i16,
                min_version,
                max_version,
            }
        })
        .collect()
}
