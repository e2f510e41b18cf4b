//! The partitions a shard owns: storage plus consumer offsets, and the data-plane operations
//! executed on them (append, poll with every strategy, flush, offsets, segments, purge), as typed
//! calls: directly on the owner, or from another shard through [`LocalPartition::serve`].

mod checksums;
pub mod epochs;
mod offset_files;
mod offsets;
pub mod replica;
#[cfg(test)]
mod replica_tests;
mod replication;

use super::dedup::Deduplicator;
use super::message::{ConsumerKey, PartitionCall, PollArgs, Polled};
use super::table::{PartitionCounters, PartitionKey};
use crate::encryption::{MessageCipher, SealError};
use crate::metrics::ShardMetricsHandle;
use crate::storage::{self, BufferPool, PartitionConfig, PartitionStats, blocking};
use rill_core::ErrorCode;
use rill_core::message::MessageBatch;
use rill_core::primitives::PollingKind;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// `<data>/streams/<stream>/topics/<topic>/partitions/<partition>`.
pub fn partition_dir(data: &Path, key: &PartitionKey) -> PathBuf {
    crate::layout::partition_dir(data, key.stream_id, key.topic_id, key.partition_id)
}

/// One owned partition.
pub struct LocalPartition {
    pub key: PartitionKey,
    /// Replaced as a whole by a purge, which restarts the log at offset 0.
    storage: RefCell<Rc<storage::Partition>>,
    pool: Rc<BufferPool>,
    /// Given again to the log a purge creates.
    wal: storage::WalLink,
    pub counters: Arc<PartitionCounters>,
    offsets: RefCell<HashMap<ConsumerKey, u64>>,
    /// The offset files kept open (`offsets.rs`).
    offset_files: RefCell<offset_files::OffsetFiles>,
    dir: PathBuf,
    /// The owning shard's metric cells.
    metrics: ShardMetricsHandle,
    /// The storage stats last published to the metrics (for the writer counters' deltas).
    published: Cell<PartitionStats>,
    /// A reopen after a storage failure is in progress (see [`LocalPartition::writable_storage`]).
    reopening: Cell<bool>,
    /// Orders admin operations against data operations: appends, polls, flushes and offsets
    /// hold it shared; purge, segment deletion and close hold it exclusively, so a data request
    /// racing one of them runs wholly before it or wholly after it, against the new state. The
    /// lock is write-preferring: a steady stream of appends cannot starve a purge.
    gate: async_lock::RwLock<()>,
    /// Set by [`LocalPartition::close`]: every later operation answers PartitionNotFound.
    closed: Cell<bool>,
    /// The ids received lately, with `[system.message_deduplication]` on.
    dedup: Option<RefCell<Deduplicator>>,
    /// Seals appended messages and opens polled ones, with `[system.encryption]` on.
    cipher: Option<MessageCipher>,
    /// The offset of the last checksum mismatch logged at ERROR: a consumer retrying the same
    /// broken message is counted every time but logged once.
    reported_mismatch: Cell<Option<u64>>,
    /// In a cluster: the partition's epochs, leadership and commit (`replica.rs`).
    replication: Option<replication::Replication>,
}

/// What a partition does to messages beside storing them, each per its configuration.
#[derive(Default)]
pub struct Extras {
    pub dedup: Option<Deduplicator>,
    pub cipher: Option<MessageCipher>,
    /// In a cluster: how many nodes hold the partition (a majority of them commits).
    pub replicas: Option<usize>,
    /// The shard's write-ahead log and the records the logs held at boot.
    pub wal: storage::WalLink,
}

fn storage_error(error: storage::StorageError) -> ErrorCode {
    tracing::warn!(%error, "storage operation failed");
    error.code()
}

impl LocalPartition {
    /// Opens the partition's files (running recovery), or creates them when the directory holds
    /// no segment yet. Stored offsets are loaded and clamped to the recovered data.
    pub async fn open(
        data_dir: &Path,
        key: PartitionKey,
        config: PartitionConfig,
        pool: Rc<BufferPool>,
        counters: Arc<PartitionCounters>,
        metrics: ShardMetricsHandle,
        extras: Extras,
    ) -> Result<LocalPartition, ErrorCode> {
        let dir = partition_dir(data_dir, &key);
        let has_segments = blocking::read_dir_names(&dir)
            .await
            .map(|names| {
                names
                    .iter()
                    .any(|name| name.to_string_lossy().ends_with(".log"))
            })
            .unwrap_or(false);
        let storage = if has_segments {
            let (partition, report) = storage::Partition::open_linked(
                dir.clone(),
                config,
                pool.clone(),
                extras.wal.clone(),
            )
            .await
            .map_err(storage_error)?;
            if report.truncated_log_bytes > 0 || report.repaired_segments > 0 {
                tracing::warn!(partition = %key, ?report, "recovered partition after an unclean stop");
            }
            partition
        } else {
            compio::fs::create_dir_all(&dir).await.map_err(|error| {
                tracing::error!(partition = %key, %error, "cannot create partition directory");
                ErrorCode::CannotCreatePartitionDirectory
            })?;
            storage::Partition::create_linked(dir.clone(), config, pool.clone(), extras.wal.clone())
                .await
                .map_err(storage_error)?
        };
        let mut published = storage.stats();
        // Whatever the writer did before the partition was served counts too.
        published.writes = Default::default();
        let replication = match extras.replicas {
            Some(voters) => Some(replication::Replication::load(&dir, voters).await),
            None => None,
        };
        let partition = LocalPartition {
            key,
            storage: RefCell::new(Rc::new(storage)),
            pool,
            wal: extras.wal,
            counters,
            offsets: RefCell::new(HashMap::new()),
            offset_files: RefCell::default(),
            dir,
            metrics,
            published: Cell::new(published),
            reopening: Cell::new(false),
            gate: async_lock::RwLock::new(()),
            closed: Cell::new(false),
            dedup: extras.dedup.map(RefCell::new),
            cipher: extras.cipher,
            reported_mismatch: Cell::new(None),
            replication,
        };
        partition.load_offsets().await;
        partition.refresh_counters();
        Ok(partition)
    }

    /// The partition's storage (an `Rc`, so an operation keeps using the log it started on even
    /// if a purge replaces it meanwhile).
    pub fn storage(&self) -> Rc<storage::Partition> {
        self.storage.borrow().clone()
    }

    /// The storage for an operation that writes. After a write or sync failure (ENOSPC, EIO, a
    /// failed fsync) the storage refuses appends; the next writing operation reopens it from
    /// disk, cut back to what was acknowledged (see `Partition::reopen_after_failure`), so
    /// writes resume once the fault clears. While the fault persists the reopen fails and the
    /// operation gets the failed log's error (4010 CannotAppendMessage); reads keep being
    /// served by the failed log, which never shows more than it wrote.
    async fn writable_storage(&self) -> Result<Rc<storage::Partition>, ErrorCode> {
        let current = self.storage();
        if !current.is_failed() || self.reopening.replace(true) {
            return Ok(current);
        }
        let reopened = current.reopen_after_failure().await;
        self.reopening.set(false);
        match reopened {
            Ok((fresh, _report)) => {
                self.replace_storage(fresh).await;
                Ok(self.storage())
            }
            Err(error) => {
                tracing::warn!(partition = %self.key, %error, "cannot reopen the failed partition yet");
                Err(ErrorCode::CannotAppendMessage)
            }
        }
    }

    /// Serves `fresh` from now on, in place of a log that was reopened (after a storage failure,
    /// or cut by a replica's truncation).
    async fn replace_storage(&self, fresh: storage::Partition) {
        let mut published = fresh.stats();
        published.writes = Default::default();
        self.published.set(published);
        *self.storage.borrow_mut() = Rc::new(fresh);
        // Stored offsets never point past the data (memory mode may have lost some).
        self.load_offsets().await;
        self.refresh_counters();
    }

    /// Removes every message and restarts the log at offset 0, as upstream's purge does:
    /// the current log is closed, its segment files deleted and a fresh one created. Consumer
    /// offsets are cleared by the caller, which holds the gate exclusively.
    async fn purge_log(&self) -> Result<(), ErrorCode> {
        // A log stopped by a storage failure is reopened first (it could not be closed).
        let old = self.writable_storage().await?;
        let config = old.config().clone();
        old.close().await.map_err(storage_error)?;
        // Purged messages must stay purged should the server crash before the new log exists.
        old.renew_incarnation().await.map_err(storage_error)?;
        let names = blocking::read_dir_names(&self.dir).await.map_err(|error| {
            tracing::error!(partition = %self.key, %error, "cannot list partition directory for purge");
            ErrorCode::CannotReadPartitions
        })?;
        for name in names {
            let name = name.to_string_lossy();
            if name.ends_with(".log") || name.ends_with(".index") || name == "clean_shutdown" {
                let path = self.dir.join(name.as_ref());
                compio::fs::remove_file(&path).await.map_err(|error| {
                    tracing::error!(partition = %self.key, %error, file = %name, "cannot delete segment file for purge");
                    ErrorCode::SegmentNotFound
                })?;
            }
        }
        let fresh = storage::Partition::create_linked(
            self.dir.clone(),
            config,
            self.pool.clone(),
            self.wal.clone(),
        )
        .await
        .map_err(storage_error)?;
        let mut published = fresh.stats();
        published.writes = Default::default();
        self.published.set(published);
        *self.storage.borrow_mut() = Rc::new(fresh);
        // The messages are gone: sending them again stores them again.
        if let Some(dedup) = &self.dedup {
            dedup.borrow_mut().clear();
        }
        self.restart_epochs().await
    }

    /// Publishes the storage's figures to the shared counters and the writer's counters
    /// (group-commit rounds, syncs) to the shard's metrics.
    pub fn refresh_counters(&self) {
        let stats = self.storage().stats();
        self.publish_writes(stats);
        self.counters
            .messages_count
            .store(stats.messages_count, Ordering::Relaxed);
        self.counters
            .size_bytes
            .store(stats.size_bytes, Ordering::Relaxed);
        self.counters
            .segments_count
            .store(stats.segments_count, Ordering::Relaxed);
        self.counters.next_offset.store(
            self.storage()
                .current_offset()
                .map_or(0, |offset| offset + 1),
            Ordering::Relaxed,
        );
    }

    /// Adds what the storage's writer did since the last call to the shard's metrics.
    fn publish_writes(&self, stats: PartitionStats) {
        let last = self.published.replace(stats).writes;
        let now = stats.writes;
        if now.rounds == last.rounds && now.syncs == last.syncs {
            return;
        }
        let mut rounds = [0u64; crate::metrics::ROUND_BUCKETS];
        for ((delta, now), last) in rounds
            .iter_mut()
            .zip(now.rounds_by_messages)
            .zip(last.rounds_by_messages)
        {
            *delta = now - last;
        }
        let metrics = &self.metrics;
        metrics
            .write_rounds
            .add_bucketed(&rounds, now.messages - last.messages);
        metrics.written_bytes.add(now.bytes - last.bytes);
        metrics.syncs.add(now.syncs - last.syncs);
    }

    /// Publishes the writer's counters without refreshing the shared partition figures.
    pub fn publish_write_counters(&self) {
        self.publish_writes(self.storage().stats());
    }

    /// Executes a call that came through the inbox and sends its reply.
    pub async fn serve(&self, call: PartitionCall) {
        match call {
            PartitionCall::Append { batch, reply } => {
                let _ = reply.send(self.append(batch).await);
            }
            PartitionCall::Poll { args, reply } => {
                let _ = reply.send(self.poll(args).await);
            }
            PartitionCall::Flush { fsync, reply } => {
                let _ = reply.send(self.flush(fsync).await);
            }
            PartitionCall::DeleteSegments { count, reply } => {
                let _ = reply.send(self.delete_segments(count).await);
            }
            PartitionCall::Purge { reply } => {
                let _ = reply.send(self.purge().await);
            }
            PartitionCall::StoreOffset {
                consumer,
                offset,
                reply,
            } => {
                let _ = reply.send(self.store_consumer_offset(consumer, offset).await);
            }
            PartitionCall::GetOffset { consumer, reply } => {
                let _ = reply.send(self.consumer_offset(consumer));
            }
            PartitionCall::DeleteOffset { consumer, reply } => {
                let _ = reply.send(self.delete_consumer_offset(consumer).await);
            }
        }
    }

    /// Shared access for a data operation, or PartitionNotFound once the partition is closed.
    async fn shared(&self) -> Result<async_lock::RwLockReadGuard<'_, ()>, ErrorCode> {
        let guard = self.gate.read().await;
        if self.closed.get() {
            return Err(ErrorCode::PartitionNotFound);
        }
        Ok(guard)
    }

    /// Exclusive access for an admin operation, or PartitionNotFound once it is closed.
    async fn exclusive(&self) -> Result<async_lock::RwLockWriteGuard<'_, ()>, ErrorCode> {
        let guard = self.gate.write().await;
        if self.closed.get() {
            return Err(ErrorCode::PartitionNotFound);
        }
        Ok(guard)
    }

    /// Stops serving the partition: waits for the operations in flight, then closes its log.
    /// Every later operation answers PartitionNotFound. Closing twice does nothing.
    pub async fn close(&self) -> Result<(), storage::StorageError> {
        let _exclusive = self.gate.write().await;
        if self.closed.replace(true) {
            return Ok(());
        }
        if let Some(replication) = &self.replication {
            // Fetches and appends waiting on the partition give up now.
            replication.wake_all();
        }
        // The files may be deleted next; their descriptors go now, not with the last handle.
        self.offset_files.borrow_mut().forget_all();
        self.storage().close().await
    }

    /// Appends a batch; returns the offset of its first message. With deduplication on,
    /// messages whose id the partition stored lately are dropped first, and a batch of nothing
    /// but such messages stores nothing (None).
    ///
    /// Ids are remembered once their append is acknowledged in the partition's ack mode, never
    /// before: a duplicate is dropped only when its original is stored as durably as the mode
    /// promises, so a failed or slow original never takes a retry down with it. A resend that
    /// races its still-unacknowledged original is stored too (a duplicate, never a loss).
    pub async fn append(&self, batch: MessageBatch) -> Result<Option<u64>, ErrorCode> {
        // In a cluster: only the partition's leader appends (waiting out a takeover).
        let term = self.leading_term().await?;
        let shared = self.shared().await?;
        let timestamp = crate::time::now_micros();
        let storage = self.writable_storage().await?;
        let (batch, ids) = self.drop_duplicates(batch);
        if batch.is_empty() {
            return Ok(None);
        }
        let batch = match &self.cipher {
            Some(cipher) => cipher.seal(&batch).map_err(|error| match error {
                SealError::PayloadTooBig => ErrorCode::TooBigMessagePayload,
                SealError::Cipher => ErrorCode::CannotEncryptData,
            })?,
            None => batch,
        };
        let messages = u64::from(batch.count());
        let started = std::time::Instant::now();
        let span = tracing::debug_span!(
            target: crate::telemetry::REQUEST_SPAN_TARGET,
            "storage.append",
            partition_id = i64::from(self.key.partition_id),
            messages = messages as i64,
        );
        let outcome = tracing::Instrument::instrument(storage.append(batch, timestamp), span)
            .await
            .map_err(storage_error)?;
        if let Some(term) = term {
            // Not under the gate: a purge need not wait for the followers.
            drop(shared);
            self.await_commit(term, outcome.last_offset).await?;
        }
        if let Some(dedup) = &self.dedup {
            let mut dedup = dedup.borrow_mut();
            let now = std::time::Instant::now();
            ids.iter().for_each(|&id| dedup.remember(id, now));
        }
        let metrics = &self.metrics;
        metrics.record_ack(self.storage().config().ack_mode, started.elapsed());
        metrics.appends.inc();
        metrics.appended_messages.add(messages);
        self.counters.appends.inc();
        self.counters.appended_messages.add(messages);
        self.refresh_counters();
        Ok(Some(outcome.first_offset))
    }

    /// Drops the messages whose ids the partition stored lately, and repeats of an id within
    /// the batch; returns the batch to store and its ids, to remember once it is stored. Id 0
    /// (the server assigns a random one) is never a duplicate.
    fn drop_duplicates(&self, batch: MessageBatch) -> (MessageBatch, Vec<u128>) {
        let Some(dedup) = &self.dedup else {
            return (batch, Vec::new());
        };
        let mut dedup = dedup.borrow_mut();
        let now = std::time::Instant::now();
        let mut ids = Vec::with_capacity(batch.count() as usize);
        let mut in_batch = std::collections::HashSet::new();
        let keep: Vec<bool> = batch
            .iter()
            .map(|message| {
                let id = message.id();
                let fresh = id == 0 || (!dedup.contains(id, now) && in_batch.insert(id));
                if fresh && id != 0 {
                    ids.push(id);
                }
                fresh
            })
            .collect();
        let dropped = keep.iter().filter(|&&keep| !keep).count() as u64;
        if dropped == 0 {
            return (batch, ids);
        }
        tracing::debug!(partition = %self.key, dropped, "dropped messages with duplicate ids");
        self.metrics.deduplicated_messages.add(dropped);
        self.counters.deduplicated_messages.add(dropped);
        (batch.retain(&keep), ids)
    }

    pub async fn poll(&self, args: PollArgs) -> Result<Polled, ErrorCode> {
        let mut polled = {
            let _shared = self.shared().await?;
            self.read(args).await?
        };
        if polled.count == 0
            && !args.wait_for_data.is_zero()
            && args.count > 0
            && self.commit_end().is_none()
            && let Some(wanted) = self.tail_start(&args)
        {
            // The gate is not held while waiting: a purge or a deletion goes ahead, and the
            // wait ends when the storage closes.
            let storage = self.storage();
            let _ = compio::time::timeout(args.wait_for_data, storage.wait_visible(wanted)).await;
            let _shared = self.shared().await?;
            polled = self.read(args).await?;
        }
        let messages = u64::from(polled.count);
        self.metrics.polls.inc();
        self.metrics.polled_messages.add(messages);
        self.counters.polls.inc();
        self.counters.polled_messages.add(messages);
        self.refresh_counters();
        Ok(polled)
    }

    pub async fn flush(&self, fsync: bool) -> Result<(), ErrorCode> {
        let _shared = self.shared().await?;
        self.writable_storage()
            .await?
            .flush(fsync)
            .await
            .map_err(storage_error)?;
        self.refresh_counters();
        Ok(())
    }

    /// The message saver's periodic write of what `memory` mode buffered.
    pub async fn save_buffered(&self) {
        let Ok(_shared) = self.shared().await else {
            return;
        };
        if let Err(error) = self.storage().flush(false).await {
            tracing::warn!(partition = %self.key, %error, "periodic flush failed");
        }
        self.refresh_counters();
    }

    /// Deletes sealed segments past the topic's message expiry; returns how many.
    pub async fn apply_expiry(&self, now_micros: u64) -> Result<u32, ErrorCode> {
        let _shared = self.shared().await?;
        let outcome = self
            .storage()
            .apply_retention(now_micros)
            .await
            .map_err(storage_error)?;
        self.refresh_counters();
        Ok(outcome.segments_deleted)
    }

    /// Deletes the oldest sealed segment (the topic is over its max size); returns how many
    /// were deleted (0: only the active segment is left).
    pub async fn delete_oldest_segment(&self) -> Result<u32, ErrorCode> {
        let _exclusive = self.exclusive().await?;
        let deleted = self
            .storage()
            .delete_oldest_segments(1)
            .await
            .map_err(storage_error)?;
        self.refresh_counters();
        Ok(deleted)
    }

    /// In a cluster, answered once a majority has deleted as far.
    pub async fn delete_segments(&self, count: u32) -> Result<(), ErrorCode> {
        {
            let _exclusive = self.exclusive().await?;
            self.storage()
                .delete_oldest_segments(count)
                .await
                .map_err(storage_error)?;
            self.refresh_counters();
        }
        // Outside the gate: the followers' fetches that carry the deletion need it.
        self.await_deletion_commit(self.storage().first_offset())
            .await
    }

    /// Removes every message and every stored offset; the log restarts at offset 0.
    /// In a cluster, answered once a majority holds the purged log.
    pub async fn purge(&self) -> Result<(), ErrorCode> {
        {
            let _exclusive = self.exclusive().await?;
            self.purge_log().await?;
            self.forget_all_offsets().await;
            self.refresh_counters();
        }
        // Outside the gate: the followers' fetches that carry the purge need it.
        self.await_purge_commit().await
    }

    /// The offset a poll by offset or "next" starts at, the one a waiting poll waits for.
    fn tail_start(&self, args: &PollArgs) -> Option<u64> {
        match args.strategy.kind {
            PollingKind::Offset => Some(args.strategy.value),
            PollingKind::Next => Some(
                match args
                    .consumer
                    .and_then(|consumer| self.offsets.borrow().get(&consumer).copied())
                {
                    Some(stored) => stored + 1,
                    None => self.storage().first_offset(),
                },
            ),
            _ => None,
        }
    }

    async fn read(&self, args: PollArgs) -> Result<Polled, ErrorCode> {
        let PollArgs {
            strategy,
            count,
            consumer,
            auto_commit,
            ..
        } = args;
        let mut current = self.storage().current_offset();
        if let Some(commit_end) = self.commit_end() {
            // Consumers see only what a majority holds.
            current = current
                .filter(|_| commit_end > 0)
                .map(|c| c.min(commit_end - 1));
        }
        let mut polled = Polled {
            partition_id: self.key.partition_id,
            current_offset: current.unwrap_or(0),
            ..Polled::default()
        };
        let Some(current) = current else {
            return Ok(polled);
        };
        if count == 0 {
            return Ok(polled);
        }
        let first = self.storage().first_offset();
        let start = match strategy.kind {
            PollingKind::Offset => strategy.value,
            PollingKind::Timestamp => {
                match self
                    .storage()
                    .offset_for_timestamp(strategy.value)
                    .await
                    .map_err(storage_error)?
                {
                    Some(offset) => offset,
                    None => return Ok(polled),
                }
            }
            PollingKind::First => first,
            PollingKind::Last => (current + 1 - u64::from(count).min(current + 1)).max(first),
            PollingKind::Next => {
                match consumer.and_then(|consumer| self.offsets.borrow().get(&consumer).copied()) {
                    Some(stored) => stored + 1,
                    None => first,
                }
            }
        };
        if start > current {
            return Ok(polled);
        }
        let start = start.max(first);
        let count = u64::from(count).min(current - start + 1) as u32;
        let span = tracing::debug_span!(
            target: crate::telemetry::REQUEST_SPAN_TARGET,
            "storage.read",
            partition_id = i64::from(self.key.partition_id),
            offset = start as i64,
        );
        let read = tracing::Instrument::instrument(self.storage().read(start, count), span)
            .await
            .map_err(|error| self.read_error(error))?;
        polled.count = read.count;
        polled.last_offset = (read.count > 0).then_some(read.last_offset);
        polled.chunks = match &self.cipher {
            // Decrypted into a new buffer: the checksums kept were over the stored bytes.
            Some(cipher) if read.count > 0 => vec![
                cipher
                    .open(&read.bytes)
                    .map_err(|error| self.decrypt_error(error))?,
            ],
            _ => {
                polled.frame_checksums = read.frame_checksums;
                read.bytes
            }
        };
        if auto_commit
            && read.count > 0
            && let Some(consumer) = consumer
        {
            self.store_offset(consumer, read.last_offset).await?;
        }
        Ok(polled)
    }
}
