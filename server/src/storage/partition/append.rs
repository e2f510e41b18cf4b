//! The append path: stamp the batch, index it, copy it into aligned staging buffers, wait on
//! the ack mode's watermark; backpressure and segment rotation.

use super::Partition;
use super::outcome::AppendOutcome;
use super::state::{Inner, JournalEntry, Segment, Staged, State};
use crate::storage::config::{AckMode, MAX_BATCH_BYTES, MIN_WRITE_BUFFER_BYTES};
use crate::storage::error::StorageError;
use crate::storage::index::IndexEntry;
use crate::storage::pool::{BLOCK_SIZE, align_down};
use rill_core::message::{MessageBatch, MessageView, stamp};
use std::collections::VecDeque;

impl Partition {
    /// Stamps the batch (offsets, one timestamp, random ids for id 0, checksums), appends it,
    /// and returns once the partition's ack mode is satisfied. Appends are stored in the order
    /// they are accepted, which is the order of the calls.
    pub async fn append(
        &self,
        batch: MessageBatch,
        timestamp_micros: u64,
    ) -> Result<AppendOutcome, StorageError> {
        self.append_with(batch, Stamping::Fresh(timestamp_micros))
            .await
    }

    /// Appends messages copied from another replica's log as they are stored there: offsets,
    /// timestamps, ids and checksums are kept, so the two logs hold the same bytes. The batch
    /// must continue this log (its first offset is the next offset) and every checksum must
    /// hold; returns once the partition's ack mode is satisfied.
    pub async fn append_replica(&self, batch: MessageBatch) -> Result<AppendOutcome, StorageError> {
        self.append_with(batch, Stamping::Kept).await
    }

    async fn append_with(
        &self,
        batch: MessageBatch,
        stamping: Stamping,
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
            accept(inner, &mut state, batch, stamping)?
        };
        inner.work.notify_all();
        let last = outcome.last_offset;
        let mode = inner.config.ack_mode;
        if mode == AckMode::Memory {
            // Accepted is visible in this mode: consumers waiting at the tail may read it now.
            inner.progress.notify_all();
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
}

/// Starts a new (logical) segment at the next offset; the writer creates its files.
pub(super) fn rotate(state: &mut State) {
    let start = state.next_offset;
    state.segments.push_back(Segment::new_active(start, None));
    state.tail_len = 0;
    state.check_consistency();
}

/// How an append sets the messages' offsets and timestamps.
#[derive(Clone, Copy)]
pub(super) enum Stamping {
    /// A client's batch: the next offsets, this server timestamp, random ids for id 0.
    Fresh(u64),
    /// Another replica's stored messages: their offsets must continue the log, their
    /// timestamps must not go back, their checksums must hold; nothing is rewritten.
    Kept,
}

/// The synchronous part of an append: rotation, stamping, indexing, staging.
pub(super) fn accept(
    inner: &Inner,
    state: &mut State,
    batch: MessageBatch,
    stamping: Stamping,
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
    let fresh_timestamp = match stamping {
        Stamping::Fresh(timestamp_micros) => timestamp_micros.max(state.last_timestamp),
        Stamping::Kept => 0,
    };
    let mut timestamp = state.last_timestamp;
    let (mut bytes, mut frame_checksums) = batch.into_parts();
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
        let kept = match stamping {
            Stamping::Fresh(_) => None,
            Stamping::Kept => Some((
                message.offset(),
                message.timestamp(),
                message.checksum_is_valid(),
            )),
        };
        if let Some((kept_offset, kept_timestamp, valid)) = kept {
            let refusal = if kept_offset != offset {
                Some("replicated messages do not continue the log")
            } else if kept_timestamp < timestamp {
                Some("replicated timestamps go back")
            } else if !valid {
                Some("a replicated message fails its checksum")
            } else {
                None
            };
            if let Some(reason) = refusal {
                index.truncate(entries_before);
                unstage(&mut staging, staged_before, segment_start, base_position);
                return Err(StorageError::InvalidBatch(reason));
            }
            timestamp = kept_timestamp;
        }
        let message_bytes = &mut bytes[position..position + message_size];
        if kept.is_none() {
            timestamp = fresh_timestamp;
            stamp(message_bytes, offset, timestamp, || {
                // A 0.9 frame checksum covers the id.
                frame_checksums = None;
                random_message_id()
            });
        }
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
    // Memory mode reads what is not written yet from here; with a read cache every batch is
    // kept, and its write moves it into the cache.
    // The same for what may be acknowledged from the write-ahead log: until its round reaches
    // the segment files, memory is where reads find it.
    if config.ack_mode == AckMode::Memory || inner.cache.enabled() || inner.log().is_some() {
        // With a cache, a copy (see cache.rs for why); without one, memory mode keeps the
        // batch only until its round, and the request's own buffer serves.
        let bytes = if inner.cache.enabled() {
            inner.cache.bin().copy(&bytes)
        } else {
            bytes.freeze()
        };
        state.journal.push_back(JournalEntry {
            segment_start,
            first_offset,
            position: base_position,
            bytes,
            cached: None,
            frame_checksums,
        });
    }
    state.next_offset = offset;
    state.last_timestamp = timestamp;
    state.pending_messages += count;
    state.pending_bytes += size;
    state.unwritten_bytes += size;
    state.kick_writer();
    state.check_consistency();
    Ok(AppendOutcome {
        first_offset,
        last_offset: offset - 1,
    })
}

/// Takes back bytes staged for a batch that turned out invalid: buffers added since
/// `staged_before` are dropped and the buffer that was open is cut back to `position`.
pub(super) fn unstage(
    staging: &mut Staging<'_>,
    staged_before: usize,
    segment_start: u64,
    position: u64,
) {
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
pub fn random_message_id() -> u128 {
    loop {
        let id: u128 = rand::random();
        if id != 0 {
            return id;
        }
    }
}

/// The parts of the state staging needs, borrowed apart from the segment being appended to.
pub(super) struct Staging<'a> {
    staged: &'a mut VecDeque<Staged>,
    tail: &'a [u8; BLOCK_SIZE],
    tail_len: usize,
}

/// Copies accepted bytes of `segment_start` at segment position `position` into staging
/// buffers. A new buffer starts at the block containing `position`, beginning with the tail
/// block's bytes so the block is written whole; buffers fill completely before the next one
/// starts, so only the last buffer of a round ends mid-block.
pub(super) fn stage(
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
