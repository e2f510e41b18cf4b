//! Reads: find the segments, plan which bytes come from memory (the read cache, batches not
//! written yet) or the files, read them with aligned O_DIRECT reads, and look offsets up by
//! timestamp.

use super::Partition;
use super::outcome::ReadOutcome;
use super::state::{IndexWindow, Inner, State};
use crate::storage::config::ChecksumReads;
use crate::storage::error::StorageError;
use crate::storage::file::DirectFile;
use crate::storage::index::{INDEX_ENTRY_SIZE, IndexEntry, MemoryIndex};
use crate::storage::pool::BLOCK_SIZE;
use crate::storage::segment::{SegmentFiles, log_path};
use bytes::Bytes;
use rill_core::message::{HEADER_SIZE, MessageIter, MessageView};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

impl Partition {
    /// Up to `max_count` messages from `start_offset` (or from the first stored message when
    /// `start_offset` is older), never past the visibility watermark and at most
    /// `max_read_bytes` (but always at least one message when one is visible).
    ///
    /// A read that went to the segment files and has more messages after it starts the read
    /// of the next poll (`start_offset` right after it, the same `max_count`) at once; that
    /// poll then takes what was read ahead (storage/read_ahead.rs).
    pub async fn read(
        &self,
        start_offset: u64,
        max_count: u32,
    ) -> Result<ReadOutcome, StorageError> {
        let inner = &self.inner;
        if let Some(slot) = inner.read_ahead.claim(start_offset, max_count)
            && let Some((outcome, from_files)) = slot.take().await
        {
            // Retention may have removed the oldest of these messages since they were read.
            let first_stored = inner.state.borrow().first_offset();
            if outcome.first_offset >= first_stored {
                if from_files {
                    read_ahead(inner, ReadEnd::of(&outcome), max_count);
                }
                return Ok(outcome);
            }
        }
        let (outcome, from_files) = read_now(inner, start_offset, max_count).await?;
        if from_files {
            read_ahead(inner, ReadEnd::of(&outcome), max_count);
        }
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
}

/// Where a read ended: enough to start the one after it.
#[derive(Clone, Copy)]
struct ReadEnd {
    count: u32,
    last_offset: u64,
    bytes: u64,
}

impl ReadEnd {
    fn of(outcome: &ReadOutcome) -> ReadEnd {
        ReadEnd {
            count: outcome.count,
            last_offset: outcome.last_offset,
            bytes: outcome.size_bytes(),
        }
    }
}

/// Starts reading the poll after `after` (read from the files) when more messages are visible
/// after it, the partition has no such read ahead yet and the shard's budget has room. When a
/// poll is already waiting for it as it finishes, the read after it starts at once too: the
/// files then stay busy while replies are sent, as long as the consumer keeps up.
fn read_ahead(inner: &Rc<Inner>, after: ReadEnd, max_count: u32) {
    let budget = inner.cache.read_ahead();
    if !budget.enabled() || after.count == 0 {
        return;
    }
    let next = after.last_offset + 1;
    if next >= inner.state.borrow().visible_end(inner.config.ack_mode)
        || inner.read_ahead.has(next, max_count)
    {
        return;
    }
    // The next poll is likely the size of this one.
    let Some(slot) = budget.reserve(next, max_count, after.bytes) else {
        return;
    };
    inner.read_ahead.add(Rc::clone(&slot));
    let inner = Rc::clone(inner);
    compio::runtime::spawn(async move {
        let read = read_now(&inner, next, max_count).await;
        let end = read
            .as_ref()
            .ok()
            .filter(|(_, from_files)| *from_files)
            .map(|(outcome, _)| ReadEnd::of(outcome));
        // The next read is started before the waiting poll is woken, so that its read is
        // queued ahead of this one's reply: a large send runs inline in the submission and
        // would leave the disk idle meanwhile.
        if slot.is_awaited()
            && let Some(end) = end
        {
            read_ahead(&inner, end, max_count);
        }
        slot.finish(read.ok().map(|read| {
            let bytes = read.0.size_bytes();
            (read, bytes)
        }));
    })
    .detach();
}

/// [`Partition::read`] without reading ahead; also says whether any of it came from the files.
async fn read_now(
    inner: &Inner,
    start_offset: u64,
    max_count: u32,
) -> Result<(ReadOutcome, bool), StorageError> {
    let mut from_files = false;
    let mut outcome = ReadOutcome::empty(start_offset);
    let mut next = start_offset;
    let mut remaining = u64::from(max_count);
    let mut budget = inner.config.max_read_bytes;
    let mut total = 0u64;
    let verify_disk = inner.config.checksum_reads != ChecksumReads::None;
    let verify_memory = inner.config.checksum_reads == ChecksumReads::All;
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
        let mut broken = false;
        let hits = pieces
            .iter()
            .filter(|piece| matches!(piece, ReadPiece::Memory { .. }))
            .count() as u64;
        inner.cache.record_read(hits, pieces.len() as u64 - hits);
        from_files |= hits < pieces.len() as u64;
        for piece in pieces {
            let mut frame_checksums = None;
            let (first_offset, bytes, checked) = match piece {
                ReadPiece::Memory {
                    bytes,
                    count,
                    frame_checksums: sums,
                } => {
                    frame_checksums = sums;
                    let first = MessageView::parse(&bytes)
                        .map(|message| message.offset())
                        .unwrap_or_default();
                    let checked = if verify_memory {
                        check_stored(&bytes, first, &inner.dir, 0, true)?
                    } else {
                        Checked::whole(bytes.len(), count)
                    };
                    (first, bytes, checked)
                }
                ReadPiece::Disk {
                    files,
                    start,
                    end,
                    first_offset,
                } => {
                    let bytes = files.log.read_range(start, end).await?;
                    let checked =
                        check_stored(&bytes, first_offset, files.log.path(), start, verify_disk)?;
                    (first_offset, bytes, checked)
                }
                ReadPiece::DiskIndexed {
                    files,
                    relative,
                    count,
                    indexed,
                    first_offset,
                } => {
                    let (bytes, checked) = read_with_disk_index(
                        &files,
                        &inner.index_window,
                        relative,
                        count,
                        indexed,
                        budget,
                        total == 0,
                        first_offset,
                        verify_disk,
                    )
                    .await?;
                    (first_offset, bytes, checked)
                }
            };
            // A message that fails its checksum is never served: the read ends before it,
            // and fails only when it is the first message asked for.
            let bytes = match checked.mismatch {
                None => bytes,
                Some(mismatch) if total == 0 && checked.good == 0 => return Err(mismatch),
                Some(_) => {
                    broken = true;
                    frame_checksums = None;
                    bytes.slice(..checked.good)
                }
            };
            // Counted by the plan or the check, never by walking the messages again: a
            // walk touches every message header, one cache miss per message.
            let count = checked.count;
            if count == 0 {
                if broken {
                    break;
                }
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
            outcome.frame_checksums.push(frame_checksums);
            if broken {
                break;
            }
        }
        if broken {
            break;
        }
        next = outcome.last_offset + 1;
        // Stop when the plan is done, the count or byte budget is used up, or the last
        // piece returned nothing (the next message does not fit the budget).
        if !continues || remaining == 0 || budget == 0 || total == total_before {
            break;
        }
    }
    outcome.count = u32::try_from(total).expect("reads are bounded by a u32 count");
    Ok((outcome, from_files))
}

/// A part of a read: bytes already in memory, a known byte range of a log, or a range of
/// messages of a sealed segment whose index must be read from disk first.
pub(super) enum ReadPiece {
    /// With the entry's 0.9 frame checksums when the piece is the whole entry.
    Memory {
        bytes: Bytes,
        /// Messages in `bytes` (the index knows; the bytes are not walked to count them).
        count: u64,
        frame_checksums: Option<Arc<[u64]>>,
    },
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
        /// Entries from `relative` on that the index file holds and that are visible (the
        /// read's index window may reach that far).
        indexed: u64,
        first_offset: u64,
    },
}

/// Decides where the messages of a read come from, under one short borrow. Returns the
/// clamped start offset and the pieces.
pub(super) fn plan_read(
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
                indexed: segment
                    .end_offset()
                    .min(visible_end)
                    .min(segment.start_offset + segment.index_persisted)
                    .saturating_sub(offset),
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
        // Bytes from `memory_start` on are in memory (cached, or not written yet).
        let memory_start = state.memory_start(segment.start_offset, segment.written_len);
        let disk_end = to.min(memory_start);
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
        if to > memory_start {
            journal_pieces(
                inner,
                state,
                index,
                segment.start_offset,
                from.max(memory_start),
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
pub(super) fn journal_pieces(
    inner: &Inner,
    state: &State,
    index: &MemoryIndex,
    segment_start: u64,
    from: u64,
    to: u64,
    pieces: &mut Vec<ReadPiece>,
) -> Result<(), StorageError> {
    let first = state.journal.partition_point(|entry| {
        entry.segment_start < segment_start
            || (entry.segment_start == segment_start && entry.end() <= from)
    });
    let mut covered = from;
    // Messages before `covered`: each piece's start is the previous piece's end.
    let mut covered_count = index.count_ending_by(covered);
    for entry in state.journal.iter().skip(first) {
        if entry.segment_start != segment_start || covered >= to {
            break;
        }
        let entry_end = entry.end();
        if entry.position > covered {
            break;
        }
        let slice_end = to.min(entry_end);
        let whole = covered == entry.position && slice_end == entry_end;
        let end_count = index.count_ending_by(slice_end);
        pieces.push(ReadPiece::Memory {
            bytes: entry
                .bytes
                .slice((covered - entry.position) as usize..(slice_end - entry.position) as usize),
            count: (end_count - covered_count) as u64,
            frame_checksums: entry.frame_checksums.clone().filter(|_| whole),
        });
        covered = slice_end;
        covered_count = end_count;
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
#[allow(
    clippy::too_many_arguments,
    reason = "one read's parameters, passed as they are"
)]
pub(super) async fn read_with_disk_index(
    files: &Rc<SegmentFiles>,
    window: &RefCell<IndexWindow>,
    relative: u64,
    count: u64,
    indexed: u64,
    budget: u64,
    at_least_one: bool,
    first_offset: u64,
    verify_checksums: bool,
) -> Result<(Bytes, Checked), StorageError> {
    let available_end = relative + indexed.max(count);
    // Every message is at least a header, so no more than this many can fit the budget.
    let count = count.min(budget / HEADER_SIZE as u64 + 1).max(1);
    let first_entry = relative.saturating_sub(1);
    let cached = window.borrow().get(files, first_entry, relative + count);
    let entry_bytes = match cached {
        Some(bytes) => bytes,
        None => {
            let window_end = available_end
                .min(first_entry + IndexWindow::ENTRIES)
                .max(relative + count);
            let read = files
                .index
                .get()
                .await?
                .read_range(
                    first_entry * INDEX_ENTRY_SIZE as u64,
                    window_end * INDEX_ENTRY_SIZE as u64,
                )
                .await?;
            let wanted =
                read.slice(..((relative + count - first_entry) as usize * INDEX_ENTRY_SIZE));
            if window_end > relative + count {
                window.borrow_mut().hold(files, first_entry, read);
            }
            wanted
        }
    };
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
            return Ok((Bytes::new(), Checked::whole(0, 0)));
        }
        take = 1;
    }
    let end = u64::from(wanted[take - 1].end_position);
    if end <= start {
        return Err(corrupted("index positions do not increase"));
    }
    let bytes = files.log.read_range(start, end).await?;
    let checked = check_stored(
        &bytes,
        first_offset,
        files.log.path(),
        start,
        verify_checksums,
    )?;
    Ok((bytes, checked))
}

/// What checking read bytes found: how many leading bytes hold messages that may be served,
/// and the checksum mismatch that ended them, if one did.
pub(super) struct Checked {
    pub(super) good: usize,
    /// Messages in the good bytes.
    pub(super) count: u64,
    pub(super) mismatch: Option<StorageError>,
}

impl Checked {
    pub(super) fn whole(len: usize, count: u64) -> Checked {
        Checked {
            good: len,
            count,
            mismatch: None,
        }
    }
}

/// Checks read bytes: whole messages with consecutive offsets from `first_offset` (anything
/// else means the index and the log disagree: an error), and, when asked, each message's
/// checksum (the first mismatch ends the good bytes).
pub(super) fn check_stored(
    bytes: &[u8],
    first_offset: u64,
    path: &Path,
    position: u64,
    verify_checksums: bool,
) -> Result<Checked, StorageError> {
    let mut expected = first_offset;
    let mut good = 0;
    for message in MessageIter::new(bytes) {
        match message {
            Ok(message) if message.offset() == expected => {
                if verify_checksums && !message.checksum_is_valid() {
                    return Ok(Checked {
                        good,
                        count: expected - first_offset,
                        mismatch: Some(StorageError::ChecksumMismatch {
                            path: path.to_path_buf(),
                            position: position + good as u64,
                            offset: expected,
                        }),
                    });
                }
                good += message.size();
                expected += 1;
            }
            _ => {
                return Err(StorageError::Corrupted {
                    path: path.to_path_buf(),
                    position,
                    reason: "stored messages do not match the index",
                });
            }
        }
    }
    Ok(Checked {
        good,
        count: expected - first_offset,
        mismatch: None,
    })
}

/// Binary search over the pages of a sealed segment's index file for the first of its first
/// `count` entries with a timestamp at least `timestamp`; one 4 KiB read per probe.
pub(super) async fn search_index_file(
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
