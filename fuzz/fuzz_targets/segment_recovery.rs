//! libFuzzer entry point for the `segment_recovery` harness; the checks live in
//! `skiff_fuzz::segment::check_segment_recovery` (see fuzz/README.md for how to run it).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = skiff_fuzz::segment::check_segment_recovery(data);
});
