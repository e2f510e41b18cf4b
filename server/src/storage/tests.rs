//! Unit tests of the partition paths: appends and reads in every ack mode, visibility, rotation,
//! on-disk formats, reopen, timestamps, retention, purge, flush, limits, errors, the pool on the
//! hot path, and the buffered fallback. Model and crash tests are in `server/tests/`.

#![allow(clippy::disallowed_methods, reason = "tests and benchmarks may block")]

use super::*;
use bytes::Bytes;
use rill_core::message::{MessageBatch, MessageIter, OutgoingMessage};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

fn run<F: std::future::Future>(future: F) -> F::Output {
    compio::runtime::Runtime::new()
        .expect("io_uring runtime")
        .block_on(future)
}

/// Payload of message number `n`: its number then filler, `size` bytes.
fn payload(n: u64, size: usize) -> Vec<u8> {
    let mut bytes = n.to_le_bytes().to_vec();
    bytes.resize(size.max(8), (n % 251) as u8);
    bytes
}

fn batch(first: u64, count: u64, size: usize) -> MessageBatch {
    let messages: Vec<_> = (first..first + count)
        .map(|n| OutgoingMessage {
            id: if n % 2 == 0 { 0 } else { u128::from(n) + 1 },
            origin_timestamp: n,
            payload: Bytes::from(payload(n, size)),
            user_headers: if n % 3 == 0 {
                Bytes::from_static(b"\x02\x01\x00\x00\x00k\x02\x01\x00\x00\x00v")
            } else {
                Bytes::new()
            },
        })
        .collect();
    MessageBatch::from_messages(&messages)
}

fn config(mode: AckMode) -> PartitionConfig {
    PartitionConfig {
        ack_mode: mode,
        ..PartitionConfig::default()
    }
}

fn pool() -> Rc<BufferPool> {
    Rc::new(BufferPool::new())
}

fn dir_in(temp: &tempfile::TempDir) -> PathBuf {
    temp.path().join("partitions").join("0")
}

/// Checks that `outcome` holds messages `from..from+count` as appended by `batch`.
fn assert_messages(outcome: &ReadOutcome, from: u64, count: u64, size: usize) {
    assert_eq!(u64::from(outcome.count), count, "message count");
    let bytes = outcome.to_bytes();
    let mut n = from;
    for message in MessageIter::new(&bytes) {
        let message = message.expect("stored messages parse");
        assert_eq!(message.offset(), n);
        assert_eq!(message.payload(), &payload(n, size)[..]);
        assert_eq!(message.origin_timestamp(), n);
        assert!(message.checksum_is_valid());
        assert_ne!(message.id(), 0, "ids are assigned");
        if n % 2 == 1 {
            assert_eq!(message.id(), u128::from(n) + 1, "client ids are kept");
        }
        n += 1;
    }
    assert_eq!(n, from + count);
    if count > 0 {
        assert_eq!(outcome.first_offset, from);
        assert_eq!(outcome.last_offset, from + count - 1);
    }
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Parses a `.log` file's messages and checks the `.index` file describes exactly them.
fn assert_index_matches_log(log: &Path, index: &Path, start_offset: u64) -> u64 {
    let log = std::fs::read(log).unwrap();
    let index = std::fs::read(index).unwrap();
    let mut position = 0u32;
    let mut entries = index.chunks_exact(INDEX_ENTRY_SIZE);
    let mut count = 0u64;
    for message in MessageIter::new(&log) {
        let message = message.unwrap();
        position += message.size() as u32;
        let entry = IndexEntry::decode(entries.next().expect("an entry per message"));
        assert_eq!(
            u64::from(entry.relative_offset),
            message.offset() - start_offset
        );
        assert_eq!(entry.end_position, position);
        assert_eq!(entry.timestamp, message.timestamp());
        count += 1;
    }
    assert!(entries.next().is_none(), "no entries beyond the messages");
    assert_eq!(index.len() % INDEX_ENTRY_SIZE, 0);
    count
}

#[test]
fn append_then_read_back_in_every_ack_mode() {
    for mode in [AckMode::Memory, AckMode::Written, AckMode::Fsync] {
        let temp = tempfile::tempdir().unwrap();
        run(async {
            let partition = Partition::create(dir_in(&temp), config(mode), pool())
                .await
                .unwrap();
            assert_eq!(partition.current_offset(), None);
            assert_eq!(partition.first_offset(), 0);
            assert!(partition.read(0, 10).await.unwrap().is_empty());
            let first = partition.append(batch(0, 10, 100), 1_000).await.unwrap();
            assert_eq!(
                first,
                AppendOutcome {
                    first_offset: 0,
                    last_offset: 9
                }
            );
            let second = partition.append(batch(10, 5, 3000), 2_000).await.unwrap();
            assert_eq!(second.first_offset, 10);
            assert_eq!(partition.current_offset(), Some(14));
            let read = partition.read(0, 10).await.unwrap();
            assert_messages(&read, 0, 10, 100);
            let read = partition.read(10, 100).await.unwrap();
            assert_messages(&read, 10, 5, 3000);
            let read = partition.read(3, 2).await.unwrap();
            assert_messages(&read, 3, 2, 100);
            assert!(partition.read(15, 10).await.unwrap().is_empty());
            let stats = partition.stats();
            assert_eq!(stats.messages_count, 15);
            assert_eq!(stats.segments_count, 1);
            assert_eq!(stats.current_offset, Some(14));
            partition.close().await.unwrap();
        });
        let dir = dir_in(&temp);
        let count = assert_index_matches_log(
            &dir.join("00000000000000000000.log"),
            &dir.join("00000000000000000000.index"),
            0,
        );
        assert_eq!(count, 15, "{mode}");
    }
}

#[test]
fn segment_files_are_o_direct_on_the_real_disk() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let partition = Partition::create(dir_in(&temp), config(AckMode::Written), pool())
            .await
            .unwrap();
        assert!(
            partition.uses_direct_io(),
            "/tmp is ext4 here and accepts O_DIRECT"
        );
        partition.close().await.unwrap();
    });
}

#[test]
fn tmpfs_works_whether_or_not_it_takes_o_direct() {
    // Linux >= 6.6 accepts O_DIRECT on tmpfs (older kernels refuse it and take the fallback).
    if !Path::new("/dev/shm").is_dir() {
        return;
    }
    let temp = tempfile::tempdir_in("/dev/shm").unwrap();
    run(async {
        let dir = dir_in(&temp);
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        partition.append(batch(0, 20, 5000), 1).await.unwrap();
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 20, 5000);
        partition.close().await.unwrap();
    });
}

#[test]
fn a_filesystem_refusing_o_direct_falls_back_to_buffered_writes_with_a_warning() {
    let temp = tempfile::tempdir().unwrap();
    file::REFUSE_DIRECT_IO.with(|refuse| refuse.set(true));
    run(async {
        let dir = dir_in(&temp);
        let partition = Partition::create(dir.clone(), config(AckMode::Fsync), pool())
            .await
            .unwrap();
        assert!(!partition.uses_direct_io());
        assert!(file::buffered_fallback_warned());
        partition.append(batch(0, 50, 500), 1).await.unwrap();
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 50, 500);
        partition.close().await.unwrap();
        let (partition, report) = Partition::open(dir, config(AckMode::Fsync), pool())
            .await
            .unwrap();
        assert_eq!(report.messages_count, 50);
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 50, 500);
        partition.close().await.unwrap();
    });
    file::REFUSE_DIRECT_IO.with(|refuse| refuse.set(false));
}

#[test]
fn written_mode_shows_only_what_is_on_disk() {
    // Proves the watermark: every message a read returns is already in the file, checked by
    // reading the file straight after each read while appends are in flight.
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Rc::new(
            Partition::create(dir.clone(), config(AckMode::Written), pool())
                .await
                .unwrap(),
        );
        let mut appenders = Vec::new();
        for task in 0..4u64 {
            let partition = Rc::clone(&partition);
            appenders.push(compio::runtime::spawn(async move {
                for round in 0..10u64 {
                    partition
                        .append(batch(0, 20, 200 + (task * 10 + round) as usize), 1)
                        .await
                        .unwrap();
                }
            }));
        }
        let log = dir.join("00000000000000000000.log");
        let mut reads = 0;
        while appenders.iter().any(|task| !task.is_finished()) {
            let read = partition.read(0, 1000).await.unwrap();
            let on_disk = std::fs::read(&log).unwrap();
            let shown = read.to_bytes();
            assert!(on_disk.len() >= shown.len());
            assert_eq!(
                &on_disk[..shown.len()],
                &shown[..],
                "shown bytes are on disk"
            );
            reads += 1;
            compio::time::sleep(Duration::from_micros(200)).await;
        }
        for task in appenders {
            task.await.unwrap();
        }
        assert!(reads > 0);
        assert_eq!(partition.read(0, 1000).await.unwrap().count, 800);
        partition.close().await.unwrap();
    });
}

#[test]
fn memory_mode_shows_accepted_messages_and_writes_on_thresholds_and_flush() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let log = dir.join("00000000000000000000.log");
    run(async {
        let config = PartitionConfig {
            memory_flush_messages: 100,
            memory_flush_bytes: 1 << 30,
            ..config(AckMode::Memory)
        };
        let partition = Partition::create(dir.clone(), config, pool())
            .await
            .unwrap();
        partition.append(batch(0, 10, 100), 1).await.unwrap();
        compio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            std::fs::metadata(&log).unwrap().len(),
            0,
            "below thresholds nothing is written"
        );
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 10, 100);
        // Crossing the message threshold writes.
        partition.append(batch(10, 95, 100), 2).await.unwrap();
        compio::time::sleep(Duration::from_millis(50)).await;
        assert!(std::fs::metadata(&log).unwrap().len() > 0);
        // A read spanning disk and memory.
        partition.append(batch(105, 5, 100), 3).await.unwrap();
        assert_messages(&partition.read(0, 1000).await.unwrap(), 0, 110, 100);
        partition.flush(true).await.unwrap();
        assert_messages(&partition.read(100, 1000).await.unwrap(), 100, 10, 100);
        partition.close().await.unwrap();
    });
    assert_eq!(
        assert_index_matches_log(&log, &dir.join("00000000000000000000.index"), 0),
        110
    );
}

#[test]
fn segments_rotate_seal_and_reads_span_them() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let size = 1000;
    run(async {
        let config = PartitionConfig {
            segment_size_bytes: 8192,
            ..config(AckMode::Written)
        };
        let partition = Partition::create(dir.clone(), config, pool())
            .await
            .unwrap();
        for first in (0..60).step_by(3) {
            partition
                .append(batch(first, 3, size), first)
                .await
                .unwrap();
        }
        partition.flush(false).await.unwrap();
        assert!(partition.stats().segments_count > 5);
        assert_messages(&partition.read(0, 60).await.unwrap(), 0, 60, size);
        assert_messages(&partition.read(5, 20).await.unwrap(), 5, 20, size);
        partition.close().await.unwrap();
    });
    let names = segment_files(&dir);
    let mut total = 0;
    for name in names.iter().filter(|name| name.ends_with(".log")) {
        let start: u64 = name.trim_end_matches(".log").parse().unwrap();
        let log = dir.join(name);
        let len = std::fs::metadata(&log).unwrap().len();
        assert!(len <= 8192, "segments do not exceed their size: {len}");
        total += assert_index_matches_log(&log, &dir.join(name.replace(".log", ".index")), start);
    }
    assert_eq!(total, 60);
    assert!(names.contains(&"00000000000000000000.log".to_string()));
}

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
fn timestamps_find_the_first_message_at_or_after() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let config = PartitionConfig {
            segment_size_bytes: 4096,
            ..config(AckMode::Written)
        };
        let partition = Partition::create(dir_in(&temp), config, pool())
            .await
            .unwrap();
        assert_eq!(partition.offset_for_timestamp(0).await.unwrap(), None);
        // Batch k (offsets 4k..4k+3) gets timestamp 1000 * (k + 1).
        for k in 0..30u64 {
            partition
                .append(batch(k * 4, 4, 300), 1000 * (k + 1))
                .await
                .unwrap();
        }
        partition.flush(false).await.unwrap();
        compio::time::sleep(Duration::from_millis(20)).await; // let the writer seal
        assert!(partition.stats().segments_count > 3);
        assert_eq!(partition.offset_for_timestamp(0).await.unwrap(), Some(0));
        assert_eq!(partition.offset_for_timestamp(1000).await.unwrap(), Some(0));
        assert_eq!(partition.offset_for_timestamp(1001).await.unwrap(), Some(4));
        assert_eq!(
            partition.offset_for_timestamp(5000).await.unwrap(),
            Some(16)
        );
        assert_eq!(
            partition.offset_for_timestamp(29_500).await.unwrap(),
            Some(116)
        );
        assert_eq!(
            partition.offset_for_timestamp(30_000).await.unwrap(),
            Some(116)
        );
        assert_eq!(partition.offset_for_timestamp(30_001).await.unwrap(), None);
        // A clock stepping back does not make timestamps decrease.
        partition.append(batch(120, 1, 10), 5).await.unwrap();
        let read = partition.read(120, 1).await.unwrap().to_bytes();
        let message = rill_core::message::MessageView::parse(&read).unwrap();
        assert_eq!(message.timestamp(), 30_000);
        partition.close().await.unwrap();
    });
}

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
fn delete_oldest_segments_counts_sealed_segments() {
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
        assert_eq!(partition.delete_oldest_segments(100).await.unwrap(), 3);
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
fn reads_are_limited_in_bytes_but_return_at_least_one_message() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let config = PartitionConfig {
            max_read_bytes: 5000,
            segment_size_bytes: 20_000,
            ..config(AckMode::Written)
        };
        let partition = Partition::create(dir_in(&temp), config, pool())
            .await
            .unwrap();
        partition.append(batch(0, 40, 1000), 1).await.unwrap();
        partition.append(batch(40, 1, 9000), 1).await.unwrap();
        partition.flush(false).await.unwrap();
        compio::time::sleep(Duration::from_millis(20)).await;
        // 1 KiB payloads take 1064 or 1076 bytes: four fit into 5000 bytes.
        let read = partition.read(0, 100).await.unwrap();
        assert_messages(&read, 0, 4, 1000);
        assert!(read.size_bytes() <= 5000);
        // Sealed segments (index on disk) obey the same limit.
        let read = partition.read(20, 100).await.unwrap();
        assert_eq!(read.count, 4);
        let read = partition.read(40, 10).await.unwrap();
        assert_messages(&read, 40, 1, 9000);
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

/// Flips one payload byte of the message at `offset`, wherever it is stored under `dir`.
fn flip_payload_byte(dir: &Path, offset: u64) {
    for name in segment_files(dir)
        .iter()
        .filter(|name| name.ends_with(".log"))
    {
        let path = dir.join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let mut position = 0;
        for message in MessageIter::new(&bytes.clone()) {
            let message = message.unwrap();
            if message.offset() == offset {
                bytes[position + rill_core::message::HEADER_SIZE + 3] ^= 0x10;
                std::fs::write(&path, bytes).unwrap();
                return;
            }
            position += message.size();
        }
    }
    panic!("no message at offset {offset}");
}

#[test]
fn reads_never_serve_a_message_whose_checksum_fails_and_the_scan_finds_it() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let size = 1000;
    let config_with = |checksum_reads| PartitionConfig {
        segment_size_bytes: 8192,
        checksum_reads,
        ..config(AckMode::Written)
    };
    run(async {
        let partition = Partition::create(dir.clone(), config_with(ChecksumReads::Disk), pool())
            .await
            .unwrap();
        for first in (0..60).step_by(3) {
            partition.append(batch(first, 3, size), 1).await.unwrap();
        }
        partition.close().await.unwrap();
    });
    // One message in a sealed segment (read through its index file), one in the active one.
    flip_payload_byte(&dir, 10);
    flip_payload_byte(&dir, 58);
    run(async {
        let (partition, _) = Partition::open(dir.clone(), config_with(ChecksumReads::Disk), pool())
            .await
            .unwrap();
        // A read stops before a broken message and fails when it is the first one.
        assert_messages(&partition.read(0, 60).await.unwrap(), 0, 10, size);
        for broken in [10, 58] {
            match partition.read(broken, 5).await {
                Err(StorageError::ChecksumMismatch { offset, .. }) => assert_eq!(offset, broken),
                other => panic!("offset {broken}: {:?}", other.map(|read| read.count)),
            }
        }
        assert_messages(&partition.read(11, 30).await.unwrap(), 11, 30, size);
        assert_messages(&partition.read(50, 60).await.unwrap(), 50, 8, size);
        assert_messages(&partition.read(59, 60).await.unwrap(), 59, 1, size);
        let scan = partition.scan_checksums().await.unwrap();
        assert_eq!(scan.messages, 60);
        let found: Vec<u64> = scan.mismatches.iter().map(|found| found.offset).collect();
        assert_eq!(found, [10, 58]);
        assert_eq!(
            StorageError::ChecksumMismatch {
                path: dir.clone(),
                position: 0,
                offset: 10
            }
            .code(),
            rill_core::ErrorCode::InvalidMessageChecksum
        );
        partition.close().await.unwrap();
    });
    // Without verification the flipped byte would be served as good data.
    run(async {
        let (partition, _) = Partition::open(dir.clone(), config_with(ChecksumReads::None), pool())
            .await
            .unwrap();
        let read = partition.read(10, 1).await.unwrap();
        assert_eq!(read.count, 1);
        let message = rill_core::message::MessageView::parse(&read.bytes[0]).unwrap();
        assert!(!message.checksum_is_valid());
        partition.close().await.unwrap();
    });
}

#[test]
fn the_scan_reads_messages_larger_than_its_chunk() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        // 9 MiB messages, each longer than a scan step, then small ones.
        partition.append(batch(0, 2, 9 << 20), 1).await.unwrap();
        partition.append(batch(2, 100, 100), 1).await.unwrap();
        let scan = partition.scan_checksums().await.unwrap();
        assert_eq!(scan.messages, 102);
        assert!(scan.mismatches.is_empty());
        partition.close().await.unwrap();
    });
    flip_payload_byte(&dir, 1);
    run(async {
        let (partition, _) = Partition::open(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        let scan = partition.scan_checksums().await.unwrap();
        assert_eq!(scan.messages, 102);
        assert_eq!(scan.mismatches.len(), 1);
        assert_eq!(scan.mismatches[0].offset, 1);
        partition.close().await.unwrap();
    });
}
