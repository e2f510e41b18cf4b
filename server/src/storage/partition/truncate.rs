//! Cutting a log back to an offset. A cluster replica drops a tail that the leader's log does
//! not share (it was never committed) before copying the leader's: the files are cut at the
//! first dropped message and the partition is opened again, so recovery rebuilds the state
//! (index, tail block, watermarks) from what is left, exactly as after a crash. A replica too
//! far behind a leader whose retention already deleted what it misses restarts its log empty
//! at the leader's first offset instead.

use super::Partition;
use super::lifecycle::list_segments;
use super::outcome::RecoveryReport;
use super::retention::remove_segment_files;
use crate::storage::blocking;
use crate::storage::error::{IoOperation, StorageError};
use crate::storage::file::sync_directory;
use crate::storage::index::{INDEX_ENTRY_SIZE, IndexEntry};
use crate::storage::segment::{CLEAN_SHUTDOWN_MARKER, index_path, log_path};
use crate::storage::wal::incarnation;

impl Partition {
    /// Closes the partition, removes every message from offset `end` on, and returns the log
    /// opened again (this one stays closed). Cutting at or past the end removes nothing.
    pub async fn truncate(&self, end: u64) -> Result<(Partition, RecoveryReport), StorageError> {
        let dir = self.inner.dir.clone();
        let config = self.inner.config.clone();
        let pool = self.inner.pool.clone();
        let link = self.inner.link.clone();
        self.close().await?;
        // Offsets from `end` on will name other messages: records of the cut tail must never
        // be applied again, whenever a crash comes (everything is in the files after close).
        incarnation::renew(&dir).await?;
        let mut starts = list_segments(&dir).await?;
        starts.sort_unstable();
        for &start in starts.iter().rev() {
            if start >= end {
                remove_segment_files(&dir, start).await?;
                continue;
            }
            // The segment holding `end`: a clean close wrote its whole index, which gives the
            // position of the first message to drop.
            let index = index_path(&dir, start);
            let entries = blocking::read(&index)
                .await
                .map_err(|error| StorageError::io(IoOperation::Read, &index, error))?;
            let keep = (end - start) as usize;
            if entries.len() / INDEX_ENTRY_SIZE > keep {
                let position = match keep {
                    0 => 0,
                    keep => {
                        let at = (keep - 1) * INDEX_ENTRY_SIZE;
                        IndexEntry::decode(&entries[at..at + INDEX_ENTRY_SIZE]).end_position
                    }
                };
                let log = log_path(&dir, start);
                blocking::set_len(&log, u64::from(position))
                    .await
                    .map_err(|error| StorageError::io(IoOperation::Truncate, &log, error))?;
                blocking::set_len(&index, (keep * INDEX_ENTRY_SIZE) as u64)
                    .await
                    .map_err(|error| StorageError::io(IoOperation::Truncate, &index, error))?;
            }
            break;
        }
        // The marker describes the files before the cut: without it, opening validates every
        // message of the last segment.
        let marker = dir.join(CLEAN_SHUTDOWN_MARKER);
        match compio::fs::remove_file(&marker).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StorageError::io(IoOperation::Remove, &marker, error)),
        }
        sync_directory(&dir).await?;
        Partition::open_linked(dir, config, pool, link).await
    }

    /// Closes the partition, removes every message, and returns an empty log whose next
    /// offset is `start` (this one stays closed). Offsets never go back: `start` must be at
    /// least this log's next offset.
    pub async fn restart_at(&self, start: u64) -> Result<Partition, StorageError> {
        if start < self.next_offset() {
            return Err(StorageError::InvalidConfig(format!(
                "cannot restart a log at offset {start}, below its next offset {}",
                self.next_offset()
            )));
        }
        let dir = self.inner.dir.clone();
        let config = self.inner.config.clone();
        let pool = self.inner.pool.clone();
        let link = self.inner.link.clone();
        self.close().await?;
        for start in list_segments(&dir).await? {
            remove_segment_files(&dir, start).await?;
        }
        sync_directory(&dir).await?;
        Partition::create_at(dir, config, pool, link, start).await
    }
}
