//! Files and state across close, drop and reopen: open descriptors, the tail block, index
//! rebuild, and deletion.

use super::helpers::*;
use crate::storage::*;
use std::path::Path;
use std::time::Duration;

/// Files under `dir` this process holds open, by extension ("log", "index").
fn open_files_in(dir: &Path, extension: &str) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| {
            target.starts_with(dir) && target.extension().is_some_and(|ext| ext == extension)
        })
        .count()
}

#[test]
fn a_partition_at_rest_holds_only_its_log_files_open() {
    // Thousands of partitions must fit the descriptor limit: `.index` files are opened only
    // to seal, recover, close or read a sealed segment, never kept open by the active segment.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let size = 1000;
    run(async {
        let config = PartitionConfig {
            segment_size_bytes: 8192,
            ..config(AckMode::Written)
        };
        let partition = Partition::create(dir.clone(), config.clone(), pool())
            .await
            .unwrap();
        for first in (0..60).step_by(3) {
            partition
                .append(batch(first, 3, size), first * 10)
                .await
                .unwrap();
        }
        partition.flush(false).await.unwrap();
        compio::time::sleep(Duration::from_millis(20)).await; // let the writer seal
        let segments = partition.stats().segments_count as usize;
        assert!(segments > 5);
        assert_eq!(open_files_in(&dir, "log"), segments);
        assert_eq!(open_files_in(&dir, "index"), 0, "while appending");
        partition.close().await.unwrap();
        drop(partition);

        let (partition, _) = Partition::open(dir.clone(), config, pool()).await.unwrap();
        assert_eq!(open_files_in(&dir, "log"), segments);
        assert_eq!(open_files_in(&dir, "index"), 0, "after recovery");
        // Reads from sealed segments open their indexes on demand.
        assert_messages(&partition.read(5, 20).await.unwrap(), 5, 20, size);
        assert_eq!(partition.offset_for_timestamp(301).await.unwrap(), Some(33));
        assert!(open_files_in(&dir, "index") > 0);
        partition.append(batch(60, 3, size), 700).await.unwrap();
        assert_messages(&partition.read(0, 63).await.unwrap(), 0, 63, size);
        partition.close().await.unwrap();
    });
}

#[test]
fn reopen_continues_offsets_and_rewrites_the_tail_block() {
    // Small messages leave the last block partly filled; appends after a reopen rewrite it.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        partition.append(batch(0, 3, 10), 5).await.unwrap();
        partition.close().await.unwrap();
        assert!(
            partition.append(batch(3, 1, 10), 6).await.is_err(),
            "closed"
        );
        for round in 0..3u64 {
            let (partition, report) =
                Partition::open(dir.clone(), config(AckMode::Written), pool())
                    .await
                    .unwrap();
            assert_eq!(
                report.truncated_bytes(),
                0,
                "a clean close leaves nothing to repair"
            );
            let first = 3 + round * 4;
            assert_eq!(report.next_offset, first);
            let outcome = partition.append(batch(first, 4, 10), 7).await.unwrap();
            assert_eq!(outcome.first_offset, first);
            assert_messages(&partition.read(0, 100).await.unwrap(), 0, first + 4, 10);
            partition.close().await.unwrap();
        }
    });
}

#[test]
fn open_rebuilds_a_missing_or_garbled_index() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let log = dir.join("00000000000000000000.log");
    let index = dir.join("00000000000000000000.index");
    run(async {
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        partition.append(batch(0, 30, 700), 1).await.unwrap();
        partition.close().await.unwrap();
    });
    std::fs::remove_file(&index).unwrap();
    run(async {
        let (partition, report) = Partition::open(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        assert_eq!(report.rebuilt_index_entries, 30);
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 30, 700);
        partition.close().await.unwrap();
    });
    assert_eq!(assert_index_matches_log(&log, &index, 0), 30);
    // Garble entries in the middle of the index.
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[10 * INDEX_ENTRY_SIZE..12 * INDEX_ENTRY_SIZE].fill(0xEE);
    std::fs::write(&index, bytes).unwrap();
    run(async {
        let (partition, report) = Partition::open(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        assert_eq!(report.rebuilt_index_entries, 20);
        assert_eq!(report.messages_count, 30);
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 30, 700);
        partition.close().await.unwrap();
    });
    assert_eq!(assert_index_matches_log(&log, &index, 0), 30);
}

#[test]
fn dropping_without_close_keeps_everything_acked_in_written_mode() {
    // A dropped partition stops like a crashed process: acked (written) data survives, and
    // recovery cuts the preallocated space.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let config = PartitionConfig {
            segment_size_bytes: 64 * 1024,
            ..config(AckMode::Written)
        };
        let partition = Partition::create(dir.clone(), config.clone(), pool())
            .await
            .unwrap();
        for k in 0..20u64 {
            partition.append(batch(k * 10, 10, 900), k).await.unwrap();
        }
        drop(partition);
        compio::time::sleep(Duration::from_millis(20)).await;
        let (partition, report) = Partition::open(dir.clone(), config, pool()).await.unwrap();
        assert_eq!(report.messages_count, 200);
        assert_messages(&partition.read(0, 1000).await.unwrap(), 0, 200, 900);
        partition.close().await.unwrap();
    });
}

#[test]
fn delete_removes_the_directory() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        partition.append(batch(0, 5, 10), 1).await.unwrap();
        partition.delete().await.unwrap();
    });
    assert!(!dir.exists());
}
