//! §2.10 / §2.4 / §2.5: dense offsets across rolls, reads under a bound, the "last m"
//! recipe, roll rules and truncation.

use super::*;

#[test]
fn offsets_are_dense_and_contiguous_across_rolls() {
    // §2.10 #1, #2 (segment.bytes shrunk to 4 KiB through the struct, as `set` forbids it).
    let dir = tempdir();
    let mut log = new_log(dir.path(), &small_config(4096));
    let first = produce(
        &mut log,
        &simple_batch(&[NOW, NOW, NOW], 10),
        &ValidationConfig::default(),
        NOW,
    )
    .unwrap();
    assert_eq!(
        (first.base_offset, first.last_offset, log.log_end_offset()),
        (0, 2, 3)
    );
    for i in 0..60 {
        let n = 1 + i % 5;
        let info = produce(
            &mut log,
            &simple_batch(&vec![NOW; n], 120),
            &ValidationConfig::default(),
            NOW,
        )
        .unwrap();
        assert_eq!(info.record_count, n as i32);
    }
    assert!(log.segment_count() >= 5);
    let batches = read_all(&log, i64::MAX);
    assert_eq!(
        offsets_of(&batches),
        (0..log.log_end_offset()).collect::<Vec<_>>()
    );
    for seg in log.segments() {
        let base = seg.base_offset();
        for suffix in [".log", ".index", ".timeindex"] {
            assert!(
                seg_file(dir.path(), base, suffix).exists(),
                "{base}{suffix}"
            );
        }
        let data = std::fs::read(seg.log_path()).unwrap();
        let first = skiff_record::batches(&data).next().unwrap().unwrap().1;
        assert_eq!(
            first.base_offset(),
            base,
            "file named after its first offset"
        );
        assert!(seg.size() <= 4096);
    }
}

#[test]
fn reads_return_whole_batches_under_the_bound() {
    // §2.10 #3, #4, #5 and §2.4.
    let dir = tempdir();
    let mut log = new_log(dir.path(), &small_config(4096));
    for _ in 0..4 {
        append(&mut log, simple_batch(&[NOW; 5], 100), 0, NOW);
    }
    log.roll(NOW).unwrap();
    for _ in 0..2 {
        append(&mut log, simple_batch(&[NOW; 5], 100), 0, NOW);
    }
    let leo = log.log_end_offset();
    assert_eq!(leo, 30);
    log.set_high_watermark(22);
    let hw = log.high_watermark();
    let first_batch_at = |o: i64, bound: i64| {
        let r = log.read(o, 1 << 20, bound, true).unwrap();
        let bytes = r.slice.map(|s| s.read_to_vec().unwrap());
        (r.first_batch_offset, bytes)
    };
    // #3: inside a batch, the whole batch comes back, starting before N.
    for n in [0, 3, 12, 14, 20, 24] {
        let (first, bytes) = first_batch_at(n, leo);
        let bytes = bytes.unwrap();
        let v = skiff_record::batches(&bytes).next().unwrap().unwrap().1;
        assert_eq!(
            (first, v.base_offset()),
            (n - n % 5, n - n % 5),
            "read({n})"
        );
        assert!(v.last_offset() >= n);
    }
    // The consumer bound: the batch holding it (20..24 straddles HW=22) is held back.
    let below_hw = read_all(&log, 20);
    assert_eq!(offsets_of(&below_hw), (0..20).collect::<Vec<_>>());
    let r = log.read(0, 1 << 20, hw, true).unwrap();
    let bytes = r.slice.unwrap().read_to_vec().unwrap();
    assert_eq!(
        skiff_record::batches(&bytes).count(),
        4,
        "segment 0 only, all below HW"
    );
    assert!(log.read(20, 1 << 20, hw, true).unwrap().slice.is_none());
    // At the bound, and between the bound and the log end (#5): empty, no error.
    for n in [hw, 24, 29, leo] {
        let r = log.read(n, 1 << 20, hw, true).unwrap();
        assert!(r.slice.is_none(), "read({n}) with bound {hw}");
    }
    // Past the log end or below the start (#4): OFFSET_OUT_OF_RANGE.
    for n in [leo + 1, leo + 1000, -1] {
        let e = log.read(n, 1 << 20, leo, true).unwrap_err();
        assert!(
            matches!(e, StorageError::OffsetOutOfRange { .. }),
            "read({n}): {e}"
        );
        assert_eq!(e.error_code(), ErrorCode::OffsetOutOfRange);
    }
    // max_bytes: the first batch whole when min_one_message; otherwise at most max_bytes.
    let batch_len = read_all(&log, 5)[0].len() as u64;
    let r = log.read(0, 10, leo, true).unwrap();
    assert_eq!(r.slice.unwrap().len, batch_len);
    let r = log.read(0, 10, leo, false).unwrap();
    assert!(r.slice.is_none_or(|s| s.len <= 10));
    let r = log.read(0, 2 * batch_len as usize + 1, leo, false).unwrap();
    assert_eq!(r.slice.unwrap().len, 2 * batch_len + 1);
    // A read never crosses into the next segment.
    let r = log.read(15, 1 << 20, leo, true).unwrap();
    assert_eq!(r.slice.unwrap().len, batch_len);
}

#[test]
fn last_m_recipe() {
    // §2.9 / §2.10 #11: 100 records, seek to end-10, read until end: exactly 90..99.
    let dir = tempdir();
    let mut log = new_log(dir.path(), &small_config(2048));
    let mut produced = 0;
    while produced < 100 {
        let n = (100 - produced).min(7);
        append(&mut log, simple_batch(&vec![NOW; n], 40), 0, NOW);
        produced += n;
    }
    log.set_high_watermark(100);
    let end = log
        .offset_for_timestamp(-1, log.high_watermark())
        .unwrap()
        .unwrap()
        .offset;
    let begin = log
        .offset_for_timestamp(-2, log.high_watermark())
        .unwrap()
        .unwrap()
        .offset;
    assert_eq!((begin, end), (0, 100));
    let mut position = begin.max(end - 10);
    let mut got = Vec::new();
    while position < end {
        let r = log
            .read(position, 1 << 20, log.high_watermark(), true)
            .unwrap();
        let bytes = r.slice.unwrap().read_to_vec().unwrap();
        let batches: Vec<Vec<u8>> = skiff_record::batches(&bytes)
            .map(|b| b.unwrap().1.bytes().to_vec())
            .collect();
        for o in offsets_of(&batches) {
            if o >= position {
                got.push(o); // the client drops offsets below its position
            }
        }
        position = *got.last().unwrap() + 1;
    }
    assert_eq!(got, (90..100).collect::<Vec<_>>());
}

#[test]
fn segment_ms_rolls_by_message_time() {
    // §1.7 / §2.5: time waited = incoming max timestamp - first batch's timestamp.
    let dir = tempdir();
    let mut cfg = LogConfig::default();
    cfg.set("segment.ms", "1000").unwrap();
    let mut log = new_log(dir.path(), &cfg);
    let t = NOW - 30 * MIN;
    append(&mut log, simple_batch(&[t], 5), 0, NOW);
    // Wall clock far ahead, message time 999 ms later: no roll.
    append(&mut log, simple_batch(&[t + 999], 5), 0, NOW + 100 * MIN);
    assert_eq!(log.segment_count(), 1);
    append(&mut log, simple_batch(&[t + 1001], 5), 0, NOW);
    let bases: Vec<i64> = log.segments().map(|s| s.base_offset()).collect();
    assert_eq!(
        bases,
        vec![0, 2],
        "rolled at the incoming batch's base offset"
    );
    // Out-of-order older data does not roll.
    append(&mut log, simple_batch(&[t], 5), 0, NOW);
    assert_eq!(log.segment_count(), 2);

    // Without timestamps the segment's creation time (an explicit `now`) counts.
    let dir = tempdir();
    let (mut log, _) = Log::open(dir.path(), tp(), cfg.clone(), opts(true, 0, T0)).unwrap();
    append(&mut log, simple_batch(&[-1], 5), 0, T0 + 10);
    append(&mut log, simple_batch(&[-1], 5), 0, T0 + 1000);
    assert_eq!(log.segment_count(), 1);
    append(&mut log, simple_batch(&[-1], 5), 0, T0 + 1001);
    assert_eq!(log.segment_count(), 2);
}

#[test]
fn full_index_rolls_the_segment() {
    // §2.5: a full offset or time index forces a roll (segment.index.bytes=32: 4 offset
    // entries, 2 time entries of which one is kept for the final entry).
    for (what, with_ts, per_segment) in [
        ("time index full", true, 2),
        ("offset index full", false, 5),
    ] {
        let dir = tempdir();
        let mut cfg = LogConfig::default();
        cfg.set("segment.index.bytes", "32").unwrap();
        cfg.set("index.interval.bytes", "0").unwrap();
        let mut log = new_log(dir.path(), &cfg);
        for i in 0..20 {
            // Without timestamps the time index stays empty and only the offset index fills.
            let ts = if with_ts { NOW + i } else { -1 };
            append(&mut log, simple_batch(&[ts], 5), 0, NOW);
        }
        let counts: Vec<usize> = log
            .segments()
            .map(|s| {
                let data = std::fs::read(s.log_path()).unwrap();
                skiff_record::batches(&data).count()
            })
            .collect();
        assert!(
            counts[..counts.len() - 1].iter().all(|c| *c == per_segment),
            "{what}: {counts:?}"
        );
        let batches = read_all(&log, i64::MAX);
        assert_eq!(offsets_of(&batches), (0..20).collect::<Vec<_>>(), "{what}");
        check_indexes(&log, &layout(&log));
        for i in 0..20 {
            let want = if with_ts {
                ts_offset(i, NOW + i, 0)
            } else {
                None
            };
            assert_eq!(
                log.offset_for_timestamp(NOW + i, 20).unwrap(),
                want,
                "{what}"
            );
        }
    }
}

#[test]
fn append_larger_than_segment_bytes_is_record_list_too_large() {
    let dir = tempdir();
    let mut log = new_log(dir.path(), &small_config(1024));
    append(&mut log, simple_batch(&[NOW], 100), 0, NOW);
    let mut big = simple_batch(&[NOW; 4], 300);
    let e = log.append_as_leader(&mut big, 0, NOW).unwrap_err();
    assert!(matches!(e, StorageError::RecordListTooLarge { .. }), "{e}");
    assert_eq!(e.error_code(), ErrorCode::RecordListTooLarge);
    assert_eq!(log.log_end_offset(), 1, "nothing appended");
    assert_eq!(read_all(&log, i64::MAX).len(), 1);
    // Exactly segment.bytes fits (in a fresh segment).
    let mut exact = (900..1024)
        .map(|v| simple_batch(&[NOW], v))
        .find(|b| b.len() == 1024)
        .unwrap();
    assert_eq!(exact.len(), 1024);
    log.append_as_leader(&mut exact, 0, NOW).unwrap();
    assert_eq!(log.segment_count(), 2);
    let mut cfg = LogConfig::default();
    assert!(
        cfg.set("segment.bytes", "1048575").is_err(),
        "KIP-1030 minimum"
    );
}

#[test]
fn truncate_to_removes_whole_batches() {
    let dir = tempdir();
    let mut log = new_log(dir.path(), &small_config(4096));
    for i in 0..12 {
        append(
            &mut log,
            simple_batch(&[NOW + i; 5], 150),
            i as i32 / 4,
            NOW,
        );
    }
    assert!(log.segment_count() >= 3);
    log.set_high_watermark(60);
    let before = layout(&log);
    // Mid-batch: the batch holding 37 (35..39) goes whole; later segments are deleted.
    log.truncate_to(37).unwrap();
    assert_eq!(log.log_end_offset(), 35);
    assert_eq!(log.high_watermark(), 35);
    let kept: Vec<_> = before
        .iter()
        .filter(|s| s.last_offset < 35)
        .cloned()
        .collect();
    assert_eq!(layout(&log), kept);
    assert_eq!(read_all(&log, i64::MAX).len(), 7);
    check_indexes(&log, &kept);
    assert_eq!(
        log.leader_epochs().entries(),
        &[EpochEntry::new(0, 0), EpochEntry::new(1, 20)],
        "epoch 2 started at 40, beyond the new end"
    );
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(base) = name.strip_suffix(".log") {
            assert!(base.parse::<i64>().unwrap() < 35, "{name} should be gone");
        }
    }
    assert_eq!(log.offset_for_timestamp(NOW + 7, 100).unwrap(), None);
    // Appends continue at the new end, and a reopen agrees.
    append(&mut log, simple_batch(&[NOW + 100], 10), 3, NOW);
    assert_eq!(log.log_end_offset(), 36);
    log.close(NOW).unwrap();
    drop(log);
    let log = new_log(dir.path(), &small_config(4096));
    assert_eq!(log.log_end_offset(), 36);
    assert_eq!(read_all(&log, i64::MAX).len(), 8);
    // Truncating below the first segment restarts the log there.
    let mut log = log;
    log.truncate_fully_and_start_at(500).unwrap();
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.segment_count()
        ),
        (500, 500, 1)
    );
    assert!(log.leader_epochs().entries().is_empty());
}
