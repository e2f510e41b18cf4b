//! Property test of the storage engine against a model: random sequences of appends (random
//! counts and sizes), reads, flushes, segment deletions and clean or unclean restarts, with a
//! small segment size so rotation happens often, in every ack mode. After every step the
//! partition must return exactly what the model holds; after an unclean restart it must hold a
//! prefix of what was appended that keeps everything acknowledged as written.

#![allow(clippy::disallowed_methods, reason = "tests and benchmarks may block")]

use bytes::Bytes;
use proptest::prelude::*;
use rill_core::message::{MessageBatch, MessageIter, OutgoingMessage};
use rill_server::storage::{
    AckMode, BufferPool, INDEX_ENTRY_SIZE, IndexEntry, Partition, PartitionConfig,
};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    Append(Vec<usize>),
    Read { at_permille: u16, count: u32 },
    Flush { fsync: bool },
    DeleteOldest(u32),
    Restart { clean: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec(0usize..2500, 1..8).prop_map(Op::Append),
        4 => (0u16..1100, 1u32..60).prop_map(|(at_permille, count)| Op::Read { at_permille, count }),
        1 => any::<bool>().prop_map(|fsync| Op::Flush { fsync }),
        1 => (0u32..3).prop_map(Op::DeleteOldest),
        2 => any::<bool>().prop_map(|clean| Op::Restart { clean }),
    ]
}

fn mode() -> impl Strategy<Value = AckMode> {
    prop_oneof![
        Just(AckMode::Memory),
        Just(AckMode::Written),
        Just(AckMode::Fsync)
    ]
}

/// The payload of message number `n` (global across the case): unique and self-describing.
fn payload(n: u64, size: usize) -> Vec<u8> {
    let mut bytes = n.to_le_bytes().to_vec();
    bytes.extend((0..size).map(|i| (n as usize * 31 + i) as u8));
    bytes
}

struct Model {
    /// Payloads of the stored messages by offset (None below `first`).
    payloads: Vec<Option<Vec<u8>>>,
    first: u64,
    counter: u64,
}

impl Model {
    fn end(&self) -> u64 {
        self.payloads.len() as u64
    }
}

async fn check_read(partition: &Partition, model: &Model, start: u64, count: u32) {
    let read = partition.read(start, count).await.unwrap();
    let from = start.max(model.first);
    let expected = model.end().saturating_sub(from).min(u64::from(count));
    assert_eq!(
        u64::from(read.count),
        expected,
        "count of read({start}, {count})"
    );
    let bytes = read.to_bytes();
    let mut offset = from;
    for message in MessageIter::new(&bytes) {
        let message = message.unwrap();
        assert_eq!(message.offset(), offset);
        assert!(message.checksum_is_valid());
        let wanted = model.payloads[offset as usize].as_ref().expect("stored");
        assert_eq!(message.payload(), &wanted[..], "payload at {offset}");
        offset += 1;
    }
    assert_eq!(offset, from + expected);
}

fn check_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(start) = name.strip_suffix(".log") else {
            continue;
        };
        let start: u64 = start.parse().unwrap();
        let log = std::fs::read(dir.join(&name)).unwrap();
        let index = std::fs::read(dir.join(format!("{start:020}.index"))).unwrap();
        assert_eq!(index.len() % INDEX_ENTRY_SIZE, 0);
        let mut end = 0u32;
        let mut entries = index.chunks_exact(INDEX_ENTRY_SIZE);
        for message in MessageIter::new(&log) {
            let message = message.unwrap();
            end += message.size() as u32;
            let entry = IndexEntry::decode(entries.next().expect("entry per message"));
            assert_eq!(u64::from(entry.relative_offset) + start, message.offset());
            assert_eq!(entry.end_position, end);
        }
        assert!(entries.next().is_none());
    }
}

fn run_case(mode: AckMode, segment_size_bytes: u64, cache_bytes: u64, ops: Vec<Op>) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("p");
    let config = PartitionConfig {
        ack_mode: mode,
        segment_size_bytes,
        memory_flush_messages: 20,
        ..PartitionConfig::default()
    };
    let pool = Rc::new(BufferPool::new().with_read_cache_bytes(cache_bytes));
    compio::runtime::Runtime::new().unwrap().block_on(async {
        let mut partition = Partition::create(dir.clone(), config.clone(), Rc::clone(&pool))
            .await
            .unwrap();
        let mut model = Model {
            payloads: Vec::new(),
            first: 0,
            counter: 0,
        };
        for op in ops {
            match op {
                Op::Append(sizes) => {
                    let messages: Vec<_> = sizes
                        .iter()
                        .map(|&size| {
                            model.counter += 1;
                            OutgoingMessage::new(Bytes::from(payload(model.counter, size)))
                        })
                        .collect();
                    let expected: Vec<_> = messages.iter().map(|m| m.payload.to_vec()).collect();
                    let outcome = partition
                        .append(MessageBatch::from_messages(&messages), model.counter)
                        .await
                        .unwrap();
                    assert_eq!(outcome.first_offset, model.end());
                    model.payloads.extend(expected.into_iter().map(Some));
                    assert_eq!(outcome.last_offset + 1, model.end());
                    assert_eq!(partition.current_offset(), Some(model.end() - 1));
                }
                Op::Read { at_permille, count } => {
                    let start = model.end() * u64::from(at_permille) / 1000;
                    check_read(&partition, &model, start, count).await;
                }
                Op::Flush { fsync } => partition.flush(fsync).await.unwrap(),
                Op::DeleteOldest(count) => {
                    partition.delete_oldest_segments(count).await.unwrap();
                    let first = partition.first_offset();
                    assert!(first >= model.first && first <= model.end());
                    for slot in &mut model.payloads[model.first as usize..first as usize] {
                        *slot = None;
                    }
                    model.first = first;
                }
                Op::Restart { clean } => {
                    if clean {
                        partition.close().await.unwrap();
                    } else {
                        drop(partition);
                        // Let I/O the dropped writer had in flight land, as it would before a
                        // crashed process's files are reopened.
                        compio::time::sleep(Duration::from_millis(5)).await;
                    }
                    let (reopened, report) =
                        Partition::open(dir.clone(), config.clone(), Rc::clone(&pool))
                            .await
                            .unwrap();
                    partition = reopened;
                    let recovered = report.next_offset;
                    if clean || mode != AckMode::Memory {
                        assert_eq!(recovered, model.end(), "everything acked survives");
                    } else {
                        // Memory mode loses what was not written; what survives is a prefix.
                        assert!(recovered <= model.end());
                        model.payloads.truncate(recovered as usize);
                        model.first = model.first.min(recovered);
                    }
                    assert_eq!(partition.first_offset(), model.first.min(recovered));
                    model.first = partition.first_offset();
                    check_read(&partition, &model, 0, u32::MAX).await;
                }
            }
            let held = pool.read_cache().stats().held_bytes;
            assert!(
                held <= cache_bytes,
                "the cache holds {held} of {cache_bytes} bytes"
            );
        }
        check_read(&partition, &model, 0, u32::MAX).await;
        partition.close().await.unwrap();
        drop(partition);
        // Whatever the partition held went back when it was dropped.
        assert_eq!(pool.read_cache().stats().held_bytes, 0);
    });
    check_files(&dir);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn reads_always_equal_the_model(
        mode in mode(),
        segment_size_bytes in prop_oneof![Just(4096u64), Just(16384u64), Just(100_000u64)],
        // Off (every read from the files), small enough to evict all the time, or roomy.
        cache_bytes in prop_oneof![Just(0u64), Just(6000u64), Just(1u64 << 30)],
        ops in prop::collection::vec(op(), 1..40),
    ) {
        run_case(mode, segment_size_bytes, cache_bytes, ops);
    }
}
