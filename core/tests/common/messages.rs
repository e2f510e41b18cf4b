//! Generators of messages: as a producer builds them, in a SendMessages request, and stored
//! and polled as a server returns them.

use super::primitives::{encoded_headers, identifier, partitioning};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use rill_core::message::{MessageBatch, OutgoingMessage, PolledMessages, SendMessages};

/// A message as a producer builds it. User headers are either a valid blob, nothing, or opaque
/// bytes (the server stores the blob without parsing it).
pub fn outgoing_message() -> BoxedStrategy<OutgoingMessage> {
    (
        prop_oneof![Just(0u128), Just(1u128), any::<u128>()],
        any::<u64>(),
        vec(any::<u8>(), 0..160),
        prop_oneof![
            2 => Just(Bytes::new()),
            2 => encoded_headers(),
            1 => vec(any::<u8>(), 1..64).prop_map(Bytes::from),
        ],
    )
        .prop_map(
            |(id, origin_timestamp, payload, user_headers)| OutgoingMessage {
                id,
                origin_timestamp,
                payload: Bytes::from(payload),
                user_headers,
            },
        )
        .boxed()
}

pub fn outgoing_messages() -> BoxedStrategy<Vec<OutgoingMessage>> {
    vec(outgoing_message(), 1..5).boxed()
}

pub fn send_messages() -> BoxedStrategy<SendMessages> {
    (
        identifier(),
        identifier(),
        partitioning(),
        outgoing_messages(),
    )
        .prop_map(
            |(stream_id, topic_id, partitioning, messages)| SendMessages {
                stream_id,
                topic_id,
                partitioning,
                batch: MessageBatch::from_messages(&messages),
            },
        )
        .boxed()
}

/// Stored messages as a server returns them: stamped with consecutive offsets from
/// `first_offset`, one timestamp, and valid checksums.
pub fn stored_messages() -> BoxedStrategy<(u64, u64, Vec<OutgoingMessage>)> {
    (0u64..1 << 62, any::<u64>(), vec(outgoing_message(), 0..5)).boxed()
}

pub fn stamp_messages(first_offset: u64, timestamp: u64, messages: &[OutgoingMessage]) -> Bytes {
    let mut batch = MessageBatch::from_messages(messages);
    if !messages.is_empty() {
        batch.stamp(first_offset, timestamp, || 0xfeed);
    }
    batch.into_bytes().freeze()
}

pub fn polled_messages() -> BoxedStrategy<PolledMessages> {
    (any::<u32>(), stored_messages())
        .prop_map(|(partition_id, (first_offset, timestamp, messages))| {
            let current_offset = first_offset + messages.len() as u64;
            PolledMessages::new(
                partition_id,
                current_offset,
                stamp_messages(first_offset, timestamp, &messages),
            )
            .expect("stamped messages are valid")
        })
        .boxed()
}
