//! Removing data: the oldest segments, the whole log (purge), and what retention expires.

use super::Partition;
use super::append::rotate;
use super::outcome::RetentionOutcome;
use super::state::{Segment, State};
use crate::storage::error::{IoOperation, StorageError};
use crate::storage::file::sync_directory;
use crate::storage::segment::{index_path, log_path};
use std::path::Path;

impl Partition {
    /// Deletes up to `count` of the oldest sealed segments (never the active one). Returns how
    /// many were deleted.
    pub async fn delete_oldest_segments(&self, count: u32) -> Result<u32, StorageError> {
        self.delete_front_segments(|deleted, _| deleted < count as usize)
            .await
    }

    /// Deletes the oldest sealed segments whose messages all lie before `offset` (never the
    /// active one). Returns how many were deleted.
    pub async fn delete_segments_before(&self, offset: u64) -> Result<u32, StorageError> {
        self.delete_front_segments(|_, segment| segment.end_offset() <= offset)
            .await
    }

    /// Deletes sealed segments from the front while `wanted(deleted so far, segment)` says so,
    /// never the active one.
    async fn delete_front_segments(
        &self,
        wanted: impl Fn(usize, &Segment) -> bool,
    ) -> Result<u32, StorageError> {
        let victims = {
            let mut state = self.inner.state.borrow_mut();
            let mut victims = Vec::new();
            while state.segments.len() > 1
                && state
                    .segments
                    .front()
                    .is_some_and(|segment| segment.sealed && wanted(victims.len(), segment))
            {
                victims.push(state.segments.pop_front().expect("checked"));
            }
            state.forget_removed_segments();
            state.check_consistency();
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
            state.forget_removed_segments();
            state.check_consistency();
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
            state.forget_removed_segments();
            state.check_consistency();
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
        // What was read ahead may hold messages of these segments.
        self.inner.read_ahead.clear();
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
}

pub(super) async fn remove_segment_files(
    dir: &Path,
    start_offset: u64,
) -> Result<(), StorageError> {
    for path in [log_path(dir, start_offset), index_path(dir, start_offset)] {
        match compio::fs::remove_file(&path).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StorageError::io(IoOperation::Remove, path, error)),
        }
    }
    Ok(())
}
