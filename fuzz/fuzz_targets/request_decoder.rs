//! libFuzzer entry point for the `request_decoder` harness; the checks live in
//! `skiff_fuzz::request::check_request_frame` (see fuzz/README.md for how to run it).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = skiff_fuzz::request::check_request_frame(data);
});
