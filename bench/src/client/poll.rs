//! Poll replies of both generations, summarised without copying the messages out of the
//! receive buffer.

use crate::error::{Error, Result};
use rill_core::Reader;
use rill_core::message::MessageIter;
use rill_core::v09::batch::PolledFrames;

/// A stored message's header: the unit message bytes are counted in.
const V08_MESSAGE_HEADER: usize = rill_core::message::HEADER_SIZE;

/// A poll's outcome, read without copying the messages out of the receive buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollSummary {
    pub partition_id: u32,
    pub current_offset: u64,
    pub messages: u32,
    /// Bytes of the messages section (headers, payloads, user headers).
    pub bytes: u64,
    /// Bytes of payload only.
    pub payload_bytes: u64,
    /// Offset of the last message returned, if any.
    pub last_offset: Option<u64>,
}

/// The 16-byte head both generations' poll replies start with, as an empty summary, and the
/// bytes after it.
fn poll_head(payload: &[u8]) -> Result<(PollSummary, &[u8])> {
    let decode = |error| Error::Decode("poll messages", error);
    let mut reader = Reader::new(payload);
    let partition_id = reader.u32("partition id").map_err(decode)?;
    let current_offset = reader.u64("current offset").map_err(decode)?;
    let _declared_count = reader.u32("messages count").map_err(decode)?;
    let summary = PollSummary {
        partition_id,
        current_offset,
        ..PollSummary::default()
    };
    Ok((summary, reader.rest()))
}

impl PollSummary {
    /// Counts one message: its stored size (64-byte header included), payload and offset.
    fn count(&mut self, stored_bytes: usize, payload_bytes: usize, offset: u64) {
        self.messages += 1;
        self.bytes += stored_bytes as u64;
        self.payload_bytes += payload_bytes as u64;
        self.last_offset = Some(offset);
    }
}

/// Reads a PollMessages response payload (protocol.md 6.5) and walks its messages by their
/// header lengths, as the official SDK does.
pub fn summarise_poll(payload: &[u8]) -> Result<PollSummary> {
    let (mut summary, messages) = poll_head(payload)?;
    for message in MessageIter::new(messages) {
        let message = message.map_err(|error| Error::Decode("poll messages", error))?;
        summary.count(message.size(), message.payload().len(), message.offset());
    }
    Ok(summary)
}

/// Reads a 0.9 PollMessages reply (protocol-0.9.md 6.7) by walking its batches and frames by
/// their lengths, as the official SDK does. Bytes are counted as stored (64-byte headers), the
/// same measure as a 0.8 poll's.
pub fn summarise_v09_poll(body: &[u8]) -> Result<PollSummary> {
    let (mut summary, batches) = poll_head(body)?;
    for frame in PolledFrames::new(batches) {
        let frame = frame.map_err(|error| Error::Decode("poll messages", error))?;
        let stored = V08_MESSAGE_HEADER + frame.payload.len() + frame.user_headers.len();
        summary.count(stored, frame.payload.len(), frame.offset);
    }
    Ok(summary)
}
