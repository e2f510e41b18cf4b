//! One record of the write-ahead log: the messages one partition's round appended, with what
//! recovery needs to put them back (which partition, which incarnation of its log, from which
//! offset). Records start on a block boundary and are padded to whole blocks, so a torn write
//! damages only the records it covered and a scan can look for headers block by block.
//!
//! ```text
//! 0   magic        8 bytes  "RILLWAL1"
//! 8   checksum     u64      XXH3-64 of bytes 16.. of the header, the directory and the data
//! 16  data_len     u32      bytes of messages
//! 20  dir_len      u16      bytes of the partition directory (relative to the data directory)
//! 22  reserved     u16      0
//! 24  incarnation  u64      the partition log's incarnation (see `Incarnation`)
//! 32  first_offset u64      offset of the first message
//! 40  count        u32      messages
//! 44  reserved     u32      0
//! 48  directory    dir_len bytes, UTF-8
//! ..  messages     data_len bytes, stored format (64-byte headers, offsets and checksums set)
//! ..  zeros        to the next block boundary
//! ```

use crate::storage::pool::{BLOCK_SIZE, PooledBuf, align_up};
use rill_core::hash::xxh3_64;

pub(crate) const MAGIC: [u8; 8] = *b"RILLWAL1";
pub(crate) const HEADER_LEN: usize = 48;
/// Directory names longer than this are not logged (their rounds are written directly).
pub(crate) const MAX_DIR_LEN: usize = 1024;

/// What a record says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    pub(crate) dir: String,
    pub(crate) incarnation: u64,
    pub(crate) first_offset: u64,
    pub(crate) count: u32,
    pub(crate) data_len: u32,
}

impl RecordHeader {
    /// Bytes the record takes in the log: header, directory and data, padded to blocks.
    pub(crate) fn footprint(&self) -> u64 {
        footprint(self.dir.len(), self.data_len as usize)
    }

    /// Where the messages start within the record.
    pub(crate) fn data_start(&self) -> usize {
        HEADER_LEN + self.dir.len()
    }

    /// The offset after the record's last message.
    pub(crate) fn end_offset(&self) -> u64 {
        self.first_offset + u64::from(self.count)
    }
}

/// Bytes a record of `dir_len` and `data_len` takes, padded to whole blocks.
pub(crate) fn footprint(dir_len: usize, data_len: usize) -> u64 {
    align_up((HEADER_LEN + dir_len + data_len) as u64)
}

/// Writes a record into `buf` (empty, with room for [`footprint`] bytes): the header, the
/// directory and `parts` (the messages, back to back), padded to a block.
pub(crate) fn encode(buf: &mut PooledBuf, header: &RecordHeader, parts: &[&[u8]]) {
    debug_assert_eq!(buf.len(), 0);
    debug_assert_eq!(
        parts.iter().map(|part| part.len()).sum::<usize>(),
        header.data_len as usize
    );
    let mut fixed = [0u8; HEADER_LEN];
    fixed[0..8].copy_from_slice(&MAGIC);
    fixed[16..20].copy_from_slice(&header.data_len.to_le_bytes());
    fixed[20..22].copy_from_slice(&(header.dir.len() as u16).to_le_bytes());
    fixed[24..32].copy_from_slice(&header.incarnation.to_le_bytes());
    fixed[32..40].copy_from_slice(&header.first_offset.to_le_bytes());
    fixed[40..44].copy_from_slice(&header.count.to_le_bytes());
    buf.append(&fixed);
    buf.append(header.dir.as_bytes());
    for part in parts {
        buf.append(part);
    }
    let end = buf.len();
    let checksum = xxh3_64(&buf.as_slice()[16..end]);
    buf.whole_mut()[8..16].copy_from_slice(&checksum.to_le_bytes());
    buf.pad_to_block();
}

/// Reads the header at the start of `block` (one block or more). None when it is not a
/// record's first block: no magic, impossible lengths, or a directory that is not UTF-8.
pub(crate) fn decode_header(block: &[u8]) -> Option<RecordHeader> {
    if block.len() < HEADER_LEN || block[0..8] != MAGIC {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes(block[at..at + 2].try_into().expect("2 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(block[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes"));
    let dir_len = usize::from(u16_at(20));
    if dir_len > MAX_DIR_LEN || u16_at(22) != 0 || u32_at(44) != 0 {
        return None;
    }
    let count = u32_at(40);
    let data_len = u32_at(16);
    if count == 0 || data_len == 0 {
        return None;
    }
    let dir_end = HEADER_LEN + dir_len;
    // The directory lies in the first block (MAX_DIR_LEN leaves room for it).
    let dir = std::str::from_utf8(block.get(HEADER_LEN..dir_end)?).ok()?;
    Some(RecordHeader {
        dir: dir.to_owned(),
        incarnation: u64_at(24),
        first_offset: u64_at(32),
        count,
        data_len,
    })
}

/// Whether `record` (the whole footprint, from its header on) holds what its header and
/// checksum say.
pub(crate) fn verify(record: &[u8], header: &RecordHeader) -> bool {
    let data_end = header.data_start() + header.data_len as usize;
    if record.len() < data_end {
        return false;
    }
    let stored = u64::from_le_bytes(record[8..16].try_into().expect("8 bytes"));
    xxh3_64(&record[16..data_end]) == stored
}

const _: () = assert!(HEADER_LEN + MAX_DIR_LEN <= BLOCK_SIZE);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::pool::BufferPool;
    use proptest::prelude::*;
    use std::rc::Rc;

    fn header(dir: &str, data_len: usize) -> RecordHeader {
        RecordHeader {
            dir: dir.to_owned(),
            incarnation: 0x1234_5678_9abc_def0,
            first_offset: 42,
            count: 3,
            data_len: data_len as u32,
        }
    }

    #[test]
    fn a_record_round_trips_and_any_flipped_byte_fails_it() {
        let pool = Rc::new(BufferPool::new());
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let header = header("streams/1/topics/0/partitions/3", data.len());
        let mut buf = pool.acquire(header.footprint() as usize);
        encode(&mut buf, &header, &[&data[..1000], &data[1000..]]);
        assert_eq!(buf.len() as u64, header.footprint());
        assert_eq!(buf.len() % BLOCK_SIZE, 0);
        let bytes = buf.as_slice().to_vec();
        let decoded = decode_header(&bytes).expect("a header");
        assert_eq!(decoded, header);
        assert!(verify(&bytes, &decoded));
        let start = decoded.data_start();
        assert_eq!(&bytes[start..start + data.len()], &data[..]);
        let covered = start + data.len();
        for at in (8..covered).step_by(97) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            let ok = decode_header(&damaged).is_some_and(|h| verify(&damaged, &h) && h == header);
            assert!(!ok, "a flipped byte at {at} went unnoticed");
        }
        // The padding is not covered, and a record cut short fails.
        assert!(!verify(&bytes[..covered - 1], &decoded));
    }

    proptest! {
        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut block = bytes.clone();
            if block.len() >= 8 && block[0] & 1 == 0 {
                block[0..8].copy_from_slice(&MAGIC);
            }
            if let Some(header) = decode_header(&block) {
                let _ = verify(&block, &header);
                prop_assert!(header.dir.len() <= MAX_DIR_LEN);
            }
        }
    }
}
