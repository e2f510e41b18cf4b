//! The write-ahead log (storage/wal): small `written` rounds acknowledged from the shard's log,
//! put back after a crash; records never applied to a log that did not write them; a full log
//! sending rounds to the segment files.

use super::helpers::*;
use crate::storage::*;
use std::path::{Path, PathBuf};
use std::rc::Rc;

const SIZE: usize = 100;

fn wal_config() -> WalConfig {
    WalConfig {
        size_bytes: 4 << 20,
        max_record_bytes: 256 << 10,
    }
}

/// A shard's pool in data directory `root`: with a started log when `log` is given, and the
/// records the logs held (scanned now, as a boot does).
async fn shard_pool(root: &Path, log: Option<WalConfig>) -> (Shard, Option<Rc<Wal>>) {
    let recovery = WalRecovery::scan(root).unwrap();
    let wal = log.map(|config| Wal::new(root, 0, config));
    let pool = Rc::new(BufferPool::new().with_read_cache_bytes(0));
    if let Some(wal) = &wal {
        wal.start(false).await;
    }
    let link = WalLink {
        wal: wal.clone(),
        recovery: Some(recovery),
    };
    (Shard { pool, link }, wal)
}

/// Creates a written-mode partition in `dir`, appends messages 0..30 in rounds of 3 (each one
/// record of the shard's log) and drops it without closing it, like a crash.
async fn log_30_and_crash(shard: &Shard, dir: &Path) {
    let partition = shard.create(dir, AckMode::Written).await;
    for first in (0..30).step_by(3) {
        partition
            .append(batch(first, 3, SIZE), first)
            .await
            .unwrap();
    }
    drop(partition);
}

/// What a shard's partitions get: its pool and its log.
#[derive(Clone)]
struct Shard {
    pool: Rc<BufferPool>,
    link: WalLink,
}

impl Shard {
    async fn create(&self, dir: &Path, mode: AckMode) -> Partition {
        Partition::create_linked(
            dir.to_path_buf(),
            config(mode),
            self.pool.clone(),
            self.link.clone(),
        )
        .await
        .unwrap()
    }

    async fn open(&self, dir: &Path) -> (Partition, RecoveryReport) {
        Partition::open_linked(
            dir.to_path_buf(),
            config(AckMode::Written),
            self.pool.clone(),
            self.link.clone(),
        )
        .await
        .unwrap()
    }
}

fn partition_dir(root: &Path) -> PathBuf {
    root.join("streams")
        .join("1")
        .join("topics")
        .join("0")
        .join("partitions")
        .join("0")
}

/// The messages of the segment files, counted from the `.log` files.
fn messages_in_segments(dir: &Path) -> u64 {
    let mut count = 0;
    for name in segment_files(dir)
        .iter()
        .filter(|name| name.ends_with(".log"))
    {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        count += rill_core::message::MessageIter::new(&bytes)
            .take_while(|message| message.as_ref().is_ok_and(|m| m.id() != 0))
            .count() as u64;
    }
    count
}

#[test]
fn small_rounds_are_acknowledged_from_the_log_and_put_back_after_a_crash() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().to_path_buf();
    let dir = partition_dir(&root);
    run(async {
        let (pool, wal) = shard_pool(&root, Some(wal_config())).await;
        let partition = pool.create(&dir, AckMode::Written).await;
        for first in (0..150).step_by(3) {
            partition
                .append(batch(first, 3, SIZE), first)
                .await
                .unwrap();
        }
        assert_eq!(
            partition.visible_end(),
            150,
            "every append was acknowledged"
        );
        let stats = wal.as_ref().unwrap().stats();
        assert_eq!(stats.records, 50, "each round was one record: {stats:?}");
        assert_eq!(stats.refused, 0);
        // Under the memory-mode thresholds, nothing reached the segment files yet; reads are
        // answered from memory.
        assert_eq!(messages_in_segments(&dir), 0);
        assert_messages(&partition.read(0, 150).await.unwrap(), 0, 150, SIZE);
        // A crash: the writer stops, what was only in memory is gone.
        drop(partition);
    });
    run(async {
        let (pool, _) = shard_pool(&root, None).await;
        let (partition, report) = pool.open(&dir).await;
        assert_eq!(report.next_offset, 150);
        assert_eq!(report.messages_count, 150);
        assert_messages(&partition.read(0, 150).await.unwrap(), 0, 150, SIZE);
        assert_eq!(
            messages_in_segments(&dir),
            150,
            "replayed messages are written to the segment files at once"
        );
        partition.append(batch(150, 3, SIZE), 150).await.unwrap();
        assert_messages(&partition.read(0, 200).await.unwrap(), 0, 153, SIZE);
        partition.close().await.unwrap();
    });
    // Nothing is applied twice: the records are still in the log, their messages in the files.
    run(async {
        let (pool, _) = shard_pool(&root, None).await;
        let (partition, report) = pool.open(&dir).await;
        assert_eq!(report.next_offset, 153);
        assert_messages(&partition.read(0, 200).await.unwrap(), 0, 153, SIZE);
        partition.close().await.unwrap();
    });
}

#[test]
fn records_of_an_earlier_log_in_the_directory_or_of_a_cut_tail_are_never_applied() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().to_path_buf();
    let dir = partition_dir(&root);
    run(async {
        let (pool, _wal) = shard_pool(&root, Some(wal_config())).await;
        log_30_and_crash(&pool, &dir).await;
        // The partition is deleted and one with the same ids created: its log starts at 0.
        std::fs::remove_dir_all(&dir).unwrap();
        let partition = pool.create(&dir, AckMode::Written).await;
        partition.append(batch(100, 2, SIZE), 1).await.unwrap();
        drop(partition);
    });
    run(async {
        let (pool, _) = shard_pool(&root, None).await;
        let (partition, report) = pool.open(&dir).await;
        assert_eq!(
            report.next_offset, 2,
            "only the new log's messages: {report:?}"
        );
        let read = partition.read(0, 10).await.unwrap();
        assert_eq!(read.count, 2);
        let bytes = read.to_bytes();
        let first = rill_core::message::MessageView::parse(&bytes).unwrap();
        assert_eq!(first.payload(), &payload(100, SIZE)[..]);

        // A cut log: offsets from 1 on will be other messages.
        let (partition, _) = partition.truncate(1).await.unwrap();
        assert_eq!(partition.next_offset(), 1);
        drop(partition);
    });
    run(async {
        let (pool, _) = shard_pool(&root, None).await;
        let (partition, report) = pool.open(&dir).await;
        assert_eq!(report.next_offset, 1, "the cut tail stays cut: {report:?}");
        partition.close().await.unwrap();
    });
}

#[test]
fn a_full_log_sends_rounds_to_the_segment_files_and_asks_partitions_to_write() {
    // A 64 KiB log holds 16 one-block records: with four partitions appending 120 rounds
    // each, the log fills, refuses records (their rounds are written directly) and asks the
    // partitions to write their segments; every acknowledged message is there after a crash.
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().to_path_buf();
    let small = WalConfig {
        size_bytes: 64 << 10,
        max_record_bytes: 16 << 10,
    };
    let dirs: Vec<PathBuf> = (0..4)
        .map(|p| {
            root.join("streams/1/topics/0/partitions")
                .join(p.to_string())
        })
        .collect();
    run(async {
        let (pool, wal) = shard_pool(&root, Some(small)).await;
        let mut partitions = Vec::new();
        for dir in &dirs {
            partitions.push(Rc::new(pool.create(dir, AckMode::Written).await));
        }
        let appenders = partitions.iter().map(|partition| {
            let partition = Rc::clone(partition);
            compio::runtime::spawn(async move {
                for first in (0..240).step_by(2) {
                    partition
                        .append(batch(first, 2, SIZE), first)
                        .await
                        .unwrap();
                }
            })
        });
        for appender in appenders.collect::<Vec<_>>() {
            appender.await.unwrap();
        }
        let stats = wal.as_ref().unwrap().stats();
        assert!(stats.records > 16, "the ring was reused: {stats:?}");
        assert!(stats.used_bytes <= small.size_bytes);
        for partition in &partitions {
            assert_eq!(partition.visible_end(), 240);
        }
        drop(partitions);
    });
    run(async {
        let (pool, _) = shard_pool(&root, None).await;
        for dir in &dirs {
            let (partition, report) = pool.open(dir).await;
            assert_eq!(report.next_offset, 240, "{}", dir.display());
            assert_messages(&partition.read(0, 240).await.unwrap(), 0, 240, SIZE);
            partition.close().await.unwrap();
        }
    });
}

#[test]
fn memory_and_fsync_modes_and_large_rounds_do_not_log() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().to_path_buf();
    run(async {
        let (pool, wal) = shard_pool(&root, Some(wal_config())).await;
        for (index, mode) in [AckMode::Memory, AckMode::Fsync].into_iter().enumerate() {
            let dir = root.join(format!("streams/1/topics/0/partitions/{index}"));
            let partition = pool.create(&dir, mode).await;
            partition.append(batch(0, 3, SIZE), 0).await.unwrap();
            partition.close().await.unwrap();
        }
        let dir = root.join("streams/1/topics/0/partitions/9");
        let partition = pool.create(&dir, AckMode::Written).await;
        // 300 KB: above the largest record.
        partition.append(batch(0, 300, 1000), 0).await.unwrap();
        assert_eq!(messages_in_segments(&dir), 300, "written directly");
        assert_eq!(wal.as_ref().unwrap().stats().records, 0);
        partition.close().await.unwrap();
    });
}

#[test]
fn a_replay_the_storage_cannot_take_fails_the_open_and_loses_nothing() {
    // The segment write of replayed messages fails: the open fails (the server then keeps its
    // logs for the next start) instead of opening without them; the next open puts them back.
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().to_path_buf();
    let dir = partition_dir(&root);
    run(async {
        let (pool, _wal) = shard_pool(&root, Some(wal_config())).await;
        log_30_and_crash(&pool, &dir).await;
    });
    run(async {
        let (pool, _) = shard_pool(&root, None).await;
        crate::storage::file::FAIL_LOG_WRITE_AFTER.with(|countdown| countdown.set(Some(0)));
        let opened = Partition::open_linked(
            dir.clone(),
            config(AckMode::Written),
            pool.pool.clone(),
            pool.link.clone(),
        )
        .await;
        crate::storage::file::FAIL_LOG_WRITE_AFTER.with(|countdown| countdown.set(None));
        assert!(opened.is_err(), "the open reports the failed replay");
    });
    run(async {
        let (pool, _) = shard_pool(&root, None).await;
        let (partition, report) = pool.open(&dir).await;
        assert_eq!(report.next_offset, 30);
        assert_messages(&partition.read(0, 30).await.unwrap(), 0, 30, SIZE);
        partition.close().await.unwrap();
    });
}
