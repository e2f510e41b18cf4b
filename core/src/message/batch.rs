//! The SendMessages (101) body: routing metadata, an index block, and the messages.
//!
//! ```text
//! metadata_length u32            size of the next four fields
//! stream_id       Identifier
//! topic_id        Identifier
//! partitioning    Partitioning
//! messages_count  u32
//! index block     16 × messages_count: relative offset u32 (0), end position u32, timestamp u64 (0)
//! messages        back to back (header.rs), message i = [position(i-1), position(i))
//! ```
//! The decoder validates the index against the messages' own lengths and keeps only the messages
//! section, as one owned buffer split from the request frame (no copy), which the server stamps
//! in place and hands to storage.

use super::header::{HEADER_SIZE, MessageHeader, MessageIter, MessageView, stamp};
use crate::codec::{Decode, Encode, Reader};
use crate::error::{DecodeError, ErrorCode};
use crate::primitives::{Identifier, Partitioning};
use bytes::{BufMut, Bytes, BytesMut};
use std::sync::Arc;

const INDEX_ENTRY_SIZE: usize = 16;

/// A message as a producer builds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutgoingMessage {
    /// 0 lets the server assign a random id.
    pub id: u128,
    pub origin_timestamp: u64,
    pub payload: Bytes,
    /// Encoded user-header blob (see `primitives::user_headers`); empty for none.
    pub user_headers: Bytes,
}

impl OutgoingMessage {
    pub fn new(payload: impl Into<Bytes>) -> Self {
        OutgoingMessage {
            payload: payload.into(),
            ..OutgoingMessage::default()
        }
    }

    pub fn size(&self) -> usize {
        HEADER_SIZE + self.payload.len() + self.user_headers.len()
    }
}

/// Validated messages stored back to back, with their count.
#[derive(Debug, Clone)]
pub struct MessageBatch {
    count: u32,
    bytes: BytesMut,
    /// Set only for a batch that arrived as a 0.9 send: its frames' checksums, which are
    /// exactly what a 0.9 poll returning this batch whole sends (see
    /// [`MessageBatch::with_frame_checksums`]). Kept beside the cached batch so that such a
    /// poll does not hash every byte again. Anything that rewrites the messages drops them.
    frame_checksums: Option<Arc<[u64]>>,
}

/// Two batches are equal when they hold the same messages; the 0.9 frame checksums are
/// derived from the messages and left out.
impl PartialEq for MessageBatch {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.bytes == other.bytes
    }
}

impl Eq for MessageBatch {}

impl MessageBatch {
    /// Serialises messages (the client side), each header with zeroed server fields.
    pub fn from_messages(messages: &[OutgoingMessage]) -> Self {
        let total = messages.iter().map(OutgoingMessage::size).sum();
        let mut bytes = BytesMut::with_capacity(total);
        for message in messages {
            MessageHeader {
                id: message.id,
                origin_timestamp: message.origin_timestamp,
                user_headers_length: message.user_headers.len() as u32,
                payload_length: message.payload.len() as u32,
                ..MessageHeader::default()
            }
            .encode(&mut bytes);
            bytes.put_slice(&message.payload);
            bytes.put_slice(&message.user_headers);
        }
        MessageBatch {
            count: messages.len() as u32,
            bytes,
            frame_checksums: None,
        }
    }

    /// Validates a run of messages stored back to back (for example read from storage) and
    /// counts them.
    pub fn from_stored(bytes: BytesMut) -> Result<Self, DecodeError> {
        let mut count = 0u32;
        for message in MessageIter::new(&bytes) {
            message?;
            count += 1;
        }
        Ok(MessageBatch {
            count,
            bytes,
            frame_checksums: None,
        })
    }

    /// Attaches the checksums of the 0.9 frames this batch arrived as, one per message. The
    /// caller vouches that each is XXH3 of the frame a 0.9 poll builds for that message when
    /// the poll's batch is exactly this batch: ids as stored (none 0), offset delta `i`,
    /// timestamp delta from the batch's smallest origin timestamp (`v09::batch::decode_send`
    /// checks this). Ignored when the count does not match.
    pub fn with_frame_checksums(mut self, checksums: Vec<u64>) -> Self {
        if checksums.len() == self.count as usize {
            self.frame_checksums = Some(checksums.into());
        }
        self
    }

    /// The 0.9 frame checksums attached by [`MessageBatch::with_frame_checksums`].
    pub fn frame_checksums(&self) -> Option<&Arc<[u64]>> {
        self.frame_checksums.as_ref()
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Total size of the messages in bytes.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> BytesMut {
        self.bytes
    }

    /// The messages and the 0.9 frame checksums, if any.
    pub fn into_parts(self) -> (BytesMut, Option<Arc<[u64]>>) {
        (self.bytes, self.frame_checksums)
    }

    pub fn iter(&self) -> impl Iterator<Item = MessageView<'_>> {
        // The bytes were validated on construction, so every item is Ok.
        MessageIter::new(&self.bytes).map(|message| message.expect("batch was validated"))
    }

    /// The messages `keep` selects, in order (`keep[i]` for message `i`; missing entries keep).
    pub fn retain(&self, keep: &[bool]) -> MessageBatch {
        let mut bytes = BytesMut::with_capacity(self.bytes.len());
        let mut count = 0;
        for (i, message) in self.iter().enumerate() {
            if keep.get(i).copied().unwrap_or(true) {
                bytes.put_slice(message.as_bytes());
                count += 1;
            }
        }
        MessageBatch {
            count,
            bytes,
            frame_checksums: None,
        }
    }

    /// Assigns consecutive offsets from `first_offset`, one timestamp, ids to messages sent with
    /// id 0, and checksums, in place. Returns the offset of the last message (for an empty
    /// batch, `first_offset - 1`, saturating at 0).
    pub fn stamp(
        &mut self,
        first_offset: u64,
        timestamp: u64,
        mut new_id: impl FnMut() -> u128,
    ) -> u64 {
        let mut position = 0;
        let mut offset = first_offset;
        let mut ids_assigned = false;
        for _ in 0..self.count {
            let size = MessageView::parse(&self.bytes[position..])
                .expect("batch was validated")
                .size();
            stamp(
                &mut self.bytes[position..position + size],
                offset,
                timestamp,
                || {
                    ids_assigned = true;
                    new_id()
                },
            );
            position += size;
            offset += 1;
        }
        if ids_assigned {
            // A 0.9 frame checksum covers the id.
            self.frame_checksums = None;
        }
        offset.saturating_sub(1)
    }

    /// Checks the client's index block against the messages section and returns the batch.
    fn from_wire(index: &[u8], messages: BytesMut, count: u32) -> Result<Self, DecodeError> {
        let mut start = 0usize;
        for (i, entry) in index.chunks_exact(INDEX_ENTRY_SIZE).enumerate() {
            let relative_offset = u32::from_le_bytes(entry[0..4].try_into().expect("4 bytes"));
            let end = u32::from_le_bytes(entry[4..8].try_into().expect("4 bytes")) as usize;
            let timestamp = u64::from_le_bytes(entry[8..16].try_into().expect("8 bytes"));
            if relative_offset != 0 {
                return Err(DecodeError::new(ErrorCode::NonZeroOffset, "index offset"));
            }
            if timestamp != 0 {
                return Err(DecodeError::new(
                    ErrorCode::NonZeroTimestamp,
                    "index timestamp",
                ));
            }
            let last = i + 1 == count as usize;
            let end = if last { messages.len() } else { end };
            if end < start || end - start < HEADER_SIZE || end > messages.len() {
                return Err(DecodeError::new(ErrorCode::MissingIndex, "index position"));
            }
            let message = MessageView::parse(&messages[start..end])?;
            if message.size() != end - start {
                return Err(DecodeError::new(
                    ErrorCode::InvalidMessagesSize,
                    "message size",
                ));
            }
            start = end;
        }
        Ok(MessageBatch {
            count,
            bytes: messages,
            frame_checksums: None,
        })
    }

    /// Writes the index block a client sends for this batch.
    fn encode_index<B: BufMut>(&self, out: &mut B) {
        let mut end = 0u32;
        for message in self.iter() {
            end += message.size() as u32;
            out.put_u32_le(0);
            out.put_u32_le(end);
            out.put_u64_le(0);
        }
    }
}

/// SendMessages (101).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMessages {
    pub stream_id: Identifier,
    pub topic_id: Identifier,
    pub partitioning: Partitioning,
    pub batch: MessageBatch,
}

impl SendMessages {
    fn metadata_len(&self) -> usize {
        self.stream_id.encoded_len()
            + self.topic_id.encoded_len()
            + self.partitioning.encoded_len()
            + 4
    }

    /// Decodes a request payload that the caller owns, keeping the messages section in place.
    pub fn decode_owned(mut payload: BytesMut) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(&payload);
        let metadata_len = reader.u32("metadata length")? as usize;
        let metadata = reader.take(metadata_len, "send metadata")?;
        let mut metadata = Reader::new(metadata);
        // On this path upstream reports malformed identifiers as InvalidIdentifier (6).
        let invalid_identifier = |_| DecodeError::new(ErrorCode::InvalidIdentifier, "identifier");
        let stream_id = Identifier::decode(&mut metadata).map_err(invalid_identifier)?;
        let topic_id = Identifier::decode(&mut metadata).map_err(invalid_identifier)?;
        let partitioning = Partitioning::decode(&mut metadata)?;
        let count = metadata.u32("messages count")?;
        if count == 0 {
            return Err(DecodeError::new(
                ErrorCode::InvalidMessagesCount,
                "messages count",
            ));
        }
        let index_len = count as usize * INDEX_ENTRY_SIZE;
        if index_len > reader.remaining() {
            return Err(DecodeError::new(
                ErrorCode::InvalidIndexesByteSize,
                "index block",
            ));
        }
        let index_start = reader.position();
        let messages = payload.split_off(index_start + index_len);
        let index = &payload[index_start..];
        let batch = MessageBatch::from_wire(index, messages, count)?;
        Ok(SendMessages {
            stream_id,
            topic_id,
            partitioning,
            batch,
        })
    }
}

impl Encode for SendMessages {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u32_le(self.metadata_len() as u32);
        self.stream_id.encode(out);
        self.topic_id.encode(out);
        self.partitioning.encode(out);
        out.put_u32_le(self.batch.count);
        self.batch.encode_index(out);
        out.put_slice(&self.batch.bytes);
    }

    fn encoded_len(&self) -> usize {
        4 + self.metadata_len()
            + self.batch.count as usize * INDEX_ENTRY_SIZE
            + self.batch.bytes.len()
    }
}

impl Decode for SendMessages {
    /// Takes the rest of the reader (copying it); servers use [`SendMessages::decode_owned`].
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        SendMessages::decode_owned(BytesMut::from(reader.rest()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(payloads: &[&[u8]]) -> SendMessages {
        let messages: Vec<_> = payloads
            .iter()
            .enumerate()
            .map(|(i, payload)| OutgoingMessage {
                id: i as u128 + 1,
                origin_timestamp: 99,
                payload: Bytes::copy_from_slice(payload),
                user_headers: Bytes::new(),
            })
            .collect();
        SendMessages {
            stream_id: Identifier::numeric(0),
            topic_id: Identifier::numeric(0),
            partitioning: Partitioning::PartitionId(0),
            batch: MessageBatch::from_messages(&messages),
        }
    }

    #[test]
    fn retain_keeps_the_selected_messages_in_order() {
        let batch = MessageBatch::from_messages(&[
            OutgoingMessage::new(&b"a"[..]),
            OutgoingMessage::new(&b"bb"[..]),
            OutgoingMessage::new(&b"ccc"[..]),
        ]);
        let kept = batch.retain(&[true, false, true]);
        assert_eq!(kept.count(), 2);
        let payloads: Vec<_> = kept.iter().map(|m| m.payload().to_vec()).collect();
        assert_eq!(payloads, [b"a".to_vec(), b"ccc".to_vec()]);
        assert!(batch.retain(&[false; 3]).is_empty());
        assert_eq!(batch.retain(&[]), batch, "missing entries keep");
    }

    #[test]
    fn round_trips_and_stamps_in_place() {
        let original = request(&[b"hello", b"", b"world!"]);
        let bytes = original.to_bytes();
        let mut decoded = SendMessages::decode_owned(BytesMut::from(&bytes[..])).unwrap();
        assert_eq!(decoded, original);
        let last = decoded
            .batch
            .stamp(10, 1234, || unreachable!("ids are set"));
        assert_eq!(last, 12);
        let offsets: Vec<_> = decoded.batch.iter().map(|m| m.offset()).collect();
        assert_eq!(offsets, [10, 11, 12]);
        assert!(
            decoded
                .batch
                .iter()
                .all(|m| m.checksum_is_valid() && m.timestamp() == 1234)
        );
        assert_eq!(decoded.batch.iter().nth(2).unwrap().payload(), b"world!");
    }

    #[test]
    fn rejects_bad_batches_with_protocol_codes() {
        let good = request(&[b"a", b"bc"]).to_bytes();
        let decode = |bytes: &[u8]| {
            SendMessages::decode_owned(BytesMut::from(bytes))
                .unwrap_err()
                .code
        };
        // metadata_length 22; count at 4+18..4+22, index at 26.
        let mut zero_count = good.clone();
        zero_count[22..26].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(decode(&zero_count), ErrorCode::InvalidMessagesCount);
        let mut huge_count = good.clone();
        huge_count[22..26].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&huge_count), ErrorCode::InvalidIndexesByteSize);
        let mut nonzero_offset = good.clone();
        nonzero_offset[26] = 1;
        assert_eq!(decode(&nonzero_offset), ErrorCode::NonZeroOffset);
        let mut nonzero_timestamp = good.clone();
        nonzero_timestamp[26 + 8] = 1;
        assert_eq!(decode(&nonzero_timestamp), ErrorCode::NonZeroTimestamp);
        let mut short_position = good.clone();
        short_position[30..34].copy_from_slice(&10u32.to_le_bytes());
        assert_eq!(decode(&short_position), ErrorCode::MissingIndex);
        assert_eq!(
            decode(&good[..good.len() - 1]),
            ErrorCode::InvalidMessagePayloadLength
        );
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(decode(&trailing), ErrorCode::InvalidMessagesSize);
        let mut bad_identifier = good.clone();
        bad_identifier[5] = 3;
        assert_eq!(decode(&bad_identifier), ErrorCode::InvalidIdentifier);
    }
}
