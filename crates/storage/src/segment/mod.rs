//! A segment: one `.log` file with its `.index` and `.timeindex`.
pub mod offset_index;
pub mod time_index;
