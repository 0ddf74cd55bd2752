//! Verifying a segment's batches, finding exactly which byte and offset ranges are damaged, and
//! re-synchronising after lost framing.
//!
//! Mental model: a segment is walked batch by batch from position 0 with the offset the next
//! batch must reach (`next_expected`, starting at the segment's base). A batch is good when its
//! header parses, it lies inside the file, its CRC-32C verifies, its offsets increase and stay
//! below the next segment's base. At a bad batch the walk does not stop: it searches forward,
//! byte by byte, for the next position holding a good batch whose base offset is at least
//! `next_expected` ([`resync`]; the magic byte filters candidates before any CRC is computed,
//! and a random match of a CRC-32C, a magic byte and an increasing offset is negligible). What
//! lies between is one [`Damage`]: its bytes, and the offsets `[next_expected, base of the next
//! good batch)` no good batch accounts for. With no good batch after it, the damage runs to the
//! end of the file ([`Verification::tail`]); the caller decides what that means (the torn tail
//! of the last segment is cut; a sealed segment's lost offsets run to the next segment's base).
//!
//! Invariants: nothing here trusts the file or writes to it; allocation stays within one
//! [`RESYNC_CHUNK_BYTES`] window or one batch that fits inside the file.

use std::fs::File;
use std::os::unix::fs::FileExt;

use skiff_record::{BATCH_HEADER_BYTES, BatchView, MAGIC_V2};

use crate::segment::scan::{BatchHeader, BatchReader, ScanStop};

/// Bytes read per step of a resynchronisation search.
pub const RESYNC_CHUNK_BYTES: usize = 1 << 20;

/// Why a byte range of a segment is damaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DamageReason {
    /// The framing is intact (a header and a length inside the file) but the CRC fails.
    Crc,
    /// The header cannot be a v2 batch, or its length runs past the file: framing is lost.
    Framing,
    /// A CRC-valid batch whose offsets do not increase or overlap the next segment.
    Offsets,
}

impl DamageReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DamageReason::Crc => "crc",
            DamageReason::Framing => "framing",
            DamageReason::Offsets => "offsets",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "crc" => Some(DamageReason::Crc),
            "framing" => Some(DamageReason::Framing),
            "offsets" => Some(DamageReason::Offsets),
            _ => None,
        }
    }
}

/// One damaged region of a segment followed by a good batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Byte range `[position, position + len)` of the damaged bytes.
    pub position: u64,
    pub len: u64,
    /// Offsets `[start_offset, end_offset)` no good batch accounts for (may be empty).
    pub start_offset: i64,
    pub end_offset: i64,
    pub reason: DamageReason,
}

/// A damaged region that runs to the end of the file (no good batch after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailDamage {
    pub position: u64,
    /// The first offset not accounted for.
    pub start_offset: i64,
    pub reason: DamageReason,
}

/// The outcome of [`verify_segment`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verification {
    /// Damaged regions each followed by a good batch, in file order.
    pub damages: Vec<Damage>,
    /// A damaged region running to the end of the file.
    pub tail: Option<TailDamage>,
    /// End position of the last good batch.
    pub valid_end: u64,
    /// Offset after the last good batch (the base offset if there is none).
    pub next_offset: i64,
    /// Good batches seen.
    pub good_batches: u64,
    /// Whether `on_good` asked to stop early.
    pub aborted: bool,
}

impl Verification {
    pub fn is_clean(&self) -> bool {
        self.damages.is_empty() && self.tail.is_none()
    }
}

/// Whether `bytes` (a whole batch at `h`) is good after `next_expected` in a segment based at
/// `base` whose next segment starts at `next_base`.
fn check(
    h: &BatchHeader,
    bytes: &[u8],
    base: i64,
    next_expected: i64,
    next_base: Option<i64>,
) -> Result<(), DamageReason> {
    let view = BatchView::new(bytes).map_err(|_| DamageReason::Framing)?;
    view.verify_crc().map_err(|_| DamageReason::Crc)?;
    let offsets_ok = h.base_offset >= next_expected
        && next_base.is_none_or(|n| h.last_offset < n)
        && h.last_offset - base <= i64::from(i32::MAX);
    if offsets_ok {
        Ok(())
    } else {
        Err(DamageReason::Offsets)
    }
}

/// Walks `[0, size)` of `file` (a segment based at `base`), calling `on_good` for every good
/// batch in order; `on_good` returns `false` to stop (throttled scrubs that are told to quit).
pub fn verify_segment(
    file: &File,
    base: i64,
    size: u64,
    next_base: Option<i64>,
    mut on_good: impl FnMut(&BatchHeader) -> std::io::Result<bool>,
) -> std::io::Result<Verification> {
    let mut out = Verification {
        next_offset: base,
        ..Verification::default()
    };
    let mut pos = 0u64;
    while pos < size {
        let mut reader = BatchReader::new(file, pos, size);
        let mut bad: Option<(u64, DamageReason)> = None;
        while let Some((h, bytes)) = reader.next_batch()? {
            match check(&h, bytes, base, out.next_offset, next_base) {
                Ok(()) => {
                    out.good_batches += 1;
                    out.valid_end = h.end_position();
                    out.next_offset = h.next_offset();
                    if !on_good(&h)? {
                        out.aborted = true;
                        return Ok(out);
                    }
                }
                Err(reason) => {
                    bad = Some((h.position, reason));
                    break;
                }
            }
        }
        let (at, reason) = match (bad, reader.stop_reason()) {
            (Some(b), _) => b,
            (None, Some(ScanStop::Truncated { position } | ScanStop::BadHeader { position })) => {
                (*position, DamageReason::Framing)
            }
            (None, None) => break,
        };
        match resync(file, at + 1, size, base, out.next_offset, next_base)? {
            Some(found) => {
                out.damages.push(Damage {
                    position: at,
                    len: found.position - at,
                    start_offset: out.next_offset,
                    end_offset: found.base_offset.max(out.next_offset),
                    reason,
                });
                pos = found.position;
            }
            None => {
                out.tail = Some(TailDamage {
                    position: at,
                    start_offset: out.next_offset,
                    reason,
                });
                break;
            }
        }
    }
    Ok(out)
}

/// The first position in `[from, size)` holding a good batch (see [`check`]) whose base offset
/// is at least `next_expected`, with its header.
pub fn resync(
    file: &File,
    from: u64,
    size: u64,
    base: i64,
    next_expected: i64,
    next_base: Option<i64>,
) -> std::io::Result<Option<BatchHeader>> {
    let mut buf = Vec::new();
    let mut start = from;
    while start + BATCH_HEADER_BYTES as u64 <= size {
        let want = (RESYNC_CHUNK_BYTES as u64).min(size - start) as usize;
        buf.resize(want, 0);
        file.read_exact_at(&mut buf, start)?;
        let last = want.saturating_sub(BATCH_HEADER_BYTES);
        for i in 0..=last {
            if buf[i + 16] as i8 != MAGIC_V2 {
                continue;
            }
            let pos = start + i as u64;
            let Some(h) = BatchHeader::parse(pos, &buf[i..i + BATCH_HEADER_BYTES]) else {
                continue;
            };
            if h.base_offset < next_expected
                || h.end_position() > size
                || next_base.is_some_and(|n| h.last_offset >= n)
                || h.last_offset - base > i64::from(i32::MAX)
            {
                continue;
            }
            let mut batch = vec![0u8; h.size as usize];
            file.read_exact_at(&mut batch, pos)?;
            if check(&h, &batch, base, next_expected, next_base).is_ok() {
                return Ok(Some(h));
            }
        }
        // The next window starts right after the last candidate examined.
        start += last as u64 + 1;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_record::{BatchBuilder, BatchOptions};

    /// A segment of `n` batches of 3 records at offsets 100.. (base 100); returns the file,
    /// the batch positions and the bytes.
    fn segment(n: usize) -> (tempfile::NamedTempFile, Vec<u64>, Vec<u8>) {
        let mut bytes = Vec::new();
        let mut positions = Vec::new();
        for i in 0..n {
            let mut b = BatchBuilder::new(BatchOptions::default());
            for r in 0..3 {
                b.append(
                    1_700_000_000_000 + r,
                    None,
                    Some(format!("v{i}-{r}").as_bytes()),
                    &[],
                );
            }
            let mut batch = b.build().unwrap();
            skiff_record::set_base_offset(&mut batch, 100 + 3 * i as i64);
            positions.push(bytes.len() as u64);
            bytes.extend_from_slice(&batch);
        }
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), &bytes).unwrap();
        (f, positions, bytes)
    }

    fn run(bytes: &[u8], next_base: Option<i64>) -> Verification {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), bytes).unwrap();
        let file = File::open(f.path()).unwrap();
        verify_segment(&file, 100, bytes.len() as u64, next_base, |_| Ok(true)).unwrap()
    }

    #[test]
    fn damages_are_located_exactly() {
        let (_f, pos, pristine) = segment(10);
        let end = pristine.len() as u64;
        let clean = run(&pristine, Some(130));
        assert!(clean.is_clean());
        assert_eq!((clean.good_batches, clean.next_offset), (10, 130));

        // A flipped byte in batch 4's records: CRC, the rest kept.
        let mut b = pristine.clone();
        b[pos[4] as usize + 70] ^= 0x10;
        let v = run(&b, Some(130));
        let want = Damage {
            position: pos[4],
            len: pos[5] - pos[4],
            start_offset: 112,
            end_offset: 115,
            reason: DamageReason::Crc,
        };
        assert_eq!(
            (v.damages.clone(), v.tail, v.good_batches),
            (vec![want], None, 9)
        );

        // A damaged length field in batch 2 (framing lost): resync at batch 3.
        for length in [0u32, 5, 0x7fff_ffff, 200] {
            let mut b = pristine.clone();
            let at = pos[2] as usize + 8;
            b[at..at + 4].copy_from_slice(&length.to_be_bytes());
            let v = run(&b, Some(130));
            assert_eq!(v.damages.len(), 1, "length {length}: {v:?}");
            let d = v.damages[0];
            assert_eq!(
                (d.position, d.position + d.len, d.start_offset, d.end_offset),
                (pos[2], pos[3], 106, 109),
                "length {length}"
            );
            assert_eq!((v.good_batches, v.tail), (9, None), "length {length}");
        }

        // Garbage to the end: a tail.
        let mut b = pristine.clone();
        for x in &mut b[pos[8] as usize..] {
            *x = 0xAB;
        }
        let v = run(&b, Some(130));
        assert_eq!(
            v.tail,
            Some(TailDamage {
                position: pos[8],
                start_offset: 124,
                reason: DamageReason::Framing
            })
        );
        assert_eq!((v.damages.len(), v.valid_end), (0, pos[8]));
        // Two damaged batches in a row are one damage.
        let mut b = pristine.clone();
        b[pos[6] as usize + 70] ^= 1;
        b[pos[7] as usize + 70] ^= 1;
        let v = run(&b, Some(130));
        assert_eq!(v.damages.len(), 1);
        assert_eq!(
            (v.damages[0].start_offset, v.damages[0].end_offset),
            (118, 124)
        );
        assert_eq!(v.damages[0].position + v.damages[0].len, pos[8]);
        assert!(end > pos[9]);
    }
}
