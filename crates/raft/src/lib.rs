//! Skiff's openraft adapter (issue 16 item 1; design/replication.md §1.2-1.3).
//!
//! The only crate that names openraft. Today it holds the storage side: [`SkiffRaft`] (the type
//! configuration), [`KafkaLogStore`] (the Raft log as Kafka v2 batches in a
//! `__cluster_metadata-0` partition dir, with `quorum-state` and the committed log id beside
//! it) and [`MemStateMachine`] (a minimal state machine the tests read); the quorum itself:
//! [`ImageStateMachine`] (committed entries into the metadata image; snapshots as KRaft
//! `.checkpoint` files, [`checkpoint`]), [`network`] (openraft's
//! RPCs on the CONTROLLER listener under private API keys) and [`Quorum`] /
//! [`RaftMetadataLog`] (the `skiff_metadata::MetadataLog` over Raft); [`Observer`] (a
//! broker-only node following the committed log from the voters) and [`Member`] (voter or
//! observer, as the broker shell sees it). [`transport`] makes every inter-node connection
//! (TCP, TLS, a SASL login), the quorum's and the broker's node clients'.

pub mod checkpoint;
pub mod codec;
pub mod image_sm;
pub mod log_store;
pub mod member;
pub mod network;
pub mod observer;
pub mod quorum;
pub mod state_files;
pub mod state_machine;
pub mod transport;
pub mod types;

pub use image_sm::ImageStateMachine;
pub use log_store::KafkaLogStore;
pub use member::Member;
pub use network::is_raft_key;
pub use observer::{Observer, ObserverConfig, ObserverMetadataLog};
pub use quorum::{Quorum, QuorumConfig, RaftMetadataLog};
pub use state_machine::MemStateMachine;
pub use types::{Epoch, NodeId, Op, SkiffRaft};
