//! libFuzzer entry point for the `record_batch` harness; the checks live in
//! `skiff_fuzz::batch::check_record_batch` (see fuzz/README.md for how to run it).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = skiff_fuzz::batch::check_record_batch(data);
});
