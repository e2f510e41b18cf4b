//! The writer task: one per partition, it takes rounds of staged bytes, writes them with
//! O_DIRECT vectored writes, syncs in fsync mode (group commit), creates and seals segments,
//! and on close writes what is pending and the clean-shutdown marker.

use super::state::{Inner, JournalEntry, Segment, State};
use crate::storage::cache::{CacheOwner, RecycleBin};
use crate::storage::config::AckMode;
use crate::storage::error::{IoOperation, StorageError};
use crate::storage::file::sync_directory;
use crate::storage::index::INDEX_ENTRY_SIZE;
use crate::storage::pool::{BLOCK_SIZE, PooledBuf, align_down, align_up};
use crate::storage::segment::{CLEAN_SHUTDOWN_MARKER, SegmentFiles, encode_clean_marker};
use crate::storage::wait::join2;
use crate::storage::wal::{Logged, WalOwner, record};
use std::rc::{Rc, Weak};

/// One write of the writer: all staged buffers of one segment.
pub(super) struct Round {
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
pub(super) struct IndexWrite {
    buf: PooledBuf,
    position: u64,
}

/// Prepares the write of a segment's index entries `[index_persisted, written_count)`.
pub(super) fn index_write(inner: &Inner, segment: &Segment) -> Option<IndexWrite> {
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

pub(super) struct SyncJob {
    files: Vec<Rc<SegmentFiles>>,
    end: u64,
}

pub(super) enum Action {
    Create(u64),
    Write(Round, Option<SyncJob>),
    /// A record of the messages from the logged end to `end_offset`, for the write-ahead log.
    Log {
        record: PooledBuf,
        end_offset: u64,
    },
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
pub(super) async fn writer_loop(inner: Rc<Inner>) {
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
            Action::Log { record, end_offset } => {
                log_round(&inner, record, end_offset).await;
                Ok(())
            }
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
        // Bytes a write moved into the cache may take it over budget; no state is borrowed here.
        inner.cache.trim();
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
pub(super) fn decide(inner: &Inner, state: &mut State) -> Action {
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
        // With the write-ahead log, `written` rounds are logged and the segment files written
        // as in memory mode: by size and count, on request, and whenever a round cannot be
        // logged.
        let logs = inner.log().is_some();
        let unlogged = logs && state.next_offset > state.logged_end.max(state.written_end);
        let write_now = (config.ack_mode != AckMode::Memory && !logs)
            || state.pending_messages >= config.memory_flush_messages
            || state.pending_bytes >= config.memory_flush_bytes
            || state.write_requested_end > state.written_end
            || state.appenders_waiting_for_space > 0
            || segment_start != active_start
            || state.closing
            || (unlogged && state.log_refused);
        if !write_now
            && unlogged
            && let Some((record, end_offset)) = log_record(inner, state)
        {
            return Action::Log { record, end_offset };
        }
        if write_now || unlogged {
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

pub(super) fn take_sync_job(state: &mut State) -> SyncJob {
    state.writes.syncs += 1;
    let spare = std::mem::take(&mut state.spare_sync_files);
    SyncJob {
        files: std::mem::replace(&mut state.unsynced, spare),
        end: state.unsynced_end,
    }
}

pub(super) fn recycle_sync_files(state: &mut State, mut files: Vec<Rc<SegmentFiles>>) {
    files.clear();
    if state.spare_sync_files.capacity() < files.capacity() {
        state.spare_sync_files = files;
    }
}

/// Takes every staged buffer of the oldest staged segment and prepares the matching index
/// write. All of that segment's accepted data is staged (accepts copy synchronously), so the
/// round ends at the segment's accepted end.
pub(super) fn take_round(state: &mut State) -> Round {
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
    // Pending counts what was accepted and not yet taken: a round never takes more.
    assert!(
        state.pending_messages >= messages && state.pending_bytes >= bytes,
        "a round takes {messages} messages / {bytes} bytes of {} / {} pending",
        state.pending_messages,
        state.pending_bytes
    );
    state.pending_messages -= messages;
    state.pending_bytes -= bytes;
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

/// The record of everything accepted after the logged end: the journal's newest batches
/// (every batch not in the segment files is there when the partition logs). None when it
/// would be too large for the log or the log takes nothing now: the round is written directly.
pub(super) fn log_record(inner: &Inner, state: &State) -> Option<(PooledBuf, u64)> {
    let wal = inner.log()?;
    let dir = inner.wal_dir.as_ref()?;
    let from = state.logged_end.max(state.written_end);
    let first = state
        .journal
        .partition_point(|entry| entry.first_offset < from);
    let entries = state.journal.range(first..);
    let data_len: usize = entries.clone().map(|entry| entry.bytes.len()).sum();
    let footprint = record::footprint(dir.len(), data_len);
    if data_len == 0 || dir.len() > record::MAX_DIR_LEN || !wal.accepts(footprint) {
        return None;
    }
    debug_assert_eq!(
        state.journal.get(first).map(|entry| entry.first_offset),
        Some(from),
        "logged ends fall on batch boundaries"
    );
    let parts: Vec<&[u8]> = entries.map(|entry| &entry.bytes[..]).collect();
    let header = record::RecordHeader {
        dir: dir.clone(),
        incarnation: inner.incarnation.get(),
        first_offset: from,
        count: u32::try_from(state.next_offset - from).ok()?,
        data_len: u32::try_from(data_len).ok()?,
    };
    let mut buf = inner.pool.acquire(footprint as usize);
    record::encode(&mut buf, &header, &parts);
    Some((buf, state.next_offset))
}

/// Writes a record through the shard's log; once it is written, what it holds counts as
/// written (`logged_end`). A refusal sends the next round to the segment files.
pub(super) async fn log_round(inner: &Inner, record: PooledBuf, end_offset: u64) {
    let Some(wal) = inner.log() else {
        return;
    };
    let owner: Weak<dyn WalOwner> = inner.me.clone();
    let logged = wal.log(record, owner, end_offset).await;
    let mut state = inner.state.borrow_mut();
    match logged {
        Logged::Done => state.logged_end = state.logged_end.max(end_offset),
        Logged::Refused => state.log_refused = true,
    }
    state.check_consistency();
}

pub(super) async fn write_round(
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
    state.log_refused = false;
    state.unwritten_bytes -= bytes;
    // The batches this round wrote enter the read cache, or leave memory without one.
    let written = |entry: &JournalEntry| {
        entry.segment_start < segment_start
            || (entry.segment_start == segment_start && entry.end() <= log_end)
    };
    if inner.cache.enabled() {
        let first = state
            .journal
            .partition_point(|entry| entry.cached.is_some());
        let owner: Weak<dyn CacheOwner> = inner.me.clone();
        for entry in state.journal.range_mut(first..) {
            if !written(entry) {
                break;
            }
            let footprint = RecycleBin::footprint(entry.bytes.len()) as u64;
            entry.cached = Some(inner.cache.admit(owner.clone(), footprint));
        }
    } else {
        while state.journal.front().is_some_and(written) {
            state.journal.pop_front();
        }
    }
    if !state.unsynced.iter().any(|known| Rc::ptr_eq(known, &files)) {
        state.unsynced.push(files);
    }
    state.unsynced_end = state.written_end;
    state.check_consistency();
    Ok(())
}

pub(super) async fn sync_files(files: &[Rc<SegmentFiles>]) -> Result<(), StorageError> {
    for file in files {
        file.log.sync_data().await?;
    }
    Ok(())
}

pub(super) async fn create_segment_files(
    inner: &Inner,
    start_offset: u64,
) -> Result<(), StorageError> {
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
pub(super) async fn write_index(
    files: &SegmentFiles,
    index: Option<IndexWrite>,
) -> Result<(), StorageError> {
    match index {
        Some(IndexWrite { buf, position }) => {
            let index = files.index.get().await?;
            index.write_all_at(buf, 0, position).await.0
        }
        None => Ok(()),
    }
}

pub(super) async fn seal_segment(
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

pub(super) async fn shutdown(
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
