//! The header fields of a batch about to be appended: read from whole batches or from a
//! validated batch's header copy, and re-stamped with the offsets a leader assigns. Pure:
//! no I/O; every length and offset is checked, nothing panics on bad input.

use skiff_record::{BATCH_HEADER_BYTES, BatchView};

use crate::error::{Result, StorageError};
use crate::segment::scan::BatchHeader;

/// Byte offset of the magic byte in a batch header.
const MAGIC_AT: usize = skiff_record::layout::MAGIC;

/// The header of a validated batch (`header` + a `body_len`-byte records section), checked
/// to describe exactly that many bytes.
pub(crate) fn validated_header(
    header: &[u8; BATCH_HEADER_BYTES],
    body_len: usize,
) -> Result<BatchHeader> {
    BatchHeader::parse(0, header)
        .filter(|h| h.size as usize == BATCH_HEADER_BYTES + body_len)
        .filter(|_| header[MAGIC_AT] as i8 == skiff_record::MAGIC_V2)
        .ok_or_else(|| {
            StorageError::InvalidArgument(format!(
                "append of an invalid batch: header and {body_len} byte body disagree"
            ))
        })
}

/// The header fields of one whole batch (framing checked by `BatchView::new`).
pub(crate) fn header_of(batch: &[u8]) -> Result<BatchHeader> {
    let view = BatchView::new(batch)
        .map_err(|e| StorageError::InvalidArgument(format!("append of an invalid batch: {e}")))?;
    let base_offset = view.base_offset();
    let last_offset = base_offset
        .checked_add(i64::from(view.last_offset_delta()))
        .ok_or_else(|| {
            StorageError::InvalidArgument(format!(
                "append of an invalid batch: base offset {base_offset} + last offset delta {} \
                 overflows",
                view.last_offset_delta()
            ))
        })?;
    Ok(BatchHeader {
        position: 0,
        size: u32::try_from(view.size()).unwrap_or(u32::MAX),
        base_offset,
        last_offset,
        partition_leader_epoch: view.partition_leader_epoch(),
        max_timestamp: view.max_timestamp(),
        attributes: view.attributes(),
        producer_id: view.producer_id(),
        producer_epoch: view.producer_epoch(),
        base_sequence: view.base_sequence(),
        records_count: view.records_count(),
    })
}

/// `header` after the leader stamped `base` and `epoch` into it.
pub(crate) fn rebased(header: &BatchHeader, base: i64, epoch: i32) -> Result<BatchHeader> {
    let delta = header.last_offset.wrapping_sub(header.base_offset);
    let last_offset = base.checked_add(delta).ok_or_else(|| {
        StorageError::InvalidArgument(format!(
            "batch of {delta} offsets does not fit after offset {base}"
        ))
    })?;
    Ok(BatchHeader {
        base_offset: base,
        last_offset,
        partition_leader_epoch: epoch,
        ..*header
    })
}
