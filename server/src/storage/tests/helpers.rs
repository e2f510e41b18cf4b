//! Shared helpers: a runtime, numbered test batches, configurations, and checks of what a
//! read returned and of the files on disk.

use crate::storage::*;
use bytes::Bytes;
use rill_core::message::{MessageBatch, MessageIter, OutgoingMessage};
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub(super) fn run<F: std::future::Future>(future: F) -> F::Output {
    compio::runtime::Runtime::new()
        .expect("io_uring runtime")
        .block_on(future)
}

/// Payload of message number `n`: its number then filler, `size` bytes.
pub(super) fn payload(n: u64, size: usize) -> Vec<u8> {
    let mut bytes = n.to_le_bytes().to_vec();
    bytes.resize(size.max(8), (n % 251) as u8);
    bytes
}

pub(super) fn batch(first: u64, count: u64, size: usize) -> MessageBatch {
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

pub(super) fn config(mode: AckMode) -> PartitionConfig {
    PartitionConfig {
        ack_mode: mode,
        ..PartitionConfig::default()
    }
}

pub(super) fn pool() -> Rc<BufferPool> {
    Rc::new(BufferPool::new())
}

pub(super) fn dir_in(temp: &tempfile::TempDir) -> PathBuf {
    temp.path().join("partitions").join("0")
}

/// Checks that `outcome` holds messages `from..from+count` as appended by `batch`.
pub(super) fn assert_messages(outcome: &ReadOutcome, from: u64, count: u64, size: usize) {
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

/// The files of `dir` but the log's incarnation (`wal_id`), by name.
pub(super) fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != crate::storage::wal::incarnation::FILE_NAME)
        .collect();
    names.sort();
    names
}

/// Parses a `.log` file's messages and checks the `.index` file describes exactly them.
pub(super) fn assert_index_matches_log(log: &Path, index: &Path, start_offset: u64) -> u64 {
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
