//! The message header and zero-copy views over stored or wire messages.
//!
//! A message is its 64-byte header, then the payload, then the user headers; the same bytes are
//! sent by producers, stored in `.log` files and returned to consumers:
//!
//! ```text
//! offset size field                set by
//!      0    8 checksum    u64      server: XXH3-64 of bytes 8..end of message
//!      8   16 id          u128     client (0 = server assigns a random UUID)
//!     24    8 offset      u64      server
//!     32    8 timestamp   u64 µs   server
//!     40    8 origin_ts   u64 µs   client
//!     48    4 user_headers_length  client
//!     52    4 payload_length       client
//!     56    8 reserved    u64 = 0
//!     64    payload_length bytes of payload, then user_headers_length bytes of user headers
//! ```

use crate::codec::{Decode, Encode, Reader};
use crate::error::{DecodeError, ErrorCode};
use crate::primitives::user_headers::MAX_USER_HEADERS_BYTES;
use bytes::BufMut;

/// Size of the fixed message header.
pub const HEADER_SIZE: usize = 64;
/// The largest payload a single message may carry.
pub const MAX_PAYLOAD_BYTES: usize = 64_000_000;

/// Byte offsets of the header's fields (the table above), for code that edits stored
/// messages in place.
pub const CHECKSUM: usize = 0;
pub const ID: usize = 8;
pub const OFFSET: usize = 24;
pub const TIMESTAMP: usize = 32;
pub const ORIGIN_TIMESTAMP: usize = 40;
pub const USER_HEADERS_LENGTH: usize = 48;
pub const PAYLOAD_LENGTH: usize = 52;
pub const RESERVED: usize = 56;
const _: () = assert!(RESERVED + 8 == HEADER_SIZE);

/// XXH3-64 (seed 0) over everything after the checksum field (protocol.md 6.2).
pub fn checksum(message: &[u8]) -> u64 {
    debug_assert!(message.len() >= HEADER_SIZE);
    crate::hash::xxh3_64(&message[ID..])
}

/// Writes the server-assigned fields into one message in place and recomputes its checksum.
/// `id` replaces the id only when the message carries 0.
pub fn stamp(message: &mut [u8], offset: u64, timestamp: u64, id_if_zero: impl FnOnce() -> u128) {
    assert!(message.len() >= HEADER_SIZE, "stamp needs a whole header");
    if message[ID..ID + 16].iter().all(|&byte| byte == 0) {
        message[ID..ID + 16].copy_from_slice(&id_if_zero().to_le_bytes());
    }
    message[OFFSET..OFFSET + 8].copy_from_slice(&offset.to_le_bytes());
    message[TIMESTAMP..TIMESTAMP + 8].copy_from_slice(&timestamp.to_le_bytes());
    let sum = checksum(message);
    message[CHECKSUM..CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
}

/// The header as owned values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MessageHeader {
    pub checksum: u64,
    pub id: u128,
    pub offset: u64,
    pub timestamp: u64,
    pub origin_timestamp: u64,
    pub user_headers_length: u32,
    pub payload_length: u32,
    pub reserved: u64,
}

impl MessageHeader {
    /// Size of the whole message this header describes.
    pub fn message_size(&self) -> u64 {
        HEADER_SIZE as u64 + u64::from(self.payload_length) + u64::from(self.user_headers_length)
    }
}

impl Encode for MessageHeader {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u64_le(self.checksum);
        out.put_u128_le(self.id);
        out.put_u64_le(self.offset);
        out.put_u64_le(self.timestamp);
        out.put_u64_le(self.origin_timestamp);
        out.put_u32_le(self.user_headers_length);
        out.put_u32_le(self.payload_length);
        out.put_u64_le(self.reserved);
    }
    fn encoded_len(&self) -> usize {
        HEADER_SIZE
    }
}

impl Decode for MessageHeader {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(MessageHeader {
            checksum: reader.u64("checksum")?,
            id: reader.u128("message id")?,
            offset: reader.u64("message offset")?,
            timestamp: reader.u64("message timestamp")?,
            origin_timestamp: reader.u64("origin timestamp")?,
            user_headers_length: reader.u32("user headers length")?,
            payload_length: reader.u32("payload length")?,
            reserved: reader.u64("reserved")?,
        })
    }
}

/// A view over one message's bytes. Accessors read straight from the buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MessageView<'a> {
    bytes: &'a [u8],
}

impl std::fmt::Debug for MessageView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageView")
            .field("offset", &self.offset())
            .field("id", &self.id())
            .field("payload_length", &self.payload().len())
            .finish()
    }
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

impl<'a> MessageView<'a> {
    /// Checks that `bytes` starts with a complete message within the protocol's limits and
    /// returns a view of exactly that message.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        if bytes.len() < HEADER_SIZE {
            return Err(DecodeError::new(
                ErrorCode::TooSmallMessage,
                "message header",
            ));
        }
        let payload_length = read_u32(bytes, PAYLOAD_LENGTH) as usize;
        let user_headers_length = read_u32(bytes, USER_HEADERS_LENGTH) as usize;
        if payload_length > MAX_PAYLOAD_BYTES {
            return Err(DecodeError::new(
                ErrorCode::TooBigMessagePayload,
                "message payload",
            ));
        }
        if user_headers_length > MAX_USER_HEADERS_BYTES {
            return Err(DecodeError::new(
                ErrorCode::TooBigUserHeaders,
                "user headers",
            ));
        }
        let size = HEADER_SIZE + payload_length + user_headers_length;
        if bytes.len() < size {
            return Err(DecodeError::new(
                ErrorCode::InvalidMessagePayloadLength,
                "message body",
            ));
        }
        if read_u64(bytes, RESERVED) != 0 {
            return Err(DecodeError::new(
                ErrorCode::InvalidReservedField,
                "reserved field",
            ));
        }
        Ok(MessageView {
            bytes: &bytes[..size],
        })
    }

    /// The size a message header at the start of `bytes` declares (header, payload and user
    /// headers), without checking that the bytes hold it; None if no header fits.
    pub fn declared_size(bytes: &[u8]) -> Option<u64> {
        (bytes.len() >= HEADER_SIZE).then(|| {
            HEADER_SIZE as u64
                + u64::from(read_u32(bytes, PAYLOAD_LENGTH))
                + u64::from(read_u32(bytes, USER_HEADERS_LENGTH))
        })
    }

    /// The whole message: header, payload, user headers.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    pub fn checksum(&self) -> u64 {
        read_u64(self.bytes, CHECKSUM)
    }

    pub fn id(&self) -> u128 {
        u128::from_le_bytes(self.bytes[ID..ID + 16].try_into().expect("16 bytes"))
    }

    pub fn offset(&self) -> u64 {
        read_u64(self.bytes, OFFSET)
    }

    pub fn timestamp(&self) -> u64 {
        read_u64(self.bytes, TIMESTAMP)
    }

    pub fn origin_timestamp(&self) -> u64 {
        read_u64(self.bytes, ORIGIN_TIMESTAMP)
    }

    pub fn payload(&self) -> &'a [u8] {
        let len = read_u32(self.bytes, PAYLOAD_LENGTH) as usize;
        &self.bytes[HEADER_SIZE..HEADER_SIZE + len]
    }

    /// The raw user-header blob (empty when the message has none).
    pub fn user_headers(&self) -> &'a [u8] {
        let payload_len = read_u32(self.bytes, PAYLOAD_LENGTH) as usize;
        &self.bytes[HEADER_SIZE + payload_len..]
    }

    pub fn header(&self) -> MessageHeader {
        MessageHeader::from_bytes(self.bytes).expect("a parsed view holds a whole header")
    }

    /// Whether the stored checksum matches the bytes.
    pub fn checksum_is_valid(&self) -> bool {
        checksum(self.bytes) == self.checksum()
    }
}

/// Iterates over messages stored back to back; stops with an error at the first malformed one.
#[derive(Debug, Clone)]
pub struct MessageIter<'a> {
    rest: &'a [u8],
}

impl<'a> MessageIter<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        MessageIter { rest: bytes }
    }
}

impl<'a> Iterator for MessageIter<'a> {
    type Item = Result<MessageView<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match MessageView::parse(self.rest) {
            Ok(view) => {
                self.rest = &self.rest[view.size()..];
                Some(Ok(view))
            }
            Err(error) => {
                self.rest = &[];
                Some(Err(error))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_empty_input_matches_protocol_vector() {
        assert_eq!(xxhash_rust::xxh3::xxh3_64(&[]), 0x2d06800538d394c2);
    }

    #[test]
    fn view_reads_fields_and_stamp_sets_server_fields() {
        let header = MessageHeader {
            id: 0,
            origin_timestamp: 5,
            payload_length: 3,
            user_headers_length: 2,
            ..MessageHeader::default()
        };
        let mut bytes = header.to_bytes();
        bytes.extend_from_slice(b"abcXY");
        stamp(&mut bytes, 42, 1000, || 7);
        let view = MessageView::parse(&bytes).unwrap();
        assert_eq!(view.offset(), 42);
        assert_eq!(view.timestamp(), 1000);
        assert_eq!(view.id(), 7);
        assert_eq!(view.origin_timestamp(), 5);
        assert_eq!(view.payload(), b"abc");
        assert_eq!(view.user_headers(), b"XY");
        assert!(view.checksum_is_valid());
        // A non-zero id is kept.
        stamp(&mut bytes, 43, 1001, || 9);
        assert_eq!(MessageView::parse(&bytes).unwrap().id(), 7);
    }

    #[test]
    fn parse_rejects_short_and_inconsistent_messages() {
        assert_eq!(
            MessageView::parse(&[0; 63]).unwrap_err().code,
            ErrorCode::TooSmallMessage
        );
        let header = MessageHeader {
            payload_length: 10,
            ..MessageHeader::default()
        };
        let bytes = header.to_bytes();
        assert_eq!(
            MessageView::parse(&bytes).unwrap_err().code,
            ErrorCode::InvalidMessagePayloadLength
        );
        let header = MessageHeader {
            reserved: 1,
            ..MessageHeader::default()
        };
        assert_eq!(
            MessageView::parse(&header.to_bytes()).unwrap_err().code,
            ErrorCode::InvalidReservedField
        );
        let header = MessageHeader {
            payload_length: u32::MAX,
            ..MessageHeader::default()
        };
        assert_eq!(
            MessageView::parse(&header.to_bytes()).unwrap_err().code,
            ErrorCode::TooBigMessagePayload
        );
    }
}
