//! A partition: its segments, the append path, the writer task, reads, retention.
//!
//! All state lives in one `RefCell<State>` that is borrowed only between awaits. Appends do
//! their work (stamp, index, copy into staging buffers) synchronously, then wait on a
//! watermark; a per-partition writer task does all file writes, syncs, seals and creations;
//! reads plan under a short borrow and then do their own I/O, never waiting for the writer.

use super::config::{AckMode, MAX_BATCH_BYTES, MIN_WRITE_BUFFER_BYTES, PartitionConfig};
use super::error::{IoOperation, StorageError};
use super::file::{DirectFile, sync_directory};
use super::index::{INDEX_ENTRY_SIZE, IndexEntry, MemoryIndex};
use super::pool::{BLOCK_SIZE, BufferPool, PooledBuf, align_down, align_up};
use super::segment::{
    CLEAN_SHUTDOWN_MARKER, SegmentFiles, check_sealed, decode_clean_marker, encode_clean_marker,
    index_path, log_path, parse_log_name, recover_segment,
};
use super::wait::{WaitList, join2};
use bytes::Bytes;
use compio::runtime::JoinHandle;
use rill_core::message::{HEADER_SIZE, MessageBatch, MessageIter, MessageView, stamp};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;

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

    fn empty(offset: u64) -> Self {
        ReadOutcome {
            first_offset: offset,
            last_offset: offset,
            count: 0,
            bytes: Vec::new(),
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
    fn record_round(&mut self, messages: u64, bytes: u64) {
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

/// One segment's bookkeeping. Counts and lengths only grow while the segment is active.
struct Segment {
    start_offset: u64,
    /// None until the writer has created the files (a segment made by rotation).
    files: Option<Rc<SegmentFiles>>,
    /// Fully written, truncated to its logical length, fsynced; immutable from then on.
    sealed: bool,
    /// Everything appended (including what is only in memory).
    accepted_count: u64,
    accepted_len: u64,
    /// Covered by completed writes.
    written_count: u64,
    written_len: u64,
    /// Index entries in the `.index` file. Unsealed segments keep their index in memory and
    /// write it when they are sealed or closed (after a crash recovery rebuilds it from the
    /// log anyway), so rounds write only the log.
    index_persisted: u64,
    last_timestamp: u64,
    /// Present until the segment is sealed; sealed segments read their index from disk.
    index: Option<MemoryIndex>,
}

impl Segment {
    fn new_active(start_offset: u64, files: Option<Rc<SegmentFiles>>) -> Self {
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

    fn end_offset(&self) -> u64 {
        self.start_offset + self.accepted_count
    }

    /// How many of its messages lie below `visible_end`.
    fn visible_count(&self, visible_end: u64) -> u64 {
        visible_end
            .saturating_sub(self.start_offset)
            .min(self.accepted_count)
    }
}

/// An aligned buffer holding accepted bytes of one segment from a block-aligned position.
struct Staged {
    segment_start: u64,
    file_position: u64,
    buf: PooledBuf,
}

/// Memory mode only: an accepted, not yet written batch, kept for reads.
struct JournalEntry {
    segment_start: u64,
    position: u64,
    bytes: Bytes,
}

struct State {
    segments: VecDeque<Segment>,
    next_offset: u64,
    last_timestamp: u64,
    staged: VecDeque<Staged>,
    journal: VecDeque<JournalEntry>,
    /// The partial last block of the active segment at the end of the last taken round: the
    /// bytes a new staging buffer starts with, so the block is rewritten whole.
    tail: Box<[u8; BLOCK_SIZE]>,
    tail_len: usize,
    /// Accepted but not yet taken by the writer (memory-mode thresholds).
    pending_messages: u64,
    pending_bytes: u64,
    /// Accepted but not yet written (backpressure).
    unwritten_bytes: u64,
    appenders_waiting_for_space: u64,
    /// Offsets below are covered by completed writes.
    written_end: u64,
    /// Offsets below are durable.
    durable_end: u64,
    /// `flush` asks the writer to write (and sync) up to these offsets regardless of mode.
    write_requested_end: u64,
    sync_requested_end: u64,
    /// Files written since the last sync, and the written end they cover.
    unsynced: Vec<Rc<SegmentFiles>>,
    unsynced_end: u64,
    spare_sync_files: Vec<Rc<SegmentFiles>>,
    spare_round_buffers: Vec<PooledBuf>,
    failure: Option<StorageError>,
    closing: bool,
    writer_running: bool,
    work_generation: u64,
    writes: WriteCounters,
}

impl State {
    fn active(&self) -> &Segment {
        self.segments
            .back()
            .expect("a partition always has an active segment")
    }

    fn active_index_persisted(&mut self, count: u64) {
        if let Some(active) = self.segments.back_mut() {
            active.index_persisted = count;
        }
    }

    fn segment_mut(&mut self, start_offset: u64) -> Option<&mut Segment> {
        let index = self
            .segments
            .binary_search_by_key(&start_offset, |segment| segment.start_offset)
            .ok()?;
        self.segments.get_mut(index)
    }

    fn visible_end(&self, mode: AckMode) -> u64 {
        match mode {
            AckMode::Memory => self.next_offset,
            AckMode::Written => self.written_end,
            AckMode::Fsync => self.durable_end,
        }
    }

    fn first_offset(&self) -> u64 {
        self.segments
            .iter()
            .find(|segment| segment.accepted_count > 0)
            .unwrap_or_else(|| self.active())
            .start_offset
    }

    /// The error an operation gets once the partition cannot take writes.
    fn unavailable(&self) -> Option<StorageError> {
        if let Some(failure) = &self.failure {
            return Some(StorageError::Failed(Box::new(failure.clone())));
        }
        if self.closing || !self.writer_running {
            return Some(StorageError::Closed);
        }
        None
    }

    fn kick_writer(&mut self) {
        self.work_generation += 1;
    }
}

struct Inner {
    dir: PathBuf,
    config: PartitionConfig,
    pool: Rc<BufferPool>,
    state: RefCell<State>,
    /// Woken whenever a watermark moves, the writer stops, or space frees up.
    progress: WaitList,
    /// The writer waits here for work.
    work: WaitList,
    direct_io: Cell<bool>,
}

/// A partition log owned by one shard. Share it as `Rc<Partition>`: every method takes `&self`.
///
/// Dropping a partition without [`Partition::close`] stops its writer at once, like a crash:
/// what was only in memory is lost and recovery repairs the files on the next open.
pub struct Partition {
    inner: Rc<Inner>,
    writer: RefCell<Option<JoinHandle<()>>>,
}

impl Partition {
    /// Creates an empty partition in `dir` (created if missing), starting at offset 0.
    pub async fn create(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
    ) -> Result<Partition, StorageError> {
        config.validate()?;
        compio::fs::create_dir_all(&dir)
            .await
            .map_err(|error| StorageError::io(IoOperation::Directory, &dir, error))?;
        if !list_segments(&dir)?.is_empty() {
            return Err(StorageError::AlreadyExists(dir));
        }
        // A marker left from an earlier partition in this directory must not vouch for ours.
        match std::fs::remove_file(dir.join(CLEAN_SHUTDOWN_MARKER)) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StorageError::io(IoOperation::Remove, &dir, error)),
        }
        let files = SegmentFiles::open(&dir, 0, true).await?;
        sync_directory(&dir).await?;
        if let Some(parent) = dir.parent() {
            sync_directory(parent).await?;
        }
        let direct = files.log.is_direct();
        let segment = Segment::new_active(0, Some(Rc::new(files)));
        Ok(Partition::start(
            dir,
            config,
            pool,
            VecDeque::from([segment]),
            0,
            Vec::new(),
            direct,
        ))
    }

    /// Opens an existing partition, validating and repairing it (see the module docs).
    pub async fn open(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
    ) -> Result<(Partition, RecoveryReport), StorageError> {
        config.validate()?;
        if !dir.is_dir() {
            return Err(StorageError::NotFound(dir));
        }
        let starts = list_segments(&dir)?;
        if starts.is_empty() {
            tracing::warn!(dir = %dir.display(), "partition directory holds no segments; starting empty at offset 0");
            let partition = Partition::create(dir, config, pool).await?;
            let report = RecoveryReport {
                segments_count: 1,
                ..RecoveryReport::default()
            };
            return Ok((partition, report));
        }
        // The marker vouches for the files only until the next write: remove it first.
        let marker_path = dir.join(CLEAN_SHUTDOWN_MARKER);
        let marker = match std::fs::read(&marker_path) {
            Ok(bytes) => {
                std::fs::remove_file(&marker_path)
                    .map_err(|error| StorageError::io(IoOperation::Remove, &marker_path, error))?;
                sync_directory(&dir).await?;
                decode_clean_marker(&bytes)
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => return Err(StorageError::io(IoOperation::Read, &marker_path, error)),
        };
        let mut report = RecoveryReport::default();
        let mut segments = VecDeque::with_capacity(starts.len());
        let mut tail = Vec::new();
        let mut direct = true;
        for (position, &start) in starts.iter().enumerate() {
            let last = position + 1 == starts.len();
            let files = SegmentFiles::open(&dir, start, false).await?;
            direct &= files.log.is_direct();
            if !last && let Some(summary) = check_sealed(&files, start).await? {
                files.index.close();
                segments.push_back(Segment {
                    start_offset: start,
                    files: Some(Rc::new(files)),
                    sealed: true,
                    accepted_count: summary.count,
                    accepted_len: summary.len,
                    written_count: summary.count,
                    written_len: summary.len,
                    index_persisted: summary.count,
                    last_timestamp: summary.last_timestamp,
                    index: None,
                });
                continue;
            }
            let closed_cleanly =
                last && marker.is_some_and(|(marker_start, _, _)| marker_start == start);
            if last && !closed_cleanly {
                tracing::warn!(
                    segment = %log_path(&dir, start).display(),
                    "partition was not closed cleanly; validating every message of the active segment"
                );
            }
            let recovered = recover_segment(&files, start, &pool, last, closed_cleanly).await?;
            let changed = recovered.truncated_log_bytes > 0
                || recovered.dropped_index_entries > 0
                || recovered.rebuilt_index_entries > 0;
            if changed {
                report.repaired_segments += 1;
                report.truncated_log_bytes += recovered.truncated_log_bytes;
                report.dropped_index_entries += recovered.dropped_index_entries;
                report.rebuilt_index_entries += recovered.rebuilt_index_entries;
            }
            if !last {
                tracing::warn!(
                    segment = %log_path(&dir, start).display(),
                    messages = recovered.count,
                    truncated_log_bytes = recovered.truncated_log_bytes,
                    "sealed segment was inconsistent and has been validated and repaired"
                );
                if recovered.count == 0 {
                    drop(files);
                    remove_segment_files(&dir, start).await?;
                    report.removed_empty_segments += 1;
                    continue;
                }
            } else {
                // Whatever a crash left in the device cache is made durable now, so the fsync
                // watermark can start at the end of the recovered data.
                files.log.sync_all().await?;
                files.index.get().await?.sync_all().await?;
                tail = recovered.tail;
            }
            files.index.close();
            segments.push_back(Segment {
                start_offset: start,
                files: Some(Rc::new(files)),
                sealed: !last,
                accepted_count: recovered.count,
                accepted_len: recovered.len,
                written_count: recovered.count,
                written_len: recovered.len,
                index_persisted: recovered.count,
                last_timestamp: recovered.last_timestamp,
                index: recovered.index,
            });
        }
        for pair in segments.iter().collect::<Vec<_>>().windows(2) {
            let (earlier, later) = (pair[0], pair[1]);
            if earlier.end_offset() > later.start_offset {
                return Err(StorageError::Corrupted {
                    path: log_path(&dir, later.start_offset),
                    position: 0,
                    reason: "segment offsets overlap the previous segment",
                });
            }
            if earlier.end_offset() < later.start_offset {
                tracing::warn!(
                    from = earlier.end_offset(),
                    to = later.start_offset,
                    dir = %dir.display(),
                    "offsets missing between segments (a damaged sealed segment was truncated)"
                );
            }
        }
        let next_offset = segments.back().expect("at least one segment").end_offset();
        let last_timestamp = segments
            .iter()
            .map(|segment| segment.last_timestamp)
            .max()
            .unwrap_or(0);
        report.segments_count = segments.len() as u32;
        report.messages_count = segments.iter().map(|segment| segment.accepted_count).sum();
        report.next_offset = next_offset;
        if report.repaired_segments > 0 || report.removed_empty_segments > 0 {
            tracing::warn!(
                dir = %dir.display(),
                segments = report.segments_count,
                messages = report.messages_count,
                next_offset,
                repaired_segments = report.repaired_segments,
                truncated_log_bytes = report.truncated_log_bytes,
                dropped_index_entries = report.dropped_index_entries,
                rebuilt_index_entries = report.rebuilt_index_entries,
                removed_empty_segments = report.removed_empty_segments,
                "partition recovered: cut torn data (and preallocated space) after the last valid message"
            );
        } else {
            tracing::info!(
                dir = %dir.display(),
                segments = report.segments_count,
                messages = report.messages_count,
                next_offset,
                "partition opened clean"
            );
        }
        let partition = Partition::start(dir, config, pool, segments, last_timestamp, tail, direct);
        Ok((partition, report))
    }

    fn start(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
        segments: VecDeque<Segment>,
        last_timestamp: u64,
        tail: Vec<u8>,
        direct: bool,
    ) -> Partition {
        let next_offset = segments.back().expect("an active segment").end_offset();
        assert!(tail.len() < BLOCK_SIZE);
        assert_eq!(
            tail.len() as u64,
            segments.back().expect("an active segment").accepted_len % BLOCK_SIZE as u64
        );
        let mut tail_block = Box::new([0u8; BLOCK_SIZE]);
        tail_block[..tail.len()].copy_from_slice(&tail);
        let state = State {
            segments,
            next_offset,
            last_timestamp,
            staged: VecDeque::new(),
            journal: VecDeque::new(),
            tail: tail_block,
            tail_len: tail.len(),
            pending_messages: 0,
            pending_bytes: 0,
            unwritten_bytes: 0,
            appenders_waiting_for_space: 0,
            written_end: next_offset,
            durable_end: next_offset,
            write_requested_end: 0,
            sync_requested_end: 0,
            unsynced: Vec::new(),
            unsynced_end: 0,
            spare_sync_files: Vec::new(),
            spare_round_buffers: Vec::new(),
            failure: None,
            closing: false,
            writer_running: true,
            work_generation: 0,
            writes: WriteCounters::default(),
        };
        let inner = Rc::new(Inner {
            dir,
            config,
            pool,
            state: RefCell::new(state),
            progress: WaitList::default(),
            work: WaitList::default(),
            direct_io: Cell::new(direct),
        });
        let writer = compio::runtime::spawn(writer_loop(Rc::clone(&inner)));
        Partition {
            inner,
            writer: RefCell::new(Some(writer)),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn config(&self) -> &PartitionConfig {
        &self.inner.config
    }

    /// Whether the segment files use O_DIRECT (false after the buffered fallback).
    pub fn uses_direct_io(&self) -> bool {
        self.inner.direct_io.get()
    }

    /// Stamps the batch (offsets, one timestamp, random ids for id 0, checksums), appends it,
    /// and returns once the partition's ack mode is satisfied. Appends are stored in the order
    /// they are accepted, which is the order of the calls.
    pub async fn append(
        &self,
        batch: MessageBatch,
        timestamp_micros: u64,
    ) -> Result<AppendOutcome, StorageError> {
        if batch.is_empty() {
            return Err(StorageError::InvalidBatch(
                "a batch needs at least one message",
            ));
        }
        let size = batch.size() as u64;
        if size > MAX_BATCH_BYTES {
            return Err(StorageError::BatchTooLarge {
                size_bytes: size,
                max_bytes: MAX_BATCH_BYTES,
            });
        }
        self.wait_for_space(size).await;
        let inner = &*self.inner;
        let outcome = {
            let mut state = inner.state.borrow_mut();
            if let Some(error) = state.unavailable() {
                return Err(error);
            }
            accept(inner, &mut state, batch, timestamp_micros)?
        };
        inner.work.notify_all();
        let last = outcome.last_offset;
        let mode = inner.config.ack_mode;
        if mode == AckMode::Memory {
            return Ok(outcome);
        }
        inner
            .progress
            .wait_until(|| {
                let state = inner.state.borrow();
                state.visible_end(mode) > last || state.unavailable().is_some()
            })
            .await;
        let state = inner.state.borrow();
        if state.visible_end(mode) > last {
            Ok(outcome)
        } else {
            Err(state.unavailable().unwrap_or(StorageError::Closed))
        }
    }

    /// Backpressure: waits while accepting `size` more bytes would leave more than
    /// `max_unwritten_bytes` unwritten (a lone batch is always let through).
    async fn wait_for_space(&self, size: u64) {
        let inner = &*self.inner;
        let has_space = || {
            let state = inner.state.borrow();
            state.unwritten_bytes == 0
                || state.unwritten_bytes + size <= inner.config.max_unwritten_bytes
                || state.unavailable().is_some()
        };
        if has_space() {
            return;
        }
        struct Waiting<'a>(&'a Inner);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.state.borrow_mut().appenders_waiting_for_space -= 1;
            }
        }
        {
            let mut state = inner.state.borrow_mut();
            state.appenders_waiting_for_space += 1;
            state.kick_writer();
        }
        let _waiting = Waiting(inner);
        inner.work.notify_all();
        inner.progress.wait_until(has_space).await;
    }

    /// Up to `max_count` messages from `start_offset` (or from the first stored message when
    /// `start_offset` is older), never past the visibility watermark and at most
    /// `max_read_bytes` (but always at least one message when one is visible).
    pub async fn read(
        &self,
        start_offset: u64,
        max_count: u32,
    ) -> Result<ReadOutcome, StorageError> {
        let inner = &*self.inner;
        let mut outcome = ReadOutcome::empty(start_offset);
        let mut next = start_offset;
        let mut remaining = u64::from(max_count);
        let mut budget = inner.config.max_read_bytes;
        let mut total = 0u64;
        // A plan ends at the first sealed segment whose index is on disk (its byte sizes are
        // unknown until the index is read); the rest of the read is planned afterwards.
        loop {
            let (start, pieces) = {
                let state = inner.state.borrow();
                plan_read(inner, &state, next, remaining, budget, total > 0)?
            };
            if total == 0 {
                outcome.first_offset = start;
                outcome.last_offset = start;
            }
            let continues = matches!(pieces.last(), Some(ReadPiece::DiskIndexed { .. }));
            if pieces.is_empty() {
                break;
            }
            let total_before = total;
            for piece in pieces {
                let (first_offset, bytes) = match piece {
                    ReadPiece::Memory(bytes) => {
                        let first = MessageView::parse(&bytes)
                            .map(|message| message.offset())
                            .unwrap_or_default();
                        (first, bytes)
                    }
                    ReadPiece::Disk {
                        files,
                        start,
                        end,
                        first_offset,
                    } => {
                        let bytes = files.log.read_range(start, end).await?;
                        check_stored(&bytes, first_offset, files.log.path(), start)?;
                        (first_offset, bytes)
                    }
                    ReadPiece::DiskIndexed {
                        files,
                        relative,
                        count,
                        first_offset,
                    } => {
                        let bytes = read_with_disk_index(
                            &files,
                            relative,
                            count,
                            budget,
                            total == 0,
                            first_offset,
                        )
                        .await?;
                        (first_offset, bytes)
                    }
                };
                let count = MessageIter::new(&bytes).count() as u64;
                if count == 0 {
                    continue;
                }
                if total == 0 {
                    outcome.first_offset = first_offset;
                }
                outcome.last_offset = first_offset + count - 1;
                total += count;
                remaining -= count;
                budget = budget.saturating_sub(bytes.len() as u64);
                outcome.bytes.push(bytes);
            }
            next = outcome.last_offset + 1;
            // Stop when the plan is done, the count or byte budget is used up, or the last
            // piece returned nothing (the next message does not fit the budget).
            if !continues || remaining == 0 || budget == 0 || total == total_before {
                break;
            }
        }
        outcome.count = u32::try_from(total).expect("reads are bounded by a u32 count");
        Ok(outcome)
    }

    /// The offset of the first visible message whose timestamp is at least `timestamp_micros`.
    pub async fn offset_for_timestamp(
        &self,
        timestamp_micros: u64,
    ) -> Result<Option<u64>, StorageError> {
        let inner = &*self.inner;
        let candidate = {
            let state = inner.state.borrow();
            let visible_end = state.visible_end(inner.config.ack_mode);
            let mut candidate = None;
            for segment in &state.segments {
                let visible = segment.visible_count(visible_end);
                if visible == 0 {
                    continue;
                }
                if let Some(index) = &segment.index {
                    if let Some(found) = index.first_at_or_after(visible as usize, timestamp_micros)
                    {
                        return Ok(Some(segment.start_offset + found as u64));
                    }
                    continue;
                }
                if segment.last_timestamp < timestamp_micros {
                    continue;
                }
                let files = segment.files.clone().expect("sealed segments have files");
                candidate = Some((files, segment.start_offset, visible));
                break;
            }
            candidate
        };
        let Some((files, start_offset, count)) = candidate else {
            return Ok(None);
        };
        let found = search_index_file(&files, count, timestamp_micros).await?;
        Ok(found.map(|relative| start_offset + relative))
    }

    /// The offset of the oldest stored message (the next offset when the partition is empty).
    pub fn first_offset(&self) -> u64 {
        self.inner.state.borrow().first_offset()
    }

    /// The offset of the last visible message; None when no message is visible.
    pub fn current_offset(&self) -> Option<u64> {
        let state = self.inner.state.borrow();
        let visible_end = state.visible_end(self.inner.config.ack_mode);
        (visible_end > state.first_offset()).then(|| visible_end - 1)
    }

    /// The offset the next accepted message gets.
    pub fn next_offset(&self) -> u64 {
        self.inner.state.borrow().next_offset
    }

    pub fn stats(&self) -> PartitionStats {
        let state = self.inner.state.borrow();
        let visible_end = state.visible_end(self.inner.config.ack_mode);
        let mut stats = PartitionStats {
            segments_count: state.segments.len() as u32,
            size_bytes: 0,
            messages_count: 0,
            current_offset: None,
            writes: state.writes,
        };
        for segment in &state.segments {
            let visible = segment.visible_count(visible_end);
            stats.messages_count += visible;
            stats.size_bytes += match &segment.index {
                Some(index) if visible < segment.accepted_count => {
                    index.start_position(visible as usize)
                }
                _ => segment.accepted_len,
            };
        }
        stats.current_offset = (visible_end > state.first_offset()).then(|| visible_end - 1);
        stats
    }

    /// Writes everything accepted so far (whatever the mode), and with `fsync` makes it
    /// durable. Memory mode calls this from a timer every `memory_flush_interval`.
    pub async fn flush(&self, fsync: bool) -> Result<(), StorageError> {
        let inner = &*self.inner;
        let target = {
            let mut state = inner.state.borrow_mut();
            let target = state.next_offset;
            state.write_requested_end = state.write_requested_end.max(target);
            if fsync {
                state.sync_requested_end = state.sync_requested_end.max(target);
            }
            state.kick_writer();
            target
        };
        inner.work.notify_all();
        let done = || {
            let state = inner.state.borrow();
            state.written_end >= target && (!fsync || state.durable_end >= target)
        };
        inner
            .progress
            .wait_until(|| done() || inner.state.borrow().unavailable().is_some())
            .await;
        if done() {
            Ok(())
        } else {
            Err(inner
                .state
                .borrow()
                .unavailable()
                .unwrap_or(StorageError::Closed))
        }
    }

    /// Deletes up to `count` of the oldest sealed segments (never the active one). Returns how
    /// many were deleted.
    pub async fn delete_oldest_segments(&self, count: u32) -> Result<u32, StorageError> {
        let victims = {
            let mut state = self.inner.state.borrow_mut();
            let mut victims = Vec::new();
            while victims.len() < count as usize
                && state.segments.len() > 1
                && state.segments.front().is_some_and(|segment| segment.sealed)
            {
                victims.push(state.segments.pop_front().expect("checked"));
            }
            victims
        };
        let deleted = victims.len() as u32;
        self.remove_segments(victims).await?;
        Ok(deleted)
    }

    /// Removes every stored message. Offsets keep increasing from where they were (unlike
    /// upstream, which restarts at 0): consumer offsets stored elsewhere then never point at
    /// different messages than they did, and nothing downstream sees an offset twice.
    pub async fn purge(&self) -> Result<(), StorageError> {
        let inner = &*self.inner;
        let target = {
            let mut state = inner.state.borrow_mut();
            if let Some(error) = state.unavailable() {
                return Err(error);
            }
            if state.active().accepted_count > 0 {
                rotate(&mut state);
            }
            state.kick_writer();
            state.active().start_offset
        };
        inner.work.notify_all();
        // The writer writes and seals everything before the new segment and creates the new
        // segment's files, so a restart can never go back to older offsets.
        let ready = || {
            let state = inner.state.borrow();
            state.segments.iter().all(|segment| {
                if segment.start_offset < target {
                    segment.sealed
                } else {
                    segment.files.is_some()
                }
            })
        };
        inner
            .progress
            .wait_until(|| ready() || inner.state.borrow().unavailable().is_some())
            .await;
        if !ready() {
            return Err(inner
                .state
                .borrow()
                .unavailable()
                .unwrap_or(StorageError::Closed));
        }
        let victims = {
            let mut state = inner.state.borrow_mut();
            let mut victims = Vec::new();
            while state
                .segments
                .front()
                .is_some_and(|segment| segment.start_offset < target)
            {
                victims.push(state.segments.pop_front().expect("checked"));
            }
            victims
        };
        self.remove_segments(victims).await
    }

    /// Deletes sealed segments whose newest message is older than `message_expiry`, then the
    /// oldest sealed segments while the partition is larger than `max_size_bytes`. The active
    /// segment is never deleted.
    pub async fn apply_retention(&self, now_micros: u64) -> Result<RetentionOutcome, StorageError> {
        let config = &self.inner.config;
        let victims = {
            let mut state = self.inner.state.borrow_mut();
            let mut victims = Vec::new();
            let deletable = |state: &State| {
                state.segments.len() > 1
                    && state.segments.front().is_some_and(|segment| segment.sealed)
            };
            if let Some(expiry) = config.message_expiry {
                let expiry_micros = u64::try_from(expiry.as_micros()).unwrap_or(u64::MAX);
                while deletable(&state)
                    && state.segments.front().is_some_and(|segment| {
                        segment.last_timestamp.saturating_add(expiry_micros) <= now_micros
                    })
                {
                    victims.push(state.segments.pop_front().expect("checked"));
                }
            }
            if let Some(max_size) = config.max_size_bytes {
                let mut total: u64 = state
                    .segments
                    .iter()
                    .map(|segment| segment.accepted_len)
                    .sum();
                while total > max_size && deletable(&state) {
                    let segment = state.segments.pop_front().expect("checked");
                    total -= segment.accepted_len;
                    victims.push(segment);
                }
            }
            victims
        };
        let outcome = RetentionOutcome {
            segments_deleted: victims.len() as u32,
            messages_deleted: victims.iter().map(|segment| segment.accepted_count).sum(),
            bytes_deleted: victims.iter().map(|segment| segment.accepted_len).sum(),
        };
        if outcome.segments_deleted > 0 {
            tracing::info!(
                dir = %self.inner.dir.display(),
                segments = outcome.segments_deleted,
                messages = outcome.messages_deleted,
                bytes = outcome.bytes_deleted,
                "retention deleted segments"
            );
        }
        self.remove_segments(victims).await?;
        Ok(outcome)
    }

    async fn remove_segments(&self, victims: Vec<Segment>) -> Result<(), StorageError> {
        if victims.is_empty() {
            return Ok(());
        }
        let mut result = Ok(());
        for segment in victims {
            let start = segment.start_offset;
            // Reads still holding the files keep working on the unlinked inodes.
            drop(segment);
            if let Err(error) = remove_segment_files(&self.inner.dir, start).await {
                tracing::error!(%error, "could not remove a deleted segment's files");
                if result.is_ok() {
                    result = Err(error);
                }
            }
        }
        sync_directory(&self.inner.dir).await?;
        result
    }

    /// Graceful shutdown: writes everything accepted, seals what needs sealing, truncates the
    /// active segment's files to their logical length (dropping preallocated space), fsyncs
    /// files and directory, and stops the writer. Appends fail afterwards; reads still work.
    pub async fn close(&self) -> Result<(), StorageError> {
        {
            let mut state = self.inner.state.borrow_mut();
            state.closing = true;
            state.kick_writer();
        }
        self.inner.work.notify_all();
        let writer = self.writer.borrow_mut().take();
        if let Some(writer) = writer {
            // A panic in the writer was already turned into a failure by its guard.
            let _ = writer.await;
        }
        let state = self.inner.state.borrow();
        match &state.failure {
            Some(failure) => Err(StorageError::Failed(Box::new(failure.clone()))),
            None => Ok(()),
        }
    }

    /// Whether a write, sync or file operation failed: appends are refused until the partition
    /// is reopened with [`Partition::reopen_after_failure`]. Reads keep working.
    pub fn is_failed(&self) -> bool {
        self.inner.state.borrow().failure.is_some()
    }

    /// After a failure: cuts the files back to what this instance can vouch for and opens the
    /// partition again from disk (recovery as after a crash). Fails, leaving this instance as
    /// it is, while the fault persists (the cut needs a truncate and an fsync).
    ///
    /// What is kept: everything below the acknowledgement watermark of the partition's ack
    /// mode, that is every acknowledged message. In `fsync` mode that is the durable end: data
    /// written but not covered by a successful fsync (the write of a round whose fsync failed,
    /// or later rounds) is cut, never assumed durable because a later fsync succeeds
    /// ("fsyncgate"); its appends got an error, so a client retry writes it again. In `written`
    /// and `memory` modes it is the end of completed writes (a failed fsync there only fails
    /// the flush that asked for it). Sealed segments were fsynced when sealed and are kept.
    pub async fn reopen_after_failure(&self) -> Result<(Partition, RecoveryReport), StorageError> {
        assert!(
            self.is_failed(),
            "reopen_after_failure on a healthy partition"
        );
        let writer = self.writer.borrow_mut().take();
        if let Some(writer) = writer {
            let _ = writer.await;
        }
        let inner = &*self.inner;
        // (segment start, Some((log length, message count)) to cut to, or None to remove).
        let cuts: Vec<(u64, Option<(u64, u64)>)> = {
            let state = inner.state.borrow();
            let watermark = match inner.config.ack_mode {
                AckMode::Fsync => state.durable_end,
                AckMode::Written | AckMode::Memory => state.written_end,
            };
            let sealed_end = state
                .segments
                .iter()
                .filter(|segment| segment.sealed)
                .map(Segment::end_offset)
                .max()
                .unwrap_or(0);
            let keep_end = watermark.max(sealed_end);
            let mut kept_one = state.segments.iter().any(|segment| segment.sealed);
            let mut cuts = Vec::new();
            for segment in state.segments.iter().filter(|segment| !segment.sealed) {
                if segment.start_offset > keep_end && kept_one {
                    cuts.push((segment.start_offset, None));
                    continue;
                }
                kept_one = true;
                let count = keep_end
                    .saturating_sub(segment.start_offset)
                    .min(segment.accepted_count);
                let len = match &segment.index {
                    Some(index) => index.start_position(count as usize),
                    None => segment.accepted_len,
                };
                cuts.push((segment.start_offset, Some((len, count))));
            }
            cuts
        };
        for (start, cut) in cuts {
            match cut {
                None => remove_segment_files(&inner.dir, start).await?,
                Some((len, count)) => {
                    if !log_path(&inner.dir, start).exists() {
                        continue;
                    }
                    let files = SegmentFiles::open(&inner.dir, start, false).await?;
                    if files.log.size().await? > len {
                        files.log.truncate(len).await?;
                    }
                    let index = files.index.get().await?;
                    if index.size().await? > count * INDEX_ENTRY_SIZE as u64 {
                        index.truncate(count * INDEX_ENTRY_SIZE as u64).await?;
                    }
                    files.log.sync_all().await?;
                    index.sync_all().await?;
                }
            }
        }
        sync_directory(&inner.dir).await?;
        let (partition, report) = Partition::open(
            inner.dir.clone(),
            inner.config.clone(),
            Rc::clone(&inner.pool),
        )
        .await?;
        tracing::warn!(
            dir = %inner.dir.display(),
            next_offset = report.next_offset,
            "partition reopened after a storage failure; appends are accepted again"
        );
        Ok((partition, report))
    }

    /// Stops the writer without writing what is pending and removes the partition directory
    /// with everything in it.
    pub async fn delete(self) -> Result<(), StorageError> {
        {
            let mut state = self.inner.state.borrow_mut();
            state.closing = true;
        }
        let writer = self.writer.borrow_mut().take();
        if let Some(writer) = writer {
            writer.cancel().await;
        }
        let dir = self.inner.dir.clone();
        drop(self);
        let removed = compio::runtime::spawn_blocking({
            let dir = dir.clone();
            move || std::fs::remove_dir_all(dir)
        })
        .await;
        match removed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(StorageError::io(IoOperation::Remove, dir, error)),
            Err(error) => Err(StorageError::io(IoOperation::Remove, dir, error.into())),
        }
    }
}

/// Start offsets of the `.log` files in `dir`, ascending.
fn list_segments(dir: &Path) -> Result<Vec<u64>, StorageError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| StorageError::io(IoOperation::Directory, dir, error))?;
    let mut starts = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| StorageError::io(IoOperation::Directory, dir, error))?;
        if let Some(start) = entry.file_name().to_str().and_then(parse_log_name) {
            starts.push(start);
        }
    }
    starts.sort_unstable();
    Ok(starts)
}

async fn remove_segment_files(dir: &Path, start_offset: u64) -> Result<(), StorageError> {
    for path in [log_path(dir, start_offset), index_path(dir, start_offset)] {
        match compio::fs::remove_file(&path).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StorageError::io(IoOperation::Remove, path, error)),
        }
    }
    Ok(())
}

/// Starts a new (logical) segment at the next offset; the writer creates its files.
fn rotate(state: &mut State) {
    let start = state.next_offset;
    state.segments.push_back(Segment::new_active(start, None));
    state.tail_len = 0;
}

/// The synchronous part of an append: rotation, stamping, indexing, staging.
fn accept(
    inner: &Inner,
    state: &mut State,
    batch: MessageBatch,
    timestamp_micros: u64,
) -> Result<AppendOutcome, StorageError> {
    let config = &inner.config;
    let size = batch.size() as u64;
    let count = u64::from(batch.count());
    {
        let active = state.active();
        if active.accepted_count > 0 && active.accepted_len + size > config.segment_size_bytes {
            rotate(state);
        }
    }
    let first_offset = state.next_offset;
    // Server timestamps never go backwards within a partition, so timestamp search can use a
    // binary search even if the wall clock steps back.
    let timestamp = timestamp_micros.max(state.last_timestamp);
    let mut bytes = batch.into_bytes();
    let pool = &inner.pool;
    let State {
        segments,
        staged,
        tail,
        tail_len,
        ..
    } = &mut *state;
    let mut staging = Staging {
        staged,
        tail,
        tail_len: *tail_len,
    };
    let staged_before = staging.staged.len();
    let active = segments
        .back_mut()
        .expect("a partition always has an active segment");
    let segment_start = active.start_offset;
    let base_position = active.accepted_len;
    let index = active
        .index
        .as_mut()
        .expect("the active segment has an index");
    let entries_before = index.len();
    let mut position = 0usize;
    let mut offset = first_offset;
    let total = bytes.len();
    while position < total {
        let Ok(message) = MessageView::parse(&bytes[position..]) else {
            // Nothing of the batch may remain: drop its index entries and staged bytes.
            index.truncate(entries_before);
            unstage(&mut staging, staged_before, segment_start, base_position);
            return Err(StorageError::InvalidBatch("messages do not parse"));
        };
        let message_size = message.size();
        let message_bytes = &mut bytes[position..position + message_size];
        stamp(message_bytes, offset, timestamp, random_message_id);
        // Copying each message right after stamping it reads it from L1, not from memory.
        stage(
            inner,
            &mut staging,
            segment_start,
            base_position + position as u64,
            message_bytes,
            total - position,
        );
        position += message_size;
        index.push(
            pool,
            IndexEntry {
                relative_offset: (offset - segment_start) as u32,
                end_position: (base_position + position as u64) as u32,
                timestamp,
            },
        );
        offset += 1;
    }
    if offset - first_offset != count {
        index.truncate(entries_before);
        unstage(&mut staging, staged_before, segment_start, base_position);
        return Err(StorageError::InvalidBatch(
            "message count does not match the bytes",
        ));
    }
    active.accepted_count += count;
    active.accepted_len += size;
    active.last_timestamp = timestamp;
    if config.ack_mode == AckMode::Memory {
        state.journal.push_back(JournalEntry {
            segment_start,
            position: base_position,
            bytes: bytes.freeze(),
        });
    }
    state.next_offset = offset;
    state.last_timestamp = timestamp;
    state.pending_messages += count;
    state.pending_bytes += size;
    state.unwritten_bytes += size;
    state.kick_writer();
    Ok(AppendOutcome {
        first_offset,
        last_offset: offset - 1,
    })
}

/// Takes back bytes staged for a batch that turned out invalid: buffers added since
/// `staged_before` are dropped and the buffer that was open is cut back to `position`.
fn unstage(staging: &mut Staging<'_>, staged_before: usize, segment_start: u64, position: u64) {
    staging.staged.truncate(staged_before);
    if let Some(back) = staging.staged.back_mut()
        && back.segment_start == segment_start
        && back.file_position + back.buf.len() as u64 > position
    {
        let keep = (position - back.file_position) as usize;
        back.buf.set_filled(keep);
    }
}

/// A random non-zero id for messages sent with id 0 (the stored id is never 0, which recovery
/// relies on to reject zero-filled space).
fn random_message_id() -> u128 {
    loop {
        let id: u128 = rand::random();
        if id != 0 {
            return id;
        }
    }
}

/// The parts of the state staging needs, borrowed apart from the segment being appended to.
struct Staging<'a> {
    staged: &'a mut VecDeque<Staged>,
    tail: &'a [u8; BLOCK_SIZE],
    tail_len: usize,
}

/// Copies accepted bytes of `segment_start` at segment position `position` into staging
/// buffers. A new buffer starts at the block containing `position`, beginning with the tail
/// block's bytes so the block is written whole; buffers fill completely before the next one
/// starts, so only the last buffer of a round ends mid-block.
fn stage(
    inner: &Inner,
    staging: &mut Staging<'_>,
    segment_start: u64,
    position: u64,
    data: &[u8],
    batch_remaining: usize,
) {
    let mut position = position;
    let mut data = data;
    while !data.is_empty() {
        let (needs_buffer, previous_capacity) = match staging.staged.back() {
            Some(back) if back.segment_start == segment_start => {
                assert_eq!(
                    back.file_position + back.buf.len() as u64,
                    position,
                    "staging is contiguous"
                );
                (back.buf.remaining() == 0, back.buf.capacity())
            }
            _ => (true, 0),
        };
        if needs_buffer {
            let aligned = align_down(position);
            let lead = (position - aligned) as usize;
            if lead > 0 {
                assert_eq!(
                    lead, staging.tail_len,
                    "the tail block holds the partial block"
                );
            }
            // Sized for the rest of the batch, and growing geometrically along a round so many
            // small appends do not make many small buffers; never beyond the configured maximum.
            let wanted = (lead + batch_remaining.max(data.len()))
                .max(previous_capacity * 2)
                .checked_next_power_of_two()
                .unwrap_or(usize::MAX)
                .clamp(MIN_WRITE_BUFFER_BYTES, inner.config.write_buffer_bytes);
            let mut buf = inner.pool.acquire(wanted);
            buf.append(&staging.tail[..lead]);
            staging.staged.push_back(Staged {
                segment_start,
                file_position: aligned,
                buf,
            });
        }
        let back = staging.staged.back_mut().expect("just ensured");
        let take = data.len().min(back.buf.remaining());
        back.buf.append(&data[..take]);
        data = &data[take..];
        position += take as u64;
    }
}

/// One write of the writer: all staged buffers of one segment.
struct Round {
    segment_start: u64,
    files: Rc<SegmentFiles>,
    buffers: Vec<PooledBuf>,
    log_position: u64,
    log_end: u64,
    end_count: u64,
    end_offset: u64,
    bytes: u64,
}

/// Index entries not yet in the `.index` file, from the block holding the first of them.
struct IndexWrite {
    buf: PooledBuf,
    position: u64,
}

/// Prepares the write of a segment's index entries `[index_persisted, written_count)`.
fn index_write(inner: &Inner, segment: &Segment) -> Option<IndexWrite> {
    let index = segment.index.as_ref()?;
    let end = segment.written_count as usize;
    if segment.index_persisted as usize >= end {
        return None;
    }
    let first =
        align_down(segment.index_persisted * INDEX_ENTRY_SIZE as u64) as usize / INDEX_ENTRY_SIZE;
    let bytes = (end - first) * INDEX_ENTRY_SIZE;
    let mut buf = inner.pool.acquire(bytes);
    buf.set_filled(bytes);
    index.copy_encoded(first, end, &mut buf.whole_mut()[..bytes]);
    buf.pad_to_block();
    Some(IndexWrite {
        buf,
        position: (first * INDEX_ENTRY_SIZE) as u64,
    })
}

struct SyncJob {
    files: Vec<Rc<SegmentFiles>>,
    end: u64,
}

enum Action {
    Create(u64),
    Write(Round, Option<SyncJob>),
    Sync(SyncJob),
    Seal {
        segment_start: u64,
        files: Rc<SegmentFiles>,
        len: u64,
        count: u64,
        index: Option<IndexWrite>,
    },
    Shutdown(Option<(Rc<SegmentFiles>, u64, u64, Option<IndexWrite>)>),
    Idle,
    Exit,
}

/// The writer: the only task that writes, syncs, truncates or creates segment files.
async fn writer_loop(inner: Rc<Inner>) {
    // Whatever ends the loop (return, panic, cancellation), waiters must learn that nothing
    // more will be written.
    struct Stopped(Rc<Inner>);
    impl Drop for Stopped {
        fn drop(&mut self) {
            if let Ok(mut state) = self.0.state.try_borrow_mut() {
                state.writer_running = false;
            }
            self.0.progress.notify_all();
        }
    }
    let _stopped = Stopped(Rc::clone(&inner));
    loop {
        let (action, generation) = {
            let mut state = inner.state.borrow_mut();
            (decide(&inner, &mut state), state.work_generation)
        };
        let result = match action {
            Action::Exit => return,
            Action::Idle => {
                inner
                    .work
                    .wait_until(|| inner.state.borrow().work_generation != generation)
                    .await;
                continue;
            }
            Action::Create(start) => create_segment_files(&inner, start).await,
            Action::Write(round, sync) => write_round(&inner, round, sync).await,
            Action::Sync(job) => {
                let result = sync_files(&job.files).await;
                let mut state = inner.state.borrow_mut();
                if result.is_ok() {
                    state.durable_end = state.durable_end.max(job.end);
                }
                recycle_sync_files(&mut state, job.files);
                result
            }
            Action::Seal {
                segment_start,
                files,
                len,
                count,
                index,
            } => seal_segment(&inner, segment_start, &files, len, count, index).await,
            Action::Shutdown(active) => {
                let result = shutdown(&inner, active).await;
                if result.is_ok() {
                    inner.progress.notify_all();
                    return;
                }
                result
            }
        };
        if let Err(error) = result {
            tracing::error!(
                dir = %inner.dir.display(),
                %error,
                "partition write failed; appends are refused until the partition is reopened (the next append tries)"
            );
            inner.state.borrow_mut().failure = Some(error);
            inner.progress.notify_all();
            return;
        }
        inner.progress.notify_all();
    }
}

/// Picks the writer's next step. Order: create files the oldest staged data needs; write
/// (joined with the sync of the previous write in fsync mode: group commit); sync; seal
/// finished segments; create the active segment's files; shut down; idle.
fn decide(inner: &Inner, state: &mut State) -> Action {
    if state.failure.is_some() {
        return Action::Exit;
    }
    let config = &inner.config;
    let active_start = state.active().start_offset;
    let sync_wanted = |state: &State| {
        !state.unsynced.is_empty()
            && (config.ack_mode == AckMode::Fsync
                || state.sync_requested_end > state.durable_end
                || state.closing)
    };
    if let Some(front) = state.staged.front() {
        let segment_start = front.segment_start;
        let has_files = state
            .segment_mut(segment_start)
            .expect("staged data belongs to a segment")
            .files
            .is_some();
        if !has_files {
            return Action::Create(segment_start);
        }
        let write_now = config.ack_mode != AckMode::Memory
            || state.pending_messages >= config.memory_flush_messages
            || state.pending_bytes >= config.memory_flush_bytes
            || state.write_requested_end > state.written_end
            || state.appenders_waiting_for_space > 0
            || segment_start != active_start
            || state.closing;
        if write_now {
            let sync = sync_wanted(state).then(|| take_sync_job(state));
            return Action::Write(take_round(state), sync);
        }
    }
    if sync_wanted(state) {
        return Action::Sync(take_sync_job(state));
    }
    let last = state.segments.len() - 1;
    for segment in state.segments.iter().take(last) {
        if !segment.sealed
            && let Some(files) = &segment.files
            && segment.written_len == segment.accepted_len
        {
            return Action::Seal {
                segment_start: segment.start_offset,
                files: Rc::clone(files),
                len: segment.written_len,
                count: segment.written_count,
                index: index_write(inner, segment),
            };
        }
    }
    if state.active().files.is_none() {
        return Action::Create(active_start);
    }
    if state.closing {
        let active = state.active();
        return Action::Shutdown(active.files.clone().map(|files| {
            (
                files,
                active.written_len,
                active.written_count,
                index_write(inner, active),
            )
        }));
    }
    Action::Idle
}

fn take_sync_job(state: &mut State) -> SyncJob {
    state.writes.syncs += 1;
    let spare = std::mem::take(&mut state.spare_sync_files);
    SyncJob {
        files: std::mem::replace(&mut state.unsynced, spare),
        end: state.unsynced_end,
    }
}

fn recycle_sync_files(state: &mut State, mut files: Vec<Rc<SegmentFiles>>) {
    files.clear();
    if state.spare_sync_files.capacity() < files.capacity() {
        state.spare_sync_files = files;
    }
}

/// Takes every staged buffer of the oldest staged segment and prepares the matching index
/// write. All of that segment's accepted data is staged (accepts copy synchronously), so the
/// round ends at the segment's accepted end.
fn take_round(state: &mut State) -> Round {
    let segment_start = state.staged.front().expect("staged data").segment_start;
    let mut buffers = std::mem::take(&mut state.spare_round_buffers);
    let log_position = state.staged.front().expect("staged data").file_position;
    let mut expected_position = log_position;
    while state
        .staged
        .front()
        .is_some_and(|staged| staged.segment_start == segment_start)
    {
        let staged = state.staged.pop_front().expect("checked");
        assert_eq!(
            staged.file_position, expected_position,
            "staged buffers are contiguous"
        );
        expected_position += staged.buf.len() as u64;
        buffers.push(staged.buf);
    }
    let log_end = expected_position;
    let is_active = segment_start == state.active().start_offset;
    let last = buffers.last_mut().expect("at least one buffer");
    if is_active {
        // The next staging buffer starts with this partial block.
        let partial = last.len() % BLOCK_SIZE;
        state.tail[..partial].copy_from_slice(&last.as_slice()[last.len() - partial..]);
        state.tail_len = partial;
    }
    last.pad_to_block();

    let segment = state
        .segment_mut(segment_start)
        .expect("segment of staged data");
    assert_eq!(
        log_end, segment.accepted_len,
        "a round covers the segment's accepted data"
    );
    let files = Rc::clone(
        segment
            .files
            .as_ref()
            .expect("files created before writing"),
    );
    let end_count = segment.accepted_count;
    let bytes = log_end - segment.written_len;
    let messages = end_count - segment.written_count;
    let end_offset = segment.end_offset();
    state.pending_messages = state.pending_messages.saturating_sub(messages);
    state.pending_bytes = state.pending_bytes.saturating_sub(bytes);
    state.writes.record_round(messages, bytes);
    Round {
        segment_start,
        files,
        buffers,
        log_position,
        log_end,
        end_count,
        end_offset,
        bytes,
    }
}

async fn write_round(
    inner: &Inner,
    round: Round,
    sync: Option<SyncJob>,
) -> Result<(), StorageError> {
    let Round {
        segment_start,
        files,
        buffers,
        log_position,
        log_end,
        end_count,
        end_offset,
        bytes,
    } = round;
    let config = &inner.config;
    let preallocated = files.log.preallocate(
        align_up(log_end),
        config.preallocate_chunk_bytes,
        config.segment_size_bytes,
    );
    if let Err(error) = preallocated {
        if let Some(job) = sync {
            recycle_sync_files(&mut inner.state.borrow_mut(), job.files);
        }
        return Err(error);
    }
    let sync_future = async {
        match &sync {
            Some(job) => sync_files(&job.files).await,
            None => Ok(()),
        }
    };
    let ((log_result, mut buffers), sync_result) = join2(
        files.log.write_all_vectored(buffers, log_position),
        sync_future,
    )
    .await;
    let mut state = inner.state.borrow_mut();
    buffers.clear();
    state.spare_round_buffers = buffers;
    if let Some(job) = sync {
        if sync_result.is_ok() {
            state.durable_end = state.durable_end.max(job.end);
        }
        recycle_sync_files(&mut state, job.files);
    }
    log_result?;
    sync_result?;
    let segment = state
        .segment_mut(segment_start)
        .expect("segments with unwritten data are not deleted");
    segment.written_count = end_count;
    segment.written_len = log_end;
    state.written_end = state.written_end.max(end_offset);
    state.unwritten_bytes -= bytes;
    while state.journal.front().is_some_and(|entry| {
        entry.segment_start < segment_start
            || (entry.segment_start == segment_start
                && entry.position + entry.bytes.len() as u64 <= log_end)
    }) {
        state.journal.pop_front();
    }
    if !state.unsynced.iter().any(|known| Rc::ptr_eq(known, &files)) {
        state.unsynced.push(files);
    }
    state.unsynced_end = state.written_end;
    Ok(())
}

async fn sync_files(files: &[Rc<SegmentFiles>]) -> Result<(), StorageError> {
    for file in files {
        file.log.sync_data().await?;
    }
    Ok(())
}

async fn create_segment_files(inner: &Inner, start_offset: u64) -> Result<(), StorageError> {
    let files = SegmentFiles::open(&inner.dir, start_offset, true).await?;
    // The new files' directory entries must be durable before data in them is acked as such.
    sync_directory(&inner.dir).await?;
    if !files.log.is_direct() {
        inner.direct_io.set(false);
    }
    let mut state = inner.state.borrow_mut();
    if let Some(segment) = state.segment_mut(start_offset) {
        segment.files = Some(Rc::new(files));
    }
    Ok(())
}

/// Writes index entries that are only in memory.
async fn write_index(files: &SegmentFiles, index: Option<IndexWrite>) -> Result<(), StorageError> {
    match index {
        Some(IndexWrite { buf, position }) => {
            let index = files.index.get().await?;
            index.write_all_at(buf, 0, position).await.0
        }
        None => Ok(()),
    }
}

async fn seal_segment(
    inner: &Inner,
    segment_start: u64,
    files: &SegmentFiles,
    len: u64,
    count: u64,
    index: Option<IndexWrite>,
) -> Result<(), StorageError> {
    write_index(files, index).await?;
    files.log.truncate(len).await?;
    let index_file = files.index.get().await?;
    index_file.truncate(count * INDEX_ENTRY_SIZE as u64).await?;
    files.log.sync_all().await?;
    index_file.sync_all().await?;
    // Opened again by the first read of this segment.
    files.index.close();
    let mut state = inner.state.borrow_mut();
    if let Some(segment) = state.segment_mut(segment_start) {
        segment.sealed = true;
        segment.index = None;
        segment.index_persisted = count;
    }
    Ok(())
}

async fn shutdown(
    inner: &Inner,
    active: Option<(Rc<SegmentFiles>, u64, u64, Option<IndexWrite>)>,
) -> Result<(), StorageError> {
    if let Some((files, len, count, index)) = active {
        write_index(&files, index).await?;
        inner.state.borrow_mut().active_index_persisted(count);
        files.log.truncate(len).await?;
        let index_file = files.index.get().await?;
        index_file.truncate(count * INDEX_ENTRY_SIZE as u64).await?;
        files.log.sync_all().await?;
        index_file.sync_all().await?;
        // Lets the next open trust these files without reading the whole segment.
        let start = inner.state.borrow().active().start_offset;
        let marker = inner.dir.join(CLEAN_SHUTDOWN_MARKER);
        let compio::BufResult(written, _) =
            compio::fs::write(&marker, encode_clean_marker(start, len, count)).await;
        written.map_err(|error| StorageError::io(IoOperation::Write, &marker, error))?;
        let marker_file = compio::fs::File::open(&marker)
            .await
            .map_err(|error| StorageError::io(IoOperation::Open, &marker, error))?;
        marker_file
            .sync_all()
            .await
            .map_err(|error| StorageError::io(IoOperation::Sync, &marker, error))?;
    }
    sync_directory(&inner.dir).await?;
    let mut state = inner.state.borrow_mut();
    state.durable_end = state.written_end;
    state.writer_running = false;
    Ok(())
}

/// A part of a read: bytes already in memory, a known byte range of a log, or a range of
/// messages of a sealed segment whose index must be read from disk first.
enum ReadPiece {
    Memory(Bytes),
    Disk {
        files: Rc<SegmentFiles>,
        start: u64,
        end: u64,
        first_offset: u64,
    },
    DiskIndexed {
        files: Rc<SegmentFiles>,
        relative: u64,
        count: u64,
        first_offset: u64,
    },
}

/// Decides where the messages of a read come from, under one short borrow. Returns the
/// clamped start offset and the pieces.
fn plan_read(
    inner: &Inner,
    state: &State,
    start_offset: u64,
    max_count: u64,
    budget: u64,
    have_messages: bool,
) -> Result<(u64, Vec<ReadPiece>), StorageError> {
    let visible_end = state.visible_end(inner.config.ack_mode);
    let start = start_offset.max(state.first_offset());
    let mut pieces = Vec::new();
    if max_count == 0 || start >= visible_end {
        return Ok((start, pieces));
    }
    let end = start.saturating_add(max_count).min(visible_end);
    let mut budget = budget;
    let mut offset = start;
    let first_segment = state
        .segments
        .partition_point(|segment| segment.end_offset() <= offset);
    for segment in state.segments.iter().skip(first_segment) {
        if offset >= end {
            break;
        }
        if segment.accepted_count == 0 {
            continue;
        }
        offset = offset.max(segment.start_offset);
        let segment_end = segment.end_offset().min(end);
        if offset >= segment_end {
            continue;
        }
        let relative = offset - segment.start_offset;
        let wanted = segment_end - offset;
        let files = segment.files.clone();
        let Some(index) = &segment.index else {
            let files = files.expect("sealed segments have files");
            pieces.push(ReadPiece::DiskIndexed {
                files,
                relative,
                count: wanted,
                first_offset: offset,
            });
            // The byte size is only known after reading the index, so the read ends here.
            break;
        };
        let first_size = u64::from(index.get(relative as usize).end_position)
            - index.start_position(relative as usize);
        if (have_messages || !pieces.is_empty()) && first_size > budget {
            break;
        }
        let count = index.count_within(relative as usize, wanted as usize, budget) as u64;
        let from = index.start_position(relative as usize);
        let to = u64::from(index.get((relative + count - 1) as usize).end_position);
        let disk_end = to.min(segment.written_len);
        if from < disk_end {
            let files = files.ok_or(StorageError::Corrupted {
                path: log_path(&inner.dir, segment.start_offset),
                position: from,
                reason: "written data without files",
            })?;
            pieces.push(ReadPiece::Disk {
                files,
                start: from,
                end: disk_end,
                first_offset: offset,
            });
        }
        if to > segment.written_len {
            journal_pieces(
                inner,
                state,
                segment.start_offset,
                from.max(segment.written_len),
                to,
                &mut pieces,
            )?;
        }
        budget = budget.saturating_sub(to - from);
        offset += count;
        if count < wanted {
            break;
        }
    }
    Ok((start, pieces))
}

/// Slices of memory-mode journal entries covering `[from, to)` of a segment.
fn journal_pieces(
    inner: &Inner,
    state: &State,
    segment_start: u64,
    from: u64,
    to: u64,
    pieces: &mut Vec<ReadPiece>,
) -> Result<(), StorageError> {
    let first = state.journal.partition_point(|entry| {
        entry.segment_start < segment_start
            || (entry.segment_start == segment_start
                && entry.position + entry.bytes.len() as u64 <= from)
    });
    let mut covered = from;
    for entry in state.journal.iter().skip(first) {
        if entry.segment_start != segment_start || covered >= to {
            break;
        }
        let entry_end = entry.position + entry.bytes.len() as u64;
        if entry.position > covered {
            break;
        }
        let slice_end = to.min(entry_end);
        pieces.push(ReadPiece::Memory(entry.bytes.slice(
            (covered - entry.position) as usize..(slice_end - entry.position) as usize,
        )));
        covered = slice_end;
    }
    if covered != to {
        return Err(StorageError::Corrupted {
            path: log_path(&inner.dir, segment_start),
            position: covered,
            reason: "accepted data is neither written nor in memory",
        });
    }
    Ok(())
}

/// Reads `count` messages from `relative` of a sealed segment: the index entries first, then
/// exactly the bytes they describe (cut to `budget`, at least one message).
async fn read_with_disk_index(
    files: &SegmentFiles,
    relative: u64,
    count: u64,
    budget: u64,
    at_least_one: bool,
    first_offset: u64,
) -> Result<Bytes, StorageError> {
    // Every message is at least a header, so no more than this many can fit the budget.
    let count = count.min(budget / HEADER_SIZE as u64 + 1).max(1);
    let first_entry = relative.saturating_sub(1);
    let entry_bytes = files
        .index
        .get()
        .await?
        .read_range(
            first_entry * INDEX_ENTRY_SIZE as u64,
            (relative + count) * INDEX_ENTRY_SIZE as u64,
        )
        .await?;
    let entries: Vec<IndexEntry> = entry_bytes
        .chunks_exact(INDEX_ENTRY_SIZE)
        .map(IndexEntry::decode)
        .collect();
    let corrupted = |reason| StorageError::Corrupted {
        path: files.index.path().to_path_buf(),
        position: first_entry * INDEX_ENTRY_SIZE as u64,
        reason,
    };
    if entries
        .iter()
        .enumerate()
        .any(|(k, entry)| u64::from(entry.relative_offset) != first_entry + k as u64)
    {
        return Err(corrupted("index entry out of sequence"));
    }
    let (start, wanted) = if relative == 0 {
        (0, &entries[..])
    } else {
        (u64::from(entries[0].end_position), &entries[1..])
    };
    let mut take = 0;
    while take < wanted.len() && u64::from(wanted[take].end_position) - start <= budget {
        take += 1;
    }
    if take == 0 {
        if !at_least_one {
            return Ok(Bytes::new());
        }
        take = 1;
    }
    let end = u64::from(wanted[take - 1].end_position);
    if end <= start {
        return Err(corrupted("index positions do not increase"));
    }
    let bytes = files.log.read_range(start, end).await?;
    check_stored(&bytes, first_offset, files.log.path(), start)?;
    Ok(bytes)
}

/// Checks bytes read from disk: whole messages with consecutive offsets from `first_offset`.
fn check_stored(
    bytes: &[u8],
    first_offset: u64,
    path: &Path,
    position: u64,
) -> Result<(), StorageError> {
    let mut expected = first_offset;
    for message in MessageIter::new(bytes) {
        match message {
            Ok(message) if message.offset() == expected => expected += 1,
            _ => {
                return Err(StorageError::Corrupted {
                    path: path.to_path_buf(),
                    position,
                    reason: "stored messages do not match the index",
                });
            }
        }
    }
    Ok(())
}

/// Binary search over the pages of a sealed segment's index file for the first of its first
/// `count` entries with a timestamp at least `timestamp`; one 4 KiB read per probe.
async fn search_index_file(
    files: &SegmentFiles,
    count: u64,
    timestamp: u64,
) -> Result<Option<u64>, StorageError> {
    const ENTRIES_PER_PAGE: u64 = (BLOCK_SIZE / INDEX_ENTRY_SIZE) as u64;
    let pages = count.div_ceil(ENTRIES_PER_PAGE);
    let index_file = files.index.get().await?;
    let index: &DirectFile = &index_file;
    let read_page = |page: u64| async move {
        let from = page * ENTRIES_PER_PAGE;
        let to = (from + ENTRIES_PER_PAGE).min(count);
        let bytes = index
            .read_range(from * INDEX_ENTRY_SIZE as u64, to * INDEX_ENTRY_SIZE as u64)
            .await?;
        Ok::<_, StorageError>(
            bytes
                .chunks_exact(INDEX_ENTRY_SIZE)
                .map(|entry| IndexEntry::decode(entry).timestamp)
                .collect::<Vec<u64>>(),
        )
    };
    let (mut low, mut high) = (0, pages);
    while low < high {
        let middle = low + (high - low) / 2;
        let page = read_page(middle).await?;
        if page.last().is_some_and(|&last| last < timestamp) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    if low == pages {
        return Ok(None);
    }
    let page = read_page(low).await?;
    Ok(page
        .iter()
        .position(|&stamp| stamp >= timestamp)
        .map(|position| low * ENTRIES_PER_PAGE + position as u64))
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
