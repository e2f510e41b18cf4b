//! A partition: its segments, the append path, the writer task, reads, retention.
//!
//! All state lives in one `RefCell<State>` that is borrowed only between awaits. Appends do
//! their work (stamp, index, copy into staging buffers) synchronously, then wait on a
//! watermark; a per-partition writer task does all file writes, syncs, seals and creations;
//! reads plan under a short borrow and then do their own I/O, never waiting for the writer.

mod append;
mod lifecycle;
mod outcome;
mod read;
mod retention;
mod scan;
mod state;
mod truncate;
mod writer;

use crate::storage::config::PartitionConfig;
use crate::storage::error::StorageError;
use compio::runtime::JoinHandle;
use state::Inner;
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

pub use append::random_message_id;
pub use outcome::{AppendOutcome, PartitionStats, ReadOutcome, RecoveryReport, RetentionOutcome};
pub use scan::{ChecksumScan, Mismatch};

/// A partition log owned by one shard. Share it as `Rc<Partition>`: every method takes `&self`.
///
/// Dropping a partition without [`Partition::close`] stops its writer at once, like a crash:
/// what was only in memory is lost and recovery repairs the files on the next open.
pub struct Partition {
    inner: Rc<Inner>,
    writer: RefCell<Option<JoinHandle<()>>>,
}

impl Partition {
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

    /// The offset of the oldest stored message (the next offset when the partition is empty).
    pub fn first_offset(&self) -> u64 {
        self.inner.state.borrow().first_offset()
    }

    /// The offset of the last visible message; None when no message is visible.
    pub fn current_offset(&self) -> Option<u64> {
        let visible_end = self.visible_end();
        (visible_end > self.first_offset()).then(|| visible_end - 1)
    }

    /// The end of what the ack mode lets readers see: every offset below it is held as the
    /// mode promises (written, fsynced, or in memory).
    pub fn visible_end(&self) -> u64 {
        let state = self.inner.state.borrow();
        state
            .visible_end(self.inner.config.ack_mode)
            .max(state.first_offset())
    }

    /// Resolves once the message at `offset` is visible (see [`Partition::visible_end`]), or
    /// the partition stops taking writes; at once when it already is. A consumer waiting at the
    /// tail is woken by the write (or, in memory mode, the append) that shows it.
    pub async fn wait_visible(&self, offset: u64) {
        let inner = &*self.inner;
        inner
            .progress
            .wait_until(|| {
                let state = inner.state.borrow();
                state.visible_end(inner.config.ack_mode) > offset || state.unavailable().is_some()
            })
            .await;
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
}
