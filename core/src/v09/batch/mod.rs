//! Messages at the 0.9 edge (protocol-0.9.md section 6). Storage keeps one format, the 0.8
//! message (64-byte header, `crate::message`); a 0.9 send is checked (every frame's checksum and
//! the batch checksum) and rewritten into 0.8 messages, and a poll's stored messages are
//! rewritten into 0.9 batches. Ids, offsets, timestamps, origin timestamps, user headers and
//! payloads pass through unchanged, so either generation reads what the other wrote.
//!
//! ```text
//! batch header (256)  partition_id u64, base_offset u64, base_timestamp u64, origin_timestamp u64,
//!                     batch_length u64, batch_checksum u64, message_count u32, 204 reserved zeros
//! frame (48 + n)      checksum u64 (XXH3 of frame bytes 8..), id u128, offset_delta u32,
//!                     timestamp_delta u32, user_headers_length u32, payload_length u32,
//!                     reserved u64, payload, user headers
//! ```

use super::{u32_at, u64_at};
use crate::codec::{Decode, Encode, Reader};
use crate::error::{DecodeError, ErrorCode};
use crate::hash::xxh3_64;
use crate::message::{HEADER_SIZE as V08_HEADER_SIZE, MAX_PAYLOAD_BYTES, MessageView};
use crate::message::{MessageBatch, MessageHeader, OutgoingMessage, SendMessages};
use crate::primitives::user_headers::MAX_USER_HEADERS_BYTES;
use crate::primitives::{Identifier, Partitioning};
use bytes::{BufMut, BytesMut};

mod polled;
pub use polled::*;

pub const BATCH_HEADER_SIZE: usize = 256;
pub const FRAME_HEADER_SIZE: usize = 48;

const BATCH_LENGTH: usize = 32;
const BATCH_CHECKSUM: usize = 40;
const MESSAGE_COUNT: usize = 48;
const BATCH_RESERVED: usize = 52;

/// XXH3 over a batch header's fields and each frame's checksum (protocol-0.9.md 6.4).
fn batch_checksum(header: &[u8], frame_checksums: impl Iterator<Item = u64>) -> u64 {
    let mut input = Vec::with_capacity(BATCH_CHECKSUM + 4 + 8 * frame_checksums.size_hint().0);
    input.extend_from_slice(&header[..BATCH_CHECKSUM]);
    input.extend_from_slice(&header[MESSAGE_COUNT..MESSAGE_COUNT + 4]);
    for checksum in frame_checksums {
        input.extend_from_slice(&checksum.to_le_bytes());
    }
    xxh3_64(&input)
}

/// One frame of a batch, checked against the bytes left in the batch.
struct Frame<'a> {
    checksum: u64,
    id: u128,
    offset_delta: u32,
    timestamp_delta: u32,
    payload: &'a [u8],
    user_headers: &'a [u8],
}

fn parse_frame<'a>(reader: &mut Reader<'a>) -> Result<(Frame<'a>, &'a [u8]), DecodeError> {
    let start = reader.unread();
    let checksum = reader.u64("message checksum")?;
    let id = reader.u128("message id")?;
    let offset_delta = reader.u32("offset delta")?;
    let timestamp_delta = reader.u32("timestamp delta")?;
    let user_headers_len = reader.u32("user headers length")? as usize;
    let payload_len = reader.u32("payload length")? as usize;
    if reader.u64("message reserved")? != 0 {
        return Err(DecodeError::new(
            ErrorCode::InvalidReservedField,
            "message reserved",
        ));
    }
    if payload_len > MAX_PAYLOAD_BYTES {
        return Err(DecodeError::new(ErrorCode::TooBigMessagePayload, "payload"));
    }
    if user_headers_len > MAX_USER_HEADERS_BYTES {
        return Err(DecodeError::new(
            ErrorCode::TooBigUserHeaders,
            "user headers",
        ));
    }
    let payload = reader.take(payload_len, "message payload")?;
    let user_headers = reader.take(user_headers_len, "user headers")?;
    let whole = &start[..FRAME_HEADER_SIZE + payload_len + user_headers_len];
    Ok((
        Frame {
            checksum,
            id,
            offset_delta,
            timestamp_delta,
            payload,
            user_headers,
        },
        whole,
    ))
}

/// Decodes a 0.9 SendMessages body (protocol-0.9.md 6.1) into the 0.8 request the handlers
/// take, checking every checksum: 4027 for a frame, 4039 for the batch, 3 for a batch that does
/// not tile the body or disagrees with its count.
pub fn decode_send(body: &[u8]) -> Result<SendMessages, DecodeError> {
    let mut reader = Reader::new(body);
    let metadata_len = reader.u32("metadata length")? as usize;
    let mut metadata = Reader::new(reader.take(metadata_len, "send metadata")?);
    let invalid_identifier = |_| DecodeError::new(ErrorCode::InvalidIdentifier, "identifier");
    let stream_id = Identifier::decode(&mut metadata).map_err(invalid_identifier)?;
    let topic_id = Identifier::decode(&mut metadata).map_err(invalid_identifier)?;
    let partitioning = Partitioning::decode(&mut metadata)?;
    let messages_count = metadata.u32("messages count")?;
    let batch = reader.rest();
    if batch.len() < BATCH_HEADER_SIZE {
        return Err(DecodeError::invalid("batch header"));
    }
    let (header, frames) = batch.split_at(BATCH_HEADER_SIZE);
    let count = u32_at(header, MESSAGE_COUNT);
    if count == 0 || count != messages_count {
        return Err(DecodeError::new(
            ErrorCode::InvalidMessagesCount,
            "messages count",
        ));
    }
    if u64_at(header, BATCH_LENGTH) != batch.len() as u64 {
        return Err(DecodeError::invalid("batch length"));
    }
    if header[BATCH_RESERVED..].iter().any(|&byte| byte != 0) {
        return Err(DecodeError::new(
            ErrorCode::InvalidReservedField,
            "batch reserved",
        ));
    }
    let origin_timestamp = u64_at(header, 24);
    let mut reader = Reader::new(frames);
    // Storage's messages, written straight from the frames: each 48-byte frame header
    // becomes a 64-byte message header, the payload and user headers follow unchanged.
    let mut stored = BytesMut::with_capacity(
        frames.len() + count as usize * (V08_HEADER_SIZE - FRAME_HEADER_SIZE),
    );
    let mut checksums = Vec::with_capacity(count as usize);
    // Whether every frame is what a poll of this batch, whole, would build again (protocol
    // 6.3): then its checksum can be sent back as it is instead of hashed once more.
    let mut as_polled = true;
    let mut smallest_delta = u32::MAX;
    for index in 0..count {
        let (frame, whole) = parse_frame(&mut reader)?;
        if xxh3_64(&whole[8..]) != frame.checksum {
            return Err(DecodeError::new(
                ErrorCode::InvalidMessageChecksum,
                "message checksum",
            ));
        }
        checksums.push(frame.checksum);
        as_polled &= frame.id != 0 && frame.offset_delta == index;
        smallest_delta = smallest_delta.min(frame.timestamp_delta);
        MessageHeader {
            id: frame.id,
            origin_timestamp: origin_timestamp.saturating_add(u64::from(frame.timestamp_delta)),
            user_headers_length: frame.user_headers.len() as u32,
            payload_length: frame.payload.len() as u32,
            ..MessageHeader::default()
        }
        .encode(&mut stored);
        stored.put_slice(frame.payload);
        stored.put_slice(frame.user_headers);
    }
    if !reader.is_empty() {
        return Err(DecodeError::invalid("bytes after the last message"));
    }
    if batch_checksum(header, checksums.iter().copied()) != u64_at(header, BATCH_CHECKSUM) {
        return Err(DecodeError::new(
            ErrorCode::InvalidBatchChecksum,
            "batch checksum",
        ));
    }
    let mut batch = MessageBatch::from_stored(stored)?;
    // A poll's deltas count from the smallest origin timestamp; so must the client's.
    if as_polled && smallest_delta == 0 {
        batch = batch.with_frame_checksums(checksums);
    }
    Ok(SendMessages {
        stream_id,
        topic_id,
        partitioning,
        batch,
    })
}

/// Encodes a 0.9 SendMessages body (the client side: tests and our tools). Origin timestamps
/// must lie within u32::MAX µs of the smallest.
pub fn encode_send(
    stream_id: &Identifier,
    topic_id: &Identifier,
    partitioning: &Partitioning,
    messages: &[OutgoingMessage],
) -> Vec<u8> {
    let mut out = Vec::new();
    let frames = || {
        messages.iter().map(|m| {
            (
                m.id,
                m.origin_timestamp,
                m.payload.as_ref(),
                m.user_headers.as_ref(),
            )
        })
    };
    encode_send_frames(stream_id, topic_id, partitioning, frames, &mut out)
        .expect("origin timestamps within a u32 delta");
    out
}

/// Encodes the 0.9 SendMessages body of a 0.8 batch, as rill's clients build batches: the
/// same ids, origin timestamps, payloads and user headers. 4038 when the origin timestamps
/// spread wider than a u32 delta holds (about 71 minutes), which a 0.9 batch cannot carry.
pub fn encode_send_batch(
    stream_id: &Identifier,
    topic_id: &Identifier,
    partitioning: &Partitioning,
    batch: &MessageBatch,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let frames = || {
        batch.iter().map(|view| {
            (
                view.id(),
                view.origin_timestamp(),
                view.payload(),
                view.user_headers(),
            )
        })
    };
    encode_send_frames(stream_id, topic_id, partitioning, frames, out)
}

/// The send body from messages given as (id, origin timestamp, payload, user headers); the
/// messages are walked twice, for the batch's origin timestamp and then for the frames.
fn encode_send_frames<'a, I: Iterator<Item = (u128, u64, &'a [u8], &'a [u8])>>(
    stream_id: &Identifier,
    topic_id: &Identifier,
    partitioning: &Partitioning,
    messages: impl Fn() -> I,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let (mut count, mut low, mut high) = (0u32, u64::MAX, 0u64);
    for (_, origin, _, _) in messages() {
        count += 1;
        (low, high) = (low.min(origin), high.max(origin));
    }
    let origin = if count == 0 { 0 } else { low };
    if high.saturating_sub(origin) > u64::from(u32::MAX) {
        return Err(DecodeError::new(
            ErrorCode::InvalidMessageTimestampDelta,
            "origin timestamps of one batch",
        ));
    }
    let metadata_len =
        stream_id.encoded_len() + topic_id.encoded_len() + partitioning.encoded_len() + 4;
    out.put_u32_le(metadata_len as u32);
    stream_id.encode(out);
    topic_id.encode(out);
    partitioning.encode(out);
    out.put_u32_le(count);
    let frames =
        messages()
            .enumerate()
            .map(|(i, (id, origin_timestamp, payload, user_headers))| {
                let delta = (origin_timestamp - origin) as u32;
                (id, i as u32, delta, payload, user_headers)
            });
    write_batch(out, [0, 0, 0], origin, frames);
    Ok(())
}

/// Writes one batch: `stamps` = (partition_id, base_offset, base_timestamp); frames as
/// (id, offset_delta, timestamp_delta, payload, user_headers). The frames go straight into
/// `out` after a header that is filled in once their checksums are known.
fn write_batch<'a>(
    out: &mut Vec<u8>,
    stamps: [u64; 3],
    origin_timestamp: u64,
    frames: impl Iterator<Item = (u128, u32, u32, &'a [u8], &'a [u8])>,
) {
    let header_at = out.len();
    out.resize(header_at + BATCH_HEADER_SIZE, 0);
    let mut checksums = Vec::new();
    for (id, offset_delta, timestamp_delta, payload, user_headers) in frames {
        let start = out.len();
        out.reserve(FRAME_HEADER_SIZE + payload.len() + user_headers.len());
        out.put_u64_le(0);
        out.put_u128_le(id);
        out.put_u32_le(offset_delta);
        out.put_u32_le(timestamp_delta);
        out.put_u32_le(user_headers.len() as u32);
        out.put_u32_le(payload.len() as u32);
        out.put_u64_le(0);
        out.put_slice(payload);
        out.put_slice(user_headers);
        let checksum = xxh3_64(&out[start + 8..]);
        out[start..start + 8].copy_from_slice(&checksum.to_le_bytes());
        checksums.push(checksum);
    }
    let batch_length = (out.len() - header_at) as u64;
    let header = &mut out[header_at..header_at + BATCH_HEADER_SIZE];
    header[0..8].copy_from_slice(&stamps[0].to_le_bytes());
    header[8..16].copy_from_slice(&stamps[1].to_le_bytes());
    header[16..24].copy_from_slice(&stamps[2].to_le_bytes());
    header[24..32].copy_from_slice(&origin_timestamp.to_le_bytes());
    header[BATCH_LENGTH..BATCH_LENGTH + 8].copy_from_slice(&batch_length.to_le_bytes());
    header[MESSAGE_COUNT..MESSAGE_COUNT + 4]
        .copy_from_slice(&(checksums.len() as u32).to_le_bytes());
    let checksum = batch_checksum(header, checksums.into_iter());
    header[BATCH_CHECKSUM..BATCH_CHECKSUM + 8].copy_from_slice(&checksum.to_le_bytes());
}

/// The send confirmation (protocol-0.9.md 6.6): one entry for the partition written.
pub fn confirmation(stream_id: u32, topic_id: u32, partition_id: u32, base_offset: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    out.put_u32_le(1);
    out.put_u32_le(stream_id);
    out.put_u32_le(topic_id);
    out.put_u32_le(partition_id);
    out.put_u64_le(base_offset);
    out
}

#[cfg(test)]
mod tests;
