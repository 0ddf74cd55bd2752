//! Corruption handling (issue 12 items 6-9): a damaged batch is never served and never costs
//! good data.
//!
//! One pristine log of 30,000 records (3,000 batches of 10) over ~9 segments is built and
//! closed cleanly; each case copies it, damages one thing in a *sealed* segment and reopens it
//! (clean or unclean), then reads the whole log back through `Log::read`, jumping over
//! quarantined ranges, and compares with the pristine batches: every batch but the damaged one
//! is served byte for byte, the quarantined range is exactly the damaged batch's offsets, the
//! damaged bytes are in a `.corrupt` file, no segment was deleted. The figures printed with
//! `--nocapture` are the ones in docs/reliability.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use skiff_storage::StorageError;
use skiff_storage::integrity::quarantine::{FoundBy, QuarantinedRange};
use skiff_storage::integrity::scrubber::{ScrubSettings, Scrubber};
use skiff_storage::integrity::verify::{DamageReason, verify_segment};
use skiff_storage::log_manager::{CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_CHECKPOINT};
use skiff_storage::{Log, LogConfig, LogManager, LogManagerConfig};

const BATCHES: usize = 3_000;
const PER_BATCH: usize = 10;
const SEGMENT_BYTES: u64 = 128 * 1024;

/// Log lines of this test binary (a global subscriber: loads run on the manager's threads).
fn captured() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let w = Arc::clone(&buf);
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || Capture(Arc::clone(&w)))
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        buf
    })
}

struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        index_interval_bytes: 4096,
        segment_index_bytes: 1 << 20,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

fn batch(i: usize) -> Vec<u8> {
    let recs: Vec<Rec> = (0..PER_BATCH)
        .map(|r| Rec::value(T0 + i as i64, format!("record-{i}-{r}-padding").as_bytes()))
        .collect();
    build_batch(skiff_record::BatchOptions::default(), &recs)
}

/// The pristine log in `dir`, closed cleanly; its batches as stored.
fn pristine(dir: &Path) -> Vec<Stored> {
    let (mut log, _) = open(dir, &config(), true, 0);
    for i in 0..BATCHES {
        append(&mut log, batch(i), 1, T0);
    }
    log.close(T0).unwrap();
    let stored = layout(&log);
    assert!(log.segment_count() >= 8, "{}", log.segment_count());
    stored
}

/// Reads the log from its start, jumping over quarantined ranges: (batches, error ranges).
fn read_around(log: &Log) -> (Vec<Vec<u8>>, Vec<(i64, i64)>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        match log.read(next, 1 << 20, i64::MAX, true) {
            Err(StorageError::Quarantined { start, end, .. }) => {
                assert!(start <= next && next < end, "{next} in [{start}, {end})");
                errors.push((next, end));
                next = end;
            }
            Err(e) => panic!("read({next}): {e}"),
            Ok(r) => {
                let bytes = r
                    .slice
                    .expect("data below the log end")
                    .read_to_vec()
                    .unwrap();
                let before = out.len();
                for b in skiff_record::batches(&bytes) {
                    // A trailing partial batch ends the slice, as for any client.
                    let Ok((_, view)) = b else { break };
                    view.verify_crc()
                        .unwrap_or_else(|e| panic!("read({next}) served a corrupt batch: {e}"));
                    assert!(view.base_offset() >= next, "offsets go back at {next}");
                    next = view.last_offset() + 1;
                    out.push(view.bytes().to_vec());
                }
                assert!(out.len() > before, "read({next}) made no progress");
            }
        }
    }
    (out, errors)
}

fn records(batches: &[Vec<u8>]) -> usize {
    batches.len() * PER_BATCH
}

fn segments_of(stored: &[Stored]) -> Vec<i64> {
    let mut s: Vec<i64> = stored.iter().map(|b| b.segment).collect();
    s.dedup();
    s
}

/// The batch to damage: in the 2nd segment (sealed), `into` batches after its first one.
fn victim(stored: &[Stored], into: usize) -> (usize, &Stored) {
    let seg = segments_of(stored)[1];
    let first = stored.iter().position(|b| b.segment == seg).unwrap();
    (first + into, &stored[first + into])
}

fn poke(dir: &Path, s: &Stored, at: usize, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(seg_file(dir, s.segment, ".log"))
        .unwrap();
    f.write_all_at(bytes, s.position + at as u64).unwrap();
}

fn corrupt_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".corrupt"))
        .collect();
    v.sort();
    v
}

/// The batches a reader must get: all but `lost`.
fn all_but(stored: &[Stored], lost: usize) -> Vec<Vec<u8>> {
    stored
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != lost)
        .map(|(_, s)| s.bytes.clone())
        .collect()
}

#[test]
fn flipped_byte_and_unclean_shutdown_lose_one_batch_not_the_partition() {
    let tmp = tempdir();
    let dir = tmp.path().join("p");
    let stored = pristine(&dir);
    let segments = segments_of(&stored);
    let (idx, v) = victim(&stored, 40);
    let later = (stored.len() - idx - 1) * PER_BATCH;
    let mut byte = [v.bytes[100]];
    byte[0] ^= 0x04;
    poke(&dir, v, 100, &byte);

    let (log, report) = open(&dir, &config(), false, 0);
    let want = QuarantinedRange {
        start_offset: v.base_offset,
        end_offset: v.last_offset + 1,
        segment: v.segment,
        position: v.position,
        len: 0,
        reason: DamageReason::Crc,
        found_by: FoundBy::Recovery,
    };
    assert_eq!(report.quarantined, vec![want], "exactly the damaged batch");
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(report.deleted_segments, 0);
    assert_eq!(
        log.segments().map(|s| s.base_offset()).collect::<Vec<_>>(),
        segments
    );
    assert_eq!(log.log_end_offset(), (BATCHES * PER_BATCH) as i64);
    let files = corrupt_files(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let mut damaged = v.bytes.clone();
    damaged[100] ^= 0x04;
    assert!(
        std::fs::read(&files[0]).unwrap() == damaged,
        ".corrupt holds the bytes"
    );

    let (read, errors) = read_around(&log);
    assert_eq!(errors, vec![(v.base_offset, v.last_offset + 1)]);
    assert!(
        read == all_but(&stored, idx),
        "every other batch served intact"
    );
    // A read before the range stops at it; one inside answers the error; one after is served.
    let r = log
        .read(v.base_offset - 1, 1 << 30, i64::MAX, true)
        .unwrap();
    let bytes = r.slice.unwrap().read_to_vec().unwrap();
    let last = skiff_record::batches(&bytes).last().unwrap().unwrap().1;
    assert_eq!(last.last_offset(), v.base_offset - 1);
    assert!(matches!(
        log.read(v.base_offset + 3, 1 << 20, i64::MAX, true),
        Err(StorageError::Quarantined { .. })
    ));
    assert!(
        log.read(v.last_offset + 1, 1 << 20, i64::MAX, true)
            .unwrap()
            .slice
            .is_some()
    );
    eprintln!(
        "item 8 figures: records damaged {}, records after the damage kept {later}, \
         records served {}, reported {:?}, segments kept {}/{}",
        v.last_offset + 1 - v.base_offset,
        records(&read),
        report
            .quarantined
            .iter()
            .map(|r| (r.start_offset, r.end_offset))
            .collect::<Vec<_>>(),
        log.segment_count(),
        segments.len()
    );
    drop(log);

    // The quarantine survives restarts (clean and unclean), and nothing more is lost.
    for clean in [true, false] {
        let (log, report) = open(&dir, &config(), clean, 0);
        assert!(
            report.quarantined.is_empty(),
            "nothing new found (clean={clean})"
        );
        assert_eq!(log.quarantined().len(), 1);
        assert_eq!(log.quarantined()[0].start_offset, want.start_offset);
        let (again, errors) = read_around(&log);
        assert!(again == read && errors.len() == 1, "clean={clean}");
        assert_eq!(corrupt_files(&dir).len(), 1, "the .corrupt file is kept");
    }
}

#[test]
fn damaged_length_field_is_never_skipped_silently() {
    let tmp = tempdir();
    let dir = tmp.path().join("p");
    let stored = pristine(&dir);
    let (idx, v) = victim(&stored, 100);
    let next_seg = segments_of(&stored)[2];
    let later_in_segment = stored[idx + 1..]
        .iter()
        .filter(|s| s.segment == v.segment)
        .count()
        * PER_BATCH;
    poke(&dir, v, 8, &0x00FF_FFFFu32.to_be_bytes());

    // Clean restart: no CRC pass at load; the read notices it cannot account for the offsets.
    let clean_dir = tmp.path().join("clean");
    copy_dir(&dir, &clean_dir);
    let (log, report) = open(&clean_dir, &config(), true, i64::MAX);
    assert_eq!(report.recovered_segments, 0);
    let (read, errors) = read_around(&log);
    assert_eq!(
        errors,
        vec![(v.base_offset, next_seg)],
        "the unaccounted offsets are reported, not skipped"
    );
    assert_eq!(log.quarantined().len(), 1);
    assert_eq!(log.quarantined()[0].found_by, FoundBy::Read);
    let served_clean = records(&read);
    // The scrubber's pass over that segment (done here by hand) narrows the range to the
    // damaged batch: the rest of its segment is served again.
    let seg = log
        .segments()
        .find(|s| s.base_offset() == v.segment)
        .unwrap();
    let (file, size) = (seg.file().clone(), seg.size());
    let found = verify_segment(&file, v.segment, size, Some(next_seg), |_| Ok(true)).unwrap();
    log.record_scrub(v.segment, size, next_seg, &found, 1_000);
    let (read, errors) = read_around(&log);
    assert_eq!(errors, vec![(v.base_offset, v.last_offset + 1)]);
    assert!(
        read == all_but(&stored, idx),
        "the rest of the segment is served again"
    );
    let served_scrubbed = records(&read);
    drop(log);

    // Unclean restart: recovery resynchronises after the damaged batch, keeping the rest of
    // its segment.
    let (log, report) = open(&dir, &config(), false, 0);
    assert_eq!(
        report
            .quarantined
            .iter()
            .map(|r| (r.start_offset, r.end_offset, r.reason))
            .collect::<Vec<_>>(),
        vec![(v.base_offset, v.last_offset + 1, DamageReason::Framing)]
    );
    assert_eq!(corrupt_files(&dir).len(), 1);
    let (read, errors) = read_around(&log);
    assert_eq!(errors, vec![(v.base_offset, v.last_offset + 1)]);
    assert!(read == all_but(&stored, idx));
    eprintln!(
        "item 6 figures: records damaged {PER_BATCH}; later records in that segment \
         {later_in_segment}; clean restart: served {served_clean}, reported {errors_clean:?} \
         (was silently skipped); after the scrub of that segment: served {served_scrubbed}; \
         unclean restart: served {}, reported {:?}",
        records(&read),
        errors,
        errors_clean = [(v.base_offset, next_seg)],
    );
}

#[test]
fn lost_framing_in_a_sealed_segment_resyncs_at_the_next_segment() {
    // Garbage from the victim to the end of its segment: nothing to resynchronise on inside
    // it, so the offsets up to the next segment's base are lost and the rest is kept.
    let tmp = tempdir();
    let dir = tmp.path().join("p");
    let stored = pristine(&dir);
    let segments = segments_of(&stored);
    let (idx, v) = victim(&stored, 10);
    let seg_len = std::fs::metadata(seg_file(&dir, v.segment, ".log"))
        .unwrap()
        .len();
    let garbage = vec![0xEEu8; (seg_len - v.position) as usize];
    poke(&dir, v, 0, &garbage);
    let (log, report) = open(&dir, &config(), false, 0);
    assert_eq!(
        report
            .quarantined
            .iter()
            .map(|r| (r.start_offset, r.end_offset))
            .collect::<Vec<_>>(),
        vec![(v.base_offset, segments[2])]
    );
    assert_eq!(log.segment_count(), segments.len(), "later segments kept");
    let (read, _) = read_around(&log);
    let lost_batches = stored.iter().filter(|s| s.segment == v.segment).count()
        - (idx - stored.iter().position(|s| s.segment == v.segment).unwrap());
    assert_eq!(read.len(), stored.len() - lost_batches);
    assert_eq!(
        std::fs::metadata(&corrupt_files(&dir)[0]).unwrap().len(),
        garbage.len() as u64
    );
}

#[test]
fn log_start_checkpoint_beyond_the_log_end_is_ignored() {
    let logs = captured();
    let tmp = tempdir();
    let root = tmp.path().join("dir");
    let cfg = LogManagerConfig {
        log_dirs: vec![root.clone()],
        ..LogManagerConfig::default()
    };
    let c = config();
    let config_for = move |_: &skiff_types::TopicPartition| c.clone();
    let end = {
        let (mgr, _) = LogManager::open(cfg.clone(), &config_for, T0).unwrap();
        let shared = mgr.get_or_create(&tp(), config(), T0).unwrap();
        let mut log = shared.lock();
        for i in 0..200 {
            append(&mut log, batch(i), 1, T0);
        }
        let end = log.log_end_offset();
        drop(log);
        mgr.shutdown().unwrap();
        end
    };
    for clean in [true, false] {
        std::fs::write(
            root.join(LOG_START_OFFSET_CHECKPOINT),
            format!("0\n1\nt 0 {}\n", end + 1_000_000),
        )
        .unwrap();
        if !clean {
            let _ = std::fs::remove_file(root.join(CLEAN_SHUTDOWN_FILE));
        }
        let (mgr, _) = LogManager::open(cfg.clone(), &config_for, T0).unwrap();
        let shared = mgr.get(&tp()).unwrap();
        {
            let log = shared.lock();
            assert_eq!(
                (log.log_start_offset(), log.log_end_offset()),
                (0, end),
                "clean={clean}"
            );
            assert_eq!(read_all(&log, i64::MAX).len(), 200, "all data still there");
        }
        drop(shared);
        mgr.shutdown().unwrap();
    }
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(
        text.contains("log-start-offset checkpoint is beyond the log end"),
        "warning logged: {text}"
    );
}

#[test]
fn scrubber_finds_a_flipped_byte_on_a_running_log() {
    let tmp = tempdir();
    let root = tmp.path().join("dir");
    let cfg = LogManagerConfig {
        log_dirs: vec![root.clone()],
        ..LogManagerConfig::default()
    };
    let c = config();
    let config_for = move |_: &skiff_types::TopicPartition| c.clone();
    let (mgr, _) = LogManager::open(cfg.clone(), &config_for, T0).unwrap();
    let shared = mgr.get_or_create(&tp(), config(), T0).unwrap();
    let stored = {
        let mut log = shared.lock();
        for i in 0..1500 {
            append(&mut log, batch(i), 1, T0);
        }
        assert!(log.segment_count() >= 3);
        layout(&log)
    };
    let dir = root.join(tp().dir_name());
    let (idx, v) = victim(&stored, 7);
    poke(&dir, v, 90, &[v.bytes[90] ^ 0x80]);
    let sealed = segments_of(&stored).len() - 1;
    let settings = ScrubSettings {
        enable: true,
        interval_ms: 3_600_000,
        io_max_bytes_per_second: 50e6,
        backoff_ms: 10,
    };
    let mut scrubber = Scrubber::start(Arc::clone(&mgr), move || settings);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = shared.lock().integrity_status();
        if st.scrub.segments_verified == sealed {
            assert_eq!(st.scrub.corrupt_batches_found, 1);
            assert_eq!(st.quarantined_ranges, 1);
            let q = st.quarantined[0];
            assert_eq!(
                (
                    q.start_offset,
                    q.end_offset,
                    q.position,
                    q.len,
                    q.reason,
                    q.found_by
                ),
                (
                    v.base_offset,
                    v.last_offset + 1,
                    v.position,
                    v.bytes.len() as u64,
                    DamageReason::Crc,
                    FoundBy::Scrub
                )
            );
            break;
        }
        assert!(Instant::now() < deadline, "scrubber did not finish: {st:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    scrubber.stop();
    {
        let log = shared.lock();
        let (read, errors) = read_around(&log);
        assert_eq!(errors, vec![(v.base_offset, v.last_offset + 1)]);
        assert!(read == all_but(&stored, idx), "everything else served");
    }
    drop(shared);
    mgr.shutdown().unwrap();
    drop(mgr);
    // After a restart the quarantine and the scrub progress are still there.
    let (mgr, _) = LogManager::open(cfg, &config_for, T0).unwrap();
    let shared = mgr.get(&tp()).unwrap();
    let st = shared.lock().integrity_status();
    assert_eq!(
        (st.quarantined_ranges, st.scrub.segments_verified),
        (1, sealed)
    );
    let (_, errors) = read_around(&shared.lock());
    assert_eq!(errors, vec![(v.base_offset, v.last_offset + 1)]);
}

/// Issue 17 item 8: a replica repairs by cutting its log at the quarantined range and
/// fetching the rest again: after the cut the log is exactly the batches before the damage
/// (nothing quarantined, no header inside the damage read), and re-appending the leader's
/// batches as a follower gives the pristine log back, byte for byte. Three kinds of damage:
/// a flipped payload byte found by the scrubber, a damaged length field (lost framing) found
/// by a read, and a damaged batch moved aside by recovery after an unclean shutdown.
#[test]
fn a_cut_at_the_quarantined_range_and_a_refetch_give_the_pristine_log_back() {
    let tmp = tempdir();
    let dir = tmp.path().join("p");
    let stored = pristine(&dir);
    let (idx, v) = victim(&stored, 100);
    let next_seg = segments_of(&stored)[2];
    let cases: [(&str, usize, &[u8], bool); 3] = [
        ("flipped payload byte, scrubbed", 70, &[0xA5], true),
        (
            "damaged length field, read",
            8,
            &0x00FF_FFFFu32.to_be_bytes(),
            true,
        ),
        ("flipped payload byte, unclean restart", 70, &[0xA5], false),
    ];
    for (what, at, bytes, clean) in cases {
        let case_dir = tmp.path().join(what.replace([' ', ','], "-"));
        copy_dir(&dir, &case_dir);
        poke(&case_dir, v, at, bytes);
        let (mut log, _) = open(
            &case_dir,
            &config(),
            clean,
            if clean { i64::MAX } else { 0 },
        );
        if clean {
            // The scrubber's pass over the damaged segment, by hand; where the framing is
            // lost, a read finds it first (as a fetch would).
            if at == 8 {
                let _ = read_around(&log);
            }
            let seg = log
                .segments()
                .find(|s| s.base_offset() == v.segment)
                .unwrap();
            let (file, size) = (seg.file().clone(), seg.size());
            let found =
                verify_segment(&file, v.segment, size, Some(next_seg), |_| Ok(true)).unwrap();
            log.record_scrub(v.segment, size, next_seg, &found, 1_000);
        }
        assert_eq!(
            log.first_quarantined_offset(),
            Some(v.base_offset),
            "{what}: quarantined {:?}",
            log.quarantined()
        );
        let end = log.cut_at_first_quarantined().unwrap();
        assert_eq!(end, Some(v.base_offset), "{what}");
        assert_eq!(log.log_end_offset(), v.base_offset, "{what}");
        assert!(
            log.quarantined().is_empty(),
            "{what}: {:?}",
            log.quarantined()
        );
        let (read, errors) = read_around(&log);
        assert!(errors.is_empty(), "{what}: {errors:?}");
        assert!(
            read == stored[..idx]
                .iter()
                .map(|s| s.bytes.clone())
                .collect::<Vec<_>>(),
            "{what}: the prefix before the damage, whole"
        );
        // The leader's batches from the cut on, appended as a follower would.
        for s in &stored[idx..] {
            log.append_as_follower(&s.bytes, T0).unwrap();
        }
        let (read, errors) = read_around(&log);
        assert!(errors.is_empty(), "{what}: {errors:?}");
        assert!(
            read == stored.iter().map(|s| s.bytes.clone()).collect::<Vec<_>>(),
            "{what}: the repaired log is the pristine one"
        );
        assert_eq!(log.first_quarantined_offset(), None, "{what}");
        assert_eq!(log.cut_at_first_quarantined().unwrap(), None, "{what}");
    }
}
