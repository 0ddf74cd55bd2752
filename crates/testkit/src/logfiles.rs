//! A partition directory's files as a test sees them: the segment files in offset order and
//! the raw record batches in them. Reads only; a torn or damaged tail ends the batch list (the
//! broker's own recovery decides what it means).

use std::path::{Path, PathBuf};

/// The `.log` segment files of a partition dir, in offset order (their names are the base
/// offsets, zero-padded); empty if the dir does not exist.
pub fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    logs
}

/// The batches (raw bytes) in a partition dir's segment files, in offset order; each file's
/// list ends at its first unreadable batch.
pub fn batches_in(dir: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for path in segment_files(dir) {
        let bytes = std::fs::read(&path).unwrap_or_default();
        for b in skiff_record::batches(&bytes) {
            let Ok((_, view)) = b else { break };
            out.push(view.bytes().to_vec());
        }
    }
    out
}
