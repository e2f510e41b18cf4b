//! The opt-in boot scan (`verify_checksums_at_boot`): every written message of every segment is
//! read back and its checksum checked. Nothing is changed: a mismatch is reported, and the read
//! path refuses to serve that message later.

use super::Partition;
use crate::storage::error::StorageError;
use crate::storage::segment::SegmentFiles;
use rill_core::message::{HEADER_SIZE, MessageView};
use std::path::PathBuf;
use std::rc::Rc;

/// Bytes read per step; a message larger than this is read whole.
const SCAN_CHUNK_BYTES: u64 = 8 << 20;

/// One message that failed its checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub path: PathBuf,
    pub offset: u64,
}

/// What the scan read and found.
#[derive(Debug, Default)]
pub struct ChecksumScan {
    pub messages: u64,
    pub bytes: u64,
    pub mismatches: Vec<Mismatch>,
}

impl Partition {
    /// Reads every message written to the partition's files and checks its checksum.
    pub async fn scan_checksums(&self) -> Result<ChecksumScan, StorageError> {
        let segments: Vec<(Rc<SegmentFiles>, u64, u64)> = {
            let state = self.inner.state.borrow();
            state
                .segments
                .iter()
                .filter_map(|segment| {
                    let files = segment.files.clone()?;
                    Some((files, segment.start_offset, segment.written_len))
                })
                .collect()
        };
        let mut scan = ChecksumScan::default();
        for (files, start_offset, len) in segments {
            scan_segment(&files, start_offset, len, &mut scan).await?;
        }
        Ok(scan)
    }
}

async fn scan_segment(
    files: &SegmentFiles,
    start_offset: u64,
    len: u64,
    scan: &mut ChecksumScan,
) -> Result<(), StorageError> {
    let mut position = 0;
    let mut offset = start_offset;
    let mut chunk = SCAN_CHUNK_BYTES;
    while position < len {
        let end = len.min(position + chunk);
        let bytes = files.log.read_range(position, end).await?;
        let mut used = 0;
        while used + HEADER_SIZE <= bytes.len() {
            let message = match MessageView::parse(&bytes[used..]) {
                Ok(message) => message,
                // Recovery vouched for these bytes' framing; only a cut at the chunk's end
                // leaves an incomplete message, read again from its start below.
                Err(_) if end < len => break,
                Err(_) => {
                    return Err(StorageError::Corrupted {
                        path: files.log.path().to_path_buf(),
                        position: position + used as u64,
                        reason: "a written message does not parse",
                    });
                }
            };
            if !message.checksum_is_valid() {
                scan.mismatches.push(Mismatch {
                    path: files.log.path().to_path_buf(),
                    offset,
                });
            }
            scan.messages += 1;
            used += message.size();
            offset += 1;
        }
        if used == 0 {
            // One message larger than the chunk: read it whole next time.
            let declared = MessageView::declared_size(&bytes).unwrap_or(HEADER_SIZE as u64);
            if end == len || declared <= chunk {
                return Err(StorageError::Corrupted {
                    path: files.log.path().to_path_buf(),
                    position,
                    reason: "a written message does not parse",
                });
            }
            chunk = declared;
            continue;
        }
        scan.bytes += used as u64;
        position += used as u64;
        chunk = SCAN_CHUNK_BYTES;
    }
    Ok(())
}
