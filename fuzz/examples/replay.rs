//! Runs every file of a corpus directory through one harness without libFuzzer and prints how
//! the inputs split between outcomes (accepted, rejected and why). A panic names the file.
//!
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --example replay -- <target> [dir]`
//! with `<target>` one of `request_decoder`, `record_batch`, `segment_recovery`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use skiff_fuzz::{Outcome, batch, request, segment};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let target = args.next().unwrap_or_else(|| "request_decoder".into());
    let check: fn(&[u8]) -> Outcome = match target.as_str() {
        "request_decoder" => request::check_request_frame,
        "record_batch" => batch::check_record_batch,
        "segment_recovery" => segment::check_segment_recovery,
        other => {
            eprintln!("unknown target {other}");
            std::process::exit(2);
        }
    };
    let dir = args.next().map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("corpus")
                .join(&target)
        },
        PathBuf::from,
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut outcomes = BTreeMap::<Outcome, usize>::new();
    let mut bytes_total = 0usize;
    for path in &files {
        let data = std::fs::read(path)?;
        bytes_total += data.len();
        match std::panic::catch_unwind(|| check(&data)) {
            Ok(outcome) => *outcomes.entry(outcome).or_default() += 1,
            Err(panic) => {
                eprintln!("harness panicked on {}", path.display());
                std::panic::resume_unwind(panic);
            }
        }
    }
    let _ = std::fs::remove_dir_all(segment::scratch_root());
    println!("{target}: {} files, {bytes_total} bytes", files.len());
    for (outcome, n) in outcomes {
        println!("  {outcome:<32} {n}");
    }
    Ok(())
}
