//! Appends and reads in every ack mode: visibility, rotation, timestamps and read limits.

use super::helpers::*;
use crate::storage::*;
use std::rc::Rc;
use std::time::Duration;

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

/// A batch that arrived as a 0.9 send keeps its frame checksums beside it in memory; a read
/// hands them out only with the whole batch, and never for messages whose ids it assigned.
#[test]
fn a_whole_batch_read_from_memory_comes_with_its_frame_checksums() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let pool = Rc::new(BufferPool::new().with_read_cache_bytes(64 << 20));
        let partition = Partition::create(dir_in(&temp), config(AckMode::Written), pool)
            .await
            .unwrap();
        // This batch carries every id; `batch` leaves even-numbered ones to the server.
        let with_ids = |first: u64| {
            let messages: Vec<_> = (first..first + 3)
                .map(|n| rill_core::message::OutgoingMessage {
                    id: u128::from(n) + 1,
                    origin_timestamp: n,
                    payload: bytes::Bytes::from(payload(n, 100)),
                    user_headers: bytes::Bytes::new(),
                })
                .collect();
            rill_core::message::MessageBatch::from_messages(&messages)
        };
        let sums = vec![11u64, 12, 13];
        partition
            .append(with_ids(0).with_frame_checksums(sums.clone()), 1_000)
            .await
            .unwrap();
        partition
            .append(batch(3, 3, 100).with_frame_checksums(sums.clone()), 2_000)
            .await
            .unwrap();
        let whole = partition.read(0, 3).await.unwrap();
        assert_eq!(whole.frame_checksums.len(), whole.bytes.len());
        assert_eq!(whole.frame_checksums[0].as_deref(), Some(&sums[..]));
        let part = partition.read(1, 2).await.unwrap();
        assert_eq!(part.frame_checksums, vec![None]);
        // Message 4 was sent with id 0: the frames a poll builds are not the ones sent.
        let assigned = partition.read(3, 3).await.unwrap();
        assert_eq!(assigned.frame_checksums, vec![None]);
        assert_messages(&assigned, 3, 3, 100);
    });
}
