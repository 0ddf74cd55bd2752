//! A blocking request/response client over any `Read + Write` stream, for tests and tools
//! (end-to-end tests of the binary, the benchmark's helpers). The broker never uses it.
//!
//! Mental model: one request at a time. [`BlockingClient::call`] encodes the request with the
//! next correlation id, writes the frame, reads one size-prefixed response frame and decodes
//! it for the request's api key and version. It checks what it reads: a negative size or one
//! above [`BlockingClient::max_frame_bytes`] is an error before anything is allocated, and a
//! response with another correlation id is an error (the stream is then out of step and
//! should be dropped).

use std::io::{Read, Write};

use bytes::{Bytes, BytesMut};

use crate::error::{DecodeError, EncodeError};
use crate::{RequestBody, RequestHeader, ResponseBody, decode_response, encode_request};

/// Largest response frame read by default (100 MiB, as Kafka's `socket.request.max.bytes`).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 100 * 1024 * 1024;

/// Why a blocking call failed.
#[derive(Debug, thiserror::Error)]
pub enum BlockingError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("encoding the request: {0}")]
    Encode(#[from] EncodeError),
    #[error("decoding the response: {0}")]
    Decode(#[from] DecodeError),
    #[error("response frame of {0} bytes is negative or above the limit")]
    FrameSize(i64),
    #[error("response correlation id {got}, expected {expected}")]
    CorrelationMismatch { expected: i32, got: i32 },
}

/// A blocking Kafka client connection: one request in flight.
#[derive(Debug)]
pub struct BlockingClient<S> {
    stream: S,
    client_id: String,
    next_correlation_id: i32,
    /// Largest response frame accepted.
    pub max_frame_bytes: usize,
}

impl<S: Read + Write> BlockingClient<S> {
    pub fn new(stream: S, client_id: impl Into<String>) -> Self {
        Self {
            stream,
            client_id: client_id.into(),
            next_correlation_id: 1,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
        }
    }

    /// The underlying stream (e.g. to set timeouts).
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// Sends `body` at `version` and returns the decoded response.
    pub fn call(
        &mut self,
        version: i16,
        body: impl Into<RequestBody>,
    ) -> Result<ResponseBody, BlockingError> {
        let body = body.into();
        let key = body.api_key();
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let header = RequestHeader {
            request_api_key: key as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some(self.client_id.clone()),
        };
        let mut out = BytesMut::new();
        encode_request(&header, &body, &mut out)?;
        self.stream.write_all(&out)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let size = i32::from_be_bytes(size);
        let len = usize::try_from(size)
            .ok()
            .filter(|&n| n <= self.max_frame_bytes)
            .ok_or(BlockingError::FrameSize(i64::from(size)))?;
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf)?;
        let (h, body) = decode_response(key, version, Bytes::from(buf))?;
        if h.correlation_id != correlation_id {
            return Err(BlockingError::CorrelationMismatch {
                expected: correlation_id,
                got: h.correlation_id,
            });
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Cursor;

    use super::*;
    use crate::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, encode_response};

    /// A stream whose reads come from a prepared buffer and whose writes are kept.
    struct Scripted {
        input: Cursor<Vec<u8>>,
        written: Vec<u8>,
    }
    impl Read for Scripted {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(b)
        }
    }
    impl Write for Scripted {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.written.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn response_frame(correlation_id: i32) -> Vec<u8> {
        let mut out = BytesMut::new();
        let body = ResponseBody::ApiVersions(ApiVersionsResponse::default());
        encode_response(correlation_id, ApiKey::ApiVersions, 0, &body, &mut out).unwrap();
        out.to_vec()
    }

    #[test]
    fn call_round_trips_and_checks_the_correlation_id() {
        let mut input = response_frame(1);
        input.extend(response_frame(7));
        let stream = Scripted {
            input: Cursor::new(input),
            written: Vec::new(),
        };
        let mut c = BlockingClient::new(stream, "t");
        let r = c.call(0, ApiVersionsRequest::default()).unwrap();
        assert!(matches!(r, ResponseBody::ApiVersions(_)));
        assert!(!c.stream().written.is_empty());
        let e = c.call(0, ApiVersionsRequest::default()).unwrap_err();
        assert!(
            matches!(
                e,
                BlockingError::CorrelationMismatch {
                    expected: 2,
                    got: 7
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn oversized_or_negative_frames_are_refused_before_allocating() {
        for size in [-1i32, i32::MAX] {
            let stream = Scripted {
                input: Cursor::new(size.to_be_bytes().to_vec()),
                written: Vec::new(),
            };
            let mut c = BlockingClient::new(stream, "t");
            c.max_frame_bytes = 1 << 20;
            let e = c.call(0, ApiVersionsRequest::default()).unwrap_err();
            assert!(matches!(e, BlockingError::FrameSize(_)), "{e}");
        }
    }
}
