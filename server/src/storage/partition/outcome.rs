//! What partition operations report: appends, reads, figures, write counters, retention and
//! recovery outcomes.

use crate::storage::index::INDEX_ENTRY_SIZE;
use bytes::Bytes;
use std::sync::Arc;

/// Offsets assigned to an accepted batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendOutcome {
    pub first_offset: u64,
    pub last_offset: u64,
}

/// Stored messages, back to back in wire format, ready to follow a poll response header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Offset of the first returned message (the clamped start offset when `count` is 0).
    pub first_offset: u64,
    /// Offset of the last returned message (meaningless when `count` is 0).
    pub last_offset: u64,
    pub count: u32,
    /// The messages, split where they come from different buffers or files.
    pub bytes: Vec<Bytes>,
    /// One entry per piece of `bytes`: the 0.9 frame checksums of its messages when the piece
    /// is a whole batch that arrived as a 0.9 send and is still in memory (see
    /// `MessageBatch::frame_checksums`), so that a 0.9 poll need not hash it again.
    pub frame_checksums: Vec<Option<Arc<[u64]>>>,
}

impl ReadOutcome {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Total size of the returned messages.
    pub fn size_bytes(&self) -> u64 {
        self.bytes.iter().map(|piece| piece.len() as u64).sum()
    }

    /// The messages as one contiguous buffer (copies unless there is a single piece).
    pub fn to_bytes(&self) -> Bytes {
        match self.bytes.as_slice() {
            [] => Bytes::new(),
            [single] => single.clone(),
            pieces => Bytes::from(pieces.concat()),
        }
    }

    pub(super) fn empty(offset: u64) -> Self {
        ReadOutcome {
            first_offset: offset,
            last_offset: offset,
            count: 0,
            bytes: Vec::new(),
            frame_checksums: Vec::new(),
        }
    }
}

/// Numbers for metrics and GetStats, over the visible messages, plus the writer's counters
/// since the partition was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionStats {
    pub segments_count: u32,
    pub size_bytes: u64,
    pub messages_count: u64,
    pub current_offset: Option<u64>,
    pub writes: WriteCounters,
}

/// Buckets of [`WriteCounters::rounds_by_messages`].
pub const ROUND_SIZE_BUCKETS: usize = 18;

/// What the writer task issued since open: group-commit rounds (one vectored write of all
/// appends staged meanwhile) and syncs. Counted when issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteCounters {
    pub rounds: u64,
    pub messages: u64,
    pub bytes: u64,
    pub syncs: u64,
    /// Rounds by messages in them: index k counts rounds of at most 2^k messages (and more
    /// than 2^(k-1)); the last index counts every larger round.
    pub rounds_by_messages: [u64; ROUND_SIZE_BUCKETS],
}

impl WriteCounters {
    pub(super) fn record_round(&mut self, messages: u64, bytes: u64) {
        self.rounds += 1;
        self.messages += messages;
        self.bytes += bytes;
        // ceil(log2(messages)); a round holds at least one message.
        let bucket = (u64::BITS - messages.max(1).saturating_sub(1).leading_zeros()) as usize;
        self.rounds_by_messages[bucket.min(ROUND_SIZE_BUCKETS - 1)] += 1;
    }
}

/// What a retention pass deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetentionOutcome {
    pub segments_deleted: u32,
    pub messages_deleted: u64,
    pub bytes_deleted: u64,
}

/// What `open` found and repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecoveryReport {
    pub segments_count: u32,
    pub messages_count: u64,
    /// The offset the next append gets.
    pub next_offset: u64,
    /// Segments whose files were changed by recovery.
    pub repaired_segments: u32,
    /// Bytes cut from the end of `.log` files: torn or garbage data plus preallocated space.
    pub truncated_log_bytes: u64,
    /// Index entries that pointed at messages the log did not hold intact.
    pub dropped_index_entries: u64,
    /// Index entries rebuilt from the log.
    pub rebuilt_index_entries: u64,
    /// Non-last segments that held no valid message and were removed.
    pub removed_empty_segments: u32,
}

impl RecoveryReport {
    /// Bytes and index entries recovery removed (0 after a clean shutdown).
    pub fn truncated_bytes(&self) -> u64 {
        self.truncated_log_bytes + self.dropped_index_entries * INDEX_ENTRY_SIZE as u64
    }
}

impl std::fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} segments, {} messages, next offset {}; repaired {} segments: cut {} log bytes \
             (torn data and preallocated space), dropped {} and rebuilt {} index entries, \
             removed {} empty segments",
            self.segments_count,
            self.messages_count,
            self.next_offset,
            self.repaired_segments,
            self.truncated_log_bytes,
            self.dropped_index_entries,
            self.rebuilt_index_entries,
            self.removed_empty_segments
        )
    }
}

#[cfg(test)]
mod write_counter_tests {
    use super::*;

    #[test]
    fn rounds_are_bucketed_by_ceil_log2_of_their_messages() {
        let mut counters = WriteCounters::default();
        for (messages, bucket) in [
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (1024, 10),
            (1025, 11),
        ] {
            let before = counters.rounds_by_messages[bucket];
            counters.record_round(messages, 100);
            assert_eq!(
                counters.rounds_by_messages[bucket],
                before + 1,
                "{messages}"
            );
        }
        counters.record_round(1 << 20, 1);
        assert_eq!(counters.rounds_by_messages[ROUND_SIZE_BUCKETS - 1], 1);
        assert_eq!(counters.rounds, 8);
        assert_eq!(counters.bytes, 701);
    }
}
