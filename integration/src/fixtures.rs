//! Test messages, and checks that what a poll returns is exactly what was sent.
//!
//! Messages are deterministic functions of a `(tag, sequence)` pair: the id encodes both, payload
//! sizes vary (so batches are not uniform), and every third message carries user headers of
//! several kinds. [`Expected`] keeps what the SDK put on the wire, because `IggyMessage` is not
//! `Clone` and the SDK fills `origin_timestamp` when a message is built.

use bytes::Bytes;
use iggy::prelude::*;
use std::collections::BTreeMap;
use std::str::FromStr;

/// Size of the fixed message header on the wire and on disk (protocol.md 6.1).
pub const MESSAGE_HEADER_BYTES: u64 = 64;

/// What was sent for one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub id: u128,
    pub payload: Bytes,
    pub user_headers: Bytes,
    pub origin_timestamp: u64,
}

impl Expected {
    /// Bytes the message occupies: header + payload + user headers.
    pub fn size_bytes(&self) -> u64 {
        MESSAGE_HEADER_BYTES + self.payload.len() as u64 + self.user_headers.len() as u64
    }
}

/// Records what `message` will put on the wire.
pub fn expected_of(message: &IggyMessage) -> Expected {
    Expected {
        id: message.header.id,
        payload: message.payload.clone(),
        user_headers: message.user_headers.clone().unwrap_or_default(),
        origin_timestamp: message.header.origin_timestamp,
    }
}

/// A distinct id for message `sequence` of series `tag` (never 0, which asks the server for a
/// random id).
pub fn message_id(tag: u32, sequence: u64) -> u128 {
    ((tag as u128 + 1) << 64) | sequence as u128
}

/// User headers of message `sequence`: a string, an unsigned, a bool and a raw value.
pub fn headers_for(tag: u32, sequence: u64) -> BTreeMap<HeaderKey, HeaderValue> {
    let mut headers = BTreeMap::new();
    headers.insert(
        HeaderKey::from_str("series").expect("header key"),
        HeaderValue::from_str(&format!("series-{tag}")).expect("header value"),
    );
    headers.insert(
        HeaderKey::from_str("sequence").expect("header key"),
        HeaderValue::from(sequence),
    );
    headers.insert(
        HeaderKey::from_str("even").expect("header key"),
        HeaderValue::from(sequence.is_multiple_of(2)),
    );
    headers.insert(
        HeaderKey::from_str("raw").expect("header key"),
        HeaderValue::try_from(vec![tag as u8, 0xff, 0x00, sequence as u8]).expect("raw value"),
    );
    headers
}

/// Message `sequence` of series `tag`: payload `"<tag>:<sequence>:"` followed by 0..=96 filler
/// bytes, user headers on every third message.
pub fn test_message(tag: u32, sequence: u64) -> IggyMessage {
    let mut payload = format!("{tag}:{sequence}:").into_bytes();
    let filler = (sequence % 97) as usize;
    payload.extend((0..filler).map(|i| b'a' + ((i as u64 + sequence) % 26) as u8));
    let builder = IggyMessage::builder()
        .id(message_id(tag, sequence))
        .payload(Bytes::from(payload));
    if sequence.is_multiple_of(3) {
        builder.user_headers(headers_for(tag, sequence)).build()
    } else {
        builder.build()
    }
    .expect("valid test message")
}

/// Messages `start..start + count` of series `tag`.
pub fn test_messages(tag: u32, start: u64, count: u64) -> Vec<IggyMessage> {
    (start..start + count)
        .map(|sequence| test_message(tag, sequence))
        .collect()
}

/// Asserts that `polled` is `expected` as stored at `offset`: same id, payload bytes, user header
/// bytes (and parsed map), origin timestamp; the server-set offset; a reserved field of 0; a
/// checksum computed as protocol.md 6.2 says.
#[track_caller]
pub fn assert_message(polled: &IggyMessage, expected: &Expected, offset: u64, context: &str) {
    let header = &polled.header;
    assert_eq!(header.offset, offset, "{context}: offset");
    assert_eq!(header.id, expected.id, "{context}: id at offset {offset}");
    assert_eq!(
        polled.payload, expected.payload,
        "{context}: payload at offset {offset}"
    );
    assert_eq!(
        header.payload_length as usize,
        expected.payload.len(),
        "{context}: payload_length at offset {offset}"
    );
    let polled_headers = polled.user_headers.clone().unwrap_or_default();
    assert_eq!(
        polled_headers, expected.user_headers,
        "{context}: user header bytes at offset {offset}"
    );
    assert_eq!(
        header.user_headers_length as usize,
        expected.user_headers.len(),
        "{context}: user_headers_length at offset {offset}"
    );
    if !expected.user_headers.is_empty() {
        let map = polled
            .user_headers_map()
            .unwrap_or_else(|error| panic!("{context}: user headers at offset {offset}: {error}"))
            .expect("headers present");
        assert_eq!(
            map.len(),
            4,
            "{context}: user header count at offset {offset}"
        );
    }
    assert_eq!(
        header.origin_timestamp, expected.origin_timestamp,
        "{context}: origin_timestamp at offset {offset}"
    );
    assert_eq!(header.reserved, 0, "{context}: reserved at offset {offset}");
    // protocol.md 6.2: XXH3-64 (seed 0) of the stored message from byte 8 (after the checksum)
    // to its end, covering the server-assigned offset, timestamp and id.
    let stored = polled.to_bytes();
    assert_eq!(
        header.checksum,
        xxhash_rust::xxh3::xxh3_64(&stored[8..]),
        "{context}: checksum at offset {offset}"
    );
}

/// Asserts that `polled` holds exactly `expected`, at dense offsets starting from `first_offset`,
/// with non-decreasing server timestamps inside `[not_before, not_after]` (µs since the epoch).
#[track_caller]
pub fn assert_messages(
    polled: &[IggyMessage],
    expected: &[Expected],
    first_offset: u64,
    (not_before, not_after): (u64, u64),
    context: &str,
) {
    assert_eq!(polled.len(), expected.len(), "{context}: message count");
    let mut previous_timestamp = 0;
    for (index, (message, expected)) in polled.iter().zip(expected).enumerate() {
        let offset = first_offset + index as u64;
        assert_message(message, expected, offset, context);
        let timestamp = message.header.timestamp;
        assert!(
            timestamp >= previous_timestamp,
            "{context}: timestamp at offset {offset} ({timestamp}) is before the previous one ({previous_timestamp})"
        );
        assert!(
            (not_before..=not_after).contains(&timestamp),
            "{context}: timestamp at offset {offset} ({timestamp}) is outside the send window {not_before}..={not_after}"
        );
        previous_timestamp = timestamp;
    }
}

/// Microseconds since the Unix epoch, as the server stamps messages.
pub fn now_micros() -> u64 {
    IggyTimestamp::now().as_micros()
}

/// Polls a whole partition from offset 0 with a plain consumer (no commit); see [`poll_from`].
pub async fn poll_partition(
    client: &IggyClient,
    stream_id: &Identifier,
    topic_id: &Identifier,
    partition_id: u32,
    batch: u32,
) -> Vec<IggyMessage> {
    poll_from(client, stream_id, topic_id, partition_id, 0, batch).await
}

/// Polls a partition from `start_offset` to its end with a plain consumer (no commit), `batch`
/// messages per request, each request continuing after the last offset returned. Checks that
/// each response names the partition, that its count field matches the messages it carries, and
/// that `current_offset` is not behind what it returned. Returns the messages in order.
pub async fn poll_from(
    client: &IggyClient,
    stream_id: &Identifier,
    topic_id: &Identifier,
    partition_id: u32,
    start_offset: u64,
    batch: u32,
) -> Vec<IggyMessage> {
    let consumer = Consumer::new(Identifier::numeric(9_999).expect("id"));
    let mut messages: Vec<IggyMessage> = Vec::new();
    let mut offset = start_offset;
    loop {
        let polled = client
            .poll_messages(
                stream_id,
                topic_id,
                Some(partition_id),
                &consumer,
                &PollingStrategy::offset(offset),
                batch,
                false,
            )
            .await
            .unwrap_or_else(|error| {
                panic!("poll partition {partition_id} from offset {offset}: {error}")
            });
        assert_eq!(
            polled.partition_id, partition_id,
            "poll response names another partition"
        );
        assert_eq!(
            polled.count as usize,
            polled.messages.len(),
            "poll response count disagrees with the messages it carries"
        );
        let Some(last) = polled.messages.last() else {
            return messages;
        };
        assert!(
            polled.messages.len() <= batch as usize,
            "poll returned {} messages for count {batch}",
            polled.messages.len()
        );
        assert!(
            polled.current_offset >= last.header.offset,
            "current_offset {} is behind returned offset {}",
            polled.current_offset,
            last.header.offset
        );
        assert!(
            last.header.offset >= offset,
            "poll from offset {offset} returned offset {}",
            last.header.offset
        );
        offset = last.header.offset + 1;
        messages.extend(polled.messages);
    }
}

/// One acknowledged SendMessages request.
#[derive(Debug, Clone)]
pub struct SentBatch {
    /// The messages, in the order they were sent.
    pub messages: Vec<Expected>,
    /// Clock readings (µs) just before sending and just after the acknowledgement: the server's
    /// timestamp for these messages must lie inside.
    pub window: (u64, u64),
}

/// Sends `messages` in one SendMessages request and returns what was sent.
pub async fn send_batch(
    client: &IggyClient,
    stream_id: &Identifier,
    topic_id: &Identifier,
    partitioning: &Partitioning,
    mut messages: Vec<IggyMessage>,
) -> SentBatch {
    let expected: Vec<Expected> = messages.iter().map(expected_of).collect();
    let before = now_micros();
    client
        .send_messages(stream_id, topic_id, partitioning, &mut messages)
        .await
        .unwrap_or_else(|error| {
            panic!(
                "send {} messages ({partitioning:?}) to {stream_id}/{topic_id}: {error}",
                expected.len()
            )
        });
    let after = now_micros();
    SentBatch {
        messages: expected,
        window: (before, after),
    }
}

/// Sends messages `start..start + count` of series `tag` in batches of `batch_size`, all with the
/// same partitioning; returns the batches in order.
pub async fn send_series(
    client: &IggyClient,
    stream_id: &Identifier,
    topic_id: &Identifier,
    partitioning: &Partitioning,
    (tag, start, count): (u32, u64, u64),
    batch_size: u64,
) -> Vec<SentBatch> {
    let mut batches = Vec::new();
    let mut sequence = start;
    while sequence < start + count {
        let size = batch_size.min(start + count - sequence);
        let messages = test_messages(tag, sequence, size);
        batches.push(send_batch(client, stream_id, topic_id, partitioning, messages).await);
        sequence += size;
    }
    batches
}

/// Asserts that a partition's polled content is exactly `batches`, in order, from offset
/// `first_offset`: message fields as in [`assert_message`], dense offsets, timestamps
/// non-decreasing, each batch stamped with one timestamp inside its send window.
#[track_caller]
pub fn assert_batches(
    polled: &[IggyMessage],
    batches: &[&SentBatch],
    first_offset: u64,
    context: &str,
) {
    let total: usize = batches.iter().map(|batch| batch.messages.len()).sum();
    assert_eq!(polled.len(), total, "{context}: message count");
    let mut position = 0;
    let mut previous_timestamp = 0;
    for (number, batch) in batches.iter().enumerate() {
        let slice = &polled[position..position + batch.messages.len()];
        let offset = first_offset + position as u64;
        let context = format!("{context}, batch {number}");
        assert_messages(slice, &batch.messages, offset, batch.window, &context);
        let first_timestamp = slice[0].header.timestamp;
        assert!(
            first_timestamp >= previous_timestamp,
            "{context}: timestamps go back between batches"
        );
        assert!(
            slice.iter().all(|m| m.header.timestamp == first_timestamp),
            "{context}: messages of one SendMessages batch must share one server timestamp"
        );
        previous_timestamp = first_timestamp;
        position += batch.messages.len();
    }
}
