//! A partition's part in cluster replication. A partition is held by its topic's
//! replication-factor nodes, one of them its leader (assigned by the metadata leader:
//! `control/leadership.rs`). The leader appends a client's batch to its own log, then
//! answers once a majority of its replicas hold it in the partition's ack mode: followers copy
//! the leader's log by asking for what follows their own end (a fetch, as in Kafka), and each
//! fetch tells the leader how far that follower's log reaches. Consumers are shown only what a
//! majority holds (`commit_end`), so a new leader never takes back what a consumer saw.
//!
//! Every log carries its leader epochs (`epochs.rs`); a fetch whose log parts from the
//! leader's is told where to cut it, and a new leader first copies the most complete log
//! among a majority (the cluster thread's takeover) before it leads.

use super::LocalPartition;
use super::epochs::Epochs;
use super::replication::{Replication, save_epochs};
use crate::shard::message::ConsumerKey;
use bytes::{Bytes, BytesMut};
use rill_core::ErrorCode;
use rill_core::message::MessageBatch;
use std::collections::HashMap;
use std::time::Duration;

/// What one replica holds: its log's epochs and the end of what it holds in its ack mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaState {
    pub epochs: Epochs,
    pub end: u64,
    /// The leader's first offset below which this replica has deleted what it holds (or its
    /// own first offset, when that is higher): how far segment deletions have reached here.
    pub deleted_through: u64,
}

/// A request for the messages after the end of the asker's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// The asking node's replica id.
    pub follower: u64,
    /// The term in which the asker follows this node.
    pub epoch: u64,
    /// A new leader copying this node's log before it leads: answered whoever leads, not
    /// counted towards the commit, never waits.
    pub recover: bool,
    pub state: ReplicaState,
    pub max_messages: u32,
    /// How long the leader may hold the request while it has nothing new.
    pub wait: Duration,
    /// The version of the consumer offsets the asker copied last (`OffsetsCopy::version`).
    pub offsets_version: (u64, u64),
}

/// The leader's stored consumer offsets of the partition, whole, and their version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsCopy {
    pub version: (u64, u64),
    pub offsets: Vec<(ConsumerKey, u64)>,
}

/// The answer to a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// The asker's log holds messages this one does not: cut it to `end`.
    Truncate { epochs: Epochs, end: u64 },
    /// The asker's log ends before this one's first message (retention deleted what it
    /// misses): empty it and go on from `start`.
    Restart { epochs: Epochs, start: u64 },
    /// The messages after the asker's end (maybe none), as stored, and what is committed.
    Messages {
        epochs: Epochs,
        commit_end: u64,
        /// The leader's first stored offset: segments it deleted (DeleteSegments, retention)
        /// go on the replica too.
        first_offset: u64,
        messages: Bytes,
        /// When the asker's copy of the consumer offsets is not the current one.
        offsets: Option<OffsetsCopy>,
    },
}

/// How long an append waits for a majority before it is answered 57 TransientNotCommitted.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an append waits for this node to take the lead (a takeover in progress) before it
/// is answered 58 TransientNotAccepted.
const LEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The most message bytes one fetch answer carries (a replica frame holds 64 MiB).
const FETCH_MAX_BYTES: usize = 16 << 20;

/// The whole messages at the front of `bytes` that fit in `limit` (at least one).
fn whole_messages_within(bytes: Bytes, limit: usize) -> Bytes {
    if bytes.len() <= limit {
        return bytes;
    }
    let mut end = 0;
    for message in rill_core::message::MessageIter::new(&bytes) {
        let Ok(message) = message else { break };
        if end > 0 && end + message.size() > limit {
            break;
        }
        end += message.size();
    }
    bytes.slice(..end)
}

impl LocalPartition {
    /// With deduplication on, a replica remembers the ids it copies, so that a producer's
    /// retry reaching it after a failover is stored once, as on the leader it was sent to.
    /// Stored ids include those the leader drew for id 0, which only take up room.
    fn remember_replicated_ids(&self, messages: &Bytes) {
        let Some(dedup) = &self.dedup else {
            return;
        };
        let mut dedup = dedup.borrow_mut();
        let now = std::time::Instant::now();
        for message in rill_core::message::MessageIter::new(messages).map_while(Result::ok) {
            dedup.remember(message.id(), now);
        }
    }

    /// Takes the leader's epochs for this replica's log, which holds the leader's messages
    /// below `end`. The file is replaced first, and only when they change, so the copy in
    /// memory never describes a history the file does not.
    async fn adopt_epochs(
        &self,
        replication: &Replication,
        leader: &Epochs,
        end: u64,
    ) -> Result<(), ErrorCode> {
        let mut adopted = replication.epochs.borrow().clone();
        if adopted.generation != leader.generation {
            // A purged log starts again at offset 0: older deletions say nothing about it.
            replication.deleted_through.set(0);
        }
        if adopted.adopt(leader, end) {
            save_epochs(&self.dir, &adopted).await?;
            *replication.epochs.borrow_mut() = adopted;
        }
        Ok(())
    }

    fn replication(&self) -> Result<&Replication, ErrorCode> {
        self.replication
            .as_ref()
            .ok_or(ErrorCode::FeatureUnavailable)
    }

    /// This replica's epochs and the end of its log.
    pub fn replica_state(&self) -> Result<ReplicaState, ErrorCode> {
        let replication = self.replication()?;
        Ok(ReplicaState {
            epochs: replication.epochs.borrow().clone(),
            end: self.storage().visible_end(),
            deleted_through: replication
                .deleted_through
                .get()
                .max(self.storage().first_offset()),
        })
    }

    /// This replica's state, for a node taking the partition over in `term`. Whatever the
    /// taker does not learn here must not become committed in an older term afterwards, or a
    /// batch could be acknowledged by the old leader and a replica that answered, yet be
    /// missing from the log the taker leads with. So from now on this replica stores nothing
    /// fetched in an older term and stops leading one (its waiting appends are answered 57).
    pub fn promise(&self, term: u64) -> Result<ReplicaState, ErrorCode> {
        let replication = self.replication()?;
        if term > replication.promised.get() {
            replication.promised.set(term);
            if replication
                .leading
                .get()
                .is_some_and(|leading| leading < term)
            {
                tracing::info!(partition = %self.key, term, "a newer leader is taking over: no longer leading");
                replication.leading.set(None);
                replication.matched.borrow_mut().clear();
                replication.changed.notify_all();
            }
        }
        self.replica_state()
    }

    /// Starts leading the partition in term `epoch` (its log is the most complete of a
    /// majority by then), or stops leading it (None): appends waiting for a commit give up.
    pub async fn lead(&self, epoch: Option<u64>) -> Result<(), ErrorCode> {
        let replication = self.replication()?;
        if epoch.is_some_and(|epoch| epoch < replication.promised.get()) {
            // A takeover of an older term finishing after a newer one began.
            return Err(ErrorCode::TransientNotAccepted);
        }
        replication.matched.borrow_mut().clear();
        replication.deleted.borrow_mut().clear();
        if let Some(epoch) = epoch {
            let end = self.storage().visible_end();
            let begun = replication.epochs.borrow_mut().begin(epoch, end);
            if begun {
                let epochs = replication.epochs.borrow().clone();
                save_epochs(&self.dir, &epochs).await?;
            }
            tracing::info!(partition = %self.key, epoch, end, "leading the partition");
        }
        replication.leading.set(epoch);
        if let Some(epoch) = epoch {
            replication.offsets_version.set((epoch, 0));
        }
        self.advance_commit();
        replication.changed.notify_all();
        Ok(())
    }

    /// Recomputes the commit from the leader's own end and its followers' in this term.
    fn advance_commit(&self) {
        let Some(replication) = &self.replication else {
            return;
        };
        if replication.leading.get().is_none() {
            return;
        }
        let mut ends = vec![self.storage().visible_end()];
        ends.extend(replication.matched.borrow().values().copied());
        ends.sort_unstable_by(|a, b| b.cmp(a));
        if let Some(&end) = ends.get(replication.majority() - 1)
            && end > replication.commit_end.get()
        {
            replication.commit_end.set(end);
            replication.changed.notify_all();
        }
    }

    /// Before an append: the term this node leads in, waiting a little for a takeover.
    pub(super) async fn leading_term(&self) -> Result<Option<u64>, ErrorCode> {
        let Some(replication) = &self.replication else {
            return Ok(None);
        };
        let wait = replication
            .changed
            .wait_until(|| replication.leading.get().is_some() || self.closed.get());
        let _ = compio::time::timeout(LEAD_TIMEOUT, wait).await;
        replication
            .leading
            .get()
            .map(Some)
            .ok_or(ErrorCode::TransientNotAccepted)
    }

    /// After a local append: wakes the followers' fetches and waits until a majority holds
    /// the batch (57 TransientNotCommitted when it does not in time or the lead is lost).
    pub(super) async fn await_commit(&self, epoch: u64, last_offset: u64) -> Result<(), ErrorCode> {
        let Some(replication) = &self.replication else {
            return Ok(());
        };
        replication.changed.notify_all();
        self.advance_commit();
        // Only this term's commit vouches for the batch: after a change of leader this node's
        // commit_end follows another log, whose messages at these offsets may be others.
        let committed = || replication.commit_end.get() > last_offset;
        if self.held_in_time(replication, epoch, committed).await {
            Ok(())
        } else {
            tracing::warn!(partition = %self.key, last_offset, "a batch was not held by a majority in time");
            Err(ErrorCode::TransientNotCommitted)
        }
    }

    /// Waits (up to the commit timeout) until `held` while this node leads in `epoch`; true
    /// when it is held and this node still leads in `epoch` then.
    async fn held_in_time(
        &self,
        replication: &Replication,
        epoch: u64,
        held: impl Fn() -> bool,
    ) -> bool {
        let done = || held() || replication.leading.get() != Some(epoch) || self.closed.get();
        let _ = compio::time::timeout(COMMIT_TIMEOUT, replication.changed.wait_until(done)).await;
        replication.leading.get() == Some(epoch) && held()
    }

    /// The end consumers may read to: what a majority holds (None without replication).
    pub(super) fn commit_end(&self) -> Option<u64> {
        self.replication
            .as_ref()
            .map(|replication| replication.commit_end.get())
    }

    /// After a purge on the leader: the log restarts in a new generation.
    pub(super) async fn restart_epochs(&self) -> Result<(), ErrorCode> {
        let Some(replication) = &self.replication else {
            return Ok(());
        };
        let epoch = replication
            .leading
            .get()
            .unwrap_or(replication.epochs.borrow().last());
        replication.epochs.borrow_mut().purge(epoch);
        replication.commit_end.set(0);
        replication.matched.borrow_mut().clear();
        replication.deleted.borrow_mut().clear();
        replication.deleted_through.set(0);
        let epochs = replication.epochs.borrow().clone();
        save_epochs(&self.dir, &epochs).await?;
        replication.changed.notify_all();
        Ok(())
    }

    /// On the leader, after a purge: waits until a majority of the nodes (this one included)
    /// hold the purged log, i.e. follow in its generation. A takeover prefers the highest
    /// generation among a majority, so from then on no leader brings the purged messages
    /// back. 57 TransientNotCommitted when that does not happen in time or the lead is lost:
    /// the purge may still be followed, or undone by the next leader.
    pub(super) async fn await_purge_commit(&self) -> Result<(), ErrorCode> {
        let Some(replication) = &self.replication else {
            return Ok(());
        };
        let Some(epoch) = replication.leading.get() else {
            return Ok(());
        };
        let generation = replication.epochs.borrow().generation;
        // `matched` was emptied by the purge and only counts fetches in the new generation.
        let held = || {
            replication.matched.borrow().len() + 1 >= replication.majority()
                && replication.epochs.borrow().generation == generation
        };
        if self.held_in_time(replication, epoch, held).await {
            Ok(())
        } else {
            tracing::warn!(partition = %self.key, "a purge was not held by a majority in time");
            Err(ErrorCode::TransientNotCommitted)
        }
    }

    /// On the leader, after deleting segments: waits until a majority of the nodes (this one
    /// included) have deleted what lies below `first_offset`, this log's first offset now. A
    /// takeover deletes below the furthest deletion among a majority, so from then on no
    /// leader serves the deleted messages again. 57 TransientNotCommitted otherwise.
    pub(super) async fn await_deletion_commit(&self, first_offset: u64) -> Result<(), ErrorCode> {
        let Some(replication) = &self.replication else {
            return Ok(());
        };
        let Some(epoch) = replication.leading.get() else {
            return Ok(());
        };
        let held = || {
            let followed = replication
                .deleted
                .borrow()
                .values()
                .filter(|&&through| through >= first_offset)
                .count();
            followed + 1 >= replication.majority()
        };
        replication.changed.notify_all();
        if self.held_in_time(replication, epoch, held).await {
            Ok(())
        } else {
            tracing::warn!(partition = %self.key, first_offset, "a segment deletion was not followed by a majority in time");
            Err(ErrorCode::TransientNotCommitted)
        }
    }

    /// On a node taking over: deletes what a majority member deleted (`deleted_through`), so
    /// an acknowledged DeleteSegments is not undone by the change of leader.
    pub async fn catch_up_deletion(&self, deleted_through: u64) -> Result<(), ErrorCode> {
        let replication = self.replication()?;
        if deleted_through > self.storage().first_offset() {
            self.follow_deleted_segments(deleted_through).await?;
            self.refresh_counters();
        }
        if deleted_through > replication.deleted_through.get() {
            replication.deleted_through.set(deleted_through);
        }
        Ok(())
    }

    /// On the leader, after a consumer offset was stored or deleted: the followers' copies
    /// are out of date.
    pub(super) fn offsets_changed(&self) {
        if let Some(replication) = &self.replication
            && let Some(epoch) = replication.leading.get()
        {
            let (_, changes) = replication.offsets_version.get();
            replication.offsets_version.set((epoch, changes + 1));
            replication.changed.notify_all();
        }
    }

    /// Makes this replica's stored consumer offsets the leader's.
    async fn copy_offsets(&self, copy: OffsetsCopy) -> Result<(), ErrorCode> {
        let wanted: HashMap<ConsumerKey, u64> = copy.offsets.into_iter().collect();
        let held: Vec<(ConsumerKey, u64)> = self
            .offsets
            .borrow()
            .iter()
            .map(|(consumer, offset)| (*consumer, *offset))
            .collect();
        for (consumer, _) in held
            .iter()
            .filter(|(consumer, _)| !wanted.contains_key(consumer))
        {
            self.forget_offset(*consumer).await;
        }
        for (consumer, offset) in wanted {
            if self.offsets.borrow().get(&consumer) != Some(&offset) {
                self.store_offset(consumer, offset).await?;
            }
        }
        Ok(())
    }

    /// Answers a follower's (or a recovering leader's) fetch.
    pub async fn serve_fetch(&self, request: FetchRequest) -> Result<Fetched, ErrorCode> {
        let replication = self.replication()?;
        if self.closed.get() {
            return Err(ErrorCode::PartitionNotFound);
        }
        let leads = || replication.leading.get() == Some(request.epoch);
        if !request.recover && !leads() {
            return Err(ErrorCode::TransientNotAccepted);
        }
        let asked = &request.state;
        let mine = replication.epochs.borrow().clone();
        let common = mine.common_end(self.storage().visible_end(), &asked.epochs, asked.end);
        if common < asked.end {
            return Ok(Fetched::Truncate {
                epochs: mine,
                end: common,
            });
        }
        // The follower's log is a prefix of ours that includes this term's start: it counts
        // towards the commit. One that is not there yet gets our epochs at once.
        let in_step = !request.recover
            && asked.epochs.last() == request.epoch
            && asked.epochs.generation == mine.generation;
        if in_step {
            let joined = replication
                .matched
                .borrow_mut()
                .insert(request.follower, asked.end)
                .is_none();
            let deleted_more = replication
                .deleted
                .borrow_mut()
                .insert(request.follower, asked.deleted_through)
                .is_none_or(|before| before < asked.deleted_through);
            self.advance_commit();
            if joined || deleted_more {
                // A purge waits for followers in its generation, whatever their ends, and a
                // segment deletion for followers that deleted as far.
                replication.changed.notify_all();
            }
            let has_more = || {
                self.storage().visible_end() > asked.end
                    || replication.offsets_version.get() != request.offsets_version
                    || self.storage().first_offset() > asked.deleted_through
            };
            if !has_more() {
                let wait = replication
                    .changed
                    .wait_until(|| has_more() || !leads() || self.closed.get());
                let _ = compio::time::timeout(request.wait, wait).await;
            }
        }
        let _shared = self.shared().await?;
        let storage = self.storage();
        // A purge while the fetch waited restarts the log: check again where the logs part.
        let mine = replication.epochs.borrow().clone();
        let common = mine.common_end(storage.visible_end(), &asked.epochs, asked.end);
        if common < asked.end {
            return Ok(Fetched::Truncate {
                epochs: mine,
                end: common,
            });
        }
        // Reading there would start at our first message, which the asker cannot append.
        if asked.end < storage.first_offset() {
            return Ok(Fetched::Restart {
                epochs: mine,
                start: storage.first_offset(),
            });
        }
        let messages = if storage.visible_end() > asked.end && request.max_messages > 0 {
            let read = storage
                .read(asked.end, request.max_messages)
                .await
                .map_err(|error| self.read_error(error))?;
            whole_messages_within(read.to_bytes(), FETCH_MAX_BYTES)
        } else {
            Bytes::new()
        };
        let version = replication.offsets_version.get();
        let offsets = (version != request.offsets_version).then(|| OffsetsCopy {
            version,
            offsets: self
                .offsets
                .borrow()
                .iter()
                .map(|(consumer, offset)| (*consumer, *offset))
                .collect(),
        });
        Ok(Fetched::Messages {
            epochs: replication.epochs.borrow().clone(),
            commit_end: replication.commit_end.get(),
            first_offset: self.storage().first_offset(),
            messages,
            offsets,
        })
    }

    /// Stores a fetch's answer in this replica's log; returns what the log holds then. `asked`
    /// is the state the fetch was made from: an answer to a log that has changed since (a task
    /// of an earlier leadership still finishing) is refused, never applied to another log, and
    /// so is one fetched in a term older than this replica's promise (`promise`).
    pub async fn store_fetched(
        &self,
        fetched: Fetched,
        asked: &ReplicaState,
        term: u64,
    ) -> Result<ReplicaState, ErrorCode> {
        let replication = self.replication()?;
        // The log, not how far it was trimmed (this node's own retention may have run since).
        let now = self.replica_state()?;
        if term < replication.promised.get() || now.epochs != asked.epochs || now.end != asked.end {
            return Err(ErrorCode::TransientNotAccepted);
        }
        match fetched {
            Fetched::Truncate { epochs, end } => {
                let _exclusive = self.exclusive().await?;
                let storage = self.writable_storage().await?;
                tracing::warn!(
                    partition = %self.key,
                    from = end,
                    to = storage.next_offset(),
                    "cutting messages the leader's log does not hold (never committed)"
                );
                let (fresh, _report) = storage.truncate(end).await.map_err(super::storage_error)?;
                self.replace_storage(fresh).await;
                // What is left is the leader's log up to `end`: its epochs are the leader's.
                let kept = end.min(self.storage().visible_end());
                self.adopt_epochs(replication, &epochs, kept).await?;
                let commit = replication
                    .commit_end
                    .get()
                    .min(self.storage().visible_end());
                replication.commit_end.set(commit);
            }
            Fetched::Restart { epochs, start } => {
                let _exclusive = self.exclusive().await?;
                let storage = self.writable_storage().await?;
                tracing::warn!(
                    partition = %self.key,
                    from = storage.next_offset(),
                    to = start,
                    "the leader no longer holds the messages this replica misses: restarting its log \
                     at the leader's first offset"
                );
                let fresh = storage
                    .restart_at(start)
                    .await
                    .map_err(super::storage_error)?;
                self.replace_storage(fresh).await;
                self.adopt_epochs(replication, &epochs, start).await?;
                // Nothing below `start` is held here any more, so nothing there can be shown;
                // what follows is committed as the leader's next answers say. (A crash between
                // removing the old files and creating the new segment reopens the log empty at
                // 0, and the next fetch restarts it again.)
                replication.commit_end.set(start);
                self.refresh_counters();
            }
            Fetched::Messages {
                epochs,
                commit_end,
                first_offset,
                messages,
                offsets,
            } => {
                if !messages.is_empty() {
                    let _shared = self.shared().await?;
                    let storage = self.writable_storage().await?;
                    let batch = MessageBatch::from_stored(BytesMut::from(&messages[..]))
                        .map_err(|_| ErrorCode::InvalidMessagesCount)?;
                    storage
                        .append_replica(batch)
                        .await
                        .map_err(super::storage_error)?;
                    self.remember_replicated_ids(&messages);
                }
                let end = self.storage().visible_end();
                self.adopt_epochs(replication, &epochs, end).await?;
                let commit = replication.commit_end.get().max(commit_end.min(end));
                replication.commit_end.set(commit);
                if let Some(copy) = offsets {
                    self.copy_offsets(copy).await?;
                }
                if first_offset > self.storage().first_offset() {
                    self.follow_deleted_segments(first_offset).await?;
                }
                if first_offset > replication.deleted_through.get() {
                    replication.deleted_through.set(first_offset);
                }
                self.refresh_counters();
            }
        }
        self.replica_state()
    }

    /// Deletes this replica's sealed segments that hold nothing at or after `first_offset`,
    /// the leader's first message: what the leader deleted is not served again after a
    /// failover. A segment that also holds later messages stays (the boundaries are this
    /// node's, and a replica never holds less than its leader).
    async fn follow_deleted_segments(&self, first_offset: u64) -> Result<(), ErrorCode> {
        let _exclusive = self.exclusive().await?;
        let deleted = self
            .writable_storage()
            .await?
            .delete_segments_before(first_offset)
            .await
            .map_err(super::storage_error)?;
        if deleted > 0 {
            tracing::info!(
                partition = %self.key,
                deleted,
                leader_first_offset = first_offset,
                "deleted the segments the leader deleted"
            );
        }
        Ok(())
    }
}
