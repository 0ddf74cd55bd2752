//! openraft's own storage conformance suite against `KafkaLogStore` + `MemStateMachine`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openraft::testing::log::{StoreBuilder, Suite};
use openraft::{ErrorSubject, ErrorVerb, StorageError};
use skiff_raft::{KafkaLogStore, MemStateMachine, SkiffRaft};
use skiff_types::clock::Clock;
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<SkiffRaft, KafkaLogStore, MemStateMachine, TempDir> for Builder {
    async fn build(
        &self,
    ) -> Result<(TempDir, KafkaLogStore, MemStateMachine), StorageError<SkiffRaft>> {
        let io = |e| StorageError::from_io_error(ErrorSubject::Store, ErrorVerb::Read, e);
        let dir = tempfile::tempdir().map_err(io)?;
        let store = KafkaLogStore::open(&dir.path().join("__cluster_metadata-0"), Clock::system())
            .map_err(io)?;
        Ok((dir, store, MemStateMachine::new()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_storage_suite_passes() {
    Suite::test_all(Builder).await.unwrap();
}
