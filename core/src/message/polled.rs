//! The PollMessages (100) response payload.
//!
//! ```text
//! partition_id   u32   the partition actually read
//! current_offset u64   offset of the last message stored in that partition (0 if empty)
//! count          u32   number of messages that follow
//! messages             back to back, in stored form
//! ```
//! A server answers with the 16-byte header followed by stored bytes sliced straight from its
//! log; a client keeps the payload and views messages in it without copying them.

use super::header::{MessageIter, MessageView};
use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use bytes::{BufMut, Bytes};

/// Size of the fixed part before the messages.
pub const POLL_RESPONSE_HEADER_SIZE: usize = 16;

/// Writes the 16-byte header a server puts before the stored messages.
pub fn encode_poll_header(
    partition_id: u32,
    current_offset: u64,
    count: u32,
) -> [u8; POLL_RESPONSE_HEADER_SIZE] {
    let mut header = [0u8; POLL_RESPONSE_HEADER_SIZE];
    header[0..4].copy_from_slice(&partition_id.to_le_bytes());
    header[4..12].copy_from_slice(&current_offset.to_le_bytes());
    header[12..16].copy_from_slice(&count.to_le_bytes());
    header
}

/// A decoded poll response; messages stay in the response buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolledMessages {
    pub partition_id: u32,
    pub current_offset: u64,
    pub count: u32,
    messages: Bytes,
}

impl PolledMessages {
    /// Validates every message in `messages` and builds the response.
    pub fn new(
        partition_id: u32,
        current_offset: u64,
        messages: Bytes,
    ) -> Result<Self, DecodeError> {
        let count = MessageIter::new(&messages)
            .try_fold(0u32, |count, message| message.map(|_| count + 1))?;
        Ok(PolledMessages {
            partition_id,
            current_offset,
            count,
            messages,
        })
    }

    /// Decodes a response payload without copying the messages.
    pub fn decode_bytes(payload: Bytes) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(&payload);
        let partition_id = reader.u32("partition id")?;
        let current_offset = reader.u64("current offset")?;
        // Like the official SDK, the message walk goes by header lengths, not by `count`.
        let _declared_count = reader.u32("messages count")?;
        PolledMessages::new(
            partition_id,
            current_offset,
            payload.slice(super::POLL_RESPONSE_HEADER_SIZE..),
        )
    }

    pub fn messages(&self) -> impl Iterator<Item = MessageView<'_>> {
        MessageIter::new(&self.messages).map(|message| message.expect("validated on construction"))
    }

    /// The raw messages section.
    pub fn messages_bytes(&self) -> &Bytes {
        &self.messages
    }
}

impl Encode for PolledMessages {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_slice(&encode_poll_header(
            self.partition_id,
            self.current_offset,
            self.count,
        ));
        out.put_slice(&self.messages);
    }
    fn encoded_len(&self) -> usize {
        POLL_RESPONSE_HEADER_SIZE + self.messages.len()
    }
}

impl Decode for PolledMessages {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        PolledMessages::decode_bytes(Bytes::copy_from_slice(reader.rest()))
    }
}
