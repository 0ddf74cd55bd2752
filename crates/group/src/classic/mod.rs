//! The classic group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup).
//!
//! `group` is the data model and its queries, `rebalance` the state-machine procedures shared
//! by every API and timer, `join` and `sync` the request handlers, `replay` loading from
//! `__consumer_offsets`.

pub(crate) mod group;
mod join;
pub(crate) mod rebalance;
pub(crate) mod replay;
mod sync;

pub use group::{CONSUMER_PROTOCOL_TYPE, ClassicGroupState};
