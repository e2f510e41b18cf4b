//! Creating, opening (recovery), starting the writer, closing, reopening after a failure and
//! deleting a partition.

use super::Partition;
use super::outcome::{RecoveryReport, WriteCounters};
use super::retention::remove_segment_files;
use super::state::{Inner, Segment, State};
use super::writer::writer_loop;
use crate::storage::blocking;
use crate::storage::config::{AckMode, PartitionConfig};
use crate::storage::error::{IoOperation, StorageError};
use crate::storage::file::sync_directory;
use crate::storage::index::INDEX_ENTRY_SIZE;
use crate::storage::pool::{BLOCK_SIZE, BufferPool};
use crate::storage::segment::{
    CLEAN_SHUTDOWN_MARKER, SegmentFiles, check_sealed, decode_clean_marker, log_path,
    parse_log_name, recover_segment,
};
use crate::storage::wait::WaitList;
use crate::storage::wal::{WalLink, incarnation, recovery};
use bytes::{Bytes, BytesMut};
use rill_core::message::{MessageBatch, MessageView};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;

impl Partition {
    /// Creates an empty partition in `dir` (created if missing), starting at offset 0, that
    /// uses no write-ahead log.
    pub async fn create(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
    ) -> Result<Partition, StorageError> {
        Partition::create_at(dir, config, pool, WalLink::default(), 0).await
    }

    /// [`Partition::create`] with the shard's write-ahead log.
    pub async fn create_linked(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
        link: WalLink,
    ) -> Result<Partition, StorageError> {
        Partition::create_at(dir, config, pool, link, 0).await
    }

    /// Creates an empty partition in `dir` (created if missing) whose first message will get
    /// offset `start`.
    pub(super) async fn create_at(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
        link: WalLink,
        start: u64,
    ) -> Result<Partition, StorageError> {
        config.validate()?;
        compio::fs::create_dir_all(&dir)
            .await
            .map_err(|error| StorageError::io(IoOperation::Directory, &dir, error))?;
        if !list_segments(&dir).await?.is_empty() {
            return Err(StorageError::AlreadyExists(dir));
        }
        // A marker left from an earlier partition in this directory must not vouch for ours.
        match compio::fs::remove_file(dir.join(CLEAN_SHUTDOWN_MARKER)).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StorageError::io(IoOperation::Remove, &dir, error)),
        }
        // A new log: records an earlier log in this directory wrote never apply to it.
        let incarnation = incarnation::renew(&dir).await?;
        let files = SegmentFiles::open(&dir, start, true).await?;
        sync_directory(&dir).await?;
        if let Some(parent) = dir.parent() {
            sync_directory(parent).await?;
        }
        let direct = files.log.is_direct();
        let segment = Segment::new_active(start, Some(Rc::new(files)));
        Ok(Partition::start(
            dir,
            config,
            pool,
            VecDeque::from([segment]),
            0,
            Vec::new(),
            direct,
            incarnation,
            link,
        ))
    }

    /// Opens an existing partition, validating and repairing it (see the module docs); it uses
    /// no write-ahead log.
    pub async fn open(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
    ) -> Result<(Partition, RecoveryReport), StorageError> {
        Partition::open_linked(dir, config, pool, WalLink::default()).await
    }

    /// [`Partition::open`] with the shard's write-ahead log: what the logs held at boot for
    /// this log and its segments lack is put back first.
    pub async fn open_linked(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
        link: WalLink,
    ) -> Result<(Partition, RecoveryReport), StorageError> {
        config.validate()?;
        if !dir.is_dir() {
            return Err(StorageError::NotFound(dir));
        }
        let starts = list_segments(&dir).await?;
        if starts.is_empty() {
            tracing::warn!(dir = %dir.display(), "partition directory holds no segments; starting empty at offset 0");
            let partition = Partition::create_linked(dir, config, pool, link).await?;
            let report = RecoveryReport {
                segments_count: 1,
                ..RecoveryReport::default()
            };
            return Ok((partition, report));
        }
        // The marker vouches for the files only until the next write: remove it first.
        let marker_path = dir.join(CLEAN_SHUTDOWN_MARKER);
        let marker = match blocking::read(&marker_path).await {
            Ok(bytes) => {
                compio::fs::remove_file(&marker_path)
                    .await
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
        let incarnation = incarnation::read_or_create(&dir).await?;
        let partition = Partition::start(
            dir,
            config,
            pool,
            segments,
            last_timestamp,
            tail,
            direct,
            incarnation,
            link,
        );
        partition.replay_logged(&mut report).await?;
        Ok((partition, report))
    }

    /// Appends what the write-ahead logs held for this log at boot and its segments lack
    /// (storage/wal), and writes it to the segment files. A record that cannot follow the
    /// recovered log (a gap before it, a message that fails its check) is not applied, and the
    /// log takes a new incarnation so that it never is.
    async fn replay_logged(&self, report: &mut RecoveryReport) -> Result<(), StorageError> {
        let inner = &*self.inner;
        let Some(recovery) = inner.link.recovery.clone() else {
            return Ok(());
        };
        let Some(dir) = relative_dir(recovery.root(), &inner.dir) else {
            return Ok(());
        };
        let records = recovery.take(&dir, inner.incarnation.get());
        if records.is_empty() {
            return Ok(());
        }
        let mut replayed = 0u64;
        let mut left_over = false;
        for located in &records {
            let next = self.next_offset();
            let header = &located.header;
            if header.end_offset() <= next {
                continue;
            }
            if header.first_offset > next {
                left_over = true;
                break;
            }
            let applied = async {
                let data = recovery::read_messages(located).await?;
                let mut at = 0usize;
                for _ in header.first_offset..next {
                    let message = MessageView::parse(&data[at..]).map_err(|_| {
                        StorageError::InvalidBatch("a logged record does not parse")
                    })?;
                    at += message.size();
                }
                let batch = MessageBatch::from_stored(BytesMut::from(&data[at..]))
                    .map_err(|_| StorageError::InvalidBatch("a logged record does not parse"))?;
                let count = u64::from(batch.count());
                self.append_replica(batch).await?;
                Ok::<u64, StorageError>(count)
            }
            .await;
            match applied {
                Ok(count) => replayed += count,
                // The storage could not take it (a read, a write failed): the open fails, and
                // the logs are kept for the next start (the server sets them aside).
                Err(error)
                    if !matches!(
                        error,
                        StorageError::InvalidBatch(_) | StorageError::Corrupted { .. }
                    ) =>
                {
                    return Err(error);
                }
                Err(error) => {
                    tracing::warn!(dir = %inner.dir.display(), %error, first_offset = header.first_offset, "a write-ahead log record could not be applied; the log continues without it");
                    left_over = true;
                    break;
                }
            }
        }
        if replayed > 0 {
            self.flush(true).await?;
            report.messages_count += replayed;
            report.next_offset = self.next_offset();
            tracing::warn!(
                dir = %inner.dir.display(),
                messages = replayed,
                next_offset = report.next_offset,
                "partition recovered acknowledged messages from the write-ahead log"
            );
        }
        if left_over {
            inner.incarnation.set(incarnation::renew(&inner.dir).await?);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments, reason = "the parts of a partition, named")]
    fn start(
        dir: PathBuf,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
        segments: VecDeque<Segment>,
        last_timestamp: u64,
        tail: Vec<u8>,
        direct: bool,
        incarnation: u64,
        link: WalLink,
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
            logged_end: next_offset,
            log_refused: false,
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
        state.check_consistency();
        let cache = Rc::clone(pool.read_cache());
        let wal = link
            .wal
            .clone()
            .filter(|_| config.ack_mode == AckMode::Written);
        let wal_dir = link
            .recovery
            .as_ref()
            .and_then(|recovery| relative_dir(recovery.root(), &dir));
        let inner = Rc::new_cyclic(|me| Inner {
            dir,
            config,
            pool,
            cache,
            me: me.clone(),
            state: RefCell::new(state),
            progress: WaitList::default(),
            work: WaitList::default(),
            direct_io: Cell::new(direct),
            wal,
            wal_dir,
            link,
            incarnation: Cell::new(incarnation),
            read_ahead: Default::default(),
            index_window: Default::default(),
        });
        let writer = compio::runtime::spawn(writer_loop(Rc::clone(&inner)));
        Partition {
            inner,
            writer: RefCell::new(Some(writer)),
        }
    }
}

impl Partition {
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

    /// Gives this (closed) log a new incarnation before its files are removed or cut by the
    /// caller, so that a crash in between never brings its logged records back.
    pub async fn renew_incarnation(&self) -> Result<(), StorageError> {
        self.inner
            .incarnation
            .set(incarnation::renew(&self.inner.dir).await?);
        Ok(())
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
        // Acknowledged from the write-ahead log but not in the segment files yet: appended to
        // the reopened log before anything else (they are whole batches, in order).
        let logged: Vec<Bytes> = {
            let state = inner.state.borrow();
            let (from, to) = (state.written_end, state.logged_end);
            state
                .journal
                .iter()
                .filter(|entry| entry.first_offset >= from && entry.first_offset < to)
                .map(|entry| entry.bytes.clone())
                .collect()
        };
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
        let (partition, report) = Partition::open_linked(
            inner.dir.clone(),
            inner.config.clone(),
            Rc::clone(&inner.pool),
            inner.link.clone(),
        )
        .await?;
        for bytes in logged {
            let batch = MessageBatch::from_stored(BytesMut::from(&bytes[..]))
                .map_err(|_| StorageError::InvalidBatch("a logged batch does not parse"))?;
            partition.append_replica(batch).await?;
        }
        if partition.inner.log().is_some() {
            // Everything acknowledged is in the segment files now. Offsets after it will be
            // taken again, while a record of the failed log may hold other messages at them.
            partition.flush(true).await?;
            partition
                .inner
                .incarnation
                .set(incarnation::renew(&partition.inner.dir).await?);
        }
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
        blocking::remove_dir_all(&dir)
            .await
            .map_err(|error| StorageError::io(IoOperation::Remove, dir, error))
    }
}

/// `dir` relative to the data directory `root`, as log records name it; None outside it (a
/// partition that never logs: a test's, or a pool without a log).
fn relative_dir(root: &Path, dir: &Path) -> Option<String> {
    if root.as_os_str().is_empty() {
        return None;
    }
    dir.strip_prefix(root)
        .ok()
        .and_then(|relative| relative.to_str())
        .map(str::to_owned)
}

/// Start offsets of the `.log` files in `dir`, ascending.
pub(super) async fn list_segments(dir: &Path) -> Result<Vec<u64>, StorageError> {
    let names = blocking::read_dir_names(dir)
        .await
        .map_err(|error| StorageError::io(IoOperation::Directory, dir, error))?;
    let mut starts: Vec<u64> = names
        .iter()
        .filter_map(|name| name.to_str().and_then(parse_log_name))
        .collect();
    starts.sort_unstable();
    Ok(starts)
}
