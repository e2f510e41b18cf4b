//! Segment files on disk: names, opening, validation and crash recovery.

use super::error::{IoOperation, StorageError};
use super::file::DirectFile;
use super::index::{INDEX_ENTRY_SIZE, IndexEntry, MemoryIndex};
use super::pool::{AlignedBuf, BufferPool, align_down};
use rill_core::message::{HEADER_SIZE, MessageView};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Recovery reads the log in windows of this size (larger for a single larger message).
const RECOVERY_WINDOW_BYTES: u64 = 4 << 20;

/// `<dir>/<20-digit start offset>.log`
pub(crate) fn log_path(dir: &Path, start_offset: u64) -> PathBuf {
    dir.join(format!("{start_offset:020}.log"))
}

/// `<dir>/<20-digit start offset>.index`
pub(crate) fn index_path(dir: &Path, start_offset: u64) -> PathBuf {
    dir.join(format!("{start_offset:020}.index"))
}

/// Written by a clean close, removed by open before anything is written: its presence says the
/// active segment's files were complete when the process stopped.
/// ```text
/// offset size field
///      0    8 start offset of the active segment   u64 LE
///      8    8 logical length of its .log           u64 LE
///     16    8 number of messages (index entries)   u64 LE
/// ```
pub(crate) const CLEAN_SHUTDOWN_MARKER: &str = "clean_shutdown";

pub(crate) fn encode_clean_marker(start_offset: u64, len: u64, count: u64) -> Vec<u8> {
    [start_offset, len, count]
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect()
}

/// `(start offset, length, count)` from a marker's bytes.
pub(crate) fn decode_clean_marker(bytes: &[u8]) -> Option<(u64, u64, u64)> {
    if bytes.len() != 24 {
        return None;
    }
    let field = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    Some((field(0), field(8), field(16)))
}

/// The start offset encoded in a segment file name, for `.log` files only.
pub(crate) fn parse_log_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The `.log` of one segment, open, and its `.index`, open only while needed.
pub(crate) struct SegmentFiles {
    pub(crate) log: DirectFile,
    pub(crate) index: IndexFile,
}

impl SegmentFiles {
    /// Opens the log; with `create`, creates (truncates) both files.
    pub(crate) async fn open(
        dir: &Path,
        start_offset: u64,
        create: bool,
    ) -> Result<SegmentFiles, StorageError> {
        let log = DirectFile::open(&log_path(dir, start_offset), create).await?;
        let index = IndexFile {
            path: index_path(dir, start_offset),
            file: RefCell::new(None),
        };
        if create {
            DirectFile::open(&index.path, true).await?;
        }
        Ok(SegmentFiles { log, index })
    }
}

/// A segment's `.index`, opened on first use and closed again by [`IndexFile::close`]. The
/// active segment keeps its index in memory and writes it only when sealed or closed, and
/// sealed segments need theirs only when read, so a segment at rest holds one descriptor (its
/// `.log`) instead of two: 10,000 one-segment partitions fit in 10,000 descriptors.
pub(crate) struct IndexFile {
    path: PathBuf,
    file: RefCell<Option<Rc<DirectFile>>>,
}

impl IndexFile {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The open file. A missing index is created empty: recovery rebuilds it from the log.
    pub(crate) async fn get(&self) -> Result<Rc<DirectFile>, StorageError> {
        if let Some(file) = self.file.borrow().as_ref() {
            return Ok(Rc::clone(file));
        }
        let exists = super::blocking::exists(&self.path)
            .await
            .map_err(|error| StorageError::io(IoOperation::Open, &self.path, error))?;
        let file = Rc::new(DirectFile::open(&self.path, !exists).await?);
        // Another task of this shard may have opened it while we waited: keep one.
        Ok(Rc::clone(self.file.borrow_mut().get_or_insert(file)))
    }

    /// Releases the descriptor (once in-flight users drop theirs); the next `get` reopens.
    pub(crate) fn close(&self) {
        self.file.borrow_mut().take();
    }
}

/// Checks one stored message: its header is sane and complete, it carries the expected offset,
/// a non-zero id (the server never stores id 0, so a zero-filled region is never a message) and
/// a matching checksum, and its timestamp does not go backwards.
pub(crate) fn validate_message<'a>(
    bytes: &'a [u8],
    expected_offset: u64,
    min_timestamp: u64,
) -> Option<MessageView<'a>> {
    let message = MessageView::parse(bytes).ok()?;
    (message.id() != 0
        && message.offset() == expected_offset
        && message.timestamp() >= min_timestamp
        && message.checksum_is_valid())
    .then_some(message)
}

/// What recovery found in one segment.
pub(crate) struct RecoveredSegment {
    pub(crate) count: u64,
    pub(crate) len: u64,
    pub(crate) last_timestamp: u64,
    /// The whole index, when the caller asked to keep it (the active segment).
    pub(crate) index: Option<MemoryIndex>,
    /// The partial last block of the log, `len % BLOCK_SIZE` bytes.
    pub(crate) tail: Vec<u8>,
    /// Index entries that described messages the log does not hold intact.
    pub(crate) dropped_index_entries: u64,
    /// Entries rebuilt from the log because the index lacked them.
    pub(crate) rebuilt_index_entries: u64,
    /// Bytes cut from the end of the log file (torn data plus preallocated space).
    pub(crate) truncated_log_bytes: u64,
}

/// A sealed segment's numbers when its files agree with each other.
pub(crate) struct SealedSummary {
    pub(crate) count: u64,
    pub(crate) len: u64,
    pub(crate) last_timestamp: u64,
}

/// The cheap open-time check of a sealed segment: the index is whole entries, its last entry
/// ends exactly at the end of the log, and the last message validates. Returns None when any
/// of that fails, and the caller then runs full recovery on the segment.
pub(crate) async fn check_sealed(
    files: &SegmentFiles,
    start_offset: u64,
) -> Result<Option<SealedSummary>, StorageError> {
    let log_len = files.log.size().await?;
    let index = files.index.get().await?;
    let index_len = index.size().await?;
    if index_len == 0 || index_len % INDEX_ENTRY_SIZE as u64 != 0 {
        return Ok(None);
    }
    let count = index_len / INDEX_ENTRY_SIZE as u64;
    let entries_from = count.saturating_sub(2);
    let bytes = index
        .read_range(entries_from * INDEX_ENTRY_SIZE as u64, index_len)
        .await?;
    let entries: Vec<IndexEntry> = bytes
        .chunks_exact(INDEX_ENTRY_SIZE)
        .map(IndexEntry::decode)
        .collect();
    let last = *entries.last().expect("at least one entry");
    let start = if count >= 2 {
        u64::from(entries[0].end_position)
    } else {
        0
    };
    if u64::from(last.relative_offset) != count - 1
        || u64::from(last.end_position) != log_len
        || start >= log_len
    {
        return Ok(None);
    }
    let message = files.log.read_range(start, log_len).await?;
    let expected_offset = start_offset + count - 1;
    match validate_message(&message, expected_offset, 0) {
        Some(view)
            if view.size() as u64 == log_len - start && view.timestamp() == last.timestamp =>
        {
            Ok(Some(SealedSummary {
                count,
                len: log_len,
                last_timestamp: last.timestamp,
            }))
        }
        _ => Ok(None),
    }
}

/// Validates a segment that may have been cut short by a crash and repairs its files.
///
/// 1. The index prefix whose entries are plausible (entry `i` has relative offset `i`,
///    positions grow by at least a header, timestamps do not decrease, nothing points past the
///    log) is read.
/// 2. If the partition was closed cleanly (`closed_cleanly`, from the marker `close` leaves)
///    and the files agree (the plausible prefix is the whole index, its last entry ends exactly
///    at the end of the log, and the last message validates), the segment is trusted as it
///    is: a clean restart reads one block, not the segment.
/// 3. Otherwise every message from the start of the segment is validated (sane header,
///    expected offset, non-zero id, checksum, timestamps not going back), because the blocks
///    of a torn direct write can land in any order: a valid last message does not vouch for
///    the ones before it. The log is cut at the first invalid byte, and the index is rewritten
///    from the first entry that differs from what the log holds.
///
/// The repaired files are fsynced before this returns.
pub(crate) async fn recover_segment(
    files: &SegmentFiles,
    start_offset: u64,
    pool: &Rc<BufferPool>,
    keep_index: bool,
    closed_cleanly: bool,
) -> Result<RecoveredSegment, StorageError> {
    let log_len = files.log.size().await?;
    let index_file = files.index.get().await?;
    let index_len = index_file.size().await?;

    // 1. Plausible index prefix.
    let mut hint = MemoryIndex::new();
    let raw_index = read_whole(&index_file, index_len).await?;
    let mut previous_end = 0u64;
    let mut previous_timestamp = 0u64;
    for bytes in raw_index.as_slice().chunks_exact(INDEX_ENTRY_SIZE) {
        let entry = IndexEntry::decode(bytes);
        let end = u64::from(entry.end_position);
        let plausible = entry.relative_offset as usize == hint.len()
            && end >= previous_end + HEADER_SIZE as u64
            && end <= log_len
            && entry.timestamp >= previous_timestamp;
        if !plausible {
            break;
        }
        hint.push(pool, entry);
        previous_end = end;
        previous_timestamp = entry.timestamp;
    }
    drop(raw_index);
    let hinted = hint.len() as u64;

    // 2. Cleanly closed?
    if closed_cleanly && hinted * INDEX_ENTRY_SIZE as u64 == index_len && previous_end == log_len {
        let last = hint.len().checked_sub(1);
        let clean = match last {
            None => log_len == 0,
            Some(last) => {
                let from = hint.start_position(last);
                let bytes = files.log.read_range(from, log_len).await?;
                let minimum = if last == 0 {
                    0
                } else {
                    hint.get(last - 1).timestamp
                };
                validate_message(&bytes, start_offset + last as u64, minimum).is_some_and(|view| {
                    view.size() as u64 == log_len - from && view.timestamp() == previous_timestamp
                })
            }
        };
        if clean {
            let tail = files
                .log
                .read_range(align_down(log_len), log_len)
                .await?
                .to_vec();
            return Ok(RecoveredSegment {
                count: hinted,
                len: log_len,
                last_timestamp: previous_timestamp,
                index: keep_index.then_some(hint),
                tail,
                dropped_index_entries: 0,
                rebuilt_index_entries: 0,
                truncated_log_bytes: 0,
            });
        }
    }

    // 3. Validate every message.
    let mut index = MemoryIndex::new();
    let mut position = 0u64;
    let mut last_timestamp = 0u64;
    let mut window = bytes::Bytes::new();
    let mut window_start = position;
    loop {
        let in_window = (position - window_start) as usize;
        let available = window.len().saturating_sub(in_window);
        if available < HEADER_SIZE || !message_fits(&window[in_window..]) {
            if position + HEADER_SIZE as u64 > log_len {
                break;
            }
            let wanted = RECOVERY_WINDOW_BYTES.max(declared_size(files, position, log_len).await?);
            window_start = position;
            window = files
                .log
                .read_range(position, (position + wanted).min(log_len))
                .await?;
            if !message_fits(&window) {
                break;
            }
            continue;
        }
        let expected_offset = start_offset + index.len() as u64;
        let Some(message) = validate_message(&window[in_window..], expected_offset, last_timestamp)
        else {
            break;
        };
        let end = position + message.size() as u64;
        if end > u64::from(u32::MAX) {
            break;
        }
        last_timestamp = message.timestamp();
        index.push(
            pool,
            IndexEntry {
                relative_offset: index.len() as u32,
                end_position: end as u32,
                timestamp: message.timestamp(),
            },
        );
        position = end;
    }
    let count = index.len() as u64;
    let len = position;
    // How much of the old index was right.
    let matching = (0..hint.len().min(index.len()))
        .find(|&entry| hint.get(entry) != index.get(entry))
        .unwrap_or(hint.len().min(index.len()));
    drop(hint);
    let rebuilt = count - matching as u64;

    // Repair the files so they describe exactly the valid messages.
    let log_changed = log_len != len;
    let index_changed = rebuilt > 0 || index_len != count * INDEX_ENTRY_SIZE as u64;
    if index_changed {
        rewrite_index_from(files, &index, matching, pool).await?;
        index_file.truncate(count * INDEX_ENTRY_SIZE as u64).await?;
    }
    if log_changed {
        files.log.truncate(len).await?;
    }
    if log_changed || index_changed {
        files.log.sync_all().await?;
        index_file.sync_all().await?;
    }
    let tail = files.log.read_range(align_down(len), len).await?.to_vec();
    Ok(RecoveredSegment {
        count,
        len,
        last_timestamp,
        index: keep_index.then_some(index),
        tail,
        dropped_index_entries: hinted - matching as u64,
        rebuilt_index_entries: rebuilt,
        truncated_log_bytes: log_len - len,
    })
}

/// Whether `bytes` holds a whole message according to its header's lengths (a bogus header
/// may claim more than the file holds; the caller then stops).
fn message_fits(bytes: &[u8]) -> bool {
    match header_size(bytes) {
        Some(size) => bytes.len() as u64 >= size,
        None => false,
    }
}

fn header_size(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < HEADER_SIZE {
        return None;
    }
    let user_headers = u32::from_le_bytes(bytes[48..52].try_into().expect("4 bytes"));
    let payload = u32::from_le_bytes(bytes[52..56].try_into().expect("4 bytes"));
    Some(HEADER_SIZE as u64 + u64::from(payload) + u64::from(user_headers))
}

/// The size the header at `position` declares, capped to what the file holds.
async fn declared_size(
    files: &SegmentFiles,
    position: u64,
    log_len: u64,
) -> Result<u64, StorageError> {
    let header = files
        .log
        .read_range(position, position + HEADER_SIZE as u64)
        .await?;
    Ok(header_size(&header)
        .unwrap_or(HEADER_SIZE as u64)
        .min(log_len - position))
}

async fn read_whole(file: &DirectFile, len: u64) -> Result<AlignedBuf, StorageError> {
    let buf = AlignedBuf::for_read(len as usize);
    let (result, mut buf) = file.read_into(buf, 0).await;
    let filled = result?;
    buf.set_filled(filled.min(len as usize));
    Ok(buf)
}

/// Writes index entries `[from, len)` to the index file (with the partial block before them).
async fn rewrite_index_from(
    files: &SegmentFiles,
    index: &MemoryIndex,
    from: usize,
    pool: &Rc<BufferPool>,
) -> Result<(), StorageError> {
    let first_byte = align_down((from * INDEX_ENTRY_SIZE) as u64);
    let first_entry = first_byte as usize / INDEX_ENTRY_SIZE;
    let entries = index.len() - first_entry;
    if entries == 0 {
        return Ok(());
    }
    let mut buf = pool.acquire(entries * INDEX_ENTRY_SIZE);
    buf.set_filled(entries * INDEX_ENTRY_SIZE);
    index.copy_encoded(
        first_entry,
        index.len(),
        &mut buf.whole_mut()[..entries * INDEX_ENTRY_SIZE],
    );
    buf.pad_to_block();
    let (result, _buf) = files
        .index
        .get()
        .await?
        .write_all_at(buf, 0, first_byte)
        .await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_twenty_digit_offsets() {
        let dir = Path::new("/p");
        assert_eq!(
            log_path(dir, 1000),
            Path::new("/p/00000000000000001000.log")
        );
        assert_eq!(
            index_path(dir, 0),
            Path::new("/p/00000000000000000000.index")
        );
        assert_eq!(parse_log_name("00000000000000001000.log"), Some(1000));
        assert_eq!(parse_log_name("00000000000000001000.index"), None);
        assert_eq!(parse_log_name("1000.log"), None);
        assert_eq!(parse_log_name("0000000000000000100x.log"), None);
    }

    #[test]
    fn zero_filled_bytes_never_validate() {
        let zeros = [0u8; 256];
        assert!(validate_message(&zeros, 0, 0).is_none());
        // Even with a non-zero id, a zero checksum does not match.
        let mut bytes = zeros;
        bytes[8] = 1;
        assert!(validate_message(&bytes[..64], 0, 0).is_none());
    }
}
