//! What a handler answers: the payload of the response frame, or a status.

use bytes::Bytes;
use rill_core::{Encode, ErrorCode};
use std::sync::Arc;

/// What goes back in the response frame's payload.
pub enum Response {
    Empty,
    /// A send: empty on 0.8; the 0.9 protocol confirms where the batch went.
    Sent {
        stream_id: u32,
        topic_id: u32,
        partition_id: u32,
        base_offset: u64,
    },
    Bytes(Vec<u8>),
    /// A poll: the 16-byte header, then stored message bytes as they are. Beside the chunks,
    /// the 0.9 frame checksums of those that are whole batches sent over 0.9 (empty or one
    /// entry per chunk), which only a 0.9 reply uses.
    Polled {
        header: [u8; 16],
        chunks: Vec<Bytes>,
        frame_checksums: Vec<Option<Arc<[u64]>>>,
    },
}

impl Response {
    pub fn encoded(value: &impl Encode) -> Response {
        Response::Bytes(value.to_bytes())
    }

    pub fn len(&self) -> usize {
        match self {
            Response::Empty | Response::Sent { .. } => 0,
            Response::Bytes(bytes) => bytes.len(),
            Response::Polled { header, chunks, .. } => {
                header.len() + chunks.iter().map(Bytes::len).sum::<usize>()
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub type HandlerResult = Result<Response, ErrorCode>;

impl Response {
    /// A control-lane reply: its encoded payload, possibly empty.
    pub fn from_payload(payload: Vec<u8>) -> Response {
        if payload.is_empty() {
            Response::Empty
        } else {
            Response::Bytes(payload)
        }
    }
}
