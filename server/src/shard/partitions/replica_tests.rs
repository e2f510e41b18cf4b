//! The partition's side of the cluster rules that the process tests can only hit by timing:
//! a replica's promise to a newer takeover, and a purge answered once a majority follows it.

use super::epochs::Epochs;
use super::replica::{FetchRequest, Fetched, ReplicaState};
use super::{Extras, LocalPartition};
use crate::metrics::{Metrics, ShardMetricsHandle};
use crate::shard::table::{PartitionCounters, PartitionKey};
use crate::storage::{BufferPool, PartitionConfig};
use bytes::Bytes;
use rill_core::ErrorCode;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

fn run<F: std::future::Future>(future: F) -> F::Output {
    compio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(future)
}

/// A partition of a three-node cluster, in a fresh directory.
async fn replica(temp: &tempfile::TempDir) -> LocalPartition {
    LocalPartition::open(
        temp.path(),
        PartitionKey {
            stream_id: 1,
            topic_id: 1,
            partition_id: 1,
        },
        PartitionConfig::default(),
        Rc::new(BufferPool::new()),
        Arc::new(PartitionCounters::default()),
        ShardMetricsHandle::new(Arc::new(Metrics::new(1)), 0),
        Extras {
            replicas: Some(3),
            ..Extras::default()
        },
    )
    .await
    .expect("open")
}

fn nothing_new(commit_end: u64) -> Fetched {
    Fetched::Messages {
        epochs: Epochs::default(),
        commit_end,
        first_offset: 0,
        messages: Bytes::new(),
        offsets: None,
    }
}

#[test]
fn a_promise_to_a_newer_term_ends_the_older_terms_lead_and_copies() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let partition = replica(&temp).await;
        partition.lead(Some(2)).await.expect("lead in term 2");
        let state = partition.promise(3).expect("state for term 3");
        assert_eq!(
            state.epochs.last(),
            2,
            "the term-2 lead is in the log's epochs"
        );
        assert_eq!(
            partition.leading_term().await,
            Err(ErrorCode::TransientNotAccepted),
            "no longer leading term 2"
        );
        assert_eq!(
            partition.lead(Some(2)).await,
            Err(ErrorCode::TransientNotAccepted),
            "a term-2 takeover finishing late is refused"
        );
        assert_eq!(
            partition.store_fetched(nothing_new(0), &state, 2).await,
            Err(ErrorCode::TransientNotAccepted),
            "nothing fetched in term 2 is stored"
        );
        partition
            .store_fetched(nothing_new(0), &state, 3)
            .await
            .expect("what term 3 sends is stored");
        // An older promise changes nothing.
        partition.promise(1).unwrap();
        partition.lead(Some(3)).await.expect("lead in term 3");
        assert_eq!(partition.leading_term().await, Ok(Some(3)));
    });
}

fn fetch(follower: u64, epoch: u64, state: ReplicaState) -> FetchRequest {
    FetchRequest {
        follower,
        epoch,
        recover: false,
        state,
        max_messages: 16,
        wait: Duration::ZERO,
        offsets_version: (0, 0),
    }
}

#[test]
fn a_purge_is_answered_once_a_follower_holds_the_purged_log() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let partition = replica(&temp).await;
        partition.lead(Some(4)).await.unwrap();
        let before = partition.replica_state().unwrap();
        let follower = async {
            // A fetch from the old generation is given the purged log's epochs; the next
            // one, made with them, joins it.
            compio::time::sleep(Duration::from_millis(50)).await;
            let answer = partition.serve_fetch(fetch(7, 4, before)).await.unwrap();
            let Fetched::Messages { epochs, .. } = answer else {
                panic!("an empty log has nothing to cut: {answer:?}")
            };
            assert_eq!(epochs.generation, 1, "the purge's generation");
            let purged = ReplicaState {
                epochs,
                ..ReplicaState::default()
            };
            compio::time::sleep(Duration::from_millis(50)).await;
            partition.serve_fetch(fetch(7, 4, purged)).await.unwrap()
        };
        let started = std::time::Instant::now();
        let (purged, _) = futures_util::join!(partition.purge(), follower);
        purged.expect("a majority holds the purged log");
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "answered before the follower followed"
        );
    });
}
