//! Reads ahead of consumers reading the segment files (storage/read_ahead.rs): the next poll
//! is read at once and answered from there, with the same messages a read would return.

use super::helpers::*;
use crate::storage::*;
use std::rc::Rc;

const SIZE: usize = 500;

/// A written-mode partition without a read cache (every read goes to the files), holding
/// messages `0..count` in batches of 10, and its pool.
async fn filled(
    temp: &tempfile::TempDir,
    read_ahead: u64,
    count: u64,
) -> (Partition, Rc<BufferPool>) {
    let pool =
        Rc::new(BufferPool::new().with_read_cache(ReadCache::new(0).with_read_ahead(read_ahead)));
    let partition = Partition::create(dir_in(temp), config(AckMode::Written), Rc::clone(&pool))
        .await
        .unwrap();
    for first in (0..count).step_by(10) {
        partition
            .append(batch(first, 10, SIZE), first)
            .await
            .unwrap();
    }
    (partition, pool)
}

fn stats(pool: &BufferPool) -> ReadAheadStats {
    pool.read_cache().stats().read_ahead
}

#[test]
fn a_consumer_reading_the_files_gets_each_next_poll_read_ahead() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let (partition, pool) = filled(&temp, 1 << 20, 100).await;
        for first in (0..100).step_by(10) {
            let outcome = partition.read(first, 10).await.unwrap();
            assert_messages(&outcome, first, 10, SIZE);
        }
        let seen = stats(&pool);
        // Every poll after the first was read ahead; the last had nothing after it.
        assert_eq!((seen.started, seen.hits, seen.wasted), (9, 9, 0));
        assert_eq!(seen.held_bytes, 0);
        // A consumer that jumps elsewhere reads there; what was read ahead for it is dropped
        // once newer reads take its place.
        assert_messages(&partition.read(0, 10).await.unwrap(), 0, 10, SIZE);
        assert_messages(&partition.read(50, 10).await.unwrap(), 50, 10, SIZE);
        assert_messages(&partition.read(70, 10).await.unwrap(), 70, 10, SIZE);
        let seen = stats(&pool);
        assert_eq!(
            seen.hits, 9,
            "other offsets are not answered from a read ahead"
        );
        assert_eq!(seen.wasted, 1, "the read ahead of 10 made room");
        assert!(seen.held_bytes > 0 && seen.held_bytes <= 1 << 20);
        partition.close().await.unwrap();
    });
}

#[test]
fn a_read_ahead_holds_only_what_was_visible_and_the_next_poll_continues_after_it() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let (partition, pool) = filled(&temp, 1 << 20, 10).await;
        partition.append(batch(10, 5, SIZE), 10).await.unwrap();
        assert_messages(&partition.read(0, 10).await.unwrap(), 0, 10, SIZE);
        // Read ahead while only 10..15 existed; newer messages follow in the poll after.
        for first in (15..35).step_by(10) {
            partition
                .append(batch(first, 10, SIZE), first)
                .await
                .unwrap();
        }
        let ahead = partition.read(10, 10).await.unwrap();
        assert_messages(&ahead, 10, 5, SIZE);
        assert_messages(&partition.read(15, 10).await.unwrap(), 15, 10, SIZE);
        assert_messages(&partition.read(25, 10).await.unwrap(), 25, 10, SIZE);
        assert_eq!(stats(&pool).hits, 3);
        partition.close().await.unwrap();
    });
}

#[test]
fn removed_segments_take_what_was_read_ahead_of_them() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let (partition, pool) = filled(&temp, 1 << 20, 30).await;
        assert_messages(&partition.read(0, 10).await.unwrap(), 0, 10, SIZE);
        // Everything stored so far goes; offsets continue from 30.
        partition.purge().await.unwrap();
        partition.append(batch(30, 10, SIZE), 30).await.unwrap();
        let outcome = partition.read(10, 10).await.unwrap();
        assert_messages(&outcome, 30, 10, SIZE);
        let seen = stats(&pool);
        assert_eq!((seen.hits, seen.held_bytes), (0, 0));
        partition.close().await.unwrap();
    });
}

#[test]
fn no_read_ahead_beyond_the_budget() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        // One poll of these messages is about 5.6 KB.
        let (partition, pool) = filled(&temp, 1000, 30).await;
        for first in (0..30).step_by(10) {
            assert_messages(&partition.read(first, 10).await.unwrap(), first, 10, SIZE);
        }
        assert_eq!(stats(&pool).started, 0);
        partition.close().await.unwrap();
        let other = tempfile::tempdir().unwrap();
        let (partition, pool) = filled(&other, 0, 30).await;
        assert_messages(&partition.read(0, 10).await.unwrap(), 0, 10, SIZE);
        assert_eq!(stats(&pool).started, 0, "0 turns it off");
        partition.close().await.unwrap();
    });
}

#[test]
fn reads_of_sealed_segments_share_index_reads_and_return_every_message_once() {
    // Sealed segments whose indexes are on disk (a reopened partition), read 700 messages at a
    // time with and without reads ahead: each poll crosses index windows (8192 entries) and
    // segment ends at other places, and returns exactly the next messages.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let total = 20_000u64;
    let config = PartitionConfig {
        segment_size_bytes: 256 * 1024,
        ..config(AckMode::Written)
    };
    run(async {
        let partition = Partition::create(dir.clone(), config.clone(), pool())
            .await
            .unwrap();
        for first in (0..total).step_by(1000) {
            partition
                .append(batch(first, 1000, 8), first)
                .await
                .unwrap();
        }
        partition.close().await.unwrap();
    });
    for read_ahead in [0, 1 << 20] {
        run(async {
            let pool = Rc::new(
                BufferPool::new().with_read_cache(ReadCache::new(0).with_read_ahead(read_ahead)),
            );
            let (partition, _) = Partition::open(dir.clone(), config.clone(), Rc::clone(&pool))
                .await
                .unwrap();
            assert!(
                partition.stats().segments_count > 3,
                "several sealed segments"
            );
            let mut next = 0;
            while next < total {
                let outcome = partition.read(next, 700).await.unwrap();
                let count = (total - next).min(700);
                assert_messages(&outcome, next, count, 8);
                next += count;
            }
            let seen = stats(&pool);
            if read_ahead > 0 {
                assert!(seen.hits > 0, "reads ahead answered polls: {seen:?}");
            }
            partition.close().await.unwrap();
        });
    }
}
