//! The codec's two error enums: [`DecodeError`] (malformed or unsupported input) and
//! [`EncodeError`] (a value that cannot be written at the requested version).
//!
//! Field names in errors are `"Struct.field"` paths into the generated types. Decode errors
//! that happen while reading a request frame carry the api key, version and correlation id
//! (always readable once a frame has 8 bytes) so a server can answer or log precisely.

use thiserror::Error;

/// Why bytes could not be decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    #[error("unexpected end of input: needed {needed} bytes, {remaining} remaining")]
    Truncated { needed: usize, remaining: usize },
    #[error("varint longer than {max_bytes} bytes or out of range")]
    VarintTooLong { max_bytes: usize },
    #[error("{field}: invalid length {length}")]
    InvalidLength { field: &'static str, length: i64 },
    #[error("{field}: length {length} exceeds the {remaining} bytes remaining")]
    LengthExceedsInput {
        field: &'static str,
        length: usize,
        remaining: usize,
    },
    #[error("{field}: null is not allowed in this version")]
    UnexpectedNull { field: &'static str },
    #[error("{field}: string is not valid UTF-8")]
    InvalidUtf8 { field: &'static str },
    #[error("{field}: tagged field has {extra} unread bytes")]
    TaggedFieldSize { field: &'static str, extra: usize },
    #[error("{message} does not support version {version}")]
    UnsupportedVersion { message: &'static str, version: i16 },
    #[error("unknown api key {api_key} (version {api_version}, correlation id {correlation_id})")]
    UnknownApiKey {
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    },
    #[error(
        "api key {api_key} version {api_version} is not supported (correlation id {correlation_id})"
    )]
    UnsupportedApiVersion {
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    },
    #[error(
        "malformed request (api key {api_key} v{api_version}, correlation id {correlation_id}): {source}"
    )]
    MalformedRequest {
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
        #[source]
        source: Box<DecodeError>,
    },
}

impl DecodeError {
    /// The request's correlation id, when the error happened inside a readable request frame.
    pub fn correlation_id(&self) -> Option<i32> {
        match self {
            DecodeError::UnknownApiKey { correlation_id, .. }
            | DecodeError::UnsupportedApiVersion { correlation_id, .. }
            | DecodeError::MalformedRequest { correlation_id, .. } => Some(*correlation_id),
            _ => None,
        }
    }
}

/// Why a value could not be encoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum EncodeError {
    #[error("a file-backed records region cannot be written into an in-memory buffer")]
    FileRegionInMemoryEncoder,
    #[error("{field}: a non-default value cannot be encoded in version {version}")]
    UnsupportedField { field: &'static str, version: i16 },
    #[error("{field}: null is not allowed in this version")]
    NullNotAllowed { field: &'static str },
    #[error("{field}: length {length} is too long to encode")]
    TooLong { field: &'static str, length: usize },
    #[error("{message} does not support version {version}")]
    UnsupportedVersion { message: &'static str, version: i16 },
    #[error("the body is for api key {body} but the header says {header}")]
    ApiKeyMismatch { header: i16, body: i16 },
}
