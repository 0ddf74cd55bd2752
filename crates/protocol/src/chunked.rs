//! [`ChunkedWriter`]: an encoder sink that keeps file regions (and large byte values) as
//! separate chunks, so a server can write encoded header bytes, `sendfile` a segment region,
//! then write more bytes.
//!
//! Invariants: adjacent small writes are coalesced into one `Chunk::Bytes`; chunk order is
//! exactly wire order; the sum of chunk lengths is the number of bytes written. Not
//! thread-safe (a plain owned value, one per response).

use bytes::{Bytes, BytesMut};

use crate::{EncodeError, FileRegion, Records, WireWrite};

/// Byte values at least this long are kept as their own (shared, uncopied) chunk.
pub const ZERO_COPY_MIN_BYTES: usize = 16 * 1024;

/// One piece of an encoded frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Bytes(Bytes),
    File(FileRegion),
}

impl Chunk {
    pub fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::File(f) => f.len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Collects encoded output as a list of chunks.
#[derive(Debug, Default)]
pub struct ChunkedWriter {
    chunks: Vec<Chunk>,
    current: BytesMut,
    len: usize,
}

impl ChunkedWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Total bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.chunks
                .push(Chunk::Bytes(self.current.split().freeze()));
        }
    }

    fn push(&mut self, chunk: Chunk) {
        if chunk.is_empty() {
            return;
        }
        self.flush();
        self.len += chunk.len();
        self.chunks.push(chunk);
    }

    /// The chunks, in wire order.
    pub fn into_chunks(mut self) -> Vec<Chunk> {
        self.flush();
        self.chunks
    }
}

impl WireWrite for ChunkedWriter {
    fn put_slice(&mut self, b: &[u8]) {
        self.current.extend_from_slice(b);
        self.len += b.len();
    }

    fn put_bytes(&mut self, b: &Bytes) {
        if b.len() >= ZERO_COPY_MIN_BYTES {
            self.push(Chunk::Bytes(b.clone()));
        } else {
            self.put_slice(b);
        }
    }

    fn put_records(&mut self, r: &Records) -> Result<(), EncodeError> {
        match r {
            Records::Bytes(b) => self.put_bytes(b),
            Records::File(f) => self.push(Chunk::File(f.clone())),
        }
        Ok(())
    }
}
