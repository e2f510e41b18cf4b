//! The hot path: group commit, memory-mode backpressure and the buffer pool.

use super::helpers::*;
use crate::storage::*;
use std::rc::Rc;

#[test]
fn group_commit_serves_concurrent_fsync_appenders() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Rc::new(
            Partition::create(dir.clone(), config(AckMode::Fsync), pool())
                .await
                .unwrap(),
        );
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let partition = Rc::clone(&partition);
                compio::runtime::spawn(async move {
                    let mut offsets = Vec::new();
                    for _ in 0..20 {
                        let outcome = partition.append(batch(0, 10, 100), 1).await.unwrap();
                        // Acked in fsync mode means visible and durable.
                        assert!(partition.current_offset().unwrap() >= outcome.last_offset);
                        offsets.push(outcome.first_offset);
                    }
                    offsets
                })
            })
            .collect();
        let mut firsts = Vec::new();
        for task in tasks {
            firsts.extend(task.await.unwrap());
        }
        firsts.sort_unstable();
        assert_eq!(firsts, (0..160).map(|k| k * 10).collect::<Vec<_>>());
        assert_eq!(partition.read(0, 5000).await.unwrap().count, 1600);
        partition.close().await.unwrap();
    });
}

#[test]
fn backpressure_bounds_unwritten_memory_mode_data() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let config = PartitionConfig {
            max_unwritten_bytes: 64 * 1024,
            memory_flush_messages: u64::MAX,
            memory_flush_bytes: u64::MAX,
            ..config(AckMode::Memory)
        };
        let partition = Partition::create(dir_in(&temp), config, pool())
            .await
            .unwrap();
        for k in 0..40u64 {
            // 40 x 10 KiB: far over the bound, so appends wait for the writer.
            partition.append(batch(k * 10, 10, 1000), 1).await.unwrap();
        }
        assert_messages(&partition.read(0, 1000).await.unwrap(), 0, 400, 1000);
        partition.close().await.unwrap();
    });
}

#[test]
fn the_write_path_allocates_no_buffers_after_warm_up() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let pool = pool();
        let partition =
            Partition::create(dir_in(&temp), config(AckMode::Written), Rc::clone(&pool))
                .await
                .unwrap();
        // 3500 messages in all: the in-memory index stays within its first 64 KiB chunk, which
        // legitimately grows with the segment.
        for _ in 0..10 {
            partition.append(batch(0, 100, 1000), 1).await.unwrap();
        }
        let warm = pool.stats();
        for _ in 0..25 {
            partition.append(batch(0, 100, 1000), 1).await.unwrap();
        }
        let after = pool.stats();
        assert_eq!(
            after.misses, warm.misses,
            "no pool misses once warm: {warm:?} -> {after:?}"
        );
        assert!(after.allocated > 0);
        partition.close().await.unwrap();
    });
}
