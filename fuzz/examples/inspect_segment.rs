//! Debugging aid for `segment_recovery` findings: decodes one input file, writes the partition
//! directory, opens it like the harness does and prints the load report, the segments and every
//! batch header before and after recovery.
//!
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --example inspect_segment -- <file>`

use skiff_fuzz::segment::{decode_input, harness_config, scratch_root, write_partition_dir};
use skiff_record::batches;
use skiff_storage::{Log, LogOpenOptions};
use skiff_types::TopicPartition;

fn dump(label: &str, bytes: &[u8]) {
    println!("{label}: {} bytes", bytes.len());
    for item in batches(bytes) {
        match item {
            Ok((pos, v)) => println!(
                "  @{pos} base {} last {} size {} crc_ok {} codec {:?} count {}",
                v.base_offset(),
                v.last_offset(),
                v.size(),
                v.verify_crc().is_ok(),
                v.compression(),
                v.records_count()
            ),
            Err(e) => {
                println!("  stop: {e}");
                break;
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: inspect_segment <file>")?;
    let input = decode_input(&std::fs::read(path)?);
    println!(
        "dense_index {} fix_crcs {} indexes {:?} second {:?}",
        input.dense_index,
        input.fix_crcs,
        input.indexes.as_ref().map(|(a, b)| (a.len(), b.len())),
        input.second.as_ref().map(|(b, l)| (*b, l.len()))
    );
    let root = scratch_root();
    let dir = write_partition_dir(&root, &input);
    let mut names: Vec<_> = std::fs::read_dir(&dir)?.filter_map(|e| e.ok()).collect();
    names.sort_by_key(|e| e.file_name());
    for e in &names {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".log") {
            dump(&format!("before {name}"), &std::fs::read(e.path())?);
        }
    }
    let (log, report) = Log::open(
        &dir,
        TopicPartition::new("t", 0),
        harness_config(input.dense_index),
        LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: false,
            now_ms: skiff_fuzz::segment::NOW_MS,
        },
    )?;
    println!("{report:?}");
    println!(
        "log start {} log end {}",
        log.log_start_offset(),
        log.log_end_offset()
    );
    for seg in log.segments() {
        println!(
            "segment base {} size {} index last entry {:?}",
            seg.base_offset(),
            seg.size(),
            seg.offset_index().last_entry()
        );
        dump("  after", &std::fs::read(seg.log_path())?);
    }
    drop(log);
    let _ = std::fs::remove_dir_all(root);
    Ok(())
}
