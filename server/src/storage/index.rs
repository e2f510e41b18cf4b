//! `.index` entries and the in-memory index of segments that are still being written.
//!
//! ```text
//! offset size field            (little-endian, 16 bytes per message, no file header)
//!      0    4 relative_offset  u32  message offset - segment start offset (= entry number)
//!      4    4 end_position     u32  byte position in the .log just after this message
//!      8    8 timestamp        u64  server timestamp of the message, µs
//! ```
//! Message `i` of a segment occupies `[end_position(i-1), end_position(i))` of the `.log`, with
//! `end_position(-1) = 0`.

use super::pool::{BufferPool, PooledBuf};
use std::rc::Rc;

/// Size of one index entry.
pub const INDEX_ENTRY_SIZE: usize = 16;

/// One `.index` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexEntry {
    pub relative_offset: u32,
    pub end_position: u32,
    pub timestamp: u64,
}

impl IndexEntry {
    pub fn encode(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.relative_offset.to_le_bytes());
        out[4..8].copy_from_slice(&self.end_position.to_le_bytes());
        out[8..16].copy_from_slice(&self.timestamp.to_le_bytes());
    }

    pub fn decode(bytes: &[u8]) -> IndexEntry {
        IndexEntry {
            relative_offset: u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")),
            end_position: u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")),
            timestamp: u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")),
        }
    }
}

/// Entries kept in 64 KiB chunks borrowed from the pool, so a growing index never reallocates
/// and copies (a 1 GiB segment of small messages has a 256 MiB index).
pub(crate) struct MemoryIndex {
    chunks: Vec<PooledBuf>,
    count: usize,
}

const CHUNK_BYTES: usize = 64 * 1024;
const ENTRIES_PER_CHUNK: usize = CHUNK_BYTES / INDEX_ENTRY_SIZE;
const _: () = assert!(CHUNK_BYTES.is_multiple_of(INDEX_ENTRY_SIZE));

impl MemoryIndex {
    pub(crate) fn new() -> Self {
        MemoryIndex {
            chunks: Vec::new(),
            count: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    pub(crate) fn push(&mut self, pool: &Rc<BufferPool>, entry: IndexEntry) {
        let slot = self.count % ENTRIES_PER_CHUNK;
        if slot == 0 && self.count / ENTRIES_PER_CHUNK == self.chunks.len() {
            let mut chunk = pool.acquire(CHUNK_BYTES);
            chunk.set_filled(CHUNK_BYTES);
            self.chunks.push(chunk);
        }
        let chunk = &mut self.chunks[self.count / ENTRIES_PER_CHUNK];
        entry.encode(&mut chunk.whole_mut()[slot * INDEX_ENTRY_SIZE..][..INDEX_ENTRY_SIZE]);
        self.count += 1;
    }

    pub(crate) fn get(&self, index: usize) -> IndexEntry {
        assert!(index < self.count, "index entry {index} of {}", self.count);
        let chunk = &self.chunks[index / ENTRIES_PER_CHUNK];
        let slot = index % ENTRIES_PER_CHUNK;
        IndexEntry::decode(&chunk.as_slice()[slot * INDEX_ENTRY_SIZE..][..INDEX_ENTRY_SIZE])
    }

    /// Where message `index` starts in the `.log`: the end of the previous one.
    pub(crate) fn start_position(&self, index: usize) -> u64 {
        if index == 0 {
            0
        } else {
            u64::from(self.get(index - 1).end_position)
        }
    }

    /// Drops entries from `count` on; chunks no longer needed go back to the pool.
    pub(crate) fn truncate(&mut self, count: usize) {
        if count >= self.count {
            return;
        }
        self.count = count;
        self.chunks.truncate(count.div_ceil(ENTRIES_PER_CHUNK));
    }

    /// Copies the encoded entries `[from, to)` into `out` (exactly `(to - from) * 16` bytes).
    pub(crate) fn copy_encoded(&self, from: usize, to: usize, out: &mut [u8]) {
        assert!(from <= to && to <= self.count);
        assert_eq!(out.len(), (to - from) * INDEX_ENTRY_SIZE);
        let mut index = from;
        let mut written = 0;
        while index < to {
            let chunk = &self.chunks[index / ENTRIES_PER_CHUNK];
            let slot = index % ENTRIES_PER_CHUNK;
            let take = (ENTRIES_PER_CHUNK - slot).min(to - index);
            let bytes = take * INDEX_ENTRY_SIZE;
            out[written..written + bytes]
                .copy_from_slice(&chunk.as_slice()[slot * INDEX_ENTRY_SIZE..][..bytes]);
            written += bytes;
            index += take;
        }
    }

    /// The number of leading entries among the first `limit` for which `before` holds; `before`
    /// must hold for a prefix of the entries and for none after it (a binary search).
    fn partition_point(&self, limit: usize, before: impl Fn(IndexEntry) -> bool) -> usize {
        let (mut low, mut high) = (0, limit.min(self.count));
        while low < high {
            let middle = low + (high - low) / 2;
            if before(self.get(middle)) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// The first entry among the first `limit` whose timestamp is at least `timestamp`.
    /// Timestamps never decrease within a partition, so this is a binary search.
    pub(crate) fn first_at_or_after(&self, limit: usize, timestamp: u64) -> Option<usize> {
        let first = self.partition_point(limit, |entry| entry.timestamp < timestamp);
        (first < limit.min(self.count)).then_some(first)
    }

    /// How many entries end at or before byte `position` of the segment: the relative offset of
    /// the message starting there, when `position` is a message boundary.
    pub(crate) fn count_ending_by(&self, position: u64) -> usize {
        self.partition_point(self.count, |entry| {
            u64::from(entry.end_position) <= position
        })
    }

    /// The largest `k` in `1..=max_count` such that messages `[from, from + k)` take at most
    /// `max_bytes` (always at least one message).
    pub(crate) fn count_within(&self, from: usize, max_count: usize, max_bytes: u64) -> usize {
        assert!(max_count >= 1 && from + max_count <= self.count);
        let start = self.start_position(from);
        let (mut low, mut high) = (1, max_count);
        while low < high {
            let middle = low + (high - low).div_ceil(2);
            if u64::from(self.get(from + middle - 1).end_position) - start <= max_bytes {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        low
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u32) -> IndexEntry {
        IndexEntry {
            relative_offset: index,
            end_position: (index + 1) * 100,
            timestamp: u64::from(index / 3),
        }
    }

    #[test]
    fn entries_encode_little_endian_in_sixteen_bytes() {
        let value = IndexEntry {
            relative_offset: 0x0102_0304,
            end_position: 0x0A0B_0C0D,
            timestamp: 0x1122_3344_5566_7788,
        };
        let mut bytes = [0u8; INDEX_ENTRY_SIZE];
        value.encode(&mut bytes);
        assert_eq!(
            bytes,
            [
                4, 3, 2, 1, 0x0D, 0x0C, 0x0B, 0x0A, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11
            ]
        );
        assert_eq!(IndexEntry::decode(&bytes), value);
    }

    #[test]
    fn memory_index_spans_chunks_and_searches() {
        let pool = Rc::new(BufferPool::new());
        let mut index = MemoryIndex::new();
        let total = ENTRIES_PER_CHUNK as u32 * 2 + 10;
        for i in 0..total {
            index.push(&pool, entry(i));
        }
        assert_eq!(index.len(), total as usize);
        assert_eq!(
            index.get(ENTRIES_PER_CHUNK),
            entry(ENTRIES_PER_CHUNK as u32)
        );
        assert_eq!(index.start_position(0), 0);
        assert_eq!(index.start_position(5), 500);
        // Copy across a chunk boundary.
        let from = ENTRIES_PER_CHUNK - 2;
        let mut out = vec![0u8; 5 * INDEX_ENTRY_SIZE];
        index.copy_encoded(from, from + 5, &mut out);
        for (k, bytes) in out.chunks(INDEX_ENTRY_SIZE).enumerate() {
            assert_eq!(IndexEntry::decode(bytes), entry((from + k) as u32));
        }
        // Timestamps are index / 3.
        assert_eq!(index.first_at_or_after(total as usize, 0), Some(0));
        assert_eq!(index.first_at_or_after(total as usize, 5), Some(15));
        assert_eq!(index.first_at_or_after(10, 5), None);
        assert_eq!(index.first_at_or_after(total as usize, u64::MAX), None);
        // Byte limits: each message is 100 bytes.
        assert_eq!(index.count_within(0, 10, 1000), 10);
        assert_eq!(index.count_within(0, 10, 350), 3);
        assert_eq!(
            index.count_within(3, 10, 10),
            1,
            "always at least one message"
        );
        // Message boundaries to relative offsets, across the chunk boundary too.
        assert_eq!(index.count_ending_by(0), 0);
        assert_eq!(index.count_ending_by(99), 0);
        assert_eq!(index.count_ending_by(500), 5);
        let boundary = u64::from(entry(ENTRIES_PER_CHUNK as u32).end_position);
        assert_eq!(index.count_ending_by(boundary), ENTRIES_PER_CHUNK + 1);
        assert_eq!(index.count_ending_by(u64::MAX), total as usize);
        index.truncate(3);
        assert_eq!(index.len(), 3);
        index.push(&pool, entry(3));
        assert_eq!(index.get(3), entry(3));
        drop(index);
        assert_eq!(pool.stats().in_use, 0, "chunks go back to the pool");
    }
}
