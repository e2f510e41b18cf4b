//! Shared helpers: the allowed status codes, the decoder checks and the response table, and
//! the generators of hostile input (biased bytes, mutations, plausible garbage).

use crate::common::*;
use bytes::{Bytes, BytesMut};
use proptest::collection::vec;
use proptest::prelude::*;
use rill_core::codec::{Decode, Encode};
use rill_core::error::{DecodeError, ErrorCode};
use rill_core::message::{
    MessageBatch, MessageHeader, MessageIter, MessageView, PolledMessages, SendMessages,
};
use rill_core::primitives::user_headers;
use rill_core::primitives::{
    Consumer, Identifier, Name, OptionalPartition, Partitioning, Permissions, PollingStrategy,
};
use rill_core::requests::{CommandCode, Request};
use rill_core::responses::*;
use std::fmt::Debug;

/// Cases for the arbitrary-bytes properties (each case runs every decoder of its family).
pub(crate) const CASES: u32 = 20_000;
/// Cases for the mutation properties (each case builds a valid value first).
pub(crate) const MUTATION_CASES: u32 = 10_000;

use ErrorCode::*;

/// Control-plane requests and all responses: malformed → 3, failed validation → 4.
const CONTROL_CODES: &[ErrorCode] = &[InvalidCommand, InvalidFormat];
/// A single message (protocol.md 6.1, 1.3 limits).
const MESSAGE_CODES: &[ErrorCode] = &[
    TooSmallMessage,
    TooBigMessagePayload,
    TooBigUserHeaders,
    InvalidMessagePayloadLength,
    InvalidReservedField,
];
/// SendMessages (protocol.md 6.4): message codes plus the routing and index codes.
const SEND_CODES: &[ErrorCode] = &[
    InvalidCommand,
    InvalidIdentifier,
    InvalidMessagesCount,
    InvalidIndexesByteSize,
    NonZeroOffset,
    NonZeroTimestamp,
    MissingIndex,
    InvalidMessagesSize,
    TooSmallMessage,
    TooBigMessagePayload,
    TooBigUserHeaders,
    InvalidMessagePayloadLength,
    InvalidReservedField,
];
/// PollMessages response: a truncated 16-byte header, or a bad message.
const POLL_CODES: &[ErrorCode] = &[
    InvalidCommand,
    TooSmallMessage,
    TooBigMessagePayload,
    TooBigUserHeaders,
    InvalidMessagePayloadLength,
    InvalidReservedField,
];
/// User headers (protocol.md 6.3).
const HEADER_CODES: &[ErrorCode] = &[
    InvalidCommand,
    TooBigUserHeaders,
    InvalidHeaderKey,
    InvalidHeaderValue,
    InvalidHeaderKind,
];

fn expect_code(error: &DecodeError, allowed: &[ErrorCode], what: &str) {
    assert!(
        allowed.contains(&error.code),
        "{what}: error {error} carries {:?}, not one of {allowed:?}",
        error.code
    );
    assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code));
}

fn request_codes(code: CommandCode) -> &'static [ErrorCode] {
    if code == CommandCode::SendMessages {
        SEND_CODES
    } else {
        CONTROL_CODES
    }
}

/// Decodes `payload` as command `code` and checks the outcome: an accepted request has that
/// command, re-encodes to `payload_len()` bytes and decodes again to the same bytes; a rejected
/// one carries a code allowed for the command (3 for unknown codes).
pub(crate) fn check_request(code: u32, payload: &[u8]) {
    let result = Request::decode(code, BytesMut::from(payload));
    let Some(command) = CommandCode::from_code(code) else {
        assert_eq!(
            result.expect_err("unknown code accepted").code,
            InvalidCommand
        );
        return;
    };
    match result {
        Ok(request) => {
            assert_eq!(request.command(), command);
            let mut encoded = Vec::new();
            request.encode_payload(&mut encoded);
            assert_eq!(encoded.len(), request.payload_len(), "{command}");
            let again = Request::decode(code, BytesMut::from(&encoded[..]))
                .unwrap_or_else(|error| panic!("{command}: re-encoding not decodable: {error}"));
            let mut encoded_again = Vec::new();
            again.encode_payload(&mut encoded_again);
            assert_eq!(encoded_again, encoded, "{command}: re-encoding not stable");
            if let Request::SendMessages(mut send) = again {
                exercise_batch(&mut send.batch, 0);
            }
        }
        Err(error) => expect_code(&error, request_codes(command), command.name()),
    }
}

/// What a server does with an accepted batch: read every message and stamp it.
fn exercise_batch(batch: &mut MessageBatch, first_offset: u64) {
    let count = batch.count();
    let views = batch.iter().count();
    assert_eq!(views as u32, count);
    let size: usize = batch.iter().map(|m| m.size()).sum();
    assert_eq!(size, batch.size());
    let last = batch.stamp(first_offset, 1, || 5);
    if count > 0 {
        assert_eq!(last, first_offset + u64::from(count) - 1);
    }
    assert!(batch.iter().all(|m| m.checksum_is_valid()));
}

/// Decodes `bytes` as `T`; an accepted value re-encodes to `encoded_len()` bytes that decode to
/// the same bytes again, a rejected one carries an allowed code.
fn check_decoder<T: Decode + Encode + Debug>(bytes: &[u8], allowed: &[ErrorCode]) {
    match T::from_bytes(bytes) {
        Ok(value) => {
            let encoded = value.to_bytes();
            assert_eq!(encoded.len(), value.encoded_len(), "{value:?}");
            let again = T::from_bytes(&encoded)
                .unwrap_or_else(|error| panic!("re-encoding of {value:?} not decodable: {error}"));
            assert_eq!(again.to_bytes(), encoded, "re-encoding not stable");
        }
        Err(error) => expect_code(&error, allowed, std::any::type_name::<T>()),
    }
}

/// Every response (and shared primitive) decoder, by name, for the tables below.
type Check = fn(&[u8]);

fn control<T: Decode + Encode + Debug>(bytes: &[u8]) {
    check_decoder::<T>(bytes, CONTROL_CODES);
}

pub(crate) fn polled(bytes: &[u8]) {
    check_decoder::<PolledMessages>(bytes, POLL_CODES);
    if let Ok(polled) = PolledMessages::decode_bytes(Bytes::copy_from_slice(bytes)) {
        assert_eq!(polled.count as usize, polled.messages().count());
        for message in polled.messages() {
            let _ = (message.header(), message.payload(), message.user_headers());
        }
    }
}

/// (name, decoder check, generator of valid encodings) for every response type and the shared
/// primitives responses and requests are built from.
pub(crate) fn response_table() -> Vec<(&'static str, Check, BoxedStrategy<Vec<u8>>)> {
    fn entry<T: Decode + Encode + Debug + 'static>(
        name: &'static str,
        valid: BoxedStrategy<T>,
    ) -> (&'static str, Check, BoxedStrategy<Vec<u8>>) {
        (
            name,
            control::<T>,
            valid.prop_map(|value| value.to_bytes()).boxed(),
        )
    }
    fn list<T: Debug + 'static>(strategy: BoxedStrategy<T>) -> BoxedStrategy<Vec<T>> {
        vec(strategy, 0..4).boxed()
    }
    vec![
        entry::<StreamInfo>("StreamInfo", stream_info()),
        entry::<StreamDetails>("StreamDetails", stream_details()),
        entry::<Vec<StreamInfo>>("Vec<StreamInfo>", list(stream_info())),
        entry::<TopicInfo>("TopicInfo", topic_info()),
        entry::<TopicDetails>("TopicDetails", topic_details()),
        entry::<Vec<TopicInfo>>("Vec<TopicInfo>", list(topic_info())),
        entry::<PartitionInfo>("PartitionInfo", partition_info()),
        entry::<ConsumerGroupInfo>("ConsumerGroupInfo", consumer_group_info()),
        entry::<ConsumerGroupMember>("ConsumerGroupMember", consumer_group_member()),
        entry::<ConsumerGroupDetails>("ConsumerGroupDetails", consumer_group_details()),
        entry::<Vec<ConsumerGroupInfo>>("Vec<ConsumerGroupInfo>", list(consumer_group_info())),
        entry::<ConsumerOffsetInfo>("ConsumerOffsetInfo", consumer_offset_info()),
        entry::<Stats>("Stats", stats()),
        entry::<CacheMetric>("CacheMetric", cache_metric()),
        entry::<ClientInfo>("ClientInfo", client_info()),
        entry::<Vec<ClientInfo>>("Vec<ClientInfo>", list(client_info())),
        entry::<ClientGroup>("ClientGroup", client_group()),
        entry::<ClientDetails>("ClientDetails", client_details()),
        entry::<ClusterNode>("ClusterNode", cluster_node()),
        entry::<ClusterMetadata>("ClusterMetadata", cluster_metadata()),
        entry::<UserInfo>("UserInfo", user_info()),
        entry::<Vec<UserInfo>>("Vec<UserInfo>", list(user_info())),
        entry::<UserDetails>("UserDetails", user_details()),
        entry::<IdentityInfo>("IdentityInfo", identity_info()),
        entry::<RawPersonalAccessToken>("RawPersonalAccessToken", raw_personal_access_token()),
        entry::<PersonalAccessTokenInfo>("PersonalAccessTokenInfo", personal_access_token_info()),
        entry::<Vec<PersonalAccessTokenInfo>>(
            "Vec<PersonalAccessTokenInfo>",
            list(personal_access_token_info()),
        ),
        (
            "PolledMessages",
            polled as Check,
            polled_messages().prop_map(|p| p.to_bytes()).boxed(),
        ),
        entry::<Identifier>("Identifier", identifier()),
        entry::<Name>("Name", name()),
        entry::<Consumer>("Consumer", consumer()),
        entry::<OptionalPartition>("OptionalPartition", optional_partition()),
        entry::<PollingStrategy>("PollingStrategy", polling_strategy()),
        entry::<Partitioning>("Partitioning", partitioning()),
        entry::<Permissions>("Permissions", permissions()),
    ]
}

// ---------------------------------------------------------------------------------------------
// Input generators
// ---------------------------------------------------------------------------------------------

/// Arbitrary bytes, half the time drawn mostly from the values that steer decoders deeper
/// (kinds and flags 0..=4, length bytes, 0xff).
pub(crate) fn hostile_bytes(max: usize) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..max),
        vec(
            prop_oneof![
                3 => 0u8..=4,
                1 => Just(0xffu8),
                2 => any::<u8>(),
            ],
            0..max
        ),
    ]
    .boxed()
}

/// One way of damaging an encoding.
#[derive(Debug, Clone)]
pub(crate) enum Mutation {
    FlipBit(usize, u8),
    SetByte(usize, u8),
    Truncate(usize),
    Extend(Vec<u8>),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    SetU32(usize, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit(at, bit)),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::SetByte(at, byte)),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        1 => vec(any::<u8>(), 1..32).prop_map(Mutation::Extend),
        1 => (any::<usize>(), vec(any::<u8>(), 1..16)).prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        1 => (any::<usize>(), 1usize..16).prop_map(|(at, len)| Mutation::Remove(at, len)),
        2 => (
            any::<usize>(),
            prop_oneof![Just(0u32), Just(1), Just(4), Just(64), Just(0xffff), Just(u32::MAX - 3), Just(u32::MAX), any::<u32>()],
        )
            .prop_map(|(at, value)| Mutation::SetU32(at, value)),
    ]
}

pub(crate) fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    vec(mutation(), 1..4)
}

pub(crate) fn apply(bytes: &mut Vec<u8>, mutations: &[Mutation]) {
    for mutation in mutations {
        let len = bytes.len();
        match mutation {
            Mutation::FlipBit(at, bit) if len > 0 => bytes[at % len] ^= 1 << bit,
            Mutation::SetByte(at, byte) if len > 0 => bytes[at % len] = *byte,
            Mutation::Truncate(at) => bytes.truncate(at % (len + 1)),
            Mutation::Extend(tail) => bytes.extend_from_slice(tail),
            Mutation::Insert(at, more) => {
                let at = at % (len + 1);
                bytes.splice(at..at, more.iter().copied());
            }
            Mutation::Remove(at, count) if len > 0 => {
                let at = at % len;
                bytes.drain(at..(at + count).min(len));
            }
            Mutation::SetU32(at, value) if len >= 4 => {
                let at = at % (len - 3);
                bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
            _ => {}
        }
    }
}

/// A message header with lengths that are usually small enough to be satisfiable, followed by
/// arbitrary bytes: reaches the size, limit and reserved-field checks of MessageView::parse.
pub(crate) fn message_like_bytes() -> BoxedStrategy<Vec<u8>> {
    (
        prop_oneof![3 => 0u32..200, 1 => any::<u32>(), 1 => Just(64_000_001)],
        prop_oneof![3 => 0u32..100, 1 => any::<u32>(), 1 => Just(100_001)],
        prop_oneof![4 => Just(0u64), 1 => any::<u64>()],
        vec(any::<u8>(), 0..400),
    )
        .prop_map(|(payload_length, user_headers_length, reserved, tail)| {
            let mut bytes = MessageHeader {
                payload_length,
                user_headers_length,
                reserved,
                ..MessageHeader::default()
            }
            .to_bytes();
            bytes.extend_from_slice(&tail);
            bytes
        })
        .boxed()
}

/// A plausible SendMessages body: valid routing, then an index and messages section that are
/// only sometimes consistent.
pub(crate) fn send_like_bytes() -> BoxedStrategy<Vec<u8>> {
    (
        identifier(),
        identifier(),
        partitioning(),
        prop_oneof![4 => 1u32..5, 1 => any::<u32>()],
        vec(
            (
                prop_oneof![4 => Just(0u32), 1 => any::<u32>()],
                prop_oneof![3 => 0u32..600, 1 => any::<u32>()],
                prop_oneof![4 => Just(0u64), 1 => any::<u64>()],
            ),
            0..5,
        ),
        vec(message_like_bytes(), 0..4),
        any::<bool>(),
    )
        .prop_map(
            |(stream, topic, partitioning, count, index, messages, consistent)| {
                // Half the time the count and index match the messages' actual sizes, so the
                // per-message checks (lengths, limits, reserved field) are reached.
                let (count, index) = if consistent {
                    let mut end = 0u32;
                    let index = messages
                        .iter()
                        .map(|message| {
                            end = end.wrapping_add(message.len() as u32);
                            (0, end, 0)
                        })
                        .collect();
                    (messages.len() as u32, index)
                } else {
                    (count, index)
                };
                let mut metadata = Vec::new();
                stream.encode(&mut metadata);
                topic.encode(&mut metadata);
                partitioning.encode(&mut metadata);
                metadata.extend_from_slice(&count.to_le_bytes());
                let mut bytes = (metadata.len() as u32).to_le_bytes().to_vec();
                bytes.extend_from_slice(&metadata);
                for (offset, position, timestamp) in index {
                    bytes.extend_from_slice(&offset.to_le_bytes());
                    bytes.extend_from_slice(&position.to_le_bytes());
                    bytes.extend_from_slice(&timestamp.to_le_bytes());
                }
                for message in messages {
                    bytes.extend_from_slice(&message);
                }
                bytes
            },
        )
        .boxed()
}

/// TLVs with random kinds (including 0 and > 15) and lengths (including 0 and > 255).
pub(crate) fn header_like_bytes() -> BoxedStrategy<Vec<u8>> {
    vec(
        (
            prop_oneof![4 => 1u8..=15, 1 => any::<u8>()],
            prop_oneof![4 => 0u32..20, 1 => any::<u32>()],
            vec(any::<u8>(), 0..20),
        ),
        0..6,
    )
    .prop_map(|fields| {
        let mut bytes = Vec::new();
        for (kind, len, value) in fields {
            bytes.push(kind);
            bytes.extend_from_slice(&len.to_le_bytes());
            bytes.extend_from_slice(&value);
        }
        bytes
    })
    .boxed()
}

pub(crate) fn check_message_bytes(bytes: &[u8], first_offset: u64) {
    match MessageView::parse(bytes) {
        Ok(view) => {
            assert!(view.size() <= bytes.len());
            assert_eq!(
                view.size(),
                64 + view.payload().len() + view.user_headers().len()
            );
            let header = view.header();
            assert_eq!(header.message_size(), view.size() as u64);
            assert_eq!(header.reserved, 0);
            let _ = (view.checksum_is_valid(), view.id(), view.offset());
        }
        Err(error) => expect_code(&error, MESSAGE_CODES, "MessageView::parse"),
    }
    let mut walked = 0;
    let mut failed = false;
    for message in MessageIter::new(bytes) {
        assert!(!failed, "MessageIter yielded after an error");
        match message {
            Ok(view) => walked += view.size(),
            Err(error) => {
                expect_code(&error, MESSAGE_CODES, "MessageIter");
                failed = true;
            }
        }
    }
    assert!(walked <= bytes.len());
    match MessageBatch::from_stored(BytesMut::from(bytes)) {
        Ok(mut batch) => {
            assert!(!failed && walked == bytes.len());
            exercise_batch(&mut batch, first_offset);
        }
        Err(error) => {
            assert!(failed);
            expect_code(&error, MESSAGE_CODES, "MessageBatch::from_stored");
        }
    }
}

pub(crate) fn check_headers(bytes: &[u8]) {
    match user_headers::parse(bytes) {
        Ok(pairs) => {
            let mut encoded = Vec::new();
            user_headers::encode(&pairs, &mut encoded);
            assert_eq!(encoded, bytes, "an accepted blob re-encodes to itself");
            for (key, value) in &pairs {
                key.validate(InvalidHeaderKey).unwrap();
                value.validate(InvalidHeaderValue).unwrap();
            }
        }
        Err(error) => expect_code(&error, HEADER_CODES, "user_headers::parse"),
    }
}

pub(crate) fn check_send(bytes: &[u8]) {
    match SendMessages::decode_owned(BytesMut::from(bytes)) {
        Ok(mut send) => {
            let encoded = send.to_bytes();
            assert_eq!(encoded.len(), send.encoded_len());
            let again = SendMessages::decode_owned(BytesMut::from(&encoded[..])).unwrap();
            assert_eq!(again, send);
            exercise_batch(&mut send.batch, 10);
        }
        Err(error) => expect_code(&error, SEND_CODES, "SendMessages::decode_owned"),
    }
}
