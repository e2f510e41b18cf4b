//! Errors: bad input and misuse, failed writes and fsyncs, and reopening after a failure.

use super::helpers::*;
use crate::storage::*;
use rill_core::message::{MessageBatch, OutgoingMessage};

#[test]
fn bad_input_and_misuse_return_errors() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let dir = dir_in(&temp);
        let bad = PartitionConfig {
            segment_size_bytes: 0,
            ..PartitionConfig::default()
        };
        assert!(matches!(
            Partition::create(dir.clone(), bad, pool()).await,
            Err(StorageError::InvalidConfig(_))
        ));
        assert!(matches!(
            Partition::open(
                temp.path().join("missing"),
                PartitionConfig::default(),
                pool()
            )
            .await,
            Err(StorageError::NotFound(_))
        ));
        let partition = Partition::create(dir.clone(), PartitionConfig::default(), pool())
            .await
            .unwrap();
        assert!(matches!(
            Partition::create(dir.clone(), PartitionConfig::default(), pool()).await,
            Err(StorageError::AlreadyExists(_))
        ));
        let empty = MessageBatch::from_messages(&[]);
        let error = partition.append(empty, 1).await.unwrap_err();
        assert_eq!(error.code(), rill_core::ErrorCode::InvalidMessagesCount);
        // A payload over the protocol limit does not parse: refused before anything is stored.
        let huge = MessageBatch::from_messages(&[OutgoingMessage::new(vec![0u8; 64_000_001])]);
        assert!(matches!(
            partition.append(huge, 1).await,
            Err(StorageError::InvalidBatch(_))
        ));
        assert_eq!(partition.next_offset(), 0);
        // A bad message after good ones: the good ones were already stamped and staged, and
        // must be taken back so the next batch lands where the failed one would have.
        partition.append(batch(0, 3, 100), 1).await.unwrap();
        let mixed = MessageBatch::from_messages(&[
            OutgoingMessage::new(vec![1u8; 100]),
            OutgoingMessage::new(vec![0u8; 64_000_001]),
        ]);
        assert!(matches!(
            partition.append(mixed, 1).await,
            Err(StorageError::InvalidBatch(_))
        ));
        assert_eq!(partition.next_offset(), 3);
        partition.append(batch(3, 2, 100), 1).await.unwrap();
        assert_messages(&partition.read(0, 10).await.unwrap(), 0, 5, 100);
        partition.close().await.unwrap();
        let (reopened, report) = Partition::open(dir.clone(), PartitionConfig::default(), pool())
            .await
            .unwrap();
        assert_eq!(report.truncated_bytes(), 0);
        assert_messages(&reopened.read(0, 10).await.unwrap(), 0, 5, 100);
        reopened.close().await.unwrap();
        assert!(matches!(
            partition.append(batch(0, 1, 1), 1).await,
            Err(StorageError::Closed)
        ));
        assert!(matches!(
            partition.flush(false).await,
            Err(StorageError::Closed) | Ok(())
        ));
    });
}

#[test]
fn a_failed_write_fails_its_appends_stops_writes_and_reopen_recovers() {
    // Fault injection: the third log write fails with EIO. The appends it carried fail, later
    // appends are refused, reads still serve what was written, and reopening recovers exactly
    // the acknowledged messages.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        file::FAIL_LOG_WRITE_AFTER.with(|countdown| countdown.set(Some(2)));
        partition.append(batch(0, 5, 100), 1).await.unwrap();
        partition.append(batch(5, 5, 100), 1).await.unwrap();
        let error = partition.append(batch(10, 5, 100), 1).await.unwrap_err();
        assert_eq!(
            error.code(),
            rill_core::ErrorCode::CannotAppendMessage,
            "{error}"
        );
        let error = partition.append(batch(15, 5, 100), 1).await.unwrap_err();
        assert!(matches!(error, StorageError::Failed(_)), "{error}");
        assert!(error.to_string().contains("earlier failure"));
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 10, 100);
        assert_eq!(partition.current_offset(), Some(9));
        assert!(partition.flush(true).await.is_err());
        assert!(partition.close().await.is_err());
        drop(partition);
        let (partition, report) = Partition::open(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        assert_eq!(report.next_offset, 10);
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 10, 100);
        assert_eq!(
            partition
                .append(batch(10, 5, 100), 1)
                .await
                .unwrap()
                .first_offset,
            10
        );
        partition.close().await.unwrap();
    });
}

#[test]
fn reopen_after_failure_keeps_exactly_the_acknowledged_messages_across_a_rotation() {
    // A write that fails right after a rotation (new segment created, its first write fails)
    // leaves two unsealed segments. `reopen_after_failure` cuts the new one back to nothing,
    // keeps the previous one whole, and the reopened partition serves exactly the acknowledged
    // messages and continues at the next offset; no refused message appears, in memory or
    // after another open from disk.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let config = PartitionConfig {
        segment_size_bytes: 8192,
        ..config(AckMode::Written)
    };
    run(async {
        let partition = Partition::create(dir.clone(), config.clone(), pool())
            .await
            .unwrap();
        // 20 messages of 500 bytes (+64 header) fill the first 8 KiB segment past its size.
        partition.append(batch(0, 20, 500), 1).await.unwrap();
        file::FAIL_LOG_WRITE_AFTER.with(|countdown| countdown.set(Some(0)));
        let error = partition.append(batch(20, 5, 500), 2).await.unwrap_err();
        assert!(matches!(error, StorageError::Failed(_)), "{error}");
        assert!(partition.is_failed());
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 20, 500);
        let (reopened, report) = partition.reopen_after_failure().await.unwrap();
        assert_eq!(report.next_offset, 20);
        assert!(!reopened.is_failed());
        assert_messages(&reopened.read(0, 100).await.unwrap(), 0, 20, 500);
        reopened.append(batch(20, 5, 500), 3).await.unwrap();
        assert_messages(&reopened.read(0, 100).await.unwrap(), 0, 25, 500);
        drop(reopened);
        drop(partition);
        let (again, report) = Partition::open(dir.clone(), config.clone(), pool())
            .await
            .unwrap();
        assert_eq!(report.next_offset, 25);
        assert_messages(&again.read(0, 100).await.unwrap(), 0, 25, 500);
        again.close().await.unwrap();
    });
}

#[test]
fn reopen_after_a_failed_fsync_cuts_what_the_fsync_did_not_cover() {
    // Fsync mode: the messages of a round whose fsync failed are written but were never
    // acknowledged; reopening must not resurrect them as durable.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Partition::create(dir.clone(), config(AckMode::Fsync), pool())
            .await
            .unwrap();
        partition.append(batch(0, 10, 100), 1).await.unwrap();
        // The round's write succeeds, its fdatasync fails: written past the durable end.
        file::FAIL_SYNC_AFTER.with(|countdown| countdown.set(Some(0)));
        let error = partition.append(batch(10, 5, 100), 2).await.unwrap_err();
        assert!(matches!(error, StorageError::Failed(_)), "{error}");
        assert!(partition.is_failed());
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 10, 100);
        let (reopened, report) = partition.reopen_after_failure().await.unwrap();
        assert_eq!(report.next_offset, 10, "unsynced messages are cut");
        assert_messages(&reopened.read(0, 100).await.unwrap(), 0, 10, 100);
        reopened.close().await.unwrap();
    });
}
