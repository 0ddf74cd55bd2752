//! Skiff L1: the Kafka wire protocol codec (sans-io).
//!
//! Mental model: every request, response, header and internal record Skiff speaks is a plain
//! Rust struct generated from Kafka's own JSON definitions (`generated/`, by
//! `cargo run -p xtask -- codegen`; never edit it by hand). Each top-level type implements
//! [`Codec`]: `decode(&mut Bytes, version)`, `encode(&mut impl WireWrite, version)` and
//! `encoded_size(version)`, for exactly the versions Skiff supports. Requests and responses
//! also implement [`Message`] (their api key); metadata records implement [`MetadataRecord`].
//! The hand-written parts are the wire primitives ([`wire`]), the records/sendfile plumbing
//! ([`Records`], [`ChunkedWriter`]) and framing ([`decode_request`], [`encode_response`]).
//!
//! Invariants: decoding never panics and never allocates more than the input can justify
//! (see [`wire`]); decoded bytes and records are zero-copy slices of the input frame; encoding
//! refuses values that the target version cannot represent (a non-default, non-ignorable field
//! absent from the version, a null where the version is not nullable). Everything is plain
//! data: `Send + Sync`, no I/O, no global state. The one exception is [`blocking`], a
//! one-request-at-a-time client over any `Read + Write` stream for tests and tools; the
//! broker never uses it.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod blocking;
mod chunked;
mod error;
mod frame;
mod generated;
mod records;
pub mod wire;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

use bytes::{Bytes, BytesMut};

pub use blocking::{BlockingClient, BlockingError};
pub use chunked::{Chunk, ChunkedWriter, ZERO_COPY_MIN_BYTES};
pub use error::{DecodeError, EncodeError};
pub use frame::{
    decode_request, decode_response, encode_request, encode_response, request_header_version,
    response_header_version, supported_api_versions,
};
pub use generated::*;
pub use records::{FileRegion, Records};
pub use wire::WireWrite;

/// A generated top-level type: its version range and codec.
pub trait Codec: Sized {
    /// Kafka's name for the type, e.g. `"FetchRequest"`.
    const NAME: &'static str;
    /// Lowest version Skiff decodes/encodes.
    const MIN_VERSION: i16;
    /// Highest version Skiff decodes/encodes.
    const MAX_VERSION: i16;
    /// First flexible (compact, tagged-fields) version; `i16::MAX` if none.
    const FLEXIBLE_MIN: i16;

    #[doc(hidden)]
    fn read_body(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError>;
    #[doc(hidden)]
    fn write_body<W: WireWrite + ?Sized>(
        &self,
        out: &mut W,
        version: i16,
    ) -> Result<(), EncodeError>;
    #[doc(hidden)]
    fn body_size(&self, version: i16) -> usize;

    fn supports_version(version: i16) -> bool {
        (Self::MIN_VERSION..=Self::MAX_VERSION).contains(&version)
    }

    fn is_flexible(version: i16) -> bool {
        version >= Self::FLEXIBLE_MIN
    }

    /// Decodes one value from the front of `buf` (zero-copy for bytes and records fields).
    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError> {
        if !Self::supports_version(version) {
            return Err(DecodeError::UnsupportedVersion {
                message: Self::NAME,
                version,
            });
        }
        Self::read_body(buf, version)
    }

    /// Encodes the value at `version`.
    fn encode<W: WireWrite + ?Sized>(&self, out: &mut W, version: i16) -> Result<(), EncodeError> {
        if !Self::supports_version(version) {
            return Err(EncodeError::UnsupportedVersion {
                message: Self::NAME,
                version,
            });
        }
        self.write_body(out, version)
    }

    /// The exact number of bytes `encode` writes at `version`.
    fn encoded_size(&self, version: i16) -> Result<usize, EncodeError> {
        if !Self::supports_version(version) {
            return Err(EncodeError::UnsupportedVersion {
                message: Self::NAME,
                version,
            });
        }
        Ok(self.body_size(version))
    }

    /// Encodes into a new in-memory buffer.
    fn to_bytes(&self, version: i16) -> Result<Bytes, EncodeError> {
        let mut out = BytesMut::with_capacity(self.encoded_size(version)?);
        self.encode(&mut out, version)?;
        Ok(out.freeze())
    }
}

/// A request or response body.
pub trait Message: Codec {
    const API_KEY: i16;
}

/// A request body, tied to its response type.
pub trait Request: Message {
    type Response: Message;
}

/// A KRaft metadata record (`__cluster_metadata`), identified by its record type.
pub trait MetadataRecord: Codec {
    const RECORD_TYPE: i16;
}
