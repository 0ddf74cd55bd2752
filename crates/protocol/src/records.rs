//! Record data inside messages (`records` fields: Produce requests, Fetch responses).
//!
//! Mental model: record batches are opaque here (the `skiff-record` crate parses them). On the
//! wire a `records` field is nullable bytes. Decoded records are always [`Records::Bytes`], a
//! zero-copy slice of the request frame. For encoding, a Fetch response may instead point at a
//! [`FileRegion`] of a segment file, which a [`crate::ChunkedWriter`] keeps as a separate chunk so
//! the server can `sendfile` it between the encoded bytes around it. Writing a file region into an
//! in-memory buffer fails with [`crate::EncodeError::FileRegionInMemoryEncoder`].

use std::fmt;
use std::fs::File;
use std::sync::Arc;

use bytes::Bytes;

/// A byte range of an open file, sent without copying through user space.
#[derive(Debug, Clone)]
pub struct FileRegion {
    pub file: Arc<File>,
    /// Byte offset of the region in the file.
    pub position: u64,
    /// Length of the region in bytes.
    pub len: u32,
}

impl PartialEq for FileRegion {
    /// Same file handle (by identity), same range.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.file, &other.file)
            && self.position == other.position
            && self.len == other.len
    }
}

/// The value of a `records` field.
#[derive(Clone, PartialEq)]
pub enum Records {
    /// In-memory bytes (always the case for decoded messages).
    Bytes(Bytes),
    /// A region of a file, for zero-copy fetch responses.
    File(FileRegion),
}

impl Records {
    /// Length in bytes on the wire.
    pub fn len(&self) -> usize {
        match self {
            Records::Bytes(b) => b.len(),
            Records::File(f) => f.len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, when in memory.
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match self {
            Records::Bytes(b) => Some(b),
            Records::File(_) => None,
        }
    }
}

impl Default for Records {
    fn default() -> Self {
        Records::Bytes(Bytes::new())
    }
}

impl From<Bytes> for Records {
    fn from(b: Bytes) -> Self {
        Records::Bytes(b)
    }
}

impl fmt::Debug for Records {
    /// Shows lengths, not contents: record data can be megabytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Records::Bytes(b) => write!(f, "Records::Bytes({} bytes)", b.len()),
            Records::File(r) => write!(f, "Records::File({} bytes at {})", r.len, r.position),
        }
    }
}
