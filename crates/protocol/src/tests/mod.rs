//! Unit tests that need crate internals (the generated `Random` impls): differential tests
//! against `kafka-protocol` and round trips of the internal records.

mod debug_tree;
mod differential;
mod internal_records;
mod mutation;
