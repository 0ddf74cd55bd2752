//! Kafka's primitive wire types: the runtime the generated code calls.
//!
//! Format (all integers big-endian): `int8/16/32/64`, `uint16/32`, `float64` (IEEE 754),
//! `bool` (one byte, non-zero = true), `uuid` (16 bytes). Variable-length values come in two
//! encodings. Classic: strings have an `int16` length, bytes/records/arrays an `int32` length
//! (or element count), `-1` meaning null. Compact (flexible versions): an unsigned varint of
//! `length + 1`, `0` meaning null. Flexible structs end with tagged fields: a varint count,
//! then per field a varint tag, a varint size and `size` bytes of value.
//!
//! Invariants enforced on decode: nothing panics on any input; every length and array count is
//! checked against the bytes remaining *before* anything is allocated; unsigned varints are at
//! most 5 bytes (varlongs 10) and must fit their type; strings are at most `i16::MAX` bytes and
//! valid UTF-8. Byte and records values are zero-copy slices of the input. Nesting depth is
//! bounded by the (non-recursive) schemas themselves.

mod read;
mod write;

pub use read::*;
pub use write::*;

#[cfg(test)]
mod tests;
