//! Skiff's fuzz harnesses, as plain functions so that the libFuzzer binaries in
//! `fuzz_targets/`, the corpus generator (`examples/gen_corpus.rs`) and the corpus replayer
//! (`examples/replay.rs`) all run exactly the same checks.
//!
//! Mental model: each `check_*` function takes arbitrary bytes, drives one decoder of the
//! broker's hostile-input surface, and panics only when an invariant is broken (a panic is
//! what libFuzzer reports as a crash). Decoders returning `Err` is the expected answer to
//! garbage; the harnesses go further than "does not panic" by checking an oracle on every
//! input that *is* accepted (re-encode/re-decode equality for requests, a well-formed,
//! CRC-valid output for validated batches, CRC-valid reads and idempotent recovery for
//! segments). Each returns a small [`Outcome`] label so the replayer can print how a corpus
//! splits between accepted and rejected inputs.
//!
//! Ownership: this crate is its own Cargo workspace (the main workspace excludes `fuzz/`), is
//! built only by `cargo +nightly fuzz ...` or an explicit `--manifest-path fuzz/Cargo.toml`,
//! and is not part of CI. Single-threaded use per process (the segment harness reuses one
//! scratch directory per process id).

pub mod batch;
pub mod codec;
pub mod request;
pub mod seeds;
pub mod segment;

/// What a harness did with one input (for corpus statistics; never affects the checks).
pub type Outcome = &'static str;
