//! A partition's in-memory state: its segments, what is staged and journalled, the watermarks,
//! and the shared `Inner` the partition, its writer task and its readers hold.

use super::outcome::{ReadOutcome, WriteCounters};
use crate::storage::cache::{CacheOwner, Charge, Eviction, ReadCache};
use crate::storage::config::{AckMode, PartitionConfig};
use crate::storage::error::StorageError;
use crate::storage::index::{INDEX_ENTRY_SIZE, MemoryIndex};
use crate::storage::pool::{BLOCK_SIZE, BufferPool, PooledBuf};
use crate::storage::read_ahead::ReadAhead;
use crate::storage::segment::SegmentFiles;
use crate::storage::wait::WaitList;
use crate::storage::wal::{Wal, WalLink, WalOwner};
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::rc::{Rc, Weak};
use std::sync::Arc;

/// One segment's bookkeeping. Counts and lengths only grow while the segment is active.
pub(super) struct Segment {
    pub(super) start_offset: u64,
    /// None until the writer has created the files (a segment made by rotation).
    pub(super) files: Option<Rc<SegmentFiles>>,
    /// Fully written, truncated to its logical length, fsynced; immutable from then on.
    pub(super) sealed: bool,
    /// Everything appended (including what is only in memory).
    pub(super) accepted_count: u64,
    pub(super) accepted_len: u64,
    /// Covered by completed writes.
    pub(super) written_count: u64,
    pub(super) written_len: u64,
    /// Index entries in the `.index` file. Unsealed segments keep their index in memory and
    /// write it when they are sealed or closed (after a crash recovery rebuilds it from the
    /// log anyway), so rounds write only the log.
    pub(super) index_persisted: u64,
    pub(super) last_timestamp: u64,
    /// Present until the segment is sealed; sealed segments read their index from disk.
    pub(super) index: Option<MemoryIndex>,
}

impl Segment {
    pub(super) fn new_active(start_offset: u64, files: Option<Rc<SegmentFiles>>) -> Self {
        Segment {
            start_offset,
            files,
            sealed: false,
            accepted_count: 0,
            accepted_len: 0,
            written_count: 0,
            written_len: 0,
            index_persisted: 0,
            last_timestamp: 0,
            index: Some(MemoryIndex::new()),
        }
    }

    pub(super) fn end_offset(&self) -> u64 {
        self.start_offset + self.accepted_count
    }

    /// How many of its messages lie below `visible_end`.
    pub(super) fn visible_count(&self, visible_end: u64) -> u64 {
        visible_end
            .saturating_sub(self.start_offset)
            .min(self.accepted_count)
    }
}

/// An aligned buffer holding accepted bytes of one segment from a block-aligned position.
pub(super) struct Staged {
    pub(super) segment_start: u64,
    pub(super) file_position: u64,
    pub(super) buf: PooledBuf,
}

/// An accepted batch kept in memory for reads: not yet written (in memory mode the only copy
/// until its round), or written and held by the shard's read cache (`cached` is set).
pub(super) struct JournalEntry {
    pub(super) segment_start: u64,
    /// The offset of the batch's first message.
    pub(super) first_offset: u64,
    pub(super) position: u64,
    pub(super) bytes: Bytes,
    pub(super) cached: Option<Charge>,
    /// The 0.9 frame checksums the batch arrived with (`MessageBatch::frame_checksums`),
    /// handed to a read that returns the entry whole.
    pub(super) frame_checksums: Option<Arc<[u64]>>,
}

impl JournalEntry {
    pub(super) fn end(&self) -> u64 {
        self.position + self.bytes.len() as u64
    }
}

pub(super) struct State {
    pub(super) segments: VecDeque<Segment>,
    pub(super) next_offset: u64,
    pub(super) last_timestamp: u64,
    pub(super) staged: VecDeque<Staged>,
    /// Batches kept in memory, in log order: a prefix held by the read cache (written), then
    /// those not written yet. A segment's entries run without gaps to its accepted end.
    pub(super) journal: VecDeque<JournalEntry>,
    /// The partial last block of the active segment at the end of the last taken round: the
    /// bytes a new staging buffer starts with, so the block is rewritten whole.
    pub(super) tail: Box<[u8; BLOCK_SIZE]>,
    pub(super) tail_len: usize,
    /// Accepted but not yet taken by the writer (memory-mode thresholds).
    pub(super) pending_messages: u64,
    pub(super) pending_bytes: u64,
    /// Accepted but not yet written (backpressure).
    pub(super) unwritten_bytes: u64,
    pub(super) appenders_waiting_for_space: u64,
    /// Offsets below are covered by completed writes.
    pub(super) written_end: u64,
    /// Offsets below are in the segment files or the shard's write-ahead log (which takes
    /// `written` rounds small enough, see storage/wal): what `written` mode acknowledges.
    pub(super) logged_end: u64,
    /// The log refused the last record: the next round goes to the segment files.
    pub(super) log_refused: bool,
    /// Offsets below are durable.
    pub(super) durable_end: u64,
    /// `flush` asks the writer to write (and sync) up to these offsets regardless of mode.
    pub(super) write_requested_end: u64,
    pub(super) sync_requested_end: u64,
    /// Files written since the last sync, and the written end they cover.
    pub(super) unsynced: Vec<Rc<SegmentFiles>>,
    pub(super) unsynced_end: u64,
    pub(super) spare_sync_files: Vec<Rc<SegmentFiles>>,
    pub(super) spare_round_buffers: Vec<PooledBuf>,
    pub(super) failure: Option<StorageError>,
    pub(super) closing: bool,
    pub(super) writer_running: bool,
    pub(super) work_generation: u64,
    pub(super) writes: WriteCounters,
}

impl State {
    pub(super) fn active(&self) -> &Segment {
        self.segments
            .back()
            .expect("a partition always has an active segment")
    }

    pub(super) fn active_index_persisted(&mut self, count: u64) {
        if let Some(active) = self.segments.back_mut() {
            active.index_persisted = count;
        }
    }

    pub(super) fn segment_mut(&mut self, start_offset: u64) -> Option<&mut Segment> {
        let index = self
            .segments
            .binary_search_by_key(&start_offset, |segment| segment.start_offset)
            .ok()?;
        self.segments.get_mut(index)
    }

    pub(super) fn visible_end(&self, mode: AckMode) -> u64 {
        match mode {
            AckMode::Memory => self.next_offset,
            AckMode::Written => self.written_end.max(self.logged_end),
            AckMode::Fsync => self.durable_end,
        }
    }

    pub(super) fn first_offset(&self) -> u64 {
        self.segments
            .iter()
            .find(|segment| segment.accepted_count > 0)
            .unwrap_or_else(|| self.active())
            .start_offset
    }

    /// Where the bytes of a segment that reads take from memory begin: its first journal
    /// entry, or `written_len` when it has none (everything written is read from the file).
    pub(super) fn memory_start(&self, segment_start: u64, written_len: u64) -> u64 {
        let first = self
            .journal
            .partition_point(|entry| entry.segment_start < segment_start);
        match self.journal.get(first) {
            Some(entry) if entry.segment_start == segment_start => entry.position.min(written_len),
            _ => written_len,
        }
    }

    /// Drops the journal entries of segments that no longer exist (retention, purge).
    pub(super) fn forget_removed_segments(&mut self) {
        let segment_start = self
            .segments
            .front()
            .expect("a partition always has an active segment")
            .start_offset;
        while self
            .journal
            .front()
            .is_some_and(|entry| entry.segment_start < segment_start)
        {
            self.journal.pop_front();
        }
    }

    /// The error an operation gets once the partition cannot take writes.
    pub(super) fn unavailable(&self) -> Option<StorageError> {
        if let Some(failure) = &self.failure {
            return Some(StorageError::Failed(Box::new(failure.clone())));
        }
        if self.closing || !self.writer_running {
            return Some(StorageError::Closed);
        }
        None
    }

    /// Checks the invariants that tie the state together (debug builds; a no-op in release).
    /// Called after every change that moves offsets, counts or segments, as redb's
    /// `debug_check_consistency`: a bug shows where it happens, not pages of reads later.
    pub(super) fn check_consistency(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let active = self.active();
        assert_eq!(
            active.end_offset(),
            self.next_offset,
            "the active segment ends at the next offset"
        );
        for pair in self.segments.iter().zip(self.segments.iter().skip(1)) {
            // Ordered and not overlapping; a gap is possible where recovery cut a damaged
            // sealed segment short.
            assert!(
                pair.0.start_offset < pair.1.start_offset
                    && pair.0.end_offset() <= pair.1.start_offset,
                "segments [{}, {}) and [{}, ..) are out of order",
                pair.0.start_offset,
                pair.0.end_offset(),
                pair.1.start_offset
            );
        }
        for segment in &self.segments {
            assert!(segment.written_count <= segment.accepted_count);
            assert!(segment.written_len <= segment.accepted_len);
            assert!(segment.index_persisted <= segment.accepted_count);
            if let Some(index) = &segment.index {
                assert_eq!(
                    index.len() as u64,
                    segment.accepted_count,
                    "one index entry per accepted message of segment {}",
                    segment.start_offset
                );
            }
        }
        assert!(
            self.durable_end <= self.written_end && self.written_end <= self.next_offset,
            "watermarks in order: durable {} <= written {} <= next {}",
            self.durable_end,
            self.written_end,
            self.next_offset
        );
        assert!(
            self.logged_end <= self.next_offset,
            "logged {} beyond next {}",
            self.logged_end,
            self.next_offset
        );
        assert!(self.tail_len < BLOCK_SIZE, "the tail is a partial block");
        // The journal's ends only (it can hold a million batches): entries in log order,
        // cached ones first and written, none of a segment that no longer exists.
        let ends = self
            .journal
            .iter()
            .take(4)
            .chain(self.journal.iter().rev().take(4));
        for entry in ends {
            let segment = self
                .segments
                .binary_search_by_key(&entry.segment_start, |segment| segment.start_offset)
                .map(|index| &self.segments[index])
                .unwrap_or_else(|_| {
                    panic!("journal entry of a removed segment {}", entry.segment_start)
                });
            assert!(
                entry.end() <= segment.accepted_len,
                "journal entry beyond the accepted end"
            );
            if entry.cached.is_some() {
                assert!(
                    entry.end() <= segment.written_len,
                    "a cached entry is written"
                );
            }
        }
        for pair in self.journal.iter().zip(self.journal.iter().skip(1)).take(4) {
            assert!(
                (pair.0.segment_start, pair.0.end()) <= (pair.1.segment_start, pair.1.position),
                "journal entries in log order"
            );
            assert!(
                pair.0.cached.is_some() || pair.1.cached.is_none(),
                "cached entries first"
            );
        }
    }

    pub(super) fn kick_writer(&mut self) {
        self.work_generation += 1;
    }
}

pub(super) struct Inner {
    pub(super) dir: PathBuf,
    pub(super) config: PartitionConfig,
    pub(super) pool: Rc<BufferPool>,
    /// The shard's read cache (the pool's).
    pub(super) cache: Rc<ReadCache>,
    /// This partition, as the cache's queue names it.
    pub(super) me: Weak<Inner>,
    pub(super) state: RefCell<State>,
    /// Woken whenever a watermark moves, the writer stops, or space frees up.
    pub(super) progress: WaitList,
    /// The writer waits here for work.
    pub(super) work: WaitList,
    pub(super) direct_io: Cell<bool>,
    /// The shard's write-ahead log, when this partition may use it: `written` mode, a log
    /// configured, and a directory inside the log's data directory (`wal_dir`, relative).
    pub(super) wal: Option<Rc<Wal>>,
    pub(super) wal_dir: Option<String>,
    /// What the partition was given of the logs, handed on when it is opened again.
    pub(super) link: WalLink,
    /// This log's incarnation (storage/wal/incarnation.rs), carried by its records.
    pub(super) incarnation: Cell<u64>,
    /// Polls read before they were asked for (storage/read_ahead.rs), and whether each went
    /// to the files (only those read further ahead when taken).
    pub(super) read_ahead: ReadAhead<(ReadOutcome, bool)>,
    /// Index entries of a sealed segment read ahead of the reads needing them.
    pub(super) index_window: RefCell<IndexWindow>,
}

impl Inner {
    /// The log this partition's small rounds go to, if any.
    pub(super) fn log(&self) -> Option<&Rc<Wal>> {
        self.wal.as_ref().filter(|_| self.wal_dir.is_some())
    }
}

impl WalOwner for Inner {
    fn in_segments_through(&self) -> Option<u64> {
        self.state.try_borrow().ok().map(|state| state.written_end)
    }

    fn write_soon(&self) {
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state.write_requested_end = state.write_requested_end.max(state.next_offset);
            state.kick_writer();
        }
        self.work.notify_all();
    }
}

impl CacheOwner for Inner {
    fn evict(&self, seq: u64) -> Eviction {
        let Ok(mut state) = self.state.try_borrow_mut() else {
            return Eviction::Busy;
        };
        let front = state
            .journal
            .front()
            .and_then(|entry| entry.cached.as_ref());
        match front.map(Charge::seq) {
            Some(front) if front == seq => {
                state.journal.pop_front();
                Eviction::Evicted
            }
            // Cached batches are evicted in the order they were cached: an older one still
            // here would mean a lost token.
            Some(front) => {
                debug_assert!(
                    front > seq,
                    "cached batch {front} outlived the eviction of {seq}"
                );
                Eviction::Gone
            }
            None => Eviction::Gone,
        }
    }

    fn may_hold(&self, seq: u64) -> bool {
        let Ok(state) = self.state.try_borrow() else {
            return true;
        };
        state
            .journal
            .front()
            .and_then(|entry| entry.cached.as_ref())
            .is_some_and(|front| front.seq() <= seq)
    }
}

/// Index entries of a sealed segment read beyond what one read needed, for the reads after it:
/// a consumer reading a sealed segment needs one index read every few polls rather than one
/// before each (on this project's VM the index read left the disk idle for a third of a 1 MB
/// poll). One per partition, replaced when a read needs other entries.
#[derive(Default)]
pub(super) struct IndexWindow {
    held: Option<(Weak<SegmentFiles>, u64, Bytes)>,
}

impl IndexWindow {
    /// Entries read at once from a sealed segment's index, at most (128 KiB).
    pub(super) const ENTRIES: u64 = 8192;

    pub(super) fn hold(&mut self, files: &Rc<SegmentFiles>, first: u64, entries: Bytes) {
        self.held = Some((Rc::downgrade(files), first, entries));
    }

    /// Entries `first..end` of `files`' index, when the window holds them.
    pub(super) fn get(&self, files: &Rc<SegmentFiles>, first: u64, end: u64) -> Option<Bytes> {
        let (of, start, bytes) = self.held.as_ref()?;
        let len = bytes.len() as u64 / INDEX_ENTRY_SIZE as u64;
        (std::ptr::eq(of.as_ptr(), Rc::as_ptr(files)) && first >= *start && end <= start + len)
            .then(|| {
                let entry = INDEX_ENTRY_SIZE as u64;
                bytes.slice(((first - start) * entry) as usize..((end - start) * entry) as usize)
            })
    }
}
