//! Delayed delivery (issue 8, spec §4.3): header-driven, batch-granular, a blocking visibility
//! bound per partition.
//!
//! Mental model:
//! - **Producer contract.** On a topic with `delivery.delay.enable=true`, a record's due time
//!   comes from its header `__deliver_after_ms` (absolute epoch ms) or `__delay_ms` (ms after
//!   the broker's append time), the absolute one winning when both are present; a record
//!   without either is due at `append + delivery.delay.default.ms`. Values are ASCII decimal;
//!   an 8-byte value with a non-digit byte is a big-endian int64. A malformed or negative value
//!   or (policy `reject`) a delay above `delivery.delay.max.ms` rejects the batch with
//!   INVALID_RECORD and a record error naming the header; `clamp` caps the due time at
//!   `append + max`. If a header occurs several times in a record, the last one counts.
//!   Headers are never stripped and the batch bytes never change.
//! - **Batch due time** = max over its records ([`record_due`], folded by the validator, which
//!   already walks every record). Only a batch due after its append time is "delayed".
//! - **DeliverAfterIndex** ([`index`]): per segment `<base>.deliverafter`, 16-byte big-endian
//!   entries (relative base offset, position, due), append-only, one per delayed batch. It is
//!   derived data like `.timeindex`: flushed with the segment, rebuilt by recovery ([`load`]).
//! - **Pending FIFO and DSO** ([`pending`]): per partition, the delayed batches in offset order
//!   whose due time has not passed. The delivery stable offset (DSO) is the base offset of the
//!   first batch not yet due; consumer reads are capped at it. Pure: `now` is an argument.
//!
//! Invariants: the FIFO holds strictly increasing base offsets, all below the log end and at
//! or above the log start; every FIFO entry has an index entry; retention never removes a
//! batch at or past the DSO (the log manager passes it as the retention bound).

pub mod index;
pub mod load;
pub mod pending;

use serde::Serialize;

pub use pending::{PendingBatch, PendingDeliveries};

/// Header with the absolute due time (epoch ms).
pub const DELIVER_AFTER_HEADER: &str = "__deliver_after_ms";
/// Header with the delay after the broker's append time (ms).
pub const DELAY_HEADER: &str = "__delay_ms";

/// The delay settings of one delay-enabled topic (`delivery.delay.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayConfig {
    /// `delivery.delay.max.ms`.
    pub max_ms: i64,
    /// `delivery.delay.default.ms`.
    pub default_ms: i64,
    /// `delivery.delay.exceed.policy=clamp` (else reject).
    pub clamp: bool,
}

/// The delay headers of one record, as seen by the walk (`Some(None)` = a null value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DelayHeaders<'a> {
    pub deliver_after: Option<Option<&'a [u8]>>,
    pub delay: Option<Option<&'a [u8]>>,
}

impl<'a> DelayHeaders<'a> {
    /// Notes one header of the record (last occurrence of a key wins).
    #[inline]
    pub fn observe(&mut self, key: &'a [u8], value: Option<&'a [u8]>) {
        // Both names start with "__": one byte compare rejects most ordinary headers.
        if key.first() != Some(&b'_') {
            return;
        }
        if key == DELIVER_AFTER_HEADER.as_bytes() {
            self.deliver_after = Some(value);
        } else if key == DELAY_HEADER.as_bytes() {
            self.delay = Some(value);
        }
    }
}

/// Parses one delay header value: ASCII decimal, or 8 bytes with a non-digit = big-endian
/// int64. Errors say why (for the record error).
pub fn parse_header_value(value: Option<&[u8]>) -> Result<i64, &'static str> {
    let Some(v) = value else {
        return Err("a null value");
    };
    if v.is_empty() {
        return Err("an empty value");
    }
    if v.iter().all(u8::is_ascii_digit) {
        let mut n: i64 = 0;
        for &b in v {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(i64::from(b - b'0')))
                .ok_or("a decimal value out of the int64 range")?;
        }
        return Ok(n);
    }
    // "-" and digits is a negative decimal, whatever its length (an 8-byte "-1000000" too).
    if v.first() == Some(&b'-') && v.len() > 1 && v[1..].iter().all(u8::is_ascii_digit) {
        return Err("a negative value");
    }
    if let Ok(bytes) = <[u8; 8]>::try_from(v) {
        let n = i64::from_be_bytes(bytes);
        if n < 0 {
            return Err("a negative value");
        }
        return Ok(n);
    }
    Err("a value that is neither ASCII decimal nor an 8-byte big-endian int64")
}

/// Why a record's delay headers reject the batch: the header and the message of its record
/// error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayError {
    pub header: &'static str,
    pub message: String,
}

/// The due time of one record appended at `append_ms` (see the module docs for the rules).
pub fn record_due(
    headers: &DelayHeaders<'_>,
    cfg: &DelayConfig,
    append_ms: i64,
) -> Result<i64, DelayError> {
    let (header, due) = if let Some(v) = headers.deliver_after {
        let due = parse_header_value(v).map_err(|why| malformed(DELIVER_AFTER_HEADER, why))?;
        (DELIVER_AFTER_HEADER, due)
    } else if let Some(v) = headers.delay {
        let delay = parse_header_value(v).map_err(|why| malformed(DELAY_HEADER, why))?;
        (DELAY_HEADER, append_ms.saturating_add(delay))
    } else {
        return Ok(append_ms.saturating_add(cfg.default_ms.min(cfg.max_ms)));
    };
    let limit = append_ms.saturating_add(cfg.max_ms);
    if due > limit {
        if cfg.clamp {
            return Ok(limit);
        }
        return Err(DelayError {
            header,
            message: format!(
                "Record header {header} asks for a delay of {} ms, above delivery.delay.max.ms ({} ms)",
                due.saturating_sub(append_ms),
                cfg.max_ms
            ),
        });
    }
    Ok(due)
}

fn malformed(header: &'static str, why: &str) -> DelayError {
    DelayError {
        header,
        message: format!(
            "Record header {header} has {why}; expected epoch/duration milliseconds as ASCII \
             decimal or an 8-byte big-endian int64"
        ),
    }
}

/// The operator view of one partition's delayed delivery (admin API / CLI / logs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeliveryStatus {
    /// `delivery.delay.enable` of the topic.
    pub enabled: bool,
    /// Delayed batches not yet due.
    pub pending_batches: usize,
    /// Due time (epoch ms) of the first pending batch, the next DSO move.
    pub next_due_ms: Option<i64>,
    /// The delivery stable offset; `None` when nothing is pending.
    pub delivery_stable_offset: Option<i64>,
    /// The high watermark, for comparison.
    pub high_watermark: i64,
    /// `.deliverafter` entries over all segments (delivered ones included).
    pub index_entries: u64,
}

#[cfg(test)]
mod tests;
