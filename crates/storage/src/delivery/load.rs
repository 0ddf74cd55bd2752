//! The [`Log`] side of delayed delivery: recording delayed appends, the DSO, the status view,
//! and loading / rebuilding the `.deliverafter` files.
//!
//! Load (after recovery has settled the segments): every segment's index is read and checked
//! ([`check_entries`]); entries past the recovered log end are dropped, a garbled file is
//! rebuilt from the segment's batches. After an unclean shutdown, batches past the recovery
//! point that have no entry are re-read (decompressed) and get one if they are still delayed;
//! this happens on delay-enabled topics only. A rebuilt `__delay_ms` due time is counted from
//! the batch's max timestamp (the exact append time on LogAppendTime topics, the producer's
//! clock on CreateTime ones): the append time itself is not stored. Then the pending FIFO is
//! every entry with `due > now`, in offset order.
//!
//! Followers (`Log::append_as_follower`) build entries the same way as a rebuild, on
//! delay-enabled topics only.
//!
//! The DSO applies only while `delivery.delay.enable=true`: turning the feature off releases
//! every waiting batch (the entries stay and count again if it is turned back on).

use skiff_record::{BatchView, walk_records};
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

use super::index::{DeliverAfterEntry, check_entries};
use super::{DelayConfig, DelayHeaders, DeliveryStatus, record_due};
use crate::error::{IoContext, Result, StorageError};
use crate::log::{AppendInfo, Log};
use crate::segment::LogSegment;
use crate::segment::scan::BatchReader;

impl Log {
    /// Records an appended batch due at `due_ms` (after its append time): index entry + FIFO.
    pub(crate) fn record_delayed_batch(&mut self, info: &AppendInfo, due_ms: i64) -> Result<()> {
        if info.duplicate || info.size == 0 {
            return Ok(());
        }
        let base = info.base_offset;
        // Withheld first: whatever fails below, the batch (already in the log) still waits in
        // memory; the error fails the produce, and a restart rebuilds the entry.
        self.delivery.push(base, due_ms);
        let seg = self.active_mut();
        let position = seg.size().saturating_sub(info.size as u64);
        let relative = i32::try_from(base - seg.base_offset()).map_err(|_| {
            StorageError::InvalidArgument(format!("offset {base} outside its segment"))
        })?;
        let position = u32::try_from(position)
            .map_err(|_| StorageError::InvalidArgument("segment position above 4 GiB".into()))?;
        let idx = seg.deliver_after_mut();
        let created = !idx.has_file();
        idx.append(relative, position, due_ms).at(idx.path())?;
        // Durable topics: the entry (and a new file's directory entry) is on disk before the
        // data's fdatasync (group commit, after the lock) can acknowledge the batch, or a power
        // cut after the ack could bring the batch back without its entry, below the recovery
        // point the rebuild starts from, and serve it early. The other order is safe: an entry
        // whose batch was lost points past the segment's end, so the index is garbled and
        // rebuilt on load.
        if info.needs_sync {
            idx.flush().at(idx.path())?;
            if created {
                crate::log::fsync_dir(&self.dir)?;
            }
        }
        Ok(())
    }

    /// The delivery stable offset at `now`: base offset of the first batch not yet due, or
    /// `None` (no cap) when nothing waits or the topic has delivery delay off. Advances the
    /// pending FIFO. Consumer reads and retention are capped at it.
    pub fn delivery_stable_offset(&mut self, now_ms: i64) -> Option<i64> {
        if !self.config.delivery_delay_enable {
            return None;
        }
        let dropped = self.delivery.advance(now_ms);
        if dropped > 0 {
            tracing::debug!(tp = %self.tp, delivered = dropped, dso = ?self.delivery.stable_offset(), pending = self.delivery.len(), "delivery stable offset advanced");
        }
        self.delivery.stable_offset()
    }

    /// When the DSO moves next (`None`: nothing pending or the feature is off).
    pub fn delivery_next_due(&self) -> Option<i64> {
        if !self.config.delivery_delay_enable {
            return None;
        }
        self.delivery.next_due()
    }

    /// Heap bytes of the pending FIFO (benchmarks).
    pub fn delivery_pending_heap_bytes(&self) -> usize {
        self.delivery.heap_bytes()
    }

    /// The operator view of this partition's delayed delivery at `now`.
    pub fn delivery_status(&mut self, now_ms: i64) -> DeliveryStatus {
        let dso = self.delivery_stable_offset(now_ms);
        let enabled = self.config.delivery_delay_enable;
        DeliveryStatus {
            enabled,
            pending_batches: if enabled { self.delivery.len() } else { 0 },
            next_due_ms: self.delivery_next_due(),
            delivery_stable_offset: dso,
            high_watermark: self.high_watermark,
            index_entries: self
                .segments
                .values()
                .map(|s| s.deliver_after().entries())
                .sum(),
        }
    }

    /// Loads the `.deliverafter` files into the pending FIFO, rebuilding them where needed
    /// (see the module docs). Called by `Log::open` after recovery.
    pub(crate) fn load_delivery_state(&mut self, clean_shutdown: bool, now_ms: i64) -> Result<()> {
        self.delivery.clear();
        let rebuild_cfg = self.config.delivery_delay_config().map(|c| DelayConfig {
            // Data already accepted is never refused on rebuild.
            clamp: true,
            ..c
        });
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let end = self.log_end_offset;
        let recovery_point = self.recovery_point;
        // A log start inside a waiting batch (DeleteRecords) leaves that batch waiting.
        let start_base = self.batch_base_containing(self.log_start_offset);
        let mut rebuilt = 0usize;
        for (i, base) in bases.iter().enumerate() {
            let seg_end = bases.get(i + 1).copied().unwrap_or(end);
            let Some(seg) = self.segments.get_mut(base) else {
                continue;
            };
            let (mut entries, garbled, trimmed) = match seg.deliver_after().read_all(*base) {
                Ok(all) => {
                    let kept: Vec<DeliverAfterEntry> = all
                        .iter()
                        .copied()
                        .filter(|e| e.base_offset < seg_end)
                        .collect();
                    match check_entries(&kept, *base, seg.size(), seg_end) {
                        Ok(()) => {
                            let trimmed = kept.len() != all.len();
                            (kept, false, trimmed)
                        }
                        Err(why) => {
                            tracing::warn!(path = %seg.deliver_after().path().display(), %why, "garbled delivery index; rebuilding it");
                            (Vec::new(), true, false)
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    tracing::warn!(path = %seg.deliver_after().path().display(), error = %e, "garbled delivery index; rebuilding it");
                    (Vec::new(), true, false)
                }
                Err(e) => return Err(e).at(seg.deliver_after().path()),
            };
            let mut dirty = garbled || trimmed;
            if let Some(cfg) = &rebuild_cfg {
                // Which batches to re-read: all of a garbled index's segment; after an unclean
                // shutdown, those past the recovery point and past the last surviving entry.
                let from = if garbled {
                    Some(*base)
                } else if !clean_shutdown && seg_end > recovery_point {
                    let after_last = entries.last().map_or(*base, |e| e.base_offset + 1);
                    Some(after_last.max(recovery_point))
                } else {
                    None
                };
                if let Some(from) = from {
                    let added = scan_delayed_batches(seg, from, cfg)?;
                    if !added.is_empty() {
                        rebuilt += added.len();
                        entries.extend(added);
                        dirty = true;
                    }
                }
            }
            if dirty {
                let idx = seg.deliver_after_mut();
                idx.rewrite(*base, &entries).at(idx.path())?;
            }
            for e in entries {
                if e.due_ms > now_ms && e.base_offset >= start_base {
                    self.delivery.push(e.base_offset, e.due_ms);
                }
            }
        }
        if !self.delivery.is_empty() || rebuilt > 0 {
            tracing::info!(tp = %self.tp, pending = self.delivery.len(), next_due_ms = ?self.delivery.next_due(), rebuilt_entries = rebuilt, enabled = self.config.delivery_delay_enable, "delivery state loaded");
        }
        Ok(())
    }
}

/// The due time of a stored batch when it is after its (approximate) append time; `None` if
/// not delayed or unreadable. Data already accepted is never refused: callers pass a clamping
/// config. The append time is the batch's max timestamp on LogAppendTime batches (exact); on
/// CreateTime batches (the producer's clock) it is at least `append_floor`, a time known to
/// be no earlier than the append (the segment file's last write on rebuild, the local clock
/// on a follower): a rebuilt due time may then be late, never early.
pub(crate) fn stored_batch_due(bytes: &[u8], cfg: &DelayConfig, append_floor: i64) -> Option<i64> {
    let view = BatchView::new(bytes).ok()?;
    if view.is_control() {
        return None;
    }
    let data = view.records_data(DECOMPRESSED_BATCH_BYTES_MAX).ok()?;
    let append_ms = if view.timestamp_type() == skiff_record::TimestampType::LogAppendTime {
        view.max_timestamp()
    } else {
        view.max_timestamp().max(append_floor)
    };
    let mut due_max: Option<i64> = None;
    let mut walk = walk_records(&data, view.records_count());
    loop {
        let mut headers = DelayHeaders::default();
        let Some(Ok(_)) = walk.next_with(&mut |k, v| headers.observe(k, v)) else {
            break;
        };
        if let Ok(due) = record_due(&headers, cfg, append_ms) {
            due_max = Some(due_max.map_or(due, |d| d.max(due)));
        }
    }
    due_max.filter(|&d| d > append_ms)
}

impl Log {
    /// Followers (replicated appends, issue 8): on delay-enabled topics the batch's headers are
    /// read (decompressing) so a new leader has the index at once. Due times are counted from
    /// the batch's max timestamp (exact on LogAppendTime topics).
    pub(crate) fn follower_delivery_due(&self, batch: &[u8], now_ms: i64) -> Option<i64> {
        let cfg = self.config.delivery_delay_config()?;
        stored_batch_due(batch, &DelayConfig { clamp: true, ..cfg }, now_ms)
    }
}

/// Re-reads the batches of `seg` with base offset ≥ `from` and returns an entry for each one
/// due after its append time (see [`stored_batch_due`]).
fn scan_delayed_batches(
    seg: &LogSegment,
    from: i64,
    cfg: &DelayConfig,
) -> Result<Vec<DeliverAfterEntry>> {
    let mut out = Vec::new();
    let file = std::sync::Arc::clone(seg.file());
    // The segment's last write is no earlier than any of its batches' appends.
    let last_write_ms = file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(i64::MIN, |d| {
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
        });
    let start = seg.position_of(from)?;
    let mut reader = BatchReader::new(&file, start, seg.size());
    while let Some((h, bytes)) = reader.next_batch().at(seg.log_path())? {
        if h.base_offset < from {
            continue;
        }
        if let Some(due) = stored_batch_due(bytes, cfg, last_write_ms)
            && let Ok(position) = u32::try_from(h.position)
        {
            out.push(DeliverAfterEntry {
                base_offset: h.base_offset,
                position,
                due_ms: due,
            });
        }
    }
    Ok(out)
}
