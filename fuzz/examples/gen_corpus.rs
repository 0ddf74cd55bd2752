//! Writes the seed inputs of every harness to `fuzz/corpus/<target>/` (or the directory given
//! as the first argument), one file per seed named after what it holds. Every seed is run
//! through its harness first, so a seed that already breaks an invariant is caught here.
//!
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --example gen_corpus [-- <out dir>]`

use std::path::PathBuf;

use skiff_fuzz::{batch, request, seeds, segment};

/// A target's name, its seeds and its harness.
type SeedSet = (&'static str, Vec<seeds::Seed>, fn(&[u8]) -> &'static str);

fn main() -> std::io::Result<()> {
    let out = std::env::args().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus"),
        PathBuf::from,
    );
    let scratch = segment::scratch_root().join("seeds");
    std::fs::create_dir_all(&scratch)?;
    let sets: [SeedSet; 3] = [
        (
            "request_decoder",
            seeds::request_seeds(),
            request::check_request_frame,
        ),
        (
            "record_batch",
            seeds::batch_seeds(),
            batch::check_record_batch,
        ),
        (
            "segment_recovery",
            seeds::segment_seeds(&scratch),
            segment::check_segment_recovery,
        ),
    ];
    for (target, seeds, check) in sets {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir)?;
        let mut outcomes = std::collections::BTreeMap::<&str, usize>::new();
        for (name, bytes) in &seeds {
            *outcomes.entry(check(bytes)).or_default() += 1;
            std::fs::write(dir.join(format!("seed-{name}")), bytes)?;
        }
        println!(
            "{target}: {} seeds -> {} ({outcomes:?})",
            seeds.len(),
            dir.display()
        );
    }
    let _ = std::fs::remove_dir_all(segment::scratch_root());
    Ok(())
}
