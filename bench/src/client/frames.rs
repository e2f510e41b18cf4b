//! Request frames encoded once and sent many times: the hot path writes them as they are.

use super::*;

/// Encodes a whole request frame (header and payload) once, to be sent many times.
pub fn encode_frame(request: &Request) -> Bytes {
    let mut frame = BytesMut::with_capacity(8 + request.payload_len());
    encode_request(request, &mut frame);
    frame.freeze()
}

/// A SendMessages frame built once and resent, with what it carries.
#[derive(Debug, Clone)]
pub struct PreparedBatch {
    pub frame: Bytes,
    pub messages: u32,
    /// Bytes of the messages (64-byte headers included), as a poll would return them.
    pub bytes: u64,
    /// Bytes of payload only.
    pub payload_bytes: u64,
}

/// Builds SendMessages frames of `protocol` for `stream/topic` with the given partitioning.
/// Message `i` of a batch carries id `i + 1` (so the server does not spend time drawing random
/// ids) and a payload of `sizes[i]` bytes of a repeating pattern. A 0.9 frame is the header
/// (renumbered by [`Connection::send_frame`]) followed by the body.
pub fn prepare_batch(
    stream: &Identifier,
    topic: &Identifier,
    partitioning: &Partitioning,
    sizes: &[u32],
    protocol: Protocol,
) -> PreparedBatch {
    let messages: Vec<OutgoingMessage> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| OutgoingMessage {
            id: i as u128 + 1,
            origin_timestamp: 0,
            payload: Bytes::from(
                (0..size)
                    .map(|byte| b'a' + (byte % 26) as u8)
                    .collect::<Vec<u8>>(),
            ),
            user_headers: Bytes::new(),
        })
        .collect();
    let batch = MessageBatch::from_messages(&messages);
    let bytes = batch.size() as u64;
    let request: Request = SendMessages {
        stream_id: stream.clone(),
        topic_id: topic.clone(),
        partitioning: partitioning.clone(),
        batch,
    }
    .into();
    let frame = match protocol {
        Protocol::V08 => encode_frame(&request),
        Protocol::V09 => {
            let sent = ClientSession::new(1, "iggy-bench", env!("CARGO_PKG_VERSION"))
                .and_then(|mut session| session.encode(&request))
                .expect("a benchmark batch spans no time, so it encodes");
            [&sent.header[..], &sent.body].concat().into()
        }
    };
    PreparedBatch {
        frame,
        messages: sizes.len() as u32,
        bytes,
        payload_bytes: sizes.iter().map(|&size| u64::from(size)).sum(),
    }
}
