//! Messages: the 64-byte header, zero-copy views over batches, the SendMessages body and the
//! PollMessages response (protocol.md section 6).

mod batch;
mod header;
mod polled;

pub use batch::{MessageBatch, OutgoingMessage, SendMessages};
pub use header::{
    HEADER_SIZE, MAX_PAYLOAD_BYTES, MessageHeader, MessageIter, MessageView, checksum, stamp,
};
/// Byte offsets of the header's fields.
pub mod field {
    pub use super::header::{
        CHECKSUM, ID, OFFSET, ORIGIN_TIMESTAMP, PAYLOAD_LENGTH, RESERVED, TIMESTAMP,
        USER_HEADERS_LENGTH,
    };
}
pub use polled::{POLL_RESPONSE_HEADER_SIZE, PolledMessages, encode_poll_header};
