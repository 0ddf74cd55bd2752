//! A READ_COMMITTED consumer written exactly as a Kafka client does it (KIP-98), over a real
//! storage [`Log`]: the test's independent judge of what a transactional reader sees.
//!
//! Mental model: the broker bounds the fetch by the last stable offset (LSO = the first unstable
//! offset, or the high watermark when there is none, never above the high watermark) and hands
//! the aborted transactions overlapping the fetched range (`collect_aborted_txns`); the client
//! walks the batches in offset order, and before each batch with a producer id moves every
//! aborted transaction whose first offset is at or below the batch's last offset into an
//! "aborting producers" set; a transactional data batch of an aborting producer is dropped; an
//! ABORT control batch of that producer takes it out of the set; control batches are never
//! returned. [`Mutation`] lets the simulation break the reader on purpose to prove its checks
//! catch a broken LSO or aborted-transaction list.

use std::collections::{BTreeSet, VecDeque};

use skiff_record::{ControlType, batches, parse_end_txn_marker, records};
use skiff_storage::Log;

/// One record a READ_COMMITTED consumer returns: its offset and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visible {
    pub offset: i64,
    pub value: Vec<u8>,
}

/// A deliberate break of the reader (mutation testing of the simulation's checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    None,
    /// Bypass `first_unstable_offset`: read up to the high watermark.
    IgnoreFirstUnstable,
    /// Bypass `collect_aborted_txns`: no aborted transaction is filtered.
    IgnoreAborted,
}

/// The last stable offset the broker bounds READ_COMMITTED fetches with.
pub fn last_stable_offset(log: &Log, m: Mutation) -> i64 {
    let hw = log.high_watermark();
    match log.first_unstable_offset() {
        Some(f) if m != Mutation::IgnoreFirstUnstable => f.min(hw),
        _ => hw,
    }
}

/// Every record a READ_COMMITTED consumer starting at the log start returns, reading up to
/// the last stable offset.
pub fn read_committed(log: &Log, m: Mutation) -> Result<Vec<Visible>, String> {
    let lso = last_stable_offset(log, m);
    let mut aborted: Vec<_> = if m == Mutation::IgnoreAborted {
        Vec::new()
    } else {
        log.collect_aborted_txns(log.log_start_offset(), lso)
    };
    aborted.sort_by_key(|a| a.first_offset);
    let mut aborted: VecDeque<_> = aborted.into();
    let mut aborting = BTreeSet::new();
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < lso {
        let r = log
            .read(offset, 1 << 20, lso, true)
            .map_err(|e| format!("read at {offset}: {e}"))?;
        let Some(slice) = r.slice else {
            return Err(format!("nothing to read at {offset} below the LSO {lso}"));
        };
        let bytes = slice.read_to_vec().map_err(|e| format!("read: {e}"))?;
        let before = offset;
        for b in batches(&bytes) {
            let (_, view) = b.map_err(|e| format!("bad batch after {offset}: {e}"))?;
            if view.last_offset() < offset {
                continue;
            }
            if view.base_offset() >= lso {
                return Err(format!(
                    "read returned a batch at {} >= LSO {lso}",
                    view.base_offset()
                ));
            }
            let pid = view.producer_id();
            if pid >= 0 {
                while aborted
                    .front()
                    .is_some_and(|a| a.first_offset <= view.last_offset())
                {
                    if let Some(a) = aborted.pop_front() {
                        aborting.insert(a.producer_id);
                    }
                }
            }
            offset = view.next_offset();
            if view.is_control() {
                let marker = parse_end_txn_marker(&view).map_err(|e| format!("marker: {e}"))?;
                if marker.is_some_and(|mk| mk.control_type == ControlType::Abort) {
                    aborting.remove(&pid);
                }
                continue;
            }
            if view.is_transactional() && aborting.contains(&pid) {
                continue;
            }
            let data = view
                .records_data(1 << 24)
                .map_err(|e| format!("records: {e}"))?;
            for rec in records(&data, view.records_count()) {
                let rec = rec.map_err(|e| format!("record: {e}"))?;
                out.push(Visible {
                    offset: view.record_offset(&rec),
                    value: rec.value.unwrap_or_default().to_vec(),
                });
            }
        }
        if offset == before {
            return Err(format!("the read at {offset} made no progress"));
        }
    }
    Ok(out)
}
