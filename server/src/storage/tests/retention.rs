//! Retention, deletion of the oldest segments, and purge.

use super::helpers::*;
use crate::storage::*;
use std::time::Duration;

#[test]
fn retention_deletes_expired_and_oversized_sealed_segments_only() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let config = PartitionConfig {
            segment_size_bytes: 4096,
            message_expiry: Some(Duration::from_micros(10_000)),
            max_size_bytes: Some(12_000),
            ..config(AckMode::Written)
        };
        let partition = Partition::create(dir.clone(), config, pool())
            .await
            .unwrap();
        for k in 0..10u64 {
            // Three 1 KiB messages per batch: one batch per segment.
            partition
                .append(batch(k * 3, 3, 1000), 1000 * (k + 1))
                .await
                .unwrap();
        }
        partition.flush(false).await.unwrap();
        compio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(partition.stats().segments_count, 10);
        // Now = 13_500: segments with last timestamp <= 3_500 are expired (k = 0, 1, 2).
        let outcome = partition.apply_retention(13_500).await.unwrap();
        assert_eq!(
            outcome.segments_deleted, 7,
            "3 expired, then 4 more for the size limit"
        );
        assert_eq!(outcome.messages_deleted, 21);
        assert_eq!(partition.first_offset(), 21);
        assert!(partition.stats().size_bytes <= 12_000);
        assert!(!dir.join("00000000000000000000.log").exists());
        // A read below the first offset starts at the first stored message.
        assert_messages(&partition.read(0, 3).await.unwrap(), 21, 3, 1000);
        // The active segment is never deleted, by expiry or by explicit deletion.
        let outcome = partition.apply_retention(u64::MAX).await.unwrap();
        assert_eq!(outcome.segments_deleted, 2);
        assert_eq!(partition.delete_oldest_segments(5).await.unwrap(), 0);
        assert_eq!(partition.stats().segments_count, 1);
        assert_messages(&partition.read(0, 10).await.unwrap(), 27, 3, 1000);
        partition.close().await.unwrap();
        let (partition, report) = Partition::open(dir.clone(), partition.config().clone(), pool())
            .await
            .unwrap();
        assert_eq!(report.segments_count, 1);
        assert_eq!(partition.first_offset(), 27);
        partition.close().await.unwrap();
    });
}

#[test]
fn oldest_segments_are_deleted_by_count_or_before_an_offset() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let config = PartitionConfig {
            segment_size_bytes: 4096,
            ..config(AckMode::Fsync)
        };
        let partition = Partition::create(dir_in(&temp), config, pool())
            .await
            .unwrap();
        for k in 0..6u64 {
            partition.append(batch(k * 3, 3, 1000), k).await.unwrap();
        }
        partition.flush(true).await.unwrap();
        compio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(partition.stats().segments_count, 6);
        assert_eq!(partition.delete_oldest_segments(2).await.unwrap(), 2);
        assert_eq!(partition.first_offset(), 6);
        // By offset (a replica following its leader): only segments wholly before it.
        assert_eq!(partition.delete_segments_before(8).await.unwrap(), 0);
        assert_eq!(partition.delete_segments_before(9).await.unwrap(), 1);
        assert_eq!(partition.first_offset(), 9);
        assert_eq!(partition.delete_oldest_segments(100).await.unwrap(), 2);
        assert_eq!(partition.stats().segments_count, 1);
        assert_eq!(partition.stats().messages_count, 3);
        partition.close().await.unwrap();
    });
}

#[test]
fn purge_removes_messages_and_offsets_keep_increasing() {
    for mode in [AckMode::Memory, AckMode::Written] {
        let temp = tempfile::tempdir().unwrap();
        let dir = dir_in(&temp);
        run(async {
            let partition = Partition::create(dir.clone(), config(mode), pool())
                .await
                .unwrap();
            partition.append(batch(0, 10, 100), 1).await.unwrap();
            partition.purge().await.unwrap();
            assert_eq!(partition.current_offset(), None);
            assert_eq!(partition.first_offset(), 10);
            assert!(partition.read(0, 100).await.unwrap().is_empty());
            assert_eq!(partition.stats().messages_count, 0);
            assert_eq!(
                segment_files(&dir),
                ["00000000000000000010.index", "00000000000000000010.log"]
            );
            // Purging an empty partition is harmless.
            partition.purge().await.unwrap();
            let outcome = partition.append(batch(10, 2, 100), 2).await.unwrap();
            assert_eq!(outcome.first_offset, 10);
            partition.close().await.unwrap();
            let (partition, report) = Partition::open(dir.clone(), config(mode), pool())
                .await
                .unwrap();
            assert_eq!(report.next_offset, 12);
            assert_messages(&partition.read(0, 100).await.unwrap(), 10, 2, 100);
            partition.purge().await.unwrap();
            partition.close().await.unwrap();
            let (partition, report) = Partition::open(dir.clone(), config(mode), pool())
                .await
                .unwrap();
            assert_eq!(
                report.next_offset, 12,
                "a restart after purge does not reuse offsets"
            );
            assert_eq!(partition.current_offset(), None);
            partition.close().await.unwrap();
        });
    }
}
